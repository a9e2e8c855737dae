//! A fake Mistral API whose behaviour the request's `model` chooses.
//!
//! It answers `POST /v1/chat/completions` as `api.mistral.ai` does for the SDK's `chat.stream`: Chat Completions
//! chunks as SSE (`data: {...}`, then `data: [DONE]`), a tool call arriving whole in one delta with its
//! `finish_reason`, and Mistral's error bodies: 401 `{"message":"Unauthorized","request_id":...}`, 429
//! `{"object":"error","message":"Rate limit exceeded","type":"rate_limited","param":null,"code":"1300"}`, 400
//! `invalid_model` (code `1500`); the 503's body is modelled on those (no capture of one was found). Every request whose key is not [`GOOD_KEY`] gets the 401, whatever the model.
//! Serve it with [`super::FakeProvider::start_with`]; every request is recorded there.
//!
//! Models (the part before an optional `@` suffix picks the behaviour):
//! `mistral-small-latest` and `ok` (a tool call), `text` (`stop`), `length` (`length`), `model-length`
//! (`model_length`), `finish-error` (`error`), `rate-limited` (429 always), `rate-limited-<n>` (429 on the first n
//! tries, then ok), `unavailable` (503 always), `stall`; any other model is the 400 `invalid_model`.

use std::sync::Arc;
use std::time::Duration;

use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream};
use crate::http::{Body, Recorded, full};

/// The key the fake accepts.
pub const GOOD_KEY: &str = "fake-mistral-key-0123456789abcdef";

/// The text the `text` model answers.
pub const TEXT_ANSWER: &str = "I would call the probe tool, but here is some text instead.";

/// The Mistral behaviour, for [`super::FakeProvider::start_with`].
pub fn handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| Box::pin(async move { respond(&req, try_n).await }))
}

fn chunk(model: &str, delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "cmpl-5f0e1fakefakefakefake0001", "object": "chat.completion.chunk", "created": 1_760_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {c}\n\n")
}

fn with_usage(model: &str, delta: Value, finish: &str) -> String {
    let c = json!({
        "id": "cmpl-5f0e1fakefakefakefake0001", "object": "chat.completion.chunk", "created": 1_760_000_000,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": {"prompt_tokens": 96, "total_tokens": 110, "completion_tokens": 14}
    });
    format!("data: {c}\n\n")
}

fn tool_call(model: &str) -> Vec<String> {
    vec![
        chunk(model, json!({"role": "assistant", "content": ""}), None),
        with_usage(
            model,
            json!({"tool_calls": [{"id": "D681PevKs", "function": {"name": "probe", "arguments": "{\"status\": \"ready\"}"}, "index": 0}]}),
            "tool_calls",
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn text(model: &str, words: &str, finish: &str) -> Vec<String> {
    vec![
        chunk(model, json!({"role": "assistant", "content": ""}), None),
        chunk(model, json!({"content": words}), None),
        with_usage(model, json!({"content": ""}), finish),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn mistral_error(status: u16, message: &str, kind: &str, code: &str) -> Response<Body> {
    json_error(
        StatusCode::from_u16(status).expect("a status"),
        json!({"object": "error", "message": message, "type": kind, "param": null, "code": code}),
    )
}

fn rate_limited() -> Response<Body> {
    mistral_error(429, "Rate limit exceeded", "rate_limited", "1300")
}

async fn respond(req: &Recorded, try_n: u32) -> Response<Body> {
    if req.method != "POST" || req.path != "/v1/chat/completions" {
        return json_error(StatusCode::NOT_FOUND, json!({"detail": "Not Found"}));
    }
    if req.header("authorization") != Some(&format!("Bearer {GOOD_KEY}")) {
        return json_error(
            StatusCode::UNAUTHORIZED,
            json!({"message": "Unauthorized", "request_id": "7a3f0c2e9b8d4e1fa6c5b4d3e2f1a0b9"}),
        );
    }
    let model = req.body["model"].as_str().unwrap_or("").to_owned();
    let behaviour = model.split('@').next().unwrap_or("");
    let ok = || stream(tool_call(&model), Duration::ZERO, false);
    if let Some(n) = behaviour
        .strip_prefix("rate-limited-")
        .and_then(|n| n.parse::<u32>().ok())
    {
        return if try_n <= n { rate_limited() } else { ok() };
    }
    match behaviour {
        "mistral-small-latest" | "ok" => ok(),
        "text" => stream(text(&model, TEXT_ANSWER, "stop"), Duration::ZERO, false),
        "length" => stream(
            text(&model, "Let me think about which tool", "length"),
            Duration::ZERO,
            false,
        ),
        "model-length" => stream(
            text(&model, "Let me think", "model_length"),
            Duration::ZERO,
            false,
        ),
        "finish-error" => stream(text(&model, "", "error"), Duration::ZERO, false),
        "rate-limited" => rate_limited(),
        "unavailable" => full(
            StatusCode::SERVICE_UNAVAILABLE,
            "application/json",
            json!({"object": "error", "message": "Service unavailable, please try again later", "type": "service_unavailable", "param": null, "code": null})
                .to_string(),
        ),
        "stall" => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        _ => mistral_error(
            400,
            &format!("Invalid model: {model}"),
            "invalid_model",
            "1500",
        ),
    }
}
