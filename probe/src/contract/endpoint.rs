//! What the probe learned about the server behind a base URL, and the cause it can name from that.
//!
//! The contract's lines name vLLM's flags for every custom endpoint; a llama.cpp server, a vLLM and a LiteLLM
//! gateway fail the same request for different reasons. The probe tells them apart from the answer itself (the
//! `server:` header, the error body's shape) and, after a failure or for the context check, from one `GET` of the
//! server's own metadata (`/v1/models`, llama.cpp's `/props`, vLLM's `/version`, Ollama's `/api/ps` and `GET /`). What it learned is recorded
//! here ([`Endpoint`]); when it names the cause of a result, the [`Cause`] adds one line after the contract's lines
//! and replaces the code's next action.

use serde::{Deserialize, Serialize};

/// The kind of server behind a base URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EndpointKind {
    /// llama.cpp's `llama-server` (`server: llama.cpp`).
    LlamaCpp,
    /// vLLM's OpenAI-compatible server (`server: uvicorn`, `GET /version` says `{"version": ...}`).
    Vllm,
    /// A LiteLLM proxy (`x-litellm-*` headers, `litellm.` error messages).
    Litellm,
    /// Ollama (`"system_fingerprint": "fp_ollama"` in every chunk; `GET /` says `Ollama is running`; no `server:`
    /// header).
    Ollama,
    /// Nothing told.
    Unknown,
}

/// What the probe learned about the endpoint. Fields are `null` when not known.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The server's kind.
    pub kind: EndpointKind,
    /// The server's version, as it gives it (sanitized, at most 40 characters).
    #[serde(default)]
    pub version: Option<String>,
    /// The context the server serves the model with, in tokens (llama.cpp's `n_ctx`, vLLM's `max_model_len`).
    #[serde(default)]
    pub context_length: Option<u64>,
    /// Whether the server renders tools into the prompt (llama.cpp's `chat_template_caps.supports_tools`).
    #[serde(default)]
    pub supports_tools: Option<bool>,
    /// llama.cpp's slots (`/props` `total_slots`, `-np`): each serves `contextLength` tokens, its share of `-c`.
    #[serde(default)]
    pub slots: Option<u64>,
}

impl Endpoint {
    /// An endpoint of `kind` with nothing else known.
    pub fn of(kind: EndpointKind) -> Self {
        Self {
            kind,
            version: None,
            context_length: None,
            supports_tools: None,
            slots: None,
        }
    }
}

