//! End to end with what a real cluster does to the check pod's create (issue 40): the real `jr2-preflight` binary
//! against `jr2_testkit::kube` on loopback, whose faults play the API server's admission.
//!
//! - A slow admission webhook (item 1): the fake answers a create whose `timeout` is shorter than its admission
//!   with the API server's `504 Timeout`, as the real one does when a webhook of `timeoutSeconds: 30` takes 25 s.
//!   The real cluster runs it through a real webhook too (`tests/real_cluster/webhook.rs`); here the fake plays
//!   the API server's own timeout filter with the create's `timeout` exactly, and the requests are counted.
//! - The API server's `Warning:` headers on the create (item 11), and a namespace being deleted (item 12): also on
//!   the real cluster (`tests/real_cluster/admission.rs`).

mod fake_cluster;

use std::time::Duration;

use fake_cluster::*;
use jr2_testkit::kube::{Clocks, Faults, Scenario};

/// Item 1: an admission that takes 20 s (a mutating webhook with `timeoutSeconds: 30`) is waited for, as a Harness
/// pod's create waits: the create's `timeout` is 40 s, a progress line says why it waits, and the check passes.
/// Before: each create cut at 15 s (`timeout=15s`), three tries, then `the cluster refused the check pod: Timeout:
/// ...` (`PROVIDER_POD_REFUSED`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_admission_is_waited_for() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        create_admission: Some(Duration::from_secs(20)),
        ..Faults::default()
    });
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "90"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    // The model's time, which varies, as <ms>.
    let shown: Vec<String> = run
        .lines()
        .iter()
        .map(|l| match completed_ms(l, "vllm/ok") {
            Some(ms) => l.replace(&format!("({ms} ms)"), "(<ms> ms)"),
            None => (*l).to_owned(),
        })
        .collect();
    insta::assert_snapshot!(shown.join("\n"), @r"
    provider: the API server has not answered the create of the check pod after 10 s — an admission webhook may be slow; waiting up to 40 s
    provider: vllm/ok completed a tool call (<ms> ms)
    ");
    let posts: Vec<String> = s
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .map(|r| r.q("timeout").unwrap_or_default().to_owned())
        .collect();
    assert_eq!(posts, ["40s"]);
    s.assert_cleaned_up();
}

/// Item 1: an admission slower than the create may wait (the run's deadline is near) is said as a create that timed
/// out, with its own code and next action, not as a refusal about quota and room; nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admission_slower_than_the_run_is_a_timeout_not_a_refusal() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        create_admission: Some(Duration::from_secs(30)),
        ..Faults::default()
    });
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "9"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    insta::assert_snapshot!(run.lines().join("\n"), @"error: provider preflight: the API server did not finish the create of the check pod in 7 s — its admission (a webhook) was too slow: Timeout: request did not complete within the allotted timeout");
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_CREATE_TIMEOUT", "{v}");
    assert!(
        v["pods"][0]["nextAction"]
            .as_str()
            .is_some_and(|a| a.contains("webhook") && !a.contains("room")),
        "{v}"
    );
    assert_eq!(v["models"][0]["outcome"], "not_checked", "{v}");
    assert!(s.kube.pods_matching(MANAGED).is_empty());
}

