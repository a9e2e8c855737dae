//! `google-generative-ai` (the Gemini API) and `google-vertex` (Vertex AI with an API key, "express" mode): the
//! request pi-ai 0.82.1 sends through `@google/genai` 1.52.0, and the stream it reads.
//!
//! The request (`research/pi-requests.md`, sections 4 and 5): `POST <base>/models/<id>:streamGenerateContent?alt=sse`
//! for Gemini (pi gives the SDK the catalog's base URL, which already ends in the version, `/v1beta`), and
//! `POST https://aiplatform.googleapis.com/v1/publishers/google/models/<id>:streamGenerateContent?alt=sse` for Vertex
//! with an API key (the catalog's `https://{location}-aiplatform.googleapis.com` is a template pi does not use; a base
//! URL without the template replaces the host, and keeps its own version when it names one). The key goes in
//! `x-goog-api-key`, never in the query. The body: `contents` (the user message), `systemInstruction` with role
//! `user`, one `functionDeclarations` tool whose JSON Schema is in `parametersJsonSchema`,
//! `generationConfig.maxOutputTokens`, and for a reasoning model thinking turned off the way pi turns it off per model
//! family (Gemini 3 Pro `thinkingLevel: LOW`; Gemini 3 Flash, and on the Gemini API Gemma 4, `thinkingLevel: MINIMAL`;
//! anything else `thinkingBudget: 0`). No `toolConfig` unless a tool choice is set.
//!
//! The stream has no end marker: each event is a whole `GenerateContentResponse`, and the last one carries the
//! candidate's `finishReason`. An error after the 200 comes as an event holding `{"error": {...}}`.
//!
//! Deviations from pi, on purpose:
//! - No `user-agent: google-genai-sdk/...` / `x-goog-api-client` headers: they describe pi's SDK and Node.js, and
//!   claiming to be that SDK would be a lie in Google's logs. The probe says `user-agent: jr2-probe/<version>`.
//! - `accept-encoding` is not sent (see `openai_completions`).
//! - A tool choice pi cannot express is sent as Gemini has it: `Named` is `ANY` with `allowedFunctionNames: ["probe"]`,
//!   `Required` is `ANY` (pi maps only `auto`, `none` and `any`, and only when a caller passes one; a Turn passes none).
//! - Vertex without an API key (Application Default Credentials: a service account's OAuth token, a project and a
//!   location) is not supported: the probe says so instead of sending a request pi would not send.

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

use super::{
    HttpRequest, ProtocolError, ProviderError, RequestError, StopKind, StreamEvent, StreamReader,
    ToolChoice, Wire,
};
use crate::contract::outcome::{Code, Outcome};
use crate::framing::sse;
use crate::prompt;
use crate::target::Target;

/// The header that carries the key, on both APIs.
pub const KEY_HEADER: &str = "x-goog-api-key";

/// The host the SDK uses for Vertex with an API key.
pub const VERTEX_EXPRESS_BASE: &str = "https://aiplatform.googleapis.com";

/// The API version pi asks the SDK for on Vertex.
pub const VERTEX_API_VERSION: &str = "v1";

/// The value pi's Vertex provider takes as "no key: use Application Default Credentials".
const VERTEX_ADC_MARKER: &str = "gcp-vertex-credentials";

/// Which of the two Google APIs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// The Gemini API (`generativelanguage.googleapis.com`).
    Gemini,
    /// Vertex AI.
    Vertex,
}

/// `gemini-3` then an optional `.<digits>`, then `suffix`, anywhere in `id` (pi's `/gemini-3(?:\.\d+)?-<suffix>/`).
fn gemini3_then(id: &str, suffix: &str) -> bool {
    id.match_indices("gemini-3").any(|(at, m)| {
        let rest = &id[at + m.len()..];
        if rest.starts_with(suffix) {
            return true;
        }
        let Some(after_dot) = rest.strip_prefix('.') else {
            return false;
        };
        let digits = after_dot.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && after_dot[digits..].starts_with(suffix)
    })
}

