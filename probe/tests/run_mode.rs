//! `jr2-probe run`, the check pod's mode: JSON lines on stdout, the compact summary in the termination message,
//! and the pod's deadline kept.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jr2_probe::outcome::Outcome;
use jr2_probe::run::{Summary, TERMINATION_LIMIT};
use jr2_testkit::provider::FakeProvider;
use jr2_testkit::provider::openai_completions::GOOD_KEY;
use serde_json::{Value, json};

fn custom(model: &str, base: &str) -> Value {
    json!({"model": format!("vllm/{model}"), "source": "custom", "baseUrl": base, "api": "openai-completions",
           "keyEnv": "JR2_PROVIDER_API_KEY", "keyHeld": true, "maxTokens": 0})
}

fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "jr2-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

#[tokio::test(flavor = "multi_thread")]
async fn streams_json_lines_and_writes_the_termination_message() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 10, "maxTries": 2,
                      "models": [custom("auth", &base), custom("rate-limited", &base), custom("missing", &base)]});
    let term = temp_path("termination");
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
        ],
        &[
            ("JR2_PROVIDER_API_KEY", GOOD_KEY),
            ("NODE_NAME", "worker-2"),
        ],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.is_empty(),
        "pod mode writes JSON on stdout only: {}",
        run.stderr
    );
    let ev = events(&run.stdout);
    assert_eq!(ev[0]["event"], "start");
    assert_eq!(ev[0]["origin"], json!({"kind": "node", "name": "worker-2"}));
    let kinds: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "modelStarted").count(), 3);
    assert_eq!(kinds.iter().filter(|k| **k == "result").count(), 3);
    assert_eq!(
        kinds.iter().filter(|k| **k == "try").count(),
        1 + 2 + 1,
        "every try is streamed"
    );
    assert_eq!(*kinds.last().unwrap(), "summary");
    // Per model: modelStarted, its tries, then its result (the documented order, whatever the interleaving).
    for index in 0..3 {
        let of_model: Vec<&str> = ev
            .iter()
            .filter(|e| e["index"] == index)
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            of_model.first(),
            Some(&"modelStarted"),
            "{index}: {of_model:?}"
        );
        assert_eq!(of_model.last(), Some(&"result"), "{index}: {of_model:?}");
        assert!(
            of_model[1..of_model.len() - 1].iter().all(|k| *k == "try"),
            "{index}: {of_model:?}"
        );
    }

    let verdict: jr2_probe::verdict::Verdict =
        serde_json::from_value(ev.last().unwrap()["verdict"].clone()).unwrap();
    let outcomes: Vec<Outcome> = verdict.models.iter().map(|m| m.outcome).collect();
    assert_eq!(outcomes, [Outcome::Ok, Outcome::Busy, Outcome::Http]);
    assert_eq!(
        fake.requests_for("auth")[0].header("authorization"),
        Some(format!("Bearer {GOOD_KEY}").as_str())
    );
    assert_eq!(
        fake.requests_for("auth")[0].body["max_completion_tokens"],
        1,
        "maxTokens 0 is sent as 1, as pi does"
    );
    // The lines name the node, in plan order.
    assert!(
        verdict.lines[1].starts_with("warning: provider: vllm/rate-limited is busy toward"),
        "{:?}",
        verdict.lines
    );
    assert!(
        verdict.lines[2].contains("(from a pod on node worker-2, as a Turn calls it): HTTP 404"),
        "{:?}",
        verdict.lines
    );

    let text = std::fs::read_to_string(&term).unwrap();
    assert!(text.len() <= TERMINATION_LIMIT);
    let summary: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (summary.ok, summary.n, summary.truncated),
        (false, 3, false)
    );
    assert_eq!(
        summary.models[2].error.as_deref(),
        Some("HTTP 404: The model `missing` does not exist.")
    );
    assert!(!run.stdout.contains(GOOD_KEY) && !text.contains(GOOD_KEY));
    let _ = std::fs::remove_file(term);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifty_models_with_one_stall_finish_before_the_pods_deadline() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let mut models: Vec<Value> = (0..49).map(|i| custom(&format!("ok@{i}"), &base)).collect();
    models.insert(17, custom("stall", &base));
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 120, "concurrency": 8, "models": models});
    let deadline = SystemTime::now() + Duration::from_secs(7);
    let deadline_s = deadline.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let term = temp_path("termination-50");
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
        ],
        &[("JR2_PROBE_DEADLINE", &format!("{deadline_s:.3}"))],
    )
    .await;
    assert!(
        SystemTime::now() < deadline,
        "the probe exits before the pod's deadline ({:?})",
        run.elapsed
    );
    assert_eq!(run.code, 1);
    let text = std::fs::read_to_string(&term).unwrap();
    assert!(text.len() <= TERMINATION_LIMIT, "{} bytes", text.len());
    let summary: Summary = serde_json::from_str(&text).unwrap();
    assert_eq!(summary.n, 50);
    assert_eq!(summary.models.len(), 50);
    assert!(
        matches!(
            summary.models[17].outcome,
            Outcome::Timeout | Outcome::NotChecked
        ),
        "{:?}",
        summary.models[17]
    );
    assert_eq!(
        summary
            .models
            .iter()
            .filter(|m| m.outcome == Outcome::Ok)
            .count(),
        49
    );
    let _ = std::fs::remove_file(term);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_spec_is_one_error_line_and_exit_2() {
    let cases = [
        (json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [{"model": "nope", "source": "custom", "baseUrl": "http://h/v1"}]}).to_string(),
         "error: models[0].model: model \"nope\" has no provider: write it as <provider>/<id>"),
        (json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [{"model": "vllm/x", "source": "custom"}]}).to_string(),
         "error: models[0].baseUrl: required for a custom provider"),
        (json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [{"model": "anthropic/no-such-model", "source": "catalog"}]}).to_string(),
         "error: models[0].model: model \"anthropic/no-such-model\" is not in pi's catalog (@earendil-works/pi-ai 0.82.1); name its endpoint with --base-url and --api to check it anyway"),
        (json!({"schema": "v0", "models": []}).to_string(), "error: --spec: schema \"v0\" is not jr2.dev/provider-preflight-run/v1"),
    ];
    for (spec, want) in cases {
        let run = common::probe(
            &[
                "run",
                "--spec-json",
                &spec,
                "--termination-log",
                "/dev/null",
            ],
            &[],
        )
        .await;
        assert_eq!(run.code, 2, "{spec}: {}", run.stderr);
        assert_eq!(run.lines(), [want]);
        assert!(run.stdout.is_empty());
    }
    let run = common::probe(
        &["run", "--spec-json", "{", "--termination-log", "/dev/null"],
        &[],
    )
    .await;
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("error: --spec: not a run spec (EOF while parsing an object"),
        "{}",
        run.stderr
    );
}

