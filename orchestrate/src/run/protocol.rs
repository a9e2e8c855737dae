//! The probe's protocol, read: its JSON lines (one [`ProbeEvent`] per line on stdout, the type the probe writes
//! them with) and its termination message (the compact [`Summary`]).
//!
//! This is the one place where the pod's text enters the driver, so it is cleaned here, as a provider's text is
//! cleaned in the probe: the pod runs an image and talks to servers the driver does not control, and what it says
//! goes to a terminal and to `jr2 up`'s JSON. Every string is redacted (the held values), escaped (ESC, OSC, bidi,
//! invisible characters, newlines: no forged second `error:` line) and cut (an `<error>` to the contract's 300
//! characters). What a line names of a model (its name, id, API, base URL, host and route) is the plan's, by the
//! model's index in the run spec, never the pod's; a `level` and `nextAction` are derived again from the outcome and
//! code.
//!
//! A line that names a model the pod's run spec does not have (an `index` past its models, a verdict of more models
//! than it has) is no event but a [`ProtocolError`]: the pod spoke out of turn (a probe image of another release, a
//! swapped or compromised one), and its run is over. The driver never sizes anything by what the pod says.

use jr2_probe::contract::ProbeEvent;
use jr2_probe::contract::endpoint::Cause;
use jr2_probe::contract::render;
use jr2_probe::contract::summary::Summary;
use jr2_probe::contract::verdict::{ModelResult, Origin, Route, Verdict};
use jr2_probe::sanitize::{MAX_ERROR_CHARS, Redactor};

use crate::plan::Resolved;

/// The longest short field of the pod's text kept (a node name, a model name the plan does not know, a version).
const MAX_NAME_CHARS: usize = 253;
/// The longest answer, stop reason or tool name kept (the probe keeps 400 characters of an answer).
const MAX_TEXT_CHARS: usize = 400;
/// The longest of the probe's own lines kept in its verdict.
const MAX_LINE_CHARS: usize = 1000;

/// A line of the pod's log that breaks the protocol: what the pod said that its run spec cannot mean.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    /// An event about a model index the run spec does not have.
    #[error(
        "its probe spoke out of turn: a {event} event for model index {index}, and its run spec has {models}"
    )]
    UnknownModel {
        /// The event's name (`result`, `modelStarted`, ...).
        event: &'static str,
        /// The index the pod named.
        index: usize,
        /// How many models its run spec has.
        models: usize,
    },
    /// A verdict of more models than the run spec has.
    #[error(
        "its probe spoke out of turn: a verdict of {said} models, and its run spec has {models}"
    )]
    TooManyModels {
        /// How many the verdict has.
        said: usize,
        /// How many the run spec has.
        models: usize,
    },
}

/// What the driver knows of a pod's models before its probe says anything, and how to clean what it says.
pub(super) struct Trusted<'a> {
    /// Cleans the pod's text.
    pub(super) redactor: &'a Redactor,
    /// The models' names, by the probe's index.
    pub(super) models: &'a [String],
    /// What the plan's validation resolved of each, by the same index.
    pub(super) resolved: &'a [Resolved],
}

