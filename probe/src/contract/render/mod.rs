//! Every human line of the preflight, rendered in this one place (the contract's section 5).
//!
//! `jr2 up` and its users compare these lines byte for byte, so each form has an insta snapshot
//! (`render/snapshots/`). The driver (`orchestrate`) renders through the same functions. Text that came from
//! outside (a provider's message) arrives here already sanitized; this module only assembles. Here the lines of a
//! model's check; [`cluster`] the lines of the check pod and the cluster around it; [`admission`] what the
//! namespace's admission says of the check pod beside a Harness pod.

use crate::contract::api_kind::ApiKind;
use crate::contract::endpoint::{Cause, ContextUnchecked, EndpointKind};
use crate::contract::outcome::{Code, Level, Outcome};
use crate::contract::verdict::{ModelResult, Origin, Route};

pub mod admission;
pub mod cluster;
pub mod nodes;

pub use admission::*;
pub use cluster::*;
pub use nodes::*;

/// The hint lines of the custom provider, in the contract's order.
pub mod hint {
    /// Custom: localhost.
    pub const LOCALHOST: &str = "  - localhost never works from a pod; use a LAN address";
    /// Custom: the model id.
    pub const MODEL_ID: &str =
        "  - the model id must be exactly what the endpoint serves (vLLM: GET /v1/models)";
    /// Custom: vLLM's tool flags.
    pub const VLLM_TOOLS: &str =
        "  - vLLM needs --enable-auto-tool-choice and a matching --tool-call-parser";
    /// Custom: stop reason length.
    pub const LENGTH: &str = "  - stop reason \"length\" means the model ran out of tokens before the call (a thinking model reasons first)";
    /// Custom, `length` with a cap of 1 because `maxTokens` resolved to 0: the cause, beyond the document.
    pub fn no_max_tokens(id: &str) -> String {
        format!(
            "  - harness.provider sets no maxTokens for {id}, so a Turn asks for 1 token: set maxTokens"
        )
    }
    /// Custom: the held key, when `apiKey` is set.
    pub const CUSTOM_KEY_HELD: &str =
        "  - the held secret JR2_PROVIDER_API_KEY may be wrong (harness.provider.apiKey)";
    /// Custom, 401/403: no `apiKey` set.
    pub const CUSTOM_KEY_WANTED: &str = "  - the endpoint wants a key: set harness.provider.apiKey";
    /// Either kind: a 503 after the retries.
    pub const STATUS_503: &str = "  - a 503 comes from a gateway with no backend, or from a server that still loads its model";
    /// Catalog: a private CA.
    pub const CATALOG_CA: &str = "  - a private CA on that path must be in harness.caBundle";
}

fn origin_phrase(origin: &Origin) -> String {
    match origin {
        Origin::ThisMachine => "from this machine".to_owned(),
        Origin::Node { name } => format!("from a pod on node {name}"),
    }
}

/// The `error:` line and its hints for a model whose level is error; the warning or progress line otherwise. A
/// model that was not checked gets the `not checked:` form ([`not_checked_lines`]), never the hints of a failure.
///
/// The contract's lines stay as they are; when the endpoint named the cause ([`Cause`]), its one line follows them
/// ([`cause_line`]), and a forced tool choice the model ignored adds its note ([`tool_choice_ignored`]).
pub fn model_lines(r: &ModelResult, origin: &Origin) -> Vec<String> {
    let mut lines = match r.level {
        _ if r.outcome == Outcome::NotChecked => return not_checked_lines(&[r]),
        Level::Pass => vec![completed(&r.model, r.elapsed_ms)],
        Level::Warning if r.outcome == Outcome::Text => vec![text_warning(&r.model)],
        Level::Warning if r.outcome == Outcome::NotCheckable => vec![not_checkable_warning(
            &r.model,
            r.error
                .as_deref()
                .unwrap_or("the preflight cannot send its request"),
        )],
        Level::Warning if r.outcome == Outcome::Skipped => {
            vec![skipped_warning(std::slice::from_ref(&r.model))]
        }
        Level::Warning => vec![busy_line(r)],
        Level::Error => failure_lines(r, origin),
    };
    if let Some(line) = r.findings.cause.as_ref().and_then(|c| cause_line(c, r)) {
        lines.push(line);
    }
    if r.findings.tool_choice_ignored {
        lines.push(tool_choice_ignored(&r.model));
    }
    if let Some(why) = r.findings.context_unchecked {
        lines.push(context_unchecked(&r.model, &r.host, &r.id, why));
    }
    lines.extend(
        r.findings
            .ollama_drops
            .iter()
            .map(|d| ollama_drop(&r.model, *d)),
    );
    lines
}

/// The note of something of a Turn's request Ollama drops or overrides (issue 38): a progress line, no prefix word.
pub fn ollama_drop(model: &str, drop: crate::contract::verdict::OllamaDrop) -> String {
    use crate::contract::verdict::OllamaDrop;
    match drop {
        OllamaDrop::MaxCompletionTokens => format!(
            "provider: {model}: Ollama ignores max_completion_tokens, the field pi sends the cap in (it honours max_tokens): nothing stops a Turn whose model writes on; set PARAMETER num_predict in the model's Modelfile, or compat.maxTokensField: \"max_tokens\" for the model in jr2.config.ts"
        ),
        OllamaDrop::DeveloperRole => format!(
            "provider: {model}: the system prompt goes as a developer message, which Ollama's library templates do not render (`ollama show --template <id>` shows whether this one does): where it is not, the model never sees it; set compat.supportsDeveloperRole: false for the model in jr2.config.ts (pi's own advice for Ollama)"
        ),
        OllamaDrop::Temperature => format!(
            "provider: {model}: the request names no temperature, and Ollama's /v1 then samples at 1.0 over the Modelfile's PARAMETER temperature: a text answer this time can be a call the next, and the other way round"
        ),
    }
}

/// The note of a served context the probe could not learn, so did not check (issue 27, item 6): a progress line, no
/// prefix word.
pub fn context_unchecked(model: &str, host: &str, id: &str, why: ContextUnchecked) -> String {
    match why {
        ContextUnchecked::GatewayWithoutContext => format!(
            "provider: {model}: the served context was not checked — the LiteLLM gateway {host} gives no max_input_tokens for {id} (GET /v1/models, /model/info), and the backend's own metadata is behind it: set model_info.max_input_tokens for {id} in the gateway's config"
        ),
        ContextUnchecked::ServerWithoutContext => format!(
            "provider: {model}: the served context was not checked — the server's metadata (GET /v1/models, /props) gives no context length"
        ),
    }
}