/// A deadline behind the probe's clock (a node clock ahead of the driver's by more than the deadline): nothing is
/// sent, every model is `not_checked`, and the line says the deadline had passed rather than "no answer in 0 s".
#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_already_passed_checks_nothing_and_says_so() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1",
                      "models": [custom("ok@a", &base), custom("ok@b", &base)]});
    let passed = SystemTime::now() - Duration::from_secs(90);
    let passed_s = passed.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            "/dev/null",
        ],
        &[("JR2_PROBE_DEADLINE", &format!("{passed_s:.3}"))],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        fake.requests().is_empty(),
        "nothing is sent past the deadline"
    );
    let ev = events(&run.stdout);
    let verdict: jr2_probe::verdict::Verdict =
        serde_json::from_value(ev.last().unwrap()["verdict"].clone()).unwrap();
    for m in &verdict.models {
        assert_eq!(m.outcome, Outcome::NotChecked, "{m:?}");
        let error = m.error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("not checked: the check pod's deadline had passed 9")
                && error.ends_with(
                    " s before the probe started — is this node's clock ahead of the machine that ran jr2 up?"
                ),
            "{error}"
        );
    }
    assert!(
        !ev.iter().any(|e| e["event"] == "modelStarted"),
        "no model is started"
    );
}

/// A `JR2_PROBE_DEADLINE` the probe cannot use (too large for a time, not a number, negative) is one warning line
/// and a run without it: never a panic (the release build aborts on one, with no JSON and no termination message).
#[tokio::test(flavor = "multi_thread")]
async fn an_unusable_deadline_is_a_warning_not_a_panic() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let spec =
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [custom("ok@a", &base)]});
    let term = temp_path("termination-bad-deadline");
    for value in [
        "1e300",
        "1e19",
        "18446744073709551616",
        "-5",
        "NaN",
        "inf",
        "soon\u{1b}[31m",
    ] {
        let run = common::probe(
            &[
                "run",
                "--spec-json",
                &spec.to_string(),
                "--termination-log",
                term.to_str().unwrap(),
            ],
            &[("JR2_PROBE_DEADLINE", value)],
        )
        .await;
        assert_eq!(run.code, 0, "{value}: {}", run.stderr);
        let shown = jr2_probe::sanitize::escape(value);
        assert_eq!(
            run.lines(),
            [format!(
                "warning: JR2_PROBE_DEADLINE={shown} is not a Unix time in seconds; the probe does not stop before the pod's deadline"
            )],
            "{value}"
        );
        let summary: Summary =
            serde_json::from_str(&std::fs::read_to_string(&term).unwrap()).unwrap();
        assert!(summary.ok, "{value}");
    }
    let _ = std::fs::remove_file(term);
}

