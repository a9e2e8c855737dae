//! End to end with a fake cluster: the real `jr2-preflight` binary, through a kubeconfig, against
//! `jr2_testkit::kube` (an API server on loopback whose kubelet stand-in runs the real `jr2-probe` as a process
//! with the pod's args and env), the probe calling a `jr2_testkit::provider` on loopback.
//!
//! Per scenario: the exit code, the contract's lines on stderr (exact where the contract fixes them; the pending
//! lines only on a change), the JSON verdict (`-o json`), and that every pod the driver created was deleted with its
//! `uid` precondition, so the fake holds no check pod afterwards. The driver interrupted (SIGINT, SIGTERM) at random
//! moments, and killed (SIGKILL) then swept, is in `e2e_interrupts.rs`.
//!
//! The harness (the driver as a process, the fakes, the plan, the common checks) is in `fake_cluster/mod.rs`.
//!
//! Figures (printed, not asserted; run with `--nocapture`): the time from the probe container's termination, as the
//! fake records it, to the verdict's first byte on stdout, and the driver's own CPU time (per scenario from
//! `/proc/<pid>/stat`, read while it is a zombie, before it is reaped, in clock ticks; in the figures test from
//! `bash`'s `times`, which reads getrusage of the child, to the millisecond).

mod fake_cluster;

use std::time::Duration;

use serde_json::{Value, json};

use fake_cluster::*;
use jr2_probe::contract::outcome::PodCode;
use jr2_testkit::kube::{NODE, PodCtl, Scenario, UNSCHEDULABLE_MEMORY, UNSCHEDULABLE_TAINT_MEMORY};

