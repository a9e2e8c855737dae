//! The API kinds of pi's catalog, and for each the request a Turn sends and how its answer is read.
//!
//! The probe dispatches on the model's `api`, never on the provider's name: pi maps 37 providers onto 9 API kinds,
//! and a provider can mix kinds per model. Each kind has a module that builds the request body pi-ai 0.82.1 sends
//! for it and reads its stream into [`StreamEvent`]s, so the rest of the probe (retries, deadlines,
//! classification, lines) does not care which wire it is on.

pub mod error_body;
pub mod openai_completions;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// pi's API kinds, by pi's names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ApiKind {
    /// Chat Completions: custom endpoints (vLLM, llama.cpp, gateways) and most catalog providers.
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    /// Anthropic Messages.
    #[serde(rename = "anthropic-messages")]
    AnthropicMessages,
    /// OpenAI Responses.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Azure OpenAI Responses.
    #[serde(rename = "azure-openai-responses")]
    AzureOpenAiResponses,
    /// ChatGPT/Codex Responses (needs an OAuth login file).
    #[serde(rename = "openai-codex-responses")]
    OpenAiCodexResponses,
    /// The Gemini API.
    #[serde(rename = "google-generative-ai")]
    GoogleGenerativeAi,
    /// Vertex AI.
    #[serde(rename = "google-vertex")]
    GoogleVertex,
    /// Mistral (chat completions through Mistral's SDK).
    #[serde(rename = "mistral-conversations")]
    MistralConversations,
    /// Bedrock ConverseStream.
    #[serde(rename = "bedrock-converse-stream")]
    BedrockConverseStream,
}

impl ApiKind {
    /// Every kind, in pi's order of use.
    pub const ALL: [ApiKind; 9] = [
        ApiKind::OpenAiCompletions,
        ApiKind::AnthropicMessages,
        ApiKind::OpenAiResponses,
        ApiKind::AzureOpenAiResponses,
        ApiKind::OpenAiCodexResponses,
        ApiKind::GoogleGenerativeAi,
        ApiKind::GoogleVertex,
        ApiKind::MistralConversations,
        ApiKind::BedrockConverseStream,
    ];

    /// pi's name for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiKind::OpenAiCompletions => "openai-completions",
            ApiKind::AnthropicMessages => "anthropic-messages",
            ApiKind::OpenAiResponses => "openai-responses",
            ApiKind::AzureOpenAiResponses => "azure-openai-responses",
            ApiKind::OpenAiCodexResponses => "openai-codex-responses",
            ApiKind::GoogleGenerativeAi => "google-generative-ai",
            ApiKind::GoogleVertex => "google-vertex",
            ApiKind::MistralConversations => "mistral-conversations",
            ApiKind::BedrockConverseStream => "bedrock-converse-stream",
        }
    }

    /// Gemini and Vertex: their retries are not seen, so busy is an error for them.
    pub fn is_google(self) -> bool {
        matches!(self, ApiKind::GoogleGenerativeAi | ApiKind::GoogleVertex)
    }

    /// Why the probe cannot send this kind's request yet, or `None` when it can.
    pub fn unsupported_because(self) -> Option<&'static str> {
        match self {
            ApiKind::OpenAiCompletions => None,
            ApiKind::OpenAiCodexResponses => Some(
                "openai-codex-responses needs the OAuth login file of a ChatGPT account, which a check pod does not hold",
            ),
            _ => Some("this version of the probe speaks only openai-completions"),
        }
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of pi's API kinds.
#[derive(Debug, thiserror::Error)]
#[error("unknown api kind \"{0}\" (pi's kinds: {kinds})", kinds = ApiKind::ALL.map(ApiKind::as_str).join(", "))]
pub struct UnknownApiKind(pub String);

impl FromStr for ApiKind {
    type Err = UnknownApiKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApiKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownApiKind(s.to_owned()))
    }
}

/// The `tool_choice` of the request. A Turn sends none; the plan (by hand: `--tool-choice`) may set one, as
/// pi's `toolChoice` option does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ToolChoice {
    /// Send no `tool_choice`: what a Turn sends.
    #[default]
    Unset,
    /// `"auto"`.
    Auto,
    /// `"none"`.
    None,
    /// `"required"`.
    Required,
    /// The probe's tool by name.
    Named,
}

/// What the reader of a stream saw in one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// A tool call that names a tool: the verdict, the probe hangs up.
    ToolCall {
        /// The tool's name as the model sent it.
        name: String,
    },
    /// Some answer text (or reasoning text).
    Text(String),
    /// The model's stop reason, in the API's own words.
    Stop(String),
    /// The provider reported an error inside the stream after its 200.
    Error(ProviderError),
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
        event: &crate::sse::Event,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError>;
}
