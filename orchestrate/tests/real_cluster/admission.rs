//! Admitted as the Harness pods are (issue 35), by the real admission: a ResourceQuota on requests and limits, a
//! LimitRange with a floor, a ValidatingAdmissionPolicy that wants the Harness pods' `cost-center` label. In each, a
//! Harness pod of the placement is admitted (a server-side dry run), the check pod of the last release's asks or
//! labels is refused, and the preflight passes. Beside the check, a Deployment, a bare ReplicaSet and a Service that
//! select the Harness labels: the ReplicaSet adopts an orphan with those labels and never the check pod; the Service's
//! EndpointSlice lists the check pod as not ready; its `managed-by` label rewritten while it runs, the run neither
//! loses it nor leaves it (issue 40, item 2). And when the API server refuses the check pod all the same, the lines
//! say whether it refuses a Harness pod too.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// The pause image the node holds (tests/kube/images.sh).
const PAUSE: &str = "registry.k8s.io/pause:3.10";

/// A Harness spec whose containers state what a namespace with a quota and a floor wants of a Harness pod.
fn resourced_spec() -> Value {
    let mut spec = harness_spec();
    let resources = json!({"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}});
    spec["containers"][0]["resources"] = resources.clone();
    spec["containers"][1]["resources"] = resources;
    spec
}

fn apply(ns: &str, object: &Value) {
    env()
        .cluster
        .kubectl_stdin(&["-n", ns, "apply", "-f", "-"], &object.to_string());
}

/// A server-side dry run of `pod` as the admin: `Err` with the API server's words when refused.
fn server_dry_run(ns: &str, pod: &Value) -> Result<(), String> {
    env().cluster.server_dry_run(ns, &pod.to_string()).map(drop)
}

/// A Harness pod of the placement, as its controller would create it.
fn harness_pod(spec: &Value, labels: &Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": "harness-", "labels": labels}, "spec": spec})
}

/// The check pod `--dry-run` prints for `plan` (its own labels only, the small asks), as JSON.
fn dry_run_pod(plan: &Value) -> Value {
    let path = write_plan(plan);
    let dry = driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "--dry-run"],
    );
    assert_eq!(dry.code(), Some(0), "{}", dry.stderr);
    let yaml: serde_yaml::Value = serde_yaml::from_str(&dry.stdout).unwrap();
    serde_json::to_value(yaml).unwrap()
}

