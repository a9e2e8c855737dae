//! What the real API server's admission and namespace lifecycle do to the check pod (issue 40): a
//! ValidatingAdmissionPolicy in `Warn` mode, whose `Warning:` header the driver says once (item 11); a namespace
//! being deleted, at the create and during the run (item 12); `FailedMount` Events that are not the pod's own (item
//! 10). The slow webhook is `webhook.rs`, the API server back with another CA `api_server_ca.rs`; the clocks are
//! played on the fake (`orchestrate/tests/e2e_cluster_ways.rs`, which says why).

use std::time::Duration;

use serde_json::json;

use crate::harness::*;

/// Item 11: a ValidatingAdmissionPolicy in `Warn` mode that announces a rule the check pod breaks (as a platform
/// announces a refusal to come) is a `warning:` line, once; the check goes on and passes. Before: swallowed.
#[test]
fn a_policy_in_warn_mode_is_a_warning_line() {
    let _g = shared();
    let ns = namespace("rc-vap-warn", &[]);
    let cluster = &env().cluster;
    let name = "jr2-rc-vap-warn";
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "validations": [{"expression": "false", "message": "pods are refused in this namespace from 2027-01-01"}]
        }
    });
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Warn"],
                 "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}
    });
    cluster.kubectl_stdin(&["apply", "-f", "-"], &policy.to_string());
    cluster.kubectl_stdin(&["apply", "-f", "-"], &binding.to_string());
    // The policy holds once the API server has loaded it: a server-side dry run of a pod shows its warning.
    let probe_pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vap-check", "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "registry.jr2.test/custodian:1"}]}});
    cluster.wait_for("the policy to warn", Duration::from_secs(60), || {
        let out = cluster.kubectl_output(
            &cluster.info().admin_kubeconfig,
            &["create", "--dry-run=server", "-f", "-"],
            Some(&probe_pod.to_string()),
        );
        String::from_utf8_lossy(&out.stderr).contains("pods are refused")
    });
    let run = run_plan(&plan(&ns, &[("sandbox", harness_spec(), &["ok"])]), &[]);
    cluster.kubectl(&["delete", "validatingadmissionpolicybinding", name]);
    cluster.kubectl(&["delete", "validatingadmissionpolicy", name]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let warnings: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    insta::assert_snapshot!(warnings.join("\n"), @"warning: provider: the API server warned about the check pod: Validation failed for ValidatingAdmissionPolicy 'jr2-rc-vap-warn' with binding 'jr2-rc-vap-warn': pods are refused in this namespace from 2027-01-01");
    assert_passes(&run, &["ok"]);
    assert_no_pod_left(&ns);
}

/// Item 12: a namespace deleted while its check pod waits is named as such, with its own code and next action.
/// Before: `the check pod stopped (the pod was deleted) ... run once more`. Run as the admin: a least-privilege user's
/// RoleBinding goes with the namespace, and then every answer is a 403.
#[test]
fn a_namespace_deleted_during_the_run_is_named() {
    let _g = shared();
    let ns = namespace("rc-ns-deleted", &[]);
    let cluster = &env().cluster;
    let mut spec = harness_spec();
    // Never scheduled: the pod waits until its namespace takes it.
    spec["nodeSelector"] = json!({"jr2.test/pool": "nowhere"});
    let path = write_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]));
    let (child, started) = run_until_check_pod(As::Admin, &path, "60s", &ns);
    cluster.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
    let run = finish(child, started, Duration::from_secs(120));
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let stopped = format!(
        "error: provider preflight: the check pod stopped (its namespace \"{ns}\" was deleted) before any model was checked"
    );
    assert!(run.lines().contains(&stopped.as_str()), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(
        v["pods"][0]["code"], "PROVIDER_NAMESPACE_TERMINATING",
        "{v}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(55),
        "{}",
        run.stderr
    );
}

