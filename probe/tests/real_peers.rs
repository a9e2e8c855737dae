//! `jr2-probe check` against real third-party servers: llama-cpp-python running SmolLM2-135M, and a LiteLLM proxy
//! in front of it and of the fake provider. Installed by `tests/peers/install.sh`; each test starts its servers and
//! stops them when it ends. Each test runs its scenarios in sequence on one set of servers (LiteLLM takes seconds to
//! start).
//!
//! What these found, and the tests keep true:
//! - pi-ai 0.82.1 sends the system prompt of a custom-provider model as a `developer` message; llama-cpp-python
//!   0.3.36 rejects that role with a 500 (a pydantic validation error). Every Turn against it fails the same way,
//!   and the preflight says so before the converge.
//! - Behind LiteLLM (which maps `developer` to `system` for `hosted_vllm/` models) the real model makes a real tool
//!   call when the plan sets `tool_choice` to the tool; with no `tool_choice`, as a Turn sends by default,
//!   llama-cpp-python's `chatml-function-calling` answers in text, and so does the model without that format.

mod common;

use common::probe;
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_testkit::fake_provider::FakeProvider;
use jr2_testkit::peers::{LlamaModel, start_litellm, start_llama};

const LLAMA_KEY: &str = "sk-llama-test-key-0123456789";
const MASTER_KEY: &str = "sk-master-test-key-0123456789";

#[tokio::test(flavor = "multi_thread")]
async fn llama_cpp_python_answers_the_request_of_a_turn() {
    let llama = tokio::task::spawn_blocking(|| {
        start_llama(
            &[LlamaModel {
                alias: "smollm2",
                chat_format: Some("chatml-function-calling"),
            }],
            Some(LLAMA_KEY),
        )
    })
    .await
    .unwrap();
    let base = llama.base_url();
    let host = format!("127.0.0.1:{}", llama.port);

    // pi's exact request, with the right key: the server refuses the `developer` role, as it would every Turn.
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "smollm2",
            "--api-key-env",
            "K",
            "-o",
            "json",
        ],
        &[("K", LLAMA_KEY)],
    )
    .await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.http_status),
        (Outcome::Http, Level::Error, Some(500)),
        "{}\n{}",
        run.stderr,
        llama.log()
    );
    let error = m.error.as_deref().unwrap();
    assert!(
        error.starts_with("HTTP 500: ") && error.contains("'developer'"),
        "{error}"
    );
    assert_eq!(run.code, 1);
    assert!(run.lines()[1].starts_with(&format!(
        "error: provider preflight failed for model \"smollm2\" against {host} (from this machine, as a Turn calls it): HTTP 500: "
    )));
    assert!(!run.stdout.contains(LLAMA_KEY) && !run.stderr.contains(LLAMA_KEY));

    // A wrong key: llama-cpp-python's own 401, the two-line form.
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "smollm2",
            "--api-key-env",
            "K",
        ],
        &[("K", "sk-not-the-key-000000000")],
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1..],
        [
            format!(
                "error: provider preflight failed for model \"smollm2\" against {host} (from this machine, as a Turn calls it): HTTP 401: Invalid API key"
            ),
            "  - the held secret JR2_PROVIDER_API_KEY may be wrong (harness.provider.apiKey)"
                .to_owned(),
            "  - the model id must be exactly what the endpoint serves (vLLM: GET /v1/models)"
                .to_owned(),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_litellm_gateway_in_front_of_the_real_model_and_the_fake() {
    let fake = FakeProvider::start().await;
    let llama = tokio::task::spawn_blocking(|| {
        start_llama(
            &[
                LlamaModel {
                    alias: "smollm2-tools",
                    chat_format: Some("chatml-function-calling"),
                },
                LlamaModel {
                    alias: "smollm2-plain",
                    chat_format: None,
                },
            ],
            Some(LLAMA_KEY),
        )
    })
    .await
    .unwrap();
    let upstream = fake.base_url();
    let config = format!(
        r#"model_list:
  - model_name: llama-tools
    litellm_params: {{model: hosted_vllm/smollm2-tools, api_base: "{llama}", api_key: {LLAMA_KEY}}}
  - model_name: llama-plain
    litellm_params: {{model: hosted_vllm/smollm2-plain, api_base: "{llama}", api_key: {LLAMA_KEY}}}
  - model_name: fake-ok
    litellm_params: {{model: openai/ok, api_base: "{upstream}", api_key: sk-upstream-unused}}
  - model_name: fake-429
    litellm_params: {{model: openai/rate-limited, api_base: "{upstream}", api_key: sk-upstream-unused}}
  - model_name: fake-401
    litellm_params: {{model: openai/auth, api_base: "{upstream}", api_key: sk-upstream-unused}}
litellm_settings: {{num_retries: 0, request_timeout: 30, telemetry: false}}
general_settings: {{master_key: {MASTER_KEY}}}
"#,
        llama = llama.base_url()
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

    // The real model, its tool named: a real streamed tool call through the gateway.
    let run = check("llama-tools", &["--tool-choice", "named"]).await;
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Ok, "{}\n{}", run.stderr, gateway.log());
    assert_eq!(m.tool_name.as_deref(), Some("probe"));
    assert!(run.lines()[1].starts_with("provider: llama-tools completed a tool call ("));
    assert_eq!(run.code, 0);

    // No tool_choice, as a Turn sends: llama-cpp-python answers in text. So does the model without chatml-function-calling.
    for (model, extra) in [
        ("llama-tools", &[][..]),
        ("llama-plain", &["--tool-choice", "named"][..]),
    ] {
        let run = check(model, extra).await;
        let m = &run.verdict().models[0];
        assert_eq!(
            (m.outcome, m.level),
            (Outcome::Text, Level::Warning),
            "{model}: {}",
            run.stderr
        );
        assert_eq!(
            run.lines()[1],
            format!(
                "warning: provider: {model} answered the request of a Turn in text, not with a tool call"
            )
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