/// The one line a known cause adds after the contract's lines, in their hint form (`  - ...`). `None` for a cause
/// whose line the contract's lines already hold (vLLM's tool flags).
pub fn cause_line(cause: &Cause, r: &ModelResult) -> Option<String> {
    Some(match cause {
        Cause::LlamaCppTemplateWithoutTools => "  - llama.cpp: the model's chat template cannot render tools (GET /props: chat_template_caps.supports_tools is false), so the server drops them from the prompt; --jinja is on already: give llama-server a tool-capable template with --chat-template-file, or serve a model whose template has tools".to_owned(),
        Cause::LlamaCppWithoutJinja => "  - llama.cpp: the server runs without jinja templates, which tools need: start llama-server with --jinja (and without --no-jinja)".to_owned(),
        Cause::VllmToolsNotEnabled => return None,
        Cause::OllamaTemplateWithoutTools => format!(
            "  - Ollama: the model's TEMPLATE does not use .Tools (a GGUF imported with FROM alone has none), so Ollama refuses tools for it: `ollama show {}` lists its capabilities; serve a model whose template renders tools, or `ollama create` one from a Modelfile whose TEMPLATE does",
            r.id
        ),
        Cause::OllamaModelNotFound => format!(
            "  - Ollama has no model {}: `ollama list` names the ones it has; `ollama pull <name:tag>` fetches one (or `ollama create` makes it from a Modelfile); the id in jr2.config.ts must match, tag included",
            r.id
        ),
        Cause::OllamaBaseUrlWithoutV1 => format!(
            "  - Ollama answers at {} (GET /api/ps names its models), and its OpenAI-compatible API is under /v1: the base URL ends in /v1 (http://<host>:11434/v1)",
            r.host
        ),
        Cause::OllamaLoadedNoAnswer => "  - Ollama had the model loaded (GET /api/ps), so this was not a load: either the request waited for a busy slot (OLLAMA_NUM_PARALLEL sets how many requests a model serves at once), or Ollama's tool parser held back a tool call the model began and never closed (it sends nothing until the call closes, and ignores max_completion_tokens: PARAMETER num_predict caps it)".to_owned(),
        Cause::OllamaRepeatLimit => "  - Ollama cut the answer: the model wrote one token over and over, and Ollama ends a generation whose token repeats more than 30 times and closes the stream with no stop reason (only its log says so, at OLLAMA_DEBUG=1: `token repeat limit reached`); a Turn gets the same cut stream (`Stream ended without finish_reason`)".to_owned(),
        Cause::OllamaHeldBackCall => "  - Ollama held back an unfinished tool call: its tool parser sends nothing after the start of a call (its TEMPLATE's tag) until the call closes, and the model began one and had not closed it when the check gave up (a model too slow for the timeout, or one that never closes it; max_completion_tokens does not stop it, Ollama ignores it): cap the model with PARAMETER num_predict, and choose a model (or a TEMPLATE) that closes its calls in time".to_owned(),
        Cause::GatewayBackendFailed { error } => format!(
            "  - the LiteLLM gateway {} answered, and its backend failed ({error}): check the backend the gateway routes {} to",
            r.host, r.id
        ),
        Cause::LengthWhileThinking => format!(
            "  - the model streamed reasoning until the cap of {}: raise maxTokens, or turn thinking off",
            tokens(r.max_tokens)
        ),
        Cause::TextUntilCap => format!(
            "  - no reasoning was streamed: the model wrote text until the cap of {} instead of calling the tool; a Turn gets that text, cut: choose a model (or a template) that calls tools",
            tokens(r.max_tokens)
        ),
        // A complete call in a message the cap stopped (the verdict names its tool): pi-agent-core runs none of it.
        Cause::ToolCallCut if r.tool_name.is_some() => format!(
            "  - the tool call was complete, and the cap of {} stopped its message: a Turn runs no tool call of a message the cap stopped (pi-agent-core fails them all, their arguments may be cut); raise maxTokens",
            tokens(r.max_tokens)
        ),
        Cause::ToolCallCut => format!(
            "  - the tool call began, and the cap of {} cut its arguments: a Turn gets a call it cannot parse; raise maxTokens",
            tokens(r.max_tokens)
        ),
        Cause::CapClamped { context_window } => format!(
            "  - pi clamps the cap to the contextWindow of {context_window} less its estimate of the prompt and a {}-token reserve, so every Turn asks for {}: raising maxTokens changes nothing; set contextWindow in jr2.config.ts to the context the server really serves, or serve a larger one",
            crate::prompt::PROMPT_RESERVE,
            tokens(r.max_tokens)
        ),
        Cause::ProxyUnreachable => "  - the proxy failed, not the provider: check that the proxy the Harness env names (HTTPS_PROXY, HTTP_PROXY) runs and that the pods can reach it".to_owned(),
        Cause::CustodianUnreachable => "  - the Custodian failed, not the provider: it did not accept connections after the probe waited 15 s; read the check pod's Custodian log (its configuration of the held secrets may be refused)".to_owned(),
        Cause::LlamaCppSlotsBusy { slots } => format!(
            "  - llama.cpp: GET /slots showed {} busy when the check gave up, so the request waited in the server's queue behind other requests, as a Turn's does (a Turn waits up to undici's 300 s for the answer's headers); start llama-server with more slots (-np), or run jr2 up when it is idle",
            slots_phrase(*slots)
        ),
        Cause::ContextTooSmall { served, needed, from_window, server, slots, prompt_cut } => {
            let what = if *from_window {
                format!("the model's contextWindow is {needed}")
            } else if *prompt_cut {
                format!(
                    "the probe's own prompt filled it (the answer counted {served} prompt tokens): Ollama cut the prompt silently, the tools and system prompt first (only its log says `truncating input prompt`), and the model answered what was left"
                )
            } else if *server == EndpointKind::LlamaCpp {
                format!(
                    "the probe's own prompt needs {needed} (llama-server refuses a prompt longer than its context, and a Turn's is longer)"
                )
            } else if *server == EndpointKind::Ollama {
                format!(
                    "the probe's own prompt needs {needed} (Ollama cuts a longer prompt silently, the tools and system prompt first: only its log says `truncating input prompt`; a Turn's is longer)"
                )
            } else {
                format!(
                    "a Turn needs more than {needed} (maxTokens {} and the probe's own prompt of {} tokens; a Turn's prompt is longer)",
                    r.max_tokens,
                    needed.saturating_sub(r.max_tokens)
                )
            };
            let serves = match slots.filter(|n| *n > 1) {
                Some(n) => format!(
                    "llama-server serves each of its {n} slots (-np {n}) a context of {served} tokens (its share of -c {})",
                    served * n
                ),
                None if *server == EndpointKind::Ollama => {
                    format!("Ollama serves the model a context of {served} tokens (GET /api/ps)")
                }
                None => format!("the server serves a context of {served} tokens"),
            };
            format!(
                "  - {serves} and {what}: {}",
                context_advice(*served, *needed, *server, *slots, *prompt_cut)
            )
        }
    })
}

/// `its one slot (-np 1)`, `all 4 of its slots (-np 4)`.
fn slots_phrase(slots: u64) -> String {
    if slots == 1 {
        "its one slot (-np 1)".to_owned()
    } else {
        format!("all {slots} of its slots (-np {slots})")
    }
}

/// `<error>` of a timeout while llama-server's slots were all busy: what was seen, in place of the may-load tail.
pub fn timeout_queued_error(seconds: &str, slots: u64) -> String {
    format!(
        "no answer in {seconds} s — llama-server's slots were busy ({}): the request waited in its queue",
        slots_phrase(slots)
    )
}

/// `<error>` of a timeout while Ollama had the model loaded (issue 38): what was seen, in place of the may-load tail.
pub fn timeout_ollama_loaded_error(seconds: &str) -> String {
    format!("no answer in {seconds} s — Ollama had the model loaded (GET /api/ps): not a load")
}

/// `<error>` of a timeout after text, while Ollama had the model loaded (issue 38): its parser held back the rest.
pub fn timeout_ollama_held_back_error(seconds: &str) -> String {
    format!(
        "no answer in {seconds} s — the model streamed text, then nothing more came while Ollama had it loaded (GET /api/ps): Ollama held back the rest"
    )
}

/// `1 token`, `<n> tokens`.
fn tokens(n: u64) -> String {
    if n == 1 {
        "1 token".to_owned()
    } else {
        format!("{n} tokens")
    }
}

/// What to change for a served context too small: the server's flag, or (when pi's clamp still leaves the
/// prompt its reserve in the served context) the config's `contextWindow`.
fn context_advice(
    served: u64,
    needed: u64,
    server: EndpointKind,
    slots: Option<u64>,
    prompt_cut: bool,
) -> String {
    // llama.cpp splits -c among its slots (-np): each slot needs the whole context a Turn needs.
    if let Some(n) = slots.filter(|n| *n > 1 && server == EndpointKind::LlamaCpp) {
        let window = if served > crate::prompt::PROMPT_RESERVE + crate::prompt::estimated_tokens() {
            format!(
                ", or set contextWindow in jr2.config.ts to {served} (pi then cuts the cap to fit)"
            )
        } else {
            String::new()
        };
        return format!(
            "raise llama-server's -c to at least {} ({needed} for each of its {n} slots), or lower -np{window}",
            needed * n
        );
    }
    let flag = match server {
        EndpointKind::LlamaCpp => "llama-server's -c",
        EndpointKind::Vllm => "vLLM's --max-model-len",
        EndpointKind::Ollama => {
            "Ollama's num_ctx (OLLAMA_CONTEXT_LENGTH for the server, or PARAMETER num_ctx in the model's Modelfile)"
        }
        EndpointKind::Litellm | EndpointKind::Unknown => "the server's context size",
    };
    if prompt_cut {
        // How much more the prompt needed is not known (Ollama counts what it kept): the least is no advice.
        format!(
            "raise {flag} well above {served}: a context of {served} does not hold even the probe's short prompt, and a Turn's (pi's system prompt and tools) is longer"
        )
    } else if served > crate::prompt::PROMPT_RESERVE + crate::prompt::estimated_tokens() {
        format!(
            "raise {flag} to {needed}, or set contextWindow in jr2.config.ts to {served} (pi then cuts the cap to fit)"
        )
    } else {
        format!(
            "raise {flag} to at least {needed}: a context of {served} leaves a Turn no room for its prompt"
        )
    }
}

/// The next action of a result whose cause the endpoint named.
pub fn cause_next_action(cause: &Cause) -> String {
    match cause {
        Cause::LlamaCppTemplateWithoutTools => "give llama-server a chat template that renders tools (--chat-template-file), or serve a model whose template has them; --jinja is on already".to_owned(),
        Cause::LlamaCppWithoutJinja => "start llama-server with --jinja (not --no-jinja): it renders tools only with jinja templates".to_owned(),
        Cause::VllmToolsNotEnabled => crate::contract::outcome::Code::ToolsNotEnabled.next_action().to_owned(),
        Cause::OllamaTemplateWithoutTools => "serve the model from a Modelfile whose TEMPLATE renders .Tools (`ollama show <model>` lists its capabilities), or choose a model that has tools, then run jr2 up again".to_owned(),
        Cause::OllamaModelNotFound => "pull or create the model on the Ollama server (`ollama list`, `ollama pull <name:tag>`), or fix its id in jr2.config.ts, then run jr2 up again".to_owned(),
        Cause::OllamaBaseUrlWithoutV1 => "end the provider's baseUrl in jr2.config.ts with /v1 (Ollama's OpenAI-compatible API), then run jr2 up again".to_owned(),
        Cause::OllamaLoadedNoAnswer => "run jr2 up again when Ollama is idle, or raise OLLAMA_NUM_PARALLEL; if it happens when idle, the model began a tool call it never closed: choose a model that calls tools, and cap it with PARAMETER num_predict".to_owned(),
        Cause::OllamaRepeatLimit => "choose a model (or a TEMPLATE) that calls the tool rather than loop on the request: Ollama cut this one's answer when it repeated a token more than 30 times, then run jr2 up again".to_owned(),
        Cause::OllamaHeldBackCall => "cap the model with PARAMETER num_predict in its Modelfile (Ollama ignores max_completion_tokens), and choose a model or TEMPLATE that closes its tool calls, then run jr2 up again".to_owned(),
        Cause::GatewayBackendFailed { error } => format!(
            "the gateway's backend failed ({error}): check the backend it routes the model to, then run jr2 up again"
        ),
        Cause::LengthWhileThinking => crate::contract::outcome::Code::Length.next_action().to_owned(),
        Cause::TextUntilCap => "choose a model (or a chat template) that calls tools: it wrote text until the cap, with no reasoning, so a larger maxTokens gives a longer text".to_owned(),
        Cause::ToolCallCut => "raise maxTokens for this model: the cap cut the tool call's arguments, so a Turn gets a call it cannot parse".to_owned(),
        Cause::CapClamped { .. } => format!(
            "set contextWindow in jr2.config.ts to the context the server serves (it must exceed the cap a Turn needs by pi's {}-token reserve and the prompt), or serve a larger context: while the window clamps the cap, raising maxTokens changes nothing",
            crate::prompt::PROMPT_RESERVE
        ),
        Cause::ProxyUnreachable => "make the proxy that HTTPS_PROXY (or HTTP_PROXY) names in the Harness env run and reachable from the pods, or fix its address, then run jr2 up again".to_owned(),
        Cause::CustodianUnreachable => "read the Custodian's log in the check pod and fix what it refuses (secrets in jr2.config.ts), then run jr2 up again".to_owned(),
        Cause::LlamaCppSlotsBusy { .. } => "run jr2 up again when llama-server is idle, or start it with more slots (-np): its queue, not the model, held the request past the check's timeout".to_owned(),
        Cause::ContextTooSmall { served, needed, server, slots, prompt_cut, .. } => {
            format!("serve the model with a larger context: {}", context_advice(*served, *needed, *server, *slots, *prompt_cut))
        }
    }
}

