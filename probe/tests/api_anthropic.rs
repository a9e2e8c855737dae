//! `anthropic-messages` in process, against the TLS fake of the Messages API: the request pi-ai 0.82.1 sends for
//! `anthropic/claude-haiku-4-5` (`research/pi-requests.md`, section 3), every behaviour of the fake, the tries and
//! the outcome each one ends with, and the catalog form of the lines for a refused key.

mod common;

use std::time::Duration;

use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::target::{self, Facts, Target};
use jr2_probe::verdict::ModelResult;
use jr2_testkit::fake_anthropic::{self, GOOD_KEY, TEXT_ANSWER};
use serde_json::json;

use common::{TlsFake as Fake, statuses};

const WRONG_KEY: &str = "sk-ant-api03-wrong-key-0000000000";

impl Fake {
    async fn start() -> Self {
        Self::start_with(fake_anthropic::handler()).await
    }

    /// A target for the catalog's `anthropic/claude-haiku-4-5` that sends `id` and holds `key` in `env`.
    fn target(&self, id: &str, env: &str, key: &str) -> Target {
        Target::test(ApiKind::AnthropicMessages)
            .model("anthropic/claude-haiku-4-5")
            .id(id)
            // The base URL as the catalog writes Anthropic's: no `/v1`.
            .base_url(self.base())
            .catalog("anthropic", "ANTHROPIC_API_KEY", true)
            .key(env, key)
            // pi's catalog: maxTokens 64000, contextWindow 200000 (no clamp).
            .max_tokens(64000)
            .facts(Facts {
                context_window: None,
                provider: Some("anthropic".into()),
                reasoning: true,
                thinking_level_map: None,
                compat: Some(json!({"supportsStrictTools": true})),
                headers: None,
            })
            .session_id(target::new_session_id())
    }

    async fn check(&self, target: &Target) -> ModelResult {
        self.check_trusting(target, Duration::from_secs(3), 2).await
    }

    /// Checks the model `id` with the good key in `ANTHROPIC_API_KEY`.
    async fn check_id(&self, id: &str) -> ModelResult {
        self.check(&self.target(id, "ANTHROPIC_API_KEY", GOOD_KEY))
            .await
    }
}

