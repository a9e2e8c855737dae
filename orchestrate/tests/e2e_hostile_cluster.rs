//! End to end with a failing or hostile cluster (issue 25): the real `jr2-preflight` binary against
//! `jr2_testkit::kube` on loopback, whose faults and scripts play what a red team found. Whatever the cluster
//! does, the driver never crashes, stays under 64 MiB of peak RSS, and leaves no check pod, or its verdict says
//! which one and how to delete it.
//!
//! - The pod's log: a `result` for a model index the run spec lacks (item 1), lines of 7 MiB (item 2).
//! - The API server's answers: an endless line in the pod watch, an endless list body (item 3).
//! - A create whose outcome is unknown: a 504 after the write, a connection closed after the write, an answer after
//!   `--timeout` (item 4); deletes that fail, then pass, or never pass (item 5); SIGHUP (item 6).

mod fake_cluster;

use std::time::Duration;

use serde_json::json;

use fake_cluster::*;
use jr2_testkit::kube::{Faults, PodCtl, Scenario};

/// The bound on the driver's peak RSS in every scenario here.
const MAX_RSS_KIB: u64 = 64 << 10;

fn script(
    f: impl Fn(PodCtl) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
    + Send
    + Sync
    + 'static,
) -> Scenario {
    Scenario::Script(std::sync::Arc::new(f))
}

/// A probe's `result` line for model `index`, naming a model of its own.
fn result_line(index: &str) -> String {
    format!(
        r#"{{"event":"result","index":{index},"result":{{"model":"evil/forged","id":"forged","api":"openai-completions","baseUrl":"http://evil.example/v1","host":"evil.example","route":{{"kind":"custom","apiKeySet":false,"maxTokensSet":true}},"outcome":"ok","level":"pass","code":"PROVIDER_OK","nextAction":"","error":null,"httpStatus":200,"stopReason":null,"toolName":"probe","answer":null,"maxTokens":1024,"elapsedMs":7,"tries":[]}}}}"#
    )
}

/// A pod whose probe runs and writes `lines` to its log, then runs on until it is deleted.
fn probe_writes(lines: Vec<String>) -> Scenario {
    script(move |ctl| {
        let lines = lines.clone();
        Box::pin(async move {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.container(
                "probe",
                json!({"running": {"startedAt": "2026-12-04T18:36:47Z"}}),
                true,
            );
            ctl.open_log("probe");
            for line in &lines {
                ctl.log_line("probe", line);
            }
            // Until the pod is deleted (which ends this script).
            tokio::time::sleep(Duration::from_secs(300)).await;
        })
    })
}

fn assert_small(run: &DriverRun) {
    // For the reliability table of tests/README.md (run with --nocapture).
    eprintln!(
        "peak RSS {:.1} MiB, {:.2} s",
        run.peak_rss_kib as f64 / 1024.0,
        (run.ended - run.started).as_secs_f64()
    );
    assert!(
        run.peak_rss_kib > 0 && run.peak_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB",
        run.peak_rss_kib
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
}

/// Item 1: a `result` for an index the run spec lacks (the largest, one that would size 26 TB, one of 2.35 GB) is the
/// pod speaking out of turn: no panic, no allocation, the pod deleted, its models judged from what is known, and
/// no line names the model the pod chose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_for_a_model_index_the_plan_lacks_stops_that_pod() {
    for index in ["18446744073709551615", "1099511627776", "100000000", "2"] {
        let s = Setup::new(probe_writes(vec![result_line("0"), result_line(index)])).await;
        let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
        let run = s.run(s.args(&plan, &["--timeout", "20"])).await;
        assert_eq!(run.code(), Some(1), "{index}: {}", run.stderr);
        assert_small(&run);
        let lines = run.lines();
        assert!(
            lines.iter().all(|l| !l.contains("evil")),
            "{index}: {lines:#?}"
        );
        let stopped = format!(
            "error: provider preflight: the check pod stopped (the driver stopped it: its probe spoke out of turn: a result event for model index {index}, and its run spec has 2) while the check was on model \"vllm/ok@b\""
        );
        assert!(lines.contains(&stopped.as_str()), "{index}: {lines:#?}");
        assert_eq!(
            lines.iter().filter(|l| l.contains("out of turn")).count(),
            1,
            "{index}: {lines:#?}"
        );
        let v = run.verdict();
        assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_PROBE_ERROR", "{v}");
        // What the pod said in turn stands.
        assert_eq!(v["models"][0]["outcome"], "ok", "{v}");
        assert_eq!(v["models"][0]["model"], "vllm/ok", "{v}");
        assert_eq!(v["models"][1]["outcome"], "not_checked", "{v}");
        s.assert_cleaned_up();
    }
}

