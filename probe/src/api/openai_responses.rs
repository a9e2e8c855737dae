//! `openai-responses` and `azure-openai-responses`: the Responses API as pi-ai 0.82.1 sends it, and its stream.
//!
//! The request is the one `research/pi-requests.md` (sections 6 and 7) captured: `POST {base}/responses`, the
//! system prompt as an `input` item (`developer` for a reasoning model unless the catalog's `compat` says
//! `supportsDeveloperRole: false`, else `system`), the user content as `input_text` parts, `stream: true`,
//! `store: false`, `prompt_cache_key` = the conversation id, `max_output_tokens` never below 16 (OpenAI rejects
//! less), and one flat function tool (`strict: false` only where pi's compat says the provider takes `strict`).
//! Thinking off: `reasoning: {effort: <the catalog's "off" value, else "none">}` for a reasoning model, nothing
//! where the catalog maps "off" to null (gpt-5-mini: it cannot stop reasoning).
//!
//! `openai-responses` sends `authorization: Bearer <key>` and the affinity headers pi adds for the conversation:
//! `session_id` and `x-client-request-id` (OpenAI format), `x-session-id` (OpenRouter), or `x-client-request-id`
//! alone (`openai-nosession`).
//!
//! `azure-openai-responses` sends `api-key: <key>` and no affinity headers, to
//! `{base}/responses?api-version=<AZURE_OPENAI_API_VERSION, else v1>`, where the base is `AZURE_OPENAI_BASE_URL`,
//! else `https://<AZURE_OPENAI_RESOURCE_NAME>.openai.azure.com/openai/v1`, else the model's base URL; an Azure host
//! whose path is empty, `/openai` or `/openai/v1/responses` gets `/openai/v1`. The body's `model` is the deployment
//! name: the model id unless `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` (`id=deployment,...`) maps it. The probe reads these
//! variables from its own environment, as pi reads them from the Harness's: the base URL once, when the target is
//! built ([`crate::api::azure`]), the `api-version` and the deployment map when it builds the request
//! ([`azure_config`] takes the lookup, so tests inject values).
//!
//! The stream: the event's `type` (in the JSON, as the OpenAI SDK reads it) decides. A `response.output_item.added`
//! (or `.done`) whose item is a `function_call` with a name is the tool call; text, refusal and reasoning deltas are
//! text; `response.completed` and `response.incomplete` end the answer (their status, or the incomplete reason, is the
//! stop reason); `response.failed`, an `error` event, or any event with an `error` member is a provider error.
//!
//! Deviations from pi, on purpose:
//! - No `x-stainless-*` / `user-agent: OpenAI/JS` (or `AzureOpenAI/JS`) headers, no `accept-language`,
//!   `sec-fetch-mode` or `accept-encoding`: they describe pi's SDK and runtime, no server reads them for this call.
//!   The probe says `user-agent: jr2-probe/<version>`.
//! - `azure-openai-responses` ignores the plan's `tool_choice`, because pi's Azure request never carries one (its
//!   `toolChoice` option is dropped): the probe sends what a Turn sends.
//! - An `incomplete` answer whose reason is not `max_output_tokens` (`content_filter`) keeps its reason as the stop
//!   reason and reads as a stream that stopped on an error, not as out of tokens (pi calls every `incomplete` a
//!   `length` stop; the lines would then advise raising `maxTokens`, which would not help).
//! - No key: pi fails before it sends anything (`No API key for provider`), and so does the probe (key refused,
//!   without a request). A custom endpoint named by hand gets pi's custom-provider key `unused`.

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::{
    HttpRequest, ProtocolError, ProviderError, RequestError, StopKind, StreamEvent, StreamReader,
    ToolChoice, Wire,
};
use crate::api::azure;
use crate::contract::outcome::{Code, Outcome};
use crate::contract::verdict::Route;
use crate::framing::sse;
use crate::prompt;
use crate::target::Target;

/// The path appended to the base URL.
pub const PATH: &str = "/responses";

/// OpenAI rejects a `max_output_tokens` below this (pi raises the cap to it).
pub const MIN_OUTPUT_TOKENS: u64 = 16;

/// The `api-version` pi sends to Azure when `AZURE_OPENAI_API_VERSION` is not set.
pub const DEFAULT_AZURE_API_VERSION: &str = azure::DEFAULT_API_VERSION;

/// OpenAI's limit on `prompt_cache_key`, in characters (pi cuts the conversation id to it).
pub const PROMPT_CACHE_KEY_MAX_CHARS: usize = 64;

/// Which of the two APIs a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `openai-responses`.
    OpenAi,
    /// `azure-openai-responses`.
    Azure,
}

/// An environment lookup: the value of a variable, `None` when unset. pi treats an empty value as unset.
pub use crate::api::azure::Env;

/// The probe's own environment, empty values read as unset (pi's `getProviderEnvValue`).
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_value(env: Env<'_>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}

/// pi's compatibility settings of a Responses model, as far as the probe's one request uses them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compat {
    /// A reasoning model gets a `developer` item.
    pub supports_developer_role: bool,
    /// `openai` (`session_id` + `x-client-request-id`), `openrouter` (`x-session-id`), `openai-nosession`
    /// (`x-client-request-id` only). Azure sends none.
    pub session_affinity_format: String,
    /// `PI_CACHE_RETENTION=long` may add `prompt_cache_retention: "24h"`.
    pub supports_long_cache_retention: bool,
    /// The tool carries `strict: false`.
    pub supports_strict_mode: bool,
}

