//! End to end with a fake cluster: what the namespace's admission weighs in the check pod (issue 35) and what it
//! may rewrite (issue 40, item 2).
//!
//! - the check pod as posted: the probe's requests and limits for cpu and memory, the Harness pods' labels beside its
//!   own with its Namespace as controller, the readiness gate;
//! - `list limitranges` denied: one warning, and the asks that pass common floors;
//! - a policy that sets `app.kubernetes.io/managed-by` on every pod: the run still watches its pod (by name) and
//!   passes, and deletes it;
//! - a refusal: the dry run of a Harness pod says whether the namespace refuses it too (two lines, snapshot-tested).

mod fake_cluster;

use serde_json::{Value, json};

use fake_cluster::*;
use jr2_testkit::kube::Scenario;

fn probe_of(pod: &Value) -> &Value {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "probe")
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_pod_states_its_asks_and_carries_the_harness_labels_under_its_namespace() {
    let s = Setup::new(Scenario::AllOk).await;
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": {
        "app.kubernetes.io/name": "jr2-harness", "cost-center": "cc-42"}}});
    let plan = s.write_plan(&plan);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let pod = &s.posted_pods()[0];
    assert_eq!(
        probe_of(pod)["resources"],
        json!({"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}})
    );
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels["cost-center"], "cc-42");
    assert_eq!(
        labels["app.kubernetes.io/name"], "jr2-provider-preflight",
        "its own label wins"
    );
    assert_eq!(labels["app.kubernetes.io/managed-by"], "jr2-preflight");
    assert_eq!(
        pod["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "Namespace", "name": NS,
                "uid": "6a723200-0000-4000-8000-000000000005", "controller": true}])
    );
    assert_eq!(
        pod["spec"]["readinessGates"],
        json!([{"conditionType": "jr2.dev/check-pod-never-ready"}])
    );
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_namespace_or_the_limit_ranges_the_pod_asks_what_passes_common_floors() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.deny("list", "", "limitranges");
    s.kube.deny("get", "", "namespaces");
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": {"cost-center": "cc-42"}}});
    let plan = s.write_plan(&plan);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(
        run.lines().contains(&"warning: provider: not allowed to list limitranges in namespace \"e2e\" — the probe's requests and limits are not fitted to its LimitRanges: it asks cpu 100m and memory 128Mi, requests equal to limits"),
        "{}",
        run.stderr
    );
    let pod = &s.posted_pods()[0];
    assert_eq!(
        probe_of(pod)["resources"],
        json!({"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"}})
    );
    // No owner known: an orphan with the Harness labels would be adopted, so it carries its own only.
    assert!(
        pod["metadata"]["labels"]["cost-center"].is_null(),
        "{pod:#}"
    );
    assert!(pod["metadata"]["ownerReferences"].is_null(), "{pod:#}");
    s.assert_cleaned_up();
}

/// Issue 40, item 2: a policy that sets `app.kubernetes.io/managed-by: platform-policy` on every pod. Before, the
/// driver's watch selected by that label and said "the pod was deleted" in milliseconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_label_rewritten_by_admission_does_not_lose_the_pod() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube
        .rewrite_label_on_create("app.kubernetes.io/managed-by", "platform-policy");
    let plan = s.plan(&[("harness", &["ok"]), ("sandbox", &["ok-delay-10"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("deleted"), "{}", run.stderr);
    assert_passes(&run.lines(), &["ok", "ok-delay-10"]);
    let created = s.kube.created();
    assert_eq!(created.len(), 2);
    for name in &created {
        assert!(s.kube.pod(NS, name).is_none(), "{name} left");
    }
    let mut deleted = s.kube.deleted();
    deleted.sort();
    deleted.dedup();
    let mut created = created;
    created.sort();
    assert_eq!(created, deleted);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_says_whether_a_harness_pod_is_refused_too() {
    let quota = "pods \"jr2-preflight-e2e-harness-x\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10";
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.refuse_creates(Some((403, "Forbidden", quota)));
    let run = s.run(s.args(&s.plan(&[("harness", &["ok"])]), &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let too = run.stderr.clone();
    let dry: Vec<_> = s
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.q("dryRun") == Some("All"))
        .collect();
    assert_eq!(dry.len(), 1, "one dry run");
    assert_eq!(
        dry[0].body["spec"]["containers"][0]["name"], "harness",
        "the placement's own spec"
    );
    assert!(s.kube.created().is_empty());

    let s = Setup::new(Scenario::AllOk).await;
    s.kube.refuse_check_pods_only(
        400,
        "BadRequest",
        "admission webhook \"images.example.com\" denied the request: image registry.example.com/jr2/jr2-probe:0.1.0 is not signed",
    );
    let run = s.run(s.args(&s.plan(&[("harness", &["ok"])]), &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    insta::assert_snapshot!(format!(
        "# the namespace refuses the Harness pods too\n{too}\n# only the check pod is refused\n{}",
        run.stderr
    ));
    assert!(s.kube.created().is_empty());
}
