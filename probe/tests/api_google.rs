//! `google-generative-ai` and `google-vertex` in process, against the TLS fake of the Gemini API: the request pi-ai
//! 0.82.1 sends for `google/gemini-2.5-flash` (`research/pi-requests.md`, sections 4 and 5), every behaviour of the
//! fake, the tries (with `RetryInfo.retryDelay`) and the outcome each one ends with, busy as an error for these two
//! kinds, and the catalog form of the lines.

mod common;

use std::time::Duration;

use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::target::{self, Facts, Target};
use jr2_probe::verdict::{ModelResult, Origin};
use jr2_testkit::fake_google::{self, GOOD_KEY, TEXT_ANSWER};
use serde_json::json;

use common::{TlsFake as Fake, statuses};

const WRONG_KEY: &str = "AIzaSyWrongKey-0000000000000000000000";

impl Fake {
    async fn start() -> Self {
        Self::start_with(fake_google::handler()).await
    }

    /// A target as pi's catalog has `google/gemini-2.5-flash` (reasoning, maxTokens 65536, contextWindow 1048576: no
    /// clamp), sending `id`, with the base URL `https://<fake>/v1beta`.
    fn gemini(&self, id: &str) -> Target {
        Target::test(ApiKind::GoogleGenerativeAi)
            .model("google/gemini-2.5-flash")
            .id(id)
            .base_url(format!("https://{}/v1beta", self.fake.addr()))
            .catalog("google", "GEMINI_API_KEY", true)
            .key("GEMINI_API_KEY", GOOD_KEY)
            .max_tokens(jr2_probe::prompt::token_cap(65536, 1_048_576))
            .facts(Facts {
                context_window: None,
                provider: Some("google".into()),
                reasoning: true,
                thinking_level_map: None,
                compat: None,
                headers: None,
            })
            .session_id(target::new_session_id())
    }

    /// `google-vertex/gemini-2.5-flash` with an API key, its base URL the fake's (no version: the SDK adds `v1`).
    fn vertex(&self, id: &str) -> Target {
        Target::test(ApiKind::GoogleVertex)
            .model("google-vertex/gemini-2.5-flash")
            .id(id)
            .base_url(self.base())
            .catalog("google-vertex", "GOOGLE_CLOUD_API_KEY", true)
            .key("GOOGLE_CLOUD_API_KEY", GOOD_KEY)
            .max_tokens(jr2_probe::prompt::token_cap(65536, 1_048_576))
            .facts(Facts {
                provider: Some("google-vertex".into()),
                reasoning: true,
                ..Facts::default()
            })
            .session_id(target::new_session_id())
    }

    async fn check_with(&self, target: &Target, timeout: Duration) -> ModelResult {
        self.check_trusting(target, timeout, 3).await
    }

    async fn check(&self, target: &Target) -> ModelResult {
        self.check_with(target, Duration::from_secs(5)).await
    }

    async fn check_id(&self, id: &str) -> ModelResult {
        self.check(&self.gemini(id)).await
    }
}

