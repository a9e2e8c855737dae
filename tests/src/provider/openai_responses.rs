//! A fake OpenAI Responses API (and Azure OpenAI's v1 Responses API) whose behaviour the request's `model` chooses.
//!
//! It answers `POST .../responses` as `api.openai.com` does: a streamed response's events by their names, each
//! `data:` a JSON object with its `type` and `sequence_number` (`response.created`, `response.in_progress`,
//! `response.output_item.added`, `response.function_call_arguments.delta`/`.done`, `response.output_text.delta`,
//! `response.completed`, `response.incomplete`, `response.failed`, `error`), and its errors as
//! `{"error":{"message","type","param","code"}}`. Like the real API it refuses a request whose key is not
//! [`GOOD_KEY`] (401 `invalid_api_key`, the key echoed masked as OpenAI masks it), whatever the model.
//!
//! A path under `/openai/` is Azure's: the key is read from `api-key` (not `authorization`), the query must hold
//! `api-version` (400 `MissingApiVersionParameter` otherwise), and a refused key gets Azure's 401 body
//! (`{"error":{"code":"401","message":"Access denied ..."}}`).
//!
//! Serve it with [`super::FakeProvider::start_with`]; every request is recorded there.
//!
//! Models (the part before an optional `@` suffix picks the behaviour):
//! `ok` and `gpt-5-mini` (a reasoning item, then a `function_call` item named `probe`), `text` (a message item,
//! `completed`), `length` (`response.incomplete`, reason `max_output_tokens`), `missing` (404 `model_not_found`),
//! `rate-limited` (429 `rate_limit_exceeded` with `retry-after-ms: 20`, always), `rate-limited-<n>` (429 on the first
//! n tries, then ok), `quota` (429 `insufficient_quota`), `server-error` (500), `failed-after-200`
//! (`response.failed` with `server_error` after the 200), `overloaded-after-200` (an `error` event with
//! `server_is_overloaded` after the 200), `stall` (never answers), `stall-mid-stream` (`response.created`, then
//! nothing); any other model is a 400 `model_not_found` (`The requested model '<id>' does not exist.`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream};
use crate::http::{Body, Recorded};

/// The key the fake accepts.
pub const GOOD_KEY: &str = "sk-proj-fake-good-key-0123456789abcdef";

/// The id of every response the fake streams.
pub const RESPONSE_ID: &str = "resp_68c0ffee0000000000000000000000000000000000000001";

/// The `call_id` of the function call the fake streams.
pub const CALL_ID: &str = "call_Fake0000000000000000001";

/// The text the `text` model answers.
pub const TEXT_ANSWER: &str = "I would call the probe tool, but here is some text instead.";

/// The `retry-after-ms` of a 429.
pub const RETRY_AFTER_MS: u64 = 20;

/// The Responses behaviour, for [`super::FakeProvider::start_with`].
pub fn handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| Box::pin(async move { respond(&req, try_n).await }))
}

/// An OpenAI error body.
pub fn error_body(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// A key as OpenAI echoes it in a 401: its first eight characters, stars, its last four.
pub fn masked(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 12 {
        return "*".repeat(chars.len());
    }
    let prefix_len = 8;
    let prefix: String = chars[..prefix_len].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{prefix}{}{tail}", "*".repeat(chars.len() - prefix_len - 4))
}

/// The SSE events of one streamed response, numbered as OpenAI numbers them.
struct Events {
    next: u64,
    out: Vec<String>,
}

impl Events {
    fn new() -> Self {
        Self {
            next: 0,
            out: Vec::new(),
        }
    }

    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.next);
        self.next += 1;
        self.out.push(format!("event: {kind}\ndata: {data}\n\n"));
    }
}

/// The response object as the stream's envelope events carry it, echoing the request.
fn response(req: &Value, status: &str, output: Value, usage: Value) -> Value {
    json!({
        "id": RESPONSE_ID,
        "object": "response",
        "created_at": 1_757_000_000,
        "status": status,
        "background": false,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": req["max_output_tokens"],
        "max_tool_calls": null,
        "model": "gpt-5-mini-2025-08-07",
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "prompt_cache_key": req["prompt_cache_key"],
        "reasoning": {"effort": req.pointer("/reasoning/effort").cloned().unwrap_or(json!("medium")), "summary": null},
        "safety_identifier": null,
        "service_tier": "auto",
        "store": false,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": req.get("tool_choice").cloned().unwrap_or(json!("auto")),
        "tools": req["tools"],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": null,
        "metadata": {}
    })
}

fn usage(output_tokens: u64, reasoning_tokens: u64) -> Value {
    json!({
        "input_tokens": 74,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": 74 + output_tokens
    })
}

fn started(req: &Value) -> Events {
    let mut e = Events::new();
    let envelope = response(req, "in_progress", json!([]), Value::Null);
    e.push("response.created", json!({"response": envelope}));
    e.push("response.in_progress", json!({"response": envelope}));
    e
}

fn reasoning_item() -> Value {
    json!({"id": "rs_68c0ffee0000000000000000000000000000000000000002", "type": "reasoning", "summary": []})
}

