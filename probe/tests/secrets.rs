//! No leaks: every scenario of the probe that can run here, with one known key value, and the value asserted absent
//! from everything the probe writes: stdout (the verdict of `--output json`, pod mode's JSON lines), stderr (the
//! lines, and the logs at `RUST_LOG=debug`), and pod mode's termination message.
//!
//! The servers try hard to make it leak: the fakes echo the key in 401 bodies, an echoing handler puts every request
//! header (and the path) in its 401, its 429 and an error event inside a 200 stream, for every API kind; the chaos
//! server echoes it in a redirect's `Location` and a garbage stream. The key is not `sk-`-shaped, so only the probe's
//! knowledge of the key it holds can hide it.
//!
//! Every connection goes to 127.0.0.1.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::probe;
use jr2_testkit::chaos::{Chaos, ChaosServer};
use jr2_testkit::fake_provider::{FakeProvider, Handler, Recorded, TestCa, json_error, stream};
use reqwest::StatusCode;
use serde_json::json;

/// The key of every scenario.
const KEY: &str = "jr2-known-secret-6d2f8a41c09e7b35";
const KEY_ENV: &str = "JR2_PROVIDER_API_KEY";

/// Fails, naming where, when the key appears in any of `outputs`.
fn assert_clean(scenario: &str, outputs: &[(&str, &str)]) {
    for (what, text) in outputs {
        assert!(
            !text.contains(KEY),
            "{scenario}: the key is in {what}:\n{text}"
        );
    }
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "jr2-secrets-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

/// Every behaviour of the OpenAI-compatible fake.
const FAKE_MODELS: &[&str] = &[
    "ok",
    "text",
    "empty-text",
    "length",
    "error-after-200",
    "overloaded-after-200",
    "vllm-no-parser",
    "missing",
    "auth",
    "echo-key",
    "rate-limited",
    "rate-limited-1",
    "quota",
    "overloaded",
    "unavailable",
    "retry-after-huge",
    "retry-after-date",
    "stall",
    "stall-mid-stream",
    "html-502",
    "json-200",
    "garbage",
    "truncated",
    "finish-error",
    "no-newline-2000000",
];

#[tokio::test(flavor = "multi_thread")]
async fn check_against_every_behaviour_of_the_fake_human_json_and_debug_logs() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    for (output, log) in [("human", None), ("json", None), ("json", Some("debug"))] {
        let mut args = vec![
            "check",
            "--base-url",
            base.as_str(),
            "--api-key-env",
            KEY_ENV,
            "--timeout",
            "2s",
            "--max-tries",
            "2",
            "--concurrency",
            "32",
            "-o",
            output,
        ];
        for m in FAKE_MODELS {
            args.extend(["--model", m]);
        }
        let mut envs = vec![(KEY_ENV, KEY)];
        if let Some(level) = log {
            envs.push(("RUST_LOG", level));
        }
        let run = probe(&args, &envs).await;
        assert_eq!(run.code, 1, "{}", run.stderr);
        let scenario = format!("check -o {output} RUST_LOG={log:?}");
        assert_clean(
            &scenario,
            &[("stdout", &run.stdout), ("stderr", &run.stderr)],
        );
        if output == "json" {
            let v = run.verdict();
            assert_eq!(v.models.len(), FAKE_MODELS.len());
        }
    }
    // The key was sent, and echoed back: the test had something to catch.
    let echo = fake.requests_for("echo-key");
    assert!(echo[0].header("authorization").unwrap().contains(KEY));
}