/// The body of section 4 of `research/pi-requests.md` (gemini-2.5-flash: thinking off is `thinkingBudget: 0`), from
/// `tests/fixtures/pi-bodies/`.
fn pis_body() -> serde_json::Value {
    serde_json::from_str(include_str!(
        "fixtures/pi-bodies/google-generative-ai-gemini-2.5-flash.json"
    ))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_with_the_request_pi_sends() {
    let f = Fake::start().await;
    let r = f.check_id("gemini-2.5-flash").await;
    common::assert_tool_call(&r, 65536);

    let req = f.only_request();
    assert_eq!(req.method, "POST");
    assert_eq!(
        req.path,
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(req.header("x-goog-api-key"), Some(GOOD_KEY));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        req.header("authorization"),
        None,
        "the key travels in x-goog-api-key only"
    );
    assert!(!req.path.contains("key="), "the key is never in the query");
    assert!(
        req.header("user-agent")
            .is_some_and(|ua| ua.starts_with("jr2-probe/")),
        "{:?}",
        req.headers
    );
    assert_eq!(req.header("x-goog-api-client"), None);
    assert_eq!(req.body, pis_body());
    assert!(
        req.body.get("toolConfig").is_none(),
        "a Turn sends no toolConfig"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn gemini_3_thinks_then_calls() {
    let f = Fake::start().await;
    let r = f.check_id("thinking-then-call").await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:#?}");
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    // The thought summary came first and was kept as the answer's start.
    assert!(
        r.answer
            .as_deref()
            .is_some_and(|a| a.starts_with("**Calling the probe tool**")),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_choice_becomes_a_tool_config() {
    let f = Fake::start().await;
    let mut t = f.gemini("ok");
    t.tool_choice = ToolChoice::Named;
    let r = f.check(&t).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(
        f.only_request().body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["probe"]}})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn text_length_and_other_stops() {
    let f = Fake::start().await;

    let r = f.check_id("text").await;
    common::assert_text_warning(&r, "STOP", TEXT_ANSWER, "google/gemini-2.5-flash");

    let r = f.check_id("max-tokens").await;
    common::assert_length(&r, "MAX_TOKENS", 65536);

    for (id, error) in [
        (
            "malformed",
            "HTTP 200, then the stream stopped with \"MALFORMED_FUNCTION_CALL\" before any tool call",
        ),
        (
            "blocked",
            "HTTP 200, then the stream stopped with \"prompt blocked: PROHIBITED_CONTENT\" before any tool call",
        ),
    ] {
        let r = f.check_id(id).await;
        common::assert_error(&r, Outcome::Http, Code::StreamError, error);
    }
    assert_eq!(f.fake.requests().len(), 4, "none of these is retried");
}

#[tokio::test(flavor = "multi_thread")]
async fn api_key_invalid_is_a_refused_key() {
    let f = Fake::start().await;
    let t = f
        .gemini("gemini-2.5-flash")
        .key("GEMINI_API_KEY", WRONG_KEY);
    let r = f.check(&t).await;
    assert_eq!(statuses(&r), [Some(400)], "a refused key is not retried");
    common::assert_refused_key_lines(
        &r,
        "google/gemini-2.5-flash",
        &f.host(),
        "GEMINI_API_KEY",
        "HTTP 400: API key not valid. Please pass a valid API key.",
    );
    assert_eq!(f.only_request().header("x-goog-api-key"), Some(WRONG_KEY));
}

#[tokio::test(flavor = "multi_thread")]
async fn permission_denied_and_not_found() {
    let f = Fake::start().await;
    let r = f.check_id("denied").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::KeyRefused, Code::KeyRefused),
        "{r:#?}"
    );
    assert_eq!(statuses(&r), [Some(403)]);
    assert!(
        r.error.as_deref().is_some_and(
            |e| e.starts_with("HTTP 403: Generative Language API has not been used in project")
        ),
        "{r:#?}"
    );

    let r = f.check_id("gemini-9-ultra").await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Http, Level::Error, Code::ModelNotFound),
        "{r:#?}"
    );
    assert_eq!(statuses(&r), [Some(404)]);
    assert!(
        r.error.as_deref().is_some_and(|e| e.starts_with(
            "HTTP 404: models/gemini-9-ultra is not found for API version v1beta, or is not supported for generateContent."
        )),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_info_is_honoured_then_the_call_succeeds() {
    let f = Fake::start().await;
    let r = f.check_id("rate-limited-1").await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:#?}");
    assert_eq!(statuses(&r), [Some(429), Some(200)]);
    assert_eq!(r.tries[0].outcome, Outcome::Busy);
    assert_eq!(
        r.tries[0].wait_asked_ms,
        Some(1000),
        "RetryInfo.retryDelay \"1s\""
    );
    assert_eq!(r.tries[0].wait_taken_ms, 1000);
    assert_eq!(r.tries[1].wait_taken_ms, 0);
    assert!(r.elapsed_ms >= 1000, "{}", r.elapsed_ms);
    assert_eq!(f.fake.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn busy_after_the_retries_is_an_error_for_gemini() {
    let f = Fake::start().await;
    let r = f.check_id("rate-limited").await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Busy, Level::Error, Code::Busy),
        "{r:#?}"
    );
    assert_eq!(statuses(&r), [Some(429); 3]);
    // The JSON says what the error line says: not "none required" (issue 27, item 12).
    assert!(
        r.next_action
            .starts_with("wait until the provider takes requests from this key again"),
        "{}",
        r.next_action
    );
    assert!(
        r.tries.iter().all(|t| t.wait_asked_ms.is_none()),
        "no RetryInfo: backoff"
    );
    assert!(
        r.tries[0].wait_taken_ms >= 500 && r.tries[1].wait_taken_ms >= 1000,
        "{:?}",
        r.tries
    );
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine),
        [
            format!(
                "error: provider preflight failed for model \"google/gemini-2.5-flash\" toward {host} (from this machine, direct, as a Turn calls it): HTTP 429: Resource has been exhausted (e.g. check quota).",
                host = f.host()
            ),
            format!(
                "  - the pods may have no egress to {} (a NetworkPolicy, a firewall, no route out of the cluster)",
                f.host()
            ),
            "  - the held secret GEMINI_API_KEY may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)".to_owned(),
            "  - a private CA on that path must be in harness.caBundle".to_owned(),
        ]
    );
}