/// Item 1: a line out of turn after every model's result still stops the pod, and the line says the check had ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_out_of_turn_after_every_model_stops_the_pod() {
    let s = Setup::new(probe_writes(vec![result_line("0"), result_line("7")])).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "20"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert_eq!(
        run.lines().last(),
        Some(
            &"error: provider preflight: the check pod stopped (the driver stopped it: its probe spoke out of turn: a result event for model index 7, and its run spec has 1) after every model was checked"
        ),
        "{}",
        run.stderr
    );
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_PROBE_ERROR", "{v}");
    assert_eq!(v["models"][0]["outcome"], "ok", "{v}");
    assert_small(&run);
    s.assert_cleaned_up();
}

/// Item 2: what is kept of the pod's log is bounded in bytes: twelve lines of 7 MiB keep the driver small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_log_lines_keep_the_driver_small() {
    let big = "x".repeat(7 << 20);
    let mut lines = vec![big; 12];
    lines.push(result_line("0"));
    let s = Setup::new(probe_writes(lines)).await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &["--timeout", "8"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert_small(&run);
    let v = run.verdict();
    assert_eq!(
        v["models"][0]["outcome"], "ok",
        "the line after the big ones was read: {v}"
    );
    s.assert_cleaned_up();
}

/// Item 3: an API server that sends one endless line in the pod watch, or an endless list body: the driver stays
/// small, ends by its deadline, and deletes its pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_answers_of_the_api_server_keep_the_driver_small() {
    for faults in [
        Faults {
            endless_pod_watch_line: true,
            ..Faults::default()
        },
        Faults {
            endless_pod_list: true,
            ..Faults::default()
        },
    ] {
        let s = Setup::new(Scenario::Nothing).await;
        s.kube.set_faults(faults.clone());
        let plan = s.plan(&[("harness", &["ok"])]);
        let run = s.run(s.args(&plan, &["--timeout", "6"])).await;
        assert_eq!(run.code(), Some(1), "{faults:?}: {}", run.stderr);
        assert_small(&run);
        assert!(
            run.ended - run.started < Duration::from_secs(6 + 10 + 2),
            "{faults:?}: {:?}",
            run.ended - run.started
        );
        s.assert_cleaned_up();
    }
}

/// Item 4: a create stored and then answered 504 (a real API server's etcd commit that outlived its timeout): the
/// retry meets our own pod, which runs; nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_answered_504_after_the_write_is_our_pod() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        create_504_after_write: 1,
        ..Faults::default()
    });
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "30"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(
        !run.stderr.contains("already exists"),
        "our own pod is no conflict: {}",
        run.stderr
    );
    assert_small(&run);
    s.assert_cleaned_up();
}

/// Item 4: a create stored and then the connection closed with no answer: the outcome is unknown, so the create is
/// tried again, meets our own pod (read back for its uid), and runs it; nothing is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_connection_closed_after_the_write_is_our_pod() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        create_dropped_after_write: 1,
        ..Faults::default()
    });
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "30"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains("already exists"), "{}", run.stderr);
    let posts = s
        .kube
        .requests()
        .iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/pods"))
        .count();
    assert_eq!(posts, 2, "tried again");
    assert_small(&run);
    s.assert_cleaned_up();
}

/// Item 4: a create answered only after `--timeout`: the pod's name is deleted all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_answered_after_the_timeout_leaves_no_pod() {
    let s = Setup::new(Scenario::Nothing).await;
    s.kube.set_faults(Faults {
        create_answer_delay: Some(Duration::from_secs(4)),
        ..Faults::default()
    });
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "2"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    // The create was stored at once; its answer came after the driver gave up on it.
    assert_eq!(s.kube.created().len(), 1);
    assert!(
        s.kube
            .wait_for(Duration::from_secs(5), |k| k
                .pods_matching(MANAGED)
                .is_empty())
            .await,
        "left: {:#?}",
        s.kube.pods()
    );
    assert_small(&run);
}

/// Item 5: a delete that fails (a 500, a dropped connection) is tried again, and confirmed: nothing is left, and
/// the verdict is the run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_delete_is_tried_again() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        delete_500: 1,
        delete_dropped: 1,
        ..Faults::default()
    });
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["ok"], true, "{v}");
    assert!(!run.stderr.contains("may still exist"), "{}", run.stderr);
    assert_small(&run);
    let deletes = s
        .kube
        .requests()
        .iter()
        .filter(|r| r.method == "DELETE")
        .count();
    assert_eq!(deletes, 3, "a 500, a dropped connection, then the delete");
    s.assert_cleaned_up();
}