/// A handler that echoes every request header and the path into its answers: a 401 for `echo-401`, a 429
/// (`retry-after: 0`) for `echo-429`, and for `echo-stream` a 200 stream whose error event carries them (as an SSE
/// `event: error` with an `error` member, which every SSE reader takes for an error).
fn echo_handler() -> Handler {
    Arc::new(|req: Recorded, _try_n: u32| {
        Box::pin(async move {
            // The headers that carry keys first, so the echo sits inside the 300 characters an <error> keeps.
            let carries_key = |k: &str| {
                matches!(
                    k,
                    "authorization" | "x-api-key" | "api-key" | "x-goog-api-key"
                )
            };
            let (first, rest): (Vec<_>, Vec<_>) =
                req.headers.iter().partition(|(k, _)| carries_key(k));
            let echo = format!(
                "{} path={} {}",
                first
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                req.path,
                rest.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            let which = format!("{} {}", req.path, req.body["model"].as_str().unwrap_or(""));
            if which.contains("echo-429") {
                let mut r = json_error(
                    StatusCode::TOO_MANY_REQUESTS,
                    json!({"error": {"message": format!("slow down: {echo}"), "type": "rate_limit_error"}}),
                );
                r.headers_mut()
                    .insert("retry-after", "0".parse().expect("a header value"));
                return r;
            }
            if which.contains("echo-stream") {
                let error = json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("bad request: {echo}")}});
                return stream(
                    vec![format!("event: error\ndata: {error}\n\n")],
                    Duration::ZERO,
                    false,
                );
            }
            json_error(
                StatusCode::UNAUTHORIZED,
                json!({"error": {"message": format!("Incorrect API key provided: {echo}"), "type": "invalid_request_error", "code": "invalid_api_key"}}),
            )
        })
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn every_api_kind_against_a_server_that_echoes_every_header() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let fake = FakeProvider::start_with(echo_handler(), Some(&ca)).await;
    let base = fake.base_url();
    let ca_file = ca.ca_file.to_str().unwrap().to_owned();
    for api in [
        "openai-completions",
        "anthropic-messages",
        "openai-responses",
        "azure-openai-responses",
        "google-generative-ai",
        "google-vertex",
        "mistral-conversations",
        "bedrock-converse-stream",
    ] {
        let run = probe(
            &[
                "check",
                "--base-url",
                &base,
                "--api",
                api,
                "--model",
                "echo-401",
                "--model",
                "echo-429",
                "--model",
                "echo-stream",
                "--api-key-env",
                KEY_ENV,
                "--ca-bundle",
                &ca_file,
                "--timeout",
                "3s",
                "--max-tries",
                "2",
                "-o",
                "json",
            ],
            &[(KEY_ENV, KEY), ("RUST_LOG", "debug")],
        )
        .await;
        assert_clean(api, &[("stdout", &run.stdout), ("stderr", &run.stderr)]);
        assert_eq!(run.code, 1, "{api}: {}", run.stderr);
        // The echo reached the lines, redacted: the test had something to catch.
        if api != "azure-openai-responses" {
            assert!(run.stderr.contains("[redacted]"), "{api}: {}", run.stderr);
        }
    }
    // Catalog models by hand through a harness.catalog gateway (the echoing fake), each key in its provider's variable.
    let gateway = format!("https://{}", fake.addr());
    for (model, env) in [
        ("anthropic/claude-haiku-4-5", "ANTHROPIC_API_KEY"),
        ("openai/gpt-5-mini", "OPENAI_API_KEY"),
        ("google/gemini-2.5-flash", "GEMINI_API_KEY"),
    ] {
        for output in ["human", "json"] {
            let run = probe(
                &[
                    "check",
                    "--model",
                    model,
                    "--gateway",
                    &gateway,
                    "--ca-bundle",
                    &ca_file,
                    "--timeout",
                    "3s",
                    "--max-tries",
                    "1",
                    "-o",
                    output,
                ],
                &[(env, KEY), ("RUST_LOG", "debug")],
            )
            .await;
            assert_clean(
                &format!("{model} through a gateway, -o {output}"),
                &[("stdout", &run.stdout), ("stderr", &run.stderr)],
            );
            assert_eq!(run.code, 1, "{model}: {}", run.stderr);
        }
    }
    // The key was sent in some header to every kind but those that could not build a request, and echoed back.
    let sent = fake
        .requests()
        .iter()
        .filter(|r| r.headers.iter().any(|(_, v)| v.contains(KEY)))
        .count();
    assert!(sent >= 7 * 3, "{sent} requests carried the key");
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_mode_json_lines_and_the_termination_message() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let ca = TestCa::new(&["127.0.0.1"]);
    let echo = FakeProvider::start_with(echo_handler(), Some(&ca)).await;
    let gateway = format!("https://{}", echo.addr());
    let custom = |model: &str| {
        json!({"model": format!("vllm/{model}"), "source": "custom", "baseUrl": base, "api": "openai-completions",
               "keyEnv": KEY_ENV, "keyHeld": true})
    };
    let mut models: Vec<serde_json::Value> = FAKE_MODELS.iter().map(|m| custom(m)).collect();
    // Catalog models through a harness.catalog gateway (the echoing fake): their keys are the catalog's variables.
    for (model, env) in [
        ("anthropic/claude-haiku-4-5", "ANTHROPIC_API_KEY"),
        ("openai/gpt-5-mini", "OPENAI_API_KEY"),
        ("google/gemini-2.5-flash", "GEMINI_API_KEY"),
    ] {
        models.push(
            json!({"model": model, "source": "gateway", "baseUrl": gateway, "keyEnv": env,
                           "keyHeld": true, "viaCustodian": false}),
        );
    }
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 2, "maxTries": 2,
                      "concurrency": 32, "models": models});
    // A deadline that cuts the run short too: the models still running then are timeout or not_checked.
    let deadline = (SystemTime::now() + Duration::from_secs(30))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string();
    let term = temp_path("termination");
    let run = probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
            "--ca-bundle",
            ca.ca_file.to_str().unwrap(),
        ],
        &[
            (KEY_ENV, KEY),
            ("ANTHROPIC_API_KEY", KEY),
            ("OPENAI_API_KEY", KEY),
            ("GEMINI_API_KEY", KEY),
            ("NODE_NAME", "worker-1"),
            ("JR2_PROBE_DEADLINE", &deadline),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;
    let message = std::fs::read_to_string(&term).expect("a termination message");
    let _ = std::fs::remove_file(&term);
    assert_clean(
        "run (pod mode)",
        &[
            ("stdout", &run.stdout),
            ("stderr", &run.stderr),
            ("the termination message", &message),
        ],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.lines().count() > models.len(),
        "JSON lines: {}",
        run.stdout
    );
    let gateway_requests = echo.requests();
    assert!(
        gateway_requests
            .iter()
            .all(|r| r.headers.iter().any(|(_, v)| v.contains(KEY))),
        "every gateway request carried the key"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_whose_deadline_cuts_the_run_writes_no_key() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let models: Vec<serde_json::Value> = ["echo-key", "stall", "stall", "stall", "echo-key"]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({"model": format!("vllm/{m}@{i}"), "source": "custom", "baseUrl": base,
                   "keyEnv": KEY_ENV, "keyHeld": true})
        })
        .collect();
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 60, "concurrency": 2,
                      "models": models});
    // The probe stops 3 s before the deadline: 5 s leaves it 2 s.
    let deadline = (SystemTime::now() + Duration::from_secs(5))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        .to_string();
    let term = temp_path("termination-cut");
    let run = probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
        ],
        &[(KEY_ENV, KEY), ("JR2_PROBE_DEADLINE", &deadline)],
    )
    .await;
    let message = std::fs::read_to_string(&term).expect("a termination message");
    let _ = std::fs::remove_file(&term);
    assert_clean(
        "run cut by its deadline",
        &[
            ("stdout", &run.stdout),
            ("stderr", &run.stderr),
            ("the termination message", &message),
        ],
    );
    assert_eq!(run.code, 1);
    assert!(
        message.contains("not_checked") || message.contains("timeout"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_framing_proxies_and_bad_input_write_no_key() {
    // The chaos server echoes the key in a redirect's Location (so in the URL of every later hop) and in garbage.
    for chaos in [Chaos::RedirectLoop, Chaos::GarbageSse, Chaos::InvalidUtf8] {
        let server = ChaosServer::start(chaos).await;
        let run = probe(
            &[
                "check",
                "--base-url",
                &server.base_url(),
                "--model",
                "m",
                "--api-key-env",
                KEY_ENV,
                "--timeout",
                "3s",
                "-o",
                "json",
            ],
            &[(KEY_ENV, KEY), ("RUST_LOG", "debug")],
        )
        .await;
        assert_clean(
            "a hostile endpoint",
            &[("stdout", &run.stdout), ("stderr", &run.stderr)],
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
    }

    // A proxy whose URL carries the key as its password, refusing the tunnel, then one that stalls it.
    for chaos in [Chaos::ProxyRefuse, Chaos::ProxyStall] {
        let proxy = ChaosServer::start(chaos).await;
        let proxy_url = format!("http://user:{KEY}@{}", proxy.addr());
        let run = probe(
            &[
                "check",
                "--base-url",
                "https://127.0.0.1:9/v1",
                "--model",
                "m",
                "--api-key-env",
                KEY_ENV,
                "--timeout",
                "2s",
                "-o",
                "json",
            ],
            &[
                (KEY_ENV, KEY),
                ("HTTPS_PROXY", &proxy_url),
                ("NO_PROXY", ""),
                ("RUST_LOG", "debug"),
            ],
        )
        .await;
        assert_clean(
            "a proxy with the key in its URL",
            &[("stdout", &run.stdout), ("stderr", &run.stderr)],
        );
        assert_eq!(run.code, 1, "{}", run.stderr);
    }

    // A key with a pasted newline cannot go in a header: said so, without the value.
    let fake = FakeProvider::start().await;
    let pasted = format!("{KEY}\n");
    let run = probe(
        &[
            "check",
            "--base-url",
            &fake.base_url(),
            "--model",
            "ok",
            "--api-key-env",
            KEY_ENV,
            "-o",
            "json",
        ],
        &[(KEY_ENV, &pasted)],
    )
    .await;
    assert_clean(
        "a key with a newline",
        &[("stdout", &run.stdout), ("stderr", &run.stderr)],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("a header cannot carry"),
        "{}",
        run.stderr
    );

    // Credentials in the base URL are bad input, and the message does not repeat them.
    let with_credentials = format!("http://user:{KEY}@{}/v1", fake.addr());
    let run = probe(
        &["check", "--base-url", &with_credentials, "--model", "ok"],
        &[],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_clean(
        "credentials in --base-url",
        &[("stdout", &run.stdout), ("stderr", &run.stderr)],
    );

    // The same in a run spec.
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [
        {"model": "vllm/ok", "source": "custom", "baseUrl": with_credentials}]});
    let term = temp_path("termination-bad");
    let run = probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    let message = std::fs::read_to_string(&term).unwrap_or_default();
    let _ = std::fs::remove_file(&term);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_clean(
        "credentials in a run spec's baseUrl",
        &[
            ("stdout", &run.stdout),
            ("stderr", &run.stderr),
            ("the termination message", &message),
        ],
    );
}
