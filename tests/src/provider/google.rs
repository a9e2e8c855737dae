//! A fake Gemini API (and Vertex AI in express mode) whose behaviour the model in the request's path chooses.
//!
//! It answers `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` as `generativelanguage.googleapis.com`
//! does, and `POST /v1/publishers/google/models/<model>:streamGenerateContent?alt=sse` as `aiplatform.googleapis.com`
//! does with an API key: a 200 `text/event-stream` whose events are whole `GenerateContentResponse`s framed with
//! `\r\n\r\n` and no end marker (the last one carries `finishReason`), and errors as Google's RPC status bodies
//! `{"error":{"code","message","status","details":[...]}}`. Like the real API it refuses a request without
//! `x-goog-api-key` (403 `PERMISSION_DENIED`, unregistered callers) and one whose key is not [`GOOD_KEY`] (400
//! `INVALID_ARGUMENT` with `ErrorInfo.reason` `API_KEY_INVALID`), whatever the model; without `alt=sse` it answers
//! the whole JSON array of the non-SSE stream. Serve it with [`super::FakeProvider::start_with`];
//! every request is recorded there. The body carries no model, so the try counter is keyed by the path.
//!
//! Models (the part before an optional `@` suffix picks the behaviour):
//! `ok` and `gemini-2.5-flash` (a `functionCall` part with `finishReason` `STOP` in one event), `thinking-then-call`
//! (Gemini 3: a thought summary, then the call with its `thoughtSignature`), `text` (`STOP`), `max-tokens`
//! (`MAX_TOKENS` with no parts: thinking ate the budget), `malformed` (`MALFORMED_FUNCTION_CALL`), `blocked`
//! (`promptFeedback.blockReason`), `denied` (403 `PERMISSION_DENIED`, the API disabled in the key's project),
//! `rate-limited` (429 `RESOURCE_EXHAUSTED` without details, always), `rate-limited-<n>` (429 with
//! `RetryInfo.retryDelay` `"1s"` on the first n tries, then ok), `rate-limited-then-stall` (429 with `"0s"`, then
//! no answer to any retry), `per-day` (429 for a per-day quota, `retryDelay`
//! `"52758s"`), `unavailable` (503 `UNAVAILABLE`, always), `error-after-200` (`INTERNAL` in the stream),
//! `exhausted-after-200` (`RESOURCE_EXHAUSTED` in the stream), `truncated` (text, then the stream ends without a
//! `finishReason`), `stall` (never answers), `stall-mid-stream` (one event, then nothing); any other model is a 404
//! `NOT_FOUND` in the wording of the API its path names.

use std::sync::Arc;
use std::time::Duration;

use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream};
use crate::http::{Body, Recorded, full};

/// The key the fake accepts.
pub const GOOD_KEY: &str = "AIzaSyFakeGoodKey-0123456789abcdefghij";

/// The text the `text` model answers.
pub const TEXT_ANSWER: &str = "I would call the probe tool, but here is some text instead.";

/// The `responseId` of every streamed event.
pub const RESPONSE_ID: &str = "fakeRespId0123456789AB";

/// The message of a 429 for a per-day quota.
pub const PER_DAY_MESSAGE: &str = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_requests_per_model_per_day, limit: 0";

/// The Gemini (and Vertex express) behaviour, for [`super::FakeProvider::start_with`].
pub fn handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| Box::pin(async move { respond(&req, try_n).await }))
}

/// Which API a path names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `/v1beta/models/<model>:...`
    Gemini,
    /// `/v1/publishers/google/models/<model>:...`
    Vertex,
}

/// The API, the model and the method a request path names (`None` for any other path).
pub fn parse_path(path: &str) -> Option<(Api, String, String)> {
    let path = path.split('?').next().unwrap_or("");
    let (api, rest) = if let Some(rest) = path.strip_prefix("/v1beta/models/") {
        (Api::Gemini, rest)
    } else if let Some(rest) = path.strip_prefix("/v1/publishers/google/models/") {
        (Api::Vertex, rest)
    } else {
        return None;
    };
    let (model, method) = rest.rsplit_once(':')?;
    Some((api, model.to_owned(), method.to_owned()))
}

/// A Google RPC status body.
pub fn error_body(code: u16, status: &str, message: &str, details: Value) -> Value {
    let mut error = json!({"code": code, "message": message, "status": status});
    if details.as_array().is_some_and(|d| !d.is_empty()) {
        error["details"] = details;
    }
    json!({"error": error})
}

fn error(code: u16, status: &str, message: &str, details: Value) -> Response<Body> {
    json_error(
        StatusCode::from_u16(code).expect("a status"),
        error_body(code, status, message, details),
    )
}

