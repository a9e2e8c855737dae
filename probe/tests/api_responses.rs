//! `openai-responses` and `azure-openai-responses` in process, against the TLS fake of the Responses API: the
//! request pi-ai 0.82.1 sends for `openai/gpt-5-mini` and `azure-openai-responses/gpt-5-mini`
//! (`research/pi-requests.md`, sections 6 and 7), every behaviour of the fake, the tries and the outcome each one
//! ends with, and the catalog form of the lines for a refused key.
//!
//! The Azure checks read `AZURE_OPENAI_*` from the process environment, as the probe does: they expect none of them
//! to be set (they never are where the tests run; the values are tested through the module's lookup closure).

mod common;

use std::time::Duration;

use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::target::{self, Facts, Key, Secret, Target};
use jr2_probe::verdict::{ModelResult, Origin, Route};
use jr2_testkit::fake_provider::{FakeProvider, Recorded, TestCa};
use jr2_testkit::fake_responses::{self, GOOD_KEY, RETRY_AFTER_MS, TEXT_ANSWER};
use serde_json::{Value, json};

const WRONG_KEY: &str = "sk-proj-wrong-key-0000000000";

struct Fake {
    fake: FakeProvider,
    ca: TestCa,
}

impl Fake {
    async fn start() -> Self {
        let ca = TestCa::new(&["127.0.0.1"]);
        let fake = FakeProvider::start_with(fake_responses::handler(), Some(&ca)).await;
        Self { fake, ca }
    }

    fn host(&self) -> String {
        self.fake.addr().to_string()
    }

    /// The catalog's `openai/gpt-5-mini` (maxTokens 128000, contextWindow 400000: no clamp), sending `id`.
    fn openai(&self, id: &str, key: Option<&str>) -> Target {
        Target {
            model: "openai/gpt-5-mini".to_owned(),
            id: id.to_owned(),
            api: ApiKind::OpenAiResponses,
            base_url: reqwest::Url::parse(&self.fake.base_url()).unwrap(),
            route: Route::Catalog {
                provider: "openai".into(),
                via_custodian: false,
                key_env: "OPENAI_API_KEY".into(),
                key_held: key.is_some(),
                gateway: false,
            },
            key: key.map(|k| Key {
                env: "OPENAI_API_KEY".into(),
                value: Secret::new(k.into()),
            }),
            max_tokens: 128_000,
            tool_choice: ToolChoice::Unset,
            facts: Facts {
                provider: Some("openai".into()),
                reasoning: true,
                thinking_level_map: Some(json!({
                    "off": null, "minimal": "minimal", "low": "low", "medium": "medium", "high": "high",
                    "xhigh": null, "max": null
                })),
                compat: Some(
                    json!({"supportsStrictMode": true, "supportsOpenAIGrammarTools": true}),
                ),
                headers: None,
            },
            session_id: target::new_session_id(),
        }
    }

    /// The catalog's `azure-openai-responses/gpt-5-mini`; its catalog base URL is empty, so the test gives the
    /// model's base URL (what pi falls back to when the environment names none).
    fn azure(&self, id: &str, key: &str) -> Target {
        Target {
            model: "azure-openai-responses/gpt-5-mini".to_owned(),
            id: id.to_owned(),
            api: ApiKind::AzureOpenAiResponses,
            base_url: reqwest::Url::parse(&format!("https://{}/openai/v1", self.fake.addr()))
                .unwrap(),
            route: Route::Catalog {
                provider: "azure-openai-responses".into(),
                via_custodian: false,
                key_env: "AZURE_OPENAI_API_KEY".into(),
                key_held: true,
                gateway: false,
            },
            key: Some(Key {
                env: "AZURE_OPENAI_API_KEY".into(),
                value: Secret::new(key.into()),
            }),
            max_tokens: 128_000,
            tool_choice: ToolChoice::Unset,
            facts: Facts {
                provider: Some("azure-openai-responses".into()),
                reasoning: true,
                thinking_level_map: Some(json!({"off": null})),
                compat: Some(json!({"supportsOpenAIGrammarTools": true})),
                headers: None,
            },
            session_id: target::new_session_id(),
        }
    }

