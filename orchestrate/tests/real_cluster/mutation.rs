//! What a real mutating admission does to the check pod (issue 40, items 2, 4 and 7): a MutatingAdmissionPolicy
//! (CEL, `admissionregistration.k8s.io/v1beta1`, which the testkit's API server enables) that rewrites the check
//! pod's `managed-by` label, injects a `mesh-init` init container that never completes, or injects secret values into
//! its env and annotations. The fake API server plays each too (`e2e_admission.rs`, `e2e_hostile_cluster.rs`,
//! `e2e_operator.rs`); here the real API server's own merge and the real kubelet decide what the driver sees.
//!
//! A policy is cluster-wide: each is bound to its test's own namespace (`namespaceSelector`, in the policy's
//! `matchConstraints` and in its binding) and deleted at the end, whatever the run did.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// The pause image the node holds (tests/kube/images.sh): an init container that never completes.
const PAUSE: &str = "registry.k8s.io/pause:3.10";

/// A MutatingAdmissionPolicy and its binding, named `name`, on the pods created in `ns` only: `mutation` is one
/// entry of its `mutations`. Deleted when dropped.
struct Policy {
    name: &'static str,
}

impl Policy {
    fn new(ns: &str, name: &'static str, mutation: Value) -> Self {
        let cluster = &env().cluster;
        let selector = json!({"matchLabels": {"kubernetes.io/metadata.name": ns}});
        let policy = json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "matchConstraints": {
                    "namespaceSelector": selector,
                    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                       "operations": ["CREATE"], "resources": ["pods"]}]
                },
                "mutations": [mutation]
            }
        });
        let binding = json!({
            "apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "matchResources": {"namespaceSelector": selector}}
        });
        cluster.kubectl_stdin(&["apply", "-f", "-"], &policy.to_string());
        cluster.kubectl_stdin(&["apply", "-f", "-"], &binding.to_string());
        Policy { name }
    }

    /// Waits (60 s at most) until the API server applies the policy: a server-side dry run of a pod in `ns` comes
    /// back with `applied` holding of it.
    fn wait_applied(&self, ns: &str, applied: impl Fn(&Value) -> bool) {
        let cluster = &env().cluster;
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{}-check", self.name), "namespace": ns},
            "spec": {"initContainers": [{"name": "first", "image": PAUSE}],
                     "containers": [{"name": "probe", "image": CUSTODIAN_IMAGE}]}});
        cluster.wait_for(
            &format!("the policy {} to apply", self.name),
            Duration::from_secs(60),
            || {
                let out = cluster.kubectl_output(
                    &cluster.info().admin_kubeconfig,
                    &["create", "--dry-run=server", "-o", "json", "-f", "-"],
                    Some(&pod.to_string()),
                );
                out.status.success()
                    && serde_json::from_slice::<Value>(&out.stdout).is_ok_and(|p| applied(&p))
            },
        );
    }
}

impl Drop for Policy {
    fn drop(&mut self) {
        env().cluster.kubectl(&[
            "delete",
            "mutatingadmissionpolicybinding,mutatingadmissionpolicy",
            self.name,
            "--ignore-not-found",
        ]);
    }
}

/// Every pod of `ns`, whatever its labels (admission may have rewritten the driver's own).
fn all_pods(ns: &str) -> Vec<Value> {
    let out = env()
        .cluster
        .kubectl(&["-n", ns, "get", "pods", "-o", "json"]);
    let v: Value = serde_json::from_str(&out).expect("kubectl's JSON");
    v["items"].as_array().cloned().unwrap_or_default()
}

/// No pod at all is left in `ns` within 60 s (the driver deletes with a grace period), and none was left undeleted.
fn assert_no_pod_at_all(ns: &str) {
    let live: Vec<Value> = all_pods(ns)
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect();
    assert!(live.is_empty(), "pods left, not even deleting: {live:#?}");
    env()
        .cluster
        .wait_for("the pods to be gone", Duration::from_secs(60), || {
            all_pods(ns).is_empty()
        });
}

/// Item 2: a policy sets `app.kubernetes.io/managed-by: platform-policy` on every pod of the namespace. The driver
/// finds its pod by name, so the run passes, never says the pod was deleted, and leaves no pod. Before: its watch
/// selected by that label, saw no pod, and said `the check pod stopped (the pod was deleted)` in milliseconds; its
/// delete and sweep selected by it too, and the pod stayed.
#[test]
fn a_policy_that_rewrites_the_managed_by_label_loses_no_pod() {
    let _g = shared();
    let ns = namespace("rc-mut-label", &[]);
    let policy = Policy::new(
        &ns,
        "jr2-rc-mut-label",
        json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
            "Object{metadata: Object.metadata{labels: {'app.kubernetes.io/managed-by': 'platform-policy'}}}"}}),
    );
    policy.wait_applied(&ns, |p| {
        p["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "platform-policy"
    });
    let path = write_plan(&plan(
        &ns,
        &[("sandbox", harness_spec(), &["ok-delay-5000"])],
    ));
    let started = Instant::now();
    let child = spawn_driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "-o", "json"],
    );
    // The check pod as admission made it: the policy's label, not the driver's.
    let cluster = &env().cluster;
    let mut seen = Value::Null;
    cluster.wait_for("the check pod", Duration::from_secs(60), || {
        seen = all_pods(&ns).into_iter().next().unwrap_or(Value::Null);
        !seen.is_null()
    });
    let run = finish(child, started, Duration::from_secs(180));
    assert_eq!(
        seen["metadata"]["labels"]["app.kubernetes.io/managed-by"], "platform-policy",
        "{seen:#}"
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("deleted"), "{}", run.stderr);
    assert_passes(&run, &["ok-delay-5000"]);
    assert_no_pod_at_all(&ns);
    drop(policy);
}

