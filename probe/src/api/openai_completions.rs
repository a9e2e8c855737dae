//! `openai-completions`: Chat Completions as pi-ai 0.82.1 sends it, and its stream.
//!
//! The request is the one `research/pi-requests.md` (section 2) captured for a custom provider (`harness.provider`):
//! `POST {base}/chat/completions`, the system prompt as a `developer` message (pi builds the custom model with
//! `reasoning: true`), the user content as a list of parts, `stream: true` with `include_usage`, `store: false`,
//! `max_completion_tokens`, the tool with `strict: false`, and no `tool_choice`.
//!
//! For catalog providers the shape follows pi's `detectCompat` (by provider id and base URL), overridden by the
//! catalog's `compat`: `system` instead of `developer` and no `store` for non-standard providers, `max_tokens` for a few,
//! and thinking turned off the way each provider's format says (`thinking: {type: "disabled"}` for DeepSeek and Z.ai,
//! `reasoning: {effort: "none"}` for OpenRouter, the catalog's "off" value as `reasoning_effort` for OpenAI-style).
//!
//! Deviations from pi, on purpose:
//! - No `x-stainless-*` / `user-agent: OpenAI/JS` headers: they describe pi's SDK and Node.js, no server reads them,
//!   and claiming to be that SDK would be a lie in logs. The probe says `user-agent: jr2-probe/<version>`.
//! - `accept-encoding` is not sent: the probe reads the stream uncompressed (Node sends `gzip, deflate`; an SSE stream
//!   is rarely compressed, and a server that compresses it is read either way by pi).

use serde::Deserialize;
use serde_json::{Value, json};

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use super::{
    HttpRequest, ProtocolError, ProviderError, RequestError, StopKind, StreamEvent, StreamReader,
    ToolChoice, Wire,
};
use crate::framing::sse;
use crate::prompt;
use crate::target::Target;

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

/// pi's compatibility settings for a model, as far as the probe's one request uses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compat {
    /// Send `store: false`.
    pub supports_store: bool,
    /// A reasoning model gets a `developer` message.
    pub supports_developer_role: bool,
    /// `reasoning_effort` may be sent.
    pub supports_reasoning_effort: bool,
    /// `stream_options.include_usage` may be sent.
    pub supports_usage_in_streaming: bool,
    /// `max_completion_tokens` or `max_tokens`.
    pub max_tokens_field: String,
    /// How thinking is switched (`openai`, `deepseek`, `zai`, `openrouter`, `qwen`, ...).
    pub thinking_format: String,
    /// Tools carry `strict: false`.
    pub supports_strict_mode: bool,
    /// `anthropic`: Anthropic `cache_control` marks on the system prompt, the last user text and the last tool
    /// (OpenRouter's `anthropic/` models).
    pub cache_control_format: Option<String>,
    /// `tool_stream: true` beside the tools (Z.ai's coding models, by the catalog's `compat`).
    pub zai_tool_stream: bool,
    /// Send the conversation id in affinity headers (Cloudflare, by the catalog's `compat`).
    pub send_session_affinity_headers: bool,
    /// `openai` (`session_id`, `x-client-request-id`, `x-session-affinity`), `openrouter` (`x-session-id`), or
    /// another value (`x-client-request-id` and `x-session-affinity` only).
    pub session_affinity_format: String,
}