/// Item 5: a delete that never passes: the verdict is not ok, names the pod with a stable code, and has the exact
/// `kubectl delete` line in its lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_that_never_passes_is_in_the_verdict() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        delete_500: 10_000,
        ..Faults::default()
    });
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["exitCode"], 1, "{v}");
    let pod = s.kube.created()[0].clone();
    let line = format!(
        "error: provider preflight: the check pod {pod} may still exist (its delete failed for 8 s: 500 Internal error occurred: etcdserver: leader changed): kubectl -n {NS} delete pod {pod}"
    );
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_LEFT", "{v}");
    assert_eq!(v["pods"][0]["failure"], json!([line]), "{v}");
    assert!(
        v["lines"].as_array().unwrap().iter().any(|l| *l == line),
        "{v}"
    );
    assert_eq!(run.lines().last(), Some(&line.as_str()), "{}", run.stderr);
    assert_small(&run);
    assert!(
        s.kube
            .requests()
            .iter()
            .filter(|r| r.method == "DELETE")
            .count()
            > 2,
        "tried again"
    );
}

/// Item 6: SIGHUP (a closed terminal or SSH session) is handled as SIGINT and SIGTERM are: the pod is deleted, and
/// the exit is 129.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_deletes_the_pod_and_exits_129() {
    let s = Setup::new(Scenario::Nothing).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let kube = &s.kube;
    let run = {
        let args = s.args(&plan, &["--timeout", "60"]);
        let driver = s.run_with(args, Vec::new(), Some((Duration::from_millis(2500), "HUP")));
        driver.await
    };
    assert_eq!(
        kube.created().len(),
        1,
        "the pod was created before the signal"
    );
    assert_eq!(run.code(), Some(129), "{}", run.stderr);
    assert_eq!(
        run.lines().last(),
        Some(&"error: provider preflight: interrupted; the check pods were deleted"),
        "{}",
        run.stderr
    );
    let v = run.verdict();
    assert_eq!(v["exitCode"], 129, "{v}");
    assert_small(&run);
    s.assert_cleaned_up();
}

/// A driver's environment: (name, value) pairs.
type Env = Vec<(String, String)>;

/// Item 11: a kubeconfig that is `/dev/zero` (named, or in `KUBECONFIG`), or that names `/dev/zero` as its CA or
/// token file, is refused at once, small, rather than read until memory runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_that_is_a_device_is_not_read() {
    let s = Setup::new(Scenario::Nothing).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let zero_ca = s.dir.join("zero-ca-kubeconfig");
    std::fs::write(
        &zero_ca,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: /dev/zero\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    tokenFile: /dev/zero\n",
            s.kube.server_url()
        ),
    )
    .unwrap();
    let cases: Vec<(Vec<String>, Env, &str)> = vec![
        (
            vec![
                "run".into(),
                "--plan".into(),
                plan.clone(),
                "--kubeconfig".into(),
                "/dev/zero".into(),
            ],
            Vec::new(),
            "kubeconfig /dev/zero is not a regular file",
        ),
        (
            vec!["run".into(), "--plan".into(), plan.clone()],
            vec![("KUBECONFIG".into(), "/dev/zero".into())],
            "kubeconfig /dev/zero is not a regular file",
        ),
        // With the JSON verdict: its envelope (the context and the server) reads the kubeconfig again, through the
        // same checked reader (it read `/dev/zero` whole before: the merge of the envelope and the checks).
        (
            vec![
                "run".into(),
                "--plan".into(),
                plan.clone(),
                "-o".into(),
                "json".into(),
                "--kubeconfig".into(),
                "/dev/zero".into(),
            ],
            Vec::new(),
            "kubeconfig /dev/zero is not a regular file",
        ),
        (
            vec![
                "run".into(),
                "--plan".into(),
                plan.clone(),
                "-o".into(),
                "json".into(),
            ],
            vec![("KUBECONFIG".into(), "/dev/zero".into())],
            "kubeconfig /dev/zero is not a regular file",
        ),
        (
            vec![
                "run".into(),
                "--plan".into(),
                plan.clone(),
                "--kubeconfig".into(),
                zero_ca.display().to_string(),
            ],
            Vec::new(),
            "certificate-authority /dev/zero is not a regular file",
        ),
    ];
    for (args, env, words) in cases {
        let run = s.run_with(args.clone(), env, None).await;
        assert_eq!(run.code(), Some(1), "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(words), "{args:?}: {}", run.stderr);
        assert_small(&run);
    }
    assert!(s.kube.created().is_empty());
}