// ---------------------------------------------------------------------------------------------------------------
// Scenarios.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_ok_two_placements() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[
        ("sandbox", &["ok"]),
        ("instance-harness", &["ok-delay-300", "ok@b"]),
    ]);
    let run = s.run(s.args(&plan, &["--context", "fake"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    assert_passes(&lines, &["ok", "ok-delay-300", "ok@b"]);
    // Pods that are scheduled and start have nothing to act on: no pending line (issue 12, item 17).
    assert!(!run.stderr.contains("not running yet"), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(v["exitCode"], 0);
    assert_eq!(v["namespace"], NS);
    assert_eq!(
        outcomes(&v),
        owned(&[
            ("vllm/ok", "ok"),
            ("vllm/ok-delay-300", "ok"),
            ("vllm/ok@b", "ok")
        ])
    );
    for m in v["models"].as_array().unwrap() {
        assert_eq!(m["level"], "pass", "{m}");
    }
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    for p in pods {
        assert_eq!(p["outcome"], "finished", "{p}");
        assert_eq!(p["node"], NODE, "{p}");
        assert_eq!(p["failure"], json!([]), "{p}");
    }
    assert_verdict_lines(&run, &v);
    // Two pods, created at once; each ran the real probe, which called the provider.
    assert_eq!(s.kube.created().len(), 2);
    let mut names: Vec<String> = pods
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    let mut created = s.kube.created();
    created.sort();
    assert_eq!(names, created);
    // Three checks, each followed by the context check's one `GET /v1/models` (issue 16).
    let requests = s.provider.requests();
    assert_eq!(requests.iter().filter(|r| r.method == "POST").count(), 3);
    assert!(
        requests
            .iter()
            .filter(|r| r.method == "GET")
            .all(|r| r.path == "/v1/models"),
        "{requests:#?}"
    );
    // (The driver deletes a pod once its probe's summary line is read: the process may be killed before it exits.)
    for pod in s.kube.created() {
        let t = s.kube.pod_times(&pod);
        assert!(
            t.probe_started.is_some() && t.probe_summary_logged.is_some(),
            "{pod} ran: {t:?}"
        );
    }
    s.assert_cleaned_up();
    s.report("all-ok", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_for_a_while_then_scheduled() {
    let s = Setup::new(Scenario::UnschedulableThenScheduled {
        messages: vec![
            UNSCHEDULABLE_TAINT_MEMORY.to_owned(),
            UNSCHEDULABLE_TAINT_MEMORY.to_owned(),
            UNSCHEDULABLE_MEMORY.to_owned(),
        ],
        each: Duration::from_millis(400),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok", "ok-delay-200"])]);
    // KUBECONFIG, as kubectl reads it, in place of --kubeconfig.
    let mut args = s.args(&plan, &[]);
    let at = args.iter().position(|a| a == "--kubeconfig").unwrap();
    args.drain(at..at + 2);
    let run = s
        .run_with(args, vec![("KUBECONFIG".into(), s.kubeconfig())], None)
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    assert_unschedulable_once_each(
        &lines,
        "one line per change, the same status written twice is one line",
    );
    assert!(
        lines[0].starts_with(&format!("{PENDING}Unschedulable")),
        "{lines:#?}"
    );
    assert_passes(&lines, &["ok", "ok-delay-200"]);
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "ok"), ("vllm/ok-delay-200", "ok")])
    );
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
    s.report("unschedulable-then-scheduled", &run);
}

/// Two placements that wait for the same reason: the line does not name its pod, so it is written once, not once
/// per pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_placements_unschedulable_alike_write_each_line_once() {
    let s = Setup::new(Scenario::UnschedulableThenScheduled {
        messages: vec![
            UNSCHEDULABLE_TAINT_MEMORY.to_owned(),
            UNSCHEDULABLE_MEMORY.to_owned(),
        ],
        each: Duration::from_millis(500),
    })
    .await;
    let plan = s.plan(&[("sandbox", &["ok"]), ("harness", &["ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    assert_unschedulable_once_each(&lines, "each state once for both pods");
    assert_pending_on_change(&lines);
    assert_passes(&lines, &["ok", "ok@b"]);
    assert_eq!(s.kube.created().len(), 2);
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_pull_back_off_never_starts() {
    let s = Setup::new(Scenario::ImagePullBackOff).await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let error = format!(
        "rpc error: code = NotFound desc = failed to pull and unpack image \"{PROBE_IMAGE}\": failed to resolve reference \"{PROBE_IMAGE}\": {PROBE_IMAGE}: not found"
    );
    let lines = run.lines();
    // Pending within the grace window (the kubelet retries), then fatal. The back-off's message carries the last
    // pull error after the error's name, as a 1.32+ kubelet writes it: one cause, said once (issue 40, item 13).
    let expected = [
        format!("{PENDING}ErrImagePull: {PROBE_IMAGE}: {error}"),
        format!(
            "error: provider preflight: the check pod cannot start — a node cannot pull {PROBE_IMAGE}: ErrImagePull: {error}"
        ),
    ];
    let n = lines.len();
    assert!(n >= 2, "{lines:#?}");
    assert_eq!(lines[n - 2..], expected, "{lines:#?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.starts_with(&format!("{PENDING}ImagePullBackOff"))),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with(PENDING) || *l == expected[1]),
        "{lines:#?}"
    );
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 1);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "not_checked"), ("vllm/ok@b", "not_checked")])
    );
    assert_eq!(v["pods"][0]["outcome"], "failed");
    assert_eq!(v["pods"][0]["failure"], json!([expected[1]]));
    // Item 13: the cause's code, and its fix as the models' next action (not "run jr2 up again").
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_IMAGE_PULL");
    assert_eq!(
        v["models"][0]["nextAction"],
        PodCode::ImagePull.next_action()
    );
    assert_verdict_lines(&run, &v);
    let pod = &s.kube.created()[0];
    assert!(
        s.kube.pod_times(pod).probe_started.is_none(),
        "the probe never started"
    );
    s.assert_cleaned_up();
    s.report("image-pull-back-off", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_container_config_error_names_the_env_from_secret() {
    let s = Setup::new(Scenario::CreateContainerConfigError {
        message: "secret \"x\" not found".to_owned(),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let error = "error: provider preflight: the check pod cannot start — harness.envFrom names Secret \"x\", which this namespace does not hold";
    assert_eq!(lines.last(), Some(&error), "{lines:#?}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("error:")).count(),
        1,
        "{lines:#?}"
    );
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with(PENDING)),
        "{lines:#?}"
    );
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 1);
    assert_eq!(outcomes(&v), owned(&[("vllm/ok", "not_checked")]));
    assert_eq!(v["pods"][0]["failure"], json!([error]));
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_SECRET_MISSING");
    assert_eq!(
        v["pods"][0]["nextAction"],
        PodCode::SecretMissing.next_action()
    );
    assert_eq!(
        v["models"][0]["nextAction"],
        PodCode::SecretMissing.next_action()
    );
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
    s.report("create-container-config-error", &run);
}

/// Issue 40, item 15: a Secret a secrets operator creates 3 s after the kubelet first refused the probe container for
/// it: the kubelet then starts the container (as it would a Harness pod's), and the run passes, with one pending
/// line for the grace. (The real cluster's test, `real_cluster/kubelet.rs`, creates the Secret itself; here the
/// kubelet stand-in plays the moment the Secret appears.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_created_after_the_pod_lets_the_run_pass() {
    let s = Setup::new(Scenario::Script(std::sync::Arc::new(|ctl: PodCtl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "CreateContainerConfigError", "message": "secret \"jr2-late\" not found"}}),
                false,
            );
            ctl.event(
                "Warning",
                "Failed",
                "Error: secret \"jr2-late\" not found",
                "kubelet",
            );
            tokio::time::sleep(Duration::from_secs(3)).await;
            jr2_testkit::kube::run_probe(&ctl, jr2_testkit::kube::ProbeRun::default()).await;
        })
    })))
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with(PENDING) && l.contains("CreateContainerConfigError"))
            .collect::<Vec<_>>(),
        [
            &"provider: the check pod is not running yet — CreateContainerConfigError: Secret \"jr2-late\" not found; waiting up to 20 s for it to be created (a secrets operator may create it after the pod)"
        ],
        "{lines:#?}"
    );
    assert_eq!(run.verdict()["ok"], true);
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_mount_of_the_custodian_volume_from_its_event() {
    let s = Setup::new(Scenario::FailedMount {
        volume: "custodian-values".to_owned(),
        secret: "jr2-held-secrets".to_owned(),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let error = "error: provider preflight: the check pod cannot start — a secrets valueFrom names Secret \"jr2-held-secrets\" (or its key), so the Custodian's volume does not mount: MountVolume.SetUp failed for volume \"custodian-values\" : secret \"jr2-held-secrets\" not found";
    assert_eq!(lines.last(), Some(&error), "{lines:#?}");
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with(PENDING)),
        "{lines:#?}"
    );
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["pods"][0]["failure"], json!([error]));
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_CUSTODIAN_VOLUME");
    assert_verdict_lines(&run, &v);
    // Only an Event said so: the pod's own status shows the Custodian still being created.
    assert!(s.kube.events().iter().any(|e| e["reason"] == "FailedMount"),);
    s.assert_cleaned_up();
    s.report("failed-mount", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_killed_mid_run_names_the_model_and_the_rest_not_checked() {
    let s = Setup::new(Scenario::OomKilledAfterFirstResult).await;
    let plan = s.plan(&[("harness", &["ok", "ok-delay-5000@a", "ok-delay-5000@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let n = lines.len();
    assert!(n >= 2, "{lines:#?}");
    let tail = stopped_block(&lines);
    assert_eq!(
        lines
            .iter()
            .filter(|l| completed_ms(l, "vllm/ok").is_some())
            .count(),
        1,
        "the result before the kill counts: {lines:#?}"
    );
    assert!(
        lines[..n - tail]
            .iter()
            .all(|l| l.starts_with(PENDING) || completed_ms(l, "vllm/ok").is_some()),
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 1);
    assert_eq!(
        outcomes(&v),
        owned(&[
            ("vllm/ok", "ok"),
            ("vllm/ok-delay-5000@a", "not_checked"),
            ("vllm/ok-delay-5000@b", "not_checked"),
        ])
    );
    assert_eq!(v["pods"][0]["failure"], json!(lines[n - tail..]));
    assert_verdict_lines(&run, &v);
    // The stand-in killed the probe; the driver deleted the pod after.
    let pod = &s.kube.created()[0];
    let times = s.kube.pod_times(pod);
    assert!(times.probe_exited.is_some() && times.probe_exited < times.deleted);
    s.assert_cleaned_up();
    s.report("oom-killed", &run);
}

/// The log is lost after the first line: the verdict comes from the termination message in the pod's status, as
/// the watch delivers it: this is the figure of "termination to verdict".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verdict_from_the_termination_message_when_the_log_is_lost() {
    let s = Setup::new(log_cut_after(Some(1))).await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "ok"), ("vllm/ok@b", "ok")])
    );
    // The passing models' lines are written from the termination message too (issue 27, item 18: before, only the
    // JSON had them).
    assert_passes(&run.lines(), &["ok", "ok@b"]);
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
    s.report("termination-message", &run);
}