impl Trusted<'_> {
    fn name(&self, text: &str) -> String {
        self.redactor.clean_to(text, MAX_NAME_CHARS)
    }

    /// The model `index`: the plan's name, or (an index the plan does not know) the pod's, cleaned.
    fn model(&self, index: usize, said: &str) -> String {
        self.models
            .get(index)
            .cloned()
            .unwrap_or_else(|| self.name(said))
    }

    fn origin(&self, origin: Origin) -> Origin {
        match origin {
            Origin::Node { name } => Origin::Node {
                name: self.name(&name),
            },
            Origin::ThisMachine => Origin::ThisMachine,
        }
    }

    /// A model's result as the driver keeps it: the plan's facts, every other string cleaned.
    fn result(&self, index: usize, mut r: ModelResult) -> ModelResult {
        let c = |s: &str, max: usize| self.redactor.clean_to(s, max);
        r.model = self.model(index, &r.model);
        match self.resolved.get(index) {
            Some(facts) => {
                r.id = facts.id.clone();
                r.api = facts.api;
                r.base_url = facts.base_url.clone();
                r.host = facts.host.clone();
                r.route = facts.route.clone();
            }
            None => {
                r.id = self.name(&r.id);
                r.base_url = self.redactor.display_url(&r.base_url);
                r.host = self.name(&r.host);
                if let Route::Catalog {
                    provider, key_env, ..
                } = &mut r.route
                {
                    *provider = self.name(provider);
                    *key_env = self.name(key_env);
                }
            }
        }
        r.level = r.outcome.level(r.api);
        if let Some(Cause::GatewayBackendFailed { error }) = &mut r.findings.cause {
            *error = c(error, 40);
        }
        r.next_action = render::next_action(&r);
        if let Some(e) = &mut r.findings.endpoint {
            e.version = e.version.as_deref().map(|v| c(v, 40));
        }
        r.findings.tool_arguments = r
            .findings
            .tool_arguments
            .as_deref()
            .map(|s| c(s, MAX_TEXT_CHARS));
        r.error = r.error.as_deref().map(|e| c(e, MAX_ERROR_CHARS));
        r.stop_reason = r.stop_reason.as_deref().map(|s| c(s, MAX_TEXT_CHARS));
        r.tool_name = r.tool_name.as_deref().map(|s| c(s, MAX_TEXT_CHARS));
        r.answer = r.answer.as_deref().map(|s| c(s, MAX_TEXT_CHARS));
        r
    }

    fn verdict(&self, mut v: Verdict) -> Verdict {
        v.schema = self.name(&v.schema);
        v.probe_version = self.name(&v.probe_version);
        v.origin = self.origin(v.origin);
        v.started_at = self.name(&v.started_at);
        v.models = std::mem::take(&mut v.models)
            .into_iter()
            .enumerate()
            .map(|(i, r)| self.result(i, r))
            .collect();
        for line in &mut v.lines {
            *line = self.redactor.clean_to(line, MAX_LINE_CHARS);
        }
        v
    }

    fn summary(&self, mut s: Summary) -> Summary {
        s.schema = self.name(&s.schema);
        // Only the run spec's models: an entry past them names a model the plan does not have.
        s.models.truncate(self.models.len());
        for (i, m) in s.models.iter_mut().enumerate() {
            m.model = m.model.as_deref().map(|said| self.model(i, said));
            m.error = m
                .error
                .as_deref()
                .map(|e| self.redactor.clean_to(e, MAX_ERROR_CHARS));
        }
        s.warnings = s
            .warnings
            .iter()
            .map(|w| self.redactor.clean_to(w, MAX_ERROR_CHARS))
            .collect();
        s
    }

    /// The event, cleaned.
    fn event(&self, event: ProbeEvent) -> ProbeEvent {
        match event {
            ProbeEvent::Start {
                schema,
                probe_version,
                origin,
                models,
                budget_ms,
            } => ProbeEvent::Start {
                schema: self.name(&schema),
                probe_version: self.name(&probe_version),
                origin: self.origin(origin),
                models,
                budget_ms,
            },
            ProbeEvent::Warning { line } => ProbeEvent::Warning {
                line: self.redactor.clean_to(&line, MAX_LINE_CHARS),
            },
            ProbeEvent::ModelStarted { index, model } => ProbeEvent::ModelStarted {
                index,
                model: self.model(index, &model),
            },
            ProbeEvent::Try {
                index,
                model,
                attempt,
            } => ProbeEvent::Try {
                index,
                model: self.model(index, &model),
                attempt,
            },
            ProbeEvent::Waiting {
                index,
                model,
                waited_ms,
                timeout_ms,
                stage,
            } => ProbeEvent::Waiting {
                index,
                model: self.model(index, &model),
                waited_ms,
                timeout_ms,
                stage,
            },
            ProbeEvent::Result { index, result } => ProbeEvent::Result {
                index,
                result: Box::new(self.result(index, *result)),
            },
            ProbeEvent::Summary { verdict } => ProbeEvent::Summary {
                verdict: Box::new(self.verdict(*verdict)),
            },
        }
    }
}

/// Reads one line of the probe's log, cleaned: `None` for a line that is not one of its events, an error for an
/// event the run spec cannot mean (a model index it does not have).
pub(super) fn event(line: &str, trusted: &Trusted) -> Result<Option<ProbeEvent>, ProtocolError> {
    let Some(e) = ProbeEvent::from_line(line) else {
        return Ok(None);
    };
    check(&e, trusted.models.len())?;
    Ok(Some(trusted.event(e)))
}

