//! End to end with a fake cluster, for `jr2-preflight check`: the operator's by-hand check from a pod. The real
//! driver as a process, the fake API server through the real `kube` client, the kubelet stand-in running the real
//! probe. A pass, a failure with its lines (snapshotted), a key from a Secret (a `secretKeyRef`, its value nowhere
//! the driver writes), `--from-deployment` (the Deployment's placement and Custodian), Ctrl-C once the pod exists (it
//! is deleted), `--dry-run` (nothing contacted), and bad flags (exit 2, nothing contacted).

mod fake_cluster;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use fake_cluster::*;
use jr2_testkit::kube::{NODE, Scenario};

/// `check --kubeconfig <the fake's> -o json <extra>`.
fn check_args(s: &Setup, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["check", "--kubeconfig", &s.kubeconfig(), "-o", "json"]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    args
}

/// The fake's kubeconfig, its context in namespace [`NS`]: `check` takes it from there, as kubectl does.
async fn setup(scenario: Scenario) -> Setup {
    let s = Setup::new(scenario).await;
    s.kube.kubeconfig_in(&s.dir.join("kubeconfig"), NS).unwrap();
    s
}

/// The lines with what changes from run to run made stable: the fake provider's port, the milliseconds, the run id.
fn stable(stderr: &str, s: &Setup) -> String {
    let port = s
        .provider
        .base_url()
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut out = String::new();
    for line in stderr.lines() {
        let mut line = line.replace(&port, "PORT");
        // "(123 ms)" -> "(N ms)"
        while let Some(end) = line.find(" ms)") {
            let start = line[..end]
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |i| i + 1);
            if start == end {
                break;
            }
            line.replace_range(start..end, "N");
            line = line.replacen("(N ms)", "(N\u{0} ms)", 1);
        }
        let line = line.replace('\u{0}', "");
        // jr2-preflight-operator-check-<8 hex> -> ...-RUN
        let line = match line.find("jr2-preflight-operator-check-") {
            Some(i) => {
                let at = i + "jr2-preflight-operator-check-".len();
                let run: String = line[at..]
                    .chars()
                    .take_while(char::is_ascii_alphanumeric)
                    .collect();
                line.replacen(&run, "RUN", 1)
            }
            None => line,
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_from_a_pod_on_a_node() {
    let s = setup(Scenario::AllOk).await;
    // The plain pod is restricted: a namespace that enforces the strictest level admits it.
    s.kube
        .label_namespace(NS, &[("pod-security.kubernetes.io/enforce", "restricted")]);
    let base = s.provider.base_url();
    let run = s
        .run(check_args(&s, &["--base-url", &base, "--model", "ok"]))
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let verdict = run.verdict();
    assert_verdict_lines(&run, &verdict);
    assert_eq!(verdict["namespace"], NS, "the context's namespace");
    assert_eq!(verdict["pods"][0]["node"], NODE);
    assert_eq!(verdict["models"][0]["model"], "custom/ok");
    assert_eq!(verdict["models"][0]["outcome"], "ok");
    insta::assert_snapshot!("check_pass", stable(&run.stderr, &s));
    // One plain pod: no Custodian, the restricted probe alone, the instance `operator`.
    let pods = s.posted_pods();
    assert_eq!(pods.len(), 1);
    let pod = &pods[0];
    assert!(pod["spec"]["initContainers"].is_null(), "{pod:#}");
    assert_eq!(pod["metadata"]["labels"]["jr2.dev/instance"], "operator");
    assert_eq!(pod["metadata"]["namespace"], NS);
    // The namespace was read for its level, and the permissions asked, before the create.
    let requests = s.kube.requests();
    let first_post = requests
        .iter()
        .position(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .unwrap();
    let reviews = requests
        .iter()
        .filter(|r| r.path.ends_with("/selfsubjectaccessreviews"))
        .count();
    assert!(reviews >= 5, "{reviews} reviews");
    assert!(
        requests[..first_post]
            .iter()
            .any(|r| r.method == "GET" && r.path == format!("/api/v1/namespaces/{NS}"))
    );
    assert!(
        requests[..first_post]
            .iter()
            .filter(|r| r.path.ends_with("/selfsubjectaccessreviews"))
            .count()
            == reviews
    );
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_prints_the_contracts_lines() {
    let s = setup(Scenario::AllOk).await;
    let base = s.provider.base_url();
    let run = s
        .run(check_args(
            &s,
            &[
                "--base-url",
                &base,
                "--model",
                "vllm-no-parser",
                "--model",
                "ok",
                "--provider",
                "vllm",
            ],
        ))
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let verdict = run.verdict();
    assert_verdict_lines(&run, &verdict);
    assert_eq!(verdict["models"][0]["model"], "vllm/vllm-no-parser");
    insta::assert_snapshot!("check_failure", stable(&run.stderr, &s));
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_from_a_secret_reaches_the_probe_and_nothing_else() {
    let s = setup(Scenario::AllOk).await;
    let key = jr2_testkit::provider::openai_completions::GOOD_KEY;
    s.kube.add_secret(NS, "vllm-key", &[("token", key)]);
    let base = s.provider.base_url();
    let run = s
        .run(check_args(
            &s,
            &[
                "--base-url",
                &base,
                "--model",
                "auth",
                "--api-key-secret",
                "vllm-key/token",
            ],
        ))
        .await;
    assert_eq!(run.code(), Some(0), "the key was sent: {}", run.stderr);
    let pod = &s.posted_pods()[0];
    let env = pod["spec"]["containers"][0]["env"].as_array().unwrap();
    let entry = env
        .iter()
        .find(|e| e["name"] == "JR2_PROVIDER_API_KEY")
        .expect("the key's variable");
    assert_eq!(
        entry["valueFrom"]["secretKeyRef"],
        json!({"name": "vllm-key", "key": "token", "optional": false})
    );
    assert!(entry["value"].is_null());
    // The value: in no argv the driver was given, none of its output, no version of the pod the API server stored.
    let everything = format!(
        "{}{}{}{}",
        run.stdout,
        run.stderr,
        serde_json::to_string(
            &s.kube
                .requests()
                .iter()
                .map(|r| &r.body)
                .collect::<Vec<_>>()
        )
        .unwrap(),
        serde_json::to_string(&s.kube.history()).unwrap()
    );
    assert!(!everything.contains(key), "the key leaked");
    // Without the Secret's key the probe is refused, as a Turn would be.
    let s2 = setup(Scenario::AllOk).await;
    s2.kube
        .add_secret(NS, "vllm-key", &[("token", "sk-fake-wrong-key")]);
    let base = s2.provider.base_url();
    let run = s2
        .run(check_args(
            &s2,
            &[
                "--base-url",
                &base,
                "--model",
                "auth",
                "--api-key-secret",
                "vllm-key/token",
            ],
        ))
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert_eq!(run.verdict()["models"][0]["outcome"], "key_refused");
    s.assert_cleaned_up();
    s2.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_deployment_takes_its_placement_and_custodian() {
    let s = setup(Scenario::AllOk).await;
    let mut spec = pod_spec();
    spec["nodeSelector"] = json!({"jr2.dev/pool": "gpu-a100"});
    s.kube.add_deployment(
        NS,
        json!({"metadata": {"name": "jr2-instance-harness"}, "spec": {
            "selector": {"matchLabels": {"app": "h"}},
            "template": {"metadata": {"labels": {"app": "h"}}, "spec": spec}}}),
    );
    let base = s.provider.base_url();
    let run = s
        .run(check_args(
            &s,
            &[
                "--base-url",
                &base,
                "--model",
                "ok",
                "--from-deployment",
                "jr2-instance-harness",
            ],
        ))
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let verdict = run.verdict();
    assert_verdict_lines(&run, &verdict);
    insta::assert_snapshot!("check_from_deployment", stable(&run.stderr, &s));
    let pod = &s.posted_pods()[0];
    assert_eq!(
        pod["spec"]["nodeSelector"],
        json!({"jr2.dev/pool": "gpu-a100"})
    );
    // The Custodian: a plain container before the probe (its readiness the probe asks itself: issue 36).
    assert!(pod["spec"]["initContainers"].is_null(), "{pod:#}");
    assert_eq!(pod["spec"]["containers"][0]["name"], "custodian");
    assert!(pod["spec"]["containers"][0]["restartPolicy"].is_null());
    assert_eq!(pod["spec"]["containers"][1]["name"], "probe");
    // The key the Harness holds: its Stand-in, which the Custodian swaps.
    let env = pod["spec"]["containers"][1]["env"].as_array().unwrap();
    assert!(
        env.iter().any(|e| e["name"] == "JR2_PROVIDER_API_KEY"
            && e["value"] == "jr2-held-JR2_PROVIDER_API_KEY")
    );
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_once_the_pod_exists_deletes_it() {
    // A pod that is never scheduled: the run waits until it is interrupted.
    let s = setup(Scenario::Nothing).await;
    let base = s.provider.base_url();
    let mut child = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(check_args(&s, &["--base-url", &base, "--model", "ok"]))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jr2-preflight");
    let created = s
        .kube
        .wait_for(Duration::from_secs(30), |k| !k.created().is_empty())
        .await;
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = tokio::task::spawn_blocking(move || {
        let _ = child.stdin.take();
        child.wait_with_output()
    })
    .await
    .unwrap()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(created, "no pod was created: {stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.ends_with("error: provider preflight: interrupted; the check pods were deleted\n"),
        "{stderr}"
    );
    let verdict: Value = serde_json::from_slice(&out.stdout).expect("a verdict");
    assert_eq!(verdict["exitCode"], 130);
    assert_eq!(verdict["pods"][0]["code"], "PROVIDER_INTERRUPTED");
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_the_pod_and_contacts_nothing() {
    let s = setup(Scenario::AllOk).await;
    let run = s
        .run(check_args(
            &s,
            &[
                "--dry-run",
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "Qwen/Qwen3-32B",
                "--api-key-secret",
                "vllm/api-key",
                "--node",
                "gpu-1",
                "-n",
                "team-a",
            ],
        ))
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(
        s.kube.requests().is_empty(),
        "the dry run contacted the cluster"
    );
    let docs: Vec<&str> = run
        .stdout
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .collect();
    assert_eq!(docs.len(), 1, "one pod");
    let pod: Value = serde_yaml::from_str(docs[0]).expect("the dry-run YAML");
    assert_eq!(pod["metadata"]["namespace"], "team-a");
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchFields"],
        json!([{"key": "metadata.name", "operator": "In", "values": ["gpu-1"]}])
    );
    let probe = &pod["spec"]["containers"][0];
    let spec: Value = serde_json::from_str(probe["args"][4].as_str().unwrap()).unwrap();
    assert_eq!(spec["models"][0]["model"], "custom/Qwen/Qwen3-32B");
    assert_eq!(
        spec["models"][0]["baseUrl"],
        "http://vllm.lan.example:8000/v1"
    );
    assert_eq!(
        probe["env"][0],
        json!({"name": "JR2_PROVIDER_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm", "key": "api-key", "optional": false}}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_are_one_line_and_exit_2() {
    let s = setup(Scenario::AllOk).await;
    for (flags, start) in [
        (
            vec!["--base-url", "ftp://vllm.lan:8000/v1", "--model", "m"],
            "error: --base-url: ",
        ),
        (vec!["--model", "nonesuch/model-x"], "error: --model: "),
        (
            vec![
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "m",
                "--api-key-secret",
                "no-slash",
            ],
            "error: --api-key-secret: ",
        ),
        (
            vec![
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "m",
                "--node-selector",
                "pool",
            ],
            "error: --node-selector: ",
        ),
        (
            vec![
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "m",
                "--api",
                "openai-nonesuch",
            ],
            "error: --api: ",
        ),
        (
            vec![
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "m",
                "-n",
                "Not_A_Namespace",
            ],
            "error: --namespace: ",
        ),
        // Issue 25, item 12: an escape or a bidi control in a node's name.
        (
            vec![
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "m",
                "--node",
                "node\u{1b}[31m-1",
            ],
            "error: --node: ",
        ),
        (
            vec![
                "--base-url",
                "http://vllm.lan.example:8000/v1",
                "--model",
                "m",
                "--dry-run",
                "--node",
                "gpu\u{202e}1",
            ],
            "error: --node: ",
        ),
    ] {
        let run = s.run(check_args(&s, &flags)).await;
        assert_eq!(run.code(), Some(2), "{flags:?}: {}", run.stderr);
        let lines = run.lines();
        assert_eq!(lines.len(), 1, "{flags:?}: {lines:?}");
        assert!(lines[0].starts_with(start), "{flags:?}: {lines:?}");
        assert!(
            !run.stderr.contains('\u{1b}') && !run.stderr.contains('\u{202e}'),
            "{flags:?}: {:?}",
            run.stderr
        );
        assert!(run.stdout.is_empty());
    }
    assert!(
        s.kube.requests().is_empty(),
        "bad input contacted the cluster"
    );
}

/// A 401 from an endpoint given no key: the line says the endpoint wants a key, and so does the JSON's
/// `nextAction` that `jr2 up` switches on (issue 27, item 13; before, it said to check the held key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_without_a_key_says_to_set_one_in_the_json_too() {
    let s = setup(Scenario::AllOk).await;
    let base = s.provider.base_url();
    let run = s
        .run(check_args(&s, &["--base-url", &base, "--model", "auth"]))
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.lines()
            .contains(&"  - the endpoint wants a key: set harness.provider.apiKey"),
        "{}",
        run.stderr
    );
    let v = run.verdict();
    assert_eq!(v["models"][0]["outcome"], "key_refused");
    assert_eq!(
        v["models"][0]["nextAction"],
        "the endpoint wants a key: set harness.provider.apiKey in jr2.config.ts, then run jr2 up again"
    );
    s.assert_cleaned_up();
}
