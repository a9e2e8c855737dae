//! End to end with a fake cluster, for what an operator reaches for: `--from-deployment` (check the placement a
//! Harness Deployment runs now), `--evidence` (the bundle to attach to a report), the NetworkPolicy warning (read
//! from the namespace's policies through the real `kube` client), and the secrets test across every output of the
//! driver: with a real key in a Secret that the kubelet stand-in hands the probe, as a kubelet does, the value is
//! in none of stdout, stderr, the evidence, the dry-run pods, the pods as the API server stored them (every version,
//! termination messages included) or the probe's log.
//!
//! The harness (the driver as a process, the fakes, the plan, the common checks) is in `fake_cluster/mod.rs`.

mod fake_cluster;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use fake_cluster::*;
use jr2_testkit::kube::Scenario;

/// The labels of the Harness pods in the plans and Deployments below.
fn harness_labels() -> Value {
    json!({"app.kubernetes.io/name": "jr2-harness", "jr2.dev/instance": "e2e"})
}

/// A Harness Deployment as `jr2 up` applies it, with `spec` as its pod template's spec.
fn deployment(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": harness_labels()},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": harness_labels()},
            "template": {"metadata": {"labels": harness_labels()}, "spec": spec}
        }
    })
}

fn no_pod_was_posted(s: &Setup) {
    assert!(s.posted_pods().is_empty(), "a pod was created");
    assert!(s.kube.created().is_empty());
}

// ---------------------------------------------------------------------------------------------------------------
// --from-deployment

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_deployment_checks_the_placement_the_harness_runs_now() {
    let s = Setup::new(Scenario::AllOk).await;
    // The Deployment runs on other nodes than the plan says, and its pods carry the labels a NetworkPolicy selects.
    let mut spec = pod_spec();
    spec["nodeSelector"] = json!({"jr2.dev/pool": "gpu-a100"});
    spec["tolerations"] =
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]);
    spec["priorityClassName"] = json!("jr2-harness");
    s.kube
        .add_deployment(NS, deployment("jr2-instance-harness", spec));
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "harness-egress"}, "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]
        }}),
    );
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s
        .run(s.args(&plan, &["--from-deployment", "jr2-instance-harness"]))
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);

    // The check pod stood where the Deployment's pods stand, not where the plan said.
    let posted = s.posted_pods();
    assert_eq!(posted.len(), 1);
    let pod = &posted[0]["spec"];
    assert_eq!(pod["nodeSelector"], json!({"jr2.dev/pool": "gpu-a100"}));
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    );
    // The Deployment's priority class, named (the check pod takes none: it never preempts, issue 39).
    assert_eq!(
        posted[0]["metadata"]["annotations"]["jr2.dev/harness-priority-class"],
        "jr2-harness"
    );
    assert!(pod.get("priorityClassName").is_none(), "{pod}");
    assert!(
        s.kube.requests().iter().any(|r| r.method == "GET"
            && r.path == format!("/apis/apps/v1/namespaces/{NS}/deployments/jr2-instance-harness")),
        "the Deployment was read"
    );
    // The Deployment's pod labels are the Harness labels the NetworkPolicy check uses (the plan named none).
    let lines = run.lines();
    assert_eq!(
        lines[0],
        "warning: provider: NetworkPolicy \"harness-egress\" limits the egress of the Harness pods, and the check pod is not under it — this check can pass while a Turn fails",
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(v["models"].as_array().unwrap().len(), 2);
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_deployment_that_does_not_exist_is_bad_input_and_creates_nothing() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s
        .run(s.args(&plan, &["--from-deployment", "jr2-nope"]))
        .await;
    assert_eq!(run.code(), Some(2), "{}", run.stderr);
    assert_eq!(
        run.lines(),
        [format!(
            "error: --from-deployment: there is no Deployment \"jr2-nope\" in namespace \"{NS}\""
        )]
    );
    assert_eq!(run.stdout, "", "no verdict on bad input");
    no_pod_was_posted(&s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_deployment_with_a_literal_key_is_refused_without_echoing_it() {
    let s = Setup::new(Scenario::AllOk).await;
    let literal = "sk-live-0123456789abcdefghijklmnopqrstuv";
    let mut spec = pod_spec();
    spec["containers"][0]["env"][0] = json!({"name": "JR2_PROVIDER_API_KEY", "value": literal});
    s.kube.add_deployment(NS, deployment("jr2-leaky", spec));
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s
        .run(s.args(&plan, &["--from-deployment", "jr2-leaky"]))
        .await;
    assert_eq!(run.code(), Some(2), "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with(
            "error: --from-deployment: Deployment \"jr2-leaky\": spec.template.spec.containers[0].env[0]"
        ),
        "names the Deployment's field: {lines:#?}"
    );
    assert!(!run.stderr.contains(literal), "the literal is not repeated");
    no_pod_was_posted(&s);
}

/// A Deployment whose Custodian holds a literal secret-shaped value is refused like a plan would be (issue 11,
/// item 2): the Deployment's field, the value never repeated, nothing created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_deployment_with_a_literal_in_the_custodian_is_refused() {
    let s = Setup::new(Scenario::AllOk).await;
    let literal = "hunter2-0123456789-correct-horse-battery";
    let mut spec = pod_spec();
    let custodian = spec["containers"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == "custodian")
        .expect("the fake Deployment has a Custodian");
    spec["containers"][custodian]["env"] = json!([{"name": "DATABASE_PASSWORD", "value": literal}]);
    s.kube
        .add_deployment(NS, deployment("jr2-leaky-custodian", spec));
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s
        .run(s.args(&plan, &["--from-deployment", "jr2-leaky-custodian"]))
        .await;
    assert_eq!(run.code(), Some(2), "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(
        lines,
        [format!(
            "error: --from-deployment: Deployment \"jr2-leaky-custodian\": spec.template.spec.containers[{custodian}].env[0].value: DATABASE_PASSWORD looks like a secret and is a literal ({} characters, not repeated); a plan carries the Stand-in \"jr2-held-DATABASE_PASSWORD\" or a valueFrom reference, never a secret value",
            literal.len()
        )]
    );
    assert!(!run.stderr.contains(literal));
    no_pod_was_posted(&s);
}