/// An event names only models of the run spec (`models` of them).
pub fn check(e: &ProbeEvent, models: usize) -> Result<(), ProtocolError> {
    if let Some(index) = e.index()
        && index >= models
    {
        let event = match e {
            ProbeEvent::ModelStarted { .. } => "modelStarted",
            ProbeEvent::Try { .. } => "try",
            ProbeEvent::Waiting { .. } => "waiting",
            _ => "result",
        };
        return Err(ProtocolError::UnknownModel {
            event,
            index,
            models,
        });
    }
    if let ProbeEvent::Summary { verdict } = e
        && verdict.models.len() > models
    {
        return Err(ProtocolError::TooManyModels {
            said: verdict.models.len(),
            models,
        });
    }
    Ok(())
}

/// What a termination message holds.
#[derive(Debug, PartialEq)]
pub(super) enum Termination {
    /// The probe's compact summary (what it writes there).
    Summary(Summary),
    /// No summary, but the `summary` line of the log tail (`FallbackToLogsOnError`): the whole verdict.
    Verdict(Box<Verdict>),
    /// Neither.
    Nothing,
}

/// Reads a termination message, cleaned.
pub(super) fn termination(message: &str, trusted: &Trusted) -> Termination {
    if let Ok(s) = serde_json::from_str::<Summary>(message.trim()) {
        return Termination::Summary(trusted.summary(s));
    }
    // A line out of turn is no verdict.
    let verdict = message.lines().rev().find_map(|l| match event(l, trusted) {
        Ok(Some(ProbeEvent::Summary { verdict })) => Some(verdict),
        _ => None,
    });
    verdict.map_or(Termination::Nothing, Termination::Verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// A pod of two models.
    fn trusted() -> Trusted<'static> {
        static REDACTOR: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
        static MODELS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        Trusted {
            redactor: REDACTOR.get_or_init(Redactor::default),
            models: MODELS.get_or_init(|| vec!["a/b".to_owned(), "c/d".to_owned()]),
            resolved: &[],
        }
    }

    fn termination(message: &str) -> Termination {
        super::termination(message, &trusted())
    }

    fn event(line: &str) -> Option<ProbeEvent> {
        super::event(line, &trusted()).expect("no protocol error")
    }

    fn verdict() -> Verdict {
        Verdict::new(
            Origin::Node {
                name: "worker-2".to_owned(),
            },
            UNIX_EPOCH + Duration::from_secs(1_796_409_407),
            Duration::from_millis(900),
            Vec::new(),
            Vec::new(),
        )
    }

    #[test]
    fn a_termination_message_is_a_summary_or_a_log_tail() {
        let summary = Summary {
            schema: jr2_probe::contract::summary::SUMMARY_SCHEMA.to_owned(),
            ok: true,
            n: 0,
            models: Vec::new(),
            truncated: false,
            warnings: Vec::new(),
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert_eq!(
            termination(&format!("{text}\n")),
            Termination::Summary(summary)
        );
        let summary_line = ProbeEvent::Summary {
            verdict: Box::new(verdict()),
        }
        .to_line();
        let tail = format!("some log line\n{summary_line}\n{{\"event\":\"later\"}}\n");
        assert_eq!(
            termination(&tail),
            Termination::Verdict(Box::new(verdict()))
        );
        assert_eq!(termination(""), Termination::Nothing);
        assert_eq!(termination("Error: exit 2"), Termination::Nothing);
    }

    #[test]
    fn lines_that_are_not_events_are_skipped() {
        assert_eq!(event("not json"), None);
        assert_eq!(event(r#"{"event":"result","index":0}"#), None);
        assert_eq!(
            event(r#"{"event":"modelStarted","index":1,"model":"x/y"}"#),
            Some(ProbeEvent::ModelStarted {
                index: 1,
                model: "c/d".to_owned()
            }),
            "the plan names the model"
        );
    }

    /// What the pod says of the endpoint is cleaned like its other strings, and the next action comes from the cause
    /// the pod named, not from its own `nextAction` (issue 16).
    #[test]
    fn endpoint_findings_are_cleaned_and_the_next_action_derived() {
        let line = r#"{"event":"result","index":0,"result":{"model":"m","id":"m","api":"openai-completions","baseUrl":"http://h/v1","host":"h","route":{"kind":"custom","apiKeySet":false,"maxTokensSet":true},"outcome":"http","level":"error","code":"PROVIDER_HTTP_ERROR","nextAction":"rm -rf / \u001b[2J","error":"HTTP 500: x","httpStatus":500,"stopReason":null,"toolName":null,"answer":null,"maxTokens":1024,"elapsedMs":1,"tries":[],"endpoint":{"kind":"litellm","version":"1.0\u001b]0;evil\u0007","contextLength":null,"supportsTools":null},"cause":{"kind":"gatewayBackendFailed","error":"Err\u202eor"},"toolArguments":"{\u001b[31m","toolChoiceIgnored":false}}"#;
        let Some(ProbeEvent::Result { result, .. }) = event(line) else {
            panic!("a result event");
        };
        let Some(Cause::GatewayBackendFailed { error }) = &result.findings.cause else {
            panic!("the cause stays: {:?}", result.findings);
        };
        assert!(!error.contains('\u{202e}'), "{error}");
        assert_eq!(
            result.next_action,
            render::cause_next_action(result.findings.cause.as_ref().unwrap())
        );
        let version = result
            .findings
            .endpoint
            .as_ref()
            .unwrap()
            .version
            .as_deref()
            .unwrap();
        assert!(
            !version.contains('\u{1b}') && !version.contains('\u{7}'),
            "{version}"
        );
        assert!(
            !result
                .findings
                .tool_arguments
                .as_deref()
                .unwrap()
                .contains('\u{1b}')
        );
    }

    #[test]
    fn a_waiting_event_names_the_plan_s_model() {
        let models = vec!["vllm/slow".to_owned()];
        let t = Trusted {
            redactor: trusted().redactor,
            models: &models,
            resolved: &[],
        };
        let line = r#"{"event":"waiting","index":0,"model":"forged\u001b[2J","waitedMs":30000,"timeoutMs":120000}"#;
        assert_eq!(
            super::event(line, &t).unwrap(),
            Some(ProbeEvent::Waiting {
                index: 0,
                model: "vllm/slow".to_owned(),
                waited_ms: 30_000,
                timeout_ms: 120_000,
                stage: jr2_probe::contract::events::WaitStage::NoAnswer,
            })
        );
    }

    /// An index the run spec does not have is the pod speaking out of turn (issue 25, item 1): an error, never a
    /// slot sized by it, and never a model named by the pod.
    #[test]
    fn an_index_the_run_spec_lacks_is_a_protocol_error() {
        let t = trusted();
        for index in ["2", "100000000", "1099511627776", "18446744073709551615"] {
            for (kind, line) in [
                (
                    "result",
                    format!(r#"{{"event":"result","index":{index},"result":{RESULT}}}"#),
                ),
                (
                    "modelStarted",
                    format!(r#"{{"event":"modelStarted","index":{index},"model":"evil/x"}}"#),
                ),
                (
                    "waiting",
                    format!(
                        r#"{{"event":"waiting","index":{index},"model":"evil/x","waitedMs":1,"timeoutMs":2}}"#
                    ),
                ),
            ] {
                let Err(e) = super::event(&line, &t) else {
                    panic!("{kind} {index}: accepted");
                };
                assert_eq!(
                    e,
                    ProtocolError::UnknownModel {
                        event: kind,
                        index: index.parse().unwrap(),
                        models: 2
                    }
                );
                assert!(!e.to_string().contains("evil"), "{e}");
            }
        }
        // Within the run spec: an event, named by the plan.
        let line = format!(r#"{{"event":"result","index":1,"result":{RESULT}}}"#);
        let Ok(Some(ProbeEvent::Result { result, .. })) = super::event(&line, &t) else {
            panic!("a result");
        };
        assert_eq!(result.model, "c/d");
    }

    #[test]
    fn a_verdict_of_more_models_than_the_run_spec_is_a_protocol_error() {
        let r: ModelResult = serde_json::from_str(RESULT).unwrap();
        let mut v = verdict();
        v.models = vec![r.clone(), r.clone(), r];
        let line = ProbeEvent::Summary {
            verdict: Box::new(v),
        }
        .to_line();
        assert_eq!(
            super::event(&line, &trusted()),
            Err(ProtocolError::TooManyModels { said: 3, models: 2 })
        );
        assert_eq!(termination(&line), Termination::Nothing);
    }

    const RESULT: &str = r#"{"model":"evil/x","id":"x","api":"openai-completions","baseUrl":"http://h/v1","host":"h","route":{"kind":"custom","apiKeySet":false,"maxTokensSet":true},"outcome":"ok","level":"pass","code":"PROVIDER_OK","nextAction":"","error":null,"httpStatus":200,"stopReason":null,"toolName":null,"answer":null,"maxTokens":1024,"elapsedMs":1,"tries":[]}"#;
}