/// A reasoning item, then a function call of `probe` with `{"status":"ready"}`, then `response.completed`.
pub fn tool_call_events(req: &Value) -> Vec<String> {
    let mut e = started(req);
    e.push(
        "response.output_item.added",
        json!({"output_index": 0, "item": reasoning_item()}),
    );
    e.push(
        "response.output_item.done",
        json!({"output_index": 0, "item": reasoning_item()}),
    );
    let fc_id = "fc_68c0ffee0000000000000000000000000000000000000003";
    let call = |status: &str, arguments: &str| {
        json!({"id": fc_id, "type": "function_call", "status": status, "arguments": arguments,
               "call_id": CALL_ID, "name": "probe"})
    };
    e.push(
        "response.output_item.added",
        json!({"output_index": 1, "item": call("in_progress", "")}),
    );
    for delta in ["{\"status\":", "\"ready\"}"] {
        e.push(
            "response.function_call_arguments.delta",
            json!({"item_id": fc_id, "output_index": 1, "delta": delta, "obfuscation": "Qx7"}),
        );
    }
    let arguments = "{\"status\":\"ready\"}";
    e.push(
        "response.function_call_arguments.done",
        json!({"item_id": fc_id, "output_index": 1, "arguments": arguments}),
    );
    e.push(
        "response.output_item.done",
        json!({"output_index": 1, "item": call("completed", arguments)}),
    );
    let output = json!([reasoning_item(), call("completed", arguments)]);
    e.push(
        "response.completed",
        json!({"response": response(req, "completed", output, usage(82, 64))}),
    );
    e.out
}

/// A message item with `text`, then `response.completed`.
pub fn text_events(req: &Value, text: &str) -> Vec<String> {
    let mut e = started(req);
    let msg_id = "msg_68c0ffee0000000000000000000000000000000000000004";
    let message = |status: &str, content: Value| json!({"id": msg_id, "type": "message", "status": status, "content": content, "role": "assistant"});
    e.push(
        "response.output_item.added",
        json!({"output_index": 0, "item": message("in_progress", json!([]))}),
    );
    let empty_part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": ""});
    e.push(
        "response.content_part.added",
        json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "part": empty_part}),
    );
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    for word in &words {
        e.push(
            "response.output_text.delta",
            json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "delta": word, "logprobs": [], "obfuscation": "k2"}),
        );
    }
    e.push(
        "response.output_text.done",
        json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "text": text, "logprobs": []}),
    );
    let part = json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
    e.push(
        "response.content_part.done",
        json!({"item_id": msg_id, "output_index": 0, "content_index": 0, "part": part}),
    );
    let done = message("completed", json!([part]));
    e.push(
        "response.output_item.done",
        json!({"output_index": 0, "item": done}),
    );
    e.push(
        "response.completed",
        json!({"response": response(req, "completed", json!([done]), usage(words.len() as u64, 0))}),
    );
    e.out
}

/// A reasoning item that used the whole cap, then `response.incomplete` (`max_output_tokens`).
pub fn incomplete_events(req: &Value) -> Vec<String> {
    let mut e = started(req);
    e.push(
        "response.output_item.added",
        json!({"output_index": 0, "item": reasoning_item()}),
    );
    e.push(
        "response.output_item.done",
        json!({"output_index": 0, "item": reasoning_item()}),
    );
    let cap = req["max_output_tokens"].as_u64().unwrap_or(16);
    let mut envelope = response(
        req,
        "incomplete",
        json!([reasoning_item()]),
        usage(cap, cap),
    );
    envelope["incomplete_details"] = json!({"reason": "max_output_tokens"});
    e.push("response.incomplete", json!({"response": envelope}));
    e.out
}

/// `response.failed` with `server_error` after the 200.
pub fn failed_events(req: &Value) -> Vec<String> {
    let mut e = started(req);
    let mut envelope = response(req, "failed", json!([]), Value::Null);
    envelope["error"] = json!({"code": "server_error", "message": "An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists."});
    e.push("response.failed", json!({"response": envelope}));
    e.out
}

/// An `error` event (`server_is_overloaded`) after the 200.
pub fn overloaded_events(req: &Value) -> Vec<String> {
    let mut e = started(req);
    e.push(
        "error",
        json!({"code": "server_is_overloaded", "message": "The server is overloaded. Please try again later.", "param": null}),
    );
    e.out
}

fn with_headers(status: u16, headers: &[(&str, String)], body: Value) -> Response<Body> {
    let mut b = Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("x-request-id", "req_fake00000000000000000000000001");
    for (name, value) in headers {
        b = b.header(*name, value.as_str());
    }
    b.body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("valid response")
}

fn rate_limited() -> Response<Body> {
    with_headers(
        429,
        &[
            ("retry-after-ms", RETRY_AFTER_MS.to_string()),
            ("x-ratelimit-limit-requests", "500".to_owned()),
            ("x-ratelimit-remaining-requests", "0".to_owned()),
            ("x-ratelimit-reset-requests", "20ms".to_owned()),
        ],
        error_body(
            &format!(
                "Rate limit reached for gpt-5-mini in organization org-fake on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in {RETRY_AFTER_MS}ms. Visit https://platform.openai.com/account/rate-limits to learn more."
            ),
            "requests",
            None,
            Some("rate_limit_exceeded"),
        ),
    )
}

