//! The check pod, exactly as the contract's section 6 says: one per distinct placement among the models' Harness
//! pods.
//!
//! From the placement's Harness pod spec it copies the placement (`nodeSelector`, `affinity`, `tolerations`,
//! `topologySpreadConstraints`, `nodeName`, `runtimeClassName`, `schedulerName`; every other scheduling field is
//! accounted for in `scheduling.rs`: no priority class, so that it never preempts), `imagePullSecrets` (with those of the Harness's
//! ServiceAccount when the spec lists none: `pull_secrets.rs`), DNS (`dnsPolicy`, `dnsConfig`, `hostAliases`) and the
//! pod `securityContext` (made restricted where it is not); the Custodian container, as a plain container before
//! the probe when the probe can ask its readiness itself, else as a native sidecar (`initContainers`,
//! `restartPolicy: Always`): see [`custodian_container`], and orchestrate/README for the departure from the
//! contract's "native sidecar"; the volumes those
//! containers mount, and only those; and, on the probe container, the Harness container's env (Stand-ins, proxy and CA
//! variables, and every other entry a Turn sees, `valueFrom` references kept as references), its `envFrom`, and its CA
//! mounts. It does not copy the Harness's resources or service account; the Harness pods' labels it carries beside
//! its own only once the run has read its Namespace (`admission/identity.rs`), as the probe's requests and limits are
//! fitted to the namespace's LimitRanges then (`admission/resources.rs`).
//!
//! Its own: name, labels and run id, the deadline (annotation, `activeDeadlineSeconds`, `JR2_PROBE_DEADLINE`),
//! `restartPolicy: Never`, no service-account token, no service links, a readiness gate nobody sets (never Ready),
//! the restricted security context, small requests and limits. No secret value enters the spec: the probe's argv is
//! the run spec, which names env vars only.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::{
    Capabilities, Container, EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodSecurityContext,
    PodSpec, Probe, SeccompProfile, SecurityContext, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::plan::{Placement, ValidPlan};
use crate::scheduling;

/// The probe container's name.
pub const PROBE_CONTAINER: &str = "probe";
/// Where the probe writes its compact summary, and where the kubelet reads the termination message.
pub const TERMINATION_LOG: &str = "/dev/termination-log";
/// The uid the probe runs as (distroless `nonroot`).
pub const PROBE_UID: i64 = 65532;

/// `app.kubernetes.io/name`.
pub const LABEL_NAME: &str = "app.kubernetes.io/name";
/// The value of [`LABEL_NAME`] on every check pod.
pub const NAME: &str = "jr2-provider-preflight";
/// `app.kubernetes.io/managed-by`.
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// The value of [`LABEL_MANAGED_BY`] on every check pod.
pub const MANAGED_BY: &str = "jr2-preflight";
/// The Instance the check pod checks for: what the stale sweep selects on.
pub const LABEL_INSTANCE: &str = "jr2.dev/instance";
/// The run id: every pod of one run carries it.
pub const LABEL_RUN: &str = "jr2.dev/preflight-run";
/// The placement the pod stands in for.
pub const LABEL_PLACEMENT: &str = "jr2.dev/placement";
/// The Custodian container's name, on a check pod that has one: where `diagnose` finds it, a native sidecar or not.
pub const ANNOTATION_CUSTODIAN: &str = "jr2.dev/custodian-container";
/// The deadline, UTC RFC 3339 (`2026-01-01T00:05:00.000Z`): past it, the pod is stale.
pub const ANNOTATION_DEADLINE: &str = "jr2.dev/preflight-deadline";

/// The env var that names the node (downward API `spec.nodeName`).
pub const ENV_NODE_NAME: &str = "NODE_NAME";
/// The env var that carries the deadline (Unix seconds).
pub const ENV_DEADLINE: &str = "JR2_PROBE_DEADLINE";

/// Where jr2 mounts CA bundles in a Harness pod.
pub const CA_DIR: &str = "/etc/jr2/ca";
/// Env vars that name a CA file or folder: a mount they point into is a CA mount.
pub const CA_ENV: &[&str] = &[
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
];

/// How many characters of the run id the pod name carries.
pub const SHORT_RUN_ID: usize = 8;

/// A fresh run id: 10 characters of `[a-z0-9]`, a valid label value.
pub fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    let mut n = h.finish();
    (0..10)
        .map(|_| {
            let d = (n % 36) as u32;
            n /= 36;
            char::from_digit(d, 36).expect("a base-36 digit")
        })
        .collect()
}