/// Gemini 3 Pro (pi's `isGemini3ProModel`).
pub fn is_gemini3_pro(id: &str) -> bool {
    gemini3_then(&id.to_ascii_lowercase(), "-pro")
}

/// Gemini 3 Flash and Flash-Lite, and the `-latest` aliases (pi's `isGemini3FlashModel`).
pub fn is_gemini3_flash(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    gemini3_then(&id, "-flash") || id == "gemini-flash-latest" || id == "gemini-flash-lite-latest"
}

/// Gemma 4 (pi's `isGemma4Model`, Gemini API only).
pub fn is_gemma4(id: &str) -> bool {
    let id = id.to_ascii_lowercase();
    id.contains("gemma-4") || id.contains("gemma4")
}

/// The `thinkingConfig` pi sends for a reasoning model when the Turn asks for no thinking (`getDisabledThinkingConfig`).
/// pi's Vertex provider has no Gemma 4 case: Gemma 4 there gets `thinkingBudget: 0`.
pub fn thinking_off(flavor: Flavor, id: &str) -> Value {
    if is_gemini3_pro(id) {
        json!({"thinkingLevel": "LOW"})
    } else if is_gemini3_flash(id) || (flavor == Flavor::Gemini && is_gemma4(id)) {
        json!({"thinkingLevel": "MINIMAL"})
    } else {
        json!({"thinkingBudget": 0})
    }
}

