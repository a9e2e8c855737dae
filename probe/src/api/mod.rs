//! The wires: for each API kind of pi's catalog, the request a Turn sends and how its answer is read.
//!
//! The probe dispatches on the model's `api`, never on the provider's name: pi maps 37 providers onto 9 API kinds,
//! and a provider can mix kinds per model. Each kind has a module that builds the request body pi-ai 0.82.1 sends
//! for it and reads its stream into [`StreamEvent`]s, so the rest of the probe (retries, deadlines,
//! classification, lines) does not care which wire it is on.

pub mod anthropic_messages;
pub mod azure;
pub mod bedrock;
pub mod error_body;
pub mod google;
pub mod mistral;
pub mod openai_completions;
pub mod openai_responses;

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

pub use crate::contract::api_kind::{ApiKind, ToolChoice, UnknownApiKind};
// The framings under the paths they had before they got a room of their own.
use crate::contract::outcome::{Code, Outcome};
pub use crate::framing::{FrameDecoder, Framing, aws_event_stream};
use crate::target::Target;

/// What the reader of a stream saw in one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// A tool call began and names a tool. The verdict waits for its arguments ([`StreamEvent::ToolArguments`]) to
    /// be complete, or for the call's end.
    ToolCall {
        /// The tool's name as the model sent it.
        name: String,
    },
    /// A piece of the first tool call's arguments (JSON text, as the API streams it; a wire that gets them whole
    /// sends them in one piece).
    ToolArguments(String),
    /// The stream says the first tool call ended (its block closed), whatever its arguments.
    ToolCallEnd,
    /// Some answer text.
    Text(String),
    /// Some reasoning text (thinking): kept with the answer, and it tells a thinking `length` from a text one.
    Reasoning(String),
    /// The model's stop reason, in the API's own words.
    Stop(String),
    /// The provider reported an error inside the stream after its 200.
    Error(ProviderError),
    /// The prompt's length as the server counted it (Chat Completions' `usage.prompt_tokens`): Ollama counts the
    /// prompt it kept, so a count that fills its context says it cut the prompt (issue 38).
    PromptTokens(u64),
    /// The stream's own end marker (`[DONE]`).
    Done,
}

/// An error a provider reported, in a body or in a stream event, reduced to what classification needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderError {
    /// The human message.
    pub message: String,
    /// The error's type (`rate_limit_error`, `overloaded_error`, `BadRequestError`...).
    pub kind: Option<String>,
    /// The error's code (`insufficient_quota`, `model_not_found`, `"429"`...).
    pub code: Option<String>,
}

impl ProviderError {
    /// True when the error says the account is out of quota or credit: never retried.
    pub fn is_quota_exhausted(&self) -> bool {
        let has = |needle: &str| {
            self.kind.as_deref() == Some(needle)
                || self.code.as_deref() == Some(needle)
                || self.message.contains(needle)
        };
        has("insufficient_quota")
            || has("enforced_spend_limit_reached")
            || has("usage_limit_reached")
    }

    /// True when the error is an overload or rate-limit signal that a retry can cure.
    pub fn is_overload(&self) -> bool {
        let t = |s: &Option<String>| {
            s.as_deref()
                .map(str::to_ascii_lowercase)
                .unwrap_or_default()
        };
        let (kind, code) = (t(&self.kind), t(&self.code));
        [
            "overloaded_error",
            "rate_limit_error",
            "rate_limit_exceeded",
            "throttlingexception",
            "serviceunavailableexception",
            "modelnotreadyexception",
            "server_is_overloaded",
        ]
        .iter()
        .any(|k| kind == *k || code == *k)
            || code == "429"
            || code == "529"
    }
}

/// A stream that cannot be read as the API's format.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ProtocolError(pub String);

/// Reads one API's stream, event by event.
pub trait StreamReader: Send {
    /// Interprets one SSE event.
    fn on_event(
        &mut self,
        event: &crate::framing::sse::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError>;
}

/// The HTTP request of one try.
#[derive(Debug)]
pub struct HttpRequest {
    /// Where to send it.
    pub url: reqwest::Url,
    /// Its headers (the key's header marked sensitive).
    pub headers: HeaderMap,
    /// Its JSON body.
    pub body: Vec<u8>,
}

/// What a stop reason means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopKind {
    /// A normal end (`stop`, `end_turn`, `STOP`...): without a tool call, a text answer.
    Normal,
    /// Out of tokens (`length`, `max_tokens`, `MAX_TOKENS`, `incomplete`).
    Length,
    /// Anything else (`content_filter`, `SAFETY`, `error`...): the stream ended on an error.
    Other,
}