/// `<error>` of a request whose proxy could not be reached (refused, not answered): the hop that failed is named,
/// not the provider (issue 27, item 1). `words` is the transport failure (`connection refused`...).
pub fn hop_unreachable(custodian: bool, addr: &str, words: &str) -> String {
    if custodian {
        format!(
            "cannot reach the Custodian at {addr} (the check pod's proxy to the provider): {words}"
        )
    } else {
        format!("cannot reach the proxy {addr} (the provider was not reached): {words}")
    }
}

/// The cause a [`hop_unreachable`] error names.
pub fn hop_cause(error: &str) -> Option<Cause> {
    if error.starts_with("cannot reach the Custodian at ") {
        Some(Cause::CustodianUnreachable)
    } else if error.starts_with("cannot reach the proxy ") {
        Some(Cause::ProxyUnreachable)
    } else {
        None
    }
}

/// `<error>` of a served context too small for a Turn.
pub fn context_too_small_error(served: u64, needed: u64, server: Option<EndpointKind>) -> String {
    if server == Some(EndpointKind::Ollama) {
        return format!(
            "Ollama serves a context of {served} tokens, less than the {needed} a Turn can send: it cuts every longer prompt silently, the start first"
        );
    }
    format!(
        "the server serves a context of {served} tokens, less than the {needed} a Turn can send: every Turn whose request is longer gets an HTTP 400"
    )
}

/// `<error>` of a 200 whose stream ended after some answer, with neither a stop reason nor an end event.
pub const STREAM_CUT_ERROR: &str =
    "HTTP 200, but the stream ended before the answer was complete (no stop reason, no end event)";

/// `<error>` of an answer to a prompt Ollama cut to its served context (its count of the prompt filled the context;
/// issue 38).
pub fn context_cut_error(served: u64) -> String {
    format!(
        "Ollama serves a context of {served} tokens, and the probe's own prompt filled it ({served} prompt tokens counted): it cut the prompt silently, the start first, and the model answered the rest"
    )
}

/// The next action of a complete call in a message the cap stopped (its cause is `toolCallCut`, and the verdict
/// names the tool).
pub const CAPPED_CALL_NEXT_ACTION: &str = "raise maxTokens for this model: the cap stopped the message that holds the tool call, and a Turn runs no call of such a message";

/// `<error>` of a complete tool call in a message the token cap stopped: pi-agent-core fails every call of it
/// (`failToolCallsFromTruncatedMessage`; issue 27, item 5).
pub fn call_in_capped_message_error(stop: &str, tool: &str, max_tokens: u64) -> String {
    format!(
        "stop reason \"{stop}\" after the tool call \"{tool}\": a Turn runs no call of a message the cap stopped (the token cap sent was {max_tokens})"
    )
}

/// `<error>` of a complete tool call whose message did not stop before the model's deadline.
pub fn call_then_no_stop_error(call_seconds: &str, seconds: &str) -> String {
    format!(
        "a tool call came in {call_seconds} s, and its message did not stop in {seconds} s (a Turn waits for the stop)"
    )
}

/// `<error>` of a tool call whose arguments the cap cut.
pub fn call_cut_error(stop: &str, max_tokens: u64) -> String {
    format!(
        "stop reason \"{stop}\" in the tool call's arguments, before they were complete (the token cap sent was {max_tokens})"
    )
}

/// The note of a forced tool choice the model ignored: a progress line, no prefix word.
pub fn tool_choice_ignored(model: &str) -> String {
    format!(
        "provider: {model}: the plan's toolChoice names the probe's tool, and the model answered as if it could choose (the server may not take a named tool_choice: llama-server treats it as auto)"
    )
}

/// The progress line of a model still waiting for its verdict: no prefix word, like the pending line.
pub fn waiting(
    model: &str,
    waited: std::time::Duration,
    timeout: std::time::Duration,
    stage: crate::contract::events::WaitStage,
) -> String {
    use crate::contract::events::WaitStage;
    let known = match stage {
        WaitStage::NoAnswer => {
            "no byte of an answer yet: a model that loads on first use, or a request queued behind others"
        }
        WaitStage::Headers => "the server answered, and the model has sent nothing yet",
        WaitStage::Text => "the model is streaming text, and no tool call yet",
        WaitStage::ToolCall => "the model is writing its tool call",
        WaitStage::OllamaLoaded => {
            "no byte of an answer yet, and Ollama has the model loaded (GET /api/ps): a request queued behind others for a slot (OLLAMA_NUM_PARALLEL sets how many it serves at once), not a load"
        }
        WaitStage::OllamaNotLoaded => {
            "no byte of an answer yet, and Ollama has not loaded the model (GET /api/ps does not list it): it loads it first, once any model it must unload has left"
        }
    };
    format!(
        "provider: {model}: no verdict yet after {} s of {} s — {known}",
        seconds(waited),
        seconds(timeout)
    )
}

/// The lines of a whole run, in the results' order: each model's own lines, then the models that were not checked,
/// one `error:` line per reason, each followed by its `  not checked: <model>` lines.
pub fn result_lines(results: &[ModelResult], origin: &Origin) -> Vec<String> {
    let (unchecked, checked): (Vec<&ModelResult>, Vec<&ModelResult>) = results
        .iter()
        .partition(|r| r.outcome == Outcome::NotChecked);
    let mut lines: Vec<String> = checked
        .iter()
        .flat_map(|r| model_lines(r, origin))
        .collect();
    lines.extend(not_checked_lines(&unchecked));
    lines
}

/// Models that were not checked, in the `not checked:` form: per reason (the results' `<error>`, `not checked: ...`),
/// `error: provider preflight: <reason>`, then `  not checked: <model>` for each, in the order given.
pub fn not_checked_lines(results: &[&ModelResult]) -> Vec<String> {
    let reason = |r: &ModelResult| {
        let error = r.error.as_deref().unwrap_or("not checked");
        error
            .strip_prefix("not checked: ")
            .unwrap_or(error)
            .to_owned()
    };
    let mut reasons: Vec<String> = Vec::new();
    for r in results {
        let why = reason(r);
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    let mut lines = Vec::with_capacity(results.len() + reasons.len());
    for why in reasons {
        lines.push(format!("error: provider preflight: {why}"));
        lines.extend(
            results
                .iter()
                .filter(|r| reason(r) == why)
                .map(|r| not_checked(&r.model)),
        );
    }
    lines
}

/// The busy warning of a result: the plain form, or, when the last try got no answer (the deadline cut a retry
/// that followed a 429), the form that says so.
fn busy_line(r: &ModelResult) -> String {
    match stalled_retry(r) {
        Some(waited) => busy_then_no_answer_warning(
            &r.model,
            &r.host,
            r.tries.len(),
            r.http_status,
            &seconds(waited),
            r.api,
        ),
        None => busy_warning(&r.model, &r.host, r.tries.len(), r.http_status, r.api),
    }
}

/// How long the last try of a busy result waited, when it got no answer at all (a retry that stalled).
pub fn stalled_retry(r: &ModelResult) -> Option<std::time::Duration> {
    let last = r.tries.last()?;
    (r.outcome == Outcome::Busy && r.tries.len() > 1 && last.outcome == Outcome::Timeout)
        .then(|| to_tenths(std::time::Duration::from_millis(last.timings.total_ms)))
}

/// `provider: <model> completed a tool call (<ms> ms)`
pub fn completed(model: &str, ms: u64) -> String {
    format!("provider: {model} completed a tool call ({ms} ms)")
}

/// `warning: provider: <model> answered the request of a Turn in text, not with a tool call`
pub fn text_warning(model: &str) -> String {
    format!(
        "warning: provider: {model} answered the request of a Turn in text, not with a tool call"
    )
}

/// `warning: provider: <model> is busy toward <host> after <n> tries (HTTP <status>) — not confirmed; ...`
///
/// One try reads `after 1 try`. An overload that came inside a 200's stream (the try's status is 200) reads
/// `(an overload in the stream)`, since no HTTP status said busy. The tail says how many tries a Turn of `api` makes
/// ([`turn_tries`]).
pub fn busy_warning(
    model: &str,
    host: &str,
    tries: usize,
    status: Option<u16>,
    api: ApiKind,
) -> String {
    format!(
        "warning: provider: {model} is busy toward {host} after {} ({}) — not confirmed; {}",
        tries_phrase(tries),
        busy_sign(status),
        turn_tries(api)
    )
}

/// The busy warning when the last retry got no answer: `... after <n> tries (HTTP 429) and the retry got no answer
/// in <s> s — not confirmed; ...`. The contract's `(HTTP <status>)` stays as it is (`jr2 up` reads it); the words
/// about the retry follow it.
pub fn busy_then_no_answer_warning(
    model: &str,
    host: &str,
    tries: usize,
    status: Option<u16>,
    seconds: &str,
    api: ApiKind,
) -> String {
    format!(
        "warning: provider: {model} is busy toward {host} after {} ({}) and {} — not confirmed; {}",
        tries_phrase(tries),
        busy_sign(status),
        retry_got_no_answer(tries, seconds),
        turn_tries(api)
    )
}

/// The `<error>` of a busy model whose last retry got no answer: `the retry got no answer in <s> s, after <the last
/// busy try's error>` (for Gemini and Vertex, where busy is an error, this is the error line's `<error>`).
pub fn busy_then_no_answer_error(tries: usize, seconds: &str, busy_error: &str) -> String {
    format!(
        "{}, after {busy_error}",
        retry_got_no_answer(tries, seconds)
    )
}

/// How many tries a Turn of `api` makes on a busy answer, as pi-ai 0.82.1 sends it (research/pi-requests.md, section
/// 10): one for every API but Bedrock, whose AWS SDK makes 3 attempts in all. The busy line and its next action say
/// it, so neither promises a Turn fewer tries than it makes.
pub fn turn_tries(api: ApiKind) -> &'static str {
    match api {
        ApiKind::BedrockConverseStream => {
            "a Turn makes 3 tries (the AWS SDK's retries), so it can fail the same way"
        }
        _ => "a Turn makes one try, so it can fail the same way",
    }
}

