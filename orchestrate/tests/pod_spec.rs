//! The check pod made of a plan: one pod per distinct placement, its placement and plan models, every field of
//! contract section 6 (copied from the placement and the driver's own), and the placements' variants (no
//! Custodian, a Custodian already a sidecar, an unmasked proc mount, long names).

use std::collections::BTreeMap;
use std::time::Duration;

use jr2_preflight::plan::stand_in;
use jr2_preflight::pod::{self, check_pod};
use jr2_probe::spec::RunSpec;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod};
use serde_json::json;

mod common;
use common::{
    NOW, RUN_ID, assert_probe_security_context, check_pods, env_of, example, example_json, full,
    names, now, plan_of, probe, spec, variants_json,
};

#[test]
fn one_pod_per_distinct_placement_with_models() {
    let plan = example();
    let pods = check_pods(&plan, RUN_ID, now());
    assert_eq!(pods.len(), 2);
    assert_eq!(
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect::<Vec<_>>(),
        [
            "jr2-preflight-demo-sandbox-k3x9q2m7",
            "jr2-preflight-demo-instance-harness-k3x9q2m7"
        ]
    );
    // The two models of the Instance Harness run in one pod, in plan order.
    let spec: RunSpec = run_spec_of(&pods[1]);
    assert_eq!(
        spec.models
            .iter()
            .map(|m| m.model.as_str())
            .collect::<Vec<_>>(),
        ["vllm/Qwen/Qwen3-32B", "google/gemini-2.5-flash"]
    );
    // A placement without a model gets no pod.
    let mut v = example_json();
    v["models"][0]["placement"] = json!("instance-harness");
    let plan = plan_of(v).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    assert_eq!(pods.len(), 1);
    assert_eq!(labels(&pods[0])["jr2.dev/placement"], "instance-harness");
    assert_eq!(run_spec_of(&pods[0]).models.len(), 3);
}

#[test]
fn a_check_pod_carries_its_placement_and_plan_models() {
    let plan = example();
    let checks = pod::check_pods(&plan, RUN_ID, now());
    let facts: Vec<(&str, &[usize])> = checks
        .iter()
        .map(|c| (c.placement.as_str(), c.models.as_slice()))
        .collect();
    assert_eq!(
        facts,
        [("sandbox", &[0][..]), ("instance-harness", &[1, 2][..])]
    );
    for c in &checks {
        // The same facts as the pod's label and run spec say.
        assert_eq!(labels(&c.pod)["jr2.dev/placement"], c.placement);
        let names: Vec<String> = run_spec_of(&c.pod)
            .models
            .into_iter()
            .map(|m| m.model)
            .collect();
        let planned: Vec<String> = c
            .models
            .iter()
            .map(|&i| plan.models[i].model.clone())
            .collect();
        assert_eq!(names, planned);
        assert_eq!(
            c.pod,
            check_pod(&plan, plan.placement(&c.placement).unwrap(), RUN_ID, now())
        );
    }
    // Each model kept what its resolution gave when the plan was validated.
    let r = plan.resolved(0);
    assert_eq!(r.id, "claude-haiku-4-5");
    assert_eq!(r.host, "api.anthropic.com");
}

fn labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap()
}

fn run_spec_of(pod: &Pod) -> RunSpec {
    let args = probe(pod).args.as_ref().unwrap();
    let i = args.iter().position(|a| a == "--spec-json").unwrap();
    serde_json::from_str(&args[i + 1]).expect("the probe reads the spec")
}