/// The request body for a model `id` with a token cap of `max_tokens`; `reasoning` adds the thinking-off config.
pub fn body(
    flavor: Flavor,
    id: &str,
    max_tokens: u64,
    reasoning: bool,
    tool_choice: ToolChoice,
) -> Value {
    let mut generation = json!({"maxOutputTokens": max_tokens});
    if reasoning {
        generation["thinkingConfig"] = thinking_off(flavor, id);
    }
    let mut body = json!({
        "contents": [{"role": "user", "parts": [{"text": prompt::USER}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": prompt::SYSTEM}]},
        "tools": [{
            "functionDeclarations": [{
                "name": prompt::TOOL_NAME,
                "description": prompt::TOOL_DESCRIPTION,
                "parametersJsonSchema": prompt::tool_parameters()
            }]
        }],
        "generationConfig": generation
    });
    let config = match tool_choice {
        ToolChoice::Unset => return body,
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Named => json!({"mode": "ANY", "allowedFunctionNames": [prompt::TOOL_NAME]}),
    };
    body["toolConfig"] = json!({"functionCallingConfig": config});
    body
}

/// The body pi sends for `target`.
pub fn body_for(flavor: Flavor, target: &Target) -> Value {
    body(
        flavor,
        &target.id,
        target.max_tokens,
        target.facts.reasoning,
        target.tool_choice,
    )
}

/// The model's resource path as the SDK writes it (`tModel`): `models/<id>` on Gemini; on Vertex
/// `publishers/google/models/<id>`, or `publishers/<a>/models/<b>` for an id `<a>/<b>`.
pub fn model_path(flavor: Flavor, id: &str) -> String {
    match flavor {
        Flavor::Gemini if id.starts_with("models/") || id.starts_with("tunedModels/") => {
            id.to_owned()
        }
        Flavor::Gemini => format!("models/{id}"),
        Flavor::Vertex
            if id.starts_with("publishers/")
                || id.starts_with("projects/")
                || id.starts_with("models/") =>
        {
            id.to_owned()
        }
        Flavor::Vertex => match id.split_once('/') {
            Some((publisher, model)) => format!("publishers/{publisher}/models/{model}"),
            None => format!("publishers/google/models/{id}"),
        },
    }
}

/// The catalog's Vertex base URL is a template (`https://{location}-aiplatform.googleapis.com`).
fn is_location_template(base: &reqwest::Url) -> bool {
    let s = base.as_str().to_ascii_lowercase();
    s.contains("{location}") || s.contains("%7blocation%7d")
}

/// A path segment that names an API version (`v1`, `v1beta`, `v1beta1`): pi's `baseUrlIncludesApiVersion`.
fn names_version(segment: &str) -> bool {
    let Some(rest) = segment.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return false;
    }
    match rest[digits..].strip_prefix("beta") {
        Some(tail) => tail.bytes().all(|b| b.is_ascii_digit()),
        None => digits == rest.len(),
    }
}

/// Where the request goes, `?alt=sse` included.
pub fn url(flavor: Flavor, base: &reqwest::Url, id: &str) -> reqwest::Url {
    let method = format!("/{}:streamGenerateContent", model_path(flavor, id));
    let mut url = match flavor {
        // pi sets `apiVersion: ""`: the catalog's base URL already ends in its version.
        Flavor::Gemini => super::endpoint(base, &method),
        Flavor::Vertex if is_location_template(base) => {
            let express = reqwest::Url::parse(VERTEX_EXPRESS_BASE).expect("a valid constant URL");
            super::endpoint(&express, &format!("/{VERTEX_API_VERSION}{method}"))
        }
        Flavor::Vertex
            if base
                .path_segments()
                .is_some_and(|mut s| s.any(names_version)) =>
        {
            super::endpoint(base, &method)
        }
        Flavor::Vertex => super::endpoint(base, &format!("/{VERTEX_API_VERSION}{method}")),
    };
    let others: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "alt")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut()
        .clear()
        .extend_pairs(others)
        .append_pair("alt", "sse");
    url
}

fn request(flavor: Flavor, target: &Target) -> Result<HttpRequest, RequestError> {
    let key = match flavor {
        Flavor::Gemini => target.key_value().filter(|k| !k.is_empty()).ok_or_else(|| RequestError {
            outcome: Outcome::KeyRefused,
            code: Code::KeyRefused,
            message: format!(
                "no API key: a Turn sends nothing without one (pi: \"No API key for provider: {}\")",
                target.facts.provider.as_deref().unwrap_or("google")
            ),
        })?,
        // pi's Vertex provider trims the key, and reads its ADC marker or a `<placeholder>` as no key.
        Flavor::Vertex => target
            .key_value()
            .map(str::trim)
            .filter(|k| {
                !k.is_empty()
                    && *k != VERTEX_ADC_MARKER
                    && !(k.starts_with('<') && k.ends_with('>') && k.len() > 2)
            })
            .ok_or_else(|| RequestError {
                outcome: Outcome::NotCheckable,
                code: Code::NotCheckableAdc,
                message: "google-vertex without an API key uses Application Default Credentials (an OAuth token from \
                     GOOGLE_APPLICATION_CREDENTIALS, GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION), which the probe \
                     does not mint; set GOOGLE_CLOUD_API_KEY (Vertex express mode) to check this model"
                    .to_owned(),
            })?,
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    super::catalog_headers(&mut headers, target);
    headers.insert(
        HeaderName::from_static(KEY_HEADER),
        super::secret_header(key)?,
    );
    Ok(HttpRequest {
        url: url(flavor, &target.base_url, &target.id),
        headers,
        body: body_for(flavor, target).to_string().into_bytes(),
    })
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, rename = "promptFeedback")]
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Deserialize)]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default, rename = "finishReason")]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
    /// A thought summary (`thought: true`): reasoning.
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default, rename = "functionCall")]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    #[serde(default)]
    name: Option<String>,
}

#[derive(Deserialize)]
struct PromptFeedback {
    #[serde(default, rename = "blockReason")]
    block_reason: Option<String>,
}

/// Reads a `streamGenerateContent?alt=sse` stream (Gemini and Vertex alike).
#[derive(Debug, Default)]
pub struct Reader;