/// A cause the endpoint named: one hint line after the contract's lines, and the result's next action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Cause {
    /// llama.cpp's chat template cannot render tools (`/props`: `chat_template_caps.supports_tools: false`): the
    /// server drops them from the prompt, so the model answers in text. `--jinja` is on already.
    LlamaCppTemplateWithoutTools,
    /// llama.cpp runs without jinja (`tools param requires --jinja flag`).
    LlamaCppWithoutJinja,
    /// vLLM started without `--enable-auto-tool-choice` / `--tool-call-parser`.
    VllmToolsNotEnabled,
    /// A LiteLLM gateway answered, and its error body says its backend failed.
    GatewayBackendFailed {
        /// The backend's error class as LiteLLM names it (`APIConnectionError`...), sanitized.
        error: String,
    },
    /// `length` after reasoning was streamed: the model thought until the cap.
    LengthWhileThinking,
    /// The model wrote text until the cap, with no reasoning streamed: a text answer cut by the cap.
    TextUntilCap,
    /// The tool call began but the cap cut its arguments: a Turn gets a call it cannot parse.
    ToolCallCut,
    /// The proxy the request goes through (`HTTPS_PROXY`...) refused the connection or did not answer it: the
    /// provider was never reached (issue 27, item 1).
    ProxyUnreachable,
    /// `length` with a cap that pi's clamp set from the model's `contextWindow` (the window less pi's estimate of the
    /// prompt and its 4,096-token reserve): raising `maxTokens` changes nothing (issue 27, item 11).
    CapClamped {
        /// The `contextWindow` the cap was clamped to.
        context_window: u64,
    },
    /// The check pod's Custodian (its loopback proxy) refused the connection after the probe's wait: the Custodian
    /// failed, not the provider (issue 27, item 1).
    CustodianUnreachable,
    /// The check timed out, and llama-server's `GET /slots` then showed every slot busy: the request can have waited
    /// in the server's queue behind other requests, not for a model loading (issue 27, item 8).
    LlamaCppSlotsBusy {
        /// The server's slots (`-np`), all busy.
        slots: u64,
    },
    /// Ollama refused tools (`<model> does not support tools`): the model's TEMPLATE does not use `.Tools` (a GGUF
    /// imported with `FROM` alone); `ollama show` lists its capabilities (issue 38).
    OllamaTemplateWithoutTools,
    /// Ollama has no model of that name or tag (`model 'x' not found`): `ollama list`, `ollama pull`.
    OllamaModelNotFound,
    /// The base URL does not end in `/v1`: Ollama's router answered `404 page not found`, and `GET /` of the
    /// server said `Ollama is running`.
    OllamaBaseUrlWithoutV1,
    /// A timeout with no answer while Ollama had the model loaded (`GET /api/ps`): not a load. Either the request
    /// waited for a busy slot (`OLLAMA_NUM_PARALLEL`), or Ollama's tool parser held back a tool call the model began
    /// and never closed (it sends nothing until the call closes, and `max_completion_tokens` does not stop it).
    OllamaLoadedNoAnswer,
    /// A timeout after the model had streamed text, while Ollama had it loaded: no queue, and nothing more came.
    /// Ollama's tool parser holds back everything after the start of a tool call until the call closes: the model
    /// began one and never closed it (and `max_completion_tokens` does not stop it).
    OllamaHeldBackCall,
    /// Ollama closed the stream with no stop reason after the model had written one piece over and over (30 times
    /// and more): Ollama cuts a generation whose token repeats more than 30 times (`prediction aborted, token repeat
    /// limit reached`, in its debug log only), and a Turn gets the same cut stream.
    OllamaRepeatLimit,
    /// The served context is smaller than the plan's `contextWindow`; without one, smaller than what surely fails:
    /// for llama.cpp the probe's own prompt (llama-server refuses only a prompt longer than its context, and stops a
    /// generation that reaches it), for others the cap plus that prompt (vLLM refuses their sum over its length).
    ContextTooSmall {
        /// The context the server serves, in tokens.
        served: u64,
        /// What a Turn needs: the plan's `contextWindow`; else, for llama.cpp, the probe's own prompt; for others the
        /// cap plus that prompt.
        needed: u64,
        /// `needed` is the plan's `contextWindow` (else the cap plus the probe's prompt).
        from_window: bool,
        /// The server's kind, for the flag to name.
        server: EndpointKind,
        /// llama.cpp's slots (`-np`) when more than one: `served` is one slot's share of `-c` (issue 27, item 7).
        #[serde(default)]
        slots: Option<u64>,
        /// Ollama counted a prompt that filled the whole served context (`usage.prompt_tokens` equal to `served`): it
        /// cut the probe's own prompt to fit, silently (issue 38). `needed` is then the least that holds more.
        #[serde(default)]
        prompt_cut: bool,
    },
}

/// Why the served context was not learned, so not checked (issue 27, item 6): said in the verdict and in a line,
/// rather than nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ContextUnchecked {
    /// A LiteLLM gateway answered for the backend: its `/v1/models` and `/model/info` give no `max_input_tokens` for
    /// the model (its config sets no `model_info`), and the backend's own metadata is behind it.
    GatewayWithoutContext,
    /// The server's metadata (`/v1/models`, llama.cpp's `/props`) gave no context length.
    ServerWithoutContext,
}