/// The next action of a result, as its lines say it: the endpoint's cause when it named one; for a busy result the
/// one of its level (an error for Gemini and Vertex) and its API's tries; for a key refused where no key is held,
/// setting one (the line says `the endpoint wants a key` or `no Harness pod holds a key`); else the code's own.
pub fn next_action(r: &ModelResult) -> String {
    if let (Some(Cause::ToolCallCut), Some(_)) = (&r.findings.cause, &r.tool_name) {
        return CAPPED_CALL_NEXT_ACTION.to_owned();
    }
    if let Some(cause) = &r.findings.cause {
        return cause_next_action(cause);
    }
    match (r.outcome, &r.route) {
        (Outcome::Busy, _) if r.code == Code::Busy && r.level == Level::Error => {
            "wait until the provider takes requests from this key again (its rate limit or quota), then run jr2 up \
             again: for Gemini and Vertex a busy answer after the retries fails the check, since a Turn's own tries \
             are not seen"
                .to_owned()
        }
        (Outcome::Busy, _) if r.code == Code::Busy => format!(
            "none required: {}; run jr2 up again later to confirm the model",
            turn_tries(r.api)
        ),
        (Outcome::KeyRefused, Route::Custom { api_key_set: false, .. }) => {
            "the endpoint wants a key: set harness.provider.apiKey in jr2.config.ts, then run jr2 up again"
                .to_owned()
        }
        (
            Outcome::KeyRefused,
            Route::Catalog {
                key_held: false,
                provider,
                key_env,
                ..
            },
        ) => format!(
            "no Harness pod holds a key of {provider}: add {key_env} to `secrets` in jr2.config.ts, then run jr2 up \
             again"
        ),
        _ => r.code.next_action().to_owned(),
    }
}

fn retry_got_no_answer(tries: usize, seconds: &str) -> String {
    let which = if tries > 2 {
        "the last retry"
    } else {
        "the retry"
    };
    format!("{which} got no answer in {seconds} s")
}

fn tries_phrase(tries: usize) -> String {
    if tries == 1 {
        "1 try".to_owned()
    } else {
        format!("{tries} tries")
    }
}

fn busy_sign(status: Option<u16>) -> String {
    match status {
        Some(200) => "an overload in the stream".to_owned(),
        Some(s) => format!("HTTP {s}"),
        None => "HTTP no status".to_owned(),
    }
}

/// A model the preflight cannot check by design (issue 27, item 3): `warning: provider: <model> was not checked —
/// <why>; a Turn uses credentials the check pod does not hold, so its first call is the check`.
pub fn not_checkable_warning(model: &str, why: &str) -> String {
    format!(
        "warning: provider: {model} was not checked — {why}; a Turn uses credentials the check pod does not hold, so its first call is the check"
    )
}

/// `warning: provider: preflight skipped (--skip-provider-preflight) — these models were not checked: ...`
pub fn skipped_warning(models: &[String]) -> String {
    format!(
        "warning: provider: preflight skipped (--skip-provider-preflight) — these models were not checked: {}",
        models.join(", ")
    )
}

/// A check pod whose Harness env holds the key (a Stand-in) and sets a proxy variable without telling Node to read it
/// (issue 38, item 5): a Turn's fetch goes straight to the provider, around the Custodian, with the Stand-in as its
/// key; the probe does the same.
pub fn stand_in_bypass_warning(var: &str, model: &str, host: &str, stand_in: &str) -> String {
    format!(
        "warning: provider: {var} is set and NODE_USE_ENV_PROXY=1 is not, so Node's fetch does not read it: a Turn of {model} goes straight to {host}, around the Custodian, and sends the Stand-in {stand_in} as its key (a provider that takes any key answers it, and this check passes the same way); set NODE_USE_ENV_PROXY=1 in the Harness env"
    )
}

/// By hand only: a base URL on loopback works here but never from a pod.
pub fn loopback_warning(host: &str) -> String {
    format!(
        "warning: provider: {host} is a loopback address — this check can reach it, but a pod cannot (localhost never works from a pod; use a LAN address)"
    )
}

/// The `<error>` of a timeout: a custom-provider or gateway model may be one that loads on first use.
pub fn timeout_error(seconds: &str, may_load_on_first_use: bool) -> String {
    with_first_use_tail(format!("no answer in {seconds} s"), may_load_on_first_use)
}

/// `error`, and for a model that may load on first use the contract's tail that says so.
fn with_first_use_tail(error: String, may_load_on_first_use: bool) -> String {
    if may_load_on_first_use {
        format!(
            "{error} — it can be a model that loads on first use: run jr2 up again once it has loaded"
        )
    } else {
        error
    }
}

/// A time as the lines show it: cut to a tenth of a second.
pub fn to_tenths(d: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_millis(d.as_millis() as u64 / 100 * 100)
}

/// The `<error>` of a model the pod's deadline stopped before it was sent.
pub fn deadline_came_first_error() -> String {
    "not checked: the check pod's deadline came first".to_owned()
}

/// The `<error>` of a model the pod's deadline cut while it waited for an answer: `seconds` is the model's own
/// time, from its start to the cut, not the run's.
pub fn deadline_cut_error(seconds: &str, may_load_on_first_use: bool) -> String {
    with_first_use_tail(
        format!("no answer in {seconds} s, when the check pod's deadline came"),
        may_load_on_first_use,
    )
}

/// The `<error>` of every model when the pod's deadline had already passed as the probe started: nothing was
/// sent. Seen when the node's clock is ahead of the driver's by more than the deadline.
pub fn deadline_passed_error(seconds_ago: &str) -> String {
    format!(
        "not checked: the check pod's deadline had passed {seconds_ago} s before the probe started — is this node's clock ahead of the machine that ran jr2 up?"
    )
}

/// `warning:` line of a `JR2_PROBE_DEADLINE` that is not a Unix time in seconds (`value` escaped, cut).
pub fn deadline_unusable(value: &str) -> String {
    format!(
        "warning: JR2_PROBE_DEADLINE={value} is not a Unix time in seconds; the probe does not stop before the pod's deadline"
    )
}

/// `warning:` line of a CA file the environment names that cannot be used (`why`: the error, escaped): the others
/// are trusted, as Node.js goes on without the file.
pub fn ca_file_warning(why: &str) -> String {
    format!("warning: provider: {why}; going on without it")
}

/// The `<error>` of a model the preflight cannot send yet: `not supported by the preflight yet: <why>`.
pub fn unsupported_error(why: &str) -> String {
    format!("not supported by the preflight yet: {why}")
}

