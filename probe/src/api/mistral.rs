//! `mistral-conversations`: what pi-ai 0.82.1 sends through Mistral's SDK (`chat.stream`), and its stream.
//!
//! Despite the kind's name the wire is Chat Completions (`research/pi-requests.md`, section 8):
//! `POST {base}/v1/chat/completions` with `accept: text/event-stream`, `authorization: Bearer <MISTRAL_API_KEY>`, the
//! conversation id as `x-affinity` header and as `prompt_cache_key` (pi's prompt caching is on by default), the system
//! prompt as a `system` message (whatever the model's `reasoning`), the user content as a list of parts, `max_tokens`
//! after the context clamp, the tool with `strict: false`, no `tool_choice`, and nothing about thinking when it is
//! off. The stream is Chat Completions SSE ending in `[DONE]`, read by [`super::openai_completions::Reader`].
//!
//! Stop reasons as pi maps them: `length` and `model_length` are out of tokens, `error` is an error, and anything
//! else (`stop`, `tool_calls`...) a normal end.
//!
//! Deviations from pi, on purpose:
//! - No `user-agent: mistral-client-typescript/<v>`, no empty `cookie`, no `accept-language: *` / `sec-fetch-mode:
//!   cors`: they describe Mistral's SDK and Node's fetch, and no server reads them. The probe says
//!   `user-agent: jr2-probe/<version>`.
//! - `accept-encoding` is not sent (as in [`super::openai_completions`]).
//! - Without a key pi throws `No API key for provider: mistral` before sending; the probe sends nothing either and
//!   says the key is missing (key refused).

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::{HttpRequest, ProviderError, RequestError, StopKind, StreamReader, ToolChoice, Wire};
use crate::contract::outcome::{Code, Outcome};
use crate::contract::verdict::Route;
use crate::prompt;
use crate::target::Target;

/// The path appended to the base URL (`https://api.mistral.ai`).
pub const PATH: &str = "/v1/chat/completions";

