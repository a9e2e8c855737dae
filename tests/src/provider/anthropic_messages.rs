//! A fake Anthropic Messages API whose behaviour the request's `model` chooses.
//!
//! It answers `POST /v1/messages` as `api.anthropic.com` does: the events of a streamed message byte for byte in
//! their order (`message_start`, `content_block_start`, `ping`, `content_block_delta`, `content_block_stop`,
//! `message_delta`, `message_stop`), and its errors as `{"type":"error","error":{"type","message"},"request_id"}`
//! with the status each type has (401 `authentication_error`, 403 `permission_error`, 404 `not_found_error`,
//! 429 `rate_limit_error`, 529 `overloaded_error`, and `event: error` after a 200). Like the real API it refuses a
//! request without `anthropic-version` (400) and one whose key is not [`GOOD_KEY`] (401), whatever the model.
//! The key is read from `x-api-key`, or from `authorization: Bearer` (how an `ANTHROPIC_AUTH_TOKEN` travels).
//! Serve it with [`super::FakeProvider::start_with`]; every request is recorded there.
//!
//! Models (the part before an optional `@` suffix picks the behaviour):
//! `ok` and `claude-haiku-4-5` (a `tool_use` block), `text-then-tool` (a text block, then the `tool_use` block),
//! `text` (`end_turn`), `length` (`max_tokens`), `refusal`, `unauthorized` (401 whatever the key), `forbidden`
//! (403), `rate-limited` (429 with `retry-after: 0` always), `rate-limited-<n>` (429 on the first n tries, then
//! ok), `spend-limit` (429 `enforced_spend_limit_reached`, no `retry-after`), `overloaded` (529),
//! `overloaded-after-200` (`event: error` after the 200), `truncated` (no `message_stop`), `stall` (never
//! answers), `stall-mid-stream`; any other model is a 404 `not_found_error` (`model: <id>`).

use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream};
use crate::http::{Body, Recorded};

/// The key the fake accepts.
pub const GOOD_KEY: &str = "sk-ant-api03-fake-good-key-0123456789";

/// The `request_id` of every error body.
pub const REQUEST_ID: &str = "req_011CZfakeRequest00000001";

/// The id of the `tool_use` block the fake streams.
pub const TOOL_USE_ID: &str = "toolu_01FakeToolUse000000001";

/// The text the `text` model answers.
pub const TEXT_ANSWER: &str = "I would call the probe tool, but here is some text instead.";

/// The Anthropic behaviour, for [`super::FakeProvider::start_with`].
pub fn handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| Box::pin(async move { respond(&req, try_n).await }))
}

/// An Anthropic error body.
pub fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": REQUEST_ID})
}

fn error(status: u16, kind: &str, message: &str) -> Response<Body> {
    json_error(
        StatusCode::from_u16(status).expect("a status"),
        error_body(kind, message),
    )
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

fn message_start(model: &str) -> String {
    event(
        "message_start",
        json!({"type": "message_start", "message": {
            "model": model, "id": "msg_01FakeMessage0000000001", "type": "message", "role": "assistant",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 612, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                      "output_tokens": 1, "service_tier": "standard"}}}),
    )
}

fn ping() -> String {
    // Anthropic writes this one with spaces.
    "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned()
}

fn block_start(index: u32, block: Value) -> String {
    event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn block_delta(index: u32, delta: Value) -> String {
    event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn block_stop(index: u32) -> String {
    event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    )
}

fn message_delta(stop_reason: &str, output_tokens: u64) -> String {
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"input_tokens": 612, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                         "output_tokens": output_tokens}}),
    )
}

fn message_stop() -> String {
    event("message_stop", json!({"type": "message_stop"}))
}

fn tool_use_blocks(index: u32) -> Vec<String> {
    vec![
        block_start(
            index,
            json!({"type": "tool_use", "id": TOOL_USE_ID, "name": "probe", "input": {}}),
        ),
        block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": ""}),
        ),
        block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": "{\"status\": "}),
        ),
        block_delta(
            index,
            json!({"type": "input_json_delta", "partial_json": "\"ready\"}"}),
        ),
        block_stop(index),
    ]
}

/// The events of a message that calls the probe tool, as Anthropic streams them.
pub fn tool_use_events(model: &str) -> Vec<String> {
    let mut events = vec![message_start(model)];
    let mut blocks = tool_use_blocks(0);
    // Anthropic sends its first ping right after the first block starts.
    blocks.insert(1, ping());
    events.extend(blocks);
    events.push(message_delta("tool_use", 54));
    events.push(message_stop());
    events
}