/// pi's `getCompat` for the Responses APIs: the catalog's `compat` over pi's defaults (strict mode defaults to off
/// for `openai-responses`, on for Azure).
pub fn compat(target: &Target, flavor: Flavor) -> Compat {
    let f = &target.facts;
    let flag =
        |name: &str, default: bool| f.compat(name).and_then(Value::as_bool).unwrap_or(default);
    let provider = f.provider.as_deref().unwrap_or("");
    let detected = if provider == "openrouter" || target.base_url.as_str().contains("openrouter.ai")
    {
        "openrouter"
    } else {
        "openai"
    };
    Compat {
        supports_developer_role: flag("supportsDeveloperRole", true),
        session_affinity_format: f
            .compat("sessionAffinityFormat")
            .and_then(Value::as_str)
            .unwrap_or(detected)
            .to_owned(),
        supports_long_cache_retention: flag("supportsLongCacheRetention", true),
        supports_strict_mode: flag("supportsStrictMode", flavor == Flavor::Azure),
    }
}

/// The conversation id as `prompt_cache_key`: at most 64 characters.
pub fn prompt_cache_key(session_id: &str) -> String {
    session_id
        .chars()
        .take(PROMPT_CACHE_KEY_MAX_CHARS)
        .collect()
}

/// The deployment an Azure request names: the model id, unless `AZURE_OPENAI_DEPLOYMENT_NAME_MAP` maps it.
pub fn deployment_name(model_id: &str, env: Env<'_>) -> String {
    let map = env_value(env, "AZURE_OPENAI_DEPLOYMENT_NAME_MAP").unwrap_or_default();
    let mut found = None;
    for entry in map.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let mut parts = entry.split('=');
        let (Some(id), Some(deployment)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (id, deployment) = (id.trim(), deployment.trim());
        if !id.is_empty() && !deployment.is_empty() && id == model_id {
            // A later entry for the same id wins, as in a JS Map.
            found = Some(deployment.to_owned());
        }
    }
    found.unwrap_or_else(|| model_id.to_owned())
}

/// The `tool_choice` value for the plan's choice (`None` when a Turn sends none).
pub fn tool_choice(choice: ToolChoice) -> Option<Value> {
    Some(match choice {
        ToolChoice::Unset => return None,
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Named => json!({"type": "function", "name": prompt::TOOL_NAME}),
    })
}

/// The body pi sends for `target` on `flavor`, thinking off. `env` supplies `PI_CACHE_RETENTION` and (Azure)
/// `AZURE_OPENAI_DEPLOYMENT_NAME_MAP`.
pub fn body_for(target: &Target, flavor: Flavor, env: Env<'_>) -> Value {
    let c = compat(target, flavor);
    let facts = &target.facts;
    let role = if facts.reasoning && c.supports_developer_role {
        "developer"
    } else {
        "system"
    };
    let model = match flavor {
        Flavor::OpenAi => target.id.clone(),
        Flavor::Azure => deployment_name(&target.id, env),
    };
    let mut tool = json!({
        "type": "function",
        "name": prompt::TOOL_NAME,
        "description": prompt::TOOL_DESCRIPTION,
        "parameters": prompt::tool_parameters(),
    });
    if c.supports_strict_mode {
        tool["strict"] = json!(false);
    }
    let mut body = json!({
        "model": model,
        "input": [
            {"role": role, "content": prompt::SYSTEM},
            {"role": "user", "content": [{"type": "input_text", "text": prompt::USER}]}
        ],
        "stream": true,
        "prompt_cache_key": prompt_cache_key(&target.session_id),
        "store": false,
        "max_output_tokens": target.max_tokens.max(MIN_OUTPUT_TOKENS),
        "tools": [tool],
    });
    let provider = facts.provider.as_deref().unwrap_or("");
    if flavor == Flavor::OpenAi {
        if c.supports_long_cache_retention
            && env_value(env, "PI_CACHE_RETENTION").as_deref() == Some("long")
        {
            body["prompt_cache_retention"] = json!("24h");
        }
        if let Some(choice) = tool_choice(target.tool_choice) {
            body["tool_choice"] = choice;
        }
    }
    if facts.reasoning {
        let copilot = flavor == Flavor::OpenAi && provider == "github-copilot";
        if !copilot && !facts.thinking_off_is_null() {
            body["reasoning"] = json!({"effort": facts.thinking_off_value().unwrap_or("none")});
        }
        if flavor == Flavor::OpenAi && provider == "xai" {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
    }
    body
}

/// Where an Azure request goes, resolved as pi resolves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AzureConfig {
    /// The base URL (normalized to `/openai/v1` on an Azure host).
    pub base_url: reqwest::Url,
    /// The `api-version` query value.
    pub api_version: String,
}

impl AzureConfig {
    /// `{base}/responses?api-version=<v>` (the SDK replaces any query of the base URL with its own).
    pub fn url(&self) -> reqwest::Url {
        let mut url = super::endpoint(&self.base_url, PATH);
        url.set_query(None);
        url.query_pairs_mut()
            .append_pair("api-version", &self.api_version);
        url
    }
}

fn config_error(message: String) -> RequestError {
    RequestError {
        outcome: Outcome::Unreachable,
        code: Code::Unreachable,
        message,
    }
}