/// `--spec` is read to 1 MiB at most: `/dev/zero` is one line and exit 2, not a probe out of memory (issue 11,
/// item 9).
#[tokio::test(flavor = "multi_thread")]
async fn a_spec_file_past_one_mib_is_refused() {
    let run = common::probe(
        &[
            "run",
            "--spec",
            "/dev/zero",
            "--termination-log",
            "/dev/null",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.lines(),
        ["error: --spec: /dev/zero is larger than 1 MiB"]
    );
    assert!(run.stdout.is_empty());
}

/// Runs `spec` in pod mode with the pod's deadline `budget` ahead of the probe's margin (3 s), and returns the run
/// and its events.
async fn run_with_budget(spec: &Value, budget: Duration) -> (common::Run, Vec<Value>) {
    let deadline = SystemTime::now() + jr2_probe::run::DEADLINE_MARGIN + budget;
    let deadline_s = deadline.duration_since(UNIX_EPOCH).unwrap().as_secs_f64();
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            "/dev/null",
        ],
        &[("JR2_PROBE_DEADLINE", &format!("{deadline_s:.3}"))],
    )
    .await;
    let ev = events(&run.stdout);
    (run, ev)
}

fn verdict_of(ev: &[Value]) -> jr2_probe::verdict::Verdict {
    serde_json::from_value(ev.last().unwrap()["verdict"].clone()).unwrap()
}

/// Issue 12, item 4: a model the pod's deadline cuts says how long it itself waited (not the seconds since the run
/// started), and the models never reached are in the `not checked:` form, without a failure's hints.
#[tokio::test(flavor = "multi_thread")]
async fn the_deadline_cuts_a_model_after_its_own_time_and_the_rest_are_not_checked() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    // One at a time: the staller starts after the first model's 1.5 s, and waits until the cut at 3 s.
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 120, "concurrency": 1,
                      "models": [custom("ok-delay-1500", &base), custom("stall", &base),
                                 custom("ok@b", &base), custom("ok@c", &base)]});
    let (run, ev) = run_with_budget(&spec, Duration::from_secs(3)).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = verdict_of(&ev);
    let outcomes: Vec<Outcome> = v.models.iter().map(|m| m.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Outcome::Ok,
            Outcome::Timeout,
            Outcome::NotChecked,
            Outcome::NotChecked
        ]
    );
    let cut = &v.models[1];
    let error = cut.error.as_deref().unwrap_or_default();
    let own: f64 = error
        .strip_prefix("no answer in ")
        .and_then(|e| e.split_once(" s, when the check pod's deadline came — "))
        .and_then(|(s, _)| s.parse().ok())
        .unwrap_or_else(|| panic!("{error}"));
    // Its own 1.5 s or so, not the run's 3.
    assert!((1.0..2.5).contains(&own), "{error}");
    assert!(
        (cut.elapsed_ms as f64 / 1000.0 - own).abs() < 0.2,
        "{error} / {} ms",
        cut.elapsed_ms
    );
    assert!(
        v.elapsed_ms as f64 / 1000.0 > own + 1.0,
        "the run took longer than the cut model: {} ms",
        v.elapsed_ms
    );
    let lines = &v.lines;
    let first_cut = lines
        .iter()
        .position(|l| l.starts_with("error: provider preflight failed for model \"vllm/stall\""))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(lines[first_cut].ends_with(error), "{lines:#?}");
    assert_eq!(
        lines[lines.len() - 3..],
        [
            "error: provider preflight: the check pod's deadline came first",
            "  not checked: vllm/ok@b",
            "  not checked: vllm/ok@c",
        ],
        "{lines:#?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("ok@b") && l.starts_with("error: provider preflight failed")),
        "no failure block for a model never reached: {lines:#?}"
    );
}