/// pi's `detectCompat` (dist/api/openai-completions.js), then the catalog's `compat` on top (`getCompat`).
pub fn compat(target: &Target) -> Compat {
    let provider = target.facts.provider.as_deref().unwrap_or("");
    let base = target.base_url.as_str();
    let has = |s: &str| base.contains(s);
    let is_zai = provider == "zai"
        || provider == "zai-coding-cn"
        || has("api.z.ai")
        || has("open.bigmodel.cn");
    let is_together = provider == "together" || has("api.together.ai") || has("api.together.xyz");
    let is_moonshot =
        provider == "moonshotai" || provider == "moonshotai-cn" || has("api.moonshot.");
    let is_openrouter = provider == "openrouter" || has("openrouter.ai");
    let is_cf_workers = provider == "cloudflare-workers-ai" || has("api.cloudflare.com");
    let is_cf_gateway = provider == "cloudflare-ai-gateway" || has("gateway.ai.cloudflare.com");
    let is_nvidia = provider == "nvidia" || has("integrate.api.nvidia.com");
    let is_ant_ling = provider == "ant-ling" || has("api.ant-ling.com");
    let is_grok = provider == "xai" || has("api.x.ai");
    let is_deepseek = provider == "deepseek" || has("deepseek.com");
    let non_standard = is_nvidia
        || provider == "cerebras"
        || has("cerebras.ai")
        || is_grok
        || is_together
        || has("chutes.ai")
        || has("deepseek.com")
        || is_zai
        || is_moonshot
        || provider == "opencode"
        || has("opencode.ai")
        || is_cf_workers
        || is_cf_gateway
        || is_ant_ling;
    let use_max_tokens =
        has("chutes.ai") || is_moonshot || is_cf_gateway || is_together || is_nvidia || is_ant_ling;
    let id = target.id.as_str();
    let openrouter_developer =
        is_openrouter && (id.starts_with("anthropic/") || id.starts_with("openai/"));
    let thinking_format = if is_deepseek {
        "deepseek"
    } else if is_zai {
        "zai"
    } else if is_together {
        "together"
    } else if is_ant_ling {
        "ant-ling"
    } else if is_openrouter {
        "openrouter"
    } else {
        "openai"
    };
    let mut c = Compat {
        supports_store: !non_standard,
        supports_developer_role: openrouter_developer || (!non_standard && !is_openrouter),
        supports_reasoning_effort: !is_grok
            && !is_zai
            && !is_moonshot
            && !is_together
            && !is_cf_gateway
            && !is_nvidia
            && !is_ant_ling,
        supports_usage_in_streaming: true,
        max_tokens_field: if use_max_tokens {
            "max_tokens"
        } else {
            "max_completion_tokens"
        }
        .to_owned(),
        thinking_format: thinking_format.to_owned(),
        supports_strict_mode: !is_moonshot && !is_together && !is_cf_gateway && !is_nvidia,
        cache_control_format: (provider == "openrouter" && id.starts_with("anthropic/"))
            .then(|| "anthropic".to_owned()),
        zai_tool_stream: false,
        send_session_affinity_headers: false,
        session_affinity_format: if is_openrouter {
            "openrouter"
        } else {
            "openai"
        }
        .to_owned(),
    };
    let f = &target.facts;
    let flag = |name: &str, into: &mut bool| {
        if let Some(v) = f.compat(name).and_then(Value::as_bool) {
            *into = v;
        }
    };
    flag("supportsStore", &mut c.supports_store);
    flag("supportsDeveloperRole", &mut c.supports_developer_role);
    flag("supportsReasoningEffort", &mut c.supports_reasoning_effort);
    flag(
        "supportsUsageInStreaming",
        &mut c.supports_usage_in_streaming,
    );
    flag("supportsStrictMode", &mut c.supports_strict_mode);
    flag("zaiToolStream", &mut c.zai_tool_stream);
    flag(
        "sendSessionAffinityHeaders",
        &mut c.send_session_affinity_headers,
    );
    if let Some(v) = f.compat("sessionAffinityFormat").and_then(Value::as_str) {
        v.clone_into(&mut c.session_affinity_format);
    }
    if let Some(v) = f.compat("maxTokensField").and_then(Value::as_str) {
        v.clone_into(&mut c.max_tokens_field);
    }
    if let Some(v) = f.compat("thinkingFormat").and_then(Value::as_str) {
        v.clone_into(&mut c.thinking_format);
    }
    if let Some(v) = f.compat("cacheControlFormat").and_then(Value::as_str) {
        c.cache_control_format = Some(v.to_owned());
    }
    c
}