/// Item 4: Ctrl-C while a slow create is on its way: the create is awaited within the cleanup's bound, and the pod
/// it wrote deleted with its uid; the interrupted line is then true.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_slow_create_deletes_the_pod_it_wrote() {
    let (s, run) = ctrl_c_during_a_create(Faults {
        create_answer_delay: Some(Duration::from_secs(3)),
        ..Faults::default()
    })
    .await;
    assert_eq!(run.code(), Some(130), "{}", run.stderr);
    assert_eq!(s.kube.created().len(), 1, "the create was stored");
    assert_eq!(
        run.lines().last(),
        Some(&"error: provider preflight: interrupted; the check pods were deleted"),
        "{}",
        run.stderr
    );
    assert_small(&run);
    s.assert_cleaned_up();
}

/// Item 4: Ctrl-C while a create is on its way that is answered only after the cleanup's bound (the red team's
/// case: the pod was left): once half the bound has passed, the pod's name is deleted, as its outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_create_answered_past_the_cleanup_s_bound_leaves_no_pod() {
    let (s, run) = ctrl_c_during_a_create(Faults {
        create_answer_delay: Some(Duration::from_secs(20)),
        ..Faults::default()
    })
    .await;
    assert_eq!(run.code(), Some(130), "{}", run.stderr);
    assert_eq!(s.kube.created().len(), 1, "the create was stored");
    assert!(
        s.kube.pods_matching(MANAGED).is_empty(),
        "left: {:#?}",
        s.kube.pods()
    );
    assert_eq!(s.kube.deleted(), s.kube.created(), "deleted by name");
    assert_small(&run);
}

/// Waits, at most `within`, until the fake API server has stored `n` pods.
async fn until_created(s: &Setup, n: usize, within: Duration) {
    let until = tokio::time::Instant::now() + within;
    while s.kube.created().len() < n {
        assert!(
            tokio::time::Instant::now() < until,
            "the fake stored {} pods, not {n}",
            s.kube.created().len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Item 4, the race: a create whose connection is cut at once, which the API server stores all the same 4 s later,
/// after the retry's pod ran its check and was deleted. Until that create can no longer be written, a pod gone is no
/// confirmation: its name is deleted again, and the pod the late write leaves is found and deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_cut_off_and_stored_after_its_retry_s_pod_was_deleted_leaves_no_pod() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_faults(Faults {
        create_dropped_before_write: 1,
        dropped_create_stored_after: Duration::from_secs(4),
        ..Faults::default()
    });
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.verdict()["ok"], true);
    // The retry's pod and the late one, both ours, both stored before the driver ended, both deleted.
    let created = s.kube.created();
    assert_eq!(created.len(), 2, "{created:?}\n{}", run.stderr);
    assert_eq!(created[0], created[1]);
    assert!(
        s.kube.pods_matching(MANAGED).is_empty(),
        "left: {:#?}",
        s.kube.pods()
    );
    assert_eq!(s.kube.deleted().len(), 2, "{:?}", s.kube.deleted());
    assert_small(&run);
}

/// Item 4, the race past the cleanup's bound: the create is stored 14 s after it came, after the driver's cleanup
/// (10 s) is over. What is known is said: the verdict names the pod, why it may exist, and the `kubectl delete` line,
/// and the interrupted line says not every pod could be deleted. The pod the API server then writes is that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_a_create_stored_after_the_cleanup_names_the_pod() {
    let (s, run) = ctrl_c_during_a_create(Faults {
        create_write_delay: Some(Duration::from_secs(14)),
        ..Faults::default()
    })
    .await;
    assert_eq!(run.code(), Some(130), "{}", run.stderr);
    assert!(s.kube.created().is_empty(), "stored only later");
    let v = run.verdict();
    // Interrupted first: that stays the pod's code; its failure names it left, with the kubectl line.
    assert_eq!(v["pods"][0]["code"], "PROVIDER_INTERRUPTED", "{v}");
    let named = v["pods"][0]["name"]
        .as_str()
        .expect("the pod's name")
        .to_owned();
    let line = format!(
        "error: provider preflight: the check pod {named} may still exist (its create was not answered, and the API server may still write it): kubectl -n {NS} delete pod {named}"
    );
    assert_eq!(v["pods"][0]["failure"], json!([line]), "{v}");
    assert_eq!(v["lines"], json!([line]), "{v}");
    assert!(run.lines().contains(&line.as_str()), "{}", run.stderr);
    assert_eq!(
        run.lines().last(),
        Some(
            &"error: provider preflight: interrupted; not every check pod could be deleted (see the kubectl line above)"
        ),
        "{}",
        run.stderr
    );
    assert_small(&run);
    // The pod the API server writes later is the one named.
    until_created(&s, 1, Duration::from_secs(20)).await;
    assert_eq!(s.kube.created(), [named]);
}