impl Reader {
    fn read_chunk(value: Value, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let chunk: Chunk = serde_json::from_value(value).map_err(|e| {
            ProtocolError(format!(
                "a stream event is not a GenerateContentResponse ({e})"
            ))
        })?;
        if let Some(error) = chunk.error {
            out.push(StreamEvent::Error(super::error_body::from_value(&error)));
            return Ok(());
        }
        // pi reads the first candidate only.
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            if let Some(reason) = chunk
                .prompt_feedback
                .and_then(|f| f.block_reason)
                .filter(|r| !r.is_empty())
            {
                out.push(StreamEvent::Stop(format!("prompt blocked: {reason}")));
            }
            return Ok(());
        };
        for part in candidate.content.into_iter().flat_map(|c| c.parts) {
            // Thought parts (`thought: true`) are text too: pi keeps them as thinking blocks.
            if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                out.push(if part.thought == Some(true) {
                    StreamEvent::Reasoning(text)
                } else {
                    StreamEvent::Text(text)
                });
            }
            if let Some(name) = part
                .function_call
                .and_then(|f| f.name)
                .filter(|n| !n.is_empty())
            {
                // Gemini sends a call whole, its arguments an object: the call is complete here.
                out.push(StreamEvent::ToolCall { name });
                out.push(StreamEvent::ToolCallEnd);
            }
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            out.push(StreamEvent::Stop(reason));
        }
        Ok(())
    }
}

impl StreamReader for Reader {
    fn on_event(
        &mut self,
        event: &sse::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            // Gemini sends no end marker; a gateway in front of it may.
            out.push(StreamEvent::Done);
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ProtocolError(format!(
                "a stream event is not a GenerateContentResponse ({e})"
            ))
        })?;
        match value {
            // The non-SSE form of the stream is a JSON array of responses; read one that slipped into an event.
            Value::Array(items) => items
                .into_iter()
                .try_for_each(|item| Self::read_chunk(item, out)),
            other => Self::read_chunk(other, out),
        }
    }
}

/// What a `finishReason` means: `MAX_TOKENS` is out of tokens, `STOP` a normal end (also after a function call),
/// anything else (`SAFETY`, `RECITATION`, `MALFORMED_FUNCTION_CALL`, a blocked prompt...) an end on an error, as pi
/// maps it.
pub fn stop_kind(reason: &str) -> StopKind {
    match reason {
        "MAX_TOKENS" => StopKind::Length,
        "STOP" => StopKind::Normal,
        _ => StopKind::Other,
    }
}

/// A 429 that names a per-day quota (`quotaId` `GenerateRequestsPerDayPerProjectPerModel...`, whose message says
/// `Quota exceeded for metric: .../generate_requests_per_model_per_day`): a retry within the minute cannot cure it.
pub fn is_per_day_quota(error: &ProviderError) -> bool {
    [
        Some(&error.message),
        error.code.as_ref(),
        error.kind.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|s| s.to_ascii_lowercase())
    .any(|s| s.contains("per_day") || s.contains("perday") || s.contains("per day"))
}

/// How Google's error statuses read, beyond the generic ones: a 400 whose `ErrorInfo.reason` is `API_KEY_INVALID`
/// is a refused key; a 429 for a per-day quota is quota exhaustion (not retried). Everything else keeps the generic
/// reading (403 `PERMISSION_DENIED`: refused key; 404 `NOT_FOUND`: no such model; 429: busy; 503: unavailable).
pub fn refine(status: u16, error: Option<&ProviderError>) -> Option<(Outcome, Code)> {
    let error = error?;
    match status {
        400 if error.code.as_deref() == Some("API_KEY_INVALID") => {
            Some((Outcome::KeyRefused, Code::KeyRefused))
        }
        429 if is_per_day_quota(error) => Some((Outcome::Http, Code::QuotaExhausted)),
        _ => None,
    }
}

/// `RetryInfo.retryDelay` in an error body (also when Google wraps the error in a one-element list).
pub fn retry_delay(body: &str) -> Option<Duration> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let value = match value {
        Value::Array(mut items) if !items.is_empty() => items.swap_remove(0),
        other => other,
    };
    crate::retry::gemini_retry_delay(&value)
}

/// The wire of both Google APIs: `google-generative-ai` (the Gemini API) and `google-vertex` (Vertex AI with an API
/// key), which differ only in their request.
#[derive(Debug)]
pub struct Google(pub Flavor);

impl Wire for Google {
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError> {
        request(self.0, target)
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(Reader)
    }

    fn stop_kind(&self, reason: &str) -> StopKind {
        stop_kind(reason)
    }

