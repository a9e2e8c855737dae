//! `bedrock-converse-stream`: Bedrock's ConverseStream as pi-ai 0.82.1 sends it with a bearer token, and its stream.
//!
//! The request is the one `research/pi-requests.md` (section 9) captured: `POST {base}/model/<model id,
//! percent-encoded>/converse-stream` (the `:` of `...-v1:0` becomes `%3A`), `authorization: Bearer
//! <AWS_BEARER_TOKEN_BEDROCK>`, a JSON body with the system prompt and the user message as content blocks, each
//! ending in a `cachePoint` for the Claude models pi caches, `inferenceConfig.maxTokens` after the context clamp,
//! and the tool as `toolConfig.tools[].toolSpec`; no `toolChoice`, nothing about thinking when it is off.
//!
//! The answer is AWS's binary event stream ([`crate::framing::aws_event_stream`]): `messageStart`, `contentBlockStart`
//! (`start.toolUse.name` names the tool: the verdict), `contentBlockDelta`, `contentBlockStop`, `messageStop`
//! (`stopReason`), `metadata`; exceptions after the 200 (`throttlingException`, `modelStreamErrorException`,
//! `validationException`, `serviceUnavailableException`, `internalServerException`) end the stream. An error status
//! names its exception in the `x-amzn-errortype` header (`ThrottlingException:http://...`) and carries
//! `{"message": "..."}`.
//!
//! Deviations from pi, on purpose:
//! - SigV4 credentials (`AWS_ACCESS_KEY_ID`..., a profile, a role) are not supported: the probe sends only the
//!   bearer token. A target without one ends unsupported, without sending anything.
//! - The endpoint is the base URL the target carries, as given (the catalog's regional URL, or the plan's). pi prefers
//!   `AWS_REGION` / an ARN's region over a standard catalog URL; the plan resolves that before the probe runs.
//! - HTTP/1.1, not the AWS SDK's default HTTP/2 (pi itself uses HTTP/1.1 through a proxy, as in a Custodian pod).
//! - No `amz-sdk-invocation-id`, `amz-sdk-request`, `x-amz-user-agent` or SDK `user-agent`: they describe the AWS
//!   SDK's retry loop and Node.js. The probe's retries are its own (the contract's section 4).
//! - Prompt-cache points follow pi's model test on the id only (pi also reads the model's display name, for
//!   application inference profiles; `AWS_BEDROCK_FORCE_CACHE` and `PI_CACHE_RETENTION=long` are not read).

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::{
    Framing, HttpRequest, ProtocolError, ProviderError, RequestError, StopKind, StreamEvent,
    StreamReader, ToolChoice, Wire,
};
use crate::contract::outcome::{Code, Outcome};
use crate::framing::aws_event_stream::{ERROR_PREFIX, EXCEPTION_PREFIX};
use crate::framing::sse;
use crate::prompt;
use crate::target::Target;

/// The model id as a path segment, the way the AWS SDK encodes a label: every byte but `A-Z a-z 0-9 - _ . ~`
/// percent-encoded (`anthropic.claude-haiku-4-5-20251001-v1:0` → `...-v1%3A0`; an ARN's `/` → `%2F`).
pub fn encode_model_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len() + 8);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path appended to the base URL for `id`.
pub fn path(id: &str) -> String {
    format!("/model/{}/converse-stream", encode_model_id(id))
}

/// pi's `supportsPromptCaching`, on the id: Claude 3.5 Haiku, 3.7 Sonnet, every 4.x and 5 model.
pub fn caches_prompt(id: &str) -> bool {
    let lower = id.to_ascii_lowercase();
    let dashed: String = lower
        .split(|c: char| c.is_whitespace() || matches!(c, '_' | '.' | ':'))
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    let any = |needle: &str| lower.contains(needle) || dashed.contains(needle);
    any("claude")
        && (any("fable-5")
            || any("opus-5")
            || any("sonnet-5")
            || any("-4-")
            || any("claude-3-7-sonnet")
            || any("claude-3-5-haiku"))
}

