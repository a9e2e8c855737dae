//! `anthropic-messages`: the Messages API as pi-ai 0.82.1 sends it, and its stream.
//!
//! The request is the one `research/pi-requests.md` (section 3) captured for `anthropic/claude-haiku-4-5`, checked
//! against pi's `dist/api/anthropic-messages.js` and `dist/providers/anthropic.js`: `POST {base}/v1/messages` (the
//! catalog's base URL has no `/v1`), `anthropic-version: 2023-06-01`, `accept: application/json`,
//! `anthropic-dangerous-direct-browser-access: true`, and a body with `stream: true`, `max_tokens`, the system prompt
//! as a list of text blocks, the user content as a list of blocks, and the tool as
//! `{name, description, eager_input_streaming, input_schema, cache_control}`. What pi changes per model and key:
//!
//! - **Auth.** `x-api-key: <key>` (`ANTHROPIC_API_KEY`, `ANTHROPIC_OAUTH_TOKEN`, and every other provider's key env).
//!   A key from `ANTHROPIC_AUTH_TOKEN` is `authorization: Bearer <key>` and no `x-api-key`. A key that contains
//!   `sk-ant-oat` is a Claude Pro/Max OAuth token: `authorization: Bearer`, the betas
//!   `claude-code-20250219,oauth-2025-04-20` first, `user-agent: claude-cli/2.1.75`, `x-app: cli`, and Claude Code's
//!   identity as the first system block. `github-copilot` sends its key as a bearer token with
//!   `x-initiator: user` and `openai-intent: conversation-edits`; `cloudflare-ai-gateway` as
//!   `cf-aig-authorization: Bearer <key>`. With no key at all pi sends nothing; the probe sends the request without
//!   a key header, so the endpoint's 401 says what a Turn would hit.
//! - **`anthropic-beta`.** `interleaved-thinking-2025-05-14` unless the catalog's `compat.forceAdaptiveThinking`
//!   is set (adaptive thinking has it built in), preceded by `fine-grained-tool-streaming-2025-05-14` when
//!   `compat.supportsEagerToolInputStreaming` is false (then the tool has no `eager_input_streaming`).
//! - **Thinking.** Off: `thinking: {"type": "disabled"}` for a reasoning model, unless its `thinkingLevelMap.off`
//!   is `null` (it cannot be turned off: nothing is sent). A model that does not reason gets no `thinking`.
//! - **Caching.** `cache_control: {"type": "ephemeral"}` on the system block, the last user block and the last
//!   tool (not on the tool when `compat.supportsCacheControlOnTools` is false); with `PI_CACHE_RETENTION=long` in
//!   the environment, `ttl: "1h"` is added where `compat.supportsLongCacheRetention` allows it.
//!   `compat.sendSessionAffinityHeaders` adds `x-session-affinity: <conversation id>`.
//! - **`tool_choice`.** None for a Turn. When the plan sets one: `auto` → `{"type":"auto"}`, `required` →
//!   `{"type":"any"}`, the probe's tool → `{"type":"tool","name":"probe"}`, `none` → `{"type":"none"}`.
//! - The catalog's static headers (Copilot's, Kimi's `User-Agent`) go on last, as pi merges them.
//!
//! The stream is read as pi reads it: only the events named `message_start`, `content_block_start`,
//! `content_block_delta`, `content_block_stop`, `message_delta` and `message_stop` count (by their `event:` field;
//! `ping` and unknown events are skipped), an `event: error` ends the call with the error it carries (Anthropic's
//! `overloaded_error` after a 200, which the probe retries), a `tool_use` block that starts names the tool, and the
//! stop reason of `message_delta` counts only once `message_stop` confirms it: pi fails a stream that ends without
//! `message_stop` ("Anthropic stream ended before message_stop"), and so does the probe.
//!
//! Deviations from pi, on purpose:
//! - No `x-stainless-*` headers and no `user-agent: Anthropic/JS`: they describe pi's SDK and Node.js, no server
//!   reads them, and claiming to be that SDK would be a lie in logs. The probe says `user-agent: jr2-probe/<version>`
//!   (except with an OAuth token, where the `claude-cli` user agent is part of what pi sends to be accepted).
//!   `x-stainless-timeout: 600` is the SDK's own request timeout; the probe has its deadline.
//! - No `accept-language: *`, `sec-fetch-mode: cors` or `accept-encoding`: Node's fetch adds them, no Anthropic
//!   server depends on them, and the probe reads the stream uncompressed.
//! - pi's `onPayload` hooks and deferred tools do not apply to a Turn's one tool; the OAuth renaming of tools to
//!   Claude Code's names leaves `probe` as it is.

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    HttpRequest, ProtocolError, ProviderError, RequestError, StopKind, StreamEvent, StreamReader,
    ToolChoice, Wire,
};
use crate::contract::outcome::{Code, Outcome};
use crate::framing::sse;
use crate::prompt;
use crate::target::Target;