fn ok(req: &Value) -> Response<Body> {
    stream(tool_call_events(req), Duration::ZERO, false)
}

fn query_has(query: &str, name: &str) -> bool {
    query
        .split('&')
        .any(|pair| pair.split('=').next() == Some(name))
}

/// The refusal of a request whose key is wrong or missing, in OpenAI's or Azure's words; `None` when the key is good.
fn refused(req: &Recorded, azure: bool) -> Option<Response<Body>> {
    if azure {
        if req.header("api-key") == Some(GOOD_KEY) {
            return None;
        }
        return Some(json_error(
            StatusCode::UNAUTHORIZED,
            json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."}}),
        ));
    }
    let key = req
        .header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "));
    match key {
        Some(GOOD_KEY) => None,
        Some(key) => Some(with_headers(
            401,
            &[],
            error_body(
                &format!(
                    "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
                    masked(key)
                ),
                "invalid_request_error",
                None,
                Some("invalid_api_key"),
            ),
        )),
        None => Some(with_headers(
            401,
            &[],
            error_body(
                "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (i.e. providing YOUR_KEY as the username and leaving the password empty).",
                "invalid_request_error",
                None,
                None,
            ),
        )),
    }
}

async fn respond(req: &Recorded, try_n: u32) -> Response<Body> {
    let (path, query) = req.path.split_once('?').unwrap_or((req.path.as_str(), ""));
    let azure = path.starts_with("/openai/");
    if req.method != "POST" || !path.ends_with("/responses") {
        return json_error(
            StatusCode::NOT_FOUND,
            error_body(
                &format!("Invalid URL ({} {path})", req.method),
                "invalid_request_error",
                None,
                None,
            ),
        );
    }
    if azure && !query_has(query, "api-version") {
        return json_error(
            StatusCode::BAD_REQUEST,
            json!({"error": {"code": "MissingApiVersionParameter", "message": "The api-version query parameter (?api-version=) is required for all requests."}}),
        );
    }
    if let Some(refusal) = refused(req, azure) {
        return refusal;
    }
    let body = &req.body;
    let model = body["model"].as_str().unwrap_or("").to_owned();
    let behaviour = model.split('@').next().unwrap_or("");
    if let Some(n) = behaviour
        .strip_prefix("rate-limited-")
        .and_then(|n| n.parse::<u32>().ok())
    {
        return if try_n <= n { rate_limited() } else { ok(body) };
    }
    match behaviour {
        "ok" | "gpt-5-mini" => ok(body),
        "text" => stream(text_events(body, TEXT_ANSWER), Duration::ZERO, false),
        "length" => stream(incomplete_events(body), Duration::ZERO, false),
        "missing" => json_error(
            StatusCode::NOT_FOUND,
            error_body(
                &format!("The model `{model}` does not exist or you do not have access to it."),
                "invalid_request_error",
                None,
                Some("model_not_found"),
            ),
        ),
        "rate-limited" => rate_limited(),
        "quota" => with_headers(
            429,
            &[],
            error_body(
                "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
                "insufficient_quota",
                None,
                Some("insufficient_quota"),
            ),
        ),
        "server-error" => with_headers(
            500,
            &[],
            error_body(
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
                None,
            ),
        ),
        "failed-after-200" => stream(failed_events(body), Duration::ZERO, false),
        "overloaded-after-200" => stream(overloaded_events(body), Duration::ZERO, false),
        "stall" => {
            // Never answer: the client's deadline must end this.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "stall-mid-stream" => {
            let mut e = Events::new();
            e.push(
                "response.created",
                json!({"response": response(body, "in_progress", json!([]), Value::Null)}),
            );
            stream(e.out, Duration::ZERO, true)
        }
        _ => json_error(
            StatusCode::BAD_REQUEST,
            error_body(
                &format!("The requested model '{model}' does not exist."),
                "invalid_request_error",
                Some("model"),
                Some("model_not_found"),
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked_as_openai_masks_them() {
        assert_eq!(
            masked("sk-proj-wrong-key-0000000000"),
            "sk-proj-****************0000"
        );
        assert_eq!(masked("sk-abcdefghijklmnop"), "sk-abcde*******mnop");
        assert_eq!(masked("short"), "*****");
    }

    #[test]
    fn events_are_numbered_and_named() {
        let req = json!({"model": "ok", "max_output_tokens": 128000, "tools": [], "prompt_cache_key": "k"});
        let events = tool_call_events(&req);
        for (n, e) in events.iter().enumerate() {
            let (head, data) = e.split_once("\ndata: ").unwrap();
            let v: Value = serde_json::from_str(data.trim_end()).unwrap();
            assert_eq!(head.strip_prefix("event: "), v["type"].as_str());
            assert_eq!(v["sequence_number"], n as u64);
        }
        assert!(
            events
                .last()
                .unwrap()
                .starts_with("event: response.completed\n")
        );
    }
}