/// Item 12: a create refused because the namespace is being deleted (held by a finalizer) is named as such, with
/// its own next action. Before: `the cluster refused the check pod: ...` with the quota and room next action.
#[test]
fn a_terminating_namespace_refusal_is_named() {
    let _g = shared();
    let ns = namespace("rc-ns-terminating", &[]);
    let cluster = &env().cluster;
    let hold = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "hold", "namespace": ns, "finalizers": ["jr2.test/hold"]}});
    cluster.kubectl_stdin(&["apply", "-f", "-"], &hold.to_string());
    cluster.kubectl(&["delete", "namespace", &ns, "--wait=false"]);
    cluster.wait_for(
        "the namespace to terminate",
        Duration::from_secs(30),
        || {
            cluster
                .kubectl(&["get", "namespace", &ns, "-o", "jsonpath={.status.phase}"])
                .contains("Terminating")
        },
    );
    let path = write_plan(&plan(&ns, &[("sandbox", harness_spec(), &["ok"])]));
    let run = driver(
        As::Admin,
        &["run", "--plan", path.to_str().unwrap(), "-o", "json"],
    );
    cluster.kubectl(&[
        "-n",
        &ns,
        "patch",
        "configmap",
        "hold",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(
        v["pods"][0]["code"], "PROVIDER_NAMESPACE_TERMINATING",
        "{v}"
    );
    let pod = v["pods"][0]["name"].as_str().unwrap_or_default();
    let line = run
        .lines()
        .into_iter()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_default()
        .replace(pod, "<pod>");
    insta::assert_snapshot!(line, @r#"error: provider preflight: namespace "rc-ns-terminating" is being deleted, so the check pod cannot be created: pods "<pod>" is forbidden: unable to create new content in namespace rc-ns-terminating because it is being terminated"#);
}

/// Item 10: `FailedMount` Events that are not the check pod's own (one from a policy engine, `kyverno-admission`,
/// naming the pod's own volume; one as the kubelet's naming a volume the pod does not have), created through the API
/// as `kubectl create` would while the pod waits to start, do not end the run as the pod's failure: the pod starts
/// and its check passes. Before: the run ended at once, `PROVIDER_POD_CANNOT_START`. The pod waits on a node label of
/// this test's own until the Events are stored, so they are seen before its containers start.
#[test]
fn a_failed_mount_that_is_not_the_pods_does_not_end_the_run() {
    let _g = shared();
    let ns = namespace("rc-foreign-mount", &[]);
    let cluster = &env().cluster;
    let node = cluster.info().node_name.clone();
    let label = "jr2.test/foreign-mount";
    let mut spec = harness_spec();
    spec["nodeSelector"] = json!({label: ns});
    let path = write_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]));
    let (child, started) = run_until_check_pod(As::User, &path, "60s", &ns);
    let pod = CheckPodEvents::of(&ns);
    let event = |suffix: &str, component: &str, message: &str| {
        pod.warning(suffix, "FailedMount", component, message)
    };
    let events = [
        event(
            "policy",
            "kyverno-admission",
            "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found",
        ),
        event(
            "other-volume",
            "kubelet",
            "MountVolume.SetUp failed for volume \"vault-secrets\" : secret \"vault\" not found",
        ),
    ];
    for e in &events {
        cluster.kubectl_stdin(&["create", "-f", "-"], &e.to_string());
    }
    // The pod may be placed now: the Events are stored, and the driver's watch of them is open since the create.
    cluster.kubectl(&["label", "node", &node, &format!("{label}={ns}")]);
    let run = finish(child, started, Duration::from_secs(120));
    cluster.kubectl(&["label", "node", &node, &format!("{label}-")]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["ok"]);
    assert!(
        !run.stderr.contains("FailedMount") && !run.stderr.contains("vault"),
        "{}",
        run.stderr
    );
    let stored: Vec<String> = cluster
        .events(&ns)
        .iter()
        .filter(|e| e["reason"] == "FailedMount" && e["involvedObject"]["uid"] == pod.uid.as_str())
        .filter_map(|e| e["source"]["component"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(stored.len(), 2, "the Events are the pod's: {stored:?}");
    assert_no_pod_left(&ns);
}