/// Item 7: a policy injects a regular init container `mesh-init` (the pause image: it runs and never completes), as
/// a mesh may. Failing is right (a Harness pod hangs the same); the failure names `mesh-init` and kubectl's
/// `Init:0/1` (the Custodian is a plain container: issue 36), not "an eviction, a preemption or a deletion". Before:
/// `the check pod stopped (DeadlineExceeded ...)` or a timeout whose reason never named the container.
#[test]
fn an_injected_init_container_that_never_completes_is_named() {
    let _g = shared();
    let ns = namespace("rc-mut-init", &[]);
    // An ApplyConfiguration: mesh-init merged into `initContainers` by its name, whether or not the pod has any (the
    // check pod has none when its Custodian is a plain container: issue 36), as a mesh's injector adds it.
    let policy = Policy::new(
        &ns,
        "jr2-rc-mut-init",
        json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": format!(
            "Object{{spec: Object.spec{{initContainers: [Object.spec.initContainers{{\
               name: 'mesh-init', image: '{PAUSE}', imagePullPolicy: 'IfNotPresent',\
               terminationMessagePath: '/dev/termination-log', terminationMessagePolicy: 'File',\
               securityContext: Object.spec.initContainers.securityContext{{runAsUser: 65535, runAsNonRoot: true,\
                 allowPrivilegeEscalation: false}}}}]}}}}"
        )}}),
    );
    policy.wait_applied(&ns, |p| {
        p["spec"]["initContainers"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["name"] == "mesh-init"))
    });
    let run = run_plan(
        &plan(&ns, &[("sandbox", harness_spec(), &["ok"])]),
        &["--timeout", "30s"],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let errors: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("error:"))
        .collect();
    insta::assert_snapshot!(errors.join("\n"), @"error: provider preflight: the check pod did not start in 30 s — last reason Init:0/1: the init container mesh-init has not completed (running); nothing else starts before it does");
    assert!(
        !run.stderr
            .contains("an eviction, a preemption or a deletion"),
        "{}",
        run.stderr
    );
    let v = run.verdict();
    assert!(
        v.to_string().contains("mesh-init"),
        "the verdict names mesh-init: {v:#}"
    );
    assert_no_pod_at_all(&ns);
    drop(policy);
}

/// Every file under `dir`, with its contents.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            out.push((path, text));
        }
    }
    out
}

/// Item 4: a policy injects `DB_PASSWORD` and `VAULT_TOKEN` into every container's env and a
/// `vault.example.com/token` annotation, values no shape rule knows; the run fails (a model the provider does not
/// serve) with `--evidence`. No injected value is in any file of the bundle, on stdout or on stderr; their names
/// are (the evidence shows what admission did). Before: the values landed verbatim in
/// `<pod>/pod-last-status.yaml`.
#[test]
fn secret_values_admission_injected_never_reach_the_evidence() {
    let _g = shared();
    let ns = namespace("rc-mut-secrets", &[]);
    let values = [
        "db-pw-correct-horse-battery-4711",
        "vault-tok-plain-words-8842",
        "annotation-tok-plain-words-5521",
    ];
    let policy = Policy::new(
        &ns,
        "jr2-rc-mut-secrets",
        json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": format!(
            "Object{{metadata: Object.metadata{{annotations: {{'vault.example.com/token': '{}'}}}},\
               spec: Object.spec{{containers: object.spec.containers.map(c, Object.spec.containers{{name: c.name,\
                 env: [Object.spec.containers.env{{name: 'DB_PASSWORD', value: '{}'}},\
                       Object.spec.containers.env{{name: 'VAULT_TOKEN', value: '{}'}}]}})}}}}",
            values[2], values[0], values[1]
        )}}),
    );
    policy.wait_applied(&ns, |p| {
        p["metadata"]["annotations"]["vault.example.com/token"] == values[2]
            && p.to_string().contains(values[0])
    });
    let dir = std::env::temp_dir().join(format!("jr2-rc-mut-evidence-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = run_plan(
        &plan(&ns, &[("sandbox", harness_spec(), &["missing"])]),
        &["--evidence", dir.to_str().unwrap()],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let bundle = files(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let status = bundle
        .iter()
        .find(|(p, _)| p.ends_with("pod-last-status.yaml"))
        .unwrap_or_else(|| panic!("no <pod>/pod-last-status.yaml in {bundle:#?}"));
    // The policy did apply to the check pod: the names it injected are in the pod the cluster showed back.
    for name in ["DB_PASSWORD", "VAULT_TOKEN", "vault.example.com/token"] {
        assert!(status.1.contains(name), "{name} not in {}", status.1);
    }
    for value in values {
        for (path, text) in &bundle {
            assert!(
                !text.contains(value),
                "{value} in {}:\n{text}",
                path.display()
            );
        }
        assert!(!run.stdout.contains(value), "{value} on stdout");
        assert!(!run.stderr.contains(value), "{value} on stderr");
    }
    assert_no_pod_at_all(&ns);
    drop(policy);
}