/// A run id made safe for a label value and a name: lower-case `[a-z0-9-]`, at most 63, alphanumeric at both ends.
fn clean_run_id(run_id: &str) -> String {
    let s: String = run_id
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .take(63)
        .collect();
    let s = s.trim_matches('-');
    if s.is_empty() {
        "run".to_owned()
    } else {
        s.to_owned()
    }
}

/// `jr2-preflight-<instance>-<placement>-<short run id>`: a DNS-1123 label of at most 63 characters. When too long,
/// `<instance>-<placement>` is cut and a hash of it keeps names of different placements apart.
pub fn pod_name(instance: &str, placement: &str, run_id: &str) -> String {
    let run = clean_run_id(run_id);
    let short = run
        .chars()
        .take(SHORT_RUN_ID)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned();
    let middle = format!("{instance}-{placement}");
    let full = format!("{MANAGED_BY}-{middle}-{short}");
    if full.len() <= 63 {
        return full;
    }
    let hash = format!("{:08x}", fnv1a(middle.as_bytes()) as u32);
    // jr2-preflight- + cut + - + hash + - + short
    let room = 63 - (MANAGED_BY.len() + 1) - 1 - hash.len() - 1 - short.len();
    let cut = middle[..room.min(middle.len())].trim_end_matches('-');
    format!("{MANAGED_BY}-{cut}-{hash}-{short}")
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The deadline of a check pod, from its annotation: past it, the pod is stale.
pub fn deadline_of(pod: &Pod) -> Option<SystemTime> {
    let text = pod
        .metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_DEADLINE)?;
    let t: k8s_openapi::jiff::Timestamp = text.parse().ok()?;
    let secs = u64::try_from(t.as_second()).ok()?;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// A check pod, with what it was built from: the driver keeps it for the whole run and reads these facts here,
/// never back from the pod.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckPod {
    /// The name of the placement it stands in for (its `jr2.dev/placement` label).
    pub placement: String,
    /// The models its probe checks, as indices into `plan.models`, in its run spec's order (the probe's `index`).
    pub models: Vec<usize>,
    /// The pod, as it is created.
    pub pod: Pod,
    /// Per model (its index into `plan.models`), the NetworkPolicies that select this pod and allow it no egress to
    /// the model's address and port (`network_policy::find_denied`): a failed connect names them (issue 35).
    pub denied_egress: std::collections::BTreeMap<usize, crate::network_policy::DeniedEgress>,
}

/// The check pods of a plan: one per placement that has a model, in plan order.
pub fn check_pods(plan: &ValidPlan, run_id: &str, now: SystemTime) -> Vec<CheckPod> {
    plan.placements_with_models()
        .map(|p| CheckPod {
            placement: p.name.clone(),
            // The order of the placement's run spec (`RawPlan::run_spec_for`): plan order.
            models: (0..plan.models.len())
                .filter(|&i| plan.models[i].placement == p.name)
                .collect(),
            pod: check_pod(plan, p, run_id, now),
            denied_egress: std::collections::BTreeMap::new(),
        })
        .collect()
}

/// Every image `pods` reference, init containers first, each once, in the order a kubelet would pull them: what a
/// mirror of an air-gapped cluster must hold (`jr2-preflight images`).
pub fn images<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for spec in pods.into_iter().filter_map(|p| p.spec.as_ref()) {
        let containers = spec
            .init_containers
            .iter()
            .flatten()
            .chain(&spec.containers);
        for image in containers.filter_map(|c| c.image.as_deref()) {
            if seen.insert(image) {
                out.push(image.to_owned());
            }
        }
    }
    out
}

