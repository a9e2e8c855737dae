//! A fake OpenAI-compatible provider (Chat Completions) whose behaviour the request's `model` chooses.
//!
//! It answers `POST .../chat/completions` the way real servers do, byte for byte where it matters: vLLM's error
//! bodies (400 tool-choice flags, 404 model, 401 `{"error":"Unauthorized"}`), a streamed tool call, a text answer,
//! a length stop, an error event after a 200, 429 with `retry-after`, 529, 503, an HTML 502, a stall. Every request is
//! recorded so tests can assert what the probe sent. It is what [`super::FakeProvider::start`] serves.
//!
//! Models (the part before an optional `@` suffix picks the behaviour):
//! `ok`, `ok-delay-<ms>`, `text`, `empty-text`, `length`, `error-after-200`, `overloaded-after-200`,
//! `vllm-no-parser`, `missing`, `auth` (401 unless the key matches), `echo-key` (401 that echoes the Authorization
//! header), `rate-limited` (429 always), `rate-limited-<n>` (429 on the first n tries, then ok),
//! `rate-limited-after-<s>` (429 always, `retry-after: <s>`), `call-then-length` (the whole call, then `length`),
//! `call-then-stall` (the whole call, then nothing),
//! `rate-limited-then-stall` (429 on the first try, then no answer to any retry), `quota`,
//! `overloaded` (529), `unavailable` (503), `unavailable-<n>`, `retry-after-huge`, `retry-after-date`, `stall`,
//! `stall-mid-stream`, `text-then-stall`, `html-502`, `json-200`, `garbage`, `truncated`, `finish-error`, `no-newline-<bytes>`,
//! `call-paced-<ms>` (the tool call with a pause before each event), `name-paced-<ms>` (the same whose name chunk ends
//! the call: the verdict at the chunk where the probe used to hang up).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream};
use crate::http::{Body, Recorded, full};

/// The key the `auth` model accepts.
pub const GOOD_KEY: &str = "sk-fake-good-key-0123456789";

fn vllm_error(status: u16, kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": status}})
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    });
    format!("data: {c}\n\n")
}

fn tool_call_events() -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "probe", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"status\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ready\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn text_events(text: &str, finish: &str) -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some(finish)),
        "data: [DONE]\n\n".to_owned(),
    ]
}

/// The OpenAI-compatible behaviour (`POST .../chat/completions`, `GET .../models`).
pub fn handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| {
        Box::pin(async move {
            if req.method == "GET" && req.path.ends_with("/models") {
                return full(
                    StatusCode::OK,
                    "application/json",
                    json!({"object": "list", "data": []}).to_string(),
                );
            }
            if req.method != "POST" || !req.path.ends_with("/chat/completions") {
                return json_error(StatusCode::NOT_FOUND, json!({"detail": "Not Found"}));
            }
            let model = req.body["model"].as_str().unwrap_or("").to_owned();
            let authorization = req.header("authorization").unwrap_or("").to_owned();
            respond(&model, try_n, &authorization).await
        })
    })
}