/// Plan order on stderr and in `lines` whatever the completion order (issue 27, item 16): the second model passes at
/// once, the first stalls to its deadline, the third answers in text; the pass must not come before the first
/// model's error. (Before, `provider: vllm/ok completed...` came first.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_come_in_plan_order_whatever_the_completion_order() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[("harness", &["stall", "ok", "text"])]);
    let run = s.run(s.args(&plan, &["--context", "fake"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let first = |pred: &dyn Fn(&str) -> bool| lines.iter().position(|l| pred(l));
    let stall =
        first(&|l| l.starts_with("error: provider preflight failed for model \"vllm/stall\""))
            .unwrap_or_else(|| panic!("{}", run.stderr));
    let ok = first(&|l| completed_ms(l, "vllm/ok").is_some())
        .unwrap_or_else(|| panic!("{}", run.stderr));
    let text = first(&|l| l.starts_with("warning: provider: vllm/text answered"))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(stall < ok && ok < text, "plan order: {lines:#?}");
    assert_verdict_lines(&run, &run.verdict());
    s.assert_cleaned_up();
}

/// Figures only: twelve runs of one pod with two models, six reading the verdict from the log's `summary` line, six
/// from the termination message (the log lost after its first line); "to the verdict" and the driver's CPU time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_termination_to_verdict_and_driver_cpu() {
    let mut from_summary = Vec::new();
    let mut from_terminated = Vec::new();
    let mut cpu = Vec::new();
    let mut cpu_proc = Vec::new();
    for log_lines in [None, Some(1)] {
        for i in 0..6 {
            // Every other run under bash's `times`; the others from /proc (clock ticks): the two readings side by side.
            let bash_times = i % 2 == 0;
            let s = Setup::new(log_cut_after(log_lines)).await;
            let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
            let run = s
                .run_measured(s.args(&plan, &[]), Vec::new(), None, bash_times)
                .await;
            assert_eq!(run.code(), Some(0), "{}", run.stderr);
            s.assert_cleaned_up();
            let (summary, terminated) = s.to_verdict(&run);
            match log_lines {
                None => from_summary.extend(summary),
                Some(_) => from_terminated.extend(terminated),
            }
            let ms = run.cpu.map(|c| c.as_secs_f64() * 1e3);
            if bash_times {
                cpu.extend(ms);
            } else {
                cpu_proc.extend(ms);
            }
        }
    }
    let stats = |mut v: Vec<f64>| {
        if v.is_empty() {
            return "none".to_owned();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        format!(
            "min {:+.1} / median {:+.1} / max {:+.1} / mean {:+.1} ms (n={})",
            v[0],
            v[v.len() / 2],
            v[v.len() - 1],
            mean,
            v.len()
        )
    };
    println!(
        "figure: the probe's summary line in the log -> the verdict on stdout: {}",
        stats(from_summary)
    );
    println!(
        "figure: the probe container's terminated status (log lost) -> the verdict on stdout: {}",
        stats(from_terminated)
    );
    println!(
        "figure: the driver's CPU time per run, user+system (bash times, getrusage of the child): {}",
        stats(cpu)
    );
    println!(
        "figure: the driver's CPU time per run, user+system (/proc/<pid>/stat, {} ms ticks): {}",
        1000 / clock_ticks(),
        stats(cpu_proc)
    );
}

/// An API server on a closed port (issue 12, item 6): the driver's own "cannot reach the cluster" line with the
/// cause in plain words, no pod left to delete, and no log line on stderr (`jr2 up` parses it; a log comes only when
/// `RUST_LOG` asks, and never coloured on a pipe).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_on_a_closed_port_is_one_plain_line_and_no_log() {
    let s = Setup::new(Scenario::AllOk).await;
    // Two placements, two pods that cannot be created: one line.
    let plan = s.plan(&[("harness", &["ok"]), ("gpu", &["ok"])]);
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let kubeconfig = std::fs::read_to_string(s.kubeconfig())
        .unwrap()
        .replace(&s.kube.server_url(), &format!("http://127.0.0.1:{closed}"));
    let path = std::path::Path::new(&s.kubeconfig()).with_file_name("closed-kubeconfig");
    std::fs::write(&path, kubeconfig).unwrap();
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = [
            "run",
            "--plan",
            &plan,
            "--kubeconfig",
            path.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = s.run(args(&[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert_eq!(
        run.lines(),
        ["error: provider preflight: cannot reach the cluster: Connection refused (os error 111)"]
    );
    // With RUST_LOG the log comes, uncoloured on a pipe.
    let run = s
        .run_with(args(&[]), vec![("RUST_LOG".into(), "debug".into())], None)
        .await;
    assert_eq!(run.code(), Some(1));
    assert!(
        run.lines().len() > 1,
        "the log was asked for: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains('\u{1b}'),
        "no colour on a pipe: {:?}",
        run.stderr
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Issue 12: a stopped pod's lines (items 1, 3), a start failure of one placement among two (item 5), the pod-level
// codes and next actions (item 13).

fn script(
    f: impl Fn(PodCtl) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
    + Send
    + Sync
    + 'static,
) -> Scenario {
    Scenario::Script(std::sync::Arc::new(f))
}

/// Item 1: a model that failed (a 401) before the pod was OOM-killed has its own lines, in plan order, before the
/// stopped line and the `not checked:` lines; it is not left to the JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_stopped_mid_run_still_prints_the_error_found_before() {
    let s = Setup::new(Scenario::OomKilledAfterFirstResult).await;
    let plan = s.plan(&[("harness", &["ok-delay-5000@a", "auth", "ok-delay-5000@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let n = lines.len();
    assert!(n >= 3, "{lines:#?}");
    let tail = stopped_block(&lines);
    let at = lines
        .iter()
        .position(|l| {
            l.starts_with("error: provider preflight failed for model \"vllm/auth\" against ")
        })
        .unwrap_or_else(|| panic!("the 401 has its own line: {lines:#?}"));
    // Its hints follow it, and nothing else comes between it and the stopped line.
    assert!(at + 1 < n - tail, "{lines:#?}");
    assert!(
        lines[at + 1..n - tail]
            .iter()
            .all(|l| l.starts_with("  - ")),
        "{lines:#?}"
    );
    assert!(
        lines[..at].iter().all(|l| l.starts_with(PENDING)),
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(
        outcomes(&v),
        owned(&[
            ("vllm/ok-delay-5000@a", "not_checked"),
            ("vllm/auth", "key_refused"),
            ("vllm/ok-delay-5000@b", "not_checked"),
        ])
    );
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_OUT_OF_MEMORY");
    assert_eq!(
        v["models"][2]["nextAction"],
        PodCode::OutOfMemory.next_action()
    );
    assert_eq!(v["pods"][0]["failure"], json!(lines[n - tail..]));
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
}

/// The stopped block at the end of `lines` when the probe is OOM-killed after its first result, with the slow models
/// `@a` and `@b` started at once: every model the probe had started is named as what the check was on (issue 27,
/// item 17), so both when `@b`'s start reached the log before the kill, else `@a` alone and `@b` not checked. Which
/// one is the race between the kill and the log, not the driver's choice. Returns the block's length.
fn stopped_block(lines: &[&str]) -> usize {
    let n = lines.len();
    let stopped = "error: provider preflight: the check pod stopped (probe ran out of memory, limit 64Mi) while the check was on";
    let both = format!("{stopped} models \"vllm/ok-delay-5000@a\", \"vllm/ok-delay-5000@b\"");
    if lines[n - 1] == both {
        return 1;
    }
    assert_eq!(
        lines[n - 2..],
        [
            format!("{stopped} model \"vllm/ok-delay-5000@a\""),
            "  not checked: vllm/ok-delay-5000@b".to_owned(),
        ],
        "{lines:#?}"
    );
    2
}

/// Item 3: the pod's deadline passes while it initializes (the Custodian's volume never mounts): no model had
/// started, so none is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_in_pod_initializing_names_no_model() {
    let s = Setup::new(script(|ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.container(
                "custodian",
                json!({"waiting": {"reason": "ContainerCreating"}}),
                false,
            );
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "PodInitializing"}}),
                false,
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            ctl.update(|pod| {
                pod["status"]["phase"] = json!("Failed");
                pod["status"]["reason"] = json!("DeadlineExceeded");
                pod["status"]["message"] =
                    json!("Pod was active on the node longer than the specified deadline");
            });
        })
    }))
    .await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let n = lines.len();
    let expected = [
        "error: provider preflight: the check pod stopped (DeadlineExceeded: Pod was active on the node longer than the specified deadline) before any model was checked",
        "  not checked: vllm/ok",
        "  not checked: vllm/ok@b",
    ];
    assert!(n >= 3, "{lines:#?}");
    assert_eq!(lines[n - 3..], expected, "{lines:#?}");
    assert!(
        lines[..n - 3].iter().all(|l| l.starts_with(PENDING)),
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_STOPPED");
    assert_eq!(v["pods"][0]["failure"], json!(expected));
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
}

/// Item 3: a probe that refuses its run spec (an image of another release: version skew) exits 2 with its own
/// `error:` line on stderr; the stopped line carries it, names no model, and the code says a new run fails alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_that_refuses_its_run_spec_says_why_in_the_line() {
    refused_run_spec(None).await;
}

/// The same with the log lost: the probe's error comes from the termination message, which the kubelet fills with
/// the end of the log under `FallbackToLogsOnError` (the probe writes no summary when it refuses its run spec).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_that_refuses_its_run_spec_says_why_when_the_log_is_lost() {
    refused_run_spec(Some(0)).await;
}

async fn refused_run_spec(log_lines: Option<usize>) {
    let s = Setup::new(script(move |mut ctl| {
        Box::pin(async move {
            // The probe of another release: it knows no run spec v1 (as if the driver were newer).
            for c in ctl.pod["spec"]["containers"].as_array_mut().unwrap() {
                for a in c["args"].as_array_mut().into_iter().flatten() {
                    if let Some(text) = a.as_str() {
                        *a = json!(text.replace(
                            "jr2.dev/provider-preflight-run/v1",
                            "jr2.dev/provider-preflight-run/v2"
                        ));
                    }
                }
            }
            ctl.schedule();
            ctl.start_sidecars();
            jr2_testkit::kube::run_probe(
                &ctl,
                jr2_testkit::kube::ProbeRun {
                    log_lines,
                    ..Default::default()
                },
            )
            .await;
        })
    }))
    .await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let n = lines.len();
    let expected = [
        "error: provider preflight: the check pod stopped (Error, exit code 2) before any model was checked — the probe said: --spec: schema \"jr2.dev/provider-preflight-run/v2\" is not jr2.dev/provider-preflight-run/v1",
        "  not checked: vllm/ok",
        "  not checked: vllm/ok@b",
    ];
    assert!(n >= 3, "{lines:#?}");
    assert_eq!(lines[n - 3..], expected, "{lines:#?}");
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_PROBE_ERROR");
    for m in v["models"].as_array().unwrap() {
        assert_eq!(m["code"], "PROVIDER_NOT_CHECKED", "{m}");
        assert_eq!(m["nextAction"], PodCode::ProbeError.next_action(), "{m}");
    }
    assert_eq!(s.provider.requests().len(), 0, "the probe sent nothing");
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
}

/// Item 5: one placement's pod cannot pull its image while the other's runs: its line names the placement (and
/// node) and every model it leaves unchecked; the code and next action follow the cause (item 13).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_failure_of_one_placement_names_it_and_its_models() {
    let s = Setup::new(script(|ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.start_sidecars();
            if !ctl.name.contains("-gpu-") {
                jr2_testkit::kube::run_probe(&ctl, jr2_testkit::kube::ProbeRun::default())
                    .await;
                return;
            }
            // Not transient: fatal at once, no grace window.
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ErrImageNeverPull", "message": "Container image \"registry.example.com/jr2/jr2-probe:0.1.0\" is not present with pull policy of Never"}}),
                false,
            );
        })
    }))
    .await;
    let plan = s.plan(&[("sandbox", &["ok"]), ("gpu", &["ok@g1", "ok@g2"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let n = lines.len();
    let expected = [
        format!(
            "error: provider preflight: the check pod cannot start — a node cannot pull {PROBE_IMAGE}: Container image \"{PROBE_IMAGE}\" is not present with pull policy of Never"
        ),
        format!("  placement \"gpu\" (node {NODE})"),
        "  not checked: vllm/ok@g1".to_owned(),
        "  not checked: vllm/ok@g2".to_owned(),
    ];
    assert!(n >= 4, "{lines:#?}");
    assert_eq!(lines[n - 4..], expected, "{lines:#?}");
    assert!(
        lines.iter().any(|l| completed_ms(l, "vllm/ok").is_some()),
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(
        outcomes(&v),
        owned(&[
            ("vllm/ok", "ok"),
            ("vllm/ok@g1", "not_checked"),
            ("vllm/ok@g2", "not_checked"),
        ])
    );
    let pods = v["pods"].as_array().unwrap();
    let gpu = pods.iter().find(|p| p["placement"] == "gpu").unwrap();
    let sandbox = pods.iter().find(|p| p["placement"] == "sandbox").unwrap();
    assert_eq!(gpu["code"], "PROVIDER_POD_IMAGE_PULL");
    assert_eq!(gpu["nextAction"], PodCode::ImagePull.next_action());
    assert_eq!(gpu["failure"], json!(expected));
    assert_eq!(sandbox["code"], Value::Null);
    assert_eq!(sandbox["nextAction"], Value::Null);
    for m in &v["models"].as_array().unwrap()[1..] {
        assert_eq!(m["nextAction"], PodCode::ImagePull.next_action(), "{m}");
        assert!(
            !m["nextAction"].as_str().unwrap().contains("--evidence"),
            "{m}"
        );
    }
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
}

/// Item 5: both placements' pods cannot pull the same image: the two blocks would read alike, so each names its
/// placement and its models.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_start_failure_of_two_placements_names_each() {
    let s = Setup::new(script(|ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ErrImageNeverPull", "message": "Container image \"registry.example.com/jr2/jr2-probe:0.1.0\" is not present with pull policy of Never"}}),
                false,
            );
        })
    }))
    .await;
    let plan = s.plan(&[("sandbox", &["ok"]), ("gpu", &["ok@g1"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let error = format!(
        "error: provider preflight: the check pod cannot start — a node cannot pull {PROBE_IMAGE}: Container image \"{PROBE_IMAGE}\" is not present with pull policy of Never"
    );
    let lines = run.lines();
    let n = lines.len();
    assert!(n >= 6, "{lines:#?}");
    assert_eq!(
        lines[n - 6..],
        [
            error.as_str(),
            &format!("  placement \"sandbox\" (node {NODE})"),
            "  not checked: vllm/ok",
            error.as_str(),
            &format!("  placement \"gpu\" (node {NODE})"),
            "  not checked: vllm/ok@g1",
        ],
        "{lines:#?}"
    );
    let v = run.verdict();
    for p in v["pods"].as_array().unwrap() {
        assert_eq!(p["code"], "PROVIDER_POD_IMAGE_PULL", "{p}");
    }
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
}

/// A model that takes long gets the probe's progress lines through the driver, named as the plan names it, at the
/// plan's pace; a cause the endpoint names adds its line after the contract's lines, and its next action (issue 16).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_model_prints_progress_and_a_known_cause_its_line() {
    let s = Setup::new(Scenario::AllOk).await;
    let path = s.plan(&[("sandbox", &["ok-delay-1600", "length"])]);
    let mut plan: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    plan["waitingNoteSeconds"] = json!(0.5);
    // A cap of 1 (no maxTokens) has a cause line of its own: set one, so that the text before the cap is the cause.
    plan["models"][1]["maxTokens"] = json!(1024);
    std::fs::write(&path, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    let run = s.run(s.args(&path, &["--context", "fake"])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let waiting: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains("no verdict yet"))
        .collect();
    let line = |ms| {
        jr2_probe::render::waiting(
            "vllm/ok-delay-1600",
            Duration::from_millis(ms),
            Duration::from_secs(20),
            jr2_probe::contract::events::WaitStage::NoAnswer,
        )
    };
    assert!(
        waiting.len() >= 3
            && waiting
                .iter()
                .enumerate()
                .all(|(i, l)| *l == line(500 * (i as u64 + 1))),
        "{waiting:#?}"
    );
    let v = run.verdict();
    let length = &v["models"][1];
    assert_eq!(length["outcome"], "length");
    assert_eq!(length["cause"]["kind"], "textUntilCap");
    assert_eq!(
        length["nextAction"],
        jr2_probe::render::cause_next_action(&jr2_probe::contract::endpoint::Cause::TextUntilCap)
    );
    assert!(
        lines
            .iter()
            .any(|l| l
                .starts_with("  - no reasoning was streamed: the model wrote text until the cap")),
        "{lines:#?}"
    );
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
}

/// The Node a check pod is bound to, as the 1.35 node lifecycle controller leaves it once the kubelet stopped
/// posting its status (`Ready` `Unknown`, the unreachable taints), or as a kubelet that answers writes it.
fn node_object(ready: &str) -> Value {
    let mut node = json!({"metadata": {"name": NODE, "uid": "node-uid-1"}, "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "KubeletReady",
                                   "message": "kubelet is posting ready status"}]}});
    if ready == "Unknown" {
        node["status"]["conditions"][0]["reason"] = json!("NodeStatusUnknown");
        node["status"]["conditions"][0]["message"] = json!("Kubelet stopped posting node status.");
        node["spec"]["taints"] = json!([
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2026-12-06T10:00:00Z"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-12-06T10:00:00Z"}]);
    }
    node
}