/// Issue 12, item 16: with many models at once, some retried, some cut by the pod's deadline, each model's lines
/// come as `modelStarted`, its `try`s, then its `result`, whose tries are the ones streamed; `summary` is last.
#[tokio::test(flavor = "multi_thread")]
async fn each_model_s_events_are_in_order_however_the_models_interleave() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let behaviours = [
        "ok-delay-30",
        "rate-limited-1",
        "ok-delay-120",
        "rate-limited-then-stall",
        "missing",
        "ok",
        "rate-limited-2",
        "ok-delay-60",
    ];
    let models: Vec<Value> = (0..32)
        .map(|i| custom(&format!("{}@{i}", behaviours[i % behaviours.len()]), &base))
        .collect();
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 120, "concurrency": 12,
                      "models": models});
    let (run, ev) = run_with_budget(&spec, Duration::from_secs(4)).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(ev[0]["event"], "start");
    assert_eq!(ev.last().unwrap()["event"], "summary");
    assert_eq!(ev.iter().filter(|e| e["event"] == "summary").count(), 1);
    let v = verdict_of(&ev);
    let mut cut = 0;
    for index in 0..32 {
        let of_model: Vec<&Value> = ev.iter().filter(|e| e["index"] == index).collect();
        let kinds: Vec<&str> = of_model
            .iter()
            .map(|e| e["event"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds.iter().filter(|k| **k == "result").count(),
            1,
            "{index}: {kinds:?}"
        );
        assert_eq!(kinds.last(), Some(&"result"), "{index}: {kinds:?}");
        let streamed: Vec<jr2_probe::verdict::Try> = of_model
            .iter()
            .filter(|e| e["event"] == "try")
            .map(|e| serde_json::from_value(e["try"].clone()).unwrap())
            .collect();
        let result = &v.models[index];
        if result.outcome == Outcome::NotChecked {
            assert_eq!(kinds, ["result"], "{index}: never started");
            continue;
        }
        assert_eq!(kinds[0], "modelStarted", "{index}: {kinds:?}");
        assert!(
            kinds[1..kinds.len() - 1].iter().all(|k| *k == "try"),
            "{index}: {kinds:?}"
        );
        assert_eq!(
            streamed, result.tries,
            "{index}: the result's tries are the ones streamed"
        );
        if result.outcome == Outcome::Timeout {
            cut += 1;
        }
    }
    assert!(cut > 0, "the deadline cut some models: {:?}", v.models);
}

/// Issue 12, item 10: a custom model the plan gives no `maxTokens` is checked with what jr2 sends (maxTokens 0,
/// which pi sends as `max_completion_tokens: 1`; before: 1024), and its `length` error names the cause.
#[tokio::test(flavor = "multi_thread")]
async fn a_custom_model_without_max_tokens_asks_for_one_token_and_the_length_error_says_why() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let unset = |model: &str| json!({"model": format!("vllm/{model}"), "source": "custom", "baseUrl": base, "api": "openai-completions"});
    let mut set = unset("length@set");
    set["maxTokens"] = json!(4096);
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 10,
                      "models": [unset("length"), set]});
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            "/dev/null",
        ],
        &[("NODE_NAME", "worker-2")],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        fake.requests_for("length")[0].body["max_completion_tokens"],
        1
    );
    assert_eq!(
        fake.requests_for("length@set")[0].body["max_completion_tokens"],
        4096
    );
    let v: jr2_probe::verdict::Verdict =
        serde_json::from_value(events(&run.stdout).last().unwrap()["verdict"].clone()).unwrap();
    let hint = "  - harness.provider sets no maxTokens for length, so a Turn asks for 1 token: set maxTokens";
    let blocks: Vec<Vec<String>> = v
        .models
        .iter()
        .map(|m| jr2_probe::render::model_lines(m, &v.origin))
        .collect();
    assert_eq!(
        blocks[0].last().map(String::as_str),
        Some(hint),
        "{blocks:#?}"
    );
    assert_eq!(blocks[0].len(), 6, "{blocks:#?}");
    assert!(
        !blocks[1].iter().any(|l| l.contains("sets no maxTokens")),
        "{blocks:#?}"
    );
    assert!(v.lines.iter().any(|l| l == hint), "{:#?}", v.lines);
}