/// The body pi sends for `target`.
pub fn body_for(target: &Target) -> Value {
    let cache = caches_prompt(&target.id);
    let cache_point = json!({"cachePoint": {"type": "default"}});
    let mut user = vec![json!({"text": prompt::USER})];
    let mut system = vec![json!({"text": prompt::SYSTEM})];
    if cache {
        user.push(cache_point.clone());
        system.push(cache_point);
    }
    let mut body = json!({
        "messages": [{"role": "user", "content": user}],
        "system": system,
        "inferenceConfig": {"maxTokens": target.max_tokens},
        "toolConfig": {
            "tools": [{
                "toolSpec": {
                    "name": prompt::TOOL_NAME,
                    "inputSchema": {"json": prompt::tool_parameters()},
                    "description": prompt::TOOL_DESCRIPTION
                }
            }]
        }
    });
    match target.tool_choice {
        ToolChoice::Unset => {}
        // pi leaves the tools out entirely for "none".
        ToolChoice::None => {
            body.as_object_mut().map(|o| o.remove("toolConfig"));
        }
        ToolChoice::Auto => body["toolConfig"]["toolChoice"] = json!({"auto": {}}),
        ToolChoice::Required => body["toolConfig"]["toolChoice"] = json!({"any": {}}),
        ToolChoice::Named => {
            body["toolConfig"]["toolChoice"] = json!({"tool": {"name": prompt::TOOL_NAME}})
        }
    }
    body
}

/// Reads Bedrock's stream (its messages as the [`crate::framing::aws_event_stream::EventDecoder`] maps them).
#[derive(Debug, Default)]
pub struct Reader;

fn json_of(event: &sse::Event) -> Result<Value, ProtocolError> {
    serde_json::from_str::<Value>(&event.data)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| {
            ProtocolError(format!(
                "a Bedrock {} event is not a JSON object",
                event.event
            ))
        })
}

impl StreamReader for Reader {
    fn on_event(
        &mut self,
        event: &sse::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        if let Some(kind) = event
            .event
            .strip_prefix(EXCEPTION_PREFIX)
            .or_else(|| event.event.strip_prefix(ERROR_PREFIX))
        {
            let body = super::error_body::parse(&event.data).unwrap_or_default();
            let message = if body.message.is_empty() {
                kind.to_owned()
            } else {
                format!("{kind}: {}", body.message)
            };
            out.push(StreamEvent::Error(ProviderError {
                message,
                kind: Some(kind.to_owned()),
                code: body.code,
            }));
            return Ok(());
        }
        match event.event.as_str() {
            "contentBlockStart" => {
                let v = json_of(event)?;
                if let Some(name) = v
                    .pointer("/start/toolUse/name")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    out.push(StreamEvent::ToolCall {
                        name: name.to_owned(),
                    });
                }
            }
            "contentBlockDelta" => {
                let v = json_of(event)?;
                let piece = |pointer: &str| {
                    v.pointer(pointer)
                        .and_then(Value::as_str)
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned)
                };
                if let Some(t) = piece("/delta/text") {
                    out.push(StreamEvent::Text(t));
                }
                if let Some(t) = piece("/delta/reasoningContent/text") {
                    out.push(StreamEvent::Reasoning(t));
                }
                if let Some(t) = piece("/delta/toolUse/input") {
                    out.push(StreamEvent::ToolArguments(t));
                }
            }
            "contentBlockStop" => {
                json_of(event)?;
                out.push(StreamEvent::ToolCallEnd);
            }
            "messageStop" => {
                let v = json_of(event)?;
                let reason = v.get("stopReason").and_then(Value::as_str).unwrap_or("");
                out.push(StreamEvent::Stop(reason.to_owned()));
                // The rest (`metadata`: usage) changes nothing.
                out.push(StreamEvent::Done);
            }
            "messageStart" | "metadata" => {
                json_of(event)?;
            }
            // An event type this version does not know: AWS adds members; it is not a reason to fail.
            _ => {}
        }
        Ok(())
    }
}

/// The exception an error response names: the `x-amzn-errortype` header (`ThrottlingException:http://...`), else
/// the body's `__type` (`com.amazon.coral.service#UnrecognizedClientException`).
pub fn error_type(headers: &HeaderMap, error: Option<&ProviderError>) -> Option<String> {
    let from_header = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(':').next().unwrap_or(v));
    let raw = from_header.or_else(|| error.and_then(|e| e.kind.as_deref()))?;
    let name = raw.rsplit('#').next().unwrap_or(raw).trim();
    (!name.is_empty()).then(|| name.to_owned())
}

/// The `bedrock-converse-stream` wire.
#[derive(Debug)]
pub struct BedrockConverseStream;