/// The path appended to the base URL.
pub const PATH: &str = "/v1/messages";

/// The `anthropic-version` the SDK sends.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The beta pi asks for unless the model thinks adaptively.
pub const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

/// The beta pi asks for when the model does not take `eager_input_streaming` on its tools.
pub const FINE_GRAINED_TOOL_STREAMING_BETA: &str = "fine-grained-tool-streaming-2025-05-14";

/// The betas an OAuth token adds, first.
pub const OAUTH_BETAS: [&str; 2] = ["claude-code-20250219", "oauth-2025-04-20"];

/// The system block pi puts first with an OAuth token.
pub const CLAUDE_CODE_IDENTITY: &str = "You are Claude Code, Anthropic's official CLI for Claude.";

/// The user agent pi sends with an OAuth token (its Claude Code version).
pub const CLAUDE_CODE_USER_AGENT: &str = "claude-cli/2.1.75";

/// The env var whose key pi sends as a bearer token.
pub const AUTH_TOKEN_ENV: &str = "ANTHROPIC_AUTH_TOKEN";

/// pi's `getAnthropicCompat`: the catalog's `compat`, with pi's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compat {
    /// Tools carry `eager_input_streaming: true` (else the fine-grained streaming beta is asked for).
    pub supports_eager_tool_input_streaming: bool,
    /// `ttl: "1h"` may be put on cache marks when long retention is asked for.
    pub supports_long_cache_retention: bool,
    /// Send `x-session-affinity: <conversation id>`.
    pub send_session_affinity_headers: bool,
    /// The last tool carries a cache mark.
    pub supports_cache_control_on_tools: bool,
    /// The model thinks adaptively (no interleaved-thinking beta).
    pub force_adaptive_thinking: bool,
}

/// The catalog's `compat` for `target`, with pi's defaults.
pub fn compat(target: &Target) -> Compat {
    let flag = |name: &str, default: bool| {
        target
            .facts
            .compat(name)
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    Compat {
        supports_eager_tool_input_streaming: flag("supportsEagerToolInputStreaming", true),
        supports_long_cache_retention: flag("supportsLongCacheRetention", true),
        send_session_affinity_headers: flag("sendSessionAffinityHeaders", false),
        supports_cache_control_on_tools: flag("supportsCacheControlOnTools", true),
        // pi tests `=== true`: only a JSON `true` counts.
        force_adaptive_thinking: target.facts.compat("forceAdaptiveThinking") == Some(&json!(true)),
    }
}

/// How long the provider is asked to keep the prompt cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheRetention {
    /// pi's default: `{"type": "ephemeral"}`.
    #[default]
    Short,
    /// `PI_CACHE_RETENTION=long`: `ttl: "1h"` where the model allows it.
    Long,
}

impl CacheRetention {
    /// What the environment asks for, as pi reads it (`PI_CACHE_RETENTION=long`, else short).
    pub fn from_env() -> Self {
        match std::env::var("PI_CACHE_RETENTION") {
            Ok(v) if v == "long" => CacheRetention::Long,
            _ => CacheRetention::Short,
        }
    }
}