/// A request the probe cannot build for this target; the check ends with this outcome without sending anything.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct RequestError {
    /// The outcome (usually unsupported).
    pub outcome: Outcome,
    /// The code.
    pub code: Code,
    /// The `<error>`.
    pub message: String,
}

impl RequestError {
    /// Not supported by the preflight yet, and why.
    pub fn unsupported(why: impl fmt::Display) -> Self {
        Self {
            outcome: Outcome::Unsupported,
            code: Code::Unsupported,
            message: crate::contract::render::unsupported_error(&why.to_string()),
        }
    }
}

/// One API kind: the request pi sends for it, and how its answers read.
pub trait Wire: Send + Sync {
    /// The request of one try.
    fn request(&self, target: &Target) -> Result<HttpRequest, RequestError>;

    /// How a 200's body is framed.
    fn framing(&self) -> Framing {
        Framing::Sse
    }

    /// A fresh reader for one 200's stream.
    fn reader(&self) -> Box<dyn StreamReader>;

    /// What a stop reason of this API means.
    fn stop_kind(&self, reason: &str) -> StopKind;

    /// Refines the generic reading of an error status (Gemini's 400 `API_KEY_INVALID` is a refused key, Bedrock's
    /// `x-amzn-errortype` says throttling...). `None` keeps the generic reading.
    fn refine_error(
        &self,
        _status: u16,
        _headers: &HeaderMap,
        _error: Option<&ProviderError>,
    ) -> Option<(Outcome, Code)> {
        None
    }

    /// A wait an error body asks for (Gemini's `RetryInfo.retryDelay`).
    fn body_wait(&self, _body: &str) -> Option<Duration> {
        None
    }
}

/// The wire of an API kind, when the probe speaks it.
pub fn wire(api: ApiKind) -> Option<&'static dyn Wire> {
    match api {
        ApiKind::OpenAiCompletions => Some(&openai_completions::OpenAiCompletions),
        ApiKind::GoogleGenerativeAi => Some(&google::Google(google::Flavor::Gemini)),
        ApiKind::GoogleVertex => Some(&google::Google(google::Flavor::Vertex)),
        ApiKind::AnthropicMessages => Some(&anthropic_messages::AnthropicMessages),
        ApiKind::MistralConversations => Some(&mistral::MistralConversations),
        ApiKind::BedrockConverseStream => Some(&bedrock::BedrockConverseStream),
        ApiKind::OpenAiResponses => Some(&openai_responses::OpenAiResponses(
            openai_responses::Flavor::OpenAi,
        )),
        ApiKind::AzureOpenAiResponses => Some(&openai_responses::OpenAiResponses(
            openai_responses::Flavor::Azure,
        )),
        _ => None,
    }
}

/// A header value that carries a key: marked sensitive (never logged), refused when a header cannot carry it.
pub fn secret_header(value: &str) -> Result<HeaderValue, RequestError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| RequestError {
        outcome: Outcome::KeyRefused,
        code: Code::KeyRefused,
        message: "the key holds a character a header cannot carry (a line break inside it, most likely: a Turn's fetch refuses it too; one at either end is dropped, as fetch drops it); the value itself is not shown"
            .to_owned(),
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// Adds a plain header.
pub fn header(headers: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        headers.insert(HeaderName::from_static(name), v);
    }
}

/// Adds the catalog's static headers of the model.
pub fn catalog_headers(headers: &mut HeaderMap, target: &Target) {
    let Some(map) = target
        .facts
        .headers
        .as_ref()
        .and_then(serde_json::Value::as_object)
    else {
        return;
    };
    for (name, value) in map {
        if let (Ok(n), Some(Ok(v))) = (
            HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()),
            value.as_str().map(HeaderValue::from_str),
        ) {
            headers.insert(n, v);
        }
    }
}

/// `{base}{path}`, without doubling the slash a base URL may end with.
pub fn endpoint(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = base.clone();
    let joined = format!("{}{}", base.path().trim_end_matches('/'), path);
    url.set_path(&joined);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract says which kinds the probe cannot send without asking the wires; the wires agree.
    #[test]
    fn a_kind_has_a_wire_exactly_when_the_contract_calls_it_supported() {
        for kind in ApiKind::ALL {
            assert_eq!(
                wire(kind).is_some(),
                kind.unsupported_because().is_none(),
                "{kind}"
            );
        }
    }

    #[test]
    fn endpoint_joins_without_double_slash() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(
            endpoint(&u("http://h:8000/v1"), "/chat/completions").as_str(),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            endpoint(&u("http://h:8000/v1/"), "/chat/completions").as_str(),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            endpoint(&u("https://api.deepseek.com"), "/chat/completions").as_str(),
            "https://api.deepseek.com/chat/completions"
        );
    }
}
