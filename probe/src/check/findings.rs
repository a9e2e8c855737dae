//! What the endpoint adds to a concluded result: its kind (and, for a custom endpoint, its metadata), the cause it
//! names, a served context too small for a Turn, a forced tool choice it ignored, and the look at llama-server's
//! slots that tells a queued request from a slow one.

use std::time::Instant;

use super::endpoint;
use super::settings::Settings;
use crate::contract::outcome::{Code, Outcome};
use crate::contract::render;
use crate::contract::verdict::ModelResult;
use crate::sanitize::Redactor;
use crate::target::Target;

/// What the endpoint's look needs of the checker: the redactor (the metadata's strings go through it) and the
/// limits (the model's timeout, for the queued request's `<error>`).
pub(super) struct EndpointLook<'a> {
    pub(super) redactor: &'a Redactor,
    pub(super) settings: Settings,
}

impl EndpointLook<'_> {
    /// What the endpoint tells about a concluded result: its kind (and, for a custom endpoint after a failure or
    /// for the context check, its metadata), the cause it names, and a forced tool choice it ignored.
    pub(super) async fn know_endpoint(
        &self,
        client: &reqwest::Client,
        target: &Target,
        mut r: ModelResult,
        seen: endpoint::Seen,
        deadline: tokio::time::Instant,
        slots_look: Option<SlotsLook>,
    ) -> ModelResult {
        let started = Instant::now();
        let mut seen_kind = seen.kind;
        let failed = r.outcome != Outcome::Ok;
        let learned = if endpoint::applies(target) && endpoint::reached(&r) {
            tokio::time::timeout_at(
                deadline,
                endpoint::learn(client, target, seen, failed, self.redactor),
            )
            .await
            .ok()
        } else {
            None
        };
        // A timeout: whether llama-server's slots were all busy (its queue held the request), in place of the guess
        // that the model loads on first use.
        if r.outcome == Outcome::Timeout
            && endpoint::applies(target)
            && r.findings.cause.is_none()
            && r.error
                .as_deref()
                .is_some_and(|e| e.starts_with("no answer in"))
            && let Some(waited) = match slots_look {
                Some(look) => look.seen().await,
                None => None,
            }
        {
            let seconds = render::seconds(self.settings.timeout);
            let (error, cause) = match waited {
                endpoint::Waited::LlamaCppSlotsBusy(slots) => (
                    render::timeout_queued_error(&seconds, slots),
                    crate::contract::endpoint::Cause::LlamaCppSlotsBusy { slots },
                ),
                // Text came, then nothing: no queue; Ollama's tool parser held the rest back.
                endpoint::Waited::OllamaLoaded
                    if matches!(
                        super::settings::current(),
                        super::WaitStage::Text | super::WaitStage::ToolCall
                    ) =>
                {
                    (
                        render::timeout_ollama_held_back_error(&seconds),
                        crate::contract::endpoint::Cause::OllamaHeldBackCall,
                    )
                }
                endpoint::Waited::OllamaLoaded => (
                    render::timeout_ollama_loaded_error(&seconds),
                    crate::contract::endpoint::Cause::OllamaLoadedNoAnswer,
                ),
            };
            r.error = Some(error);
            r.findings.cause = Some(cause);
            if waited == endpoint::Waited::OllamaLoaded {
                seen_kind = Some(crate::contract::endpoint::EndpointKind::Ollama);
            }
        }
        let asked = learned.is_some();
        let known = learned.or_else(|| seen_kind.map(crate::contract::endpoint::Endpoint::of));
        // The context could not be learned: said, not left silent (issue 27, item 6); an error keeps its own cause.
        if asked && r.level != crate::contract::outcome::Level::Error {
            r.findings.context_unchecked = endpoint::context_unchecked(known.as_ref(), target);
        }
        r.elapsed_ms += started.elapsed().as_millis() as u64;
        r.findings.tool_choice_ignored = target.tool_choice == crate::api::ToolChoice::Named
            && (r.outcome == Outcome::Text
                || (r.outcome == Outcome::Ok
                    && r.tool_name.as_deref() != Some(crate::prompt::TOOL_NAME)));
        let cause = self
            .cause(&r, known.as_ref(), target, seen)
            .or_else(|| r.findings.cause.take());
        if let Some(cause) = cause {
            if let crate::contract::endpoint::Cause::ContextTooSmall {
                served,
                needed,
                prompt_cut,
                ..
            } = cause
                && (matches!(
                    r.level,
                    crate::contract::outcome::Level::Pass
                        | crate::contract::outcome::Level::Warning
                ) || prompt_cut)
            {
                r.outcome = Outcome::Http;
                r.level = Outcome::Http.level(target.api);
                r.code = Code::ContextTooSmall;
                r.error = Some(if prompt_cut {
                    render::context_cut_error(served)
                } else {
                    render::context_too_small_error(served, needed, known.as_ref().map(|e| e.kind))
                });
            }
            r.findings.cause = Some(cause);
        }
        // Only for a request Ollama served: a refused one has nothing dropped to say.
        if known
            .as_ref()
            .is_some_and(|e| e.kind == crate::contract::endpoint::EndpointKind::Ollama)
            && matches!(r.outcome, Outcome::Ok | Outcome::Text | Outcome::Length)
        {
            r.findings.ollama_drops = ollama_drops(&r, target);
        }
        r.next_action = render::next_action(&r);
        // Nothing learned is no endpoint in the JSON.
        r.findings.endpoint = known.filter(|e| {
            *e != crate::contract::endpoint::Endpoint::of(
                crate::contract::endpoint::EndpointKind::Unknown,
            )
        });
        r
    }

    /// The cause the endpoint names for a result, if any: for a pass or a warning the context first (it fails every
    /// Turn), then the outcome's own.
    fn cause(
        &self,
        r: &ModelResult,
        known: Option<&crate::contract::endpoint::Endpoint>,
        target: &Target,
        seen: endpoint::Seen,
    ) -> Option<crate::contract::endpoint::Cause> {
        use crate::contract::endpoint::{Cause, EndpointKind};
        let kind = known.map(|e| e.kind);
        // A result that is already an error keeps the cause its own line names; the context is the next run's. Not
        // an answer to a prompt Ollama cut (its `length` or text answered what was left of it): the cut is the cause.
        if let Some(c) = known.and_then(|e| endpoint::context_cause(e, target, seen.prompt_tokens))
            && (r.level != crate::contract::outcome::Level::Error
                || (matches!(
                    c,
                    Cause::ContextTooSmall {
                        prompt_cut: true,
                        ..
                    }
                ) && matches!(r.outcome, Outcome::Text | Outcome::Length)))
        {
            return Some(c);
        }
        let error = r.error.as_deref().unwrap_or("");
        let ollama = kind == Some(EndpointKind::Ollama);
        match (r.outcome, r.code) {
            (_, Code::ToolsNotEnabled) if ollama => Some(Cause::OllamaTemplateWithoutTools),
            (_, Code::ModelNotFound) if ollama && error.contains("404 page not found") => {
                let path = target.base_url.path().trim_end_matches('/');
                (!path.ends_with("/v1")).then_some(Cause::OllamaBaseUrlWithoutV1)
            }
            (_, Code::ModelNotFound) if ollama => Some(Cause::OllamaModelNotFound),
            // Ollama's own cut: more than 30 repeats of one token end its generation with no stop reason.
            (Outcome::Protocol, _)
                if ollama
                    && seen.trailing_repeats >= OLLAMA_REPEAT_LIMIT
                    && error == render::STREAM_CUT_ERROR =>
            {
                Some(Cause::OllamaRepeatLimit)
            }
            (Outcome::Text, _)
                if kind == Some(EndpointKind::LlamaCpp)
                    && known.and_then(|e| e.supports_tools) == Some(false) =>
            {
                Some(Cause::LlamaCppTemplateWithoutTools)
            }
            (_, Code::ToolsNotEnabled) if error.contains("--jinja") => {
                Some(Cause::LlamaCppWithoutJinja)
            }
            (_, Code::ToolsNotEnabled) => Some(Cause::VllmToolsNotEnabled),
            (Outcome::Unreachable, _) if render::hop_cause(error).is_some() => {
                render::hop_cause(error)
            }
            _ if kind == Some(EndpointKind::Litellm) => {
                let message = error.split_once(": ").map_or(error, |(_, m)| m);
                endpoint::gateway_backend_error(message)
                    .map(|error| Cause::GatewayBackendFailed { error })
            }
            _ => None,
        }
    }
}