/// Item 11: the API server's `Warning:` headers on the create (a ValidatingAdmissionPolicy in `Warn` mode, Pod
/// Security's `warn` level) are `warning:` lines, each once for the run however many pods it warned about, cleaned
/// (no bidi override reaches the terminal) and cut. Before: swallowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_warnings_on_the_create_are_said_once() {
    let s = Setup::new(Scenario::AllOk).await;
    let long = format!("policy says: {}", "x".repeat(400));
    s.kube.set_faults(Faults {
        create_warnings: vec![
            "Validation failed for ValidatingAdmissionPolicy 'no-pods-after' with binding 'no-pods-after': pods are refused from 2027-01-01".to_owned(),
            "would violate PodSecurity \"restricted:latest\": \u{202e}dlrow olleh".to_owned(),
            long,
        ],
        ..Faults::default()
    });
    let plan = s.plan(&[("sandbox", &["ok"]), ("gpu", &["ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let warnings: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    insta::assert_snapshot!(warnings.join("\n"));
    assert!(!run.stderr.contains('\u{202e}'), "{}", run.stderr);
    s.assert_cleaned_up();
}

/// Item 12: a create refused because the namespace is being deleted is named as such, with its own code and next
/// action. Before: `the cluster refused the check pod: ...` with the quota and room next action.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminating_namespace_is_named() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        namespace_terminating: true,
        ..Faults::default()
    });
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    insta::assert_snapshot!(run.lines().join("\n"), @r#"error: provider preflight: namespace "e2e" is being deleted, so the check pod cannot be created: pods is forbidden: unable to create new content in namespace e2e because it is being terminated"#);
    let v = run.verdict();
    assert_eq!(
        v["pods"][0]["code"], "PROVIDER_NAMESPACE_TERMINATING",
        "{v}"
    );
    assert!(s.kube.pods_matching(MANAGED).is_empty());
}

/// Item 12: a namespace deleted while its check pod waits (the namespace controller removes the pod) is named as
/// such, with its own code and next action, which the models take. Before: `the check pod stopped (the pod was
/// deleted) before any model was checked` (`PROVIDER_POD_STOPPED`: "an eviction, a preemption or a deletion can
/// pass, so run jr2 up once more").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_deleted_during_the_run_is_named() {
    let s = Setup::new(Scenario::Nothing).await;
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let args = s.args(&plan, &["--timeout", "30"]);
    let driver =
        tokio::task::spawn_blocking(move || run_driver_blocking(args, Vec::new(), None, false));
    assert!(
        s.kube
            .wait_for(Duration::from_secs(10), |k| k.requests().iter().any(|r| r
                .method
                == "GET"
                && r.is_watch()
                && r.path.ends_with("/pods")))
            .await
    );
    s.kube.delete_namespace(NS);
    let run = driver.await.unwrap();
    eprintln!("{}", run.stderr);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    insta::assert_snapshot!(run.lines().join("\n"), @r#"
    error: provider preflight: the check pod stopped (its namespace "e2e" was deleted) before any model was checked
      not checked: vllm/ok
    "#);
    let v = run.verdict();
    assert_eq!(
        v["pods"][0]["code"], "PROVIDER_NAMESPACE_TERMINATING",
        "{v}"
    );
    assert_eq!(
        v["models"][0]["nextAction"], v["pods"][0]["nextAction"],
        "{v}"
    );
    // Said when it happened, not at the deadline.
    assert!(
        run.ended - run.started < Duration::from_secs(20),
        "{}",
        run.stderr
    );
}

/// One model, a pod deadline of 60 s and a timeout of 20 s, with the fake cluster's clocks `api_ahead_secs` and
/// `node_ahead_secs` ahead of this machine's: the setup (to check it is cleaned up) and the driver's run.
async fn one_model_with_clocks(api_ahead_secs: i64, node_ahead_secs: i64) -> (Setup, DriverRun) {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_clocks(Clocks {
        api_ahead_secs,
        node_ahead_secs,
    });
    let mut plan = plan(&s.provider.base_url(), &[("sandbox", &["ok"])]);
    plan["deadlineSeconds"] = serde_json::json!(60);
    plan["timeoutSeconds"] = serde_json::json!(20);
    let plan = s.write_plan(&plan);
    let run = s.run(s.args(&plan, &[])).await;
    (s, run)
}

/// Items 3 and 6 run on the fake's clocks (`FakeKube::set_clocks`): its API server's `Date` headers and the
/// `creationTimestamp` it writes, and the deadline its node's probe finds, are moved as a cluster on another machine's
/// clock moves them; the driver's own clock is this machine's.
///
/// Item 3: the driver's clock 75 s behind the cluster's (the API server's and the node's), with a pod deadline of
/// 60 s: the deadline is written on the API server's clock, and the check passes. Before: `the check pod's deadline
/// had passed 15 s before the probe started`, every model not checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_clock_behind_the_clusters_does_not_cut_the_check() {
    let (s, run) = one_model_with_clocks(75, 75).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run.lines(), &["ok"]);
    s.assert_cleaned_up();
}

