//! `mistral-conversations` and `bedrock-converse-stream` in process, against their TLS fakes: the requests pi-ai
//! 0.82.1 sends for `mistral/mistral-small-latest` and `amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0`
//! (`research/pi-requests.md`, sections 8 and 9), every behaviour of the fakes, the tries and the outcome each one
//! ends with, and one exact rendering of the lines per kind.

mod common;

use std::time::Duration;

use jr2_probe::api::ApiKind;
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::prompt;
use jr2_probe::target::{self, Facts, Target};
use jr2_probe::verdict::{ModelResult, Origin};
use jr2_testkit::{fake_bedrock, fake_mistral};
use serde_json::{Value, json};

use common::{TlsFake as Fake, statuses};

impl Fake {
    /// `mistral/<id>` with the facts of `mistral/mistral-small-latest` (reasoning, contextWindow 256000,
    /// maxTokens 256000).
    fn mistral(&self, id: &str, key: Option<&str>) -> Target {
        Target::test(ApiKind::MistralConversations)
            .model(format!("mistral/{id}"))
            // The base URL as the catalog writes both providers': scheme and host, no path.
            .base_url(self.base())
            .catalog("mistral", "MISTRAL_API_KEY", key.is_some())
            .key("MISTRAL_API_KEY", key)
            // pi's clamp as the research captured it: 256000 - 85 (pi's estimate of this prompt) - 4096. The
            // plan computes the cap; the wire sends what the target carries.
            .max_tokens(251_819)
            .facts(Facts {
                provider: Some("mistral".into()),
                reasoning: true,
                ..Facts::default()
            })
            .session_id(target::new_session_id())
    }

    /// `amazon-bedrock/<id>` with the facts of `anthropic.claude-haiku-4-5-20251001-v1:0` (reasoning,
    /// contextWindow 200000, maxTokens 64000, `compat.supportsStrictMode`).
    fn bedrock(&self, id: &str, token: Option<&str>) -> Target {
        Target::test(ApiKind::BedrockConverseStream)
            .model(format!("amazon-bedrock/{id}"))
            .base_url(self.base())
            .catalog(
                "amazon-bedrock",
                "AWS_BEARER_TOKEN_BEDROCK",
                token.is_some(),
            )
            .key("AWS_BEARER_TOKEN_BEDROCK", token)
            .max_tokens(prompt::token_cap(64_000, 200_000))
            .facts(Facts {
                provider: Some("amazon-bedrock".into()),
                reasoning: true,
                compat: Some(json!({"supportsStrictMode": true})),
                ..Facts::default()
            })
            .session_id(target::new_session_id())
    }

    async fn check(&self, target: &Target) -> ModelResult {
        self.check_trusting(target, Duration::from_secs(3), 2).await
    }
}

fn outcome(r: &ModelResult) -> (Outcome, Code, Level) {
    (r.outcome, r.code, r.level)
}

// ---------------------------------------------------------------------------------------------------------------
// mistral-conversations