async fn respond(model: &str, try_n: u32, authorization: &str) -> Response<Body> {
    let behaviour = model.split('@').next().unwrap_or("");
    let numbered = |prefix: &str| {
        behaviour
            .strip_prefix(prefix)
            .and_then(|n| n.parse::<u64>().ok())
    };
    if let Some(ms) = numbered("ok-delay-") {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        return stream(tool_call_events(), Duration::ZERO, false);
    }
    // The bench's pair (issue 16): the same tool-call stream with a pause of <ms> before each event, where the
    // verdict comes once the arguments are complete, and the stream whose call ends at its name chunk (where the
    // probe used to hang up).
    if let Some(ms) = numbered("call-paced-") {
        return stream(tool_call_events(), Duration::from_millis(ms), false);
    }
    if let Some(ms) = numbered("name-paced-") {
        // The name chunk ends the call itself: the verdict comes at the chunk the probe used to hang up at.
        let events = vec![
            chunk(json!({"role": "assistant", "content": null}), None),
            chunk(
                json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                       "function": {"name": "probe", "arguments": ""}}]}),
                Some("tool_calls"),
            ),
            "data: [DONE]\n\n".to_owned(),
        ];
        return stream(events, Duration::from_millis(ms), false);
    }
    // 429 on every try, asking for a wait of <s> seconds (through LiteLLM: `llm_provider-retry-after`).
    if let Some(secs) = numbered("rate-limited-after-") {
        return rate_limited(&secs.to_string());
    }
    if let Some(n) = numbered("rate-limited-") {
        if u64::from(try_n) <= n {
            return rate_limited("0");
        }
        return stream(tool_call_events(), Duration::ZERO, false);
    }
    if let Some(n) = numbered("unavailable-") {
        if u64::from(try_n) <= n {
            return unavailable();
        }
        return stream(tool_call_events(), Duration::ZERO, false);
    }
    if let Some(bytes) = numbered("no-newline-") {
        let line = format!("data: {}", "x".repeat(bytes as usize));
        return stream(vec![line], Duration::ZERO, true);
    }
    match behaviour {
        "ok" => stream(tool_call_events(), Duration::ZERO, false),
        "text" => stream(text_events("I would call the probe tool, but here is some text instead.", "stop"), Duration::ZERO, false),
        "empty-text" => stream(text_events("", "stop"), Duration::ZERO, false),
        "length" => stream(text_events("Let me think about which tool", "length"), Duration::ZERO, false),
        "finish-error" => stream(text_events("", "network_error"), Duration::ZERO, false),
        "error-after-200" => stream(
            vec![
                chunk(json!({"role": "assistant", "content": ""}), None),
                format!("data: {}\n\n", json!({"error": {"message": "the backend dropped the request", "type": "internal_error", "code": 500}})),
            ],
            Duration::ZERO,
            false,
        ),
        "overloaded-after-200" => stream(
            vec![format!("data: {}\n\n", json!({"error": {"message": "Overloaded", "type": "overloaded_error"}}))],
            Duration::ZERO,
            false,
        ),
        "vllm-no-parser" => json_error(
            StatusCode::BAD_REQUEST,
            vllm_error(400, "BadRequestError", "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"),
        ),
        "missing" => json_error(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": format!("The model `{model}` does not exist."), "type": "NotFoundError", "param": "model", "code": 404}}),
        ),
        "auth" if authorization != format!("Bearer {GOOD_KEY}") => {
            json_error(StatusCode::UNAUTHORIZED, json!({"error": "Unauthorized"}))
        }
        "auth" => stream(tool_call_events(), Duration::ZERO, false),
        "echo-key" => json_error(
            StatusCode::UNAUTHORIZED,
            json!({"error": {"message": format!("Incorrect API key provided: {}. You can find your API key at https://example.invalid/keys.", authorization.trim_start_matches("Bearer ")), "type": "invalid_request_error", "code": "invalid_api_key"}}),
        ),
        "rate-limited" => rate_limited("0"),
        "rate-limited-then-stall" if try_n <= 1 => rate_limited("0"),
        "rate-limited-then-stall" => {
            // The retry never gets an answer: the model's deadline must end it.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "retry-after-huge" => rate_limited("99999"),
        "retry-after-date" => {
            let at = std::time::SystemTime::now() + Duration::from_secs(1);
            rate_limited(&httpdate::fmt_http_date(at))
        }
        "quota" => Response::builder()
            .status(429)
            .header("content-type", "application/json")
            .header("retry-after", "0")
            .body(
                Full::new(Bytes::from(
                    json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}).to_string(),
                ))
                .boxed(),
            )
            .expect("valid response"),
        "overloaded" => Response::builder()
            .status(529)
            .header("content-type", "application/json")
            .header("retry-after", "0")
            .body(Full::new(Bytes::from(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string())).boxed())
            .expect("valid response"),
        "unavailable" => unavailable(),
        // The whole call, then the cap stops the message (issue 27, item 5: a Turn fails every call of it).
        "call-then-length" => {
            let mut events = tool_call_events();
            events.truncate(4);
            events.push(chunk(json!({}), Some("length")));
            events.push("data: [DONE]\n\n".to_owned());
            stream(events, Duration::ZERO, false)
        }
        // The whole call, then nothing: no stop reason before the deadline.
        "call-then-stall" => {
            let mut events = tool_call_events();
            events.truncate(4);
            stream(events, Duration::ZERO, true)
        }
        "stall" => {
            // Never answer: the client's deadline must end this.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "stall-mid-stream" => stream(vec![chunk(json!({"role": "assistant", "content": ""}), None)], Duration::ZERO, true),
        // Text, then nothing (no stop, no call): the waiting note's `text` stage (issue 38, item 4).
        "text-then-stall" => stream(
            vec![chunk(json!({"role": "assistant", "content": "Let me think about it."}), None)],
            Duration::ZERO,
            true,
        ),
        "html-502" => full(
            StatusCode::BAD_GATEWAY,
            "text/html",
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
        ),
        "json-200" => full(
            StatusCode::OK,
            "application/json",
            json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}).to_string(),
        ),
        "garbage" => stream(vec!["data: {this is not json\n\n".to_owned()], Duration::ZERO, false),
        "truncated" => stream(vec![chunk(json!({"content": "Sure, I"}), None)], Duration::ZERO, false),
        _ => json_error(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": format!("The model `{model}` does not exist."), "type": "NotFoundError", "param": "model", "code": 404}}),
        ),
    }
}

fn rate_limited(retry_after: &str) -> Response<Body> {
    Response::builder()
        .status(429)
        .header("content-type", "application/json")
        .header("retry-after", retry_after)
        .body(Full::new(Bytes::from(json!({"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}}).to_string())).boxed())
        .expect("valid response")
}

fn unavailable() -> Response<Body> {
    json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
    )
}