/// The body pi sends for `target`: its compat, thinking off.
pub fn body_for(target: &Target) -> Value {
    let c = compat(target);
    let reasoning = target.facts.reasoning;
    let role = if reasoning && c.supports_developer_role {
        SystemRole::Developer
    } else {
        SystemRole::System
    };
    let mut b = body(&target.id, target.max_tokens, role, target.tool_choice);
    if !c.supports_usage_in_streaming {
        b.as_object_mut().map(|o| o.remove("stream_options"));
    }
    if !c.supports_store {
        b.as_object_mut().map(|o| o.remove("store"));
    }
    if c.max_tokens_field == "max_tokens" {
        let cap = b
            .as_object_mut()
            .and_then(|o| o.remove("max_completion_tokens"));
        b["max_tokens"] = cap.unwrap_or(Value::Null);
    }
    if !c.supports_strict_mode {
        b["tools"][0]["function"]
            .as_object_mut()
            .map(|o| o.remove("strict"));
    }
    if target.base_url.as_str().contains("api.openai.com") {
        // pi keys OpenAI's prompt cache by the conversation when the base URL names api.openai.com.
        b["prompt_cache_key"] = json!(super::openai_responses::prompt_cache_key(
            &target.session_id
        ));
    }
    if c.zai_tool_stream {
        b["tool_stream"] = json!(true);
    }
    if c.cache_control_format.as_deref() == Some("anthropic") {
        // pi's default cache retention ("short"): an ephemeral mark on the system prompt (its text becomes a part),
        // on the last text part of the last user message, and on the last tool.
        let mark = json!({"type": "ephemeral"});
        b["messages"][0]["content"] =
            json!([{"type": "text", "text": prompt::SYSTEM, "cache_control": mark}]);
        b["messages"][1]["content"][0]["cache_control"] = mark.clone();
        b["tools"][0]["cache_control"] = mark;
    }
    if !reasoning {
        return b;
    }
    // Thinking off: what pi sends when the Turn gives no reasoning effort.
    let off_null = target.facts.thinking_off_is_null();
    let off_value = target.facts.thinking_off_value();
    match c.thinking_format.as_str() {
        "zai" => b["thinking"] = json!({"type": "disabled"}),
        "qwen" => b["enable_thinking"] = json!(false),
        "qwen-chat-template" => {
            b["chat_template_kwargs"] = json!({"enable_thinking": false, "preserve_thinking": true})
        }
        "deepseek" if !off_null => b["thinking"] = json!({"type": "disabled"}),
        "openrouter" if !off_null => {
            b["reasoning"] = json!({"effort": off_value.unwrap_or("none")})
        }
        "together" => b["reasoning"] = json!({"enabled": false}),
        "string-thinking" if !off_null => b["thinking"] = json!(off_value.unwrap_or("none")),
        "openai" if c.supports_reasoning_effort => {
            if let Some(v) = off_value {
                b["reasoning_effort"] = json!(v);
            }
        }
        _ => {}
    }
    b
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
    /// The usage chunk (`stream_options.include_usage`): only the prompt's count is read.
    #[serde(default)]
    usage: Option<Value>,
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
    index: Option<u64>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    /// A string of JSON as OpenAI streams it; some servers send the object itself.
    #[serde(default)]
    arguments: Option<Value>,
}

/// Reads a Chat Completions stream.
#[derive(Debug, Default)]
pub struct Reader {
    /// The index of the first tool call: only its arguments make the verdict.
    first: Option<u64>,
}

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
                read_delta(delta, &mut self.first, out);
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                out.push(StreamEvent::Stop(reason));
            }
        }
        if let Some(n) = chunk
            .usage
            .as_ref()
            .and_then(|u| u.get("prompt_tokens"))
            .and_then(Value::as_u64)
        {
            out.push(StreamEvent::PromptTokens(n));
        }
        Ok(())
    }
}