    fn refine_error(
        &self,
        status: u16,
        _headers: &HeaderMap,
        error: Option<&ProviderError>,
    ) -> Option<(Outcome, Code)> {
        refine(status, error)
    }

    fn body_wait(&self, body: &str) -> Option<Duration> {
        retry_delay(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::api_kind::ApiKind;
    use crate::target::Facts;

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

    fn target(api: ApiKind, id: &str, base: &str, key: Option<&str>) -> Target {
        Target::test(api)
            .model(format!("google/{id}"))
            .base_url(base)
            .catalog("google", "GEMINI_API_KEY", key.is_some())
            .key("GEMINI_API_KEY", key)
            .max_tokens(65536)
            .facts(Facts {
                provider: Some("google".into()),
                reasoning: true,
                ..Facts::default()
            })
            .session_id(crate::target::new_session_id())
    }

    #[test]
    fn body_of_gemini_2_5_flash_is_pis() {
        let b = body(
            Flavor::Gemini,
            "gemini-2.5-flash",
            65536,
            true,
            ToolChoice::Unset,
        );
        let expected: Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/pi-bodies/google-generative-ai-gemini-2.5-flash.json"
        ))
        .unwrap();
        assert_eq!(b, expected);
        assert!(b.get("toolConfig").is_none(), "a Turn sends no toolConfig");
        assert!(b.get("stream").is_none() && b.get("model").is_none());
    }

    #[test]
    fn thinking_off_per_family() {
        let t = |f, id| thinking_off(f, id);
        for id in [
            "gemini-3-pro-preview",
            "gemini-3.1-pro-preview",
            "gemini-3.1-pro-preview-customtools",
        ] {
            assert_eq!(
                t(Flavor::Gemini, id),
                json!({"thinkingLevel": "LOW"}),
                "{id}"
            );
            assert_eq!(
                t(Flavor::Vertex, id),
                json!({"thinkingLevel": "LOW"}),
                "{id}"
            );
        }
        for id in [
            "gemini-3-flash-preview",
            "gemini-3.1-flash-lite",
            "gemini-3.5-flash",
            "gemini-flash-latest",
            "gemini-flash-lite-latest",
            "Gemini-3-Flash",
        ] {
            assert_eq!(
                t(Flavor::Gemini, id),
                json!({"thinkingLevel": "MINIMAL"}),
                "{id}"
            );
            assert_eq!(
                t(Flavor::Vertex, id),
                json!({"thinkingLevel": "MINIMAL"}),
                "{id}"
            );
        }
        for id in ["gemma-4-31b-it", "gemma4-e4b"] {
            assert_eq!(
                t(Flavor::Gemini, id),
                json!({"thinkingLevel": "MINIMAL"}),
                "{id}"
            );
            // pi's Vertex provider has no Gemma 4 case.
            assert_eq!(t(Flavor::Vertex, id), json!({"thinkingBudget": 0}), "{id}");
        }
        for id in [
            "gemini-2.5-flash",
            "gemini-2.5-pro",
            "gemini-2.5-flash-lite",
            "gemini-30-pro",
            "gemini-3.x-pro",
            "deep-research-preview-04-2026",
        ] {
            assert_eq!(t(Flavor::Gemini, id), json!({"thinkingBudget": 0}), "{id}");
        }
        // A model that does not reason gets no thinkingConfig (pi: `model.reasoning` is false).
        let b = body(
            Flavor::Gemini,
            "gemini-2.0-flash",
            8192,
            false,
            ToolChoice::Unset,
        );
        assert_eq!(b["generationConfig"], json!({"maxOutputTokens": 8192}));
        let b = body(
            Flavor::Gemini,
            "gemini-3-pro-preview",
            65536,
            true,
            ToolChoice::Unset,
        );
        assert_eq!(
            b["generationConfig"],
            json!({"maxOutputTokens": 65536, "thinkingConfig": {"thinkingLevel": "LOW"}})
        );
    }