/// Where an Azure request goes: the target's base URL, which [`crate::api::azure`] resolved when the target was
/// built, and the `api-version` of the environment. A target whose base URL is still the placeholder (nothing named
/// Azure's when it was built) is resolved here, so the error says why (a Turn fails the same way before it sends).
pub fn azure_config(target: &Target, env: Env<'_>) -> Result<AzureConfig, RequestError> {
    let base_url = if azure::is_placeholder(&target.base_url) {
        azure::base_url(&target.base_url, env)
    } else {
        azure::normalize(target.base_url.as_str())
    }
    .map_err(config_error)?;
    Ok(AzureConfig {
        base_url,
        api_version: azure::api_version(env),
    })
}

/// pi's `normalizeAzureBaseUrl` ([`azure::normalize`]), its error as a request's.
pub fn normalize_azure_base_url(text: &str) -> Result<reqwest::Url, RequestError> {
    azure::normalize(text).map_err(config_error)
}

/// The key a Turn sends, or why it sends nothing.
fn api_key(target: &Target, flavor: Flavor) -> Result<&str, RequestError> {
    if let Some(key) = target.key_value().filter(|k| !k.is_empty()) {
        return Ok(key);
    }
    let provider = match &target.route {
        // pi's custom provider answers the literal `unused` when no key is configured.
        Route::Custom { .. } => return Ok("unused"),
        Route::Catalog { provider, .. } => provider.as_str(),
    };
    // openai-responses sends `unused` when the catalog's headers carry the authorization themselves.
    let header_auth = flavor == Flavor::OpenAi
        && target
            .facts
            .headers
            .as_ref()
            .and_then(Value::as_object)
            .is_some_and(|h| {
                h.iter().any(|(name, value)| {
                    let name = name.to_ascii_lowercase();
                    (name == "authorization" || name == "cf-aig-authorization")
                        && value.as_str().is_some_and(|v| !v.trim().is_empty())
                })
            });
    if header_auth {
        return Ok("unused");
    }
    let env = match (&target.key, &target.route) {
        (Some(k), _) => k.env.clone(),
        (None, Route::Catalog { key_env, .. }) => key_env.clone(),
        (None, Route::Custom { .. }) => String::new(),
    };
    Err(RequestError {
        outcome: Outcome::KeyRefused,
        code: Code::KeyRefused,
        message: format!(
            "no key for provider {provider}: {env} holds no value, so a Turn fails before it sends anything"
        ),
    })
}

