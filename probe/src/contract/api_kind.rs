//! The vocabulary of what a model speaks: pi's API kinds and the `tool_choice` a request carries.
//!
//! Both binaries, the plan, the run spec and the verdict name a model's API by these words, so they live in the
//! contract and not beside the wires (`api/`) that speak them: this file depends on nothing but serde.

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

    /// Why the probe cannot send this kind's request, or `None` when it can. The reason is data here, not a
    /// question to the wires: every other kind has a wire (`api::wire`), which a test in `api` holds to.
    pub fn unsupported_because(self) -> Option<&'static str> {
        match self {
            ApiKind::OpenAiCodexResponses => Some(
                "openai-codex-responses needs the OAuth login file of a ChatGPT account, which a check pod does not hold",
            ),
            _ => None,
        }
    }
}

impl fmt::Display for ApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of pi's API kinds.
#[derive(Debug)]
pub struct UnknownApiKind(pub String);

impl fmt::Display for UnknownApiKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown api kind \"{}\" (pi's kinds: {})",
            self.0,
            ApiKind::ALL.map(ApiKind::as_str).join(", ")
        )
    }
}

impl std::error::Error for UnknownApiKind {}

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