// ---------------------------------------------------------------------------------------------------------------
// --evidence

/// Every file under `dir`, by its path relative to `dir`.
fn files_under(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn evidence_dir(s: &Setup) -> PathBuf {
    s.dir.join("evidence")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_of_a_pod_that_cannot_start() {
    let s = Setup::new(Scenario::ImagePullBackOff).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let dir = evidence_dir(&s);
    let run = s
        .run(s.args(&plan, &["--evidence", &dir.display().to_string()]))
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let v = run.verdict();
    let pod = s.kube.created()[0].clone();
    let files = files_under(&dir);
    let names: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            format!("{pod}/custodian.log"),
            format!("{pod}/events.yaml"),
            format!("{pod}/pod-last-status.yaml"),
            format!("{pod}/probe.jsonl"),
            "pods-as-created.yaml".to_owned(),
            "run.txt".to_owned(),
            "verdict.json".to_owned(),
        ]
    );
    // The verdict is the one on stdout.
    let bundled: Value = serde_json::from_str(&files["verdict.json"]).unwrap();
    assert_eq!(bundled, v);
    // The pod as created: the one posted, with its Stand-in, as YAML that reads back.
    let created: Value = serde_yaml::from_str(&files["pods-as-created.yaml"]).unwrap();
    let posted = s.posted_pods();
    assert_eq!(created["metadata"]["name"], posted[0]["metadata"]["name"]);
    assert_eq!(created["spec"], posted[0]["spec"]);
    assert!(files["pods-as-created.yaml"].contains("jr2-held-JR2_PROVIDER_API_KEY"));
    // Its last status: the probe waiting on the image.
    let last: Value = serde_yaml::from_str(&files[&format!("{pod}/pod-last-status.yaml")]).unwrap();
    let waiting = last["status"]["containerStatuses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "probe")
        .map(|c| c["state"]["waiting"]["reason"].clone());
    assert_eq!(waiting, Some(json!("ImagePullBackOff")), "{last:#}");
    // Its Events: the scheduler's and the kubelet's pull failures.
    let events: Value = serde_yaml::from_str(&files[&format!("{pod}/events.yaml")]).unwrap();
    let reasons: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["reason"].as_str())
        .collect();
    for reason in ["Scheduled", "Failed", "BackOff"] {
        assert!(reasons.contains(&reason), "{reason} in {reasons:?}");
    }
    // The probe never ran: no line of it.
    assert_eq!(files[&format!("{pod}/probe.jsonl")], "");
    // The run id and UTC times.
    let run_txt = &files["run.txt"];
    assert!(run_txt.contains(&format!("run id: {}\n", v["runId"].as_str().unwrap())));
    assert!(run_txt.contains(&format!("namespace: {NS}\n")));
    assert!(run_txt.contains(&format!(
        "started at (UTC): {}\n",
        v["startedAt"].as_str().unwrap()
    )));
    assert!(run_txt.contains("written at (UTC): ") && run_txt.trim_end().ends_with('Z'));
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_of_a_model_that_fails_holds_the_probe_lines() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[("harness", &["ok", "missing"])]);
    let dir = evidence_dir(&s);
    let run = s
        .run(s.args(&plan, &["--evidence", &dir.display().to_string()]))
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let pod = s.kube.created()[0].clone();
    let files = files_under(&dir);
    // The probe's JSON lines, as its log gave them: a result per model (in the order they finished).
    let lines: Vec<Value> = files[&format!("{pod}/probe.jsonl")]
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let mut results: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["event"] == "result")
        .map(|l| {
            (
                l["result"]["model"].as_str().unwrap(),
                l["result"]["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    results.sort_unstable();
    assert_eq!(
        results,
        [("vllm/missing", "http"), ("vllm/ok", "ok")],
        "{lines:#?}"
    );
    let bundled: Value = serde_json::from_str(&files["verdict.json"]).unwrap();
    assert_eq!(bundled, run.verdict());
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evidence_directory_that_is_not_empty_is_bad_input_and_creates_nothing() {
    let s = Setup::new(Scenario::ImagePullBackOff).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let dir = evidence_dir(&s);
    std::fs::create_dir_all(&dir).unwrap();
    let precious = s.dir.join("precious");
    std::fs::write(&precious, "keep me").unwrap();
    std::os::unix::fs::symlink(&precious, dir.join("verdict.json")).unwrap();
    let run = s
        .run(s.args(&plan, &["--evidence", &dir.display().to_string()]))
        .await;
    assert_eq!(run.code(), Some(2), "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with("error: --evidence: ") && lines[0].contains("is not empty"),
        "{lines:#?}"
    );
    assert_eq!(run.stdout, "", "no verdict on bad input");
    no_pod_was_posted(&s);
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_evidence_when_the_check_passes() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let dir = evidence_dir(&s);
    let run = s
        .run(s.args(&plan, &["--evidence", &dir.display().to_string()]))
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!dir.exists(), "nothing to attach to a report");
    s.assert_cleaned_up();
}

// ---------------------------------------------------------------------------------------------------------------
// Pull secrets

/// The check pod does not run as the Harness's service account, so it would not get that account's pull secrets: the
/// driver copies them, as the ServiceAccount admission plugin gives them to the Harness pod (only to a spec that lists
/// none), reading each account once; an account it cannot read changes nothing (issue 12, item 19).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_harness_service_accounts_pull_secrets_reach_the_check_pod() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.add_service_account(
        NS,
        json!({"metadata": {"name": "harness"}, "imagePullSecrets": [{"name": "regcred"}]}),
    );
    let mut plan = plan(
        &s.provider.base_url(),
        &[
            ("sandbox", &["ok"]),
            ("instance-harness", &["ok@b"]),
            ("gpu", &["ok@c"]),
        ],
    );
    plan["placements"][0]["podSpec"]["serviceAccountName"] = json!("harness");
    plan["placements"][1]["podSpec"]["serviceAccountName"] = json!("harness");
    plan["placements"][1]["podSpec"]["imagePullSecrets"] = json!([{"name": "own"}]);
    plan["placements"][2]["podSpec"]["serviceAccountName"] = json!("not-here");
    let path = s.write_plan(&plan);
    let run = s.run(s.args(&path, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let pull_secrets = |placement: &str| {
        s.posted_pods()
            .into_iter()
            .find(|p| p["metadata"]["labels"]["jr2.dev/placement"] == placement)
            .map(|p| p["spec"]["imagePullSecrets"].clone())
            .unwrap()
    };
    assert_eq!(pull_secrets("sandbox"), json!([{"name": "regcred"}]));
    assert_eq!(pull_secrets("instance-harness"), json!([{"name": "own"}]));
    assert_eq!(pull_secrets("gpu"), Value::Null);
    for p in s.posted_pods() {
        assert_eq!(
            p["spec"].get("serviceAccountName"),
            None,
            "not the Harness's account"
        );
        assert_eq!(p["spec"]["automountServiceAccountToken"], false);
    }
    let reads: Vec<String> = s
        .kube
        .requests()
        .iter()
        .filter(|r| r.path.contains("/serviceaccounts/"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        reads,
        [
            format!("/api/v1/namespaces/{NS}/serviceaccounts/harness"),
            format!("/api/v1/namespaces/{NS}/serviceaccounts/not-here"),
        ]
    );
    s.assert_cleaned_up();
}

// ---------------------------------------------------------------------------------------------------------------
// NetworkPolicies

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_policies_that_limit_the_harness_egress_and_not_the_check_pods_are_named() {
    let s = Setup::new(Scenario::AllOk).await;
    let policy = |name: &str, selector: Value, types: Value| json!({"metadata": {"name": name}, "spec": {"podSelector": selector, "policyTypes": types}});
    let harness = json!({"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}});
    // Selects the Harness pods, limits egress: named.
    s.kube.add_network_policy(
        NS,
        policy("harness-egress", harness.clone(), json!(["Egress"])),
    );
    // No `policyTypes`, egress rules: of type Egress, as the API server defaults it: named.
    s.kube.add_network_policy(
        NS,
        // (The provider's address, on loopback: the check is judged by the provider's destination, issue 35.)
        json!({"metadata": {"name": "harness-to-llm"}, "spec": {"podSelector": harness.clone(),
            "egress": [{"to": [{"ipBlock": {"cidr": "127.0.0.0/8"}}]}]}}),
    );
    // Every pod of the namespace (an empty selector), egress denied: the check pod is under it too.
    s.kube.add_network_policy(
        NS,
        policy(
            "default-deny-egress",
            json!({}),
            json!(["Ingress", "Egress"]),
        ),
    );
    // The Instance's pods, by the label the check pod carries too: the check pod is under it.
    s.kube.add_network_policy(
        NS,
        policy(
            "instance-egress",
            json!({"matchLabels": {"jr2.dev/instance": "e2e"}}),
            json!(["Egress"]),
        ),
    );
    // (A policy that allows all egress: `a_limit_that_another_policy_opens_is_not_named`.)
    // Ingress only: the check's path out is not limited.
    s.kube.add_network_policy(
        NS,
        policy("harness-ingress", harness.clone(), json!(["Ingress"])),
    );
    // Another app's pods (an expression that does not match the Harness labels).
    s.kube.add_network_policy(
        NS,
        policy(
            "web-egress",
            json!({"matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["web"]}]}),
            json!(["Egress"]),
        ),
    );
    // The same policy in another namespace: not this one's.
    s.kube.add_network_policy(
        "other",
        policy("other-harness-egress", harness, json!(["Egress"])),
    );
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": harness_labels()}});
    let path = s.write_plan(&plan);
    let run = s.run(s.args(&path, &[])).await;
    // A warning, not an error: the check still runs and passes.
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    // Policies add up (issue 27, item 2): under `default-deny-egress` and `instance-egress` the check pod has no
    // egress at all, while `harness-to-llm` gives the Harness pods the provider's 127.0.0.0/8, so the check can fail where a
    // Turn passes, and that allowlist is what to say. (Before, both Harness policies were named as limits the check
    // pod escapes: the wrong way round.) `harness-egress` adds nothing to either: not named.
    let warning = |name: &str| {
        format!(
            "warning: provider: NetworkPolicy \"{name}\" allows egress of the Harness pods, and the check pod is not under it — this check can fail where a Turn passes: allow the same egress for the check pod's labels (app.kubernetes.io/name=jr2-provider-preflight)"
        )
    };
    assert_eq!(lines[..1], [warning("harness-to-llm")], "{lines:#?}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("warning:")).count(),
        1,
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(v["lines"][0], warning("harness-to-llm"));
    // Listed in the namespace only.
    let lists: Vec<String> = s
        .kube
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/networkpolicies"))
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(
        lists,
        [format!(
            "/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies"
        )]
    );
    s.assert_cleaned_up();
}

/// Policies add up: a policy that limits the Harness pods' egress names no difference when another one that selects
/// them allows all egress (issue 12 review of item 7).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_that_another_policy_opens_is_not_named() {
    let s = Setup::new(Scenario::AllOk).await;
    let harness = json!({"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}});
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "harness-to-lan"}, "spec": {"podSelector": harness.clone(),
            "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}}),
    );
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "harness-open"}, "spec": {"podSelector": harness, "egress": [{}]}}),
    );
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": harness_labels()}});
    let path = s.write_plan(&plan);
    let run = s.run(s.args(&path, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("NetworkPolicy"), "{}", run.stderr);
    s.assert_cleaned_up();
}

/// A refused connect under a policy that denies the check pod the provider's address (issue 35): the error line, then
/// the policy named in place of the hints about localhost, the model id and vLLM (the real dataplane:
/// `real_netpol`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connect_names_the_policy_that_denies_it() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "default-deny-egress"}, "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
    );
    // A port nothing listens on: the connect is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let mut plan = plan(&format!("http://{closed}/v1"), &[("harness", &["ok"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": harness_labels()}});
    let path = s.write_plan(&plan);
    let run = s.run(s.args(&path, &[])).await;
    assert_ne!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    let at = lines
        .iter()
        .position(|l| l.starts_with("error: provider preflight failed for model"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(lines[at].ends_with("connection refused"), "{lines:#?}");
    assert_eq!(
        lines[at + 1],
        format!(
            "  - NetworkPolicy \"default-deny-egress\" selects the check pod and the Harness pods and allows them no egress to {closed}: a Turn is refused the same; allow that egress for the Harness pods' labels"
        ),
        "{lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("localhost never works") || l.contains("vLLM")),
        "{lines:#?}"
    );
    // The verdict's next action points at the policy, not at the address.
    let v = run.verdict();
    assert_eq!(v["models"][0]["code"], "PROVIDER_UNREACHABLE", "{v:#}");
    assert_eq!(
        v["models"][0]["nextAction"],
        format!(
            "allow the Harness pods' labels egress to {closed} (TCP) in a NetworkPolicy of the namespace: NetworkPolicy \"default-deny-egress\" denies it to the Harness pods and the check pod alike, so a Turn is refused the same, then run jr2 up again"
        ),
        "{v:#}"
    );
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_harness_labels_no_network_policy_is_read() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "default-deny-egress"}, "spec": {"podSelector": {}, "policyTypes": ["Egress"]}}),
    );
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("NetworkPolicy"), "{}", run.stderr);
    assert!(
        !s.kube
            .requests()
            .iter()
            .any(|r| r.path.ends_with("/networkpolicies")),
        "the plan names no Harness labels: nothing to compare with"
    );
    s.assert_cleaned_up();
}

// ---------------------------------------------------------------------------------------------------------------
// Secrets

/// The key of the custom provider, in a Secret of the namespace: the probe holds it (a `secretKeyRef` of the
/// Harness env); the provider echoes it back in a 401, as OpenAI's API does.
const KEY: &str = "sk-e2e-secret-4f1c9a7d2b8e6035aa17c2d9e4b0f861";
/// Another value of a Secret the Harness env takes whole (`envFrom`): not a key of any model, still never printed.
const DSN: &str = "https://8d1f0c2b6a9e4e47@o123456.ingest.sentry.example/4505";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_value_in_any_output_of_the_driver() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.add_secret(NS, "vllm-key", &[("api-key", KEY)]);
    s.kube.add_secret(NS, "x", &[("SENTRY_DSN", DSN)]);
    // A custom provider whose key the Harness reads from a Secret (not held by the Custodian), and a held one.
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok", "echo-key"])]);
    for m in plan["models"].as_array_mut().unwrap() {
        m["keyEnv"] = json!("VLLM_API_KEY");
        m["keyHeld"] = json!(false);
    }
    plan["placements"][0]["podSpec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-key", "key": "api-key"}}}));
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": harness_labels()}});
    let path = s.write_plan(&plan);
    let dir = evidence_dir(&s);

    // The dry run.
    let dry = s.run(s.args(&path, &["--dry-run"])).await;
    assert_eq!(dry.code(), Some(0), "{}", dry.stderr);
    assert!(dry.stdout.contains("kind: Pod"), "{}", dry.stdout);

    // Two runs, each failing on the echoed key, so each writes its evidence: one as the log comes, one whose log is
    // lost after its first line (the verdict from the termination message, which the stored statuses then hold).
    let mut runs = Vec::new();
    for (i, log_lines) in [None, Some(1)].into_iter().enumerate() {
        s.kube.set_scenario(log_cut_after(log_lines));
        let evidence = dir.join(i.to_string());
        let run = s
            .run(s.args(&path, &["--evidence", &evidence.display().to_string()]))
            .await;
        assert_eq!(run.code(), Some(1), "{}", run.stderr);
        let v = run.verdict();
        assert_eq!(v["models"][0]["outcome"], "ok", "{v:#}");
        assert_eq!(v["models"][1]["outcome"], "key_refused", "{v:#}");
        runs.push(run);
    }

    // The test would see a leak: the key reached the probe, the provider, and came back in the provider's body.
    let seen = s.provider.requests_for("echo-key");
    assert_eq!(seen.len(), 2);
    for r in &seen {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str()),
            "the probe held the key from the Secret and sent it"
        );
    }
    // The termination message of the second run was stored (and is read below with every stored version).
    assert!(
        s.kube
            .history()
            .iter()
            .any(|p| p["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["state"]["terminated"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("PROVIDER_KEY_REFUSED")))),
        "a termination message was stored"
    );

    // And it is nowhere.
    let mut outputs: Vec<(String, String)> = vec![
        ("dry-run stdout".into(), dry.stdout.clone()),
        ("dry-run stderr".into(), dry.stderr.clone()),
    ];
    for (i, run) in runs.iter().enumerate() {
        outputs.push((format!("run {i} stdout"), run.stdout.clone()));
        outputs.push((format!("run {i} stderr"), run.stderr.clone()));
    }
    for (name, text) in files_under(&dir) {
        outputs.push((format!("evidence {name}"), text));
    }
    for r in s.kube.requests() {
        outputs.push((
            format!("request {} {}", r.method, r.path),
            r.body.to_string(),
        ));
    }
    for (i, object) in s.kube.history().iter().enumerate() {
        outputs.push((format!("stored object version {i}"), object.to_string()));
    }
    for pod in s.kube.created() {
        for container in ["probe", "custodian"] {
            outputs.push((
                format!("log of {pod}/{container}"),
                s.kube.log(NS, &pod, container).join("\n"),
            ));
        }
    }
    for (name, text) in &outputs {
        for (what, secret) in [("the key", KEY), ("the DSN", DSN)] {
            assert!(!text.contains(secret), "{what} in {name}:\n{text}");
        }
    }
    assert!(outputs.len() > 12, "{} outputs read", outputs.len());
    // No request of the driver read a Secret.
    assert!(
        !s.kube.requests().iter().any(|r| r.path.contains("secrets")),
        "the driver reads no Secret"
    );
    s.assert_cleaned_up();
}

/// The ingress side (issue 27, item 2): a vLLM in the namespace behind a policy that admits only the Harness pods (by
/// their labels) refuses the check pod, so the check can fail where a Turn passes: that policy is named, with the
/// check pod's labels to admit too. A policy over the same pods that admits the check pod too (they add up) and a
/// policy over other pods that admits every pod say nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingress_policy_that_admits_only_the_harness_pods_is_named() {
    let s = Setup::new(Scenario::AllOk).await;
    let vllm = json!({"matchLabels": {"app": "vllm"}});
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "vllm-from-harness"}, "spec": {"podSelector": vllm.clone(),
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}}}],
                         "ports": [{"port": 8000}]}]}}),
    );
    s.kube.add_network_policy(
        NS,
        json!({"metadata": {"name": "gateway-from-all"}, "spec": {"podSelector": {"matchLabels": {"app": "gateway"}},
            "ingress": [{"from": [{"podSelector": {}}]}]}}),
    );
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"harness": harness_labels()}});
    let path = s.write_plan(&plan);
    let run = s.run(s.args(&path, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let line = "warning: provider: NetworkPolicy \"vllm-from-harness\" admits the Harness pods to the pods it selects, and not the check pod — if a provider runs there, this check can fail where a Turn passes: admit the check pod's labels (app.kubernetes.io/name=jr2-provider-preflight) too";
    let lines = run.lines();
    assert_eq!(lines[..1], [line], "{lines:#?}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("warning:")).count(),
        1,
        "{lines:#?}"
    );
    assert_eq!(run.verdict()["lines"][0], line);
    s.assert_cleaned_up();

    // Admitted too, by a second policy over the same pods: nothing to say.
    let s = Setup::new(Scenario::AllOk).await;
    for (name, from) in [
        ("vllm-from-harness", "jr2-harness"),
        ("vllm-from-preflight", "jr2-provider-preflight"),
    ] {
        s.kube.add_network_policy(
            NS,
            json!({"metadata": {"name": name}, "spec": {"podSelector": vllm.clone(),
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": from}}}]}]}}),
        );
    }
    let path = s.write_plan(&plan);
    let run = s.run(s.args(&path, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("NetworkPolicy"), "{}", run.stderr);
    s.assert_cleaned_up();
}
