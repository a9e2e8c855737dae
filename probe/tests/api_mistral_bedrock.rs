//! `mistral-conversations` and `bedrock-converse-stream` in process, against their TLS fakes: the requests pi-ai
//! 0.82.1 sends for `mistral/mistral-small-latest` and `amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0`
//! (`research/pi-requests.md`, sections 8 and 9), every behaviour of the fakes, the tries and the outcome each one
//! ends with, and one exact rendering of the lines per kind.

mod common;

use std::time::Duration;

use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::prompt;
use jr2_probe::target::{self, Facts, Key, Secret, Target};
use jr2_probe::verdict::{ModelResult, Origin, Route};
use jr2_testkit::fake_provider::{FakeProvider, Handler, Recorded, TestCa};
use jr2_testkit::{fake_bedrock, fake_mistral};
use serde_json::{Value, json};

struct Fake {
    fake: FakeProvider,
    ca: TestCa,
}

impl Fake {
    async fn start(handler: Handler) -> Self {
        let ca = TestCa::new(&["127.0.0.1"]);
        let fake = FakeProvider::start_with(handler, Some(&ca)).await;
        Self { fake, ca }
    }

    /// The base URL as the catalog writes both providers': scheme and host, no path.
    fn base(&self) -> reqwest::Url {
        reqwest::Url::parse(&format!("https://{}", self.fake.addr())).unwrap()
    }

    fn host(&self) -> String {
        self.fake.addr().to_string()
    }

    /// `mistral/<id>` with the facts of `mistral/mistral-small-latest` (reasoning, contextWindow 256000,
    /// maxTokens 256000).
    fn mistral(&self, id: &str, key: Option<&str>) -> Target {
        Target {
            model: format!("mistral/{id}"),
            id: id.to_owned(),
            api: ApiKind::MistralConversations,
            base_url: self.base(),
            route: Route::Catalog {
                provider: "mistral".into(),
                via_custodian: false,
                key_env: "MISTRAL_API_KEY".into(),
                key_held: key.is_some(),
                gateway: false,
            },
            key: key.map(|k| Key {
                env: "MISTRAL_API_KEY".into(),
                value: Secret::new(k.into()),
            }),
            // pi's clamp as the research captured it: 256000 - 85 (pi's estimate of this prompt) - 4096. The
            // plan computes the cap; the wire sends what the target carries.
            max_tokens: 251_819,
            tool_choice: ToolChoice::Unset,
            facts: Facts {
                provider: Some("mistral".into()),
                reasoning: true,
                ..Facts::default()
            },
            session_id: target::new_session_id(),
        }
    }

    /// `amazon-bedrock/<id>` with the facts of `anthropic.claude-haiku-4-5-20251001-v1:0` (reasoning,
    /// contextWindow 200000, maxTokens 64000, `compat.supportsStrictMode`).
    fn bedrock(&self, id: &str, token: Option<&str>) -> Target {
        Target {
            model: format!("amazon-bedrock/{id}"),
            id: id.to_owned(),
            api: ApiKind::BedrockConverseStream,
            base_url: self.base(),
            route: Route::Catalog {
                provider: "amazon-bedrock".into(),
                via_custodian: false,
                key_env: "AWS_BEARER_TOKEN_BEDROCK".into(),
                key_held: token.is_some(),
                gateway: false,
            },
            key: token.map(|k| Key {
                env: "AWS_BEARER_TOKEN_BEDROCK".into(),
                value: Secret::new(k.into()),
            }),
            max_tokens: prompt::token_cap(64_000, 200_000),
            tool_choice: ToolChoice::Unset,
            facts: Facts {
                provider: Some("amazon-bedrock".into()),
                reasoning: true,
                compat: Some(json!({"supportsStrictMode": true})),
                ..Facts::default()
            },
            session_id: target::new_session_id(),
        }
    }

    async fn check(&self, target: &Target) -> ModelResult {
        common::check_trusting(&self.ca.ca_file, target, Duration::from_secs(3), 2).await
    }