    async fn check(&self, target: &Target) -> ModelResult {
        common::check_trusting(&self.ca.ca_file, target, Duration::from_secs(3), 2).await
    }

    /// Checks `openai/gpt-5-mini` sending `id`, with the good key.
    async fn check_id(&self, id: &str) -> ModelResult {
        self.check(&self.openai(id, Some(GOOD_KEY))).await
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

fn assert_no_azure_env() {
    for var in [
        "AZURE_OPENAI_BASE_URL",
        "AZURE_OPENAI_RESOURCE_NAME",
        "AZURE_OPENAI_API_VERSION",
        "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
    ] {
        assert!(
            std::env::var_os(var).is_none_or(|v| v.is_empty()),
            "unset {var}: the probe reads it, and this test expects pi's defaults"
        );
    }
}

/// The body of sections 6 and 7 of `research/pi-requests.md`, for `model` and the conversation `session`.
fn pis_body(model: &str, session: &str) -> Value {
    json!({
        "model": model,
        "input": [
            {"role": "developer", "content": "You check that this model can call tools."},
            {"role": "user", "content": [{
                "type": "input_text",
                "text": "Call the probe tool now with status \"ready\"."
            }]}
        ],
        "stream": true,
        "prompt_cache_key": session,
        "store": false,
        "max_output_tokens": 128000,
        "tools": [{
            "type": "function",
            "name": "probe",
            "description": "Report that this model can call tools. Call it once.",
            "parameters": {
                "type": "object",
                "required": ["status"],
                "properties": {"status": {"type": "string", "enum": ["ready"], "description": "Always \"ready\"."}}
            },
            "strict": false
        }]
    })
}

fn assert_probe_headers(req: &Recorded) {
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("accept"), Some("application/json"));
    assert_eq!(
        req.header("user-agent"),
        Some(concat!("jr2-probe/", env!("CARGO_PKG_VERSION")))
    );
    assert!(
        req.headers
            .iter()
            .all(|(name, _)| !name.starts_with("x-stainless")),
        "{:?}",
        req.headers
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_with_the_request_pi_sends() {
    let f = Fake::start().await;
    let t = f.openai("gpt-5-mini", Some(GOOD_KEY));
    let r = f.check(&t).await;
    assert_eq!(
        (r.outcome, r.code, r.level),
        (Outcome::Ok, Code::Ok, Level::Pass),
        "{r:?}"
    );
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    assert_eq!(r.error, None);
    assert_eq!(r.http_status, Some(200));
    assert_eq!(statuses(&r), [Some(200)]);
    assert_eq!(r.max_tokens, 128_000);
    let timings = r.tries[0].timings;
    assert!(
        timings.tool_call_ms.is_some() && timings.tls_ms.is_some(),
        "{timings:?}"
    );

    let req = f.only_request();
    assert_probe_headers(&req);
    assert_eq!(req.path, "/v1/responses");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {GOOD_KEY}").as_str())
    );
    assert_eq!(req.header("api-key"), None);
    // Affinity: the conversation id, in OpenAI's two headers, and as the cache key.
    assert_eq!(req.header("session_id"), Some(t.session_id.as_str()));
    assert_eq!(
        req.header("x-client-request-id"),
        Some(t.session_id.as_str())
    );
    assert_eq!(req.header("x-session-id"), None);
    assert_eq!(req.body, pis_body("gpt-5-mini", &t.session_id));
    // gpt-5-mini cannot stop reasoning (thinkingLevelMap.off is null): no reasoning field, and no tool_choice.
    assert!(req.body.get("reasoning").is_none() && req.body.get("tool_choice").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_sends_its_key_and_api_version() {
    assert_no_azure_env();
    let f = Fake::start().await;
    let t = f.azure("gpt-5-mini", GOOD_KEY);
    let r = f.check(&t).await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:?}");
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    assert_eq!(r.api, ApiKind::AzureOpenAiResponses);

    let req = f.only_request();
    assert_probe_headers(&req);
    assert_eq!(req.path, "/openai/v1/responses?api-version=v1");
    assert_eq!(req.header("api-key"), Some(GOOD_KEY));
    for absent in [
        "authorization",
        "session_id",
        "x-client-request-id",
        "x-session-id",
    ] {
        assert_eq!(req.header(absent), None, "{absent}");
    }
    assert_eq!(req.body, pis_body("gpt-5-mini", &t.session_id));
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_refuses_a_wrong_key_in_its_own_words() {
    assert_no_azure_env();
    let f = Fake::start().await;
    let r = f
        .check(&f.azure("gpt-5-mini", "0123456789abcdef0123456789abcdef"))
        .await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::KeyRefused, Code::KeyRefused),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            "HTTP 401: Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
        )
    );
    assert_eq!(statuses(&r), [Some(401)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn azure_without_a_base_url_sends_nothing() {
    assert_no_azure_env();
    let f = Fake::start().await;
    let mut t = f.azure("gpt-5-mini", GOOD_KEY);
    // What the catalog's empty base URL becomes in a target.
    t.base_url = reqwest::Url::parse("https://azure-openai.invalid/openai/v1").unwrap();
    let r = f.check(&t).await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Unreachable, Code::Unreachable),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            "no Azure OpenAI base URL: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME where the Harness runs (a Turn fails the same way before it sends anything)"
        )
    );
    assert_eq!(statuses(&r), [None]);
    assert!(f.fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_tool_choice_is_sent_to_openai_only() {
    assert_no_azure_env();
    let f = Fake::start().await;
    let mut t = f.openai("ok", Some(GOOD_KEY));
    t.tool_choice = ToolChoice::Named;
    let r = f.check(&t).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    let mut expected = pis_body("ok", &t.session_id);
    expected["tool_choice"] = json!({"type": "function", "name": "probe"});
    assert_eq!(f.only_request().body, expected);

    // pi's Azure request carries no tool_choice, whatever the caller asks.
    let mut t = f.azure("ok@azure", GOOD_KEY);
    t.tool_choice = ToolChoice::Required;
    let r = f.check(&t).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    let req = &f.fake.requests_for("ok@azure")[0];
    assert!(req.body.get("tool_choice").is_none(), "{}", req.body);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tiny_cap_is_raised_to_sixteen() {
    let f = Fake::start().await;
    let mut t = f.openai("ok", Some(GOOD_KEY));
    t.max_tokens = 1;
    let r = f.check(&t).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    assert_eq!(f.only_request().body["max_output_tokens"], 16);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_answer_is_a_warning() {
    let f = Fake::start().await;
    let r = f.check_id("text").await;
    assert_eq!(
        (r.outcome, r.code, r.level),
        (Outcome::Text, Code::TextAnswer, Level::Warning),
        "{r:?}"
    );
    assert_eq!(r.stop_reason.as_deref(), Some("completed"));
    assert_eq!(r.answer.as_deref(), Some(TEXT_ANSWER));
    assert_eq!(r.error, None);
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [
            "warning: provider: openai/gpt-5-mini answered the request of a Turn in text, not with a tool call"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn incomplete_for_max_output_tokens_is_length() {
    let f = Fake::start().await;
    let r = f.check_id("length").await;
    assert_eq!(
        (r.outcome, r.code, r.level),
        (Outcome::Length, Code::Length, Level::Error),
        "{r:?}"
    );
    assert_eq!(r.stop_reason.as_deref(), Some("max_output_tokens"));
    assert_eq!(
        r.error.as_deref(),
        Some(
            "stop reason \"max_output_tokens\" before any tool call (the token cap sent was 128000)"
        )
    );
    assert_eq!(statuses(&r), [Some(200)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_is_refused_and_the_line_says_so() {
    let f = Fake::start().await;
    let r = f.check(&f.openai("gpt-5-mini", Some(WRONG_KEY))).await;
    assert_eq!(
        (r.outcome, r.code, r.level),
        (Outcome::KeyRefused, Code::KeyRefused, Level::Error),
        "{r:?}"
    );
    assert_eq!(statuses(&r), [Some(401)]);
    let req = f.only_request();
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {WRONG_KEY}").as_str())
    );
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [
            format!(
                "error: provider preflight failed for model \"openai/gpt-5-mini\" toward {} (from this machine, direct, as a Turn calls it): HTTP 401: Incorrect API key provided: sk-proj-****************0000. You can find your API key at https://platform.openai.com/account/api-keys.",
                f.host()
            ),
            "  - the held secret OPENAI_API_KEY may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)".to_owned(),
            "  - a private CA on that path must be in harness.caBundle".to_owned(),
        ]
    );
    assert!(!format!("{r:?}").contains(WRONG_KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_key_sends_nothing() {
    let f = Fake::start().await;
    let r = f.check(&f.openai("gpt-5-mini", None)).await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::KeyRefused, Code::KeyRefused),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            "no key for provider openai: OPENAI_API_KEY holds no value, so a Turn fails before it sends anything"
        )
    );
    assert!(f.fake.requests().is_empty());
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine)[1],
        "  - no Harness pod holds a key of openai: add OPENAI_API_KEY to `secrets` in jr2.config.ts"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_model_is_model_not_found() {
    let f = Fake::start().await;
    let r = f.check_id("missing").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Http, Code::ModelNotFound),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 404: The model `missing` does not exist or you do not have access to it.")
    );
    assert_eq!(statuses(&r), [Some(404)]);

    // The Responses API also answers 400 `model_not_found`.
    let r = f.check_id("gpt-99").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Http, Code::ModelNotFound),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 400: The requested model 'gpt-99' does not exist.")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_retried_with_the_wait_asked_then_busy() {
    let f = Fake::start().await;
    let r = f.check_id("rate-limited").await;
    assert_eq!(
        (r.outcome, r.code, r.level),
        (Outcome::Busy, Code::Busy, Level::Warning),
        "{r:?}"
    );
    assert_eq!(statuses(&r), [Some(429), Some(429)]);
    assert!(
        r.tries
            .iter()
            .all(|t| t.wait_asked_ms == Some(RETRY_AFTER_MS)),
        "{:?}",
        r.tries
    );
    assert_eq!(r.tries[0].wait_taken_ms, RETRY_AFTER_MS);
    assert_eq!(f.fake.requests().len(), 2);
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [format!(
            "warning: provider: openai/gpt-5-mini is busy toward {} after 2 tries (HTTP 429) — not confirmed; a Turn retries the same way",
            f.host()
        )]
    );

    let r = f.check_id("rate-limited-1").await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:?}");
    assert_eq!(statuses(&r), [Some(429), Some(200)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn insufficient_quota_is_not_retried() {
    let f = Fake::start().await;
    let r = f.check_id("quota").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Http, Code::QuotaExhausted),
        "{r:?}"
    );
    assert_eq!(statuses(&r), [Some(429)]);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("HTTP 429: You exceeded your current quota"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_error_is_an_http_error() {
    let f = Fake::start().await;
    let r = f.check_id("server-error").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Http, Code::HttpError),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some("HTTP 500: The server had an error while processing your request. Sorry about that!")
    );
    assert_eq!(statuses(&r), [Some(500)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn response_failed_after_the_200_is_a_stream_error() {
    let f = Fake::start().await;
    let r = f.check_id("failed-after-200").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Http, Code::StreamError),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            "HTTP 200, then an error in the stream: server_error: An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists."
        )
    );
    assert_eq!(statuses(&r), [Some(200)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overload_event_after_the_200_is_retried_then_busy() {
    let f = Fake::start().await;
    let r = f.check_id("overloaded-after-200").await;
    assert_eq!((r.outcome, r.code), (Outcome::Busy, Code::Busy), "{r:?}");
    assert_eq!(statuses(&r), [Some(200), Some(200)]);
    assert_eq!(f.fake.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stall_is_a_timeout() {
    let f = Fake::start().await;
    let (before, during) = tokio::join!(f.check_id("stall"), f.check_id("stall-mid-stream"));
    for r in [before, during] {
        assert_eq!(
            (r.outcome, r.code),
            (Outcome::Timeout, Code::Timeout),
            "{r:?}"
        );
        assert_eq!(r.error.as_deref(), Some("no answer in 3 s"));
        assert_eq!(r.tries.len(), 1);
    }
}