/// The check pod's node stops answering mid-check (issue 39): the check pod's readiness gate keeps its `Ready`
/// `False`, so the pod shows nothing; the Node, watched by its name, turns `Ready` `Unknown`, and the check ends at
/// once, naming the node and what it says, the model it was on not checked, the pod deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_stops_answering_mid_check_is_named_at_once() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.set_node(node_object("True"));
    let plan = s.plan(&[("harness", &["ok-delay-30000@a"])]);
    let started = std::time::Instant::now();
    let (run, ()) = tokio::join!(s.run(s.args(&plan, &[])), async {
        // Once the probe runs, the node stops answering.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let probe_started = || {
            let created = s.kube.created();
            created
                .first()
                .is_some_and(|p| s.kube.pod_times(p).probe_started.is_some())
        };
        while !probe_started() {
            assert!(
                std::time::Instant::now() < deadline,
                "the probe never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        s.kube.set_node(node_object("Unknown"));
    });
    let took = started.elapsed();
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        took < Duration::from_secs(20),
        "long before the model's 30 s: {took:?}"
    );
    let lines = run.lines();
    let said = "Ready is Unknown: NodeStatusUnknown: Kubelet stopped posting node status.";
    let on = format!(
        "error: provider preflight: the check pod's node {NODE} stopped answering ({said}) while the check was on model \"vllm/ok-delay-30000@a\""
    );
    let before = format!(
        "error: provider preflight: the check pod's node {NODE} stopped answering ({said}) before any model was checked"
    );
    assert!(lines.iter().any(|l| *l == on || *l == before), "{lines:#?}");
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_NODE_LOST");
    assert_eq!(v["pods"][0]["node"], NODE);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok-delay-30000@a", "not_checked")])
    );
    // The node was watched by its name, and nothing else of the cluster's nodes.
    assert!(
        s.kube
            .requests()
            .iter()
            .filter(|r| r.path.starts_with("/api/v1/nodes"))
            .all(|r| r.query.get("fieldSelector") == Some(&format!("metadata.name={NODE}"))),
        "{:?}",
        s.kube.requests()
    );
    s.assert_cleaned_up();
}