/// The check pod of one placement. `now` is when the run starts: the deadline is `now + plan.deadlineSeconds`.
pub fn check_pod(plan: &ValidPlan, placement: &Placement, run_id: &str, now: SystemTime) -> Pod {
    let run = clean_run_id(run_id);
    let harness_spec = &placement.pod_spec;
    let harness = placement.harness();
    let deadline =
        now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() + plan.deadline_seconds;

    // The containers of the check pod, by their names in the Harness spec: the probe stands in for the Harness.
    let custodian = placement
        .custodian()
        .map(|c| custodian_container(c, placement));
    // A plain container when the probe waits for its readiness itself: the kubelet starts both in one sync.
    let plain_custodian = custodian
        .as_ref()
        .is_some_and(|c| c.restart_policy.is_none());
    let mut probe = probe_container(plan, placement, harness, deadline);
    if let Some(url) = placement.custodian().and_then(custodian_readiness) {
        probe.env.get_or_insert_with(Vec::new).push(EnvVar {
            name: jr2_probe::sidecar::READY_ENV.to_owned(),
            value: Some(url),
            value_from: None,
        });
    }

    // The volumes those containers mount, and only those, in the Harness spec's order.
    let mut wanted: BTreeSet<&str> = BTreeSet::new();
    for c in custodian.iter().chain(std::iter::once(&probe)) {
        wanted.extend(c.volume_mounts.iter().flatten().map(|m| m.name.as_str()));
        wanted.extend(
            c.env
                .iter()
                .flatten()
                .filter_map(|e| e.value_from.as_ref()?.file_key_ref.as_ref())
                .map(|f| f.volume_name.as_str()),
        );
    }
    let volumes: Vec<_> = harness_spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| wanted.contains(v.name.as_str()))
        .cloned()
        .collect();

    let labels = BTreeMap::from([
        (LABEL_NAME.to_owned(), NAME.to_owned()),
        (LABEL_MANAGED_BY.to_owned(), MANAGED_BY.to_owned()),
        (LABEL_INSTANCE.to_owned(), plan.instance.clone()),
        (LABEL_RUN.to_owned(), run.clone()),
        (LABEL_PLACEMENT.to_owned(), placement.name.clone()),
    ]);
    let mut annotations = BTreeMap::from([(
        ANNOTATION_DEADLINE.to_owned(),
        jr2_probe::contract::verdict::rfc3339_utc(UNIX_EPOCH + Duration::from_secs(deadline)),
    )]);
    annotations.extend(scheduling::harness_priority_annotation(harness_spec));
    if let Some(c) = &custodian {
        annotations.insert(ANNOTATION_CUSTODIAN.to_owned(), c.name.clone());
    }
    let (init_containers, containers) = match custodian {
        Some(c) if plain_custodian => (None, vec![c, probe]),
        Some(c) => (Some(vec![c]), vec![probe]),
        None => (None, vec![probe]),
    };

    let spec = PodSpec {
        // Copied: the placement (a second scheduler places the Harness pods by its own rules), pulls, DNS, the pod
        // security context (made restricted).
        node_selector: harness_spec.node_selector.clone(),
        affinity: harness_spec.affinity.clone(),
        tolerations: harness_spec.tolerations.clone(),
        // Every scheduling field a new Harness pod meets, or the reason it is left out: `scheduling.rs`.
        topology_spread_constraints: scheduling::topology_spread(harness_spec),
        node_name: harness_spec.node_name.clone(),
        // No priority class: the class alone sets whether a pod preempts (the Priority admission refuses a pod whose
        // `preemptionPolicy` differs from its class's), so the check pod runs at the default priority and evicts no
        // pod to run; the Harness's class is kept in an annotation for the warning of `scheduling::would_preempt`.
        scheduler_name: harness_spec.scheduler_name.clone(),
        runtime_class_name: harness_spec.runtime_class_name.clone(),
        image_pull_secrets: harness_spec.image_pull_secrets.clone(),
        dns_policy: harness_spec.dns_policy.clone(),
        dns_config: harness_spec.dns_config.clone(),
        host_aliases: harness_spec.host_aliases.clone(),
        security_context: Some(pod_security_context(harness_spec.security_context.as_ref())),
        // The Custodian (a plain container first, or a native sidecar); the probe.
        init_containers,
        containers,
        volumes: (!volumes.is_empty()).then_some(volumes),
        // Its own.
        restart_policy: Some("Never".to_owned()),
        active_deadline_seconds: Some(plan.deadline_seconds as i64),
        automount_service_account_token: Some(false),
        enable_service_links: Some(false),
        // Never Ready: never a ready endpoint of a Service that selects the Harness pods (`admission/identity.rs`).
        readiness_gates: Some(crate::admission::identity::readiness_gates()),
        ..PodSpec::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(pod_name(&plan.instance, &placement.name, &run)),
            namespace: Some(plan.namespace.clone()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The Harness pod's security context, restricted: `runAsNonRoot`, no uid 0, seccomp `RuntimeDefault` unless it
/// names a `Localhost` profile. Everything else (`fsGroup`, groups, SELinux, sysctls...) is kept: the Custodian reads
/// its values through `fsGroup`.
fn pod_security_context(harness: Option<&PodSecurityContext>) -> PodSecurityContext {
    let mut sc = harness.cloned().unwrap_or_default();
    sc.run_as_non_root = Some(true);
    if sc.run_as_user == Some(0) {
        sc.run_as_user = None;
    }
    let keep = sc
        .seccomp_profile
        .as_ref()
        .is_some_and(|p| matches!(p.type_.as_str(), "RuntimeDefault" | "Localhost"));
    if !keep {
        sc.seccomp_profile = Some(runtime_default());
    }
    sc
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".to_owned(),
        localhost_profile: None,
    }
}

/// The Custodian as in the Harness spec (env, mounts, resources, security context, probes): a plain container before
/// the probe when the probe can ask its readiness itself or it has no probe at all, else a native sidecar.
///
/// A Harness's first Turn comes after its Custodian is ready; the probe comes at once, so it waits for it. When the
/// Custodian's readiness probe is one the probe can ask from inside the pod ([`custodian_readiness`], in
/// [`jr2_probe::sidecar::READY_ENV`]), the probe asks it every 20 ms, and the Custodian is a plain container listed
/// before the probe (no `restartPolicy`: the pod's `Never`): the kubelet starts both in one sync; so is a Custodian
/// with no readiness or startup probe (the probe waits for its proxy to listen). As a native sidecar,
/// the kubelet starts the probe only once a relist (every second) has seen the sidecar run: a second of every
/// preflight (issue 36: the check pod's shape took 1,940 ms to a first line where a bare pod takes 959 ms, the plain
/// shape 0.97x the bare pod). A plain Custodian is not restarted: one that dies stays terminated, and `diagnose` names
/// it. Else (a readiness probe the probe cannot ask: `exec`, `grpc`, `https`, another host, headers; or the Harness's
/// own startup probe) it stays a native sidecar, the kubelet holding the probe back until it has started, and a
/// readiness probe without a startup probe becomes its startup probe too (a kubelet prober tick, 1 s at least).
fn custodian_container(c: &Container, placement: &Placement) -> Container {
    let mut c = c.clone();
    // Plain when nothing is left for the kubelet to hold the probe back on: a readiness probe the probe asks itself,
    // or no probe at all (the probe waits for the proxy to listen).
    let plain = custodian_readiness(&c).is_some()
        || (c.readiness_probe.is_none() && c.startup_probe.is_none());
    c.restart_policy = (!plain).then(|| "Always".to_owned());
    // An unmasked /proc (`procMount: Unmasked`) is not copied: the check needs none, and a check pod that shows the
    // node's /proc to its containers is more than the Harness spec asked of a check (issue 25, item 12).
    if let Some(sc) = c.security_context.as_mut()
        && sc.proc_mount.as_deref().is_some_and(|m| m != "Default")
    {
        sc.proc_mount = None;
    }
    if c.startup_probe.is_none()
        && !plain
        && let Some(ready) = &c.readiness_probe
    {
        c.startup_probe = Some(Probe {
            initial_delay_seconds: None,
            period_seconds: Some(1),
            failure_threshold: Some(60),
            success_threshold: None,
            termination_grace_period_seconds: None,
            ..ready.clone()
        });
    }
    c.env = c.env.map(|env| {
        env.into_iter()
            .filter_map(|e| repoint(e, placement))
            .collect()
    });
    c
}

/// Where the probe asks whether the Custodian is ready (`http://127.0.0.1:<port><path>`, `tcp://127.0.0.1:<port>`):
/// from its readiness probe, when it has one and no startup probe, and that probe is an `httpGet` over plain HTTP to
/// the pod's own address without headers, or a `tcpSocket` to it. A named port is looked up in the container's ports.
fn custodian_readiness(c: &Container) -> Option<String> {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    if c.startup_probe.is_some() {
        return None;
    }
    let ready = c.readiness_probe.as_ref()?;
    let port = |p: &IntOrString| match p {
        IntOrString::Int(n) => u16::try_from(*n).ok().filter(|n| *n > 0),
        IntOrString::String(name) => c
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .and_then(|p| u16::try_from(p.container_port).ok())
            .filter(|n| *n > 0),
    };
    let own_host = |h: Option<&String>| h.is_none_or(|h| h.is_empty());
    if let Some(get) = &ready.http_get {
        let plain = get
            .scheme
            .as_deref()
            .is_none_or(|s| s.eq_ignore_ascii_case("http"));
        if !plain
            || !own_host(get.host.as_ref())
            || get.http_headers.as_ref().is_some_and(|h| !h.is_empty())
        {
            return None;
        }
        let path = get.path.as_deref().unwrap_or("");
        // The request line carries it as the kubelet's does: printable ASCII, no space.
        if !path.bytes().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        let slash = if path.starts_with('/') { "" } else { "/" };
        return Some(format!(
            "http://127.0.0.1:{}{slash}{path}",
            port(&get.port)?
        ));
    }
    if let Some(tcp) = &ready.tcp_socket {
        if !own_host(tcp.host.as_ref()) {
            return None;
        }
        return Some(format!("tcp://127.0.0.1:{}", port(&tcp.port)?));
    }
    None
}

/// A `resourceFieldRef` that names the Harness container names the probe in its stead; one that names a container the
/// check pod does not have is left out (the API server would refuse the pod).
fn repoint(mut e: EnvVar, placement: &Placement) -> Option<EnvVar> {
    let Some(r) = e
        .value_from
        .as_mut()
        .and_then(|v| v.resource_field_ref.as_mut())
    else {
        return Some(e);
    };
    match r.container_name.as_deref() {
        None | Some("") => Some(e),
        Some(name) if name == placement.harness_container => {
            r.container_name = Some(PROBE_CONTAINER.to_owned());
            Some(e)
        }
        Some(name) if Some(name) == placement.custodian_container.as_deref() => Some(e),
        Some(_) => None,
    }
}

fn probe_container(
    plan: &ValidPlan,
    placement: &Placement,
    harness: Option<&Container>,
    deadline: u64,
) -> Container {
    // The Harness env, every entry a Turn sees, in order; the ones the driver sets itself are left out.
    let mut env: Vec<EnvVar> = harness
        .and_then(|h| h.env.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| {
            e.name != ENV_NODE_NAME
                && e.name != ENV_DEADLINE
                && e.name != jr2_probe::sidecar::READY_ENV
        })
        .filter_map(|e| repoint(e, placement))
        .collect();
    env.push(EnvVar {
        name: ENV_NODE_NAME.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: Some("v1".to_owned()),
                field_path: "spec.nodeName".to_owned(),
            }),
            ..EnvVarSource::default()
        }),
    });
    env.push(EnvVar {
        name: ENV_DEADLINE.to_owned(),
        value: Some(deadline.to_string()),
        value_from: None,
    });

    let mounts = harness.map(ca_mounts).unwrap_or_default();
    let spec = plan.run_spec_for(&placement.name);
    let spec_json = serde_json::to_string(&spec).expect("a run spec serializes");

    Container {
        name: PROBE_CONTAINER.to_owned(),
        image: Some(plan.probe_image.clone()),
        image_pull_policy: Some("IfNotPresent".to_owned()),
        args: Some(vec![
            "run".to_owned(),
            "--termination-log".to_owned(),
            TERMINATION_LOG.to_owned(),
            "--spec-json".to_owned(),
            spec_json,
        ]),
        env: Some(env),
        env_from: harness.and_then(|h| h.env_from.clone()),
        volume_mounts: (!mounts.is_empty()).then_some(mounts),
        termination_message_path: Some(TERMINATION_LOG.to_owned()),
        // The probe writes its compact summary there; a probe that fails before it can (a run spec it refuses, a
        // panic) leaves the end of its log there instead, which holds its own `error:` line.
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        // Small requests and limits for cpu and memory, fitted to the namespace's LimitRanges before the create
        // (`admission::fit`).
        resources: Some(crate::admission::resources::base().requirements()),
        security_context: Some(SecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(PROBE_UID),
            read_only_root_filesystem: Some(true),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                add: None,
                drop: Some(vec!["ALL".to_owned()]),
            }),
            seccomp_profile: Some(runtime_default()),
            ..SecurityContext::default()
        }),
        ..Container::default()
    }
}