/// The 400 a wrong key gets, byte for byte as the Gemini API sends it (pretty-printed).
pub fn api_key_invalid_body(api: Api) -> String {
    let service = match api {
        Api::Gemini => "generativelanguage.googleapis.com",
        Api::Vertex => "aiplatform.googleapis.com",
    };
    format!(
        "{{\n  \"error\": {{\n    \"code\": 400,\n    \"message\": \"API key not valid. Please pass a valid API key.\",\n    \"status\": \"INVALID_ARGUMENT\",\n    \"details\": [\n      {{\n        \"@type\": \"type.googleapis.com/google.rpc.ErrorInfo\",\n        \"reason\": \"API_KEY_INVALID\",\n        \"domain\": \"googleapis.com\",\n        \"metadata\": {{\n          \"service\": \"{service}\"\n        }}\n      }},\n      {{\n        \"@type\": \"type.googleapis.com/google.rpc.LocalizedMessage\",\n        \"locale\": \"en-US\",\n        \"message\": \"API key not valid. Please pass a valid API key.\"\n      }}\n    ]\n  }}\n}}\n"
    )
}

fn event(chunk: &str) -> String {
    format!("data: {chunk}\r\n\r\n")
}

fn usage(model: &str, thoughts: u32) -> String {
    let total = 87 + thoughts;
    let thoughts = if thoughts > 0 {
        format!(",\"thoughtsTokenCount\": {thoughts}")
    } else {
        String::new()
    };
    format!(
        "\"usageMetadata\": {{\"promptTokenCount\": 72,\"candidatesTokenCount\": 15,\"totalTokenCount\": {total}{thoughts},\"promptTokensDetails\": [{{\"modality\": \"TEXT\",\"tokenCount\": 72}}]}},\"modelVersion\": \"{model}\",\"responseId\": \"{RESPONSE_ID}\""
    )
}

fn call_events(model: &str) -> Vec<String> {
    vec![event(&format!(
        "{{\"candidates\": [{{\"content\": {{\"parts\": [{{\"functionCall\": {{\"name\": \"probe\",\"args\": {{\"status\": \"ready\"}}}}}}],\"role\": \"model\"}},\"finishReason\": \"STOP\",\"index\": 0}}],{}}}",
        usage(model, 0)
    ))]
}

fn thinking_then_call_events(model: &str) -> Vec<String> {
    vec![
        event(&format!(
            "{{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"**Calling the probe tool**\\n\\nThe user asks for the probe tool with status ready.\",\"thought\": true}}],\"role\": \"model\"}},\"index\": 0}}],{}}}",
            usage(model, 41)
        )),
        event(&format!(
            "{{\"candidates\": [{{\"content\": {{\"parts\": [{{\"functionCall\": {{\"name\": \"probe\",\"args\": {{\"status\": \"ready\"}}}},\"thoughtSignature\": \"CiQB0e2Kb7FakeSignatureAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\"}}],\"role\": \"model\"}},\"finishReason\": \"STOP\",\"index\": 0}}],{}}}",
            usage(model, 41)
        )),
    ]
}

fn text_events(model: &str) -> Vec<String> {
    let (head, tail) = TEXT_ANSWER.split_at(14);
    vec![
        event(&format!(
            "{{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"{head}\"}}],\"role\": \"model\"}},\"index\": 0}}],{}}}",
            usage(model, 0)
        )),
        event(&format!(
            "{{\"candidates\": [{{\"content\": {{\"parts\": [{{\"text\": \"{tail}\"}}],\"role\": \"model\"}},\"finishReason\": \"STOP\",\"index\": 0}}],{}}}",
            usage(model, 0)
        )),
    ]
}

fn finish_events(model: &str, reason: &str, extra: &str) -> Vec<String> {
    vec![event(&format!(
        "{{\"candidates\": [{{\"content\": {{\"role\": \"model\"}},\"finishReason\": \"{reason}\"{extra},\"index\": 0}}],{}}}",
        usage(model, 1024)
    ))]
}

fn quota_details(quota_id: &str, metric: &str, retry_delay: &str) -> Value {
    json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaMetric": metric, "quotaId": quota_id,
             "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"}, "quotaValue": "10"}
        ]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [
            {"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}
        ]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
    ])
}

fn rate_limited_with_delay(retry_delay: &str) -> Response<Body> {
    error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 1s.",
        quota_details(
            "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
            "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            retry_delay,
        ),
    )
}

fn not_found(api: Api, model: &str) -> Response<Body> {
    let message = match api {
        Api::Gemini => format!(
            "models/{model} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."
        ),
        Api::Vertex => format!(
            "Publisher Model `publishers/google/models/{model}` was not found or your project does not have access to it. Please ensure you are using a valid model version. For more information, see: https://cloud.google.com/vertex-ai/generative-ai/docs/learn/model-versions"
        ),
    };
    error(404, "NOT_FOUND", &message, json!([]))
}