/// The events of a message with one text block that stops for `stop_reason`.
pub fn text_events(model: &str, text: &str, stop_reason: &str) -> Vec<String> {
    vec![
        message_start(model),
        block_start(0, json!({"type": "text", "text": ""})),
        ping(),
        block_delta(0, json!({"type": "text_delta", "text": text})),
        block_stop(0),
        message_delta(stop_reason, 16),
        message_stop(),
    ]
}

fn ok(model: &str) -> Response<Body> {
    stream(tool_use_events(model), Duration::ZERO, false)
}

fn rate_limited(retry_after: &str) -> Response<Body> {
    let mut r = error(
        429,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
    );
    let h = r.headers_mut();
    for (name, value) in [
        ("retry-after", retry_after),
        ("anthropic-ratelimit-requests-limit", "50"),
        ("anthropic-ratelimit-requests-remaining", "0"),
        ("anthropic-ratelimit-requests-reset", "2026-01-01T00:00:01Z"),
        ("request-id", REQUEST_ID),
    ] {
        h.insert(name, HeaderValue::from_str(value).expect("a header value"));
    }
    r
}

/// The key the request carries: `x-api-key`, else the bearer token.
fn key_of(req: &Recorded) -> Option<&str> {
    req.header("x-api-key").or_else(|| {
        req.header("authorization")
            .and_then(|a| a.strip_prefix("Bearer "))
    })
}

async fn respond(req: &Recorded, try_n: u32) -> Response<Body> {
    if req.method != "POST" || req.path != "/v1/messages" {
        return error(404, "not_found_error", "Not Found");
    }
    if req.header("anthropic-version").is_none() {
        return error(
            400,
            "invalid_request_error",
            "anthropic-version: header is required",
        );
    }
    match key_of(req) {
        None => return error(401, "authentication_error", "x-api-key header is required"),
        Some(key) if key != GOOD_KEY => {
            return error(401, "authentication_error", "invalid x-api-key");
        }
        Some(_) => {}
    }
    let model = req.body["model"].as_str().unwrap_or("").to_owned();
    let behaviour = model.split('@').next().unwrap_or("");
    if let Some(n) = behaviour
        .strip_prefix("rate-limited-")
        .and_then(|n| n.parse::<u32>().ok())
    {
        if try_n <= n {
            return rate_limited("0");
        }
        return ok(&model);
    }
    match behaviour {
        "ok" | "claude-haiku-4-5" => ok(&model),
        "text-then-tool" => {
            let mut events = vec![
                message_start(&model),
                block_start(0, json!({"type": "text", "text": ""})),
                ping(),
                block_delta(
                    0,
                    json!({"type": "text_delta", "text": "I'll call the probe tool."}),
                ),
                block_stop(0),
            ];
            events.extend(tool_use_blocks(1));
            events.push(message_delta("tool_use", 70));
            events.push(message_stop());
            stream(events, Duration::ZERO, false)
        }
        "text" => stream(
            text_events(&model, TEXT_ANSWER, "end_turn"),
            Duration::ZERO,
            false,
        ),
        "length" => stream(
            text_events(&model, "Let me think about which tool", "max_tokens"),
            Duration::ZERO,
            false,
        ),
        "refusal" => stream(text_events(&model, "", "refusal"), Duration::ZERO, false),
        "unauthorized" => error(401, "authentication_error", "invalid x-api-key"),
        "forbidden" => error(
            403,
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
        "rate-limited" => rate_limited("0"),
        "spend-limit" => json_error(
            StatusCode::TOO_MANY_REQUESTS,
            json!({"type": "error", "error": {
                "type": "rate_limit_error",
                "message": "You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.",
                "details": {"error_code": "enforced_spend_limit_reached"}
            }, "request_id": REQUEST_ID}),
        ),
        "overloaded" => error(529, "overloaded_error", "Overloaded"),
        "overloaded-after-200" => stream(
            vec![
                message_start(&model),
                ping(),
                event(
                    "error",
                    json!({"type": "error", "error": {"details": null, "type": "overloaded_error", "message": "Overloaded"}, "request_id": REQUEST_ID}),
                ),
            ],
            Duration::ZERO,
            false,
        ),
        "truncated" => {
            let mut events = text_events(&model, "Sure, I", "end_turn");
            events.pop();
            stream(events, Duration::ZERO, false)
        }
        "stall" => {
            // Never answer: the client's deadline must end this.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "stall-mid-stream" => stream(vec![message_start(&model), ping()], Duration::ZERO, true),
        _ => error(404, "not_found_error", &format!("model: {model}")),
    }
}