/// Item 3: a skew that remains (the node's clock 75 s ahead of the API server's, which the driver cannot correct) is
/// named: a line with how far ahead, the pod's code `PROVIDER_CLOCK_SKEW` and its next action, which the models
/// take. Before: the pod's `code` and `nextAction` were null, and the models said to run once more or skip.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_clock_ahead_of_the_api_server_is_named() {
    let (s, run) = one_model_with_clocks(0, 75).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_CLOCK_SKEW", "{v}");
    let next = v["pods"][0]["nextAction"].as_str().unwrap_or_default();
    assert!(next.contains("NTP"), "{v}");
    assert_eq!(v["models"][0]["outcome"], "not_checked", "{v}");
    assert_eq!(v["models"][0]["nextAction"], next, "{v}");
    // How far ahead it was found (at least): the deadline's 60 s, less the probe's margin and the run's start.
    let last = *run.lines().last().unwrap();
    let seconds: u64 = last
        .strip_prefix("error: provider preflight: the node's clock is at least ")
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{last}"));
    assert!((45..=57).contains(&seconds), "{last}");
    insta::assert_snapshot!(last.replace(&seconds.to_string(), "<s>"), @"error: provider preflight: the node's clock is at least <s> s ahead of the API server's, so the probe found the check pod's deadline passed as it started");
    s.assert_cleaned_up();
}

/// Item 6: a live check pod of another run of the Instance, whose deadline annotation was written by a machine whose
/// clock is 90 s behind this one's (so it reads as passed 30 s ago here), is not swept: its deadline is measured
/// from its `creationTimestamp` on the API server's clock. Before: the sweep deleted it, and that run said its pod
/// was deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweep_does_not_take_a_live_pod_by_another_clock() {
    let s = Setup::new(Scenario::Nothing).await;
    let other = "jr2-preflight-e2e-sandbox-otherrun";
    let written_behind = std::time::SystemTime::now() - Duration::from_secs(30);
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": other, "namespace": NS,
            "labels": {"app.kubernetes.io/managed-by": "jr2-preflight", "jr2.dev/instance": "e2e",
                       "jr2.dev/preflight-run": "otherrun00"},
            "annotations": {"jr2.dev/preflight-deadline": jr2_testkit::kube::rfc3339(written_behind)}},
        "spec": {"activeDeadlineSeconds": 60, "restartPolicy": "Never",
                 "containers": [{"name": "probe", "image": PROBE_IMAGE}]}
    });
    let client =
        jr2_preflight::cluster::client_of(kube::Config::new(s.kube.server_url().parse().unwrap()))
            .unwrap();
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(client, NS);
    api.create(
        &kube::api::PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .expect("the other run's pod");
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "3"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let deletes: Vec<String> = s
        .kube
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .map(|r| r.path)
        .collect();
    assert!(deletes.iter().all(|p| !p.ends_with(other)), "{deletes:?}");
    assert!(s.kube.pod(NS, other).is_some());
}

/// Item 8: the API server lost during the run (its connections closed, no answer) is said at once, as a warning,
/// and the run's end says the API server stopped answering, rather than 85 s of silence and the last pending reason
/// it had seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_api_server_is_named_when_it_happens() {
    let s = Setup::new(Scenario::Nothing).await;
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let args = s.args(&plan, &["--timeout", "8"]);
    let driver = tokio::spawn(async move {
        tokio::task::spawn_blocking(move || run_driver_blocking(args, Vec::new(), None, false))
            .await
            .unwrap()
    });
    assert!(
        s.kube
            .wait_for(Duration::from_secs(10), |k| !k.created().is_empty())
            .await
    );
    // The watch is open once it asked for the pods after the create.
    assert!(
        s.kube
            .wait_for(Duration::from_secs(5), |k| k
                .requests()
                .iter()
                .any(|r| r.method == "GET" && r.is_watch()))
            .await
    );
    s.kube.lose();
    let run = driver.await.unwrap();
    eprintln!("{}", run.stderr);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let warning = lines
        .iter()
        .find(|l| l.starts_with("warning: provider: the API server stopped answering ("))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let cause = warning
        .strip_prefix("warning: provider: the API server stopped answering (")
        .and_then(|r| r.split_once(") — ").map(|(c, _)| c))
        .unwrap();
    let pod = &s.kube.created()[0];
    let shown: Vec<String> = lines
        .iter()
        .map(|l| l.replace(cause, "<cause>").replace(pod.as_str(), "<pod>"))
        .filter(|l| !l.contains("may still exist"))
        .collect();
    insta::assert_snapshot!(shown.join("\n"), @r"
    warning: provider: the API server stopped answering (<cause>) — the check pod is not seen until it answers again
    error: provider preflight: the API server stopped answering during the run (<cause>), so the check pod's end is unknown
    ");
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_CLUSTER_UNREACHABLE", "{v}");
}