/// The body of section 3 of `research/pi-requests.md` (`tests/fixtures/pi-bodies/`), for `model`.
fn pis_body(model: &str) -> serde_json::Value {
    let mut body: serde_json::Value = serde_json::from_str(include_str!(
        "fixtures/pi-bodies/anthropic-messages-claude-haiku-4-5.json"
    ))
    .unwrap();
    body["model"] = json!(model);
    body
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_with_the_request_pi_sends() {
    let f = Fake::start().await;
    let r = f.check_id("claude-haiku-4-5").await;
    common::assert_tool_call(&r, 64000);
    let t = r.tries[0].timings;
    assert!(t.tool_call_ms.is_some() && t.tls_ms.is_some(), "{t:?}");

    let req = f.only_request();
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.header("x-api-key"), Some(GOOD_KEY));
    assert_eq!(req.header("authorization"), None);
    assert_eq!(req.header("accept"), Some("application/json"));
    assert_eq!(
        req.header("anthropic-dangerous-direct-browser-access"),
        Some("true")
    );
    assert_eq!(
        req.header("anthropic-beta"),
        Some("interleaved-thinking-2025-05-14")
    );
    assert_eq!(req.header("content-type"), Some("application/json"));
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
    assert_eq!(req.body, pis_body("claude-haiku-4-5"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_auth_token_travels_as_a_bearer() {
    let f = Fake::start().await;
    let r = f
        .check(&f.target("claude-haiku-4-5", "ANTHROPIC_AUTH_TOKEN", GOOD_KEY))
        .await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:?}");
    let req = f.only_request();
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {GOOD_KEY}").as_str())
    );
    assert_eq!(req.header("x-api-key"), None);
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(req.body, pis_body("claude-haiku-4-5"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_after_some_text() {
    let f = Fake::start().await;
    let r = f.check_id("text-then-tool").await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:?}");
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    assert_eq!(r.answer.as_deref(), Some("I'll call the probe tool."));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_tool_choice_is_sent() {
    let f = Fake::start().await;
    let mut t = f.target("ok", "ANTHROPIC_API_KEY", GOOD_KEY);
    t.tool_choice = ToolChoice::Named;
    let r = f.check(&t).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
    let req = f.only_request();
    assert_eq!(
        req.body["tool_choice"],
        json!({"type": "tool", "name": "probe"})
    );
    let mut expected = pis_body("ok");
    expected["tool_choice"] = json!({"type": "tool", "name": "probe"});
    assert_eq!(req.body, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_answer_is_a_warning() {
    let f = Fake::start().await;
    let r = f.check_id("text").await;
    common::assert_text_warning(&r, "end_turn", TEXT_ANSWER, "anthropic/claude-haiku-4-5");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tokens_is_length() {
    let f = Fake::start().await;
    let r = f.check_id("length").await;
    common::assert_length(&r, "max_tokens", 64000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_is_a_stream_error() {
    let f = Fake::start().await;
    let r = f.check_id("refusal").await;
    common::assert_error(
        &r,
        Outcome::Http,
        Code::StreamError,
        "HTTP 200, then the stream stopped with \"refusal\" before any tool call",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_key_is_refused_with_the_catalog_lines() {
    let f = Fake::start().await;
    let r = f
        .check(&f.target("claude-haiku-4-5", "ANTHROPIC_API_KEY", WRONG_KEY))
        .await;
    common::assert_refused_key_lines(
        &r,
        "anthropic/claude-haiku-4-5",
        &f.host(),
        "ANTHROPIC_API_KEY",
        "HTTP 401: invalid x-api-key",
    );
    assert_eq!(r.http_status, Some(401));
    assert_eq!(statuses(&r), [Some(401)], "a refused key is not retried");
    assert_eq!(f.only_request().header("x-api-key"), Some(WRONG_KEY));
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        !json.contains(WRONG_KEY),
        "the key never reaches the result"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_401_and_a_403_whatever_the_key() {
    let f = Fake::start().await;
    for (id, status, error) in [
        ("unauthorized", 401, "HTTP 401: invalid x-api-key"),
        (
            "forbidden",
            403,
            "HTTP 403: Your API key does not have permission to use the specified resource.",
        ),
    ] {
        let r = f.check_id(id).await;
        common::assert_error(&r, Outcome::KeyRefused, Code::KeyRefused, error);
        assert_eq!(statuses(&r), [Some(status)], "{id}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_model_is_not_found() {
    let f = Fake::start().await;
    let r = f.check_id("claude-typo").await;
    common::assert_error(
        &r,
        Outcome::Http,
        Code::ModelNotFound,
        "HTTP 404: model: claude-typo",
    );
    assert_eq!(statuses(&r), [Some(404)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_is_retried_then_busy() {
    let f = Fake::start().await;
    let r = f.check_id("rate-limited").await;
    common::assert_busy_warning(&r, "anthropic/claude-haiku-4-5", &f.host());
    assert_eq!(r.tries[0].wait_asked_ms, Some(0), "retry-after: 0");
    assert_eq!(
        r.error.as_deref(),
        Some(
            "HTTP 429: This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_that_clears_ends_in_a_tool_call() {
    let f = Fake::start().await;
    let r = f.check_id("rate-limited-1").await;
    assert_eq!((r.outcome, r.code), (Outcome::Ok, Code::Ok), "{r:?}");
    assert_eq!(statuses(&r), [Some(429), Some(200)]);
    assert_eq!(f.fake.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spend_limit_is_quota_and_not_retried() {
    let f = Fake::start().await;
    let r = f.check_id("spend-limit").await;
    assert_eq!(
        (r.outcome, r.code, r.level),
        (Outcome::Http, Code::QuotaExhausted, Level::Error),
        "{r:?}"
    );
    assert_eq!(statuses(&r), [Some(429)]);
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("HTTP 429: You have reached your API usage limits"),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn overloaded_529_is_retried_then_busy() {
    let f = Fake::start().await;
    let r = f.check_id("overloaded").await;
    common::assert_error(&r, Outcome::Busy, Code::Busy, "HTTP 529: Overloaded");
    assert_eq!(statuses(&r), [Some(529), Some(529)]);
    assert_eq!(r.tries[0].wait_asked_ms, None);
    assert!(r.tries[0].wait_taken_ms >= 250, "a backoff: {:?}", r.tries);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_overload_event_after_the_200_is_retried_then_busy() {
    let f = Fake::start().await;
    let r = f.check_id("overloaded-after-200").await;
    common::assert_error(
        &r,
        Outcome::Busy,
        Code::Busy,
        "HTTP 200, then an error in the stream: Overloaded",
    );
    assert_eq!(statuses(&r), [Some(200), Some(200)]);
    assert_eq!(f.fake.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_without_message_stop_is_a_protocol_error() {
    let f = Fake::start().await;
    let r = f.check_id("truncated").await;
    common::assert_error(
        &r,
        Outcome::Protocol,
        Code::ProtocolError,
        "HTTP 200, but the stream ended before the answer was complete (no stop reason, no end event)",
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stall_times_out() {
    let f = Fake::start().await;
    for id in ["stall", "stall-mid-stream"] {
        let r = f.check_id(id).await;
        assert_eq!(
            (r.outcome, r.code),
            (Outcome::Timeout, Code::Timeout),
            "{id}: {r:?}"
        );
        assert_eq!(r.error.as_deref(), Some("no answer in 3 s"), "{id}");
        assert_eq!(r.tries.len(), 1, "{id}");
        assert!(
            (2900..6000).contains(&r.elapsed_ms),
            "{id}: {} ms",
            r.elapsed_ms
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn no_key_held_sends_no_key_header() {
    let f = Fake::start().await;
    let mut t = f.target("claude-haiku-4-5", "ANTHROPIC_API_KEY", GOOD_KEY);
    common::without_key(&mut t);
    let r = f.check(&t).await;
    common::assert_no_key(
        &r,
        "HTTP 401: x-api-key header is required",
        "anthropic",
        "ANTHROPIC_API_KEY",
    );
    let req = f.only_request();
    assert_eq!(
        (req.header("x-api-key"), req.header("authorization")),
        (None, None)
    );
}

/// Issue 12, item 14: with no key of Anthropic held, the hint names `ANTHROPIC_API_KEY` (the `x-api-key` a user
/// holds), not `ANTHROPIC_AUTH_TOKEN`, the bearer token pi happens to read first.
#[tokio::test(flavor = "multi_thread")]
async fn with_no_key_of_anthropic_the_hint_names_anthropic_api_key() {
    let f = Fake::start_with(fake_anthropic::handler()).await;
    let ca = f.ca.ca_file.to_str().unwrap().to_owned();
    let gateway = format!("https://{}", f.fake.addr());
    let run = common::probe(
        &[
            "check",
            "--model",
            "anthropic/claude-haiku-4-5",
            "--gateway",
            &gateway,
            "--ca-bundle",
            &ca,
            "--timeout",
            "3s",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.lines().contains(
            &"  - no Harness pod holds a key of anthropic: add ANTHROPIC_API_KEY to `secrets` in jr2.config.ts"
        ),
        "{}",
        run.stderr
    );
}