/// The Harness container's CA mounts: under [`CA_DIR`], or a mount a CA env var of its env points into. Read-only.
fn ca_mounts(harness: &Container) -> Vec<VolumeMount> {
    let ca_paths: Vec<&str> = harness
        .env
        .iter()
        .flatten()
        .filter(|e| CA_ENV.contains(&e.name.as_str()))
        .filter_map(|e| e.value.as_deref())
        .collect();
    harness
        .volume_mounts
        .iter()
        .flatten()
        .filter(|m| {
            under(&m.mount_path, CA_DIR) || ca_paths.iter().any(|p| under(p, &m.mount_path))
        })
        .map(|m| VolumeMount {
            read_only: Some(true),
            ..m.clone()
        })
        .collect()
}

/// `path` is `dir` or inside it.
fn under(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The pods as multi-document YAML, what `--dry-run` prints: kubectl's layout, keys sorted, every string a YAML 1.1
/// reader could take for something else quoted ([`crate::yaml`]).
pub fn to_yaml<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> String {
    crate::yaml::documents(pods).expect("a Pod serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_dns_labels_of_at_most_63() {
        assert_eq!(
            pod_name("demo", "sandbox", "abcdef1234"),
            "jr2-preflight-demo-sandbox-abcdef12"
        );
        let long = pod_name(&"i".repeat(63), &"p".repeat(63), "abcdef1234");
        assert_eq!(long.len(), 63, "{long}");
        assert!(long.starts_with("jr2-preflight-iii"));
        assert!(long.ends_with("-abcdef12"));
        let other = pod_name(&"i".repeat(63), &"q".repeat(63), "abcdef1234");
        assert_ne!(long, other, "the hash keeps placements apart");
        // A cut that would end with '-' does not.
        for n in 40..63 {
            let name = pod_name(&"a".repeat(n), "b-c-d-e-f-g-h", "x");
            assert!(name.len() <= 63);
            assert!(!name.contains("--"), "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            );
        }
        assert_eq!(pod_name("d", "s", "AB_c!"), "jr2-preflight-d-s-abc");
        assert_eq!(pod_name("d", "s", "--"), "jr2-preflight-d-s-run");
    }

    #[test]
    fn run_ids_are_label_values() {
        let a = new_run_id();
        let b = new_run_id();
        assert_eq!(a.len(), 10);
        assert!(
            a.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        );
        assert_ne!(a, b);
        assert_eq!(clean_run_id(&a), a);
    }

    #[test]
    fn under_is_a_path_prefix() {
        assert!(under("/etc/jr2/ca/extra.crt", "/etc/jr2/ca"));
        assert!(under("/etc/jr2/ca", "/etc/jr2/ca/"));
        assert!(!under("/etc/jr2/cab/x", "/etc/jr2/ca"));
        assert!(!under("/etc/jr2", "/etc/jr2/ca"));
    }

    #[test]
    fn pod_security_context_is_made_restricted() {
        let sc = pod_security_context(None);
        assert_eq!(sc.run_as_non_root, Some(true));
        assert_eq!(sc.seccomp_profile.unwrap().type_, "RuntimeDefault");
        let sc = pod_security_context(Some(&PodSecurityContext {
            run_as_user: Some(0),
            run_as_non_root: Some(false),
            fs_group: Some(2000),
            seccomp_profile: Some(SeccompProfile {
                type_: "Unconfined".to_owned(),
                localhost_profile: None,
            }),
            ..PodSecurityContext::default()
        }));
        assert_eq!(sc.run_as_user, None);
        assert_eq!(sc.run_as_non_root, Some(true));
        assert_eq!(sc.fs_group, Some(2000));
        assert_eq!(sc.seccomp_profile.unwrap().type_, "RuntimeDefault");
        let local = SeccompProfile {
            type_: "Localhost".to_owned(),
            localhost_profile: Some("jr2.json".to_owned()),
        };
        let sc = pod_security_context(Some(&PodSecurityContext {
            seccomp_profile: Some(local.clone()),
            run_as_user: Some(1000),
            ..PodSecurityContext::default()
        }));
        assert_eq!(sc.seccomp_profile, Some(local));
        assert_eq!(sc.run_as_user, Some(1000));
    }

    #[test]
    fn deadline_round_trips_through_the_annotation() {
        let mut pod = Pod::default();
        pod.metadata.annotations = Some(BTreeMap::from([(
            ANNOTATION_DEADLINE.to_owned(),
            jr2_probe::contract::verdict::rfc3339_utc(
                UNIX_EPOCH + Duration::from_secs(1_767_225_900),
            ),
        )]));
        assert_eq!(
            deadline_of(&pod),
            Some(UNIX_EPOCH + Duration::from_secs(1_767_225_900))
        );
        assert_eq!(deadline_of(&Pod::default()), None);
    }
}