/// The check pod with the probe's asks of the last release (requests 10m/32Mi, a 64Mi memory limit and no cpu one).
fn with_last_release_asks(mut pod: Value) -> Value {
    let probe = pod["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["name"] == "probe")
        .unwrap();
    probe["resources"] =
        json!({"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}});
    pod
}

/// Waits until the quota controller has counted the namespace's use (until then the quota admission refuses every
/// pod with "status unknown").
fn wait_for_quota(ns: &str, name: &str) {
    let cluster = &env().cluster;
    cluster.wait_for(
        &format!("the ResourceQuota {name} to be counted"),
        Duration::from_secs(60),
        || {
            let out = cluster.kubectl(&["-n", ns, "get", "resourcequota", name, "-o", "json"]);
            let q: Value = serde_json::from_str(&out).unwrap();
            !q["status"]["hard"].is_null() && !q["status"]["used"].is_null()
        },
    );
}

/// A namespace with a ResourceQuota on requests and limits of cpu and memory, and one with a LimitRange floor (and a
/// ratio and a ceiling): the Harness pod is admitted, the last release's check pod is refused with the words,
/// and the preflight passes. Without `list limitranges`, the asks that pass common floors pass this one too.
#[test]
fn a_quota_and_a_limit_range_admit_the_check_pod_where_they_refused_it() {
    let _g = shared();
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
        "spec": {"hard": {"requests.cpu": "2", "requests.memory": "2Gi", "limits.cpu": "2", "limits.memory": "2Gi"}}});
    let floor = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "floor"},
        "spec": {"limits": [{"type": "Container", "min": {"cpu": "50m", "memory": "64Mi"},
                             "max": {"cpu": "1", "memory": "1Gi"}, "maxLimitRequestRatio": {"cpu": "4"}}]}});
    let no_limit_ranges = RBAC.replace("  - limitranges\n", "  - limitranges-not-granted\n");
    assert_ne!(no_limit_ranges, RBAC);
    let cases: [(&str, &Value, &str, &str); 3] = [
        (
            "rc-adm-quota",
            &quota,
            "must specify limits.cpu for: probe",
            RBAC,
        ),
        (
            "rc-adm-floor",
            &floor,
            "minimum cpu usage per Container is 50m, but request is 10m",
            RBAC,
        ),
        (
            "rc-adm-floor-unread",
            &floor,
            "minimum cpu usage per Container is 50m, but request is 10m",
            &no_limit_ranges,
        ),
    ];
    for (name, object, old_refusal, rbac) in cases {
        let ns = namespace_with_rbac(name, &[], rbac);
        apply(&ns, object);
        if object["kind"] == "ResourceQuota" {
            wait_for_quota(&ns, "compute");
        }
        let spec = resourced_spec();
        let plan = plan(&ns, &[("sandbox", spec.clone(), &["ok"])]);
        server_dry_run(&ns, &harness_pod(&spec, &json!({"app": "harness"})))
            .unwrap_or_else(|e| panic!("{name}: a Harness pod is admitted: {e}"));
        let old = server_dry_run(&ns, &with_last_release_asks(dry_run_pod(&plan)))
            .expect_err("the last release's check pod is refused");
        assert!(old.contains(old_refusal), "{name}: {old}");
        let run = run_plan(&plan, &[]);
        assert_eq!(run.code(), Some(0), "{name}: {}", run.stderr);
        assert_passes(&run, &["ok"]);
        let lacking = run
            .lines()
            .iter()
            .any(|l| l.starts_with("warning: provider: not allowed to list limitranges"));
        assert_eq!(lacking, rbac != RBAC, "{name}: {}", run.stderr);
        assert_no_pod_left(&ns);
    }
}

/// A ValidatingAdmissionPolicy bound to namespace `ns` that denies the pods `expression` rejects.
fn policy(ns: &str, name: &str, expression: &str, message: &str) {
    let vap = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail",
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["pods"]}]},
                 "validations": [{"expression": expression, "message": message}]}});
    let binding = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}});
    let cluster = &env().cluster;
    cluster.kubectl_stdin(&["apply", "-f", "-"], &vap.to_string());
    cluster.kubectl_stdin(&["apply", "-f", "-"], &binding.to_string());
}

fn delete_policy(name: &str) {
    let cluster = &env().cluster;
    cluster.kubectl(&[
        "delete",
        "validatingadmissionpolicybinding,validatingadmissionpolicy",
        name,
        "--ignore-not-found",
    ]);
}

/// Waits until the API server enforces a new policy: a pod it refuses is refused.
fn wait_for_policy(ns: &str, refused: &Value) {
    env().cluster.wait_for(
        "the ValidatingAdmissionPolicy to be enforced",
        Duration::from_secs(60),
        || server_dry_run(ns, refused).is_err(),
    );
}

fn get(ns: &str, what: &[&str]) -> Value {
    let mut args = vec!["-n", ns, "get"];
    args.extend_from_slice(what);
    args.extend(["-o", "json"]);
    serde_json::from_str(&env().cluster.kubectl(&args)).unwrap()
}