impl Wire for BedrockConverseStream {
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError> {
        let Some(token) = target.key_value() else {
            return Err(RequestError::unsupported(
                "bedrock-converse-stream with SigV4 credentials (AWS_ACCESS_KEY_ID, AWS_PROFILE, a role): the probe signs no requests; it sends the bearer token AWS_BEARER_TOKEN_BEDROCK, which is not set",
            ));
        };
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(
            AUTHORIZATION,
            super::secret_header(&format!("Bearer {token}"))?,
        );
        Ok(HttpRequest {
            url: super::endpoint(&target.base_url, &path(&target.id)),
            headers,
            body: body_for(target).to_string().into_bytes(),
        })
    }

    fn framing(&self) -> Framing {
        Framing::AwsEventStream
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(Reader)
    }

    fn stop_kind(&self, reason: &str) -> StopKind {
        match reason {
            "max_tokens" | "model_context_window_exceeded" => StopKind::Length,
            "end_turn" | "tool_use" | "stop_sequence" => StopKind::Normal,
            _ => StopKind::Other,
        }
    }

    fn refine_error(
        &self,
        _status: u16,
        headers: &HeaderMap,
        error: Option<&ProviderError>,
    ) -> Option<(Outcome, Code)> {
        let message = error.map(|e| e.message.as_str()).unwrap_or("");
        if message.trim_start().starts_with("jr2 custodian:") {
            return None;
        }
        let kind = error_type(headers, error)?;
        Some(match kind.as_str() {
            "ThrottlingException" => (Outcome::Busy, Code::Busy),
            "ServiceUnavailableException" | "ModelNotReadyException" => {
                (Outcome::Unavailable, Code::Unavailable)
            }
            "UnrecognizedClientException"
            | "InvalidSignatureException"
            | "AccessDeniedException"
            | "ExpiredTokenException"
            | "InvalidClientTokenId"
            | "IncompleteSignature"
            | "MissingAuthenticationTokenException" => (Outcome::KeyRefused, Code::KeyRefused),
            "ResourceNotFoundException" => (Outcome::Http, Code::ModelNotFound),
            "ValidationException"
                if message.contains("model identifier is invalid")
                    || message.contains("on-demand throughput isn") =>
            {
                (Outcome::Http, Code::ModelNotFound)
            }
            "ServiceQuotaExceededException" => (Outcome::Http, Code::QuotaExhausted),
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::api_kind::ApiKind;
    use crate::target::Facts;

    const HAIKU: &str = "anthropic.claude-haiku-4-5-20251001-v1:0";

    fn target(id: &str, key: Option<&str>) -> Target {
        Target::test(ApiKind::BedrockConverseStream)
            .model(format!("amazon-bedrock/{id}"))
            .base_url("https://bedrock-runtime.us-east-1.amazonaws.com")
            .catalog("amazon-bedrock", "AWS_BEARER_TOKEN_BEDROCK", key.is_some())
            .key("AWS_BEARER_TOKEN_BEDROCK", key)
            .max_tokens(prompt::token_cap(64_000, 200_000))
            .facts(Facts {
                provider: Some("amazon-bedrock".into()),
                reasoning: true,
                compat: Some(json!({"supportsStrictMode": true})),
                ..Facts::default()
            })
    }

    fn read(event: &str, data: &str) -> Result<Vec<StreamEvent>, ProtocolError> {
        let mut out = Vec::new();
        Reader.on_event(
            &sse::Event {
                event: event.into(),
                data: data.into(),
            },
            &mut out,
        )?;
        Ok(out)
    }

    #[test]
    fn request_is_pis() {
        let req = BedrockConverseStream
            .request(&target(HAIKU, Some("ABSK-token")))
            .unwrap();
        assert_eq!(
            req.url.as_str(),
            "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream"
        );
        assert_eq!(req.headers["authorization"], "Bearer ABSK-token");
        assert!(req.headers["authorization"].is_sensitive());
        assert_eq!(req.headers["content-type"], "application/json");
        let b: Value = serde_json::from_slice(&req.body).unwrap();
        assert_eq!(
            b,
            json!({
                "messages": [{"role": "user", "content": [
                    {"text": prompt::USER}, {"cachePoint": {"type": "default"}}
                ]}],
                "system": [{"text": prompt::SYSTEM}, {"cachePoint": {"type": "default"}}],
                "inferenceConfig": {"maxTokens": 64000},
                "toolConfig": {"tools": [{"toolSpec": {
                    "name": "probe",
                    "inputSchema": {"json": prompt::tool_parameters()},
                    "description": prompt::TOOL_DESCRIPTION
                }}]}
            })
        );
    }

    #[test]
    fn ids_encode_as_the_sdk_does() {
        assert_eq!(
            encode_model_id("amazon.nova-lite-v1:0"),
            "amazon.nova-lite-v1%3A0"
        );
        assert_eq!(
            encode_model_id("arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.x"
        );
        assert_eq!(encode_model_id("a b~é"), "a%20b~%C3%A9");
        // The URL keeps the encoding.
        let t = target(
            "arn:aws:bedrock:us-east-1:1:application-inference-profile/abc",
            Some("t"),
        );
        let req = BedrockConverseStream.request(&t).unwrap();
        assert!(
            req.url
                .path()
                .ends_with("/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Aapplication-inference-profile%2Fabc/converse-stream"),
            "{}",
            req.url
        );
    }

    #[test]
    fn cache_points_only_for_the_models_pi_caches() {
        assert!(caches_prompt(HAIKU));
        assert!(caches_prompt("us.anthropic.claude-sonnet-4-20250514-v1:0"));
        assert!(caches_prompt("anthropic.claude-3-7-sonnet-20250219-v1:0"));
        assert!(caches_prompt("anthropic.claude-3-5-haiku-20241022-v1:0"));
        assert!(caches_prompt(
            "global.anthropic.claude-opus-4-5-20251101-v1:0"
        ));
        assert!(!caches_prompt("anthropic.claude-3-haiku-20240307-v1:0"));
        assert!(!caches_prompt("amazon.nova-lite-v1:0"));
        assert!(!caches_prompt("meta.llama4-maverick-17b-instruct-v1:0"));
        let b = body_for(&target("amazon.nova-lite-v1:0", Some("t")));
        assert_eq!(b["system"], json!([{"text": prompt::SYSTEM}]));
        assert_eq!(b["messages"][0]["content"], json!([{"text": prompt::USER}]));
    }

    #[test]
    fn tool_choice_when_the_plan_sets_one() {
        let mut t = target(HAIKU, Some("t"));
        t.tool_choice = ToolChoice::Named;
        assert_eq!(
            body_for(&t)["toolConfig"]["toolChoice"],
            json!({"tool": {"name": "probe"}})
        );
        t.tool_choice = ToolChoice::Required;
        assert_eq!(body_for(&t)["toolConfig"]["toolChoice"], json!({"any": {}}));
        t.tool_choice = ToolChoice::None;
        assert!(body_for(&t).get("toolConfig").is_none());
    }

    #[test]
    fn sigv4_is_unsupported() {
        let e = BedrockConverseStream
            .request(&target(HAIKU, None))
            .unwrap_err();
        assert_eq!(
            (e.outcome, e.code),
            (Outcome::Unsupported, Code::Unsupported)
        );
        assert!(
            e.message.starts_with(
                "not supported by the preflight yet: bedrock-converse-stream with SigV4 credentials"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn stream_events() {
        assert!(
            read("messageStart", r#"{"p":"abc","role":"assistant"}"#)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            read(
                "contentBlockStart",
                r#"{"contentBlockIndex":1,"p":"ab","start":{"toolUse":{"name":"probe","toolUseId":"tooluse_1"}}}"#
            )
            .unwrap(),
            vec![StreamEvent::ToolCall { name: "probe".into() }]
        );
        assert_eq!(
            read(
                "contentBlockDelta",
                r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"st"}}}"#
            )
            .unwrap(),
            vec![StreamEvent::ToolArguments("{\"st".into())]
        );
        assert_eq!(
            read(
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#
            )
            .unwrap(),
            vec![StreamEvent::Text("Hi".into())]
        );
        assert_eq!(
            read(
                "contentBlockDelta",
                r#"{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hmm"}}}"#
            )
            .unwrap(),
            vec![StreamEvent::Reasoning("hmm".into())]
        );
        assert_eq!(
            read("messageStop", r#"{"p":"x","stopReason":"max_tokens"}"#).unwrap(),
            vec![StreamEvent::Stop("max_tokens".into()), StreamEvent::Done]
        );
        assert!(
            read("metadata", r#"{"usage":{"inputTokens":1}}"#)
                .unwrap()
                .is_empty()
        );
        assert!(read("somethingNew", "not even json").unwrap().is_empty());
        assert!(read("contentBlockStart", "{oops").is_err());
        assert!(read("messageStop", "[]").is_err());
    }

    #[test]
    fn exceptions_in_the_stream() {
        for (name, overload) in [
            ("throttlingException", true),
            ("serviceUnavailableException", true),
            ("modelNotReadyException", true),
            ("modelStreamErrorException", false),
            ("validationException", false),
            ("internalServerException", false),
        ] {
            let ev = read(
                &format!("exception:{name}"),
                r#"{"message":"Too many tokens, please wait before trying again."}"#,
            )
            .unwrap();
            let [StreamEvent::Error(e)] = ev.as_slice() else {
                panic!("{ev:?}")
            };
            assert_eq!(e.kind.as_deref(), Some(name));
            assert_eq!(
                e.message,
                format!("{name}: Too many tokens, please wait before trying again.")
            );
            assert_eq!(e.is_overload(), overload, "{name}");
        }
        let ev = read("error:InternalFailure", r#"{"message":""}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Error(ProviderError {
                message: "InternalFailure".into(),
                kind: Some("InternalFailure".into()),
                code: None
            })]
        );
    }

    #[test]
    fn stop_reasons() {
        let w = BedrockConverseStream;
        assert_eq!(w.stop_kind("max_tokens"), StopKind::Length);
        assert_eq!(
            w.stop_kind("model_context_window_exceeded"),
            StopKind::Length
        );
        for r in ["end_turn", "tool_use", "stop_sequence"] {
            assert_eq!(w.stop_kind(r), StopKind::Normal);
        }
        for r in [
            "guardrail_intervened",
            "content_filtered",
            "malformed_tool_use",
            "",
        ] {
            assert_eq!(w.stop_kind(r), StopKind::Other);
        }
    }

    #[test]
    fn error_types_refine() {
        let refine = |errortype: Option<&str>, body: &str| {
            let mut h = HeaderMap::new();
            if let Some(t) = errortype {
                h.insert("x-amzn-errortype", HeaderValue::from_str(t).unwrap());
            }
            let e = super::super::error_body::parse(body);
            BedrockConverseStream.refine_error(400, &h, e.as_ref())
        };
        let m = r#"{"message":"x"}"#;
        let coral = |t: &str| format!("{t}:http://internal.amazon.com/coral/com.amazon.bedrock/");
        assert_eq!(
            refine(Some(&coral("ThrottlingException")), m),
            Some((Outcome::Busy, Code::Busy))
        );
        assert_eq!(
            refine(Some(&coral("ServiceUnavailableException")), m),
            Some((Outcome::Unavailable, Code::Unavailable))
        );
        assert_eq!(
            refine(Some("ModelNotReadyException"), m),
            Some((Outcome::Unavailable, Code::Unavailable))
        );
        for t in [
            "UnrecognizedClientException",
            "InvalidSignatureException",
            "AccessDeniedException",
            "ExpiredTokenException",
        ] {
            assert_eq!(
                refine(Some(&coral(t)), m),
                Some((Outcome::KeyRefused, Code::KeyRefused)),
                "{t}"
            );
        }
        assert_eq!(
            refine(
                Some(&coral("ResourceNotFoundException")),
                r#"{"message":"Model not found."}"#
            ),
            Some((Outcome::Http, Code::ModelNotFound))
        );
        assert_eq!(
            refine(
                Some(&coral("ValidationException")),
                r#"{"message":"The provided model identifier is invalid."}"#
            ),
            Some((Outcome::Http, Code::ModelNotFound))
        );
        assert_eq!(
            refine(
                Some(&coral("ValidationException")),
                r#"{"message":"Malformed input request: #/messages: expected type: JSONArray"}"#
            ),
            None
        );
        // No header: the body's `__type`.
        assert_eq!(
            refine(
                None,
                r#"{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}"#
            ),
            Some((Outcome::KeyRefused, Code::KeyRefused))
        );
        // Neither: the generic reading; and the Custodian's own bodies are never Bedrock's.
        assert_eq!(refine(None, m), None);
        assert_eq!(
            refine(
                Some("AccessDeniedException"),
                "jr2 custodian: this request needs the stand-in"
            ),
            None
        );
    }
}