/// The request of one try on `flavor`, reading the environment through `env`.
pub fn request_with(
    target: &Target,
    flavor: Flavor,
    env: Env<'_>,
) -> Result<HttpRequest, RequestError> {
    let key = api_key(target, flavor)?;
    let mut headers = HeaderMap::new();
    let url = match flavor {
        Flavor::OpenAi => {
            // Cloudflare AI Gateway: pi's auth puts the key in `cf-aig-authorization` and removes `authorization`.
            let name = if target.facts.provider.as_deref() == Some("cloudflare-ai-gateway") {
                HeaderName::from_static("cf-aig-authorization")
            } else {
                AUTHORIZATION
            };
            headers.insert(name, super::secret_header(&format!("Bearer {key}"))?);
            super::endpoint(&target.base_url, PATH)
        }
        Flavor::Azure => {
            let config = azure_config(target, env)?;
            headers.insert(
                HeaderName::from_static("api-key"),
                super::secret_header(key)?,
            );
            config.url()
        }
    };
    // The catalog's headers come after the auth header, as the SDK's default headers do.
    super::catalog_headers(&mut headers, target);
    if target.facts.provider.as_deref() == Some("github-copilot") {
        // pi's Copilot headers for a request whose last message is the user's.
        super::header(&mut headers, "x-initiator", "user");
        super::header(&mut headers, "openai-intent", "conversation-edits");
    }
    if flavor == Flavor::OpenAi {
        let id = target.session_id.as_str();
        if !id.is_empty() {
            match compat(target, flavor).session_affinity_format.as_str() {
                "openrouter" => super::header(&mut headers, "x-session-id", id),
                "openai" => {
                    super::header(&mut headers, "session_id", id);
                    super::header(&mut headers, "x-client-request-id", id);
                }
                _ => super::header(&mut headers, "x-client-request-id", id),
            }
        }
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    Ok(HttpRequest {
        url,
        headers,
        body: body_for(target, flavor, env).to_string().into_bytes(),
    })
}

/// Reads a Responses stream.
#[derive(Debug, Default)]
pub struct Reader {
    /// A terminal event (`response.completed`, `.incomplete`, `.failed`, `error`) was seen.
    terminal: bool,
}

fn scalar(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `code: message`, as pi words a stream's error, with the code kept for classification.
fn stream_error(
    code: Option<String>,
    kind: Option<String>,
    message: Option<String>,
) -> ProviderError {
    let message = message.unwrap_or_else(|| "no message".to_owned());
    let message = match &code {
        Some(c) if !message.starts_with(c.as_str()) => format!("{c}: {message}"),
        _ => message,
    };
    ProviderError {
        message,
        kind,
        code,
    }
}

/// The stop reason of a finished response: its status, or for `incomplete` the reason it gives.
fn stop_reason(response: Option<&Value>, default: &str) -> String {
    let status = response
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or(default);
    if status == "incomplete" {
        return response
            .and_then(|r| r.pointer("/incomplete_details/reason"))
            .and_then(Value::as_str)
            .filter(|r| !r.is_empty())
            .unwrap_or("incomplete")
            .to_owned();
    }
    status.to_owned()
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
        if data.starts_with("[DONE]") {
            if self.terminal {
                out.push(StreamEvent::Done);
                return Ok(());
            }
            return Err(ProtocolError(
                "the stream ended ([DONE]) before a terminal response event (response.completed, response.incomplete or response.failed)"
                    .to_owned(),
            ));
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| ProtocolError(format!("a stream event is not a Responses event ({e})")))?;
        // The SDK throws on any event that carries an `error` member.
        if let Some(error) = value.get("error").filter(|e| !e.is_null() && *e != false) {
            self.terminal = true;
            let e = super::error_body::from_value(&json!({ "error": error }));
            out.push(StreamEvent::Error(stream_error(
                e.code,
                e.kind,
                Some(e.message),
            )));
            return Ok(());
        }
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(event.event.as_str());
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                let item = value.get("item");
                let is_call = item
                    .and_then(|i| i.get("type"))
                    .and_then(Value::as_str)
                    .is_some_and(|t| t == "function_call" || t == "custom_tool_call");
                let name = item
                    .and_then(|i| i.get("name"))
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty());
                if let (true, Some(name)) = (is_call, name) {
                    out.push(StreamEvent::ToolCall {
                        name: name.to_owned(),
                    });
                    if kind == "response.output_item.done" {
                        out.push(StreamEvent::ToolCallEnd);
                    }
                }
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                if let Some(delta) = value
                    .get("delta")
                    .and_then(Value::as_str)
                    .filter(|d| !d.is_empty())
                {
                    out.push(StreamEvent::ToolArguments(delta.to_owned()));
                }
            }
            "response.function_call_arguments.done" => out.push(StreamEvent::ToolCallEnd),
            "response.output_text.delta"
            | "response.refusal.delta"
            | "response.reasoning_summary_text.delta"
            | "response.reasoning_text.delta" => {
                if let Some(delta) = value
                    .get("delta")
                    .and_then(Value::as_str)
                    .filter(|d| !d.is_empty())
                {
                    out.push(if kind.starts_with("response.reasoning") {
                        StreamEvent::Reasoning(delta.to_owned())
                    } else {
                        StreamEvent::Text(delta.to_owned())
                    });
                }
            }
            "response.completed" | "response.incomplete" => {
                self.terminal = true;
                let default = kind.trim_start_matches("response.");
                out.push(StreamEvent::Stop(stop_reason(
                    value.get("response"),
                    default,
                )));
                out.push(StreamEvent::Done);
            }
            "response.failed" => {
                self.terminal = true;
                let response = value.get("response");
                let error = response
                    .and_then(|r| r.get("error"))
                    .filter(|e| e.is_object());
                let e = match error {
                    Some(error) => stream_error(
                        scalar(error.get("code")),
                        scalar(error.get("type")),
                        scalar(error.get("message")),
                    ),
                    None => {
                        let reason = response
                            .and_then(|r| r.pointer("/incomplete_details/reason"))
                            .and_then(Value::as_str);
                        ProviderError {
                            message: reason.map_or_else(
                                || "the response failed without error details".to_owned(),
                                |r| format!("incomplete: {r}"),
                            ),
                            ..ProviderError::default()
                        }
                    }
                };
                out.push(StreamEvent::Error(e));
            }
            "error" => {
                self.terminal = true;
                out.push(StreamEvent::Error(stream_error(
                    scalar(value.get("code")),
                    None,
                    scalar(value.get("message")),
                )));
            }
            _ => {}
        }
        Ok(())
    }
}

fn stop_kind(reason: &str) -> StopKind {
    match reason {
        "max_output_tokens" | "incomplete" => StopKind::Length,
        // pi reads the two in-flight statuses as a normal stop.
        "completed" | "in_progress" | "queued" => StopKind::Normal,
        _ => StopKind::Other,
    }
}

/// A model that does not exist (OpenAI answers 400 or 404 `model_not_found`; Azure 404 `DeploymentNotFound`), and
/// OpenAI's 403 for a country it does not serve, which is no key problem.
fn refine(status: u16, error: Option<&ProviderError>) -> Option<(Outcome, Code)> {
    let code = error?.code.as_deref()?;
    match (status, code) {
        (400 | 404, "model_not_found" | "DeploymentNotFound") => {
            Some((Outcome::Http, Code::ModelNotFound))
        }
        (403, "unsupported_country_region_territory") => Some((Outcome::Http, Code::HttpError)),
        _ => None,
    }
}

/// The wire of `openai-responses` and `azure-openai-responses`, which differ only in their request.
#[derive(Debug)]
pub struct OpenAiResponses(pub Flavor);

impl Wire for OpenAiResponses {
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError> {
        request_with(target, self.0, &process_env)
    }