/// The repeats of one text piece that end Ollama's stream: it cuts at more than 30 of the runner's tokens, and the
/// stream shows those that came before the cut (31 for a piece that is one token; one less for some slack).
const OLLAMA_REPEAT_LIMIT: u32 = 30;

/// The look at llama-server's slots that runs beside a custom endpoint's tries ([`endpoint::slots_busy_before`]):
/// aborted when dropped, so a check that ends first leaves nothing running.
pub(super) struct SlotsLook(pub(super) tokio::task::JoinHandle<Option<endpoint::Waited>>);

impl SlotsLook {
    /// What the look saw: every slot busy (their number). It ends by the deadline, which has passed when this is
    /// asked.
    pub(super) async fn seen(mut self) -> Option<endpoint::Waited> {
        (&mut self.0).await.ok().flatten()
    }
}

impl Drop for SlotsLook {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What Ollama does to the request a Turn sends that the verdict cannot show (issue 38): it ignores
/// `max_completion_tokens` (it honours `max_tokens`), renders no `developer` message (its templates know `system`),
/// and, on `/v1`, forces temperature 1.0 when the request names none (pi names none), which explains a model that
/// answered in text this time.
fn ollama_drops(r: &ModelResult, target: &Target) -> Vec<crate::contract::verdict::OllamaDrop> {
    use crate::contract::verdict::OllamaDrop;
    let mut drops = Vec::new();
    if target.api != crate::api::ApiKind::OpenAiCompletions {
        return drops;
    }
    let body = crate::api::openai_completions::body_for(target);
    if body.get("max_completion_tokens").is_some() {
        drops.push(OllamaDrop::MaxCompletionTokens);
    }
    let developer = body
        .get("messages")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|m| {
            m.iter()
                .any(|m| m.get("role").and_then(serde_json::Value::as_str) == Some("developer"))
        });
    if developer {
        drops.push(OllamaDrop::DeveloperRole);
    }
    if r.outcome == Outcome::Text && body.get("temperature").is_none() {
        drops.push(OllamaDrop::Temperature);
    }
    drops
}