/// A Custodian without a readiness or startup probe lets the kubelet start the probe before it listens (issue 12,
/// item 19): the probe waits for its loopback proxy to listen instead of failing the model on a refused connection.
/// Here the proxy (a relay to the fake provider) starts listening only once the probe has said `start`.
#[tokio::test(flavor = "multi_thread")]
async fn the_probe_waits_for_a_loopback_proxy_that_does_not_listen_yet() {
    use tokio::io::AsyncBufReadExt;
    let fake = FakeProvider::start().await;
    let reserved = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = reserved.local_addr().unwrap().port();
    drop(reserved);
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 10, "maxTries": 1,
                      "models": [custom("ok", "http://vllm.invalid/v1")]});
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_jr2-probe"))
        .args(["run", "--spec-json", &spec.to_string()])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HTTP_PROXY", format!("http://127.0.0.1:{port}"))
        .env("NODE_USE_ENV_PROXY", "1")
        .env("JR2_PROVIDER_API_KEY", GOOD_KEY)
        .env("RUST_LOG", "jr2_probe=info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut log = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    // The probe's log says when its connection to the proxy was refused and it waits.
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), log.next_line())
            .await
            .expect("a log line")
            .unwrap();
        let Some(line) = line else {
            panic!("the probe did not wait for the proxy: {seen:#?}");
        };
        if line.contains("the loopback proxy does not listen yet") {
            break;
        }
        seen.push(line);
    }
    // Only now does the proxy listen.
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let upstream = fake.addr();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });
    let mut rest = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the probe ends within its timeout")
        .unwrap()
    {
        rest.push(line);
    }
    let status = child.wait().await.unwrap();
    let results: Vec<Value> = events(&rest.join("\n"))
        .into_iter()
        .filter(|e| e["event"] == "result")
        .collect();
    assert_eq!(results.len(), 1, "{rest:#?}");
    assert_eq!(results[0]["result"]["outcome"], "ok", "{rest:#?}");
    assert_eq!(status.code(), Some(0));
    // One check, through the proxy, and the context check's `GET /v1/models` after it (issue 16).
    let posts = fake
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .count();
    assert_eq!(posts, 1, "one request, through the proxy");
}

/// Issue 36: the driver gives the Custodian no startup probe when the probe can ask its readiness endpoint
/// (`JR2_CUSTODIAN_READY`): the probe asks it (every 20 ms, where the kubelet asks every second at best) and sends
/// nothing to the provider until it answers 200.
#[tokio::test(flavor = "multi_thread")]
async fn the_probe_waits_for_the_custodian_s_readiness_endpoint() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let fake = FakeProvider::start().await;
    let health = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = health.local_addr().unwrap().port();
    let ready = Arc::new(AtomicBool::new(false));
    let (asked, answered_ok) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (r, a, ok) = (ready.clone(), asked.clone(), answered_ok.clone());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = health.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 1024];
            let n = conn.read(&mut buf).await.unwrap_or(0);
            let status = if !buf[..n].starts_with(b"GET /healthz HTTP/1.1\r\n") {
                "400 Bad Request"
            } else if r.load(Ordering::SeqCst) {
                ok.fetch_add(1, Ordering::SeqCst);
                "200 OK"
            } else {
                "503 Service Unavailable"
            };
            let _ = conn
                .write_all(format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n").as_bytes())
                .await;
        }
    });
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 10, "maxTries": 1,
                      "models": [custom("ok", &fake.base_url())]});
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_jr2-probe"))
        .args(["run", "--spec-json", &spec.to_string()])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("JR2_PROVIDER_API_KEY", GOOD_KEY)
        .env(
            "JR2_CUSTODIAN_READY",
            format!("http://127.0.0.1:{port}/healthz"),
        )
        .env("RUST_LOG", "jr2_probe=info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut log = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), log.next_line())
            .await
            .expect("a log line")
            .unwrap()
            .expect("the probe says it waits for the Custodian");
        if line.contains("the Custodian is not ready yet") {
            break;
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = log.next_line().await {} });
    // Still not ready a while later: asked again and again, nothing sent to the provider.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        asked.load(Ordering::SeqCst) >= 5,
        "asked {asked:?} times in 300 ms"
    );
    assert!(
        fake.requests().is_empty(),
        "nothing to the provider before the Custodian is ready"
    );
    ready.store(true, Ordering::SeqCst);
    let mut rest = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the probe ends within its timeout")
        .unwrap()
    {
        rest.push(line);
    }
    assert_eq!(child.wait().await.unwrap().code(), Some(0), "{rest:#?}");
    let results: Vec<Value> = events(&rest.join("\n"))
        .into_iter()
        .filter(|e| e["event"] == "result")
        .collect();
    assert_eq!(results.len(), 1, "{rest:#?}");
    assert_eq!(results[0]["result"]["outcome"], "ok", "{rest:#?}");
    assert_eq!(
        answered_ok.load(Ordering::SeqCst),
        1,
        "asked no more once ready"
    );
}

