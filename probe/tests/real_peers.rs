//! `jr2-probe check` against real third-party servers: llama.cpp's own `llama-server` (built from the llama.cpp tree
//! that the llama-cpp-python 0.3.36 sdist vendors, commit 0c1e570) running SmolLM2-135M, and a LiteLLM proxy in
//! front of it and of the fake provider. Installed by `tests/peers/install.sh`; each test starts its servers and stops
//! them when it ends.
//!
//! Each llama-server test asserts two things: what the probe says today (outcome, level, code, the contract's line),
//! and the facts the endpoint identification reads, from the real server in the same run (the `server:` header,
//! `GET /props` `chat_template_caps.supports_tools`, `GET /v1/models` `meta.n_ctx`, the error bodies). Those real
//! responses are kept under `tests/fixtures/llama-server/` (normalized: no timestamps, ids, timings or local paths)
//! and compared on every run, so the fakes of the endpoint tests can be checked against them; `JR2_WRITE_FIXTURES=1`
//! records them again. Each test has a marked `HINT (after the merge)` spot where the endpoint-specific hint line is
//! asserted.
//!
//! What these found, and the tests keep true:
//! - llama-server accepts pi's request of a Turn whole (the `developer` role, `store`, `stream_options`,
//!   `max_completion_tokens`); llama-cpp-python 0.3.36 refused the `developer` role with a 500.
//! - With SmolLM2's own template (no tools), jinja on, the server drops the tools from the prompt and the model
//!   answers in text; `/props` says `supports_tools: false`. With a template that renders the tools
//!   (`tests/peers/smollm2-tools.jinja`), the 135M model makes a real streamed tool call.
//! - `--no-jinja` refuses any request with tools: `HTTP 500: tools param requires --jinja flag`.
//! - An object `tool_choice` (the plan's `toolChoice: named`) is ignored with a log line, as `auto`.
//! - `-c` smaller than the plan's `contextWindow` passes the preflight; a Turn-sized prompt gets a 400.
//!
//! **Against a real Turn on the same server** (issue 27, items 5-10): the cases of those items run the probe and then
//! a real Turn, pi-agent-core 0.82.1's agent loop over pi-ai 0.82.1's model call (`tests/fidelity/turn.mjs`, under
//! Node), against the same server instance, and [`compare`] asserts that the probe's verdict and the Turn's outcome
//! agree, case by case, or that the case is one of [`ON_PURPOSE`], the differences the contract makes on purpose.
//! The Turn's packages are the fidelity step's (`tests/fidelity/package-lock.json`), installed here first when missing
//! (`JR2_FIDELITY_INSTALL_ONLY=1 tests/fidelity/run.sh`).
//!
//! **Ollama** (issue 38): v0.17.4 built from its Go module, SmolLM2 imported with `ollama create`; its rows (a TEMPLATE
//! without tools, an unknown model, a base URL without `/v1`, the passing tool call with the notes of what Ollama
//! drops, a context under the window, a `num_ctx` under the prompt, a held-back call, one busy slot), each beside a
//! real Turn on the same server (the section at the end of this file).

mod common;

use common::probe;
use jr2_probe::contract::endpoint::{Cause, ContextUnchecked, EndpointKind};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::render;
use jr2_testkit::peers::{
    LlamaServer, RawResponse, Server, llama_fixture, response_fixture, start_litellm,
};
use jr2_testkit::provider::FakeProvider;
use serde_json::{Value, json};

const LLAMA_KEY: &str = "sk-llama-test-key-0123456789";
const MASTER_KEY: &str = "sk-master-test-key-0123456789";

/// What changes between runs of the same server: dropped from the fixtures.
const VOLATILE: &[&str] = &[
    "created",
    "id",
    "system_fingerprint",
    "timings",
    "date",
    "t_start",
    "n_ctx_train_override",
    "media_marker",
];

async fn start(config: LlamaServer) -> Server {
    tokio::task::spawn_blocking(move || config.start())
        .await
        .expect("join")
}

async fn get(server: &Server, path: &str, key: Option<&str>) -> RawResponse {
    tokio::task::block_in_place(|| server.get(path, key))
}

async fn post(server: &Server, path: &str, key: Option<&str>, body: Value) -> RawResponse {
    tokio::task::block_in_place(|| server.post(path, key, &body))
}

/// `jr2-probe check --base-url <server> --model smollm2 -o json <extra>`, with the key in `K` when given.
async fn check(server: &Server, extra: &[&str], key: Option<&str>) -> common::Run {
    let base = server.base_url();
    let mut args = vec![
        "check",
        "--base-url",
        base.as_str(),
        "--model",
        "smollm2",
        "-o",
        "json",
    ];
    if key.is_some() {
        args.extend(["--api-key-env", "K"]);
    }
    args.extend(extra);
    let envs: Vec<(&str, &str)> = key.map(|k| ("K", k)).into_iter().collect();
    probe(&args, &envs).await
}

/// The facts of the metadata endpoints, asserted and kept as fixtures: `server:`, `/props`'s template caps, `/v1/models`'s
/// `meta.n_ctx`.
async fn server_facts(server: &Server, key: Option<&'static str>, name: &str) -> (bool, u64) {
    let props = get(server, "/props", key).await;
    assert_eq!(props.status, 200, "{}", props.body);
    assert_eq!(
        props.header("server"),
        Some("llama.cpp"),
        "{:?}",
        props.headers
    );
    let caps = props.json()["chat_template_caps"].clone();
    let supports_tools = caps["supports_tools"]
        .as_bool()
        .unwrap_or_else(|| panic!("no chat_template_caps.supports_tools in {}", props.body));
    let models = get(server, "/v1/models", key).await;
    assert_eq!(models.status, 200, "{}", models.body);
    assert_eq!(models.header("server"), Some("llama.cpp"));
    let n_ctx = models.json()["data"][0]["meta"]["n_ctx"]
        .as_u64()
        .unwrap_or_else(|| panic!("no data[0].meta.n_ctx in {}", models.body));
    llama_fixture(
        &format!("{name}.props.txt"),
        &response_fixture(&props, VOLATILE),
    );
    llama_fixture(
        &format!("{name}.v1-models.txt"),
        &response_fixture(&models, VOLATILE),
    );
    (supports_tools, n_ctx)
}

/// The probe's own request, sent by hand with `stream` as given: what the server streams back for it.
fn probe_request(max_tokens: u64, tool_choice: Option<Value>) -> Value {
    let mut body = json!({
        "model": "smollm2",
        "messages": [
            {"role": "developer", "content": jr2_probe::prompt::SYSTEM},
            {"role": "user", "content": jr2_probe::prompt::USER},
        ],
        "tools": [{"type": "function", "function": {
            "name": jr2_probe::prompt::TOOL_NAME,
            "description": jr2_probe::prompt::TOOL_DESCRIPTION,
            "parameters": jr2_probe::prompt::tool_parameters(),
        }}],
        "stream": true,
        "stream_options": {"include_usage": true},
        "store": false,
        "max_completion_tokens": max_tokens,
    });
    if let Some(choice) = tool_choice {
        body["tool_choice"] = choice;
    }
    body
}

/// The cause the endpoint named, its one line after the contract's lines, and the same words as the next action.
#[track_caller]
fn assert_cause(run: &common::Run, want: &Cause) {
    let m = &run.verdict().models[0];
    assert_eq!(m.findings.cause.as_ref(), Some(want), "{}", run.stderr);
    let line = render::cause_line(want, m).expect("the cause has a line");
    assert_eq!(
        run.lines().last().copied(),
        Some(line.as_str()),
        "{}",
        run.stderr
    );
    assert_eq!(m.next_action, render::cause_next_action(want));
}

/// What the verdict learned of the server: llama.cpp, its context and whether its template renders tools.
#[track_caller]
fn assert_llama_endpoint(run: &common::Run, n_ctx: u64, supports_tools: Option<bool>) {
    let e = run.verdict().models[0]
        .findings
        .endpoint
        .clone()
        .unwrap_or_else(|| panic!("no endpoint in the verdict: {}", run.stdout));
    assert_eq!(e.kind, EndpointKind::LlamaCpp);
    assert_eq!(e.context_length, Some(n_ctx));
    assert_eq!(e.supports_tools, supports_tools);
}

fn host(server: &Server) -> String {
    format!("127.0.0.1:{}", server.port)
}

/// `tests/fidelity/`: the Turn's script and its packages.
fn fidelity_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fidelity")
}