    fn only_request(&self) -> Recorded {
        let all = self.fake.requests();
        assert_eq!(all.len(), 1, "{all:#?}");
        all.into_iter().next().unwrap()
    }
}

fn statuses(r: &ModelResult) -> Vec<Option<u16>> {
    r.tries.iter().map(|t| t.status).collect()
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
    let f = Fake::start(fake_mistral::handler()).await;
    let t = f.mistral("mistral-small-latest", Some(fake_mistral::GOOD_KEY));
    let r = f.check(&t).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Ok, Code::Ok, Level::Pass),
        "{:?}",
        r.error
    );
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    assert_eq!(statuses(&r), [Some(200)]);
    assert_eq!(r.max_tokens, 251_819);

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
    let f = Fake::start(fake_mistral::handler()).await;
    let key = Some(fake_mistral::GOOD_KEY);

    let r = f.check(&f.mistral("text", key)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Text, Code::TextAnswer, Level::Warning)
    );
    assert_eq!(r.stop_reason.as_deref(), Some("stop"));
    assert_eq!(r.answer.as_deref(), Some(fake_mistral::TEXT_ANSWER));
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [
            "warning: provider: mistral/text answered the request of a Turn in text, not with a tool call"
        ]
    );

    for (id, stop) in [("length", "length"), ("model-length", "model_length")] {
        let r = f.check(&f.mistral(id, key)).await;
        assert_eq!(
            outcome(&r),
            (Outcome::Length, Code::Length, Level::Error),
            "{id}"
        );
        assert_eq!(r.stop_reason.as_deref(), Some(stop));
        assert_eq!(
            r.error.as_deref(),
            Some(
                format!(
                    "stop reason \"{stop}\" before any tool call (the token cap sent was 251819)"
                )
                .as_str()
            )
        );
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
    let f = Fake::start(fake_mistral::handler()).await;
    let r = f
        .check(&f.mistral("mistral-small-latest", Some("wrong-mistral-key-000000")))
        .await;
    assert_eq!(
        outcome(&r),
        (Outcome::KeyRefused, Code::KeyRefused, Level::Error)
    );
    assert_eq!(statuses(&r), [Some(401)]);
    assert_eq!(r.error.as_deref(), Some("HTTP 401: Unauthorized"));
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [
            format!(
                "error: provider preflight failed for model \"mistral/mistral-small-latest\" toward {} (from this machine, direct, as a Turn calls it): HTTP 401: Unauthorized",
                f.host()
            ),
            "  - the held secret MISTRAL_API_KEY may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)".to_owned(),
            "  - a private CA on that path must be in harness.caBundle".to_owned(),
        ]
    );
    assert_eq!(
        f.only_request().header("authorization"),
        Some("Bearer wrong-mistral-key-000000")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_429_and_503_are_retried() {
    let f = Fake::start(fake_mistral::handler()).await;
    let key = Some(fake_mistral::GOOD_KEY);

    let r = f.check(&f.mistral("rate-limited", key)).await;
    assert_eq!(outcome(&r), (Outcome::Busy, Code::Busy, Level::Warning));
    assert_eq!(statuses(&r), [Some(429), Some(429)]);
    assert_eq!(r.error.as_deref(), Some("HTTP 429: Rate limit exceeded"));
    assert!(r.tries[0].wait_taken_ms > 0);
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [format!(
            "warning: provider: mistral/rate-limited is busy toward {} after 2 tries (HTTP 429) — not confirmed; a Turn retries the same way",
            f.host()
        )]
    );

    let r = f.check(&f.mistral("rate-limited-1", key)).await;
    assert_eq!(outcome(&r), (Outcome::Ok, Code::Ok, Level::Pass));
    assert_eq!(statuses(&r), [Some(429), Some(200)]);

    let r = f.check(&f.mistral("unavailable", key)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Unavailable, Code::Unavailable, Level::Error)
    );
    assert_eq!(statuses(&r), [Some(503), Some(503)]);
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 503: Service unavailable, please try again later")
    );
    let lines = jr2_probe::render::model_lines(&r, &Origin::ThisMachine);
    assert_eq!(
        lines.last().map(String::as_str),
        Some(
            "  - a 503 comes from a gateway with no backend, or from a server that still loads its model"
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_invalid_model_and_missing_key() {
    let f = Fake::start(fake_mistral::handler()).await;
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
    assert_eq!(
        outcome(&r),
        (Outcome::KeyRefused, Code::KeyRefused, Level::Error)
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            "no key for provider mistral: MISTRAL_API_KEY is not set, and a Turn sends nothing without one"
        )
    );
    assert_eq!(f.fake.requests().len(), before, "nothing was sent");
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine)[1],
        "  - no Harness pod holds a key of mistral: add MISTRAL_API_KEY to `secrets` in jr2.config.ts"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn mistral_stall_times_out() {
    let f = Fake::start(fake_mistral::handler()).await;
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
    let f = Fake::start(fake_bedrock::handler()).await;
    let t = f.bedrock(fake_bedrock::HAIKU, Some(fake_bedrock::GOOD_TOKEN));
    let r = f.check(&t).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Ok, Code::Ok, Level::Pass),
        "{:?}",
        r.error
    );
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    assert_eq!(statuses(&r), [Some(200)]);
    assert_eq!(r.max_tokens, 64_000);

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
    let f = Fake::start(fake_bedrock::handler()).await;
    let token = Some(fake_bedrock::GOOD_TOKEN);

    let r = f.check(&f.bedrock(&fake_id("text"), token)).await;
    assert_eq!(
        outcome(&r),
        (Outcome::Text, Code::TextAnswer, Level::Warning)
    );
    assert_eq!(r.stop_reason.as_deref(), Some("end_turn"));
    assert_eq!(r.answer.as_deref(), Some(fake_bedrock::TEXT_ANSWER));

    let r = f.check(&f.bedrock(&fake_id("max-tokens"), token)).await;
    assert_eq!(outcome(&r), (Outcome::Length, Code::Length, Level::Error));
    assert_eq!(r.stop_reason.as_deref(), Some("max_tokens"));
    assert_eq!(
        r.error.as_deref(),
        Some("stop reason \"max_tokens\" before any tool call (the token cap sent was 64000)")
    );
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
    let f = Fake::start(fake_bedrock::handler()).await;
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
    let f = Fake::start(fake_bedrock::handler()).await;
    let r = f
        .check(&f.bedrock(&fake_id("denied"), Some(fake_bedrock::GOOD_TOKEN)))
        .await;
    assert_eq!(
        outcome(&r),
        (Outcome::KeyRefused, Code::KeyRefused, Level::Error)
    );
    assert_eq!(statuses(&r), [Some(403)]);
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [
            format!(
                "error: provider preflight failed for model \"amazon-bedrock/fake.denied-v1:0\" toward {} (from this machine, direct, as a Turn calls it): HTTP 403: You don't have access to the model with the specified model ID.",
                f.host()
            ),
            "  - the held secret AWS_BEARER_TOKEN_BEDROCK may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)".to_owned(),
            "  - a private CA on that path must be in harness.caBundle".to_owned(),
        ]
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
    let f = Fake::start(fake_bedrock::handler()).await;
    let token = Some(fake_bedrock::GOOD_TOKEN);

    let r = f.check(&f.bedrock(&fake_id("throttled"), token)).await;
    assert_eq!(outcome(&r), (Outcome::Busy, Code::Busy, Level::Warning));
    assert_eq!(statuses(&r), [Some(429), Some(429)]);
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 429: Too many requests, please wait before trying again.")
    );
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [format!(
            "warning: provider: amazon-bedrock/fake.throttled-v1:0 is busy toward {} after 2 tries (HTTP 429) — not confirmed; a Turn retries the same way",
            f.host()
        )]
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
    let f = Fake::start(fake_bedrock::handler()).await;
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
    let f = Fake::start(fake_bedrock::handler()).await;
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
    let f = Fake::start(fake_bedrock::handler()).await;
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