/// A duration in seconds as the lines write it: `120`, or `0.5` for a fraction.
pub fn seconds(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// `<host>[:port]` (a result's `host`) names this machine: `localhost` (or a name under it), 127.0.0.0/8, `[::1]`.
pub fn is_local_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        match host.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            _ => host,
        }
    };
    let lower = name.to_ascii_lowercase();
    lower == "localhost"
        || lower.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn failure_lines(r: &ModelResult, origin: &Origin) -> Vec<String> {
    let from = origin_phrase(origin);
    let error = r.error.as_deref().unwrap_or("no detail");
    let key_refused = r.outcome == Outcome::KeyRefused;
    let got_503 = r.http_status == Some(503) && r.outcome == Outcome::Unavailable;
    let mut lines = Vec::with_capacity(7);
    match &r.route {
        Route::Custom {
            api_key_set,
            max_tokens_set,
        } => {
            lines.push(format!(
                "error: provider preflight failed for model \"{}\" against {} ({from}, as a Turn calls it): {error}",
                r.model, r.host
            ));
            if key_refused {
                lines.push(
                    if *api_key_set {
                        hint::CUSTOM_KEY_HELD
                    } else {
                        hint::CUSTOM_KEY_WANTED
                    }
                    .to_owned(),
                );
                lines.push(hint::MODEL_ID.to_owned());
            } else {
                // The localhost hint only where the base URL is local (issue 40, item 13): after a timeout against
                // a LAN address it names a cause that is not there.
                if is_local_host(&r.host) {
                    lines.push(hint::LOCALHOST.to_owned());
                }
                lines.extend([hint::MODEL_ID, hint::VLLM_TOOLS, hint::LENGTH].map(str::to_owned));
                if *api_key_set {
                    lines.push(hint::CUSTOM_KEY_HELD.to_owned());
                }
                if r.outcome == Outcome::Length && !*max_tokens_set && r.max_tokens == 1 {
                    lines.push(hint::no_max_tokens(&r.id));
                }
            }
        }
        Route::Catalog {
            provider,
            via_custodian,
            key_env,
            key_held,
            gateway,
        } => {
            let via = if *via_custodian {
                "through a Custodian"
            } else {
                "direct"
            };
            lines.push(format!(
                "error: provider preflight failed for model \"{}\" toward {} ({from}, {via}, as a Turn calls it): {error}",
                r.model, r.host
            ));
            let egress = format!(
                "  - the pods may have no egress to {} (a NetworkPolicy, a firewall, no route out of the cluster)",
                r.host
            );
            let key = if *key_held {
                format!(
                    "  - the held secret {key_env} may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)"
                )
            } else {
                format!(
                    "  - no Harness pod holds a key of {provider}: add {key_env} to `secrets` in jr2.config.ts"
                )
            };
            let hop_failed = matches!(
                r.findings.cause,
                Some(Cause::ProxyUnreachable | Cause::CustodianUnreachable)
            );
            if key_refused || hop_failed {
                // A refused key: the endpoint answered. A proxy or Custodian that failed: the pods' egress to the
                // provider was never tried; the cause's line says which hop to fix.
                lines.push(key);
            } else {
                lines.push(egress);
                lines.push(key);
            }
            lines.push(hint::CATALOG_CA.to_owned());
            if *gateway {
                lines.push(format!(
                    "  - the gateway {} may not answer, or may not serve {}",
                    r.host, r.id
                ));
            }
        }
    }
    if got_503 {
        lines.push(hint::STATUS_503.to_owned());
    }
    lines
}

#[cfg(test)]
mod tests {
    //! Every line form of the contract, snapshotted: a changed byte fails here first.

    use super::*;
    use crate::contract::api_kind::ApiKind;
    use crate::contract::outcome::Code;
    use std::time::Duration;

    fn result(
        model: &str,
        route: Route,
        outcome: Outcome,
        error: &str,
        status: Option<u16>,
    ) -> ModelResult {
        let api = if model.starts_with("google/") {
            ApiKind::GoogleGenerativeAi
        } else {
            ApiKind::OpenAiCompletions
        };
        ModelResult {
            base_url: "https://example.invalid/v1".to_owned(),
            host: if matches!(route, Route::Custom { .. }) {
                "10.0.0.5:8000"
            } else {
                "api.anthropic.com"
            }
            .to_owned(),
            route,
            error: (!error.is_empty()).then(|| error.to_owned()),
            http_status: status,
            max_tokens: 1024,
            elapsed_ms: 1234,
            tries: vec![
                crate::contract::verdict::Try {
                    n: 1,
                    status,
                    outcome,
                    wait_asked_ms: None,
                    wait_taken_ms: 0,
                    timings: Default::default()
                };
                if outcome == Outcome::Busy { 4 } else { 1 }
            ],
            ..ModelResult::test(model, api, outcome)
        }
    }

    fn custom(key: bool) -> Route {
        Route::Custom {
            api_key_set: key,
            max_tokens_set: true,
        }
    }

    fn catalog(custodian: bool, held: bool, gateway: bool) -> Route {
        Route::Catalog {
            provider: "anthropic".to_owned(),
            via_custodian: custodian,
            key_env: "ANTHROPIC_API_KEY".to_owned(),
            key_held: held,
            gateway,
        }
    }

    fn pod() -> Origin {
        Origin::Node {
            name: "worker-2".to_owned(),
        }
    }