/// How the key travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth<'a> {
    /// `x-api-key: <key>`.
    ApiKey(&'a str),
    /// `authorization: Bearer <key>` (`ANTHROPIC_AUTH_TOKEN`, GitHub Copilot).
    Bearer(&'a str),
    /// A Claude Pro/Max OAuth token (`sk-ant-oat…`): bearer, with Claude Code's identity.
    OAuth(&'a str),
    /// Cloudflare AI Gateway: `cf-aig-authorization: Bearer <key>`.
    CloudflareGateway(&'a str),
    /// No key is held: no key header.
    None,
}

/// How pi sends the key of `target` (`createClient` and the providers' auth).
pub fn auth(target: &Target) -> Auth<'_> {
    let Some(key) = target.key.as_ref() else {
        return Auth::None;
    };
    let value = key.value.expose();
    match target.facts.provider.as_deref() {
        Some("github-copilot") => Auth::Bearer(value),
        Some("cloudflare-ai-gateway") => Auth::CloudflareGateway(value),
        _ if key.env == AUTH_TOKEN_ENV => Auth::Bearer(value),
        _ if value.contains("sk-ant-oat") => Auth::OAuth(value),
        _ => Auth::ApiKey(value),
    }
}

/// The `anthropic-beta` value pi sends, if any.
pub fn betas(c: &Compat, oauth: bool) -> Option<String> {
    let mut list: Vec<&str> = Vec::new();
    if oauth {
        list.extend(OAUTH_BETAS);
    }
    // The probe always sends its one tool.
    if !c.supports_eager_tool_input_streaming {
        list.push(FINE_GRAINED_TOOL_STREAMING_BETA);
    }
    if !c.force_adaptive_thinking {
        list.push(INTERLEAVED_THINKING_BETA);
    }
    (!list.is_empty()).then(|| list.join(","))
}

/// The body pi sends for `target`: thinking off, the cache retention the environment asks for.
pub fn body_for(target: &Target) -> Value {
    let oauth = matches!(auth(target), Auth::OAuth(_));
    body(target, oauth, CacheRetention::from_env())
}

/// The body for `target`, with an OAuth token or not, and this cache retention.
pub fn body(target: &Target, oauth: bool, retention: CacheRetention) -> Value {
    let c = compat(target);
    let cache = match retention {
        CacheRetention::Long if c.supports_long_cache_retention => {
            json!({"type": "ephemeral", "ttl": "1h"})
        }
        _ => json!({"type": "ephemeral"}),
    };
    let text_block = |text: &str| json!({"type": "text", "text": text, "cache_control": cache});
    let mut system = Vec::new();
    if oauth {
        system.push(text_block(CLAUDE_CODE_IDENTITY));
    }
    system.push(text_block(prompt::SYSTEM));
    // pi rebuilds the schema from `properties` and `required` (strict sampling is off for a Turn's tools).
    let params = prompt::tool_parameters();
    let mut tool = json!({
        "name": prompt::TOOL_NAME,
        "description": prompt::TOOL_DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": params["properties"],
            "required": params["required"],
        },
    });
    if c.supports_eager_tool_input_streaming {
        tool["eager_input_streaming"] = json!(true);
    }
    if c.supports_cache_control_on_tools {
        tool["cache_control"] = cache.clone();
    }
    let mut body = json!({
        "model": target.id,
        "messages": [{"role": "user", "content": [text_block(prompt::USER)]}],
        "max_tokens": target.max_tokens,
        "stream": true,
        "system": system,
        "tools": [tool],
    });
    if target.facts.reasoning && !target.facts.thinking_off_is_null() {
        body["thinking"] = json!({"type": "disabled"});
    }
    let choice = match target.tool_choice {
        ToolChoice::Unset => return body,
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Named => json!({"type": "tool", "name": prompt::TOOL_NAME}),
        ToolChoice::None => json!({"type": "none"}),
    };
    body["tool_choice"] = choice;
    body
}

/// The headers pi sends for `target` (the SDK's own `x-stainless-*` left out).
pub fn headers(target: &Target) -> Result<HeaderMap, RequestError> {
    let mut h = HeaderMap::new();
    let auth = auth(target);
    let oauth = matches!(auth, Auth::OAuth(_));
    h.insert(
        HeaderName::from_static("anthropic-version"),
        HeaderValue::from_static(ANTHROPIC_VERSION),
    );
    match auth {
        Auth::ApiKey(key) => {
            h.insert(
                HeaderName::from_static("x-api-key"),
                super::secret_header(key)?,
            );
        }
        Auth::Bearer(key) | Auth::OAuth(key) => {
            h.insert(
                AUTHORIZATION,
                super::secret_header(&format!("Bearer {key}"))?,
            );
        }
        Auth::CloudflareGateway(key) => {
            h.insert(
                HeaderName::from_static("cf-aig-authorization"),
                super::secret_header(&format!("Bearer {key}"))?,
            );
        }
        Auth::None => {}
    }
    h.insert(ACCEPT, HeaderValue::from_static("application/json"));
    h.insert(
        HeaderName::from_static("anthropic-dangerous-direct-browser-access"),
        HeaderValue::from_static("true"),
    );
    let c = compat(target);
    if let Some(b) = betas(&c, oauth) {
        super::header(&mut h, "anthropic-beta", &b);
    }
    if oauth {
        super::header(&mut h, "user-agent", CLAUDE_CODE_USER_AGENT);
        super::header(&mut h, "x-app", "cli");
    }
    if target.facts.provider.as_deref() == Some("github-copilot") {
        super::header(&mut h, "x-initiator", "user");
        super::header(&mut h, "openai-intent", "conversation-edits");
    }
    if c.send_session_affinity_headers && !oauth {
        super::header(&mut h, "x-session-affinity", &target.session_id);
    }
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    super::catalog_headers(&mut h, target);
    Ok(h)
}

/// The events pi reads; every other event name (`ping`, anything new) is skipped.
const MESSAGE_EVENTS: [&str; 6] = [
    "message_start",
    "message_delta",
    "message_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
];

#[derive(Deserialize)]
struct Message {
    /// pi dispatches on the data's `type`; data without one is skipped.
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    content_block: Option<Block>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    index: Option<u64>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Reads a Messages stream.
#[derive(Debug, Default)]
pub struct Reader {
    /// The stop reason of `message_delta`, held until `message_stop` confirms the message is complete.
    stop: Option<String>,
    /// The index of the first `tool_use` block: its `input_json_delta`s and its `content_block_stop` make the verdict.
    tool_block: Option<u64>,
}

impl StreamReader for Reader {
    fn on_event(
        &mut self,
        event: &sse::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        if event.event == "error" {
            // pi ends the call with the event's data as the error.
            let error = super::error_body::parse(&event.data).unwrap_or_else(|| ProviderError {
                message: "an error event without a message".to_owned(),
                ..ProviderError::default()
            });
            out.push(StreamEvent::Error(error));
            return Ok(());
        }
        if !MESSAGE_EVENTS.contains(&event.event.as_str()) {
            return Ok(());
        }
        let message: Message = serde_json::from_str(&event.data).map_err(|e| {
            ProtocolError(format!(
                "the {} event is not an Anthropic stream event ({e})",
                event.event
            ))
        })?;
        match message.kind.as_str() {
            "content_block_start" => {
                let Some(block) = message.content_block else {
                    return Ok(());
                };
                match block.kind.as_str() {
                    "tool_use" => {
                        if let Some(name) = block.name.filter(|n| !n.is_empty()) {
                            if self.tool_block.is_none() {
                                self.tool_block = Some(message.index.unwrap_or(0));
                            }
                            out.push(StreamEvent::ToolCall { name });
                        }
                    }
                    "text" => push_text(block.text, out),
                    "thinking" => push_reasoning(block.thinking, out),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let Some(delta) = message.delta else {
                    return Ok(());
                };
                match delta.kind.as_deref() {
                    Some("text_delta") => push_text(delta.text, out),
                    Some("thinking_delta") => push_reasoning(delta.thinking, out),
                    Some("input_json_delta") if message.index.or(Some(0)) == self.tool_block => {
                        if let Some(piece) = delta.partial_json.filter(|p| !p.is_empty()) {
                            out.push(StreamEvent::ToolArguments(piece));
                        }
                    }
                    // signature_delta: nothing the verdict needs.
                    _ => {}
                }
            }
            "content_block_stop"
                if self.tool_block.is_some() && message.index.or(Some(0)) == self.tool_block =>
            {
                out.push(StreamEvent::ToolCallEnd);
            }
            "message_delta" => {
                if let Some(reason) = message
                    .delta
                    .and_then(|d| d.stop_reason)
                    .filter(|r| !r.is_empty())
                {
                    self.stop = Some(reason);
                }
            }
            "message_stop" => {
                if let Some(reason) = self.stop.take() {
                    out.push(StreamEvent::Stop(reason));
                }
                out.push(StreamEvent::Done);
            }
            _ => {}
        }
        Ok(())
    }
}

fn push_text(text: Option<String>, out: &mut Vec<StreamEvent>) {
    if let Some(t) = text.filter(|t| !t.is_empty()) {
        out.push(StreamEvent::Text(t));
    }
}

fn push_reasoning(text: Option<String>, out: &mut Vec<StreamEvent>) {
    if let Some(t) = text.filter(|t| !t.is_empty()) {
        out.push(StreamEvent::Reasoning(t));
    }
}

/// True when an Anthropic error says the organisation's or workspace's spend limit is reached, or its credit is
/// gone: waiting a few seconds does not cure it.
pub fn is_spend_limit(e: &ProviderError) -> bool {
    let m = e.message.to_ascii_lowercase();
    e.is_quota_exhausted()
        || e.kind.as_deref() == Some("billing_error")
        || m.contains("enforced_spend_limit_reached")
        || m.contains("api usage limits")
        || m.contains("credit balance is too low")
}

/// The `anthropic-messages` wire.
#[derive(Debug)]
pub struct AnthropicMessages;

impl Wire for AnthropicMessages {
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError> {
        Ok(HttpRequest {
            url: super::endpoint(&target.base_url, PATH),
            headers: headers(target)?,
            body: body_for(target).to_string().into_bytes(),
        })
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(Reader::default())
    }

    fn stop_kind(&self, reason: &str) -> StopKind {
        match reason {
            "max_tokens" | "model_context_window_exceeded" => StopKind::Length,
            "end_turn" | "stop_sequence" | "tool_use" | "pause_turn" => StopKind::Normal,
            // `refusal`, `sensitive`, and any reason pi does not know: pi ends the call with an error.
            _ => StopKind::Other,
        }
    }

    /// A spend limit (429 `rate_limit_error` with `details.error_code: enforced_spend_limit_reached`, or a 400
    /// about the workspace's usage limits or the credit balance) and a 402 `billing_error` are quota, never
    /// retried. Everything else keeps the generic reading (529 busy, 401/403 key refused, 404 model not found).
    fn refine_error(
        &self,
        status: u16,
        _headers: &HeaderMap,
        error: Option<&ProviderError>,
    ) -> Option<(Outcome, Code)> {
        let spend = error.is_some_and(is_spend_limit);
        match status {
            400 | 429 if spend => Some((Outcome::Http, Code::QuotaExhausted)),
            402 => Some((Outcome::Http, Code::QuotaExhausted)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Facts;

    fn target(id: &str, facts: Facts, key: Option<(&str, &str)>) -> Target {
        let t = Target::test(crate::contract::api_kind::ApiKind::AnthropicMessages)
            .model(format!("anthropic/{id}"))
            .base_url("https://api.anthropic.com")
            .catalog("anthropic", "ANTHROPIC_API_KEY", true)
            .max_tokens(64000)
            .facts(facts)
            .session_id("0190d4a1-2b3c-7def-8123-456789abcdef");
        match key {
            Some((env, value)) => t.key(env, value),
            None => t,
        }
    }

    fn haiku() -> Facts {
        Facts {
            provider: Some("anthropic".into()),
            reasoning: true,
            thinking_level_map: None,
            compat: Some(json!({"supportsStrictTools": true})),
            headers: None,
            context_window: None,
        }
    }

    fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
        h.get(name).map(|v| v.to_str().unwrap())
    }

    #[test]
    fn body_is_pis_capture_for_claude_haiku_4_5() {
        let t = target(
            "claude-haiku-4-5",
            haiku(),
            Some(("ANTHROPIC_API_KEY", "sk-ant-api03-x")),
        );
        let expected: Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/pi-bodies/anthropic-messages-claude-haiku-4-5.json"
        ))
        .unwrap();
        assert_eq!(body(&t, false, CacheRetention::Short), expected);
        assert_eq!(body_for(&t)["model"], "claude-haiku-4-5");
    }

    #[test]
    fn headers_are_pis_for_an_api_key() {
        let t = target(
            "claude-haiku-4-5",
            haiku(),
            Some(("ANTHROPIC_API_KEY", "sk-ant-api03-x")),
        );
        let h = headers(&t).unwrap();
        assert_eq!(header(&h, "anthropic-version"), Some("2023-06-01"));
        assert_eq!(header(&h, "x-api-key"), Some("sk-ant-api03-x"));
        assert!(h.get("x-api-key").unwrap().is_sensitive());
        assert_eq!(header(&h, "authorization"), None);
        assert_eq!(header(&h, "accept"), Some("application/json"));
        assert_eq!(
            header(&h, "anthropic-dangerous-direct-browser-access"),
            Some("true")
        );
        assert_eq!(
            header(&h, "anthropic-beta"),
            Some("interleaved-thinking-2025-05-14")
        );
        assert_eq!(header(&h, "content-type"), Some("application/json"));
        assert_eq!(header(&h, "user-agent"), None, "the client's own");
        assert_eq!(header(&h, "x-session-affinity"), None);
        assert_eq!(h.len(), 6);
        let r = AnthropicMessages.request(&t).unwrap();
        assert_eq!(r.url.as_str(), "https://api.anthropic.com/v1/messages");
    }

    #[test]
    fn auth_token_is_a_bearer_and_oauth_tokens_are_claude_code() {
        let t = target(
            "claude-haiku-4-5",
            haiku(),
            Some(("ANTHROPIC_AUTH_TOKEN", "tok-123456")),
        );
        let h = headers(&t).unwrap();
        assert_eq!(header(&h, "authorization"), Some("Bearer tok-123456"));
        assert_eq!(header(&h, "x-api-key"), None);
        assert_eq!(body_for(&t)["system"].as_array().unwrap().len(), 1);

        let t = target(
            "claude-haiku-4-5",
            haiku(),
            Some(("ANTHROPIC_OAUTH_TOKEN", "sk-ant-oat01-abcdef")),
        );
        let h = headers(&t).unwrap();
        assert_eq!(
            header(&h, "authorization"),
            Some("Bearer sk-ant-oat01-abcdef")
        );
        assert_eq!(header(&h, "x-api-key"), None);
        assert_eq!(
            header(&h, "anthropic-beta"),
            Some("claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14")
        );
        assert_eq!(header(&h, "user-agent"), Some("claude-cli/2.1.75"));
        assert_eq!(header(&h, "x-app"), Some("cli"));
        let b = body_for(&t);
        assert_eq!(b["system"][0]["text"], CLAUDE_CODE_IDENTITY);
        assert_eq!(b["system"][1]["text"], prompt::SYSTEM);
        assert_eq!(b["tools"][0]["name"], "probe");

        // The OAuth env holding a plain key: an x-api-key, as pi sends it.
        let t = target(
            "claude-haiku-4-5",
            haiku(),
            Some(("ANTHROPIC_OAUTH_TOKEN", "sk-ant-api03-y")),
        );
        assert_eq!(
            header(&headers(&t).unwrap(), "x-api-key"),
            Some("sk-ant-api03-y")
        );
        // No key: no key header.
        let h = headers(&target("claude-haiku-4-5", haiku(), None)).unwrap();
        assert!(h.get("x-api-key").is_none() && h.get("authorization").is_none());
    }

    #[test]
    fn thinking_follows_the_catalog() {
        let mut f = haiku();
        f.thinking_level_map = Some(json!({"off": null, "high": "high"}));
        let t = target("claude-fable-5", f, None);
        assert!(body_for(&t).get("thinking").is_none());

        let mut f = haiku();
        f.reasoning = false;
        assert!(
            body_for(&target("claude-3-5-haiku", f, None))
                .get("thinking")
                .is_none()
        );

        // Adaptive thinking: thinking still off, no interleaved beta.
        let mut f = haiku();
        f.compat = Some(json!({"forceAdaptiveThinking": true}));
        let t = target("claude-opus-4-8", f, None);
        assert_eq!(body_for(&t)["thinking"], json!({"type": "disabled"}));
        assert!(headers(&t).unwrap().get("anthropic-beta").is_none());
    }

    #[test]
    fn fireworks_compat_and_gateways() {
        let f = Facts {
            provider: Some("fireworks".into()),
            reasoning: true,
            compat: Some(json!({
                "sendSessionAffinityHeaders": true,
                "supportsCacheControlOnTools": false,
                "supportsEagerToolInputStreaming": false,
                "supportsLongCacheRetention": false
            })),
            ..Facts::default()
        };
        let t = target(
            "accounts/fireworks/models/kimi-k2p6",
            f,
            Some(("FIREWORKS_API_KEY", "fw-123456")),
        );
        let h = headers(&t).unwrap();
        assert_eq!(
            header(&h, "anthropic-beta"),
            Some("fine-grained-tool-streaming-2025-05-14,interleaved-thinking-2025-05-14")
        );
        assert_eq!(
            header(&h, "x-session-affinity"),
            Some(t.session_id.as_str())
        );
        assert_eq!(header(&h, "x-api-key"), Some("fw-123456"));
        let b = body(&t, false, CacheRetention::Long);
        let tool = b["tools"][0].as_object().unwrap();
        assert!(!tool.contains_key("eager_input_streaming"));
        assert!(!tool.contains_key("cache_control"));
        assert_eq!(
            b["system"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );

        let long = body(
            &target("claude-haiku-4-5", haiku(), None),
            false,
            CacheRetention::Long,
        );
        assert_eq!(
            long["messages"][0]["content"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );
        assert_eq!(
            long["tools"][0]["cache_control"],
            json!({"type": "ephemeral", "ttl": "1h"})
        );

        let f = Facts {
            provider: Some("cloudflare-ai-gateway".into()),
            ..Facts::default()
        };
        let h = headers(&target(
            "claude-haiku-4-5",
            f,
            Some(("CLOUDFLARE_API_KEY", "cf-123456")),
        ))
        .unwrap();
        assert_eq!(header(&h, "cf-aig-authorization"), Some("Bearer cf-123456"));
        assert!(h.get("x-api-key").is_none() && h.get("authorization").is_none());

        let f = Facts {
            provider: Some("github-copilot".into()),
            reasoning: true,
            headers: Some(
                json!({"User-Agent": "GitHubCopilotChat/0.35.0", "Copilot-Integration-Id": "vscode-chat"}),
            ),
            ..Facts::default()
        };
        let h = headers(&target(
            "claude-haiku-4.5",
            f,
            Some(("COPILOT_GITHUB_TOKEN", "gho_123456")),
        ))
        .unwrap();
        assert_eq!(header(&h, "authorization"), Some("Bearer gho_123456"));
        assert_eq!(header(&h, "x-initiator"), Some("user"));
        assert_eq!(header(&h, "openai-intent"), Some("conversation-edits"));
        assert_eq!(header(&h, "user-agent"), Some("GitHubCopilotChat/0.35.0"));
        assert_eq!(header(&h, "copilot-integration-id"), Some("vscode-chat"));
    }

    #[test]
    fn tool_choice_maps_to_anthropics_shapes() {
        let mut t = target("claude-haiku-4-5", haiku(), None);
        for (choice, expected) in [
            (ToolChoice::Auto, json!({"type": "auto"})),
            (ToolChoice::Required, json!({"type": "any"})),
            (ToolChoice::Named, json!({"type": "tool", "name": "probe"})),
            (ToolChoice::None, json!({"type": "none"})),
        ] {
            t.tool_choice = choice;
            assert_eq!(body_for(&t)["tool_choice"], expected, "{choice:?}");
        }
        t.tool_choice = ToolChoice::Unset;
        assert!(body_for(&t).get("tool_choice").is_none());
    }

    fn read_all(events: &[(&str, &str)]) -> Result<Vec<StreamEvent>, ProtocolError> {
        let mut reader = Reader::default();
        let mut out = Vec::new();
        for (event, data) in events {
            reader.on_event(
                &sse::Event {
                    event: (*event).into(),
                    data: (*data).into(),
                },
                &mut out,
            )?;
        }
        Ok(out)
    }

    const MESSAGE_START: (&str, &str) = (
        "message_start",
        r#"{"type":"message_start","message":{"model":"claude-haiku-4-5-20251001","id":"msg_01QWo5WCv7vVCAfRw6CgXJtQ","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":612,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}"#,
    );
    const PING: (&str, &str) = ("ping", r#"{"type": "ping"}"#);
    const MESSAGE_STOP: (&str, &str) = ("message_stop", r#"{"type":"message_stop"}"#);

    #[test]
    fn a_tool_use_block_names_the_tool() {
        let ev = read_all(&[
            MESSAGE_START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01D7FLrfh4GYq7yT1ULFeyMV","name":"probe","input":{}}}"#,
            ),
            PING,
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"status\": \"ready\"}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":54}}"#,
            ),
            MESSAGE_STOP,
        ])
        .unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::ToolCall {
                    name: "probe".into()
                },
                StreamEvent::ToolArguments("{\"status\": \"ready\"}".into()),
                StreamEvent::ToolCallEnd,
                StreamEvent::Stop("tool_use".into()),
                StreamEvent::Done
            ]
        );
    }

    #[test]
    fn text_thinking_and_stop_reasons() {
        let ev = read_all(&[
            MESSAGE_START,
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see."}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Ready."}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":16}}"#,
            ),
            MESSAGE_STOP,
        ])
        .unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::Reasoning("Let me see.".into()),
                StreamEvent::Text("Ready.".into()),
                StreamEvent::Stop("max_tokens".into()),
                StreamEvent::Done
            ]
        );
        let w = AnthropicMessages;
        assert_eq!(w.stop_kind("max_tokens"), StopKind::Length);
        assert_eq!(
            w.stop_kind("model_context_window_exceeded"),
            StopKind::Length
        );
        for normal in ["end_turn", "stop_sequence", "tool_use", "pause_turn"] {
            assert_eq!(w.stop_kind(normal), StopKind::Normal, "{normal}");
        }
        assert_eq!(w.stop_kind("refusal"), StopKind::Other);
        assert_eq!(w.stop_kind("sensitive"), StopKind::Other);
    }

    #[test]
    fn a_stop_without_message_stop_is_not_an_end() {
        let ev = read_all(&[
            MESSAGE_START,
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}"#,
            ),
        ])
        .unwrap();
        assert!(ev.is_empty(), "{ev:?}");
    }

    #[test]
    fn an_error_event_after_the_200() {
        let ev = read_all(&[
            MESSAGE_START,
            PING,
            (
                "error",
                r#"{"type": "error", "error": {"details": null, "type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CUSHd1ZCXXwfKbdzSh9HL"}"#,
            ),
        ])
        .unwrap();
        let [StreamEvent::Error(e)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(e.message, "Overloaded");
        assert!(e.is_overload());
    }

    #[test]
    fn events_pi_skips_and_garbage() {
        // No `event:` name: pi skips it, and so does the probe.
        assert!(
            read_all(&[("", r#"{"type":"message_stop"}"#)])
                .unwrap()
                .is_empty()
        );
        assert!(read_all(&[("ping", "not json")]).unwrap().is_empty());
        assert!(read_all(&[("content_block_start", "{not json")]).is_err());
        assert!(read_all(&[("message_delta", "[1]")]).is_err());
        assert!(
            read_all(&[("message_delta", r#"{"delta":{"stop_reason":"end_turn"}}"#)])
                .unwrap()
                .is_empty(),
            "data without a type is skipped, as pi skips it"
        );
        // A tool_use block without a name is no call.
        assert!(
            read_all(&[(
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"","input":{}}}"#
            )])
            .unwrap()
            .is_empty()
        );
    }

    #[test]
    fn spend_limits_are_quota() {
        let w = AnthropicMessages;
        let parse = |s: &str| super::super::error_body::parse(s).unwrap();
        let spend = parse(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits: your organization has crossed its monthly API usage threshold, set based on your organization's API tier. You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_018EeWyXxfu5pfWkrYcMdjWG"}"#,
        );
        let h = HeaderMap::new();
        assert_eq!(
            w.refine_error(429, &h, Some(&spend)),
            Some((Outcome::Http, Code::QuotaExhausted))
        );
        let workspace = parse(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified workspace API usage limits. You will regain access on 2026-09-01 at 00:00 UTC."}}"#,
        );
        assert_eq!(
            w.refine_error(400, &h, Some(&workspace)),
            Some((Outcome::Http, Code::QuotaExhausted))
        );
        let credit = parse(
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#,
        );
        assert_eq!(
            w.refine_error(400, &h, Some(&credit)),
            Some((Outcome::Http, Code::QuotaExhausted))
        );
        assert_eq!(
            w.refine_error(402, &h, None),
            Some((Outcome::Http, Code::QuotaExhausted))
        );
        let rate = parse(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
        );
        assert_eq!(w.refine_error(429, &h, Some(&rate)), None);
        let overloaded =
            parse(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(w.refine_error(529, &h, Some(&overloaded)), None);
    }
}