    #[test]
    fn tool_choice_becomes_tool_config() {
        let mode = |c| body(Flavor::Gemini, "gemini-2.5-flash", 1, true, c)["toolConfig"].clone();
        assert_eq!(mode(ToolChoice::Unset), Value::Null);
        assert_eq!(
            mode(ToolChoice::Auto),
            json!({"functionCallingConfig": {"mode": "AUTO"}})
        );
        assert_eq!(
            mode(ToolChoice::None),
            json!({"functionCallingConfig": {"mode": "NONE"}})
        );
        assert_eq!(
            mode(ToolChoice::Required),
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
        assert_eq!(
            mode(ToolChoice::Named),
            json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["probe"]}})
        );
    }

    #[test]
    fn urls_as_the_sdk_forms_them() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(
            url(
                Flavor::Gemini,
                &u("https://generativelanguage.googleapis.com/v1beta"),
                "gemini-2.5-flash"
            )
            .as_str(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            url(
                Flavor::Gemini,
                &u("https://opencode.ai/zen/v1/"),
                "gemini-3-flash"
            )
            .as_str(),
            "https://opencode.ai/zen/v1/models/gemini-3-flash:streamGenerateContent?alt=sse"
        );
        // The catalog's template is not used: express mode goes to the global host, version v1.
        assert_eq!(
            url(
                Flavor::Vertex,
                &u("https://{location}-aiplatform.googleapis.com"),
                "gemini-2.5-flash"
            )
            .as_str(),
            "https://aiplatform.googleapis.com/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        // A base URL of its own replaces the host; the version is added unless the base names one.
        assert_eq!(
            url(
                Flavor::Vertex,
                &u("https://vertex.example:8443"),
                "gemini-2.5-flash"
            )
            .as_str(),
            "https://vertex.example:8443/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            url(
                Flavor::Vertex,
                &u("https://gw.example/vertex/v1beta1/"),
                "gemini-2.5-flash"
            )
            .as_str(),
            "https://gw.example/vertex/v1beta1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            url(Flavor::Vertex, &u("https://gw.example/"), "meta/llama-4").as_str(),
            "https://gw.example/v1/publishers/meta/models/llama-4:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            url(
                Flavor::Gemini,
                &u("https://gw.example/v1beta?tenant=a&alt=json"),
                "gemini-2.5-flash"
            )
            .as_str(),
            "https://gw.example/v1beta/models/gemini-2.5-flash:streamGenerateContent?tenant=a&alt=sse"
        );
        for (segment, named) in [
            ("v1", true),
            ("v1beta", true),
            ("v1beta1", true),
            ("v2", true),
            ("v", false),
            ("vertex", false),
            ("v1alpha", false),
            ("v1beta1x", false),
        ] {
            assert_eq!(names_version(segment), named, "{segment}");
        }
    }

    #[test]
    fn request_headers_and_keys() {
        let t = target(
            ApiKind::GoogleGenerativeAi,
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com/v1beta",
            Some("AIzaTestKey"),
        );
        let r = Google(Flavor::Gemini).request(&t).unwrap();
        assert_eq!(r.headers[KEY_HEADER], "AIzaTestKey");
        assert!(r.headers[KEY_HEADER].is_sensitive());
        assert_eq!(r.headers[CONTENT_TYPE], "application/json");
        assert!(r.headers.get("authorization").is_none());
        assert!(
            !r.url.as_str().contains("AIza"),
            "the key is never in the query"
        );
        let b: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(b["generationConfig"]["thinkingConfig"]["thinkingBudget"], 0);

        let no_key = target(
            ApiKind::GoogleGenerativeAi,
            "gemini-2.5-flash",
            "https://generativelanguage.googleapis.com/v1beta",
            None,
        );
        let e = Google(Flavor::Gemini).request(&no_key).unwrap_err();
        assert_eq!((e.outcome, e.code), (Outcome::KeyRefused, Code::KeyRefused));
        assert!(e.message.contains("No API key for provider: google"), "{e}");

        let base = "https://{location}-aiplatform.googleapis.com";
        for key in [
            None,
            Some("gcp-vertex-credentials"),
            Some("<authenticated>"),
            Some("  "),
        ] {
            let t = target(ApiKind::GoogleVertex, "gemini-2.5-flash", base, key);
            let e = Google(Flavor::Vertex).request(&t).unwrap_err();
            assert_eq!(
                (e.outcome, e.code),
                (Outcome::NotCheckable, Code::NotCheckableAdc),
                "{key:?}"
            );
            assert!(
                e.message.starts_with(
                    "google-vertex without an API key uses Application Default Credentials"
                ),
                "{e}"
            );
        }
        let t = target(
            ApiKind::GoogleVertex,
            "gemini-3-flash-preview",
            base,
            Some(" AQ.vertex-key \n"),
        );
        let r = Google(Flavor::Vertex).request(&t).unwrap();
        assert_eq!(r.headers[KEY_HEADER], "AQ.vertex-key");
        assert_eq!(r.url.host_str(), Some("aiplatform.googleapis.com"));
        let b: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            b["generationConfig"]["thinkingConfig"],
            json!({"thinkingLevel": "MINIMAL"})
        );
    }

    #[test]
    fn reads_a_function_call() {
        // gemini-2.5-flash, thinking off: the whole call in one event, finishReason STOP.
        let ev = read(r#"{"candidates": [{"content": {"parts": [{"functionCall": {"name": "probe","args": {"status": "ready"}}}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 72,"candidatesTokenCount": 15,"totalTokenCount": 87,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 72}]},"modelVersion": "gemini-2.5-flash","responseId": "Vv0xaJ3tDKCv1MkP2uGZ0Ac"}"#).unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::ToolCall {
                    name: "probe".into()
                },
                StreamEvent::ToolCallEnd,
                StreamEvent::Stop("STOP".into())
            ]
        );
        // Gemini 3: a thought summary, then the call with its thought signature.
        let ev = read(r#"{"candidates": [{"content": {"parts": [{"text": "**Calling the tool**\n\nThe user wants the probe tool.","thought": true}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 72,"totalTokenCount": 130,"thoughtsTokenCount": 58},"modelVersion": "gemini-3-flash-preview","responseId": "x1"}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Reasoning(
                "**Calling the tool**\n\nThe user wants the probe tool.".into()
            )]
        );
        let ev = read(r#"{"candidates": [{"content": {"parts": [{"functionCall": {"name": "probe","args": {"status": "ready"}},"thoughtSignature": "CiQB0e2Kb1example"}],"role": "model"},"index": 0}],"modelVersion": "gemini-3-flash-preview","responseId": "x1"}"#).unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::ToolCall {
                    name: "probe".into()
                },
                StreamEvent::ToolCallEnd
            ]
        );
        // A call without a name is not a call.
        assert!(
            read(r#"{"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}"#)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn reads_text_length_and_other_stops() {
        let ev = read(r#"{"candidates": [{"content": {"parts": [{"text": "I will call"}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.5-flash"}"#).unwrap();
        assert_eq!(ev, vec![StreamEvent::Text("I will call".into())]);
        let ev = read(r#"{"candidates": [{"content": {"parts": [{"text": " the tool."}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 72,"candidatesTokenCount": 6,"totalTokenCount": 78}}"#).unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::Text(" the tool.".into()),
                StreamEvent::Stop("STOP".into())
            ]
        );
        // Thinking ate the budget: no parts at all.
        let ev = read(r#"{"candidates": [{"content": {"role": "model"},"finishReason": "MAX_TOKENS","index": 0}],"usageMetadata": {"promptTokenCount": 72,"totalTokenCount": 1096,"thoughtsTokenCount": 1024},"modelVersion": "gemini-2.5-pro"}"#).unwrap();
        assert_eq!(ev, vec![StreamEvent::Stop("MAX_TOKENS".into())]);
        let ev = read(r#"{"candidates": [{"content": {},"finishReason": "MALFORMED_FUNCTION_CALL","finishMessage": "Malformed function call: print(default_api.probe(status='ready'))","index": 0}]}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Stop("MALFORMED_FUNCTION_CALL".into())]
        );
        let ev = read(r#"{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},"usageMetadata": {"promptTokenCount": 72,"totalTokenCount": 72}}"#).unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Stop(
                "prompt blocked: PROHIBITED_CONTENT".into()
            )]
        );
        // The usage-only tail some streams end with.
        assert!(
            read(r#"{"usageMetadata": {"promptTokenCount": 1},"modelVersion": "m"}"#)
                .unwrap()
                .is_empty()
        );
        assert!(read("").unwrap().is_empty());

        assert_eq!(stop_kind("MAX_TOKENS"), StopKind::Length);
        assert_eq!(stop_kind("STOP"), StopKind::Normal);
        for other in [
            "SAFETY",
            "RECITATION",
            "MALFORMED_FUNCTION_CALL",
            "OTHER",
            "prompt blocked: SAFETY",
        ] {
            assert_eq!(stop_kind(other), StopKind::Other, "{other}");
        }
    }

    #[test]
    fn reads_an_error_in_the_stream() {
        let ev = read(r#"{"error": {"code": 500,"message": "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting","status": "INTERNAL"}}"#).unwrap();
        let StreamEvent::Error(e) = &ev[0] else {
            panic!("{ev:?}")
        };
        assert!(e.message.starts_with("An internal error has occurred."));
        assert_eq!(e.kind.as_deref(), Some("INTERNAL"));
        assert!(!e.is_overload());
        let ev = read(r#"{"error": {"code": 429,"message": "Resource has been exhausted (e.g. check quota).","status": "RESOURCE_EXHAUSTED"}}"#).unwrap();
        let StreamEvent::Error(e) = &ev[0] else {
            panic!("{ev:?}")
        };
        assert!(e.is_overload(), "{e:?}");
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(read("<html>").is_err());
        assert!(read(r#"{"candidates": 5}"#).is_err());
        assert!(read(r#"{"candidates": [{"content": {"parts": "x"}}]}"#).is_err());
    }

    #[test]
    fn errors_refine_as_the_contract_says() {
        let p = |b: &str| crate::api::error_body::parse(b).unwrap();
        let bad_key = p(
            r#"{"error": {"code": 400,"message": "API key not valid. Please pass a valid API key.","status": "INVALID_ARGUMENT","details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo","reason": "API_KEY_INVALID","domain": "googleapis.com","metadata": {"service": "generativelanguage.googleapis.com"}}]}}"#,
        );
        assert_eq!(
            refine(400, Some(&bad_key)),
            Some((Outcome::KeyRefused, Code::KeyRefused))
        );
        let other_400 = p(
            r#"{"error": {"code": 400,"message": "User location is not supported for the API use.","status": "FAILED_PRECONDITION"}}"#,
        );
        assert_eq!(refine(400, Some(&other_400)), None);
        let per_day = p(
            r#"{"error": {"code": 429,"message": "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_requests_per_model_per_day, limit: 0","status": "RESOURCE_EXHAUSTED"}}"#,
        );
        assert_eq!(
            refine(429, Some(&per_day)),
            Some((Outcome::Http, Code::QuotaExhausted))
        );
        let per_minute = p(
            r#"{"error": {"code": 429,"message": "You exceeded your current quota, please check your plan and billing details.\n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: gemini-2.5-flash\nPlease retry in 27.6s.","status": "RESOURCE_EXHAUSTED"}}"#,
        );
        assert_eq!(refine(429, Some(&per_minute)), None);
        assert_eq!(refine(429, None), None);
    }

    #[test]
    fn retry_delay_from_the_body() {
        let body = r#"{"error": {"code": 429,"message": "x","status": "RESOURCE_EXHAUSTED","details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure","violations": [{"quotaMetric": "m","quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},{"@type": "type.googleapis.com/google.rpc.RetryInfo","retryDelay": "3.700s"}]}}"#;
        assert_eq!(retry_delay(body), Some(Duration::from_millis(3700)));
        assert_eq!(
            retry_delay(&format!("[{body}]")),
            Some(Duration::from_millis(3700))
        );
        assert_eq!(retry_delay(r#"{"error": {"code": 429}}"#), None);
        assert_eq!(retry_delay("<html>"), None);
    }
}