    fn reader(&self) -> Box<dyn StreamReader> {
        Box::new(Reader::default())
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::api_kind::ApiKind;
    use crate::target::Facts;
    use std::collections::HashMap;

    const SESSION: &str = "01970000-0000-7000-8000-000000000001";

    fn gpt5_mini(api: ApiKind) -> Target {
        let azure = api == ApiKind::AzureOpenAiResponses;
        let (provider, key_env, base_url) = if azure {
            (
                "azure-openai-responses",
                "AZURE_OPENAI_API_KEY",
                "https://azure-openai.invalid/openai/v1",
            )
        } else {
            ("openai", "OPENAI_API_KEY", "https://api.openai.com/v1")
        };
        Target::test(api)
            .model(format!("{provider}/gpt-5-mini"))
            .base_url(base_url)
            .catalog(provider, key_env, true)
            .key(key_env, "sk-test-0123456789abcdef")
            .max_tokens(128_000)
            .facts(Facts {
                provider: Some(provider.to_owned()),
                reasoning: true,
                // As pi's catalog has gpt-5-mini: thinking cannot be turned off.
                thinking_level_map: Some(if azure {
                    json!({"off": null})
                } else {
                    json!({"off": null, "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": null, "max": null})
                }),
                compat: Some(if azure {
                    json!({"supportsOpenAIGrammarTools": true})
                } else {
                    json!({"supportsStrictMode": true, "supportsOpenAIGrammarTools": true})
                }),
                headers: None,
                context_window: None,
            })
            .session_id(SESSION)
    }

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    fn body_json(req: &HttpRequest) -> Value {
        serde_json::from_slice(&req.body).unwrap()
    }

    fn hdr<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
        req.headers.get(name).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn openai_body_is_pis_capture() {
        let t = gpt5_mini(ApiKind::OpenAiResponses);
        let b = body_for(&t, Flavor::OpenAi, &no_env);
        let expected: Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/pi-bodies/openai-responses-gpt-5-mini.json"
        ))
        .unwrap();
        assert_eq!(expected["prompt_cache_key"], SESSION);
        assert_eq!(b, expected);
    }

    #[test]
    fn azure_body_is_pis_capture_with_the_deployment() {
        let t = gpt5_mini(ApiKind::AzureOpenAiResponses);
        let openai = body_for(
            &gpt5_mini(ApiKind::OpenAiResponses),
            Flavor::OpenAi,
            &no_env,
        );
        let b = body_for(&t, Flavor::Azure, &no_env);
        assert_eq!(
            b, openai,
            "Azure's body is OpenAI's (strict defaults on there)"
        );
        let env = env_of(&[(
            "AZURE_OPENAI_DEPLOYMENT_NAME_MAP",
            " gpt-4.1=d1 , gpt-5-mini=mini-prod=x,bad, gpt-5-mini = mini-eu ",
        )]);
        assert_eq!(body_for(&t, Flavor::Azure, &env)["model"], "mini-eu");
        assert_eq!(deployment_name("gpt-4.1", &env), "d1");
        assert_eq!(deployment_name("o3", &env), "o3");
        let env = env_of(&[("AZURE_OPENAI_DEPLOYMENT_NAME_MAP", "gpt-5-mini=mini-prod=x")]);
        assert_eq!(deployment_name("gpt-5-mini", &env), "mini-prod");
    }

    #[test]
    fn thinking_off_role_strict_and_cap() {
        let mut t = gpt5_mini(ApiKind::OpenAiResponses);
        // gpt-5.4-mini maps off to "none".
        t.facts.thinking_level_map = Some(json!({"off": "none", "low": "low"}));
        let b = body_for(&t, Flavor::OpenAi, &no_env);
        assert_eq!(b["reasoning"], json!({"effort": "none"}));
        assert!(b.get("include").is_none());
        // No map at all: pi sends "none".
        t.facts.thinking_level_map = None;
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &no_env)["reasoning"],
            json!({"effort": "none"})
        );
        // A map without "off": still "none".
        t.facts.thinking_level_map = Some(json!({"low": "low"}));
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &no_env)["reasoning"],
            json!({"effort": "none"})
        );
        // Copilot sends nothing; xAI adds the encrypted reasoning include.
        t.facts.provider = Some("github-copilot".into());
        assert!(
            body_for(&t, Flavor::OpenAi, &no_env)
                .get("reasoning")
                .is_none()
        );
        t.facts.provider = Some("xai".into());
        t.facts.compat = Some(json!({"supportsLongCacheRetention": false}));
        let b = body_for(&t, Flavor::OpenAi, &no_env);
        assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
        assert!(
            b["tools"][0].get("strict").is_none(),
            "strict only where compat allows it"
        );
        // A non-reasoning model: system role, no reasoning field.
        t.facts.reasoning = false;
        t.facts.thinking_level_map = Some(json!({"off": null}));
        let b = body_for(&t, Flavor::OpenAi, &no_env);
        assert_eq!(b["input"][0]["role"], "system");
        assert!(b.get("reasoning").is_none() && b.get("include").is_none());
        // supportsDeveloperRole: false.
        t.facts.reasoning = true;
        t.facts.compat = Some(json!({"supportsDeveloperRole": false}));
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &no_env)["input"][0]["role"],
            "system"
        );
        // The cap: never below 16.
        t.max_tokens = 1;
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &no_env)["max_output_tokens"],
            16
        );
        t.max_tokens = 17;
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &no_env)["max_output_tokens"],
            17
        );
    }

    #[test]
    fn azure_thinking_off_ignores_provider_quirks() {
        let mut t = gpt5_mini(ApiKind::AzureOpenAiResponses);
        t.facts.thinking_level_map = None;
        let b = body_for(&t, Flavor::Azure, &no_env);
        assert_eq!(b["reasoning"], json!({"effort": "none"}));
        t.facts.compat = Some(json!({"supportsStrictMode": false}));
        assert!(
            body_for(&t, Flavor::Azure, &no_env)["tools"][0]
                .get("strict")
                .is_none()
        );
    }

    #[test]
    fn cache_key_and_retention() {
        let mut t = gpt5_mini(ApiKind::OpenAiResponses);
        t.session_id = "x".repeat(70);
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &no_env)["prompt_cache_key"],
            "x".repeat(64)
        );
        let long = env_of(&[("PI_CACHE_RETENTION", "long")]);
        assert_eq!(
            body_for(&t, Flavor::OpenAi, &long)["prompt_cache_retention"],
            "24h"
        );
        assert!(
            body_for(&t, Flavor::Azure, &long)
                .get("prompt_cache_retention")
                .is_none()
        );
        t.facts.compat = Some(json!({"supportsLongCacheRetention": false}));
        assert!(
            body_for(&t, Flavor::OpenAi, &long)
                .get("prompt_cache_retention")
                .is_none()
        );
    }

    #[test]
    fn tool_choice_when_the_plan_sets_one() {
        let mut t = gpt5_mini(ApiKind::OpenAiResponses);
        for (choice, expected) in [
            (ToolChoice::Auto, json!("auto")),
            (ToolChoice::None, json!("none")),
            (ToolChoice::Required, json!("required")),
            (
                ToolChoice::Named,
                json!({"type": "function", "name": "probe"}),
            ),
        ] {
            t.tool_choice = choice;
            assert_eq!(
                body_for(&t, Flavor::OpenAi, &no_env)["tool_choice"],
                expected
            );
            assert!(
                body_for(&t, Flavor::Azure, &no_env)
                    .get("tool_choice")
                    .is_none(),
                "pi's Azure request carries no tool_choice"
            );
        }
    }

    #[test]
    fn openai_request_headers() {
        let t = gpt5_mini(ApiKind::OpenAiResponses);
        let r = request_with(&t, Flavor::OpenAi, &no_env).unwrap();
        assert_eq!(r.url.as_str(), "https://api.openai.com/v1/responses");
        assert_eq!(
            hdr(&r, "authorization"),
            Some("Bearer sk-test-0123456789abcdef")
        );
        assert!(r.headers["authorization"].is_sensitive());
        assert_eq!(hdr(&r, "session_id"), Some(SESSION));
        assert_eq!(hdr(&r, "x-client-request-id"), Some(SESSION));
        assert!(hdr(&r, "x-session-id").is_none() && hdr(&r, "api-key").is_none());
        assert_eq!(hdr(&r, "content-type"), Some("application/json"));
        assert_eq!(hdr(&r, "accept"), Some("application/json"));
        assert_eq!(body_json(&r)["model"], "gpt-5-mini");
    }

    #[test]
    fn affinity_formats() {
        let mut t = gpt5_mini(ApiKind::OpenAiResponses);
        t.facts.provider = Some("openrouter".into());
        let r = request_with(&t, Flavor::OpenAi, &no_env).unwrap();
        assert_eq!(hdr(&r, "x-session-id"), Some(SESSION));
        assert!(hdr(&r, "session_id").is_none() && hdr(&r, "x-client-request-id").is_none());
        t.facts.provider = Some("opencode".into());
        t.facts.compat = Some(json!({"sessionAffinityFormat": "openai-nosession"}));
        let r = request_with(&t, Flavor::OpenAi, &no_env).unwrap();
        assert_eq!(hdr(&r, "x-client-request-id"), Some(SESSION));
        assert!(hdr(&r, "session_id").is_none() && hdr(&r, "x-session-id").is_none());
    }

    #[test]
    fn catalog_headers_may_carry_auth_and_follow_the_key() {
        let mut t = gpt5_mini(ApiKind::OpenAiResponses);
        t.key = None;
        let e = request_with(&t, Flavor::OpenAi, &no_env).unwrap_err();
        assert_eq!((e.outcome, e.code), (Outcome::KeyRefused, Code::KeyRefused));
        assert_eq!(
            e.message,
            "no key for provider openai: OPENAI_API_KEY holds no value, so a Turn fails before it sends anything"
        );
        t.facts.headers = Some(json!({"cf-aig-authorization": "Bearer gw"}));
        let r = request_with(&t, Flavor::OpenAi, &no_env).unwrap();
        assert_eq!(hdr(&r, "authorization"), Some("Bearer unused"));
        assert_eq!(hdr(&r, "cf-aig-authorization"), Some("Bearer gw"));
        t.route = Route::Custom {
            api_key_set: false,
            max_tokens_set: true,
        };
        t.facts.headers = None;
        let r = request_with(&t, Flavor::OpenAi, &no_env).unwrap();
        assert_eq!(hdr(&r, "authorization"), Some("Bearer unused"));
    }

    #[test]
    fn azure_request_url_and_key() {
        let t = gpt5_mini(ApiKind::AzureOpenAiResponses);
        let e = request_with(&t, Flavor::Azure, &no_env).unwrap_err();
        assert_eq!(e.outcome, Outcome::Unreachable);
        assert!(
            e.message.starts_with("no Azure OpenAI base URL"),
            "{}",
            e.message
        );

        let env = env_of(&[("AZURE_OPENAI_RESOURCE_NAME", "contoso")]);
        let r = request_with(&t, Flavor::Azure, &env).unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://contoso.openai.azure.com/openai/v1/responses?api-version=v1"
        );
        assert_eq!(hdr(&r, "api-key"), Some("sk-test-0123456789abcdef"));
        assert!(r.headers["api-key"].is_sensitive());
        for absent in [
            "authorization",
            "session_id",
            "x-client-request-id",
            "x-session-id",
        ] {
            assert!(hdr(&r, absent).is_none(), "{absent}");
        }
        assert_eq!(body_json(&r)["prompt_cache_key"], SESSION);

        let env = env_of(&[
            (
                "AZURE_OPENAI_BASE_URL",
                " https://contoso.cognitiveservices.azure.com/openai/ ",
            ),
            ("AZURE_OPENAI_RESOURCE_NAME", "ignored"),
            ("AZURE_OPENAI_API_VERSION", "2025-04-01-preview"),
        ]);
        let r = request_with(&t, Flavor::Azure, &env).unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://contoso.cognitiveservices.azure.com/openai/v1/responses?api-version=2025-04-01-preview"
        );

        // The model's base URL when the environment names none; a non-Azure host keeps its path.
        let mut t = t;
        t.base_url = reqwest::Url::parse("https://127.0.0.1:8443/openai/v1/").unwrap();
        let r = request_with(&t, Flavor::Azure, &no_env).unwrap();
        assert_eq!(
            r.url.as_str(),
            "https://127.0.0.1:8443/openai/v1/responses?api-version=v1"
        );
        // Empty values are unset.
        let env = env_of(&[
            ("AZURE_OPENAI_BASE_URL", ""),
            ("AZURE_OPENAI_API_VERSION", ""),
        ]);
        assert_eq!(
            request_with(&t, Flavor::Azure, &env).unwrap().url.as_str(),
            "https://127.0.0.1:8443/openai/v1/responses?api-version=v1"
        );
        t.key = None;
        let e = request_with(&t, Flavor::Azure, &no_env).unwrap_err();
        assert_eq!(e.outcome, Outcome::KeyRefused);
        assert!(e.message.contains("AZURE_OPENAI_API_KEY"), "{}", e.message);
    }

    #[test]
    fn azure_base_url_normalization() {
        let n = |s: &str| normalize_azure_base_url(s).unwrap().to_string();
        assert_eq!(
            n("https://r.openai.azure.com"),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            n("https://r.openai.azure.com/"),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            n("https://r.openai.azure.com/openai"),
            "https://r.openai.azure.com/openai/v1"
        );
        assert_eq!(
            n("https://r.services.ai.azure.com/openai/v1/responses?api-version=x"),
            "https://r.services.ai.azure.com/openai/v1"
        );
        assert_eq!(
            n("https://r.openai.azure.com/openai/deployments/d"),
            "https://r.openai.azure.com/openai/deployments/d"
        );
        assert_eq!(
            n("https://proxy.example/azure"),
            "https://proxy.example/azure"
        );
        let e = normalize_azure_base_url("not a url").unwrap_err();
        assert_eq!(e.outcome, Outcome::Unreachable);
        let c = AzureConfig {
            base_url: reqwest::Url::parse("https://gw.example/openai/v1?x=1").unwrap(),
            api_version: "v1".into(),
        };
        assert_eq!(
            c.url().as_str(),
            "https://gw.example/openai/v1/responses?api-version=v1"
        );
    }

    fn read_all(lines: &str) -> Result<Vec<StreamEvent>, ProtocolError> {
        let mut decoder = sse::Decoder::default();
        let mut events = Vec::new();
        decoder.push(lines.as_bytes(), &mut events).unwrap();
        decoder.finish(&mut events).unwrap();
        let mut reader = Reader::default();
        let mut out = Vec::new();
        for e in &events {
            reader.on_event(e, &mut out)?;
        }
        Ok(out)
    }

    /// A tool-call stream as OpenAI sends it for gpt-5-mini (ids shortened).
    const TOOL_CALL_STREAM: &str = r#"event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_68a1","object":"response","created_at":1755000000,"status":"in_progress","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":128000,"model":"gpt-5-mini-2025-08-07","output":[],"parallel_tool_calls":true,"previous_response_id":null,"prompt_cache_key":"01970000-0000-7000-8000-000000000001","reasoning":{"effort":"medium","summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[{"type":"function","description":"Report that this model can call tools. Call it once.","name":"probe","parameters":{"type":"object","required":["status"],"properties":{"status":{"type":"string","enum":["ready"],"description":"Always \"ready\"."}}},"strict":false}],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_68a1","object":"response","status":"in_progress","output":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_68a1","type":"reasoning","summary":[]}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":3,"output_index":0,"item":{"id":"rs_68a1","type":"reasoning","summary":[]}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"fc_68a1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_Xq9","name":"probe"}}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":5,"item_id":"fc_68a1","output_index":1,"delta":"{\"status\":\"ready\"}","obfuscation":"aB3"}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":6,"item_id":"fc_68a1","output_index":1,"arguments":"{\"status\":\"ready\"}"}