/// A VAP that wants a `cost-center` label on every pod admits the check pod, which carries the Harness pods' labels;
/// a Deployment and a Service that select them run beside the check: the ReplicaSet adopts an orphan with those
/// labels, never the check pod (its controller is its Namespace); the Service's EndpointSlice lists the check pod as
/// not ready.
#[test]
fn the_check_pod_carries_the_harness_labels_and_is_never_adopted_nor_routed_to() {
    let _g = shared();
    let ns = namespace("rc-adm-labels", &[]);
    let cluster = &env().cluster;
    let vap = "rc-adm-require-cost-center";
    policy(
        &ns,
        vap,
        "has(object.metadata.labels) && 'cost-center' in object.metadata.labels",
        "every pod must carry a cost-center label",
    );
    let pause_pod = |labels: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "orphan-", "labels": labels},
               "spec": {"containers": [{"name": "pause", "image": PAUSE, "imagePullPolicy": "IfNotPresent"}]}})
    };
    wait_for_policy(&ns, &pause_pod(json!({"app": "other"})));

    let labels = json!({"app": "harness", "cost-center": "cc-1"});
    apply(
        &ns,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "harness"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "harness"}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "pause", "image": PAUSE, "imagePullPolicy": "IfNotPresent"}]}}}}),
    );
    // A Deployment's ReplicaSet selects `pod-template-hash` too, so it would never adopt a pod without it: a bare
    // ReplicaSet of the Harness labels is the controller that adopts any orphan they match.
    apply(
        &ns,
        &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "harness-bare"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "harness"}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "pause", "image": PAUSE, "imagePullPolicy": "IfNotPresent"}]}}}}),
    );
    apply(
        &ns,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "harness"},
            "spec": {"selector": {"app": "harness"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
    );
    cluster.wait_for(
        "the Deployment's and the ReplicaSet's pods to be ready",
        Duration::from_secs(90),
        || {
            get(&ns, &["deployment", "harness"])["status"]["readyReplicas"] == 1
                && get(&ns, &["replicaset", "harness-bare"])["status"]["readyReplicas"] == 1
        },
    );

    let mut plan = plan(&ns, &[("sandbox", harness_spec(), &["ok-delay-15000"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"sandbox": labels}});
    // Its own labels only (the last release, and `--dry-run`): the policy refuses it.
    let refused =
        server_dry_run(&ns, &dry_run_pod(&plan)).expect_err("refused without cost-center");
    assert!(
        refused.contains("every pod must carry a cost-center label"),
        "{refused}"
    );

    let path = write_plan(&plan);
    let started = Instant::now();
    let child = spawn_driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "-o", "json"],
    );
    wait_for_probe_running(&ns);
    let check = cluster.pods(&ns, MANAGED).remove(0);
    let name = check["metadata"]["name"].as_str().unwrap().to_owned();
    for (k, v) in [
        ("app", "harness"),
        ("cost-center", "cc-1"),
        ("app.kubernetes.io/name", "jr2-provider-preflight"),
    ] {
        assert_eq!(check["metadata"]["labels"][k], v, "{check:#}");
    }
    let namespace: Value =
        serde_json::from_str(&cluster.kubectl(&["get", "namespace", &ns, "-o", "json"])).unwrap();
    let namespace_uid = namespace["metadata"]["uid"].clone();
    let owned_by_namespace = json!([{"apiVersion": "v1", "kind": "Namespace", "name": ns,
                                     "uid": namespace_uid, "controller": true}]);
    assert_eq!(check["metadata"]["ownerReferences"], owned_by_namespace);

    // An orphan with the same labels: the bare ReplicaSet adopts it (and, one pod too many, deletes one). Once it has,
    // its sync has weighed every pod its selector matches, the check pod among them.
    let orphan: Value = serde_json::from_str(&cluster.kubectl_stdin(
        &["-n", &ns, "create", "-o", "json", "-f", "-"],
        &pause_pod(labels.clone()).to_string(),
    ))
    .unwrap();
    let orphan = orphan["metadata"]["name"].as_str().unwrap().to_owned();
    cluster.wait_for(
        "the ReplicaSet to adopt the orphan",
        Duration::from_secs(30),
        || {
            let out = cluster.kubectl_output(
                &cluster.info().admin_kubeconfig,
                &["-n", &ns, "get", "pod", &orphan, "-o", "json"],
                None,
            );
            let Ok(p) = serde_json::from_slice::<Value>(&out.stdout) else {
                return true; // gone: adopted and deleted as one too many
            };
            p["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
                || !p["metadata"]["deletionTimestamp"].is_null()
        },
    );
    let check = get(&ns, &["pod", &name]);
    assert_eq!(
        check["metadata"]["ownerReferences"], owned_by_namespace,
        "the check pod was adopted: {check:#}"
    );
    let ip = check["status"]["podIP"].as_str().unwrap().to_owned();

    // The Service's EndpointSlice lists the check pod, not ready.
    let mut listed = Value::Null;
    cluster.wait_for(
        "the EndpointSlice to list the check pod",
        Duration::from_secs(30),
        || {
            let slices = get(
                &ns,
                &["endpointslices", "-l", "kubernetes.io/service-name=harness"],
            );
            listed = slices["items"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
                .find(|e| {
                    e["addresses"]
                        .as_array()
                        .is_some_and(|a| a.contains(&json!(ip)))
                })
                .unwrap_or(Value::Null);
            !listed.is_null()
        },
    );
    assert_eq!(listed["conditions"]["ready"], false, "{listed:#}");

    // Issue 40, item 2: the pod's own label rewritten while it runs (as a mutating policy may set it): the driver
    // finds its pod by name, so the run neither loses it ("the pod was deleted") nor leaves it behind.
    cluster.kubectl(&[
        "-n",
        &ns,
        "label",
        "pod",
        &name,
        "--overwrite",
        "app.kubernetes.io/managed-by=platform-policy",
    ]);

    let run = finish(child, started, Duration::from_secs(180));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("deleted"), "{}", run.stderr);
    assert_passes(&run, &["ok-delay-15000"]);
    cluster.wait_for("the check pod to be gone", Duration::from_secs(60), || {
        !cluster
            .kubectl_output(
                &cluster.info().admin_kubeconfig,
                &["-n", &ns, "get", "pod", &name, "-o", "name"],
                None,
            )
            .status
            .success()
    });
    assert_no_pod_left(&ns);
    delete_policy(vap);
}