/// Issue 12, item 2: a 429 and then a retry that never gets an answer is busy, and for Gemini busy is an error
/// whose `<error>` says the retry got no answer (before: a `timeout`, "no answer in 2 s").
#[tokio::test(flavor = "multi_thread")]
async fn a_429_then_a_retry_with_no_answer_is_busy_and_an_error_for_gemini() {
    let f = Fake::start().await;
    let r = f
        .check_with(&f.gemini("rate-limited-then-stall"), Duration::from_secs(2))
        .await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Busy, Level::Error, Code::Busy),
        "{r:#?}"
    );
    assert_eq!(statuses(&r), [Some(429), None]);
    assert!(!r.next_action.starts_with("none"), "{}", r.next_action);
    assert_eq!(r.tries[1].outcome, Outcome::Timeout);
    assert_eq!(r.http_status, Some(429));
    let error = r.error.as_deref().unwrap_or_default();
    let (waited, rest) = error
        .strip_prefix("the retry got no answer in ")
        .and_then(|e| e.split_once(" s, after "))
        .unwrap_or_else(|| panic!("{error}"));
    let waited: f64 = waited.parse().unwrap_or_else(|_| panic!("{error}"));
    assert!((1.0..=2.0).contains(&waited), "{error}");
    assert!(
        rest.starts_with("HTTP 429: You exceeded your current quota"),
        "{error}"
    );
    assert!(error.chars().count() <= 300, "{error}");
    assert_eq!(
        jr2_probe::render::model_lines(&r, &Origin::ThisMachine)[0],
        format!(
            "error: provider preflight failed for model \"google/gemini-2.5-flash\" toward {} (from this machine, direct, as a Turn calls it): {error}",
            f.host()
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_per_day_quota_is_not_retried() {
    let f = Fake::start().await;
    let r = f.check_id("per-day").await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Http, Level::Error, Code::QuotaExhausted),
        "{r:#?}"
    );
    assert_eq!(statuses(&r), [Some(429)]);
    assert_eq!(r.tries[0].wait_asked_ms, Some(52_758_000));
    assert_eq!(r.tries[0].wait_taken_ms, 0);
    assert!(
        r.error.as_deref().is_some_and(|e| e.starts_with(
            "HTTP 429: You exceeded your current quota, please check your plan and billing details."
        ) && e.contains("generate_requests_per_model_per_day")),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn unavailable_after_the_retries() {
    let f = Fake::start().await;
    let r = f.check_id("unavailable").await;
    common::assert_unavailable(
        &r,
        3,
        "HTTP 503: The model is overloaded. Please try again later.",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_inside_the_stream() {
    let f = Fake::start().await;
    let r = f.check_id("error-after-200").await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Http, Level::Error, Code::StreamError),
        "{r:#?}"
    );
    assert_eq!(statuses(&r), [Some(200)]);
    assert!(
        r.error.as_deref().is_some_and(|e| e
            .starts_with("HTTP 200, then an error in the stream: An internal error has occurred.")),
        "{r:#?}"
    );

    let r = f.check_id("exhausted-after-200").await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Busy, Level::Error, Code::Busy),
        "{r:#?}"
    );
    assert_eq!(
        statuses(&r),
        [Some(200); 3],
        "an overload in the stream is retried"
    );

    let r = f.check_id("truncated").await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Protocol, Code::ProtocolError),
        "{r:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stalls_end_at_the_deadline() {
    let f = Fake::start().await;
    for id in ["stall", "stall-mid-stream"] {
        let r = f
            .check_with(&f.gemini(id), Duration::from_millis(1500))
            .await;
        assert_eq!(r.level, Level::Error, "{id}");
        common::assert_error(&r, Outcome::Timeout, Code::Timeout, "no answer in 1.5 s");
        assert_eq!(r.tries.len(), 1, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_key_for_gemini_sends_nothing() {
    let f = Fake::start().await;
    let mut t = f.gemini("gemini-2.5-flash");
    common::without_key(&mut t);
    let r = f.check(&t).await;
    common::assert_no_key(
        &r,
        "no API key: a Turn sends nothing without one (pi: \"No API key for provider: google\")",
        "google",
        "GEMINI_API_KEY",
    );
    assert!(f.fake.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn vertex_express_path_and_errors() {
    let f = Fake::start().await;
    let r = f.check(&f.vertex("gemini-2.5-flash")).await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Ok, Level::Pass, Code::Ok),
        "{r:#?}"
    );
    let req = f.only_request();
    assert_eq!(
        req.path,
        "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(req.header("x-goog-api-key"), Some(GOOD_KEY));
    assert_eq!(req.body, pis_body(), "Vertex sends the Gemini body");

    // A base URL that names its version keeps it.
    let mut t = f.vertex("ok");
    t.base_url = reqwest::Url::parse(&format!("https://{}/v1", f.fake.addr())).unwrap();
    assert_eq!(f.check(&t).await.outcome, Outcome::Ok);
    assert_eq!(
        f.fake.requests()[1].path,
        "/v1/publishers/google/models/ok:streamGenerateContent?alt=sse"
    );

    let r = f.check(&f.vertex("gemini-9-ultra")).await;
    assert_eq!(
        (r.outcome, r.code),
        (Outcome::Http, Code::ModelNotFound),
        "{r:#?}"
    );
    assert!(
        r.error.as_deref().is_some_and(|e| e.starts_with(
            "HTTP 404: Publisher Model `publishers/google/models/gemini-9-ultra` was not found"
        )),
        "{r:#?}"
    );

    let r = f.check(&f.vertex("rate-limited")).await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Busy, Level::Error, Code::Busy),
        "busy is an error for Vertex too: {r:#?}"
    );
}

/// Vertex with Application Default Credentials (no key) cannot be checked by design: a warning with its own code and
/// the line that says why and what a Turn does; nothing sent, and the run goes on (issue 27, item 3: before, an
/// error whose hints did not apply, exit 1).
#[tokio::test(flavor = "multi_thread")]
async fn vertex_without_a_key_is_not_checkable_and_a_warning() {
    let f = Fake::start().await;
    let mut t = f.vertex("gemini-2.5-flash");
    t.key = None;
    let r = f.check(&t).await;
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::NotCheckable, Level::Warning, Code::NotCheckableAdc),
        "{r:#?}"
    );
    let lines = jr2_probe::render::model_lines(&r, &Origin::ThisMachine);
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0].starts_with(&format!(
            "warning: provider: {} was not checked — google-vertex without an API key uses Application Default Credentials",
            r.model
        )),
        "{lines:#?}"
    );
    assert!(
        lines[0].ends_with(
            "a Turn uses credentials the check pod does not hold, so its first call is the check"
        ),
        "{lines:#?}"
    );
    assert!(
        r.next_action.starts_with("none required"),
        "{}",
        r.next_action
    );
    assert!(f.fake.requests().is_empty());
}