"#;

    #[test]
    fn function_call_item_is_the_tool_call() {
        let ev = read_all(TOOL_CALL_STREAM).unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::ToolCall {
                    name: "probe".into()
                },
                StreamEvent::ToolArguments("{\"status\":\"ready\"}".into()),
                StreamEvent::ToolCallEnd,
            ]
        );
    }

    #[test]
    fn a_call_seen_only_when_done_still_counts() {
        let ev = read_all(
            "data: {\"type\":\"response.output_item.done\",\"sequence_number\":4,\"output_index\":1,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":\"{}\",\"call_id\":\"call_1\",\"name\":\"probe\"}}\n\n",
        )
        .unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::ToolCall {
                    name: "probe".into()
                },
                StreamEvent::ToolCallEnd,
            ]
        );
        // A function_call item without a name is no call.
        let ev = read_all(
            "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"function_call\",\"name\":\"\"}}\n\n",
        )
        .unwrap();
        assert!(ev.is_empty());
    }

    #[test]
    fn text_answer_then_completed() {
        let stream = r#"event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Ready","logprobs":[]}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":5,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"hmm"}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","incomplete_details":null,"output":[],"usage":{"input_tokens":70,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":75}}}

"#;
        assert_eq!(
            read_all(stream).unwrap(),
            vec![
                StreamEvent::Text("Ready".into()),
                StreamEvent::Reasoning("hmm".into()),
                StreamEvent::Stop("completed".into()),
                StreamEvent::Done,
            ]
        );
        let wire = OpenAiResponses(Flavor::OpenAi);
        assert_eq!(wire.stop_kind("completed"), StopKind::Normal);
    }

    #[test]
    fn incomplete_is_a_length_stop() {
        let ev = read_all(
            "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"sequence_number\":7,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"output\":[{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}],\"usage\":{\"input_tokens\":70,\"output_tokens\":16,\"output_tokens_details\":{\"reasoning_tokens\":16},\"total_tokens\":86}}}\n\n",
        )
        .unwrap();
        assert_eq!(
            ev,
            vec![
                StreamEvent::Stop("max_output_tokens".into()),
                StreamEvent::Done
            ]
        );
        let wire = OpenAiResponses(Flavor::Azure);
        assert_eq!(wire.stop_kind("max_output_tokens"), StopKind::Length);
        assert_eq!(wire.stop_kind("incomplete"), StopKind::Length);
        assert_eq!(wire.stop_kind("content_filter"), StopKind::Other);
        assert_eq!(wire.stop_kind("failed"), StopKind::Other);
        // No details: "incomplete".
        let ev = read_all(
            "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\"}}\n\n",
        )
        .unwrap();
        assert_eq!(ev[0], StreamEvent::Stop("incomplete".into()));
    }

    #[test]
    fn failed_and_error_events() {
        let ev = read_all(
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed to generate a response.\"},\"incomplete_details\":null,\"output\":[]}}\n\n",
        )
        .unwrap();
        let [StreamEvent::Error(e)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(
            e.message,
            "server_error: The model failed to generate a response."
        );
        assert_eq!(e.code.as_deref(), Some("server_error"));
        assert!(!e.is_overload() && !e.is_quota_exhausted());

        let ev = read_all(
            "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Rate limit reached.\"}}}\n\n",
        )
        .unwrap();
        let [StreamEvent::Error(e)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert!(e.is_overload());

        let ev = read_all(
            "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_is_overloaded\",\"message\":\"The server is overloaded. Please try again later.\",\"param\":null}\n\n",
        )
        .unwrap();
        let [StreamEvent::Error(e)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert_eq!(
            e.message,
            "server_is_overloaded: The server is overloaded. Please try again later."
        );
        assert!(e.is_overload());

        // An event with an `error` member (what the SDK throws on), and a failure without details.
        let ev = read_all(
            "data: {\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}\n\n",
        )
        .unwrap();
        let [StreamEvent::Error(e)] = ev.as_slice() else {
            panic!("{ev:?}")
        };
        assert!(e.is_quota_exhausted());
        assert_eq!(
            e.message,
            "insufficient_quota: You exceeded your current quota"
        );
        let ev = read_all("data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":null}}\n\n")
            .unwrap();
        assert_eq!(
            ev,
            vec![StreamEvent::Error(ProviderError {
                message: "the response failed without error details".into(),
                ..ProviderError::default()
            })]
        );
    }

    #[test]
    fn done_without_a_terminal_event_and_garbage() {
        // A Chat Completions stream on /responses: its chunks say nothing, and [DONE] comes without a terminal event.
        let e =
            read_all("data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
                .unwrap_err();
        assert!(e.0.contains("before a terminal response event"), "{e}");
        assert!(read_all("data: {not json\n\n").is_err());
        // After a terminal event, [DONE] is the end.
        let ev = read_all(
            "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\ndata: [DONE]\n\n",
        )
        .unwrap();
        assert_eq!(ev.last(), Some(&StreamEvent::Done));
        // Events the probe does not need are ignored; an empty data line too.
        assert!(
            read_all("event: keepalive\ndata: {\"type\":\"keepalive\",\"sequence_number\":3}\n\n")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn model_not_found_and_region() {
        let wire = OpenAiResponses(Flavor::OpenAi);
        let err = |body: &str| crate::api::error_body::parse(body).unwrap();
        let missing = err(
            r#"{"error":{"message":"The requested model 'gpt-99' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}"#,
        );
        assert_eq!(
            wire.refine_error(400, &HeaderMap::new(), Some(&missing)),
            Some((Outcome::Http, Code::ModelNotFound))
        );
        let deployment = err(
            r#"{"error":{"code":"DeploymentNotFound","message":"The API deployment for this resource does not exist."}}"#,
        );
        assert_eq!(
            OpenAiResponses(Flavor::Azure).refine_error(404, &HeaderMap::new(), Some(&deployment)),
            Some((Outcome::Http, Code::ModelNotFound))
        );
        let region = err(
            r#"{"error":{"code":"unsupported_country_region_territory","message":"Country, region, or territory not supported","param":null,"type":"request_forbidden"}}"#,
        );
        assert_eq!(
            wire.refine_error(403, &HeaderMap::new(), Some(&region)),
            Some((Outcome::Http, Code::HttpError))
        );
        assert_eq!(
            wire.refine_error(401, &HeaderMap::new(), Some(&missing)),
            None
        );
        assert_eq!(wire.refine_error(500, &HeaderMap::new(), None), None);
    }
}
