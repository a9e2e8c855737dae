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
use jr2_probe::outcome::{Code, Outcome};
use jr2_probe::target::{self, Facts, Target};
use jr2_probe::verdict::ModelResult;
use jr2_testkit::fake_provider::Recorded;
use jr2_testkit::fake_responses::{self, GOOD_KEY, RETRY_AFTER_MS, TEXT_ANSWER};
use serde_json::{Value, json};

use common::{TlsFake as Fake, statuses};

const WRONG_KEY: &str = "sk-proj-wrong-key-0000000000";

impl Fake {
    async fn start() -> Self {
        Self::start_with(fake_responses::handler()).await
    }

    /// The catalog's `openai/gpt-5-mini` (maxTokens 128000, contextWindow 400000: no clamp), sending `id`.
    fn openai(&self, id: &str, key: Option<&str>) -> Target {
        Target::test(ApiKind::OpenAiResponses)
            .model("openai/gpt-5-mini")
            .id(id)
            .base_url(self.fake.base_url())
            .catalog("openai", "OPENAI_API_KEY", key.is_some())
            .key("OPENAI_API_KEY", key)
            .max_tokens(128_000)
            .facts(Facts {
                context_window: None,
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
            })
            .session_id(target::new_session_id())
    }

    /// The catalog's `azure-openai-responses/gpt-5-mini`; its catalog base URL is empty, so the test gives the
    /// model's base URL (what pi falls back to when the environment names none).
    fn azure(&self, id: &str, key: &str) -> Target {
        Target::test(ApiKind::AzureOpenAiResponses)
            .model("azure-openai-responses/gpt-5-mini")
            .id(id)
            .base_url(format!("https://{}/openai/v1", self.fake.addr()))
            .catalog("azure-openai-responses", "AZURE_OPENAI_API_KEY", true)
            .key("AZURE_OPENAI_API_KEY", key)
            .max_tokens(128_000)
            .facts(Facts {
                context_window: None,
                provider: Some("azure-openai-responses".into()),
                reasoning: true,
                thinking_level_map: Some(json!({"off": null})),
                compat: Some(json!({"supportsOpenAIGrammarTools": true})),
                headers: None,
            })
            .session_id(target::new_session_id())
    }

    async fn check(&self, target: &Target) -> ModelResult {
        self.check_trusting(target, Duration::from_secs(3), 2).await
    }

    /// Checks `openai/gpt-5-mini` sending `id`, with the good key.
    async fn check_id(&self, id: &str) -> ModelResult {
        self.check(&self.openai(id, Some(GOOD_KEY))).await
    }
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

/// The body of sections 6 and 7 of `research/pi-requests.md` (`tests/fixtures/pi-bodies/`), for `model` and the
/// conversation `session`.
fn pis_body(model: &str, session: &str) -> Value {
    let mut body: Value = serde_json::from_str(include_str!(
        "fixtures/pi-bodies/openai-responses-gpt-5-mini.json"
    ))
    .unwrap();
    body["model"] = json!(model);
    body["prompt_cache_key"] = json!(session);
    body
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
    common::assert_tool_call(&r, 128_000);
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
    common::assert_error(
        &r,
        Outcome::KeyRefused,
        Code::KeyRefused,
        "HTTP 401: Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
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
    common::assert_error(
        &r,
        Outcome::Unreachable,
        Code::Unreachable,
        "no Azure OpenAI base URL: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME where the Harness runs (a Turn fails the same way before it sends anything)",
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
    common::assert_text_warning(&r, "completed", TEXT_ANSWER, "openai/gpt-5-mini");
}

#[tokio::test(flavor = "multi_thread")]
async fn incomplete_for_max_output_tokens_is_length() {
    let f = Fake::start().await;
    let r = f.check_id("length").await;
    common::assert_length(&r, "max_output_tokens", 128000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_is_refused_and_the_line_says_so() {
    let f = Fake::start().await;
    let r = f.check(&f.openai("gpt-5-mini", Some(WRONG_KEY))).await;
    assert_eq!(statuses(&r), [Some(401)]);
    let req = f.only_request();
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {WRONG_KEY}").as_str())
    );
    common::assert_refused_key_lines(
        &r,
        "openai/gpt-5-mini",
        &f.host(),
        "OPENAI_API_KEY",
        "HTTP 401: Incorrect API key provided: sk-proj-****************0000. You can find your API key at https://platform.openai.com/account/api-keys.",
    );
    assert!(!format!("{r:?}").contains(WRONG_KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn no_key_sends_nothing() {
    let f = Fake::start().await;
    let r = f.check(&f.openai("gpt-5-mini", None)).await;
    common::assert_no_key(
        &r,
        "no key for provider openai: OPENAI_API_KEY holds no value, so a Turn fails before it sends anything",
        "openai",
        "OPENAI_API_KEY",
    );
    assert!(f.fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_model_is_model_not_found() {
    let f = Fake::start().await;
    let r = f.check_id("missing").await;
    common::assert_error(
        &r,
        Outcome::Http,
        Code::ModelNotFound,
        "HTTP 404: The model `missing` does not exist or you do not have access to it.",
    );
    assert_eq!(statuses(&r), [Some(404)]);

    // The Responses API also answers 400 `model_not_found`.
    let r = f.check_id("gpt-99").await;
    common::assert_error(
        &r,
        Outcome::Http,
        Code::ModelNotFound,
        "HTTP 400: The requested model 'gpt-99' does not exist.",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_retried_with_the_wait_asked_then_busy() {
    let f = Fake::start().await;
    let r = f.check_id("rate-limited").await;
    common::assert_busy_warning(&r, "openai/gpt-5-mini", &f.host());
    assert!(
        r.tries
            .iter()
            .all(|t| t.wait_asked_ms == Some(RETRY_AFTER_MS)),
        "{:?}",
        r.tries
    );
    assert_eq!(r.tries[0].wait_taken_ms, RETRY_AFTER_MS);
    assert_eq!(f.fake.requests().len(), 2);

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
    common::assert_error(
        &r,
        Outcome::Http,
        Code::HttpError,
        "HTTP 500: The server had an error while processing your request. Sorry about that!",
    );
    assert_eq!(statuses(&r), [Some(500)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn response_failed_after_the_200_is_a_stream_error() {
    let f = Fake::start().await;
    let r = f.check_id("failed-after-200").await;
    common::assert_error(
        &r,
        Outcome::Http,
        Code::StreamError,
        "HTTP 200, then an error in the stream: server_error: An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists.",
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
        common::assert_error(&r, Outcome::Timeout, Code::Timeout, "no answer in 3 s");
        assert_eq!(r.tries.len(), 1);
    }
}
