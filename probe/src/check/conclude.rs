//! A model's result from its tries: how the last try ended becomes the outcome, code, `<error>`, answer and cause of
//! its [`ModelResult`], every string from the model through the redactor.

use std::time::Instant;

use super::attempt::{Attempt, End};
use super::stream;
use crate::contract::outcome::{Code, Outcome};
use crate::contract::render;
use crate::contract::verdict::{ModelResult, Try};
use crate::sanitize::Redactor;
use crate::target::Target;

/// What a result needs of the checker: the redactor every string from the model goes through.
pub(super) struct Concluder<'a> {
    pub(super) redactor: &'a Redactor,
}

impl Concluder<'_> {
    /// A busy model whose last retry got no answer before the model's deadline: busy (a warning; an error for
    /// Gemini and Vertex), and its `<error>` says the retry got no answer.
    pub(super) fn busy_then_no_answer(
        &self,
        target: &Target,
        start: Instant,
        tries: Vec<Try>,
        status: Option<u16>,
        busy_error: &str,
    ) -> ModelResult {
        let mut r = self.finish(
            target,
            start,
            tries,
            status,
            Outcome::Busy,
            Code::Busy,
            None,
            None,
        );
        let waited = render::stalled_retry(&r).unwrap_or_default();
        r.error = Some(crate::sanitize::escape_truncate(
            &render::busy_then_no_answer_error(r.tries.len(), &render::seconds(waited), busy_error),
            crate::sanitize::MAX_ERROR_CHARS,
        ));
        r
    }

    /// The result of a model whose last try is `attempt`, after `tries`.
    pub(super) fn conclude(
        &self,
        target: &Target,
        start: Instant,
        tries: Vec<Try>,
        attempt: Attempt,
    ) -> ModelResult {
        let cut = attempt.answer.len() >= stream::ANSWER_KEEP_BYTES;
        let answer =
            (!attempt.answer.is_empty()).then(|| self.redactor.clean_answer(&attempt.answer, cut));
        let status = attempt.status;
        match attempt.end {
            End::ToolCall { name } => {
                let mut r = self.finish(
                    target,
                    start,
                    tries,
                    status,
                    Outcome::Ok,
                    Code::Ok,
                    None,
                    answer,
                );
                r.tool_name = Some(self.redactor.clean_to(&name, 100));
                r
            }
            End::Text { stop } => {
                let mut r = self.finish(
                    target,
                    start,
                    tries,
                    status,
                    Outcome::Text,
                    Code::TextAnswer,
                    None,
                    answer,
                );
                r.stop_reason = stop.map(|s| self.redactor.clean_to(&s, 100));
                r
            }
            End::Length { stop } => {
                let stop_shown = self.redactor.clean_to(&stop, 40);
                let error = match (&attempt.call_complete, &attempt.call_arguments) {
                    (Some(name), _) => render::call_in_capped_message_error(
                        &stop_shown,
                        &self.redactor.clean_to(name, 100),
                        target.max_tokens,
                    ),
                    (None, Some(_)) => render::call_cut_error(&stop_shown, target.max_tokens),
                    (None, None) => format!(
                        "stop reason \"{stop_shown}\" before any tool call (the token cap sent was {})",
                        target.max_tokens
                    ),
                };
                use crate::contract::endpoint::Cause;
                let clamped = target.facts.context_window.filter(|w| {
                    *w > 0 && target.max_tokens >= crate::prompt::token_cap(u64::MAX, *w)
                });
                let cause = if attempt.call_arguments.is_some() {
                    Some(Cause::ToolCallCut)
                } else if let Some(context_window) = clamped {
                    // The window set the cap: that is what to change, whatever filled it.
                    Some(Cause::CapClamped { context_window })
                } else if attempt.reasoned || thought_in_content(&attempt.answer) {
                    Some(Cause::LengthWhileThinking)
                } else if answer.is_some() && target.max_tokens > 1 {
                    Some(Cause::TextUntilCap)
                } else {
                    None
                };
                let arguments = attempt.call_arguments.as_deref().map(|a| {
                    let cut = a.len() >= stream::ANSWER_KEEP_BYTES;
                    self.redactor.clean_answer(a, cut)
                });
                let mut r = self.finish(
                    target,
                    start,
                    tries,
                    status,
                    Outcome::Length,
                    Code::Length,
                    Some(error),
                    answer,
                );
                r.stop_reason = Some(self.redactor.clean_to(&stop, 100));
                // The tool the model called, when the call was complete: the cap stopped its message.
                r.tool_name = attempt
                    .call_complete
                    .as_deref()
                    .map(|n| self.redactor.clean_to(n, 100));
                r.findings.cause = cause;
                r.findings.tool_arguments = arguments;
                r
            }
            End::Fail {
                outcome,
                code,
                error,
            } => self.finish(
                target,
                start,
                tries,
                status,
                outcome,
                code,
                Some(error),
                answer,
            ),
        }
    }

    /// A result of `target` with these fields, and the next action they call for.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        &self,
        target: &Target,
        start: Instant,
        tries: Vec<Try>,
        http_status: Option<u16>,
        outcome: Outcome,
        code: Code,
        error: Option<String>,
        answer: Option<String>,
    ) -> ModelResult {
        let mut r = ModelResult {
            findings: Default::default(),
            model: target.model.clone(),
            id: target.id.clone(),
            api: target.api,
            base_url: self.redactor.display_url(target.base_url.as_str()),
            host: target.host(),
            route: target.route.clone(),
            outcome,
            level: outcome.level(target.api),
            code,
            next_action: code.next_action().to_owned(),
            error,
            http_status,
            stop_reason: None,
            tool_name: None,
            answer,
            max_tokens: target.max_tokens,
            elapsed_ms: start.elapsed().as_millis() as u64,
            tries,
        };
        r.next_action = render::next_action(&r);
        r
    }
}

/// Text that is a model's thinking, written in `content` by a server without a reasoning parser: it opens with
/// `<think>` or holds its closing `</think>` (the chat template opened it). Cut by the cap, it was thinking, not a
/// text answer (issue 27, item 11).
fn thought_in_content(answer: &str) -> bool {
    answer.trim_start().starts_with("<think>") || answer.contains("</think>")
}
