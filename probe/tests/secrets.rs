//! No leaks: every scenario of the probe that can run here, with one known key value, and the value asserted absent
//! from everything the probe writes: stdout (the verdict of `--output json`, pod mode's JSON lines), stderr (the
//! lines, and the logs at `RUST_LOG=debug`), and pod mode's termination message.
//!
//! The servers try hard to make it leak: the fakes echo the key in 401 bodies, an echoing handler puts every request
//! header (and the path) in its 401, its 429 and an error event inside a 200 stream, for every API kind; the chaos
//! server echoes it in a redirect's `Location` and a garbage stream; a gateway redirects to another origin (another
//! port, plain HTTP, the same port in plain HTTP) to catch the key header there; a proxy echoes its own password and
//! `Proxy-Authorization` token in its 407. The key is not `sk-`-shaped, so only the probe's knowledge of the key it
//! holds can hide it.
//!
//! Every connection goes to 127.0.0.1.

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::probe;
use jr2_testkit::chaos::{Chaos, ChaosServer};
use jr2_testkit::http::{Recorded, full};
use jr2_testkit::provider::openai_completions::handler as openai_handler;
use jr2_testkit::provider::{FakeProvider, Handler, json_error, stream};
use jr2_testkit::redirect::RedirectServer;
use jr2_testkit::tls::TestCa;
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
                ("NODE_USE_ENV_PROXY", "1"),
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

    // A key from a file with a final newline (and stray spaces) is what a Turn sends: fetch strips leading and trailing
    // HTTP whitespace from a header value, so the probe does too, and the header carries the key alone (issue 27,
    // item 9; before, exit 1 "a character a header cannot carry").
    let fake = FakeProvider::start().await;
    for pasted in [format!("{KEY}\n"), format!(" \t{KEY}\r\n")] {
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
        assert_eq!(run.code, 0, "{pasted:?}: {}", run.stderr);
        assert_clean(
            "a key with a final newline",
            &[("stdout", &run.stdout), ("stderr", &run.stderr)],
        );
    }
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .filter_map(|r| {
            r.headers
                .iter()
                .find(|(n, _)| n == "authorization")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(sent, [format!("Bearer {KEY}"), format!("Bearer {KEY}")]);
    // A line break inside the key is what fetch refuses too: said so, without the value.
    let pasted = format!("{KEY}\nsecond-line");
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

/// Every key header the probe sends, and a run that sends it: the API kind's flags (a custom endpoint with
/// `--api-key-env`, or a catalog model through `--gateway` with its provider's variable).
struct KeyRun {
    header: &'static str,
    api: &'static str,
    /// A catalog model through `--gateway`, and its key variable; None: `--base-url` with `--api` and `KEY_ENV`.
    catalog: Option<(&'static str, &'static str)>,
}

const KEY_RUNS: &[KeyRun] = &[
    KeyRun {
        header: "authorization",
        api: "openai-completions",
        catalog: None,
    },
    KeyRun {
        header: "x-api-key",
        api: "anthropic-messages",
        catalog: None,
    },
    KeyRun {
        header: "authorization",
        api: "openai-responses",
        catalog: None,
    },
    KeyRun {
        header: "api-key",
        api: "azure-openai-responses",
        catalog: None,
    },
    KeyRun {
        header: "x-goog-api-key",
        api: "google-generative-ai",
        catalog: None,
    },
    KeyRun {
        header: "x-goog-api-key",
        api: "google-vertex",
        catalog: None,
    },
    KeyRun {
        header: "authorization",
        api: "mistral-conversations",
        catalog: None,
    },
    KeyRun {
        header: "authorization",
        api: "bedrock-converse-stream",
        catalog: None,
    },
    KeyRun {
        header: "cf-aig-authorization",
        api: "anthropic-messages",
        catalog: Some((
            "cloudflare-ai-gateway/claude-3-5-haiku",
            "CLOUDFLARE_API_KEY",
        )),
    },
    KeyRun {
        header: "cf-aig-authorization",
        api: "openai-responses",
        catalog: Some(("cloudflare-ai-gateway/gpt-4o-mini", "CLOUDFLARE_API_KEY")),
    },
    KeyRun {
        header: "cf-aig-authorization",
        api: "openai-completions",
        catalog: Some((
            "cloudflare-ai-gateway/workers-ai/@cf/moonshotai/kimi-k2.5",
            "CLOUDFLARE_API_KEY",
        )),
    },
];

/// The password of the redirect target that carries userinfo, and of the proxy.
const REDIRECT_PASS: &str = "jr2-redirect-pass-91c04e7a";
const PROXY_PASS: &str = "jr2-proxy-pass-4c1e9b70d2";

/// The gateway's redirects, chosen by the base URL's first two path segments, `/<script>/<status>/...`:
/// `to-b-https` and `to-b-http` send to the other server `b` (another port), `downgrade` to the same host and port in
/// plain HTTP, `same` to a path of its own (relative), `userinfo` to itself with a password in the URL; `/landed/...`
/// answers as the OpenAI-compatible fake.
fn redirector(b: std::net::SocketAddr) -> Handler {
    let landed = openai_handler();
    Arc::new(move |req: Recorded, n: u32| {
        let landed = landed.clone();
        Box::pin(async move {
            let mut parts = req.path.splitn(4, '/').skip(1);
            let script = parts.next().unwrap_or("").to_owned();
            let status: u16 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(307);
            let rest = parts.next().unwrap_or("").to_owned();
            let host = req.header("host").unwrap_or("").to_owned();
            let location = match script.as_str() {
                "landed" => return landed(req, n).await,
                "to-b-https" => format!("https://{b}/landed/{rest}"),
                "to-b-http" => format!("http://{b}/landed/{rest}"),
                "downgrade" => format!("http://{host}/landed/{rest}"),
                "same" => format!("/landed/{rest}"),
                "userinfo" => format!("http://u:{REDIRECT_PASS}@{host}/userinfo/{status}/{rest}"),
                _ => return json_error(StatusCode::NOT_FOUND, json!({"detail": "Not Found"})),
            };
            let mut r = full(
                StatusCode::from_u16(status).expect("a status"),
                "text/plain",
                "",
            );
            r.headers_mut()
                .insert("location", location.parse().expect("a header value"));
            r
        })
    })
}

/// The args and env of a run of `key_run` against `base`.
fn key_run_args(
    key_run: &KeyRun,
    base: &str,
    ca_file: &str,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut args: Vec<String> = vec!["check".into()];
    let mut envs = vec![("RUST_LOG".to_owned(), "trace".to_owned())];
    match key_run.catalog {
        Some((model, env)) => {
            args.extend([
                "--model".into(),
                model.into(),
                "--gateway".into(),
                base.into(),
            ]);
            envs.push((env.to_owned(), KEY.to_owned()));
        }
        None => {
            args.extend([
                "--base-url".into(),
                base.into(),
                "--api".into(),
                key_run.api.into(),
                "--model".into(),
                "m".into(),
                "--api-key-env".into(),
                KEY_ENV.into(),
            ]);
            envs.push((KEY_ENV.to_owned(), KEY.to_owned()));
        }
    }
    args.extend(
        [
            "--ca-bundle",
            ca_file,
            "--timeout",
            "5s",
            "--max-tries",
            "1",
            "-o",
            "json",
        ]
        .map(String::from),
    );
    (args, envs)
}

async fn probe_owned(args: &[String], envs: &[(String, String)]) -> common::Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    probe(&args, &envs).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_to_another_origin_never_carries_a_key_header() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let ca_file = ca.ca_file.to_str().unwrap().to_owned();
    // `b` records whatever reaches it, in TLS or in plain HTTP.
    let b = RedirectServer::start(Some(&ca), openai_handler()).await;
    let a = RedirectServer::start(Some(&ca), redirector(b.addr())).await;
    let statuses = [301u16, 302, 303, 307, 308];
    let mut runs = 0;
    for (i, key_run) in KEY_RUNS.iter().enumerate() {
        for (j, script) in ["to-b-https", "to-b-http", "downgrade"]
            .into_iter()
            .enumerate()
        {
            let status = statuses[(i + j) % statuses.len()];
            let base = format!("https://{}/{script}/{status}/v1", a.addr());
            let (args, envs) = key_run_args(key_run, &base, &ca_file);
            let before = a.arrivals().len();
            let run = probe_owned(&args, &envs).await;
            runs += 1;
            let scenario = format!(
                "{} ({}) redirected by {status} ({script})",
                key_run.api, key_run.header
            );
            assert_clean(
                &scenario,
                &[("stdout", &run.stdout), ("stderr", &run.stderr)],
            );
            assert_eq!(run.code, 1, "{scenario}: {}", run.stderr);
            // The gateway got the key in the header under test: the test had something to catch.
            let sent = &a.arrivals()[before..];
            assert!(
                sent.iter().any(|r| r.scheme == "https"
                    && r.request
                        .header(key_run.header)
                        .is_some_and(|v| v.contains(KEY))),
                "{scenario}: the gateway never got the key in {}: {sent:?}",
                key_run.header
            );
            // The other origin got nothing at all; the gateway's port got nothing in plain HTTP.
            assert!(
                b.arrivals().is_empty(),
                "{scenario}: reached the other origin: {:?}",
                b.arrivals()
            );
            assert!(
                a.arrivals().iter().all(|r| r.scheme == "https"),
                "{scenario}: a request in plain HTTP: {:?}",
                a.arrivals()
            );
            let v = run.verdict();
            let m = &v.models[0];
            let to = match script {
                "downgrade" => a.addr().to_string(),
                _ => b.addr().to_string(),
            };
            assert_eq!(m.outcome.as_str(), "http", "{scenario}: {m:?}");
            assert_eq!(
                m.code.as_str(),
                "PROVIDER_CROSS_ORIGIN_REDIRECT",
                "{scenario}"
            );
            assert_eq!(m.http_status, Some(status), "{scenario}");
            assert_eq!(
                m.error.as_deref(),
                Some(format!("HTTP {status}: redirected to {to}").as_str()),
                "{scenario}"
            );
        }
    }
    assert_eq!(runs, KEY_RUNS.len() * 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_same_origin_redirect_is_still_followed() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let ca_file = ca.ca_file.to_str().unwrap().to_owned();
    let b = RedirectServer::start(None, openai_handler()).await;
    let a = RedirectServer::start(Some(&ca), redirector(b.addr())).await;
    for status in [307, 308] {
        let base = format!("https://{}/same/{status}/v1", a.addr());
        let run = probe(
            &[
                "check",
                "--base-url",
                &base,
                "--model",
                "ok",
                "--api-key-env",
                KEY_ENV,
                "--ca-bundle",
                &ca_file,
                "-o",
                "json",
            ],
            &[(KEY_ENV, KEY)],
        )
        .await;
        assert_eq!(run.code, 0, "{status}: {}", run.stderr);
        assert_eq!(run.verdict().models[0].outcome.as_str(), "ok");
    }
    let landed: Vec<_> = a
        .arrivals()
        .into_iter()
        .filter(|r| r.request.path.starts_with("/landed/"))
        .collect();
    // Each run: the check's POST, then the metadata GET of the context check (`/v1/models`), both redirected on
    // the same origin and both with the key.
    let posts = landed.iter().filter(|r| r.request.method == "POST").count();
    let gets: Vec<_> = landed
        .iter()
        .filter(|r| r.request.method == "GET")
        .map(|r| r.request.path.as_str())
        .collect();
    assert_eq!(posts, 2, "{landed:?}");
    assert_eq!(
        gets,
        ["/landed/v1/models", "/landed/v1/models"],
        "{landed:?}"
    );
    assert!(
        landed
            .iter()
            .all(|r| r.request.header("authorization") == Some(&format!("Bearer {KEY}")))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_target_s_password_reaches_no_line_and_no_trace() {
    // Plain HTTP, so the redirect goes to the same origin but for the password it puts in the URL.
    let b = RedirectServer::start(None, openai_handler()).await;
    let a = RedirectServer::start(None, redirector(b.addr())).await;
    let base = format!("http://{}/userinfo/307/v1", a.addr());
    for output in ["human", "json"] {
        let run = probe(
            &[
                "check",
                "--base-url",
                &base,
                "--model",
                "m",
                "--api-key-env",
                KEY_ENV,
                "--timeout",
                "5s",
                "-o",
                output,
            ],
            &[(KEY_ENV, KEY), ("RUST_LOG", "trace")],
        )
        .await;
        assert_eq!(run.code, 1, "{}", run.stderr);
        for text in [&run.stdout, &run.stderr] {
            assert!(
                !text.contains(REDIRECT_PASS),
                "the redirect's password is out:\n{text}"
            );
            assert!(!text.contains(KEY), "the key is out:\n{text}");
        }
        assert!(
            run.stderr
                .contains(&format!("HTTP 307: redirected to {}", a.addr())),
            "{}",
            run.stderr
        );
    }
    // Never followed: the URL with the password was not requested.
    assert_eq!(a.arrivals().len(), 2, "{:?}", a.arrivals());
}

/// RFC 4648 base64, for the `Basic` token a proxy gets.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_echoes_its_credentials_in_a_407_shows_none_of_them() {
    let token = base64(format!("user:{PROXY_PASS}").as_bytes());
    // A forward proxy (the target is plain HTTP, so the request itself goes to the proxy) that refuses with a 407
    // repeating the `Proxy-Authorization` it got and the credentials it decoded.
    let proxy = FakeProvider::start_with(
        Arc::new(|req: Recorded, _| {
            Box::pin(async move {
                let auth = req.header("proxy-authorization").unwrap_or("none").to_owned();
                let mut r = json_error(
                    StatusCode::PROXY_AUTHENTICATION_REQUIRED,
                    json!({"error": {"message": format!("proxy authentication failed: {auth} (user:{PROXY_PASS})")}}),
                );
                r.headers_mut().insert("proxy-authenticate", "Basic realm=\"jr2\"".parse().expect("a header value"));
                r
            })
        }),
        None,
    )
    .await;
    let proxy_url = format!("http://user:{PROXY_PASS}@{}", proxy.addr());
    for (output, log) in [("human", "trace"), ("json", "trace")] {
        let run = probe(
            &[
                "check",
                "--base-url",
                // A name that never resolves: the request goes to the proxy on loopback; were the proxy bypassed, no address
                // would be dialed.
                "http://upstream.invalid:8000/v1",
                "--model",
                "m",
                "--api-key-env",
                KEY_ENV,
                "--timeout",
                "5s",
                "--max-tries",
                "1",
                "-o",
                output,
            ],
            &[
                (KEY_ENV, KEY),
                ("HTTP_PROXY", &proxy_url),
                ("NO_PROXY", ""),
                ("NODE_USE_ENV_PROXY", "1"),
                ("RUST_LOG", log),
            ],
        )
        .await;
        assert_eq!(run.code, 1, "{}", run.stderr);
        for (what, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains(PROXY_PASS),
                "the proxy's password is in {what}:\n{text}"
            );
            assert!(
                !text.contains(&token),
                "the proxy's Basic token is in {what}:\n{text}"
            );
            assert!(!text.contains(KEY), "the key is in {what}:\n{text}");
        }
        assert!(
            run.stderr.contains(
                "HTTP 407: proxy authentication failed: Basic [redacted] (user:[redacted])"
            ),
            "{}",
            run.stderr
        );
    }
    // The proxy did get the token: the test had something to catch.
    assert!(
        proxy
            .requests()
            .iter()
            .all(|r| r.header("proxy-authorization") == Some(&format!("Basic {token}")))
    );
    assert_eq!(proxy.requests().len(), 2);
}

/// A handler whose 200 streams `key` back as the answer text, 10 characters per delta, then stops normally.
fn split_key_handler(key: String) -> Handler {
    Arc::new(move |_req: Recorded, _try_n: u32| {
        let key = key.clone();
        Box::pin(async move {
            let chunk = |delta: serde_json::Value, finish: Option<&str>| {
                let c = json!({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                format!("data: {c}\n\n")
            };
            let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
            let chars: Vec<char> = key.chars().collect();
            for piece in chars.chunks(10) {
                events.push(chunk(
                    json!({"content": piece.iter().collect::<String>()}),
                    None,
                ));
            }
            events.push(chunk(json!({}), Some("stop")));
            events.push("data: [DONE]\n\n".to_owned());
            stream(events, Duration::ZERO, false)
        })
    })
}

/// A long key (a Bedrock short-term key is over 1 KB) echoed as the text answer, split over many deltas: no part of
/// it reaches the `answer` or a line, whether the whole key fits what the probe keeps of an answer (500 and 5,000
/// characters) or not (20,000: the kept text ends in the start of the key, which is masked at the cut).
#[tokio::test(flavor = "multi_thread")]
async fn a_long_key_split_over_text_deltas_leaves_no_part_in_the_answer() {
    for len in [500usize, 5_000, 20_000] {
        let key: String = (0..len)
            .map(|i| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[i * 7 % 36]))
            .collect();
        let fake = FakeProvider::start_with(split_key_handler(key.clone()), None).await;
        let base = fake.base_url();
        let run = probe(
            &[
                "check",
                "--base-url",
                &base,
                "--model",
                "m",
                "--api-key-env",
                "JR2_LONG_KEY",
                "-o",
                "json",
            ],
            &[("JR2_LONG_KEY", &key)],
        )
        .await;
        assert_eq!(run.code, 0, "{len}: {}", run.stderr);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("a verdict");
        let answer = v["models"][0]["answer"].as_str().expect("an answer");
        assert!(answer.starts_with("[redacted]"), "{len}: {answer}");
        // No 16 characters of the key in a row, anywhere (the shortest sample that is surely the key's).
        for output in [&run.stdout, &run.stderr] {
            for at in (0..len - 16).step_by(7) {
                assert!(
                    !output.contains(&key[at..at + 16]),
                    "{len}: the key's characters {at}.. are in the output:\n{output}"
                );
            }
        }
    }
}

/// Bad input that holds a secret never repeats it (issue 11, item 3): a password in an unparseable, a wrong-scheme or
/// a scheme-less `--base-url` or `--gateway`, in a run spec's `baseUrl`, in `AZURE_OPENAI_BASE_URL`; a pasted key in
/// place of `--api-key-env`'s name; a query that may hold a key. And no URL the probe takes may carry credentials:
/// `AZURE_OPENAI_BASE_URL` with a user and password is bad input, not a base URL shown in the JSON.
#[tokio::test(flavor = "multi_thread")]
async fn bad_input_that_holds_a_secret_never_repeats_it() {
    let secret = "SECRETpw0123456789";
    let pasted = "sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd";
    let run_spec = |base: &str| {
        json!({"schema": "jr2.dev/provider-preflight-run/v1",
               "models": [{"model": "vllm/m", "source": "custom", "baseUrl": base}]})
        .to_string()
    };
    let bad_bases = [
        format!("http://u:{secret}@host:80800/v1"),
        format!("ftp://u:{secret}@host/v1"),
        format!("u:{secret}@host/v1"),
        format!("http://host/v1?key={secret}"),
        format!("http://u:{secret}@[::1/v1"),
    ];
    // Each case: the probe's arguments, and the environment it runs with.
    type Case = (Vec<String>, Vec<(String, String)>);
    let mut cases: Vec<Case> = Vec::new();
    for base in &bad_bases {
        cases.push((
            ["check", "--base-url", base, "--model", "m"]
                .map(String::from)
                .to_vec(),
            vec![],
        ));
        cases.push((
            [
                "check",
                "--gateway",
                base,
                "--model",
                "anthropic/claude-haiku-4-5",
            ]
            .map(String::from)
            .to_vec(),
            vec![],
        ));
        cases.push((
            [
                "run",
                "--spec-json",
                &run_spec(base),
                "--termination-log",
                "/dev/null",
            ]
            .map(String::from)
            .to_vec(),
            vec![],
        ));
    }
    cases.push((
        [
            "check",
            "--base-url",
            "http://h/v1",
            "--model",
            "m",
            "--api-key-env",
            pasted,
        ]
        .map(String::from)
        .to_vec(),
        vec![],
    ));
    for azure in [
        format!("https://u:{secret}@res.openai.azure.com/openai/v1"),
        format!("https://u:{secret}@res.openai.azure.com:99999/openai/v1"),
    ] {
        cases.push((
            [
                "check",
                "--model",
                "azure-openai-responses/gpt-4.1-mini",
                "-o",
                "json",
            ]
            .map(String::from)
            .to_vec(),
            vec![
                ("AZURE_OPENAI_BASE_URL".to_owned(), azure),
                (
                    "AZURE_OPENAI_API_KEY".to_owned(),
                    "jr2-azure-key-0123456789".to_owned(),
                ),
            ],
        ));
    }
    for (args, envs) in cases {
        let run = probe_owned(&args, &envs).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.lines().len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
        for shown in [&run.stderr, &run.stdout] {
            assert!(
                !shown.contains(secret) && !shown.contains(&pasted[10..]),
                "{args:?} {envs:?}: a secret is repeated: {shown}"
            );
        }
    }
}

/// A held key inside a base URL's path (a gateway that takes it there) is masked in the JSON `baseUrl` and the lines.
#[tokio::test(flavor = "multi_thread")]
async fn a_held_key_in_a_base_url_path_is_masked_in_the_verdict() {
    let fake = FakeProvider::start().await;
    let base = format!("{}/{KEY}", fake.base_url().trim_end_matches('/'));
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "ok",
            "--api-key-env",
            KEY_ENV,
            "-o",
            "json",
        ],
        &[(KEY_ENV, KEY)],
    )
    .await;
    assert_clean(
        "a key in the base URL's path",
        &[("stdout", &run.stdout), ("stderr", &run.stderr)],
    );
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("a verdict");
    assert!(
        v["models"][0]["baseUrl"]
            .as_str()
            .unwrap()
            .ends_with("/[redacted]"),
        "{}",
        v["models"][0]["baseUrl"]
    );
}

/// A handler whose every answer is a 401 that echoes the key the request carried as `shape` words it: split in groups
/// of 4 (a key shown grouped), wrapped over two lines, or each character a JSON `\uXXXX` escape in a body that is
/// not JSON (a gateway that shows an upstream's raw body as text).
fn mangled_echo_handler(shape: &'static str) -> Handler {
    Arc::new(move |req: Recorded, _try_n: u32| {
        Box::pin(async move {
            let header = req.header("authorization").unwrap_or_default();
            let key = header.trim_start_matches("Bearer ").to_owned();
            let chars: Vec<char> = key.chars().collect();
            let echoed = match shape {
                "grouped" => chars
                    .chunks(4)
                    .map(|g| g.iter().collect::<String>())
                    .collect::<Vec<_>>()
                    .join(" "),
                "wrapped" => format!("{}\n  {}", &key[..12], &key[12..]),
                _ => chars
                    .iter()
                    .map(|c| format!("\\u{:04x}", *c as u32))
                    .collect(),
            };
            if shape == "escaped" {
                full(
                    StatusCode::UNAUTHORIZED,
                    "text/plain",
                    format!("upstream said: {{\"error\":\"bad key {echoed}\"}}"),
                )
            } else {
                json_error(
                    StatusCode::UNAUTHORIZED,
                    json!({"error": {"message": format!("Incorrect API key provided: {echoed}"), "code": "invalid_api_key"}}),
                )
            }
        })
    })
}

/// Issue 25, item 10: a provider that echoes the held key split by spaces, wrapped, or `\u`-escaped: no line, no JSON
/// field and no debug log shows it in any of those forms, and the 401's line is still the key's.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_echoed_grouped_wrapped_or_escaped_is_never_shown() {
    let escaped: String = KEY
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let grouped: Vec<String> = KEY
        .chars()
        .collect::<Vec<_>>()
        .chunks(4)
        .map(|g| g.iter().collect())
        .collect();
    for shape in ["grouped", "wrapped", "escaped"] {
        let fake = FakeProvider::start_with(mangled_echo_handler(shape), None).await;
        let base = fake.base_url();
        for output in ["human", "json"] {
            let run = probe(
                &[
                    "check",
                    "--base-url",
                    &base,
                    "--model",
                    "m",
                    "--api-key-env",
                    KEY_ENV,
                    "-o",
                    output,
                ],
                &[(KEY_ENV, KEY), ("RUST_LOG", "jr2_probe=debug")],
            )
            .await;
            assert_eq!(run.code, 1, "{shape}/{output}: {}", run.stderr);
            // The server did echo the key: the test had something to catch.
            assert!(
                run.stdout.contains("Incorrect API key")
                    || run.stderr.contains("Incorrect API key")
                    || run.stdout.contains("bad key")
                    || run.stderr.contains("bad key"),
                "{shape}/{output}: {}{}",
                run.stdout,
                run.stderr
            );
            for (what, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
                let joined: String = text.chars().filter(|c| !c.is_whitespace()).collect();
                assert!(
                    !joined.contains(KEY),
                    "{shape}/{output}: the key is in {what}:\n{text}"
                );
                assert!(
                    !text.contains(&escaped[..60]),
                    "{shape}/{output}: the escaped key is in {what}:\n{text}"
                );
                // Not even a group of it that only the key holds.
                for group in grouped.iter().skip(1).filter(|g| g.len() == 4) {
                    assert!(
                        !text.contains(&format!(" {group} ")),
                        "{shape}/{output}: {group} in {what}:\n{text}"
                    );
                }
            }
        }
    }
}