/// The body pi sends for `target`.
pub fn body_for(target: &Target) -> Value {
    let mut body = json!({
        "model": target.id,
        "max_tokens": target.max_tokens,
        "stream": true,
        "messages": [
            {"role": "system", "content": prompt::SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": prompt::USER}]}
        ],
        "tools": [{
            "type": "function",
            "function": {
                "name": prompt::TOOL_NAME,
                "description": prompt::TOOL_DESCRIPTION,
                "strict": false,
                "parameters": prompt::tool_parameters()
            }
        }]
    });
    let choice = match target.tool_choice {
        ToolChoice::Unset => None,
        ToolChoice::Auto => Some(json!("auto")),
        ToolChoice::None => Some(json!("none")),
        ToolChoice::Required => Some(json!("required")),
        ToolChoice::Named => {
            Some(json!({"type": "function", "function": {"name": prompt::TOOL_NAME}}))
        }
    };
    if let Some(choice) = choice {
        body["tool_choice"] = choice;
    }
    if !target.session_id.is_empty() {
        body["prompt_cache_key"] = json!(target.session_id);
    }
    body
}

/// The `mistral-conversations` wire.
#[derive(Debug)]
pub struct MistralConversations;

impl Wire for MistralConversations {
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError> {
        let Some(key) = target.key_value() else {
            let env = match &target.route {
                Route::Catalog { key_env, .. } => key_env.as_str(),
                Route::Custom { .. } => "MISTRAL_API_KEY",
            };
            return Err(RequestError {
                outcome: Outcome::KeyRefused,
                code: Code::KeyRefused,
                message: format!(
                    "no key for provider mistral: {env} is not set, and a Turn sends nothing without one"
                ),
            });
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        super::catalog_headers(&mut headers, target);
        // pi sets the affinity header unless the model's own headers name one.
        if !target.session_id.is_empty() && !headers.contains_key("x-affinity") {
            super::header(&mut headers, "x-affinity", &target.session_id);
        }
        headers.insert(
            AUTHORIZATION,
            super::secret_header(&format!("Bearer {key}"))?,
        );
        Ok(HttpRequest {
            url: super::endpoint(&target.base_url, PATH),
            headers,
            body: body_for(target).to_string().into_bytes(),
        })
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(super::openai_completions::Reader::default())
    }

    fn stop_kind(&self, reason: &str) -> StopKind {
        match reason {
            "length" | "model_length" => StopKind::Length,
            "error" => StopKind::Other,
            // pi reads every other reason as a normal stop.
            _ => StopKind::Normal,
        }
    }

    fn refine_error(
        &self,
        status: u16,
        _headers: &HeaderMap,
        error: Option<&ProviderError>,
    ) -> Option<(Outcome, Code)> {
        // `{"object":"error","message":"Invalid model: x","type":"invalid_model","param":null,"code":"1500"}`
        let kind = error.and_then(|e| e.kind.as_deref());
        (status == 400 && kind == Some("invalid_model"))
            .then_some((Outcome::Http, Code::ModelNotFound))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ApiKind, StreamEvent};
    use crate::framing::sse;
    use crate::target::Facts;

    fn target(key: Option<&str>) -> Target {
        Target::test(ApiKind::MistralConversations)
            .model("mistral/mistral-small-latest")
            .base_url("https://api.mistral.ai")
            .catalog("mistral", "MISTRAL_API_KEY", key.is_some())
            .key("MISTRAL_API_KEY", key)
            .max_tokens(prompt::token_cap(256_000, 256_000))
            .facts(Facts {
                provider: Some("mistral".into()),
                reasoning: true,
                ..Facts::default()
            })
            .session_id("0190d6a8-0000-7000-8000-000000000001")
    }

    #[test]
    fn request_is_pis() {
        let req = MistralConversations
            .request(&target(Some("mk-1234")))
            .unwrap();
        assert_eq!(
            req.url.as_str(),
            "https://api.mistral.ai/v1/chat/completions"
        );
        assert_eq!(req.headers["accept"], "text/event-stream");
        assert_eq!(req.headers["authorization"], "Bearer mk-1234");
        assert!(req.headers["authorization"].is_sensitive());
        assert_eq!(
            req.headers["x-affinity"],
            "0190d6a8-0000-7000-8000-000000000001"
        );
        let b: Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(
            b["messages"][0],
            json!({"role": "system", "content": prompt::SYSTEM})
        );
        assert_eq!(b["messages"][1]["content"][0]["type"], "text");
        assert_eq!(b["max_tokens"], prompt::token_cap(256_000, 256_000));
        assert_eq!(b["stream"], true);
        assert_eq!(b["tools"][0]["function"]["strict"], false);
        assert_eq!(
            b["prompt_cache_key"],
            "0190d6a8-0000-7000-8000-000000000001"
        );
        for absent in [
            "tool_choice",
            "max_completion_tokens",
            "stream_options",
            "store",
            "prompt_mode",
            "reasoning_effort",
        ] {
            assert!(b.get(absent).is_none(), "{absent}");
        }
    }

    #[test]
    fn tool_choice_when_the_plan_sets_one() {
        let mut t = target(Some("mk-1234"));
        t.tool_choice = ToolChoice::Named;
        assert_eq!(
            body_for(&t)["tool_choice"],
            json!({"type": "function", "function": {"name": "probe"}})
        );
        t.tool_choice = ToolChoice::Required;
        assert_eq!(body_for(&t)["tool_choice"], "required");
    }

    #[test]
    fn no_key_sends_nothing() {
        let e = MistralConversations.request(&target(None)).unwrap_err();
        assert_eq!((e.outcome, e.code), (Outcome::KeyRefused, Code::KeyRefused));
        assert!(e.message.contains("MISTRAL_API_KEY"), "{}", e.message);
    }

    #[test]
    fn stop_reasons_as_pi_maps_them() {
        let w = MistralConversations;
        assert_eq!(w.stop_kind("length"), StopKind::Length);
        assert_eq!(w.stop_kind("model_length"), StopKind::Length);
        assert_eq!(w.stop_kind("error"), StopKind::Other);
        assert_eq!(w.stop_kind("stop"), StopKind::Normal);
        assert_eq!(w.stop_kind("tool_calls"), StopKind::Normal);
    }

    #[test]
    fn invalid_model_is_model_not_found() {
        let e = super::super::error_body::parse(
            r#"{"object":"error","message":"Invalid model: x","type":"invalid_model","param":null,"code":"1500"}"#,
        );
        assert_eq!(
            MistralConversations.refine_error(400, &HeaderMap::new(), e.as_ref()),
            Some((Outcome::Http, Code::ModelNotFound))
        );
        assert_eq!(
            MistralConversations.refine_error(401, &HeaderMap::new(), None),
            None
        );
    }

    #[test]
    fn mistral_stream_reads() {
        let mut r = MistralConversations.reader();
        let mut out = Vec::new();
        let ev = |data: &str| sse::Event {
            event: String::new(),
            data: data.into(),
        };
        r.on_event(
            &ev(r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"mistral-small-latest","choices":[{"index":0,"delta":{"tool_calls":[{"id":"AbC123xYz","function":{"name":"probe","arguments":"{\"status\": \"ready\"}"},"index":0}]},"finish_reason":"tool_calls"}]}"#),
            &mut out,
        )
        .unwrap();
        assert_eq!(
            out[0],
            StreamEvent::ToolCall {
                name: "probe".into()
            }
        );
    }
}