fn read_delta(delta: Delta, first: &mut Option<u64>, out: &mut Vec<StreamEvent>) {
    let calls = delta
        .tool_calls
        .into_iter()
        .flatten()
        .map(|call| (call.index.unwrap_or(0), call.function))
        .chain(delta.function_call.map(|f| (0, Some(f))));
    for (index, function) in calls {
        let Some(function) = function else { continue };
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            first.get_or_insert(index);
            out.push(StreamEvent::ToolCall { name });
        }
        if *first != Some(index) {
            continue;
        }
        let piece = match function.arguments {
            Some(Value::String(s)) => s,
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        if !piece.is_empty() {
            out.push(StreamEvent::ToolArguments(piece));
        }
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
    if !text.is_empty() {
        out.push(StreamEvent::Text(text));
    }
    if !reasoning.is_empty() {
        out.push(StreamEvent::Reasoning(reasoning));
    }
}

/// The `openai-completions` wire.
#[derive(Debug)]
pub struct OpenAiCompletions;

impl Wire for OpenAiCompletions {
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        super::catalog_headers(&mut headers, target);
        let c = compat(target);
        if c.send_session_affinity_headers {
            let id = target.session_id.as_str();
            if c.session_affinity_format == "openrouter" {
                super::header(&mut headers, "x-session-id", id);
            } else {
                if c.session_affinity_format == "openai" {
                    super::header(&mut headers, "session_id", id);
                }
                super::header(&mut headers, "x-client-request-id", id);
                super::header(&mut headers, "x-session-affinity", id);
            }
        }
        if target.facts.provider.as_deref() == Some("github-copilot") {
            // pi's Copilot headers for a request whose last message is the user's.
            super::header(&mut headers, "x-initiator", "user");
            super::header(&mut headers, "openai-intent", "conversation-edits");
        }
        // pi's custom provider answers the literal `unused` when no key is configured.
        let key = target.key_value().unwrap_or("unused");
        // Cloudflare AI Gateway: pi's auth puts the key in `cf-aig-authorization` and removes `authorization`.
        let name = if target.facts.provider.as_deref() == Some("cloudflare-ai-gateway") {
            HeaderName::from_static("cf-aig-authorization")
        } else {
            AUTHORIZATION
        };
        headers.insert(name, super::secret_header(&format!("Bearer {key}"))?);
        Ok(HttpRequest {
            url: super::endpoint(&target.base_url, PATH),
            headers,
            body: body_for(target).to_string().into_bytes(),
        })
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(Reader::default())
    }

    fn stop_kind(&self, reason: &str) -> StopKind {
        match reason {
            "length" => StopKind::Length,
            "stop" | "tool_calls" | "function_call" | "eos" | "end_turn" => StopKind::Normal,
            _ => StopKind::Other,
        }
    }
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
        Reader::default().on_event(
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
                StreamEvent::Reasoning("hmm".into()),
                StreamEvent::Stop("length".into())
            ]
        );
    }

    #[test]
    fn usage_chunk_and_done() {
        assert_eq!(
            read(r#"{"choices":[],"usage":{"prompt_tokens":128,"completion_tokens":16}}"#).unwrap(),
            vec![StreamEvent::PromptTokens(128)]
        );
        assert!(read(r#"{"choices":[],"usage":null}"#).unwrap().is_empty());
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

    fn catalog_body(model: &str) -> Value {
        body_for(&catalog_target(model))
    }

    fn catalog_target(model: &str) -> Target {
        let spec = crate::spec::ModelSpec {
            model: model.to_owned(),
            source: crate::spec::Source::Catalog,
            base_url: None,
            api: None,
            key_env: None,
            key_held: false,
            via_custodian: false,
            max_tokens: None,
            context_window: None,
            tool_choice: None,
        };
        let env = |name: &str| (name == "CLOUDFLARE_ACCOUNT_ID").then(|| "acct".to_owned());
        crate::spec::resolve(&spec, "model", &env, "0190d4a1-2b3c-7def-8123-456789abcdef").unwrap()
    }

    #[test]
    fn session_ids_where_pi_sends_them() {
        // A base URL that names api.openai.com: prompt_cache_key.
        let mut t = catalog_target("groq/openai/gpt-oss-120b");
        assert!(body_for(&t).get("prompt_cache_key").is_none());
        t.base_url = reqwest::Url::parse("https://api.openai.com/v1").unwrap();
        assert_eq!(body_for(&t)["prompt_cache_key"], t.session_id.as_str());
        // Cloudflare's catalog compat: the affinity headers.
        let t = catalog_target("cloudflare-workers-ai/@cf/google/gemma-4-26b-a4b-it");
        let r = OpenAiCompletions.request(&t).unwrap();
        for name in ["session_id", "x-client-request-id", "x-session-affinity"] {
            assert_eq!(r.headers[name], t.session_id.as_str(), "{name}");
        }
        let r = OpenAiCompletions
            .request(&catalog_target("groq/openai/gpt-oss-120b"))
            .unwrap();
        assert!(r.headers.get("x-session-affinity").is_none());
    }

    #[test]
    fn openrouter_anthropic_models_get_cache_control_marks() {
        // What tests/fidelity saw pi send: the system prompt as a marked text part, a mark on the user's text and
        // on the last tool.
        let b = catalog_body("openrouter/anthropic/claude-haiku-4.5");
        let mark = json!({"type": "ephemeral"});
        assert_eq!(
            b["messages"][0]["content"],
            json!([{"type": "text", "text": prompt::SYSTEM, "cache_control": mark}])
        );
        assert_eq!(b["messages"][1]["content"][0]["cache_control"], mark);
        assert_eq!(b["tools"][0]["cache_control"], mark);
        let plain = catalog_body("openrouter/deepseek/deepseek-v3.2");
        assert_eq!(plain["messages"][0]["content"], prompt::SYSTEM);
        assert!(plain["tools"][0].get("cache_control").is_none());
    }

    #[test]
    fn zai_tool_stream_follows_the_catalog() {
        assert_eq!(catalog_body("zai/glm-5.1")["tool_stream"], true);
        assert!(
            catalog_body("groq/openai/gpt-oss-120b")
                .get("tool_stream")
                .is_none()
        );
    }
}