/// The body of section 8 of `research/pi-requests.md`.
fn mistral_body(id: &str, session: &str) -> Value {
    json!({
        "model": id,
        "max_tokens": 251_819,
        "stream": true,
        "messages": [
            {"role": "system", "content": "You check that this model can call tools."},
            {"role": "user", "content": [{"type": "text", "text": "Call the probe tool now with status \"ready\"."}]}
        ],
        "tools": [{
            "type": "function",
            "function": {
                "name": "probe",
                "description": "Report that this model can call tools. Call it once.",
                "strict": false,
                "parameters": {
                    "type": "object",
                    "required": ["status"],
                    "properties": {"status": {"type": "string", "enum": ["ready"], "description": "Always \"ready\"."}}
                }
            }
        }],
        "prompt_cache_key": session
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_tool_call_with_pis_request() {
    let f = Fake::start_with(fake_mistral::handler()).await;
    let t = f.mistral("mistral-small-latest", Some(fake_mistral::GOOD_KEY));
    let r = f.check(&t).await;
    common::assert_tool_call(&r, 251_819);

    let req = f.only_request();
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {}", fake_mistral::GOOD_KEY).as_str())
    );
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("accept"), Some("text/event-stream"));
    assert_eq!(req.header("x-affinity"), Some(t.session_id.as_str()));
    assert!(
        req.header("user-agent").unwrap().starts_with("jr2-probe/"),
        "{req:?}"
    );
    for absent in [
        "cookie",
        "accept-language",
        "sec-fetch-mode",
        "x-stainless-lang",
    ] {
        assert_eq!(req.header(absent), None, "{absent}");
    }
    assert_eq!(
        req.body,
        mistral_body("mistral-small-latest", &t.session_id)
    );

    let lines = jr2_probe::render::model_lines(&r, &Origin::ThisMachine);
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("provider: mistral/mistral-small-latest completed a tool call ("),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_text_length_and_error_stops() {
    let f = Fake::start_with(fake_mistral::handler()).await;
    let key = Some(fake_mistral::GOOD_KEY);

    let r = f.check(&f.mistral("text", key)).await;
    common::assert_text_warning(&r, "stop", fake_mistral::TEXT_ANSWER, "mistral/text");

    for (id, stop) in [("length", "length"), ("model-length", "model_length")] {
        let r = f.check(&f.mistral(id, key)).await;
        common::assert_length(&r, stop, 251819);
    }

    let r = f.check(&f.mistral("finish-error", key)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Http, Code::StreamError, Level::Error)
    );
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 200, then the stream stopped with \"error\" before any tool call")
    );
    assert_eq!(f.fake.requests().len(), 4, "no retries for any of these");
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_401_is_a_refused_key_with_the_catalog_lines() {
    let f = Fake::start_with(fake_mistral::handler()).await;
    let r = f
        .check(&f.mistral("mistral-small-latest", Some("wrong-mistral-key-000000")))
        .await;
    assert_eq!(statuses(&r), [Some(401)]);
    common::assert_refused_key_lines(
        &r,
        "mistral/mistral-small-latest",
        &f.host(),
        "MISTRAL_API_KEY",
        "HTTP 401: Unauthorized",
    );
    assert_eq!(
        f.only_request().header("authorization"),
        Some("Bearer wrong-mistral-key-000000")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_429_and_503_are_retried() {
    let f = Fake::start_with(fake_mistral::handler()).await;
    let key = Some(fake_mistral::GOOD_KEY);

    let r = f.check(&f.mistral("rate-limited", key)).await;
    common::assert_busy_warning(&r, "mistral/rate-limited", &f.host());
    assert_eq!(r.error.as_deref(), Some("HTTP 429: Rate limit exceeded"));
    assert!(r.tries[0].wait_taken_ms > 0);

    let r = f.check(&f.mistral("rate-limited-1", key)).await;
    assert_eq!(outcome(&r), (Outcome::Ok, Code::Ok, Level::Pass));
    assert_eq!(statuses(&r), [Some(429), Some(200)]);

    let r = f.check(&f.mistral("unavailable", key)).await;
    common::assert_unavailable(
        &r,
        2,
        "HTTP 503: Service unavailable, please try again later",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_invalid_model_and_missing_key() {
    let f = Fake::start_with(fake_mistral::handler()).await;
    let r = f
        .check(&f.mistral("mistral-nonexistent", Some(fake_mistral::GOOD_KEY)))
        .await;
    assert_eq!(
        outcome(&r),
        (Outcome::Http, Code::ModelNotFound, Level::Error)
    );
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 400: Invalid model: mistral-nonexistent")
    );
    assert_eq!(statuses(&r), [Some(400)]);

    // No key: pi throws before sending, and so does the probe.
    let before = f.fake.requests().len();
    let r = f.check(&f.mistral("mistral-small-latest", None)).await;
    common::assert_no_key(
        &r,
        "no key for provider mistral: MISTRAL_API_KEY is not set, and a Turn sends nothing without one",
        "mistral",
        "MISTRAL_API_KEY",
    );
    assert_eq!(f.fake.requests().len(), before, "nothing was sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_stall_times_out() {
    let f = Fake::start_with(fake_mistral::handler()).await;
    let r = f
        .check(&f.mistral("stall", Some(fake_mistral::GOOD_KEY)))
        .await;
    assert_eq!(outcome(&r), (Outcome::Timeout, Code::Timeout, Level::Error));
    assert_eq!(r.error.as_deref(), Some("no answer in 3 s"));
}

// ---------------------------------------------------------------------------------------------------------------
// bedrock-converse-stream

/// The body of section 9 of `research/pi-requests.md`.
fn bedrock_body() -> Value {
    json!({
        "messages": [{"role": "user", "content": [
            {"text": "Call the probe tool now with status \"ready\"."},
            {"cachePoint": {"type": "default"}}
        ]}],
        "system": [
            {"text": "You check that this model can call tools."},
            {"cachePoint": {"type": "default"}}
        ],
        "inferenceConfig": {"maxTokens": 64000},
        "toolConfig": {"tools": [{"toolSpec": {
            "name": "probe",
            "inputSchema": {"json": {
                "type": "object",
                "required": ["status"],
                "properties": {"status": {"type": "string", "enum": ["ready"], "description": "Always \"ready\"."}}
            }},
            "description": "Report that this model can call tools. Call it once."
        }}]}
    })
}

fn fake_id(behaviour: &str) -> String {
    format!("fake.{behaviour}-v1:0")
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_tool_call_with_pis_request() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let t = f.bedrock(fake_bedrock::HAIKU, Some(fake_bedrock::GOOD_TOKEN));
    let r = f.check(&t).await;
    common::assert_tool_call(&r, 64_000);

    let req = f.only_request();
    assert_eq!(req.method, "POST");
    assert_eq!(
        req.path,
        "/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream"
    );
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {}", fake_bedrock::GOOD_TOKEN).as_str())
    );
    assert_eq!(req.header("content-type"), Some("application/json"));
    for absent in [
        "amz-sdk-invocation-id",
        "amz-sdk-request",
        "x-amz-user-agent",
        "x-amz-date",
        "x-affinity",
    ] {
        assert_eq!(req.header(absent), None, "{absent}");
    }
    assert_eq!(req.body, bedrock_body());

    let lines = jr2_probe::render::model_lines(&r, &Origin::ThisMachine);
    assert!(
        lines[0].starts_with(
            "provider: amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0 completed a tool call ("
        ),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_text_and_max_tokens() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let token = Some(fake_bedrock::GOOD_TOKEN);

    let r = f.check(&f.bedrock(&fake_id("text"), token)).await;
    common::assert_text_warning(
        &r,
        "end_turn",
        fake_bedrock::TEXT_ANSWER,
        "amazon-bedrock/fake.text-v1:0",
    );

    let r = f.check(&f.bedrock(&fake_id("max-tokens"), token)).await;
    common::assert_length(&r, "max_tokens", 64000);
    let paths: Vec<String> = f.fake.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/model/fake.text-v1%3A0/converse-stream",
            "/model/fake.max-tokens-v1%3A0/converse-stream"
        ]
    );
    // Not a Claude model pi caches: no cache points.
    let body = &f.fake.requests()[0].body;
    assert_eq!(
        body["system"],
        json!([{"text": "You check that this model can call tools."}])
    );
    assert_eq!(body["messages"][0]["content"].as_array().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_throttling_exception_after_the_200_is_busy() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let r = f
        .check(&f.bedrock(
            &fake_id("throttled-after-200"),
            Some(fake_bedrock::GOOD_TOKEN),
        ))
        .await;
    assert_eq!(outcome(&r), (Outcome::Busy, Code::Busy, Level::Warning));
    assert_eq!(statuses(&r), [Some(200), Some(200)]);
    assert_eq!(
        r.error.as_deref(),
        Some(
            "HTTP 200, then an error in the stream: throttlingException: Too many tokens, please wait before trying again."
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_403_access_denied_with_the_catalog_lines() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let r = f
        .check(&f.bedrock(&fake_id("denied"), Some(fake_bedrock::GOOD_TOKEN)))
        .await;
    assert_eq!(statuses(&r), [Some(403)]);
    common::assert_refused_key_lines(
        &r,
        "amazon-bedrock/fake.denied-v1:0",
        &f.host(),
        "AWS_BEARER_TOKEN_BEDROCK",
        "HTTP 403: You don't have access to the model with the specified model ID.",
    );

    // A token Bedrock does not know: 403 UnrecognizedClientException.
    let r = f
        .check(&f.bedrock(fake_bedrock::HAIKU, Some("ABSK-wrong-token-0000")))
        .await;
    assert_eq!(
        outcome(&r),
        (Outcome::KeyRefused, Code::KeyRefused, Level::Error)
    );
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 403: The security token included in the request is invalid.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_429_throttling_is_retried() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let token = Some(fake_bedrock::GOOD_TOKEN);

    let r = f.check(&f.bedrock(&fake_id("throttled"), token)).await;
    common::assert_busy_warning(&r, "amazon-bedrock/fake.throttled-v1:0", &f.host());
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 429: Too many requests, please wait before trying again.")
    );

    let r = f.check(&f.bedrock(&fake_id("throttled-1"), token)).await;
    assert_eq!(outcome(&r), (Outcome::Ok, Code::Ok, Level::Pass));
    assert_eq!(statuses(&r), [Some(429), Some(200)]);

    let r = f.check(&f.bedrock(&fake_id("unavailable"), token)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Unavailable, Code::Unavailable, Level::Error)
    );
    assert_eq!(statuses(&r), [Some(503), Some(503)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_invalid_and_missing_models() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let token = Some(fake_bedrock::GOOD_TOKEN);

    let r = f
        .check(&f.bedrock("anthropic.claude-nonexistent-v9:0", token))
        .await;
    assert_eq!(
        outcome(&r),
        (Outcome::Http, Code::ModelNotFound, Level::Error)
    );
    assert_eq!(statuses(&r), [Some(400)]);
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 400: The provided model identifier is invalid.")
    );

    let r = f.check(&f.bedrock(&fake_id("missing"), token)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Http, Code::ModelNotFound, Level::Error)
    );
    assert_eq!(statuses(&r), [Some(404)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_broken_frame_and_stall() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let token = Some(fake_bedrock::GOOD_TOKEN);

    let r = f.check(&f.bedrock(&fake_id("bad-crc"), token)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Protocol, Code::ProtocolError, Level::Error)
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            "HTTP 200, but the stream cannot be read: an AWS event stream message has a bad checksum"
        )
    );

    let r = f.check(&f.bedrock(&fake_id("stall"), token)).await;
    assert_eq!(outcome(&r), (Outcome::Timeout, Code::Timeout, Level::Error));
    assert_eq!(r.error.as_deref(), Some("no answer in 3 s"));
}

#[tokio::test(flavor = "multi_thread")]
async fn bedrock_without_a_bearer_token_is_unsupported() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let r = f.check(&f.bedrock(fake_bedrock::HAIKU, None)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Unsupported, Code::Unsupported, Level::Error)
    );
    assert!(
        r.error.as_deref().unwrap().starts_with(
            "not supported by the preflight yet: bedrock-converse-stream with SigV4 credentials"
        ),
        "{:?}",
        r.error
    );
    assert!(f.fake.requests().is_empty(), "nothing was sent");
}

/// Issue 12, item 11: pi's catalog lists no key variable for `amazon-bedrock`, but a Turn reads Bedrock's bearer
/// token from `AWS_BEARER_TOKEN_BEDROCK`: by hand the probe reads it too (before: "which is not set", nothing
/// sent), and without it the hint names it (before: "add the key of amazon-bedrock").
#[tokio::test(flavor = "multi_thread")]
async fn by_hand_bedrock_s_key_is_its_bearer_token_variable() {
    let f = Fake::start_with(fake_bedrock::handler()).await;
    let ca = f.ca.ca_file.to_str().unwrap().to_owned();
    let gateway = format!("https://{}", f.fake.addr());
    let model = format!("amazon-bedrock/{}", fake_bedrock::HAIKU);
    let args = [
        "check",
        "--model",
        &model,
        "--gateway",
        &gateway,
        "--ca-bundle",
        &ca,
        "--timeout",
        "3s",
        "-o",
        "json",
    ];
    let run = common::probe(
        &args,
        &[("AWS_BEARER_TOKEN_BEDROCK", fake_bedrock::GOOD_TOKEN)],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.verdict().models[0].outcome, Outcome::Ok);
    let sent = f.only_request();
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {}", fake_bedrock::GOOD_TOKEN).as_str())
    );

    let run = common::probe(&args, &[]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.lines().contains(
            &"  - no Harness pod holds a key of amazon-bedrock: add AWS_BEARER_TOKEN_BEDROCK to `secrets` in jr2.config.ts"
        ),
        "{}",
        run.stderr
    );
}