async fn respond(req: &Recorded, try_n: u32) -> Response<Body> {
    let Some((api, model, method)) = parse_path(&req.path) else {
        return full(
            StatusCode::NOT_FOUND,
            "text/html; charset=UTF-8",
            "<!DOCTYPE html>\n<html lang=en>\n  <meta charset=utf-8>\n  <title>Error 404 (Not Found)!!1</title>\n  <p><b>404.</b> <ins>That\u{2019}s an error.</ins>\n  <p>The requested URL was not found on this server.  <ins>That\u{2019}s all we know.</ins>\n",
        );
    };
    if req.method != "POST" || method != "streamGenerateContent" {
        return error(
            400,
            "INVALID_ARGUMENT",
            "The fake answers POST streamGenerateContent only.",
            json!([]),
        );
    }
    match req.header("x-goog-api-key") {
        None => {
            return error(
                403,
                "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
                json!([]),
            );
        }
        Some(key) if key != GOOD_KEY => {
            return full(
                StatusCode::BAD_REQUEST,
                "application/json; charset=UTF-8",
                api_key_invalid_body(api),
            );
        }
        Some(_) => {}
    }
    let sse = req.path.contains("alt=sse");
    let behaviour = model.split('@').next().unwrap_or("").to_owned();
    let events = |events: Vec<String>| -> Response<Body> {
        if sse {
            stream(events, Duration::ZERO, false)
        } else {
            // Without `alt=sse` the stream is one JSON array of the same responses.
            let items: Vec<Value> = events
                .iter()
                .filter_map(|e| serde_json::from_str(e.trim().trim_start_matches("data: ")).ok())
                .collect();
            full(
                StatusCode::OK,
                "application/json; charset=UTF-8",
                Value::Array(items).to_string(),
            )
        }
    };
    if let Some(n) = behaviour
        .strip_prefix("rate-limited-")
        .and_then(|n| n.parse::<u32>().ok())
    {
        if try_n <= n {
            return rate_limited_with_delay("1s");
        }
        return events(call_events(&model));
    }
    match behaviour.as_str() {
        "ok" | "gemini-2.5-flash" => events(call_events(&model)),
        "thinking-then-call" => events(thinking_then_call_events(&model)),
        "text" => events(text_events(&model)),
        "max-tokens" => events(finish_events(&model, "MAX_TOKENS", "")),
        "malformed" => events(finish_events(
            &model,
            "MALFORMED_FUNCTION_CALL",
            ",\"finishMessage\": \"Malformed function call: print(default_api.probe(status='ready'))\"",
        )),
        "blocked" => events(vec![event(&format!(
            "{{\"promptFeedback\": {{\"blockReason\": \"PROHIBITED_CONTENT\"}},{}}}",
            usage(&model, 0)
        ))]),
        "denied" => error(
            403,
            "PERMISSION_DENIED",
            "Generative Language API has not been used in project 123456789012 before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/generativelanguage.googleapis.com/overview?project=123456789012 then retry.",
            json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "SERVICE_DISABLED",
                    "domain": "googleapis.com",
                    "metadata": {"service": "generativelanguage.googleapis.com", "consumer": "projects/123456789012"}}]),
        ),
        "rate-limited-then-stall" if try_n <= 1 => rate_limited_with_delay("0s"),
        "rate-limited-then-stall" => {
            // The retry never gets an answer: the model's deadline must end it.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "rate-limited" => error(
            429,
            "RESOURCE_EXHAUSTED",
            "Resource has been exhausted (e.g. check quota).",
            json!([]),
        ),
        "per-day" => error(
            429,
            "RESOURCE_EXHAUSTED",
            PER_DAY_MESSAGE,
            quota_details(
                "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                "generativelanguage.googleapis.com/generate_requests_per_model_per_day",
                "52758s",
            ),
        ),
        "unavailable" => error(
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
            json!([]),
        ),
        "error-after-200" => stream(
            vec![
                text_events(&model).remove(0),
                event(
                    "{\"error\": {\"code\": 500,\"message\": \"An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting\",\"status\": \"INTERNAL\"}}",
                ),
            ],
            Duration::ZERO,
            false,
        ),
        "exhausted-after-200" => stream(
            vec![event(
                "{\"error\": {\"code\": 429,\"message\": \"Resource has been exhausted (e.g. check quota).\",\"status\": \"RESOURCE_EXHAUSTED\"}}",
            )],
            Duration::ZERO,
            false,
        ),
        "truncated" => stream(vec![text_events(&model).remove(0)], Duration::ZERO, false),
        "stall" => {
            // Never answer: the client's deadline must end this.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "stall-mid-stream" => stream(vec![text_events(&model).remove(0)], Duration::ZERO, true),
        _ => not_found(api, &model),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"),
            Some((
                Api::Gemini,
                "gemini-2.5-flash".into(),
                "streamGenerateContent".into()
            ))
        );
        assert_eq!(
            parse_path("/v1/publishers/google/models/ok@2:streamGenerateContent?alt=sse"),
            Some((Api::Vertex, "ok@2".into(), "streamGenerateContent".into()))
        );
        assert_eq!(parse_path("/v1/chat/completions"), None);
    }

    #[test]
    fn events_are_json() {
        for e in call_events("m")
            .into_iter()
            .chain(thinking_then_call_events("m"))
            .chain(text_events("m"))
            .chain(finish_events("m", "MAX_TOKENS", ""))
        {
            let data = e
                .strip_prefix("data: ")
                .unwrap()
                .strip_suffix("\r\n\r\n")
                .unwrap();
            serde_json::from_str::<Value>(data).unwrap_or_else(|err| panic!("{err}: {data}"));
        }
        serde_json::from_str::<Value>(&api_key_invalid_body(Api::Gemini)).unwrap();
    }
}