/// When the API server refuses the check pod all the same: a quota of no pods refuses a Harness pod too, one line
/// says so with the server's words; a policy that refuses only check pods, the other line says what differs.
#[test]
fn a_refusal_says_whether_the_namespace_refuses_a_harness_pod_too() {
    let _g = shared();
    let ns = namespace("rc-adm-no-pods", &[]);
    apply(
        &ns,
        &json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "compute"},
                "spec": {"hard": {"pods": "0"}}}),
    );
    wait_for_quota(&ns, "compute");
    let run = run_plan(&plan(&ns, &[("sandbox", harness_spec(), &["ok"])]), &[]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let at = lines
        .iter()
        .position(|l| {
            l.starts_with("error: provider preflight: the cluster refused the check pod: ")
        })
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        lines[at + 1].starts_with(
            "  the namespace refuses a Harness pod of placement \"sandbox\" as well (a server-side dry run of one): "
        ) && lines[at + 1].contains("exceeded quota: compute"),
        "{}",
        run.stderr
    );

    let ns = namespace("rc-adm-no-checks", &[]);
    let vap = "rc-adm-no-check-pods";
    policy(
        &ns,
        vap,
        "!has(object.metadata.labels) || !('app.kubernetes.io/name' in object.metadata.labels) || object.metadata.labels['app.kubernetes.io/name'] != 'jr2-provider-preflight'",
        "no check pods here",
    );
    let plan = plan(&ns, &[("sandbox", harness_spec(), &["ok"])]);
    wait_for_policy(&ns, &dry_run_pod(&plan));
    let run = run_plan(&plan, &[]);
    delete_policy(vap);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let at = lines
        .iter()
        .position(|l| {
            l.starts_with("error: provider preflight: the cluster refused the check pod: ")
                && l.contains("no check pods here")
        })
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        lines[at + 1].starts_with(
            "  the namespace admits a Harness pod of placement \"sandbox\" (a server-side dry run of one) and refuses only the check pod, which differs from it in its probe container ("
        ),
        "{}",
        run.stderr
    );
    assert!(env().cluster.pods(&ns, MANAGED).is_empty());
}