/// Contract section 6, field by field, on both placements of the full variant.
#[test]
fn every_field_of_contract_section_6() {
    let plan = full();
    let pods = check_pods(&plan, RUN_ID, now());
    assert_eq!(pods.len(), 2);
    for (pod, placement) in pods.iter().zip(&plan.placements) {
        let h = &placement.pod_spec;
        let s = spec(pod);
        let harness = placement.harness().unwrap();
        let custodian = placement.custodian().unwrap();

        // Own metadata.
        let name = pod.metadata.name.as_deref().unwrap();
        assert_eq!(
            name,
            format!("jr2-preflight-demo-{}-k3x9q2m7", placement.name)
        );
        assert!(name.len() <= 63);
        assert_eq!(pod.metadata.namespace.as_deref(), Some("demo"));
        assert_eq!(
            labels(pod),
            &BTreeMap::from([
                (
                    "app.kubernetes.io/name".to_owned(),
                    "jr2-provider-preflight".to_owned()
                ),
                (
                    "app.kubernetes.io/managed-by".to_owned(),
                    "jr2-preflight".to_owned()
                ),
                ("jr2.dev/instance".to_owned(), "demo".to_owned()),
                ("jr2.dev/preflight-run".to_owned(), RUN_ID.to_owned()),
                ("jr2.dev/placement".to_owned(), placement.name.clone()),
            ]),
            "the Harness's labels are not copied"
        );
        assert_eq!(
            pod.metadata.annotations.as_ref().unwrap(),
            &BTreeMap::from([
                (
                    "jr2.dev/preflight-deadline".to_owned(),
                    "2026-01-01T00:05:00.000Z".to_owned()
                ),
                // Where `diagnose` finds the Custodian, a plain container or a native sidecar (issue 36).
                (
                    "jr2.dev/custodian-container".to_owned(),
                    custodian.name.clone()
                ),
                (
                    "jr2.dev/harness-priority-class".to_owned(),
                    h.priority_class_name.clone().unwrap()
                )
            ])
        );
        assert_eq!(
            pod::deadline_of(pod),
            Some(now() + Duration::from_secs(300))
        );
        assert!(pod.status.is_none());

        // Copied from the Harness pod spec.
        assert_eq!(s.node_selector, h.node_selector);
        assert_eq!(s.affinity, h.affinity);
        assert_eq!(s.tolerations, h.tolerations);
        // Not the priority class: the check pod never preempts (`scheduling.rs`).
        assert_eq!(s.priority_class_name, None);
        assert!(h.priority_class_name.is_some());
        assert_eq!(s.runtime_class_name, h.runtime_class_name);
        assert_eq!(s.scheduler_name, h.scheduler_name);
        assert_eq!(s.image_pull_secrets, h.image_pull_secrets);
        assert_eq!(s.dns_policy, h.dns_policy);
        assert_eq!(s.dns_config, h.dns_config);
        assert_eq!(s.host_aliases, h.host_aliases);
        // The pod security context: the Harness's, made restricted (it already is in the example).
        let hsc = h.security_context.as_ref().unwrap();
        let sc = s.security_context.as_ref().unwrap();
        assert_eq!(sc, hsc);
        assert_eq!(
            sc.fs_group,
            Some(2000),
            "the Custodian reads its values through fsGroup"
        );
        assert_eq!(sc.run_as_non_root, Some(true));
        assert_eq!(sc.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");

        // Not copied: the service account, resources, other containers, anything else of the pod.
        assert_eq!(s.service_account_name, None);
        assert_eq!(s.service_account, None);
        assert_eq!(s.termination_grace_period_seconds, None);
        assert_eq!(s.resources, None);
        assert_eq!(s.priority, None);
        assert_eq!(s.host_network, None);
        assert_eq!(s.share_process_namespace, None);

        // Own pod fields.
        assert_eq!(s.restart_policy.as_deref(), Some("Never"));
        assert_eq!(s.active_deadline_seconds, Some(300));
        assert_eq!(s.automount_service_account_token, Some(false));
        assert_eq!(s.enable_service_links, Some(false));
        // Never Ready: never a ready endpoint of a Service that selects the Harness pods (issue 35).
        assert_eq!(
            s.readiness_gates
                .iter()
                .flatten()
                .map(|g| g.condition_type.as_str())
                .collect::<Vec<_>>(),
            ["jr2.dev/check-pod-never-ready"]
        );

        // The Custodian: a plain container before the probe (the probe asks its readiness itself: issue 36),
        // otherwise as in the Harness spec; no init container (other init containers are not copied).
        assert_eq!(s.init_containers, None);
        assert_eq!(
            names(Some(&s.containers), |c| &c.name),
            [custodian.name.as_str(), "probe"]
        );
        assert_eq!(
            pod.metadata.annotations.as_ref().unwrap()["jr2.dev/custodian-container"],
            custodian.name
        );
        let sidecar = &s.containers[0];
        // The pod's `restartPolicy: Never`: never restarted.
        assert_eq!(sidecar.restart_policy, None);
        assert_eq!(sidecar.name, custodian.name);
        assert_eq!(sidecar.image, custodian.image);
        assert_eq!(sidecar.image_pull_policy, custodian.image_pull_policy);
        assert_eq!(sidecar.args, custodian.args);
        assert_eq!(sidecar.env, custodian.env);
        assert_eq!(sidecar.volume_mounts, custodian.volume_mounts);
        assert_eq!(sidecar.resources, custodian.resources);
        assert_eq!(sidecar.security_context, custodian.security_context);
        assert_eq!(sidecar.readiness_probe, custodian.readiness_probe);
        assert_eq!(sidecar.ports, custodian.ports);
        // No startup probe: the probe asks the readiness endpoint itself (`JR2_CUSTODIAN_READY`, below), and the
        // kubelet starts both in one sync.
        assert_eq!(sidecar.startup_probe, None);
        assert_eq!(sidecar, custodian);

        // The volumes those containers mount, and only those, in the Harness spec's order.
        let mut mounted: Vec<&str> = custodian
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.name.as_str())
            .collect();
        mounted.push("jr2-ca");
        if placement.name == "sandbox" {
            mounted.push("corp-ca");
        }
        let want: Vec<String> = names(h.volumes.as_ref(), |v| &v.name)
            .into_iter()
            .filter(|n| mounted.contains(&n.as_str()))
            .collect();
        assert_eq!(names(s.volumes.as_ref(), |v| &v.name), want);
        for v in s.volumes.iter().flatten() {
            let orig = h
                .volumes
                .iter()
                .flatten()
                .find(|o| o.name == v.name)
                .unwrap();
            assert_eq!(v, orig, "volume {} is copied as is", v.name);
        }
        assert!(
            !names(s.volumes.as_ref(), |v| &v.name)
                .iter()
                .any(|n| ["workspace", "tmp", "state"].contains(&n.as_str()))
        );

        // The probe container.
        let p = probe(pod);
        assert_eq!(p.name, "probe");
        assert_eq!(
            p.image.as_deref(),
            Some("registry.example.com/jr2/jr2-probe:0.1.0")
        );
        assert_eq!(p.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(p.command, None, "the image's entrypoint is jr2-probe");
        let args = p.args.as_ref().unwrap();
        assert_eq!(
            args[..4],
            [
                "run",
                "--termination-log",
                "/dev/termination-log",
                "--spec-json"
            ]
        );
        assert_eq!(args.len(), 5);
        assert_eq!(run_spec_of(pod), plan.run_spec_for(&placement.name));
        assert_eq!(
            p.termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
        assert_eq!(
            p.termination_message_policy.as_deref(),
            Some("FallbackToLogsOnError")
        );
        assert_eq!(p.env_from, harness.env_from, "envFrom is copied");
        assert!(p.env_from.is_some());
        // Env: the Harness env in order (valueFrom kept as references), then NODE_NAME, the deadline and where the
        // Custodian says it is ready (its readiness probe's endpoint, on loopback).
        let env = p.env.as_ref().unwrap();
        let (copied, own) = env.split_at(env.len() - 3);
        let mut expected: Vec<EnvVar> = harness
            .env
            .iter()
            .flatten()
            .filter(|e| {
                e.name != "NODE_NAME" && e.name != "JR2_PROBE_DEADLINE" && e.name != "OTHER_MEM"
            })
            .cloned()
            .collect();
        for e in &mut expected {
            if e.name == "GOMAXPROCS" {
                e.value_from
                    .as_mut()
                    .unwrap()
                    .resource_field_ref
                    .as_mut()
                    .unwrap()
                    .container_name = Some("probe".to_owned());
            }
        }
        assert_eq!(copied, expected.as_slice());
        assert_eq!(own[0].name, "NODE_NAME");
        assert_eq!(own[0].value, None);
        let field_ref = own[0]
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap();
        assert_eq!(field_ref.field_path, "spec.nodeName");
        assert_eq!(own[1].name, "JR2_PROBE_DEADLINE");
        assert_eq!(
            own[1].value.as_deref(),
            Some((NOW + 300).to_string().as_str())
        );
        assert_eq!(own[2].name, "JR2_CUSTODIAN_READY");
        assert_eq!(
            own[2].value.as_deref(),
            Some("http://127.0.0.1:15021/healthz")
        );
        for key in [
            "JR2_SANDBOX_TOKEN",
            "HTTPS_PROXY",
            "https_proxy",
            "NO_PROXY",
            "no_proxy",
            "NODE_EXTRA_CA_CERTS",
            "SSL_CERT_FILE",
            "SENTRY_DSN",
        ] {
            assert!(env_of(p, key).is_some(), "{key} is copied");
        }
        let dsn = env_of(p, "SENTRY_DSN").unwrap();
        assert_eq!(dsn.value, None);
        let r = dsn
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(
            (r.name.as_str(), r.key.as_str()),
            ("jr2-app", "sentry-dsn"),
            "a reference stays a reference"
        );
        for m in &plan.models {
            if m.placement == placement.name {
                let k = m.key_env.as_deref().unwrap();
                assert_eq!(
                    env_of(p, k).unwrap().value,
                    Some(stand_in(k)),
                    "the Stand-in of {k}"
                );
            }
        }
        // CA mounts: under /etc/jr2/ca, or where a CA variable points (sandbox: /opt/corp-ca); read-only.
        let mounts: Vec<(String, String, Option<bool>)> = p
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| (m.name.clone(), m.mount_path.clone(), m.read_only))
            .collect();
        let mut want = vec![("jr2-ca".to_owned(), "/etc/jr2/ca".to_owned(), Some(true))];
        if placement.name == "sandbox" {
            want.push(("corp-ca".to_owned(), "/opt/corp-ca".to_owned(), Some(true)));
        }
        assert_eq!(mounts, want);
        // Small requests and limits for cpu and memory, not the Harness's (fitted to the namespace before a run).
        let res = p.resources.as_ref().unwrap();
        assert_ne!(p.resources, harness.resources);
        assert_eq!(
            res.requests
                .as_ref()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect::<Vec<_>>(),
            [("cpu", "10m"), ("memory", "32Mi")]
        );
        assert_eq!(
            res.limits
                .as_ref()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect::<Vec<_>>(),
            [("cpu", "100m"), ("memory", "64Mi")]
        );
        // The restricted security context, field by field.
        assert_probe_security_context(p.security_context.as_ref().unwrap());
        // Nothing else on the probe.
        assert_eq!(
            Container {
                name: p.name.clone(),
                image: p.image.clone(),
                image_pull_policy: p.image_pull_policy.clone(),
                args: p.args.clone(),
                env: p.env.clone(),
                env_from: p.env_from.clone(),
                volume_mounts: p.volume_mounts.clone(),
                termination_message_path: p.termination_message_path.clone(),
                termination_message_policy: p.termination_message_policy.clone(),
                resources: p.resources.clone(),
                security_context: p.security_context.clone(),
                ..Container::default()
            },
            p.clone()
        );
    }
}

#[test]
fn a_placement_without_a_custodian_and_one_already_a_sidecar() {
    let plan = plan_of(variants_json()).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    // No Custodian: no sidecar, no Custodian volume, direct calls.
    let s = spec(&pods[0]);
    assert_eq!(s.init_containers, None);
    assert_eq!(names(s.volumes.as_ref(), |v| &v.name), ["jr2-ca"]);
    assert!(
        run_spec_of(&pods[0])
            .models
            .iter()
            .all(|m| !m.via_custodian)
    );
    // Already a sidecar: copied once, its own startup probe kept; so it stays a native sidecar.
    let s = spec(&pods[1]);
    assert_eq!(names(Some(&s.containers), |c| &c.name), ["probe"]);
    let init = s.init_containers.as_ref().unwrap();
    assert_eq!(init.len(), 1);
    assert_eq!(init[0].restart_policy.as_deref(), Some("Always"));
    assert_eq!(init[0], plan.placements[1].custodian().unwrap().clone());
    assert!(run_spec_of(&pods[1]).models.iter().all(|m| m.via_custodian));
    // Its startup probe holds the probe back: the probe is not told to ask the Custodian.
    assert_eq!(env_of(probe(&pods[1]), "JR2_CUSTODIAN_READY"), None);
}

/// Issue 36: the probe asks the Custodian's readiness endpoint itself (every 20 ms) when it can, and the Custodian is
/// then a plain container before the probe, with no startup probe (a native sidecar costs a kubelet relist, a second,
/// and a startup probe a prober tick, 1 s at least, on every preflight); with a readiness probe it cannot ask from
/// inside the pod the Custodian stays a native sidecar, and that probe becomes its startup probe, as before.
#[test]
fn the_probe_asks_the_custodian_s_readiness_endpoint_when_it_can() {
    let readiness = |readiness_probe: serde_json::Value, ports: serde_json::Value| {
        let mut v = example_json();
        let custodian = &mut v["placements"][0]["podSpec"]["containers"][1];
        custodian["readinessProbe"] = readiness_probe;
        custodian["ports"] = ports;
        let plan = plan_of(v).expect("a valid plan");
        let pods = check_pods(&plan, RUN_ID, now());
        let s = spec(&pods[0]);
        let c = common::custodian(&pods[0]).unwrap();
        let native = s.init_containers.is_some();
        assert_eq!(
            native,
            c.restart_policy.as_deref() == Some("Always"),
            "a native sidecar, or a plain container: {c:?}"
        );
        assert_eq!(s.containers.len(), if native { 1 } else { 2 });
        let asked =
            env_of(probe(&pods[0]), "JR2_CUSTODIAN_READY").map(|e| e.value.clone().unwrap());
        (asked, c.startup_probe.is_some() && native)
    };
    let none = json!([]);
    let named = json!([{"name": "health", "containerPort": 15021}]);
    for (probe, ports, asked) in [
        (
            json!({"httpGet": {"path": "/healthz", "port": 15021}}),
            &none,
            Some("http://127.0.0.1:15021/healthz"),
        ),
        (
            json!({"httpGet": {"path": "/healthz", "port": "health", "scheme": "HTTP"}}),
            &named,
            Some("http://127.0.0.1:15021/healthz"),
        ),
        (
            json!({"httpGet": {"path": "ready", "port": 8080}}),
            &none,
            Some("http://127.0.0.1:8080/ready"),
        ),
        (
            json!({"httpGet": {"port": 8080}}),
            &none,
            Some("http://127.0.0.1:8080/"),
        ),
        (
            json!({"tcpSocket": {"port": 15001}}),
            &none,
            Some("tcp://127.0.0.1:15001"),
        ),
        (
            json!({"tcpSocket": {"port": "health"}}),
            &named,
            Some("tcp://127.0.0.1:15021"),
        ),
        // What the probe cannot ask from inside the pod: the kubelet's startup probe, as before.
        (
            json!({"httpGet": {"path": "/healthz", "port": 15021, "scheme": "HTTPS"}}),
            &none,
            None,
        ),
        (
            json!({"httpGet": {"path": "/healthz", "port": 15021, "host": "10.0.0.9"}}),
            &none,
            None,
        ),
        (
            json!({"httpGet": {"path": "/healthz", "port": 15021, "httpHeaders": [{"name": "x-probe", "value": "1"}]}}),
            &none,
            None,
        ),
        (
            json!({"httpGet": {"path": "/healthz", "port": "nope"}}),
            &named,
            None,
        ),
        (json!({"exec": {"command": ["/bin/true"]}}), &none, None),
        (json!({"grpc": {"port": 15021}}), &none, None),
    ] {
        let (got, startup) = readiness(probe.clone(), ports.clone());
        assert_eq!(got.as_deref(), asked, "{probe}");
        assert_eq!(
            startup,
            asked.is_none(),
            "a native sidecar with a startup probe only when the probe cannot ask: {probe}"
        );
    }
}

/// Issue 25, item 12: the Custodian's `procMount: Unmasked` is not copied into the check pod.
#[test]
fn an_unmasked_proc_mount_is_not_copied() {
    let mut v = example_json();
    for c in v["placements"][0]["podSpec"]["containers"]
        .as_array_mut()
        .unwrap()
    {
        if c["name"] == "custodian" {
            c["securityContext"]["procMount"] = json!("Unmasked");
        }
    }
    let plan = plan_of(v).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    let custodian = common::custodian(&pods[0]).unwrap();
    let sc = custodian
        .security_context
        .as_ref()
        .expect("its security context");
    assert_eq!(sc.proc_mount, None);
}

#[test]
fn a_long_instance_and_placement_still_make_a_valid_name() {
    let mut v = example_json();
    let long_i = "an-instance-with-a-rather-long-name-for-a-namespace";
    let long_p = "sandbox-gpu-nodes-in-the-second-zone";
    v["instance"] = json!(long_i);
    v["placements"][0]["name"] = json!(long_p);
    v["models"][0]["placement"] = json!(long_p);
    v["networkPolicyCheck"]["harnessPodLabels"]
        .as_object_mut()
        .unwrap()
        .remove("sandbox");
    let plan = plan_of(v).unwrap();
    let pod = &check_pods(&plan, RUN_ID, now())[0];
    let name = pod.metadata.name.as_deref().unwrap();
    assert!(name.len() <= 63, "{name}");
    assert!(name.starts_with("jr2-preflight-an-instance"));
    assert!(name.ends_with("-k3x9q2m7"));
    assert_eq!(labels(pod)["jr2.dev/placement"], long_p);
    assert_eq!(labels(pod)["jr2.dev/instance"], long_i);
}