/// Installs the fidelity step's pinned packages once per run (`npm ci`, a no-op when `node_modules` holds the lock).
fn fidelity_modules() {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| {
        let out = std::process::Command::new("bash")
            .arg(fidelity_dir().join("run.sh"))
            .env("JR2_FIDELITY_INSTALL_ONLY", "1")
            .output()
            .expect("run tests/fidelity/run.sh");
        assert!(
            out.status.success(),
            "JR2_FIDELITY_INSTALL_ONLY=1 tests/fidelity/run.sh failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// What a real Turn ended with (`tests/fidelity/turn.mjs`'s line).
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Turn {
    /// `called`, `toolFailed`, `text`, `length`, `error`, `aborted`.
    turn: String,
    stop_reason: Option<String>,
    error_message: Option<String>,
    #[serde(default)]
    tool_calls: Vec<String>,
}

/// One Turn of pi-agent-core 0.82.1 over pi-ai 0.82.1, the request as `turn.mjs` takes it, with `envs` (the key) in a
/// clean environment.
async fn turn(request: Value, envs: &[(&str, &str)]) -> Turn {
    let envs: Vec<(String, String)> = envs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        fidelity_modules();
        let mut cmd = std::process::Command::new("node");
        cmd.arg(fidelity_dir().join("turn.mjs"))
            .arg(request.to_string())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", std::env::var_os("HOME").unwrap_or_default())
            .env("NO_PROXY", "*");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run node tests/fidelity/turn.mjs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!(
                "turn.mjs gave no outcome ({e}): {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
    })
    .await
    .expect("join")
}

/// The Turn's request for a `harness.provider` model at `base`: `maxTokens` as the probe's `--max-tokens`, the key
/// from `K` when `key`.
fn custom_turn(base: &str, id: &str, max_tokens: u64, key: bool) -> Value {
    let mut custom =
        json!({"provider": "llama", "id": id, "baseUrl": base, "maxTokens": max_tokens});
    if key {
        custom["apiKeyEnv"] = "K".into();
    }
    json!({ "custom": custom })
}

/// A case where the contract makes the probe and a Turn differ on purpose.
struct OnPurpose {
    /// The case, as [`compare`] names it.
    case: &'static str,
    /// The probe's outcome there.
    probe: Outcome,
    /// The Turn's outcome there.
    turn: &'static str,
    /// Why the contract wants it so.
    why: &'static str,
}

/// Every difference between the probe and a real Turn on the same server that the contract makes on purpose; any
/// other difference fails [`compare`]. Listed in tests/README.md ("Against a real Turn on the same server").
const ON_PURPOSE: &[OnPurpose] = &[
    OnPurpose {
        case: "ollama: OLLAMA_NUM_PARALLEL=1 with a job ahead",
        probe: Outcome::Timeout,
        turn: "called",
        why: "the check's timeout is the user's rule; a Turn waits for Ollama's slot (up to undici's 300 s for the \
              headers). The probe's error says Ollama had the model loaded instead of 'loads on first use'",
    },
    OnPurpose {
        case: "ollama: num_ctx under the prompt, no contextWindow",
        probe: Outcome::Http,
        turn: "length",
        why: "Ollama cut the prompt to its num_ctx of 128 and answered 200: the model wrote what it wrote after what was \
              left of the prompt (here until PARAMETER num_predict), and a Turn takes that answer; the probe names the \
              cut (contextTooSmall, from the answer's usage.prompt_tokens filling the context GET /api/ps names)",
    },
    OnPurpose {
        case: "queue: -np 1 with a job ahead",
        probe: Outcome::Timeout,
        turn: "called",
        why: "the check's timeout (120 s, here --timeout 3s) is the user's rule; a Turn waits in llama-server's queue up \
              to undici's 300 s headers timeout. The probe's error says the slots were busy instead of 'loads on first use'",
    },
    OnPurpose {
        case: "gateway 429 with llm_provider-retry-after",
        probe: Outcome::Busy,
        turn: "error",
        why: "busy is a warning (the contract's section 4): the probe retries as the gateway asks and says a Turn makes \
              one try; the Turn's one try gets the 429",
    },
    OnPurpose {
        case: "gateway without max_input_tokens, a Turn-sized prompt",
        probe: Outcome::Ok,
        turn: "error",
        why: "the gateway names no context for the model, so none can be checked: the verdict says so \
              (contextUnchecked, and its line), and a Turn whose prompt is longer than the backend's context fails",
    },
    OnPurpose {
        case: "-c 2048 under a contextWindow of 32768, the probe's prompt",
        probe: Outcome::Http,
        turn: "called",
        why: "the context check judges the Turns the window lets through, longer than the probe's short prompt: the \
              Turn with a prompt longer than -c (the next case) gets the 400",
    },
];

/// Asserts that the probe's result and the Turn's outcome agree for `case`, or that `case` is listed in
/// [`ON_PURPOSE`] with these two outcomes. Agreeing: a call the Turn ran and a pass; a call the Turn failed (its
/// message stopped by the cap) or a cap before any call and `length`; text and `text`; an error of the model call and
/// an error-level outcome other than a timeout; an abort and a timeout.
#[track_caller]
fn compare(case: &str, m: &jr2_probe::verdict::ModelResult, t: &Turn) {
    let agree = match t.turn.as_str() {
        "called" => m.level == Level::Pass,
        "toolFailed" | "length" => m.outcome == Outcome::Length,
        "text" => m.outcome == Outcome::Text,
        "error" => m.level == Level::Error && m.outcome != Outcome::Timeout,
        "aborted" => m.outcome == Outcome::Timeout,
        _ => false,
    };
    let listed = ON_PURPOSE
        .iter()
        .find(|d| d.case == case && d.probe == m.outcome && d.turn == t.turn);
    if let Some(d) = listed {
        println!(
            "{case}: the probe says {:?}, the Turn {}: on purpose: {}",
            m.outcome, t.turn, d.why
        );
    } else {
        println!(
            "{case}: the probe says {:?}, the Turn {}: they agree",
            m.outcome, t.turn
        );
    }
    assert!(
        agree != listed.is_some(),
        "{case}: the probe says {:?} ({:?}: {:?}), the Turn {t:?}: {}",
        m.outcome,
        m.code,
        m.error,
        if agree {
            "they agree, yet the case is listed as a difference on purpose"
        } else {
            "they disagree, and ON_PURPOSE does not list it"
        }
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_stock_template_drops_the_tools() {
    let server = start(LlamaServer {
        temp: Some(0.0),
        seed: Some(1),
        ..LlamaServer::default()
    })
    .await;
    let (supports_tools, n_ctx) = server_facts(&server, None, "stock").await;
    assert!(!supports_tools, "SmolLM2's own template renders no tools");
    assert_eq!(n_ctx, 2048);

    let run = check(&server, &[], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code),
        (Outcome::Text, Level::Warning, Code::TextAnswer),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(m.stop_reason.as_deref(), Some("stop"));
    assert_eq!(run.code, 0);
    assert_eq!(
        run.lines()[1],
        "warning: provider: smollm2 answered the request of a Turn in text, not with a tool call"
    );
    // The template, not --jinja: the server said so in /props, and the line after the warning names the fix.
    assert_cause(&run, &Cause::LlamaCppTemplateWithoutTools);
    assert!(run.lines().last().unwrap().contains("--chat-template-file"));
    assert_llama_endpoint(&run, 2048, Some(false));

    let stream = post(
        &server,
        "/v1/chat/completions",
        None,
        probe_request(64, None),
    )
    .await;
    assert_eq!(stream.status, 200);
    llama_fixture(
        "stock.text-answer.sse.txt",
        &response_fixture(&stream, VOLATILE),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_tool_template_passes() {
    let server = start(LlamaServer::with_tools()).await;
    let (supports_tools, n_ctx) = server_facts(&server, None, "tools").await;
    assert!(
        supports_tools,
        "tests/peers/smollm2-tools.jinja renders the tools"
    );
    assert_eq!(n_ctx, 2048);

    let run = check(&server, &[], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code),
        (Outcome::Ok, Level::Pass, Code::Ok),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(m.tool_name.as_deref(), Some("probe"));
    assert!(
        run.lines()[1].starts_with("provider: smollm2 completed a tool call ("),
        "{}",
        run.stderr
    );
    assert_eq!(run.code, 0);
    // A pass learns the server from its answer and its /v1/models (the context check): no cause.
    let e = run.verdict().models[0]
        .findings
        .endpoint
        .clone()
        .expect("an endpoint");
    assert_eq!(
        (e.kind, e.context_length),
        (EndpointKind::LlamaCpp, Some(2048))
    );
    assert_eq!(run.verdict().models[0].findings.cause, None);

    let stream = post(
        &server,
        "/v1/chat/completions",
        None,
        probe_request(1024, None),
    )
    .await;
    assert_eq!(stream.status, 200);
    assert!(
        stream.body.contains(r#""finish_reason":"tool_calls""#),
        "{}",
        stream.body
    );
    llama_fixture(
        "tools.tool-call.sse.txt",
        &response_fixture(&stream, VOLATILE),
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_without_jinja_refuses_tools() {
    let server = start(LlamaServer {
        jinja: false,
        ..LlamaServer::default()
    })
    .await;
    let run = check(&server, &[], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code, m.http_status),
        (
            Outcome::Http,
            Level::Error,
            Code::ToolsNotEnabled,
            Some(500)
        ),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(
        m.error.as_deref(),
        Some("HTTP 500: tools param requires --jinja flag")
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1],
        format!(
            "error: provider preflight failed for model \"smollm2\" against {} (from this machine, as a Turn calls it): HTTP 500: tools param requires --jinja flag",
            host(&server)
        )
    );
    // llama.cpp's own fix, not only vLLM's flags.
    assert_cause(&run, &Cause::LlamaCppWithoutJinja);
    assert!(run.lines().last().unwrap().contains("--jinja"));

    let refused = post(
        &server,
        "/v1/chat/completions",
        None,
        probe_request(64, None),
    )
    .await;
    assert_eq!(refused.status, 500);
    assert_eq!(refused.header("server"), Some("llama.cpp"));
    assert_eq!(
        refused.json(),
        json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})
    );
    llama_fixture(
        "no-jinja.tools-refused.txt",
        &response_fixture(&refused, VOLATILE),
    );
    let props = get(&server, "/props", None).await;
    llama_fixture("no-jinja.props.txt", &response_fixture(&props, VOLATILE));
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_with_an_api_key() {
    let server = start(LlamaServer {
        api_key: Some(LLAMA_KEY.to_owned()),
        ..LlamaServer::with_tools()
    })
    .await;
    let wrong = "sk-not-the-key-000000000";
    let run = check(&server, &[], Some(wrong)).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code, m.http_status),
        (
            Outcome::KeyRefused,
            Level::Error,
            Code::KeyRefused,
            Some(401)
        ),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1..],
        [
            format!(
                "error: provider preflight failed for model \"smollm2\" against {} (from this machine, as a Turn calls it): HTTP 401: Invalid API Key",
                host(&server)
            ),
            "  - the held secret JR2_PROVIDER_API_KEY may be wrong (harness.provider.apiKey)"
                .to_owned(),
            "  - the model id must be exactly what the endpoint serves (vLLM: GET /v1/models)"
                .to_owned(),
        ]
    );
    // The model-id line is the user's document's on every 401 and stays, although a single-model llama-server
    // answers any id; no cause line follows, since the key is the cause the lines already name.
    assert_eq!(run.verdict().models[0].findings.cause, None);
    assert!(!run.stdout.contains(wrong) && !run.stderr.contains(wrong));
    let refused = get(&server, "/v1/models", Some("sk-not-the-key-000000000")).await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.json(),
        json!({"error": {"code": 401, "message": "Invalid API Key", "type": "authentication_error"}})
    );
    llama_fixture(
        "api-key.wrong-key.txt",
        &response_fixture(&refused, VOLATILE),
    );
    // /health needs no key: what readiness reads.
    assert_eq!(get(&server, "/health", None).await.status, 200);

    let run = check(&server, &[], Some(LLAMA_KEY)).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level),
        (Outcome::Ok, Level::Pass),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(run.code, 0);
    assert!(!run.stdout.contains(LLAMA_KEY) && !run.stderr.contains(LLAMA_KEY));
    let (supports_tools, _) = server_facts(&server, Some(LLAMA_KEY), "api-key").await;
    assert!(supports_tools);
    assert!(!server.log().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_context_smaller_than_the_plans() {
    for (ctx, window) in [(256u32, "8192"), (2048, "32768")] {
        let server = start(LlamaServer {
            ctx_size: ctx,
            ..LlamaServer::with_tools()
        })
        .await;
        let (_, n_ctx) = server_facts(&server, None, &format!("ctx-{ctx}")).await;
        assert_eq!(
            n_ctx,
            u64::from(ctx),
            "meta.n_ctx is the -c the server runs with"
        );

        // The probe's own prompt fits, but the plan's window does not: every Turn longer than -c fails.
        let run = check(
            &server,
            &["--context-window", window, "--max-tokens", "1024"],
            None,
        )
        .await;
        let m = &run.verdict().models[0];
        assert_eq!(
            (m.outcome, m.level, m.code),
            (Outcome::Http, Level::Error, Code::ContextTooSmall),
            "-c {ctx}: {}\n{}",
            run.stderr,
            server.log()
        );
        assert_eq!(run.code, 1);
        let needed: u64 = window.parse().unwrap();
        assert_eq!(
            m.error.as_deref(),
            Some(render::context_too_small_error(u64::from(ctx), needed, None).as_str())
        );
        assert_cause(
            &run,
            &Cause::ContextTooSmall {
                served: u64::from(ctx),
                needed,
                from_window: true,
                server: EndpointKind::LlamaCpp,
                slots: None,
                prompt_cut: false,
            },
        );
        assert!(run.lines().last().unwrap().contains("llama-server's -c"));
        // Against a real Turn with the same window: the probe's prompt gets its call (a difference on purpose), a
        // prompt longer than -c the 400 the probe foretold.
        if ctx == 2048 {
            let mut request = custom_turn(&server.base_url(), "smollm2", 1024, false);
            request["custom"]["contextWindow"] = needed.into();
            let t = turn(request.clone(), &[]).await;
            compare(
                "-c 2048 under a contextWindow of 32768, the probe's prompt",
                m,
                &t,
            );
            request["userText"] = "word ".repeat(3000).into();
            let t = turn(request, &[]).await;
            compare(
                "-c 2048 under a contextWindow of 32768, a Turn-sized prompt",
                m,
                &t,
            );
        }
        // Without a window only what surely fails is an error, by llama-server's rule: a prompt longer than -c. The
        // probe's prompt fits -c 256 (the cap of 1024 does not, and the server serves it anyway: issue 27, item 7),
        // and what the model does then is what a Turn on the same server gets.
        let run = check(&server, &["--max-tokens", "1024"], None).await;
        let m = &run.verdict().models[0];
        assert_ne!(m.code, Code::ContextTooSmall, "{}", run.stderr);
        let t = turn(custom_turn(&server.base_url(), "smollm2", 1024, false), &[]).await;
        compare(&format!("-c {ctx}, cap 1024, no window"), m, &t);
        if ctx == 2048 {
            assert_eq!(
                (m.outcome, m.level),
                (Outcome::Ok, Level::Pass),
                "{}",
                run.stderr
            );
        }

        // A Turn-sized prompt: what every Turn gets from this server.
        let long = "word ".repeat(3000);
        let mut body = probe_request(64, None);
        body["messages"][1]["content"] = long.into();
        let refused = post(&server, "/v1/chat/completions", None, body).await;
        assert_eq!(refused.status, 400, "{}", refused.body);
        let message = refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            message.starts_with("request (")
                && message.ends_with(&format!(
                    "tokens) exceeds the available context size ({ctx} tokens), try increasing it"
                )),
            "{message}"
        );
        llama_fixture(
            &format!("ctx-{ctx}.prompt-too-long.txt"),
            &response_fixture(&refused, VOLATILE),
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_small_cap_cuts_the_call() {
    let server = start(LlamaServer::with_tools()).await;
    // The cap falls after the tool's name and before its arguments end.
    let cap = CUT_CAP;
    let cut = post(
        &server,
        "/v1/chat/completions",
        None,
        probe_request(cap, None),
    )
    .await;
    assert_eq!(cut.status, 200);
    assert!(
        cut.body.contains(r#""finish_reason":"length""#),
        "{}",
        cut.body
    );
    assert!(cut.body.contains(r#""name":"probe""#), "{}", cut.body);
    llama_fixture(
        "tools.cut-by-the-cap.sse.txt",
        &response_fixture(&cut, VOLATILE),
    );

    // The verdict waits for the call's complete arguments: the cap cut them, so a Turn would get a call it cannot
    // parse. A `length` error, with the arguments seen so far in the JSON.
    let cap = cap.to_string();
    let run = check(&server, &["--max-tokens", &cap], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code),
        (Outcome::Length, Level::Error, Code::Length),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(
        m.error.as_deref(),
        Some(render::call_cut_error("length", CUT_CAP).as_str())
    );
    let seen = m
        .findings
        .tool_arguments
        .as_deref()
        .expect("the arguments seen");
    assert!(
        seen.starts_with('{') && serde_json::from_str::<Value>(seen).is_err(),
        "{seen}"
    );
    assert_cause(&run, &Cause::ToolCallCut);
}

/// The cap that ends SmolLM2's call in the middle of its arguments (measured on this server).
const CUT_CAP: u64 = 16;

#[tokio::test(flavor = "multi_thread")]
async fn llama_server_ignores_a_forced_tool_choice() {
    let server = start(LlamaServer::with_tools()).await;
    let run = check(&server, &["--tool-choice", "named"], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level),
        (Outcome::Ok, Level::Pass),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    // The server said it ignored the object tool_choice, and answered as `auto`.
    let log = server.log();
    assert!(
        log.contains("Wrong type supplied for parameter 'tool_choice'"),
        "{log}"
    );
    // The one tool was called, so nothing tells the answer from a forced one: no note.
    assert!(!run.verdict().models[0].findings.tool_choice_ignored);

    // The stock template with the tool forced: the tools are dropped all the same, a text answer.
    let stock = start(LlamaServer {
        temp: Some(0.0),
        seed: Some(1),
        ..LlamaServer::default()
    })
    .await;
    let run = check(&stock, &["--tool-choice", "named"], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Text, "{}", run.stderr);
    // Forced and answered in text: the verdict and a line say the choice was ignored.
    assert!(m.findings.tool_choice_ignored, "{}", run.stdout);
    assert!(
        run.lines()
            .contains(&render::tool_choice_ignored(&m.model).as_str()),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_litellm_gateway_in_front_of_the_real_model_and_the_fake() {
    let fake = FakeProvider::start().await;
    // Two llama-servers of SmolLM2: the tool-capable template and the GGUF's own.
    let tools = start(LlamaServer {
        alias: "smollm2-tools".to_owned(),
        api_key: Some(LLAMA_KEY.to_owned()),
        ..LlamaServer::with_tools()
    })
    .await;
    let plain = start(LlamaServer {
        alias: "smollm2-plain".to_owned(),
        api_key: Some(LLAMA_KEY.to_owned()),
        temp: Some(0.0),
        seed: Some(1),
        ..LlamaServer::default()
    })
    .await;
    let upstream = fake.base_url();
    let config = format!(
        r#"model_list:
  - model_name: llama-tools
    litellm_params: {{model: hosted_vllm/smollm2-tools, api_base: "{tools}", api_key: {LLAMA_KEY}}}
  - model_name: llama-plain
    litellm_params: {{model: hosted_vllm/smollm2-plain, api_base: "{plain}", api_key: {LLAMA_KEY}}}
  - model_name: fake-ok
    litellm_params: {{model: openai/ok, api_base: "{upstream}", api_key: sk-upstream-unused}}
  - model_name: fake-429
    litellm_params: {{model: openai/rate-limited, api_base: "{upstream}", api_key: sk-upstream-unused}}
  - model_name: fake-401
    litellm_params: {{model: openai/auth, api_base: "{upstream}", api_key: sk-upstream-unused}}
litellm_settings: {{num_retries: 0, request_timeout: 30, telemetry: false}}
general_settings: {{master_key: {MASTER_KEY}}}
"#,
        tools = tools.base_url(),
        plain = plain.base_url()
    );
    let gateway = tokio::task::spawn_blocking(move || start_litellm(&config))
        .await
        .unwrap();
    let base = gateway.base_url();
    let key = [("K", MASTER_KEY)];
    let check = |model: &'static str, extra: &'static [&'static str]| {
        let base = base.clone();
        async move {
            let mut args = vec![
                "check",
                "--base-url",
                base.as_str(),
                "--model",
                model,
                "--api-key-env",
                "K",
                "-o",
                "json",
            ];
            args.extend(extra);
            probe(&args, &key).await
        }
    };

    // The real model with the tool-capable template, as a Turn asks (no tool_choice) and with its tool named: a real
    // streamed tool call through the gateway.
    for extra in [&[][..], &["--tool-choice", "named"][..]] {
        let run = check("llama-tools", extra).await;
        let m = &run.verdict().models[0];
        assert_eq!(
            m.outcome,
            Outcome::Ok,
            "{extra:?}: {}\n{}",
            run.stderr,
            gateway.log()
        );
        assert_eq!(m.tool_name.as_deref(), Some("probe"));
        assert!(run.lines()[1].starts_with("provider: llama-tools completed a tool call ("));
        assert_eq!(run.code, 0);
    }

    // The GGUF's own template drops the tools, named or not: a text answer through the gateway too.
    for extra in [&[][..], &["--tool-choice", "named"][..]] {
        let run = check("llama-plain", extra).await;
        let m = &run.verdict().models[0];
        assert_eq!(
            (m.outcome, m.level),
            (Outcome::Text, Level::Warning),
            "{extra:?}: {}",
            run.stderr
        );
        assert_eq!(
            run.lines()[1],
            "warning: provider: llama-plain answered the request of a Turn in text, not with a tool call"
        );
        assert_eq!(run.code, 0);
    }

    // The fake through the gateway: a tool call, LiteLLM's own 429, the upstream's 401, an unknown model.
    let run = check("fake-ok", &[]).await;
    assert_eq!(
        run.verdict().models[0].outcome,
        Outcome::Ok,
        "{}",
        run.stderr
    );

    let run = check("fake-429", &["--max-tries", "2"]).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.http_status, m.tries.len()),
        (Outcome::Busy, Some(429), 2),
        "{}",
        run.stderr
    );
    assert!(
        m.error
            .as_deref()
            .unwrap()
            .contains("litellm.RateLimitError")
    );
    assert_eq!(run.code, 0, "busy is a warning");

    let run = check("fake-401", &[]).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.http_status),
        (Outcome::KeyRefused, Some(401)),
        "{}",
        run.stderr
    );

    let run = check("no-such-model", &[]).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.code, m.http_status),
        (Outcome::Http, Code::ModelNotFound, Some(400)),
        "{}",
        run.stderr
    );
    assert!(
        m.error
            .as_deref()
            .unwrap()
            .contains("Invalid model name passed in model=no-such-model")
    );

    // A wrong gateway key: LiteLLM without a database answers 400, and never echoes the key it got.
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "fake-ok",
            "--api-key-env",
            "K",
        ],
        &[("K", "sk-wrong-master-key-987654321")],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        !run.stderr.contains("sk-wrong-master-key-987654321"),
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn litellm_as_a_harness_catalog_gateway_for_anthropic_and_gemini() {
    let fake = FakeProvider::start().await;
    let upstream = fake.base_url();
    // The gateway serves the catalog ids; `hosted_vllm/` makes LiteLLM call the upstream's /chat/completions.
    let config = format!(
        r#"model_list:
  - model_name: claude-haiku-4-5
    litellm_params: {{model: hosted_vllm/ok, api_base: "{upstream}", api_key: sk-upstream-unused}}
  - model_name: gemini-2.5-flash
    litellm_params: {{model: hosted_vllm/ok, api_base: "{upstream}", api_key: sk-upstream-unused}}
  - model_name: claude-sonnet-4-5
    litellm_params: {{model: hosted_vllm/rate-limited, api_base: "{upstream}", api_key: sk-upstream-unused}}
litellm_settings: {{num_retries: 0, request_timeout: 30, telemetry: false}}
general_settings: {{master_key: {MASTER_KEY}}}
"#
    );
    let gateway = tokio::task::spawn_blocking(move || start_litellm(&config))
        .await
        .unwrap();
    let root = format!("http://127.0.0.1:{}", gateway.port);
    let host = format!("127.0.0.1:{}", gateway.port);

    // Anthropic's front door: POST <gateway>/v1/messages with x-api-key, the Messages stream back.
    let run = probe(
        &[
            "check",
            "--model",
            "anthropic/claude-haiku-4-5",
            "--gateway",
            &root,
            "--api-key-env",
            "ANTHROPIC_API_KEY",
            "-o",
            "json",
        ],
        &[("ANTHROPIC_API_KEY", MASTER_KEY)],
    )
    .await;
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Ok, "{}\n{}", run.stderr, gateway.log());
    assert_eq!(m.tool_name.as_deref(), Some("probe"));
    let upstream_req = fake.requests_for("ok");
    assert!(!upstream_req.is_empty(), "the gateway called its upstream");

    // Gemini's front door: POST <gateway>/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse.
    let run = probe(
        &[
            "check",
            "--model",
            "google/gemini-2.5-flash",
            "--gateway",
            &format!("{root}/v1beta"),
            "--api-key-env",
            "GEMINI_API_KEY",
            "-o",
            "json",
        ],
        &[("GEMINI_API_KEY", MASTER_KEY)],
    )
    .await;
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Ok, "{}\n{}", run.stderr, gateway.log());

    // The gateway's own failures, in the catalog lines with the gateway hint.
    let run = probe(
        &[
            "check",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--gateway",
            &root,
            "--api-key-env",
            "ANTHROPIC_API_KEY",
            "--max-tries",
            "2",
        ],
        &[("ANTHROPIC_API_KEY", MASTER_KEY)],
    )
    .await;
    assert_eq!(run.code, 0, "busy is a warning: {}", run.stderr);
    assert_eq!(
        run.lines()[1],
        format!(
            "warning: provider: anthropic/claude-sonnet-4-5 is busy toward {host} after 2 tries (HTTP 429) — not confirmed; a Turn makes one try, so it can fail the same way"
        )
    );
    let run = probe(
        &[
            "check",
            "--model",
            "anthropic/claude-opus-4-5",
            "--gateway",
            &root,
            "--api-key-env",
            "ANTHROPIC_API_KEY",
        ],
        &[("ANTHROPIC_API_KEY", MASTER_KEY)],
    )
    .await;
    assert_eq!(run.code, 1);
    let lines = run.lines();
    assert!(lines[1].starts_with(&format!(
        "error: provider preflight failed for model \"anthropic/claude-opus-4-5\" toward {host} (from this machine, direct, as a Turn calls it): HTTP 400: "
    )), "{lines:?}");
    assert_eq!(
        lines.last().unwrap(),
        &format!("  - the gateway {host} may not answer, or may not serve claude-opus-4-5")
    );
}

/// Item 5: a complete call in a message the cap stopped. llama-server with the tool template, at temperature 0, writes
/// the whole call in 24 tokens and stops for `tool_calls` at 30: at caps 24 and 26 the call is complete and the
/// message stops with `length`, so pi-agent-core fails the call (`failToolCallsFromTruncatedMessage`); `--ignore-eos`
/// writes on after the call until the cap. Each against a real Turn on the same server.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_in_a_message_the_cap_stopped_fails_as_every_turn_fails_it() {
    let server = start(LlamaServer::with_tools()).await;
    let eos = start(LlamaServer {
        extra_args: vec!["--ignore-eos".into()],
        ..LlamaServer::with_tools()
    })
    .await;
    let cases: [(&Server, u64, &str); 5] = [
        (&server, 24, "cap 24: the call complete, then the cap"),
        (&server, 26, "cap 26: the call complete, then the cap"),
        (&server, CUT_CAP, "cap 16: the call cut"),
        (&server, 1024, "cap 1024: the call, then tool_calls"),
        (
            &eos,
            200,
            "--ignore-eos, cap 200: the call, then text until the cap",
        ),
    ];
    for (server, cap, case) in cases {
        let cap_arg = cap.to_string();
        let run = check(server, &["--max-tokens", &cap_arg], None).await;
        let m = &run.verdict().models[0];
        let t = turn(custom_turn(&server.base_url(), "smollm2", cap, false), &[]).await;
        compare(case, m, &t);
        if cap == 1024 {
            assert_eq!(
                (m.outcome, t.turn.as_str()),
                (Outcome::Ok, "called"),
                "{}",
                run.stderr
            );
            continue;
        }
        assert_eq!(
            (m.outcome, m.level, m.code),
            (Outcome::Length, Level::Error, Code::Length),
            "{case}: {}\n{}",
            run.stderr,
            server.log()
        );
        assert_eq!(run.code, 1);
        assert_eq!(t.stop_reason.as_deref(), Some("length"), "{case}: {t:?}");
        if cap == CUT_CAP {
            assert_cause(&run, &Cause::ToolCallCut);
            continue;
        }
        assert_eq!(m.findings.cause, Some(Cause::ToolCallCut), "{case}");
        // The call was complete: the verdict names its tool, the error and the line say the cap stopped its message.
        assert_eq!(t.turn, "toolFailed", "{case}: {t:?}");
        assert!(
            !t.tool_calls.is_empty() && t.tool_calls.iter().all(|c| c == "probe"),
            "{case}: {t:?}"
        );
        assert_eq!(m.tool_name.as_deref(), Some("probe"), "{case}");
        assert_eq!(
            m.error.as_deref(),
            Some(render::call_in_capped_message_error("length", "probe", cap).as_str())
        );
        let args = m
            .findings
            .tool_arguments
            .as_deref()
            .expect("the call's arguments");
        assert!(serde_json::from_str::<Value>(args).is_ok(), "{args}");
        assert_eq!(
            run.lines().last().copied(),
            Some(render::cause_line(&Cause::ToolCallCut, m).unwrap().as_str())
        );
        assert!(
            run.lines()
                .last()
                .unwrap()
                .contains("a Turn runs no tool call of a message the cap stopped")
        );
        assert_eq!(m.next_action, render::CAPPED_CALL_NEXT_ACTION);
        // The verdict came after the call: its mark is the call's, before the try's end.
        let timings = m.tries[0].timings;
        assert!(
            timings.tool_call_ms.is_some_and(|c| c <= timings.total_ms),
            "{timings:?}"
        );
    }
}

/// Item 7: llama-server refuses only a prompt longer than its context (one slot's share of `-c` under `-np`), and
/// stops a generation that reaches it: a cap plus the prompt over `-c` is no error. Each rule held against the
/// server's own answers, and the probe against a real Turn on the same server.
#[tokio::test(flavor = "multi_thread")]
async fn llama_server_s_context_rules_hold_against_the_server() {
    // -c 2048 and a cap of 2048, no window: the cap plus the prompt exceed -c, and the server serves it.
    for (ctx, cap) in [(2048u32, 2048u64), (512, 1024)] {
        let server = start(LlamaServer {
            ctx_size: ctx,
            ..LlamaServer::with_tools()
        })
        .await;
        let cap_arg = cap.to_string();
        let run = check(&server, &["--max-tokens", &cap_arg], None).await;
        let m = &run.verdict().models[0];
        assert_eq!(
            (m.outcome, m.level, m.findings.cause.clone()),
            (Outcome::Ok, Level::Pass, None),
            "-c {ctx} cap {cap}: {}\n{}",
            run.stderr,
            server.log()
        );
        assert_eq!(run.code, 0);
        let t = turn(custom_turn(&server.base_url(), "smollm2", cap, false), &[]).await;
        compare(&format!("-c {ctx}, cap {cap}, no window"), m, &t);
        // The server's own rule: a prompt that fits, under a cap that does not, is served.
        let mut body = probe_request(cap, None);
        body["messages"][1]["content"] = "word ".repeat(usize::try_from(ctx).unwrap() / 3).into();
        let served = post(&server, "/v1/chat/completions", None, body).await;
        assert_eq!(served.status, 200, "-c {ctx}: {}", served.body);
    }

    // -c 4096 over -np 4: 1024 tokens a slot. A window of 8192 (which leaves pi's clamp the whole cap) fails, and
    // the advice names the slots.
    let server = start(LlamaServer {
        ctx_size: 4096,
        parallel: 4,
        ..LlamaServer::with_tools()
    })
    .await;
    let (_, n_ctx) = server_facts(&server, None, "np-4").await;
    assert_eq!(n_ctx, 1024, "meta.n_ctx is one slot's share of -c");
    let run = check(
        &server,
        &["--context-window", "8192", "--max-tokens", "1024"],
        None,
    )
    .await;
    let m = &run.verdict().models[0];
    let cause = Cause::ContextTooSmall {
        served: 1024,
        needed: 8192,
        from_window: true,
        server: EndpointKind::LlamaCpp,
        slots: Some(4),
        prompt_cut: false,
    };
    assert_eq!(
        m.code,
        Code::ContextTooSmall,
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_cause(&run, &cause);
    let line = run.lines().last().unwrap().to_owned();
    assert!(
        line.contains(
            "each of its 4 slots (-np 4) a context of 1024 tokens (its share of -c 4096)"
        ) && line.contains(
            "raise llama-server's -c to at least 32768 (8192 for each of its 4 slots), or lower -np"
        ),
        "{line}"
    );
    assert_eq!(m.findings.endpoint.as_ref().and_then(|e| e.slots), Some(4));
    // The server's rule: a prompt longer than a slot is refused, whatever -c says.
    let long = "word ".repeat(1500);
    let mut body = probe_request(64, None);
    body["messages"][1]["content"] = long.clone().into();
    let refused = post(&server, "/v1/chat/completions", None, body).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.json()["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("exceeds the available context size (1024 tokens), try increasing it"),
        "{}",
        refused.body
    );
    // A Turn whose prompt the window lets through and the slot does not: the error the probe foretold.
    let mut request = custom_turn(&server.base_url(), "smollm2", 1024, false);
    request["custom"]["contextWindow"] = 8192.into();
    request["userText"] = long.into();
    let t = turn(request, &[]).await;
    compare("-np 4: a Turn-sized prompt over one slot", m, &t);
    assert!(
        t.error_message
            .as_deref()
            .unwrap_or("")
            .contains("exceeds the available context size"),
        "{t:?}"
    );
}

/// Item 6: behind a LiteLLM gateway the GETs reach the gateway: its `/v1/models` (and `/model/info`) give the
/// context its config names (`model_info.max_input_tokens`); without one, the context is not checked, and the
/// verdict and a line say so. Against a real Turn through the same gateway to the same llama-server.
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_s_context_is_asked_of_the_gateway() {
    let backend = start(LlamaServer::with_tools()).await;
    // Two names of the same backend (distinct LiteLLM models: LiteLLM shares model_info by its model).
    let config = format!(
        r#"model_list:
  - model_name: with-info
    litellm_params: {{model: hosted_vllm/smollm2, api_base: "{b}", api_key: unused}}
    model_info: {{max_input_tokens: 2048}}
  - model_name: without-info
    litellm_params: {{model: hosted_vllm/smollm2-b, api_base: "{b}", api_key: unused}}
litellm_settings: {{num_retries: 0, request_timeout: 60, telemetry: false}}
general_settings: {{master_key: {MASTER_KEY}}}
"#,
        b = backend.base_url()
    );
    let gateway = tokio::task::spawn_blocking(move || start_litellm(&config))
        .await
        .unwrap();
    let key = [("K", MASTER_KEY)];
    let base = gateway.base_url();
    let long = "word ".repeat(3000);
    for model in ["with-info", "without-info"] {
        let run = probe(
            &[
                "check",
                "--base-url",
                &base,
                "--model",
                model,
                "--api-key-env",
                "K",
                "--context-window",
                "32768",
                "-o",
                "json",
            ],
            &key,
        )
        .await;
        let m = &run.verdict().models[0];
        let mut short = custom_turn(&base, model, 1024, true);
        short["custom"]["contextWindow"] = 32768.into();
        let mut request = short.clone();
        request["userText"] = long.clone().into();
        let t = turn(request, &key).await;
        assert_eq!(
            t.turn, "error",
            "{model}: a prompt longer than the backend's context: {t:?}"
        );
        if model == "with-info" {
            assert_eq!(
                m.code,
                Code::ContextTooSmall,
                "{}\n{}",
                run.stderr,
                gateway.log()
            );
            assert_eq!(
                m.findings.endpoint.as_ref().and_then(|e| e.context_length),
                Some(2048)
            );
            assert_eq!(m.findings.context_unchecked, None);
            compare("gateway with max_input_tokens, a Turn-sized prompt", m, &t);
        } else {
            assert_eq!(
                (m.outcome, m.level),
                (Outcome::Ok, Level::Pass),
                "{}",
                run.stderr
            );
            assert_eq!(
                m.findings.context_unchecked,
                Some(ContextUnchecked::GatewayWithoutContext)
            );
            assert_eq!(
                run.lines().last().copied(),
                Some(
                    render::context_unchecked(
                        model,
                        &m.host,
                        model,
                        ContextUnchecked::GatewayWithoutContext
                    )
                    .as_str()
                ),
                "{}",
                run.stderr
            );
            compare(
                "gateway without max_input_tokens, a Turn-sized prompt",
                m,
                &t,
            );
            let t = turn(short, &key).await;
            compare(
                "gateway without max_input_tokens, the probe's prompt",
                m,
                &t,
            );
        }
    }
}

/// Item 8: llama-server `-np 1` with a job ahead. The check's timeout (the user's 120 s; here `--timeout 3s`, the
/// settable deadline) comes while the job holds the one slot; the error says what `/slots` showed, not "loads on
/// first use". A real Turn on the same server waits in the queue and gets its call once the job is gone.
#[tokio::test(flavor = "multi_thread")]
async fn a_queued_request_is_named_by_the_server_s_slots() {
    let server = start(LlamaServer {
        extra_args: vec!["--metrics".into()],
        ..LlamaServer::with_tools()
    })
    .await;
    // A job that holds the slot: generation until the context ends.
    let mut job = probe_request(2000, None);
    job["ignore_eos"] = true.into();
    let held = tokio::task::block_in_place(|| server.hold("/v1/chat/completions", &job));
    poll(&server, "/slots", |b| b.contains(r#""is_processing":true"#)).await;
    let run = check(&server, &["--timeout", "3s"], None).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.code),
        (Outcome::Timeout, Code::Timeout),
        "{}\n{}",
        run.stderr,
        server.log()
    );
    assert_eq!(
        m.error.as_deref(),
        Some(render::timeout_queued_error("3", 1).as_str())
    );
    assert!(!run.stderr.contains("loads on first use"), "{}", run.stderr);
    assert_cause(&run, &Cause::LlamaCppSlotsBusy { slots: 1 });
    // The Turn waits behind the job: once its request is deferred, the job leaves, and the Turn gets its call.
    let deferred = |b: &str| {
        b.lines()
            .find_map(|l| l.strip_prefix("llamacpp:requests_deferred "))
            .and_then(|n| n.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let before = deferred(&get(&server, "/metrics", None).await.body);
    let base = server.base_url();
    let waiting =
        tokio::spawn(async move { turn(custom_turn(&base, "smollm2", 1024, false), &[]).await });
    poll(&server, "/metrics", |b| deferred(b) > before).await;
    drop(held);
    let t = waiting.await.expect("join");
    compare("queue: -np 1 with a job ahead", m, &t);
}

/// Polls `GET path` until its body meets `ready` (60 s at most): a condition, never a fixed sleep.
async fn poll(server: &Server, path: &str, ready: impl Fn(&str) -> bool) {
    let start = std::time::Instant::now();
    loop {
        let r = get(server, path, None).await;
        if r.status == 200 && ready(&r.body) {
            return;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "GET {path} never showed the state: {}",
            r.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Item 9: a key whose value ends with a newline (a Secret made from a file) works in a Turn, whose fetch strips it,
/// and in the probe. Item 10: a gateway's 429 with `llm_provider-retry-after`: the probe waits as asked and warns;
/// the Turn's one try fails (a difference on purpose). Both against real Turns on the same servers.
#[tokio::test(flavor = "multi_thread")]
async fn a_newline_key_and_a_gateway_s_retry_header_against_a_turn() {
    let server = start(LlamaServer {
        api_key: Some(LLAMA_KEY.to_owned()),
        ..LlamaServer::with_tools()
    })
    .await;
    let with_newline = format!("{LLAMA_KEY}\n");
    let run = check(&server, &[], Some(&with_newline)).await;
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Ok, "{}", run.stderr);
    let t = turn(
        custom_turn(&server.base_url(), "smollm2", 1024, true),
        &[("K", &with_newline)],
    )
    .await;
    compare("a key that ends with a newline", m, &t);
    assert!(!run.stdout.contains(LLAMA_KEY) && !run.stderr.contains(LLAMA_KEY));

    let fake = FakeProvider::start().await;
    let config = format!(
        r#"model_list:
  - model_name: limited
    litellm_params: {{model: openai/rate-limited-after-2, api_base: "{}", api_key: sk-upstream-unused}}
litellm_settings: {{num_retries: 0, request_timeout: 30, telemetry: false}}
general_settings: {{master_key: {MASTER_KEY}}}
"#,
        fake.base_url()
    );
    let gateway = tokio::task::spawn_blocking(move || start_litellm(&config))
        .await
        .unwrap();
    let base = gateway.base_url();
    let key = [("K", MASTER_KEY)];
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "limited",
            "--api-key-env",
            "K",
            "--max-tries",
            "2",
            "-o",
            "json",
        ],
        &key,
    )
    .await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level),
        (Outcome::Busy, Level::Warning),
        "{}\n{}",
        run.stderr,
        gateway.log()
    );
    // The gateway's forwarded header was read: the wait asked, and taken.
    assert_eq!(m.tries[0].wait_asked_ms, Some(2000), "{:?}", m.tries);
    assert_eq!(m.tries[0].wait_taken_ms, 2000);
    assert!(
        run.lines()[1].ends_with("a Turn makes one try, so it can fail the same way"),
        "{}",
        run.stderr
    );
    let t = turn(custom_turn(&base, "limited", 1024, true), &key).await;
    assert_eq!(t.turn, "error", "{t:?}");
    compare("gateway 429 with llm_provider-retry-after", m, &t);
}

// ---- Ollama (issue 38) -------------------------------------------------------------------------------------------
//
// Ollama v0.17.4, built from its Go module by tests/peers/install.sh, serving SmolLM2-135M imported with
// `ollama create` from Modelfiles: `FROM` the GGUF alone (no tools in its TEMPLATE), and with
// `tests/peers/smollm2-tools.ollama.tmpl` (tools and one example call). Ollama's `/v1` samples at temperature 1.0 and
// top_p 1.0 whatever the Modelfile says when the request names none (pi names none); `PARAMETER top_k 1` is not
// overridden, and makes the sampling greedy: the tool call is the same every run. Each test's server listens on
// 127.0.0.1 only, keeps its models in a directory of its own, and is killed with its runners when the test ends.

use jr2_testkit::peers::{Ollama, OllamaServer};

/// Greedy under `/v1`'s forced temperature: `top_k 1` (see above), and the seed for good measure.
const GREEDY: &str = "PARAMETER top_k 1\nPARAMETER seed 1";

async fn start_ollama(config: Ollama) -> OllamaServer {
    tokio::task::spawn_blocking(move || config.start())
        .await
        .expect("join")
}

async fn create(ollama: &OllamaServer, name: &str, lines: &str) {
    tokio::task::block_in_place(|| ollama.create(name, lines));
}

/// `jr2-probe check --base-url <base> --model <model> -o json <extra>`.
async fn check_at(base: &str, model: &str, extra: &[&str]) -> common::Run {
    let mut args = vec!["check", "--base-url", base, "--model", model, "-o", "json"];
    args.extend(extra);
    probe(&args, &[]).await
}

/// The tool-capable model, greedy, with `more` lines.
fn tools_model(more: &str) -> String {
    format!("{}\n{GREEDY}\n{more}", OllamaServer::tools_template())
}

#[track_caller]
fn assert_ollama(run: &common::Run) -> jr2_probe::verdict::ModelResult {
    let m = run.verdict().models[0].clone();
    assert_eq!(
        m.findings.endpoint.as_ref().map(|e| e.kind),
        Some(EndpointKind::Ollama),
        "{}\n{}",
        run.stderr,
        run.stdout
    );
    m
}

/// The rows of issue 38's table Ollama refuses before any generation, on one Ollama, each the probe beside a real
/// Turn: a model without tools in its TEMPLATE, an unknown model, a base URL without `/v1` (and one with `/api`).
#[tokio::test(flavor = "multi_thread")]
async fn ollama_refusals_beside_real_turns() {
    let ollama = start_ollama(Ollama::default()).await;
    create(&ollama, "smol-plain", GREEDY).await;
    create(&ollama, "smol-tools", &tools_model("")).await;
    let base = ollama.base_url();
    let root = base.trim_end_matches("/v1").to_owned();

    // GET / says so.
    let r = tokio::task::block_in_place(|| ollama.server.get("/", None));
    assert_eq!((r.status, r.body.trim()), (200, "Ollama is running"));

    // A model whose TEMPLATE has no .Tools: Ollama refuses the tools.
    let run = check_at(&base, "smol-plain", &[]).await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.code, m.http_status),
        (Outcome::Http, Code::ToolsNotEnabled, Some(400)),
        "{}",
        run.stderr
    );
    assert!(
        m.error
            .as_deref()
            .is_some_and(|e| e.ends_with("smol-plain:latest does not support tools")),
        "{:?}",
        m.error
    );
    assert_cause(&run, &Cause::OllamaTemplateWithoutTools);
    assert!(
        m.findings.ollama_drops.is_empty(),
        "a refused request drops nothing"
    );
    let t = turn(custom_turn(&base, "smol-plain", 256, false), &[]).await;
    compare("ollama: a TEMPLATE without .Tools", &m, &t);

    // An unknown model.
    let run = check_at(&base, "nope:7b", &[]).await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.code, m.http_status),
        (Outcome::Http, Code::ModelNotFound, Some(404)),
        "{}",
        run.stderr
    );
    assert_cause(&run, &Cause::OllamaModelNotFound);
    let t = turn(custom_turn(&base, "nope:7b", 256, false), &[]).await;
    compare("ollama: an unknown model", &m, &t);

    // A base URL without /v1, and one with /api: Ollama's router answers `404 page not found`.
    for wrong in [root.clone(), format!("{root}/api")] {
        let run = check_at(&wrong, "smol-tools", &[]).await;
        let m = assert_ollama(&run);
        assert_eq!(
            (m.outcome, m.code, m.http_status),
            (Outcome::Http, Code::ModelNotFound, Some(404)),
            "{wrong}: {}",
            run.stderr
        );
        assert!(
            m.error
                .as_deref()
                .is_some_and(|e| e.contains("404 page not found")),
            "{:?}",
            m.error
        );
        assert_cause(&run, &Cause::OllamaBaseUrlWithoutV1);
        let t = turn(custom_turn(&wrong, "smol-tools", 256, false), &[]).await;
        compare("ollama: a base URL without /v1", &m, &t);
    }
}