/// A run of one model whose create meets `faults`, and Ctrl-C 1.2 s after the driver started (the create on its way).
async fn ctrl_c_during_a_create(faults: Faults) -> (Setup, DriverRun) {
    let s = Setup::new(Scenario::Nothing).await;
    s.kube.set_faults(faults);
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s
        .run_with(
            s.args(&plan, &["--timeout", "60"]),
            Vec::new(),
            Some((Duration::from_millis(1200), "INT")),
        )
        .await;
    (s, run)
}

// ---------------------------------------------------------------------------------------------------------------
// What a real cluster does to the check pod (issue 40). On the fake API server too: here a storm whose pod then
// starts and passes, beside a `FailedMount`; on the real cluster the storm is created through the API server, alone
// on the cluster (`real_cluster/event_storm.rs`). The injected init container runs on the real cluster too, by a
// MutatingAdmissionPolicy (`real_cluster/mutation.rs`); here its pod's own deadline ends it at once.

/// Items 9 and 10: a policy engine in audit mode writes 4,084 Warning Events about the pod, each message different,
/// and a `FailedMount` naming a volume the pod does not have; the pod then starts and its check passes. None of it is
/// shown as why the pod waits, none ends the run, and the lines and the verdict stay small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_storm_of_audit_warnings_neither_floods_nor_ends_the_run() {
    let s = Setup::new(script(|ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.event(
                "Warning",
                "FailedMount",
                "MountVolume.SetUp failed for volume \"vault-secrets\" : secret \"vault\" not found",
                "kyverno-admission",
            );
            for i in 0..4084 {
                ctl.event(
                    "Warning",
                    "PolicyViolation",
                    &format!("policy require-team/check-{i} fail: label team is required"),
                    "kyverno-admission",
                );
            }
            ctl.start_sidecars();
            jr2_testkit::kube::run_probe(&ctl, jr2_testkit::kube::ProbeRun::default()).await;
        })
    }))
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "60"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_small(&run);
    let lines = run.lines();
    assert!(lines.len() < 10, "{lines:#?}");
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("PolicyViolation") && !l.contains("vault")),
        "{lines:#?}"
    );
    assert!(run.stdout.len() < 64 << 10, "{} bytes", run.stdout.len());
    s.assert_cleaned_up();
}

/// Item 7: an init container admission injected (`mesh-init`, before the Custodian) runs and never completes, until
/// the pod's own deadline fails it: the failure names the container and `Init:0/1` (the Custodian a plain container:
/// issue 36), not a stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_init_container_that_never_completes_is_named() {
    let s = Setup::new(script(|ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.update(|pod| {
                // The Custodian is a plain container (issue 36): mesh-init is the pod's only init container.
                if pod["spec"]["initContainers"].is_null() {
                    pod["spec"]["initContainers"] = json!([]);
                    pod["status"]["initContainerStatuses"] = json!([]);
                }
                pod["spec"]["initContainers"]
                    .as_array_mut()
                    .unwrap()
                    .insert(
                        0,
                        json!({"name": "mesh-init", "image": "mesh.example/init:1"}),
                    );
                let statuses = pod["status"]["initContainerStatuses"]
                    .as_array_mut()
                    .unwrap();
                for s in statuses.iter_mut() {
                    s["state"] = json!({"waiting": {"reason": "PodInitializing"}});
                }
                statuses.insert(
                    0,
                    json!({"name": "mesh-init", "image": "mesh.example/init:1", "imageID": "",
                    "ready": false, "started": true, "restartCount": 0,
                    "state": {"running": {"startedAt": "2026-12-04T18:36:47Z"}}}),
                );
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            ctl.update(|pod| {
                pod["status"]["phase"] = json!("Failed");
                pod["status"]["reason"] = json!("DeadlineExceeded");
                pod["status"]["message"] =
                    json!("Pod was active on the node longer than the specified deadline");
            });
            tokio::time::sleep(Duration::from_secs(300)).await;
        })
    }))
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &["--timeout", "30"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert_small(&run);
    assert_eq!(
        run.lines().last(),
        Some(
            &"error: provider preflight: the check pod cannot start — Init:0/1: the init container mesh-init has not completed (running); nothing else starts before it does; the pod stopped: DeadlineExceeded: Pod was active on the node longer than the specified deadline"
        ),
        "{}",
        run.stderr
    );
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_CANNOT_START", "{v}");
    s.assert_cleaned_up();
}