    fn block(cases: &[(&str, Vec<String>)]) -> String {
        cases
            .iter()
            .map(|(name, lines)| format!("# {name}\n{}\n", lines.join("\n")))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Issue 40, item 13: the localhost hint only for a local base URL.
    #[test]
    fn local_hosts() {
        for host in [
            "localhost",
            "localhost:8000",
            "api.localhost:80",
            "127.0.0.1:8000",
            "127.1.2.3",
            "[::1]:8000",
            "[::1]",
        ] {
            assert!(is_local_host(host), "{host}");
        }
        for host in [
            "10.0.0.5:8000",
            "192.168.1.20",
            "vllm.internal:8000",
            "[fd00::1]:8000",
            "localhost.example.com",
        ] {
            assert!(!is_local_host(host), "{host}");
        }
        // The hint where the base URL is local, none after a timeout against a LAN address.
        let q = "vllm/Qwen/Qwen3-32B";
        let mut local = result(
            q,
            custom(false),
            Outcome::Unreachable,
            "connection refused",
            None,
        );
        local.host = "127.0.0.1:8000".to_owned();
        let lan = result(
            q,
            custom(false),
            Outcome::Timeout,
            "no answer in 120 s",
            None,
        );
        insta::assert_snapshot!(block(&[
            ("a local base URL", model_lines(&local, &pod())),
            ("a LAN address", model_lines(&lan, &pod())),
        ]));
    }

    #[test]
    fn custom_provider_lines() {
        let q = "vllm/Qwen/Qwen3-32B";
        let http = "HTTP 404: The model `Qwen/Qwen3-32B` does not exist.";
        let timeout = timeout_error(&seconds(Duration::from_secs(120)), true);
        insta::assert_snapshot!(block(&[
            (
                "error, no apiKey, in a pod",
                model_lines(
                    &result(q, custom(false), Outcome::Http, http, Some(404)),
                    &pod()
                )
            ),
            (
                "error, apiKey set, in a pod",
                model_lines(
                    &result(q, custom(true), Outcome::Http, http, Some(404)),
                    &pod()
                )
            ),
            (
                "error, by hand",
                model_lines(
                    &result(
                        q,
                        custom(false),
                        Outcome::Unreachable,
                        "connection refused",
                        None
                    ),
                    &Origin::ThisMachine
                )
            ),
            (
                "401, apiKey set",
                model_lines(
                    &result(
                        q,
                        custom(true),
                        Outcome::KeyRefused,
                        "HTTP 401: Unauthorized",
                        Some(401)
                    ),
                    &pod()
                )
            ),
            (
                "401, no apiKey",
                model_lines(
                    &result(
                        q,
                        custom(false),
                        Outcome::KeyRefused,
                        "HTTP 401: Unauthorized",
                        Some(401)
                    ),
                    &pod()
                )
            ),
            (
                "503 after the retries, apiKey set",
                model_lines(
                    &result(
                        q,
                        custom(true),
                        Outcome::Unavailable,
                        "HTTP 503: Loading model",
                        Some(503)
                    ),
                    &pod()
                )
            ),
            (
                "timeout",
                model_lines(
                    &result(q, custom(false), Outcome::Timeout, &timeout, None),
                    &pod()
                )
            ),
        ]));
    }

    #[test]
    fn catalog_lines() {
        let m = "anthropic/claude-haiku-4-5";
        let http = "HTTP 404: model: claude-haiku-4-5";
        insta::assert_snapshot!(block(&[
            (
                "error, through a Custodian",
                model_lines(
                    &result(
                        m,
                        catalog(true, true, false),
                        Outcome::Http,
                        http,
                        Some(404)
                    ),
                    &pod()
                )
            ),
            (
                "error, direct, by hand",
                model_lines(
                    &result(
                        m,
                        catalog(false, true, false),
                        Outcome::Unreachable,
                        "cannot resolve api.anthropic.com",
                        None
                    ),
                    &Origin::ThisMachine
                )
            ),
            (
                "401: the held secret first, no egress line",
                model_lines(
                    &result(
                        m,
                        catalog(true, true, false),
                        Outcome::KeyRefused,
                        "HTTP 401: invalid x-api-key",
                        Some(401)
                    ),
                    &pod()
                )
            ),
            (
                "no Harness pod holds a key",
                model_lines(
                    &result(
                        m,
                        catalog(false, false, false),
                        Outcome::KeyRefused,
                        "HTTP 401: x-api-key header is required",
                        Some(401)
                    ),
                    &pod()
                )
            ),
            (
                "gateway, 503 after the retries",
                model_lines(
                    &result(
                        m,
                        catalog(true, true, true),
                        Outcome::Unavailable,
                        "HTTP 503: no healthy upstream",
                        Some(503)
                    ),
                    &pod()
                )
            ),
            (
                "gateway timeout",
                model_lines(
                    &result(
                        m,
                        catalog(true, true, true),
                        Outcome::Timeout,
                        &timeout_error("120", true),
                        None
                    ),
                    &pod()
                )
            ),
            (
                "timeout without a gateway",
                model_lines(
                    &result(
                        m,
                        catalog(true, true, false),
                        Outcome::Timeout,
                        &timeout_error("120", false),
                        None
                    ),
                    &pod()
                )
            ),
            (
                "busy on Gemini is an error",
                model_lines(
                    &result(
                        "google/gemini-2.5-flash",
                        catalog(true, true, false),
                        Outcome::Busy,
                        "HTTP 429: Resource has been exhausted",
                        Some(429)
                    ),
                    &pod()
                )
            ),
        ]));
    }

    #[test]
    fn warnings_and_progress() {
        let m = "anthropic/claude-haiku-4-5";
        insta::assert_snapshot!(block(&[
            (
                "text",
                model_lines(
                    &result(m, catalog(true, true, false), Outcome::Text, "", Some(200)),
                    &pod()
                )
            ),
            (
                "busy",
                model_lines(
                    &result(
                        m,
                        catalog(true, true, false),
                        Outcome::Busy,
                        "HTTP 529: Overloaded",
                        Some(529)
                    ),
                    &pod()
                )
            ),
            (
                "completed",
                model_lines(
                    &result(m, catalog(true, true, false), Outcome::Ok, "", Some(200)),
                    &pod()
                )
            ),
            (
                "skipped",
                vec![skipped_warning(&[
                    m.to_owned(),
                    "vllm/Qwen/Qwen3-32B".to_owned()
                ])]
            ),
            (
                "pending",
                vec![pending(
                    "Unschedulable",
                    "0/3 nodes are available: 3 Insufficient memory."
                )]
            ),
            (
                "network policy",
                vec![network_policy_warning("deny-egress")]
            ),
            (
                "network policy, the other way",
                vec![network_policy_opens_warning(
                    "allow-harness",
                    "app.kubernetes.io/name=jr2-provider-preflight"
                )]
            ),
            (
                "network policy, ingress held",
                vec![network_policy_ingress_held_warning(
                    "vllm-from-harness",
                    "app.kubernetes.io/name=jr2-provider-preflight"
                )]
            ),
            (
                "network policy, ingress freer",
                vec![network_policy_ingress_freer_warning("vllm-from-preflight")]
            ),
            (
                "loopback, by hand",
                vec![loopback_warning("127.0.0.1:8000")]
            ),
        ]));
    }

    /// A busy result whose tries had `statuses` (`None`: the try got no answer, after `stall_ms`).
    fn busy(model: &str, statuses: &[Option<u16>], stall_ms: u64, error: &str) -> ModelResult {
        let mut r = result(
            model,
            catalog(true, true, false),
            Outcome::Busy,
            error,
            statuses.iter().rev().find_map(|s| *s),
        );
        r.tries = statuses
            .iter()
            .enumerate()
            .map(|(i, status)| crate::contract::verdict::Try {
                n: i as u32 + 1,
                status: *status,
                outcome: if status.is_some() {
                    Outcome::Busy
                } else {
                    Outcome::Timeout
                },
                wait_asked_ms: None,
                wait_taken_ms: 0,
                timings: crate::contract::verdict::Timings {
                    total_ms: if status.is_some() { 3 } else { stall_ms },
                    ..Default::default()
                },
            })
            .collect();
        r
    }

    #[test]
    fn busy_forms() {
        let m = "anthropic/claude-haiku-4-5";
        let stalled = busy_then_no_answer_error(2, "9.9", "HTTP 429: Rate limit reached");
        let mut gemini = busy(
            "google/gemini-2.5-flash",
            &[Some(429), None],
            118_040,
            &busy_then_no_answer_error(2, "118", "HTTP 429: Resource has been exhausted"),
        );
        gemini.api = ApiKind::GoogleGenerativeAi;
        gemini.level = Outcome::Busy.level(gemini.api);
        insta::assert_snapshot!(block(&[
            (
                "one try",
                model_lines(
                    &busy(m, &[Some(429)], 0, "HTTP 429: Rate limit reached"),
                    &pod()
                )
            ),
            (
                "an overload in the stream",
                model_lines(
                    &busy(
                        m,
                        &[Some(200), Some(200)],
                        0,
                        "HTTP 200, then an error in the stream: Overloaded"
                    ),
                    &pod()
                )
            ),
            (
                "429, then the retry got no answer",
                model_lines(&busy(m, &[Some(429), None], 9_987, &stalled), &pod())
            ),
            (
                "429 twice, then the last retry got no answer",
                model_lines(
                    &busy(m, &[Some(429), Some(429), None], 4_000, &stalled),
                    &pod()
                )
            ),
            (
                "Gemini: 429, then the retry got no answer, is an error",
                model_lines(&gemini, &pod())
            ),
        ]));
    }

    #[test]
    fn unchecked_and_cut_models() {
        let q = "vllm/Qwen/Qwen3-32B";
        let mut length = result(
            q,
            Route::Custom {
                api_key_set: false,
                max_tokens_set: false,
            },
            Outcome::Length,
            "stop reason \"length\" before any tool call (the token cap sent was 1)",
            Some(200),
        );
        length.max_tokens = 1;
        let unchecked = |model: &str, error: &str| {
            result(model, custom(false), Outcome::NotChecked, error, None)
        };
        let results = [
            result(
                q,
                custom(false),
                Outcome::Timeout,
                &deadline_cut_error("0.8", true),
                None,
            ),
            unchecked("vllm/a", &deadline_came_first_error()),
            result(
                "anthropic/claude-haiku-4-5",
                catalog(true, true, false),
                Outcome::Timeout,
                &deadline_cut_error("2.5", false),
                None,
            ),
            unchecked("vllm/b", &deadline_came_first_error()),
        ];
        insta::assert_snapshot!(block(&[
            (
                "length, harness.provider sets no maxTokens",
                model_lines(&length, &pod())
            ),
            ("cut by the deadline, then not checked", {
                result_lines(&results, &pod())
            }),
            (
                "the deadline had passed",
                result_lines(
                    &[
                        unchecked("vllm/a", &deadline_passed_error("42")),
                        unchecked("vllm/b", &deadline_passed_error("42")),
                    ],
                    &pod()
                )
            ),
            (
                "one model not checked, alone",
                model_lines(&unchecked("vllm/a", &deadline_came_first_error()), &pod())
            ),
        ]));
    }

    #[test]
    fn seconds_are_whole_or_one_decimal() {
        assert_eq!(seconds(Duration::from_secs(120)), "120");
        assert_eq!(seconds(Duration::from_millis(500)), "0.5");
        let _ = Code::Ok;
    }

    #[test]
    fn check_pod_failure_lines() {
        let stopped = vec![
            pod_stopped(
                "probe ran out of memory, limit 64Mi",
                &["anthropic/claude-haiku-4-5"],
            ),
            not_checked("vllm/Qwen/Qwen3-32B"),
            not_checked("google/gemini-2.5-flash"),
        ];
        // Two models in flight: both named (issue 27, item 17).
        assert_eq!(
            pod_stopped("Evicted", &["vllm/delay-s1", "vllm/delay-s2"]),
            "error: provider preflight: the check pod stopped (Evicted) while the check was on models \"vllm/delay-s1\", \"vllm/delay-s2\""
        );
        insta::assert_snapshot!(block(&[
            (
                "image",
                vec![pod_cannot_start_image(
                    "ghcr.io/jr2/probe:0.1.0",
                    "rpc error: code = NotFound desc = failed to pull and unpack image \"ghcr.io/jr2/probe:0.1.0\": not found"
                )]
            ),
            (
                "envFrom Secret missing",
                vec![pod_cannot_start_env_from("provider-keys")]
            ),
            (
                "env key missing",
                vec![pod_cannot_start_env_key(
                    "ANTHROPIC_API_KEY",
                    "provider-keys"
                )]
            ),
            (
                "Custodian volume",
                vec![pod_cannot_start_custodian_volume(
                    "anthropic",
                    "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found"
                )]
            ),
            (
                "Custodian refused",
                vec![pod_custodian_refused("ANTHROPIC_API_KEY", "empty-value")]
            ),
            (
                "out of memory",
                vec![pod_out_of_memory("custodian", "64Mi")]
            ),
            (
                "other start failure",
                vec![pod_cannot_start_other(
                    "CreateContainerError",
                    "failed to reserve container name"
                )]
            ),
            ("stopped", stopped),
            (
                "stopped before any model",
                vec![
                    pod_stopped_before_any_model(
                        "DeadlineExceeded: Pod was active on the node longer than the specified deadline"
                    ),
                    not_checked("vllm/ok"),
                ]
            ),
            (
                "stopped: the probe's own error",
                vec![with_probe_error(
                    &pod_stopped_before_any_model("Error, exit code 2"),
                    "--spec: schema \"jr2.dev/provider-preflight-run/v2\" is not jr2.dev/provider-preflight-run/v1"
                )]
            ),
            (
                "a pod of two placements",
                vec![
                    pod_cannot_start_image(
                        "ghcr.io/jr2/probe:0.1.0",
                        "rpc error: code = NotFound desc = failed to pull and unpack image \"ghcr.io/jr2/probe:0.1.0\": not found"
                    ),
                    placement_detail("gpu", Some("kind-worker2")),
                    not_checked("vllm/Qwen/Qwen3-32B"),
                    not_checked("vllm/ok"),
                ]
            ),
            (
                "a placement whose pod was not scheduled",
                vec![placement_detail("sandbox", None)]
            ),
            (
                "refused at create",
                vec![cluster_refused(
                    "pods \"jr2-preflight-demo-harness-abcd1234\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10"
                )]
            ),
            (
                "did not start",
                vec![pod_did_not_start(
                    &seconds(Duration::from_secs(300)),
                    "Unschedulable",
                    "0/3 nodes are available: 3 Insufficient memory."
                )]
            ),
            (
                "Events forbidden",
                vec![events_forbidden_warning(
                    "events is forbidden: User \"dev\" cannot list resource \"events\" in API group \"\" in the namespace \"demo\""
                )]
            ),
        ]));
    }

    #[test]
    fn driver_run_lines() {
        let pod = "jr2-preflight-demo-harness-abcd1234";
        insta::assert_snapshot!(block(&[
            ("interrupted", vec![interrupted()]),
            (
                "cannot reach the cluster",
                vec![cannot_reach_cluster(
                    "failed to read kubeconfig from \"/home/op/.kube/config\": No such file or directory (os error 2)"
                )]
            ),
            (
                "delete not confirmed",
                vec![pod_may_still_exist("demo", pod)]
            ),
            ("kept", vec![pod_kept("demo", pod)]),
            (
                "a required permission denied",
                vec![
                    permission_missing("create", "pods", "demo"),
                    permission_missing("get", "pods/log", "demo"),
                    permission_next_action("demo"),
                ]
            ),
            (
                "an optional permission denied",
                vec![permission_lacking(
                    "list and watch",
                    "events",
                    "demo",
                    "the verdict rests on the pod's status alone, and a Secret volume that does not mount shows only as a timeout"
                )]
            ),
            (
                "an optional permission of the cluster denied",
                vec![cluster_permission_lacking(
                    "list and watch",
                    "nodes",
                    "a check pod's node that stops answering is not watched, so such a check ends at its --timeout without naming the node"
                )]
            ),
            (
                "Pod Security would refuse the pod",
                vec![
                    pod_security_refusal(
                        "demo",
                        "restricted",
                        pod,
                        "spec.initContainers[0].securityContext.capabilities.drop",
                        "capabilities.drop must include \"ALL\" (restricted)"
                    ),
                    pod_security_also(
                        "spec.initContainers[0].securityContext.allowPrivilegeEscalation",
                        "allowPrivilegeEscalation must be false (restricted)"
                    ),
                    pod_security_hint(),
                ]
            ),
            (
                "evidence not written",
                vec![evidence_not_written(
                    "/tmp/evidence",
                    "Permission denied (os error 13)"
                )]
            ),
        ]));
    }

    /// What a real cluster does to the check pod's create and run (issue 40): a slow admission, its warnings, a
    /// namespace being deleted, an API server lost mid-run, a proxy that refuses, clocks that disagree.
    #[test]
    fn real_cluster_lines() {
        insta::assert_snapshot!(block(&[
            ("a slow create", vec![create_slow("10", "40")]),
            (
                "a create that timed out",
                vec![create_timed_out(
                    "40",
                    "Timeout: request did not complete within the allotted timeout"
                )]
            ),
            (
                "a warning of the API server",
                vec![api_warning(
                    "Validation failed for ValidatingAdmissionPolicy 'no-pods-after' with binding 'no-pods-after': pods are refused from 2027-01-01"
                )]
            ),
            (
                "the namespace is being deleted",
                vec![namespace_terminating(
                    "demo",
                    "pods \"jr2-preflight-demo-harness-abcd1234\" is forbidden: unable to create new content in namespace demo because it is being terminated"
                )]
            ),
            (
                "the namespace was deleted mid-run",
                vec![pod_stopped_before_any_model(&namespace_deleted_reason(
                    "demo"
                ))]
            ),
            (
                "the API server lost",
                vec![
                    api_server_lost_warning("TLS failed: invalid peer certificate: UnknownIssuer"),
                    api_server_lost("Connection refused (os error 111)"),
                ]
            ),
            (
                "a proxy that refuses",
                vec![cannot_reach_cluster(&proxy_unreachable(
                    "127.0.0.1:9",
                    "kubeconfig proxy-url",
                    "Connection refused (os error 111)"
                ))]
            ),
            ("clocks that disagree", vec![clock_skew("54")]),
        ]));
    }

    #[test]
    fn ca_file_lines() {
        insta::assert_snapshot!(block(&[(
            "a CA file of the environment that cannot be read",
            vec![ca_file_warning(
                "cannot read the CA file /missing.pem named by NODE_EXTRA_CA_CERTS: No such file or directory (os error 2)"
            )]
        )]));
    }

    /// The lines a known cause adds after the contract's lines (which stay byte for byte), each cause's next
    /// action, the forced-tool note and the progress line.
    #[test]
    fn endpoint_cause_lines() {
        let m = "llama/SmolLM2";
        let with = |outcome: Outcome, error: &str, status: Option<u16>, cause: Cause| {
            let mut r = result(m, custom(false), outcome, error, status);
            r.findings.cause = Some(cause);
            r
        };
        let no_window = 1024 + crate::prompt::estimated_tokens();
        let context =
            |served: u64, from_window: bool, server: EndpointKind| Cause::ContextTooSmall {
                served,
                needed: if from_window { 32768 } else { no_window },
                from_window,
                server,
                slots: None,
                prompt_cut: false,
            };
        let mut cases: Vec<(&str, ModelResult)> = vec![
            (
                "llama.cpp template without tools (text)",
                with(
                    Outcome::Text,
                    "",
                    Some(200),
                    Cause::LlamaCppTemplateWithoutTools,
                ),
            ),
            (
                "llama.cpp without jinja",
                with(
                    Outcome::Http,
                    "HTTP 500: tools param requires --jinja flag",
                    Some(500),
                    Cause::LlamaCppWithoutJinja,
                ),
            ),
            (
                "vLLM without its tool flags: the contract's line says it already",
                with(
                    Outcome::Http,
                    "HTTP 400: \"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
                    Some(400),
                    Cause::VllmToolsNotEnabled,
                ),
            ),
            (
                "a LiteLLM gateway whose backend failed",
                with(
                    Outcome::Http,
                    "HTTP 500: litellm.APIConnectionError: OpenAIException - Connection error.",
                    Some(500),
                    Cause::GatewayBackendFailed {
                        error: "APIConnectionError".to_owned(),
                    },
                ),
            ),
            (
                "length while thinking",
                with(
                    Outcome::Length,
                    "stop reason \"length\" before any tool call (the token cap sent was 1024)",
                    Some(200),
                    Cause::LengthWhileThinking,
                ),
            ),
            (
                "length: text until the cap, no reasoning",
                with(
                    Outcome::Length,
                    "stop reason \"length\" before any tool call (the token cap sent was 1024)",
                    Some(200),
                    Cause::TextUntilCap,
                ),
            ),
            (
                "a tool call the cap cut",
                with(
                    Outcome::Length,
                    &call_cut_error("length", 1024),
                    Some(200),
                    Cause::ToolCallCut,
                ),
            ),
            (
                "context smaller than contextWindow, llama.cpp",
                with(
                    Outcome::Http,
                    &context_too_small_error(2048, 32768, None),
                    Some(200),
                    context(2048, true, EndpointKind::LlamaCpp),
                ),
            ),
            (
                "context smaller than the cap and the probe's prompt, vLLM",
                with(
                    Outcome::Http,
                    &context_too_small_error(1024, no_window, None),
                    Some(200),
                    context(1024, false, EndpointKind::Vllm),
                ),
            ),
            (
                "context, a server of unknown kind, large enough for pi's clamp",
                with(
                    Outcome::Http,
                    &context_too_small_error(8192, 32768, None),
                    Some(200),
                    context(8192, true, EndpointKind::Unknown),
                ),
            ),
        ];
        let mut ignored = result(m, custom(false), Outcome::Text, "", Some(200));
        ignored.findings.tool_choice_ignored = true;
        cases.push(("a forced tool choice answered in text", ignored));
        // Issue 27, items 5-8.
        let mut capped = with(
            Outcome::Length,
            &call_in_capped_message_error("length", "probe", 24),
            Some(200),
            Cause::ToolCallCut,
        );
        capped.max_tokens = 24;
        capped.tool_name = Some("probe".into());
        cases.push(("a complete call in a message the cap stopped", capped));
        cases.push((
            "context, llama.cpp without a window: the probe's own prompt does not fit",
            with(
                Outcome::Http,
                &context_too_small_error(64, crate::prompt::estimated_tokens(), None),
                Some(200),
                Cause::ContextTooSmall {
                    served: 64,
                    needed: crate::prompt::estimated_tokens(),
                    from_window: false,
                    server: EndpointKind::LlamaCpp,
                    slots: None,
                    prompt_cut: false,
                },
            ),
        ));
        for served in [1024, 8192] {
            cases.push((
                "context smaller than contextWindow, llama.cpp under -np 4",
                with(
                    Outcome::Http,
                    &context_too_small_error(served, 32768, None),
                    Some(200),
                    Cause::ContextTooSmall {
                        served,
                        needed: 32768,
                        from_window: true,
                        server: EndpointKind::LlamaCpp,
                        slots: Some(4),
                        prompt_cut: false,
                    },
                ),
            ));
        }
        cases.push((
            "a timeout while llama-server's slots were busy",
            with(
                Outcome::Timeout,
                &timeout_queued_error("120", 1),
                None,
                Cause::LlamaCppSlotsBusy { slots: 1 },
            ),
        ));
        // Ollama (issue 38): its refusals, its queue, its context, and what it drops of a Turn's request.
        cases.push((
            "Ollama: a TEMPLATE without .Tools",
            with(
                Outcome::Http,
                "HTTP 400: registry.ollama.ai/library/smol:latest does not support tools",
                Some(400),
                Cause::OllamaTemplateWithoutTools,
            ),
        ));
        cases.push((
            "Ollama: an unknown model",
            with(
                Outcome::Http,
                "HTTP 404: model 'nope:7b' not found",
                Some(404),
                Cause::OllamaModelNotFound,
            ),
        ));
        cases.push((
            "Ollama: a base URL without /v1",
            with(
                Outcome::Http,
                "HTTP 404: 404 page not found",
                Some(404),
                Cause::OllamaBaseUrlWithoutV1,
            ),
        ));
        cases.push((
            "Ollama: a timeout with the model loaded",
            with(
                Outcome::Timeout,
                &timeout_ollama_loaded_error("120"),
                None,
                Cause::OllamaLoadedNoAnswer,
            ),
        ));
        cases.push((
            "Ollama: a timeout after text, with the model loaded",
            with(
                Outcome::Timeout,
                &timeout_ollama_held_back_error("120"),
                None,
                Cause::OllamaHeldBackCall,
            ),
        ));
        cases.push((
            "Ollama: num_ctx smaller than contextWindow",
            with(
                Outcome::Http,
                &context_too_small_error(2048, 32768, Some(EndpointKind::Ollama)),
                Some(200),
                context(2048, true, EndpointKind::Ollama),
            ),
        ));
        cases.push((
            "Ollama: num_ctx smaller than the probe's own prompt",
            with(
                Outcome::Http,
                &context_too_small_error(
                    64,
                    crate::prompt::estimated_tokens(),
                    Some(EndpointKind::Ollama),
                ),
                Some(200),
                Cause::ContextTooSmall {
                    served: 64,
                    needed: crate::prompt::estimated_tokens(),
                    from_window: false,
                    server: EndpointKind::Ollama,
                    slots: None,
                    prompt_cut: false,
                },
            ),
        ));
        cases.push((
            "Ollama: a stream cut at its repeat limit",
            with(
                Outcome::Protocol,
                STREAM_CUT_ERROR,
                Some(200),
                Cause::OllamaRepeatLimit,
            ),
        ));
        cases.push((
            "Ollama: num_ctx smaller than the prompt it counted (it cut the prompt)",
            with(
                Outcome::Http,
                &context_cut_error(128),
                Some(200),
                Cause::ContextTooSmall {
                    served: 128,
                    needed: 129,
                    from_window: false,
                    server: EndpointKind::Ollama,
                    slots: None,
                    prompt_cut: true,
                },
            ),
        ));
        {
            use crate::contract::verdict::OllamaDrop;
            let mut r = result(m, custom(false), Outcome::Text, "", Some(200));
            r.findings.ollama_drops = vec![
                OllamaDrop::MaxCompletionTokens,
                OllamaDrop::DeveloperRole,
                OllamaDrop::Temperature,
            ];
            cases.push(("Ollama: a text answer, and what Ollama drops", r));
        }
        for why in [
            ContextUnchecked::GatewayWithoutContext,
            ContextUnchecked::ServerWithoutContext,
        ] {
            let mut r = result(m, custom(false), Outcome::Ok, "", Some(200));
            r.findings.context_unchecked = Some(why);
            cases.push(("a context that could not be learned", r));
        }
        let mut text = String::new();
        for (name, r) in &cases {
            text.push_str(&format!(
                "# {name}\n{}\n",
                model_lines(r, &Origin::ThisMachine).join("\n")
            ));
            if r.findings.cause.is_some() {
                text.push_str(&format!("nextAction: {}\n", next_action(r)));
            }
            text.push('\n');
        }
        text.push_str("# a Stand-in that goes around the Custodian\n");
        text.push_str(&stand_in_bypass_warning(
            "HTTPS_PROXY",
            "anthropic/claude-sonnet-4-5",
            "api.anthropic.com",
            "jr2-held-ANTHROPIC_API_KEY",
        ));
        text.push_str("\n\n");
        text.push_str("# waiting, by hand and through the driver\n");
        use crate::contract::events::WaitStage;
        for (s, stage) in [
            (30, WaitStage::NoAnswer),
            (60, WaitStage::Headers),
            (90, WaitStage::Text),
            (90, WaitStage::ToolCall),
            (30, WaitStage::OllamaLoaded),
            (30, WaitStage::OllamaNotLoaded),
        ] {
            text.push_str(&waiting(
                m,
                Duration::from_secs(s),
                Duration::from_secs(120),
                stage,
            ));
            text.push('\n');
        }
        text.push_str(&waiting(
            m,
            Duration::from_millis(500),
            Duration::from_millis(2500),
            WaitStage::NoAnswer,
        ));
        insta::assert_snapshot!(text);
    }

    /// Every outcome, on each API whose lines differ (OpenAI-compatible, Gemini, Bedrock) and each route whose
    /// hints differ (a custom endpoint with and without `apiKey`, a catalog model with and without a held key): its
    /// level, code and `nextAction` held against the lines it prints (issue 27, items 12, 13, 19). `jr2 up` switches
    /// on the JSON, a user reads the lines: they must say the same thing.
    #[test]
    fn every_outcome_s_json_agrees_with_its_lines() {
        let apis = [
            ("openai", ApiKind::OpenAiCompletions),
            ("google", ApiKind::GoogleGenerativeAi),
            ("bedrock", ApiKind::BedrockConverseStream),
        ];
        let routes = [
            ("custom, apiKey set", custom(true)),
            ("custom, no apiKey", custom(false)),
            ("catalog, key held", catalog(true, true, false)),
            ("catalog, no key held", catalog(false, false, false)),
        ];
        let mut table = String::new();
        for outcome in Outcome::ALL {
            for (api_name, api) in apis {
                for (route_name, route) in &routes {
                    let status = match outcome {
                        Outcome::Busy => Some(429),
                        Outcome::Unavailable => Some(503),
                        Outcome::KeyRefused => Some(401),
                        Outcome::Http => Some(500),
                        _ => None,
                    };
                    let mut r = result("m/x", route.clone(), outcome, "the error", status);
                    r.api = api;
                    r.level = outcome.level(api);
                    r.next_action = next_action(&r);
                    let lines = model_lines(&r, &pod());
                    let first = &lines[0];
                    // The level is the first line's word.
                    match r.level {
                        Level::Pass => assert!(first.starts_with("provider: "), "{first}"),
                        Level::Warning => assert!(first.starts_with("warning: "), "{first}"),
                        Level::Error => assert!(first.starts_with("error: "), "{first}"),
                    }
                    // An error never says there is nothing to do; a busy warning's action says what its line says
                    // of a Turn's tries.
                    if r.level == Level::Error {
                        assert!(
                            !r.next_action.starts_with("none"),
                            "{outcome:?} {api_name}: {}",
                            r.next_action
                        );
                    }
                    if outcome == Outcome::Busy && r.level == Level::Warning {
                        assert!(first.contains(turn_tries(api)), "{first}");
                        assert!(r.next_action.contains(turn_tries(api)), "{}", r.next_action);
                    }
                    // The key hint the lines give is the action the JSON gives.
                    if lines.iter().any(|l| l == hint::CUSTOM_KEY_WANTED) {
                        assert!(
                            r.next_action.contains("set harness.provider.apiKey"),
                            "{}",
                            r.next_action
                        );
                    }
                    if lines
                        .iter()
                        .any(|l| l.starts_with("  - no Harness pod holds a key of"))
                        && outcome == Outcome::KeyRefused
                    {
                        assert!(
                            r.next_action.contains("add ANTHROPIC_API_KEY to `secrets`"),
                            "{}",
                            r.next_action
                        );
                    }
                    if outcome == Outcome::KeyRefused
                        && !lines.iter().any(|l| {
                            l == hint::CUSTOM_KEY_WANTED || l.starts_with("  - no Harness pod")
                        })
                    {
                        assert_eq!(r.next_action, Code::KeyRefused.next_action());
                    }
                    assert_eq!(r.code, outcome.default_code());
                    table.push_str(&format!(
                        "# {} / {api_name} / {route_name}\nlevel: {:?}, code: {}\nnextAction: {}\n{}\n\n",
                        outcome.as_str(),
                        r.level,
                        r.code,
                        r.next_action,
                        lines.join("\n")
                    ));
                }
            }
        }
        insta::assert_snapshot!("outcome_table", table);
    }

    /// `the cap of 1 token`, not `1 tokens` (issue 27, item 19); larger caps keep the plural.
    #[test]
    fn a_cap_of_one_token_is_singular() {
        let mut r = result("vllm/m", custom(true), Outcome::Length, "stop", None);
        r.max_tokens = 1;
        for (cause, want) in [
            (
                Cause::ToolCallCut,
                "  - the tool call began, and the cap of 1 token cut its arguments: a Turn gets a call it cannot parse; raise maxTokens",
            ),
            (
                Cause::LengthWhileThinking,
                "  - the model streamed reasoning until the cap of 1 token: raise maxTokens, or turn thinking off",
            ),
        ] {
            assert_eq!(cause_line(&cause, &r).as_deref(), Some(want));
        }
        r.max_tokens = 2;
        assert!(
            cause_line(&Cause::TextUntilCap, &r)
                .unwrap()
                .contains("until the cap of 2 tokens instead")
        );
    }

    /// A Custodian that refuses connections is named, with its hint in place of the egress line (issue 27, item 1).
    #[test]
    fn a_custodian_that_refuses_is_the_hop_named() {
        let error = hop_unreachable(true, "127.0.0.1:15001", "connection refused");
        let mut r = result(
            "anthropic/claude-haiku-4-5",
            catalog(true, true, false),
            Outcome::Unreachable,
            &error,
            None,
        );
        r.findings.cause = hop_cause(&error);
        assert_eq!(r.findings.cause, Some(Cause::CustodianUnreachable));
        assert_eq!(
            model_lines(&r, &pod()),
            [
                "error: provider preflight failed for model \"anthropic/claude-haiku-4-5\" toward api.anthropic.com (from a pod on node worker-2, through a Custodian, as a Turn calls it): cannot reach the Custodian at 127.0.0.1:15001 (the check pod's proxy to the provider): connection refused",
                "  - the held secret ANTHROPIC_API_KEY may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)",
                "  - a private CA on that path must be in harness.caBundle",
                "  - the Custodian failed, not the provider: it did not accept connections after the probe waited 15 s; read the check pod's Custodian log (its configuration of the held secrets may be refused)",
            ]
        );
        assert!(next_action(&r).starts_with("read the Custodian's log"));
        assert_eq!(hop_cause("connection refused"), None);
    }
}