/// A TEMPLATE as Ollama's library templates are: the tools in the system turn, the user's messages, and no
/// `developer` message (and no example call): SmolLM2-135M answers the probe's request in text.
const TEXT_TEMPLATE: &str = r#"TEMPLATE """{{- if .Tools }}<|im_start|>system
You can call these tools: {{ range .Tools }}{{ json .Function }}{{ end }}<|im_end|>
{{ end }}
{{- range .Messages }}{{ if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
{{ end }}{{ end }}<|im_start|>assistant
""""#;

/// A passing tool call through Ollama: SmolLM2-135M with `tests/peers/smollm2-tools.ollama.tmpl`, greedy. Known from
/// its chunks (`fp_ollama`), its context from `/api/ps`, the notes of what Ollama drops of a Turn's request; beside a
/// real Turn that gets the call. Then the same model under a `contextWindow` larger than the `num_ctx` it is served
/// with: `contextTooSmall` from `/api/ps`, with Ollama's own advice. And a TEMPLATE as the library's (no `developer`
/// message, no example): a text answer, whose notes add the temperature `/v1` forces (issue 38, table row 9), beside
/// a Turn that gets the same text.
#[tokio::test(flavor = "multi_thread")]
async fn ollama_passes_a_tool_call_beside_a_real_turn() {
    let ollama = start_ollama(Ollama {
        context_length: Some(2048),
        ..Ollama::default()
    })
    .await;
    create(&ollama, "smol-tools", &tools_model("")).await;
    let base = ollama.base_url();
    // The call is about 50 tokens of SmolLM2's after a 186-token prompt: seconds on a free core, and over the default
    // 120 s when the real_peers tests share two busy cores (a Turn waits as long: its headers come with the text).
    let run = check_at(&base, "smol-tools", &["--timeout", "600s"]).await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.level),
        (Outcome::Ok, Level::Pass),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    assert_eq!(m.tool_name.as_deref(), Some(jr2_probe::prompt::TOOL_NAME));
    assert_eq!(
        m.findings.endpoint.as_ref().and_then(|e| e.context_length),
        Some(2048),
        "OLLAMA_CONTEXT_LENGTH, read from /api/ps: {:?}",
        m.findings.endpoint
    );
    use jr2_probe::verdict::OllamaDrop;
    assert_eq!(
        m.findings.ollama_drops,
        vec![OllamaDrop::MaxCompletionTokens, OllamaDrop::DeveloperRole]
    );
    for d in &m.findings.ollama_drops {
        assert!(
            run.lines()
                .contains(&render::ollama_drop("smol-tools", *d).as_str()),
            "{}",
            run.stderr
        );
    }
    let t = turn(custom_turn(&base, "smol-tools", 256, false), &[]).await;
    compare("ollama: a TEMPLATE with .Tools", &m, &t);

    // A window of 8192 over the 2048 Ollama serves: the call passes, the context does not.
    let run = check_at(
        &base,
        "smol-tools",
        &["--context-window", "8192", "--timeout", "600s"],
    )
    .await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.code),
        (Outcome::Http, Code::ContextTooSmall),
        "{}",
        run.stderr
    );
    assert_cause(
        &run,
        &Cause::ContextTooSmall {
            served: 2048,
            needed: 8192,
            from_window: true,
            server: EndpointKind::Ollama,
            slots: None,
            prompt_cut: false,
        },
    );
    assert!(
        run.stderr.contains("PARAMETER num_ctx") && run.stderr.contains("OLLAMA_CONTEXT_LENGTH"),
        "{}",
        run.stderr
    );

    // The library's kind of TEMPLATE: text, and the temperature note with the other two.
    create(&ollama, "smol-text", &format!("{TEXT_TEMPLATE}\n{GREEDY}")).await;
    let show = tokio::task::block_in_place(|| {
        ollama
            .server
            .post("/api/show", None, &json!({"model": "smol-text"}))
    });
    assert!(
        show.json()["template"]
            .as_str()
            .is_some_and(|t| t.starts_with("{{- if .Tools }}<|im_start|>system\nYou can call")),
        "{}",
        show.body
    );
    let run = check_at(&base, "smol-text", &["--timeout", "600s"]).await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.level),
        (Outcome::Text, Level::Warning),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    assert_eq!(
        m.findings.ollama_drops,
        vec![
            OllamaDrop::MaxCompletionTokens,
            OllamaDrop::DeveloperRole,
            OllamaDrop::Temperature
        ]
    );
    for d in &m.findings.ollama_drops {
        assert!(
            run.lines()
                .contains(&render::ollama_drop("smol-text", *d).as_str()),
            "{}",
            run.stderr
        );
    }
    let t = turn(custom_turn(&base, "smol-text", 256, false), &[]).await;
    compare("ollama: a library TEMPLATE (text)", &m, &t);
}

/// `num_ctx` smaller than the probe's prompt, and no `--context-window` (issue 38, table row 4): Ollama answers 200
/// and cuts the prompt silently (only its log says `truncating input prompt`), keeping its start and its end. The
/// probe's estimate of its prompt (81 tokens) is under the 128 Ollama serves, but SmolLM2's tool TEMPLATE makes it 182:
/// the answer's `usage.prompt_tokens` (what Ollama kept) filling the context says it was cut. `contextTooSmall` from
/// `/api/ps`, with Ollama's advice; a real Turn on the same server gets what the model wrote after the cut prompt
/// (`PARAMETER num_predict 16` stops it: a Turn's `max_completion_tokens` is ignored, and SmolLM2 writes on for
/// minutes), and the difference is listed on purpose.
#[tokio::test(flavor = "multi_thread")]
async fn ollama_num_ctx_under_the_prompt_cuts_it() {
    let ollama = start_ollama(Ollama::default()).await;
    create(
        &ollama,
        "smol-cut",
        &tools_model("PARAMETER num_ctx 128\nPARAMETER num_predict 16"),
    )
    .await;
    let base = ollama.base_url();
    let run = check_at(&base, "smol-cut", &["--timeout", "600s"]).await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.code, m.level),
        (Outcome::Http, Code::ContextTooSmall, Level::Error),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    assert_eq!(
        m.findings.endpoint.as_ref().and_then(|e| e.context_length),
        Some(128),
        "PARAMETER num_ctx, read from /api/ps: {:?}",
        m.findings.endpoint
    );
    // The server's own word that it cut the prompt, which only its log gives.
    assert!(
        ollama
            .server
            .log()
            .contains("msg=\"truncating input prompt\" limit=128"),
        "{}",
        ollama.server.log()
    );
    assert_eq!(
        m.error.as_deref(),
        Some(render::context_cut_error(128).as_str())
    );
    assert_cause(
        &run,
        &Cause::ContextTooSmall {
            served: 128,
            needed: jr2_probe::prompt::estimated_tokens().max(129),
            from_window: false,
            server: EndpointKind::Ollama,
            slots: None,
            prompt_cut: true,
        },
    );
    assert!(
        run.stderr.contains("PARAMETER num_ctx") && run.stderr.contains("OLLAMA_CONTEXT_LENGTH"),
        "{}",
        run.stderr
    );
    let t = turn(custom_turn(&base, "smol-cut", 256, false), &[]).await;
    compare("ollama: num_ctx under the prompt, no contextWindow", &m, &t);
}

/// A TEMPLATE whose one example answer is `La la la ...`: SmolLM2-135M, greedy, answers the probe the same.
const LOOP_TEMPLATE: &str = r#"TEMPLATE """{{- if .Tools }}<|im_start|>system
You can call these tools: {{ range .Tools }}{{ json .Function }}{{ end }}<|im_end|>
{{ end }}
{{- range .Messages }}{{ if eq .Role "user" }}<|im_start|>user
{{ .Content }}<|im_end|>
<|im_start|>assistant
La la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la la<|im_end|>
<|im_start|>user
{{ .Content }}<|im_end|>
{{ end }}{{ end }}<|im_start|>assistant
""""#;

/// A model that writes one token over and over (issue 38, found while trying item 3): Ollama ends a generation whose
/// token repeats more than 30 times (`llm/server.go`: `prediction aborted, token repeat limit reached`, logged only
/// at `OLLAMA_DEBUG=1`) and closes the stream with neither a `finish_reason` nor `[DONE]`. The probe names Ollama's cut
/// (`ollamaRepeatLimit`) on its protocol error; a real Turn on the same server fails the same way.
#[tokio::test(flavor = "multi_thread")]
async fn ollama_cuts_a_model_that_repeats_one_token() {
    let ollama = start_ollama(Ollama::default()).await;
    create(&ollama, "smol-loop", &format!("{LOOP_TEMPLATE}\n{GREEDY}")).await;
    let base = ollama.base_url();
    let run = check_at(&base, "smol-loop", &["--timeout", "600s"]).await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.code, m.level),
        (Outcome::Protocol, Code::ProtocolError, Level::Error),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    assert_eq!(m.error.as_deref(), Some(render::STREAM_CUT_ERROR));
    assert!(
        m.answer
            .as_deref()
            .is_some_and(|a| a.ends_with(&" la".repeat(30))),
        "{:?}",
        m.answer
    );
    assert_cause(&run, &Cause::OllamaRepeatLimit);
    let t = turn(custom_turn(&base, "smol-loop", 256, false), &[]).await;
    assert_eq!(
        t.error_message.as_deref(),
        Some("Stream ended without finish_reason"),
        "{t:?}"
    );
    compare("ollama: one token over and over", &m, &t);
}

/// A TEMPLATE whose prompt is a count the model carries on (SmolLM2-135M, greedy, counts for as long as it may), and
/// whose tool-call block begins with `, `: Ollama's tool parser takes its tag from the head of that block (`,`), so
/// the first number streams as text and everything after the first comma is held back as a call that never closes.
/// The request's messages are not rendered: every request's prompt is the same, and Ollama's prompt cache serves it.
/// The count the [`COUNT_TEMPLATE`]'s prompt holds: 1 to 101 (a model shown less stops at a round number).
const COUNT: &str = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101,";

const COUNT_TEMPLATE: &str = r#"TEMPLATE """{{- if .Tools }}<|im_start|>system
You count, one number after the other, and never stop.<|im_end|>
<|im_start|>user
Count.<|im_end|>
<|im_start|>assistant
COUNT{{ end }}
{{- range .Messages }}{{ if .ToolCalls }}, {{ end }}{{ end }}"""
PARAMETER num_predict 100000"#;

/// Ollama's tool parser holding back a call the model began and never closed (issue 38, table row 6), on the real
/// server: text (` 102`), then Ollama's tag, then nothing while the model writes on. The probe's timeout names the
/// held-back call (`ollamaHeldBackCall`: text came, `/api/ps` lists the model); the waiting note says text streamed;
/// a real Turn on the same server gets nothing more either, until its abort. A first request of one token loads the
/// model and fills Ollama's prompt cache, so the probe's text comes in the first second of its 10 whatever the load.
#[tokio::test(flavor = "multi_thread")]
async fn ollama_holds_back_a_call_that_never_closes() {
    let ollama = start_ollama(Ollama {
        parallel: Some(1),
        ..Ollama::default()
    })
    .await;
    create(
        &ollama,
        "smol-count",
        &format!("{}\n{GREEDY}", COUNT_TEMPLATE.replace("COUNT", COUNT)),
    )
    .await;
    let base = ollama.base_url();
    // The first request: one token (`max_tokens`, which Ollama honours), read to its end, so its slot is free again
    // and holds the prompt when the probe's request comes.
    let mut warm = probe_request(256, None);
    warm["model"] = "smol-count".into();
    warm["max_tokens"] = 1.into();
    let warmed = post(&ollama.server, "/v1/chat/completions", None, warm).await;
    assert!(
        warmed.status == 200 && warmed.body.contains("\"finish_reason\":\"length\""),
        "{}",
        warmed.body
    );
    let run = check_at(
        &base,
        "smol-count",
        &["--timeout", "10s", "--waiting-note", "4s"],
    )
    .await;
    let m = assert_ollama(&run);
    assert_eq!(
        (m.outcome, m.code),
        (Outcome::Timeout, Code::Timeout),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    assert_eq!(
        m.error.as_deref(),
        Some(render::timeout_ollama_held_back_error("10").as_str()),
        "{}",
        run.stderr
    );
    assert_cause(&run, &Cause::OllamaHeldBackCall);
    assert!(
        run.stderr.contains(&render::waiting(
            "smol-count",
            std::time::Duration::from_secs(4),
            std::time::Duration::from_secs(10),
            jr2_probe::contract::events::WaitStage::Text
        )),
        "{}",
        run.stderr
    );
    let mut request = custom_turn(&base, "smol-count", 256, false);
    request["abortAfterMs"] = 10_000.into();
    let t = turn(request, &[]).await;
    compare("ollama: a call that never closes", &m, &t);
}

/// One slot (`OLLAMA_NUM_PARALLEL=1`) busy with another request: no byte until it frees. The waiting note asks
/// `/api/ps` when it comes and says the model is loaded, so a queue, not a load; the timeout's cause is Ollama's queue
/// (`/api/ps` again, before the deadline); a real Turn on the same server gets its call once the job has left. And
/// while the job holds the one model Ollama keeps loaded (`OLLAMA_MAX_LOADED_MODELS=1`), another model's request
/// waits for it to leave before its load: the note says Ollama has not loaded it (issue 38, item 4).
#[tokio::test(flavor = "multi_thread")]
async fn ollama_one_busy_slot_is_a_queue() {
    let ollama = start_ollama(Ollama {
        parallel: Some(1),
        max_loaded: Some(1),
        ..Ollama::default()
    })
    .await;
    create(&ollama, "smol-tools", &tools_model("")).await;
    create(&ollama, "smol-other", &tools_model("")).await;
    let base = ollama.base_url();
    // A job that holds the slot: a long text answer (`max_tokens` is honoured; no tools).
    let job = json!({
        "model": "smol-tools",
        "messages": [{"role": "user", "content": "Write a very long story."}],
        "stream": true,
        "max_tokens": 100000,
    });
    let held = tokio::task::block_in_place(|| ollama.server.hold("/v1/chat/completions", &job));
    // The model is loaded (/api/ps lists it) and the job is generating.
    let start = std::time::Instant::now();
    loop {
        let ps = tokio::task::block_in_place(|| ollama.server.get("/api/ps", None));
        if ps.body.contains("smol-tools") {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "never loaded: {}",
            ps.body
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let run = check_at(
        &base,
        "smol-tools",
        &["--timeout", "5s", "--waiting-note", "2s"],
    )
    .await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.code),
        (Outcome::Timeout, Code::Timeout),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    assert_eq!(
        m.error.as_deref(),
        Some(render::timeout_ollama_loaded_error("5").as_str())
    );
    // The error names what was seen, not the may-load tail; so does each waiting note, from its own look (bounded by
    // half the pace: 1 s here).
    assert!(!run.stderr.contains("once it has loaded"), "{}", run.stderr);
    let notes = |run: &common::Run| -> Vec<String> {
        run.lines()
            .into_iter()
            .filter(|l| l.contains("no verdict yet"))
            .map(str::to_owned)
            .collect()
    };
    let note = |model: &str, s: u64, timeout: u64, stage| {
        render::waiting(
            model,
            std::time::Duration::from_secs(s),
            std::time::Duration::from_secs(timeout),
            stage,
        )
    };
    use jr2_probe::contract::events::WaitStage;
    let queued = notes(&run);
    assert!(
        !queued.is_empty()
            && queued
                .iter()
                .enumerate()
                .all(|(i, l)| *l
                    == note("smol-tools", 2 * (i as u64 + 1), 5, WaitStage::OllamaLoaded)),
        "{queued:#?}\n{}",
        run.stderr
    );
    assert_cause(&run, &Cause::OllamaLoadedNoAnswer);

    // Another model while the job holds the only one Ollama keeps loaded: it waits for the job before its load, and
    // /api/ps does not list it. The timeout keeps the may-load tail: a load it is.
    let run = check_at(
        &base,
        "smol-other",
        &["--timeout", "3s", "--waiting-note", "2s"],
    )
    .await;
    let other = &run.verdict().models[0];
    assert_eq!(
        (other.outcome, other.code, other.findings.cause.as_ref()),
        (Outcome::Timeout, Code::Timeout, None),
        "{}\n{}",
        run.stderr,
        ollama.server.log()
    );
    let loading = notes(&run);
    assert!(
        !loading.is_empty()
            && loading.iter().enumerate().all(|(i, l)| *l
                == note(
                    "smol-other",
                    2 * (i as u64 + 1),
                    3,
                    WaitStage::OllamaNotLoaded
                )),
        "{loading:#?}\n{}",
        run.stderr
    );
    let ps = tokio::task::block_in_place(|| ollama.server.get("/api/ps", None));
    assert!(
        ps.body.contains("smol-tools") && !ps.body.contains("smol-other"),
        "{}",
        ps.body
    );

    // The job leaves; a Turn then gets its call from the same server (one that waited behind the job would wait up to
    // undici's 300 s for its headers, as the llama-server queue case shows).
    drop(held);
    let t = turn(custom_turn(&base, "smol-tools", 256, false), &[]).await;
    compare("ollama: OLLAMA_NUM_PARALLEL=1 with a job ahead", m, &t);
}