/// Issue 25, item 11: a named pipe as `--termination-log` that no one reads would block the probe's open forever;
/// it is not written, and the run ends with its verdict on stdout.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread")]
async fn a_pipe_as_the_termination_log_does_not_block_the_run() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let spec =
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [custom("ok", &base)]});
    let fifo = temp_path("termination-fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let run = tokio::time::timeout(
        Duration::from_secs(60),
        common::probe(
            &[
                "run",
                "--spec-json",
                &spec.to_string(),
                "--termination-log",
                &fifo.display().to_string(),
            ],
            &[],
        ),
    )
    .await
    .expect("the probe ends");
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(events(&run.stdout).last().unwrap()["event"], "summary");
    let _ = std::fs::remove_file(&fifo);
}

/// Both binaries end a clap error in one place (`jr2_probe::cli::usage_error`, issue 26, move 3): with no subcommand,
/// clap's help and exit 2 (the driver used to join the help into one garbled `error:` line).
#[test]
fn usage_errors_end_in_one_place() {
    jr2_testkit::cli::assert_usage_errors(env!("CARGO_BIN_EXE_jr2-probe"), "jr2-probe", "check");
}

/// Issue 38, item 5: a Harness env that holds the key (the Stand-in) and sets a proxy variable without
/// `NODE_USE_ENV_PROXY=1`: a Turn's fetch goes straight to the provider with the Stand-in as its key, around the
/// Custodian; so does the probe, and a warning line before the checks names the variable and what a Turn sends.
#[tokio::test(flavor = "multi_thread")]
async fn a_stand_in_that_goes_around_the_custodian_is_a_warning() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let spec =
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [custom("ok@a", &base)]});
    let stand_in = "jr2-held-JR2_PROVIDER_API_KEY";
    // The proxy is a port nothing listens on: the check reaches the fake only by going direct.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            "/dev/null",
        ],
        &[("JR2_PROVIDER_API_KEY", stand_in), ("HTTP_PROXY", &proxy)],
    )
    .await;
    let host = base
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_owned();
    let warning =
        jr2_probe::render::stand_in_bypass_warning("HTTP_PROXY", "vllm/ok@a", &host, stand_in);
    assert_eq!(
        run.lines().first().copied(),
        Some(warning.as_str()),
        "{}",
        run.stderr
    );
    let verdict = events(&run.stdout)
        .into_iter()
        .find(|e| e["event"] == "summary")
        .expect("a summary event");
    assert_eq!(verdict["verdict"]["lines"][0], warning.as_str());
    // Direct, as a Turn: the fake got the request, with the Stand-in as its key.
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.header("authorization") == Some(format!("Bearer {stand_in}").as_str())),
        "{:?}",
        fake.requests()
    );
    // With NODE_USE_ENV_PROXY=1 the route is the proxy's, and no warning: proxy.rs's the_variable_a_turn_skips_is_named.
}
