//! `openai-completions`: Chat Completions as pi-ai 0.82.1 sends it, and its stream.
//!
//! The request is the one `research/pi-requests.md` (section 2) captured for a custom provider (`harness.provider`):
//! `POST {base}/chat/completions`, the system prompt as a `developer` message (pi builds the custom model with
//! `reasoning: true`), the user content as a list of parts, `stream: true` with `include_usage`, `store: false`,
//! `max_completion_tokens`, the tool with `strict: false`, and no `tool_choice`.
//!
//! Deviations from pi, on purpose:
//! - No `x-stainless-*` / `user-agent: OpenAI/JS` headers: they describe pi's SDK and Node.js, no server reads them,
//!   and claiming to be that SDK would be a lie in logs. The probe says `user-agent: jr2-probe/<version>`.
//! - `accept-encoding` is not sent: the probe reads the stream uncompressed (Node sends `gzip, deflate`; an SSE stream
//!   is rarely compressed, and a server that compresses it is read either way by pi).

use serde::Deserialize;
use serde_json::{Value, json};

use super::{ProtocolError, ProviderError, StreamEvent, StreamReader, ToolChoice};
use crate::prompt;
use crate::sse;

/// The path appended to the base URL.
pub const PATH: &str = "/chat/completions";

/// The role of the system prompt: `developer` for reasoning models (every custom-provider model is one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemRole {
    /// `developer`.
    Developer,
    /// `system`.
    System,
}

/// The request body for `model` with a token cap of `max_tokens`.
pub fn body(model: &str, max_tokens: u64, role: SystemRole, tool_choice: ToolChoice) -> Value {
    let role = match role {
        SystemRole::Developer => "developer",
        SystemRole::System => "system",
    };
    let mut body = json!({
        "model": model,
        "messages": [
            {"role": role, "content": prompt::SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": prompt::USER}]}
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
        "store": false,
        "max_completion_tokens": max_tokens,
        "tools": [{
            "type": "function",
            "function": {
                "name": prompt::TOOL_NAME,
                "description": prompt::TOOL_DESCRIPTION,
                "parameters": prompt::tool_parameters(),
                "strict": false
            }
        }]
    });
    let choice = match tool_choice {
        ToolChoice::Unset => return body,
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named => json!({"type": "function", "function": {"name": prompt::TOOL_NAME}}),
    };
    body["tool_choice"] = choice;
    body
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    /// A server that ignores `stream` and sends whole messages in the stream still says what it answered.
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
    #[serde(default)]
    function_call: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
}

/// Reads a Chat Completions stream.
#[derive(Debug, Default)]
pub struct Reader;

impl StreamReader for Reader {
    fn on_event(
        &mut self,
        event: &sse::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            out.push(StreamEvent::Done);
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ProtocolError(format!(
                "a stream event is not a chat completion chunk ({e})"
            ))
        })?;
        if let Some(error) = chunk.error {
            out.push(StreamEvent::Error(super::error_body::from_value(&error)));
            return Ok(());
        }
        for choice in chunk.choices {
            for delta in [choice.delta, choice.message].into_iter().flatten() {
                read_delta(delta, out);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                out.push(StreamEvent::Stop(reason));
            }
        }
        Ok(())
    }
}

fn read_delta(delta: Delta, out: &mut Vec<StreamEvent>) {
    let names = delta
        .tool_calls
        .into_iter()
        .flatten()
        .filter_map(|call| call.function.and_then(|f| f.name))
        .chain(delta.function_call.and_then(|f| f.name));
    for name in names.filter(|n| !n.is_empty()) {
        out.push(StreamEvent::ToolCall { name });
    }
    let text = match delta.content {
        Some(Value::String(s)) => s,
        // Some servers send content as a list of parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<String>(),
        _ => String::new(),
    };
    let reasoning = delta
        .reasoning_content
        .or(delta.reasoning)
        .unwrap_or_default();
    for t in [text, reasoning] {
        if !t.is_empty() {
            out.push(StreamEvent::Text(t));
        }
    }
}

/// Whether `reason` is Chat Completions' way to say the answer ran out of tokens.
pub fn is_length(reason: &str) -> bool {
    reason == "length"
}

/// Reads an error body (any of the shapes OpenAI-compatible servers send) into a [`ProviderError`].
pub fn error_from_body(body: &str) -> Option<ProviderError> {
    super::error_body::parse(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(data: &str) -> Result<Vec<StreamEvent>, ProtocolError> {
        let mut out = Vec::new();
        Reader.on_event(
            &sse::Event {
                event: String::new(),
                data: data.into(),
            },
            &mut out,
        )?;
        Ok(out)
    }

    #[test]
    fn body_is_pis_custom_provider_shape() {
        let b = body(
            "Qwen/Qwen3-32B",
            1,
            SystemRole::Developer,
            ToolChoice::Unset,
        );
        assert_eq!(b["messages"][0]["role"], "developer");
        assert_eq!(b["messages"][1]["content"][0]["type"], "text");
        assert_eq!(b["stream"], true);
        assert_eq!(b["stream_options"]["include_usage"], true);
        assert_eq!(b["store"], false);
        assert_eq!(b["max_completion_tokens"], 1);
        assert_eq!(b["tools"][0]["function"]["strict"], false);
        assert!(
            b.get("tool_choice").is_none(),
            "a Turn sends no tool_choice"
        );
    }

    #[test]
    fn tool_call_delta_names_the_tool() {
        let ev = read(r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"probe","arguments":""}}]}}]}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::ToolCall {
                name: "probe".into()
            }]
        );
    }

    #[test]
    fn argument_fragments_without_name_are_not_a_call() {
        let ev = read(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"st"}}]}}]}"#).unwrap();
        assert!(ev.is_empty());
    }

    #[test]
    fn legacy_function_call_counts() {
        let ev = read(r#"{"choices":[{"delta":{"function_call":{"name":"probe"}}}]}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::ToolCall {
                name: "probe".into()
            }]
        );
    }

    #[test]
    fn text_reasoning_and_stop() {
        let ev = read(r#"{"choices":[{"delta":{"content":"Hi","reasoning_content":"hmm"},"finish_reason":"length"}]}"#).unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::Text("Hi".into()),
                StreamEvent::Text("hmm".into()),
                StreamEvent::Stop("length".into())
            ]
        );
    }

    #[test]
    fn usage_chunk_and_done() {
        assert!(
            read(r#"{"choices":[],"usage":{"prompt_tokens":1}}"#)
                .unwrap()
                .is_empty()
        );
        assert_eq!(read("[DONE]").unwrap(), vec![StreamEvent::Done]);
    }

    #[test]
    fn error_event_after_200() {
        let ev = read(
            r#"{"error":{"message":"upstream overloaded","type":"overloaded_error","code":null}}"#,
        )
        .unwrap();
        let StreamEvent::Error(e) = &ev[0] else {
            panic!("{ev:?}")
        };
        assert_eq!(e.message, "upstream overloaded");
        assert!(e.is_overload());
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(read("<html>").is_err());
        assert!(read("{\"choices\": 5}").is_err());
    }
}
