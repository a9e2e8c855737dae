//! How a check pod's run ends, once its step (`step.rs`) has judged that it does: the [`PodOutcome`] it is, and the
//! contract's lines of a failure (which model the check was on when the pod stopped, the models not checked, the
//! probe's own error). Pure: a pod's state in, its [`Phase::Done`] out.

use jr2_probe::contract::outcome::PodCode;
use jr2_probe::contract::render;
use jr2_probe::sanitize::MAX_ERROR_CHARS;

use super::config::Rules;
use super::pod_state::{Phase, PodState};
use super::report::{FailureKind, PodFailure, PodOutcome, ProbeReport};

impl PodState {
    /// The pod stopped before the probe finished: which model it was on (none when the probe had started none),
    /// and the rest not checked; `probe_error` is the probe's own `error:` text, cleaned. When every result came
    /// anyway, the probe did finish.
    pub(super) fn stopped(
        &mut self,
        reason: String,
        exit_code: Option<i32>,
        code: PodCode,
        probe_error: Option<String>,
        rules: &Rules,
    ) {
        if self.all_results() {
            self.phase = Phase::Done(PodOutcome::Finished(ProbeReport {
                exit_code,
                ..ProbeReport::default()
            }));
            return;
        }
        self.stopped_unfinished(reason, code, probe_error, rules);
    }

    /// [`PodState::stopped`] with the probe not finished: the model it was on and the rest not checked.
    pub(super) fn stopped_unfinished(
        &mut self,
        reason: String,
        code: PodCode,
        probe_error: Option<String>,
        rules: &Rules,
    ) {
        let (on_models, not_checked) = self.unfinished(probe_error.is_some());
        self.fail(
            FailureKind::Stopped {
                reason,
                on_models,
                not_checked,
                probe_error,
                code,
            },
            rules,
        );
    }

    /// The pod's node stopped answering before the probe finished (`said`: what the cluster said, raw): the models
    /// it was on and the rest not checked, as for a stop.
    pub(super) fn node_lost(&mut self, node: String, said: String, rules: &Rules) {
        if self.all_results() {
            self.phase = Phase::Done(PodOutcome::Finished(ProbeReport::default()));
            return;
        }
        let (on_models, not_checked) = self.unfinished(false);
        self.fail(
            FailureKind::NodeLost {
                node,
                said,
                on_models,
                not_checked,
            },
            rules,
        );
    }

    /// The models a probe that did not finish was on, and the models it never reached.
    fn unfinished(&self, probe_error: bool) -> (Vec<usize>, Vec<usize>) {
        let missing: Vec<usize> = if self.models.is_empty() {
            Vec::new()
        } else {
            (0..self.models.len())
                .filter(|m| self.probe.results[*m].is_none())
                .collect()
        };
        // No model had started: the probe never ran, or its log (which starts with its `start` line) or its own
        // error says so. A probe that ran and whose log gave nothing leaves it unknown: the first model not done.
        let none_started =
            !self.began() && (!self.ran || !self.probe.lines.is_empty() || probe_error);
        // Every model the probe had started and not concluded was in flight (its request may have been sent); when
        // the log named none, the first model not done.
        let on_models: Vec<usize> = if none_started {
            Vec::new()
        } else {
            let started: Vec<usize> = missing
                .iter()
                .copied()
                .filter(|m| self.probe.started.contains(m))
                .collect();
            if started.is_empty() {
                missing.first().copied().into_iter().collect()
            } else {
                started
            }
        };
        let not_checked = missing
            .into_iter()
            .filter(|m| !on_models.contains(m))
            .collect();
        (on_models, not_checked)
    }

    /// The pod failed: its lines, and [`Phase::Done`].
    pub(super) fn fail(&mut self, kind: FailureKind, rules: &Rules) {
        let c = |s: &str| rules.redactor.clean(s);
        let lines = match &kind {
            FailureKind::Refused { message, .. } => vec![render::cluster_refused(&c(message))],
            FailureKind::Unreachable { why } => vec![render::cannot_reach_cluster(&c(why))],
            FailureKind::CreateTimedOut { seconds, message } => {
                vec![render::create_timed_out(&seconds.to_string(), &c(message))]
            }
            FailureKind::NamespaceTerminating {
                namespace,
                message: Some(message),
            } => vec![render::namespace_terminating(namespace, &c(message))],
            // The pod went with its namespace during the run: every model without a result is unchecked.
            FailureKind::NamespaceTerminating {
                namespace,
                message: None,
            } => {
                let mut lines = vec![render::pod_stopped_before_any_model(
                    &render::namespace_deleted_reason(namespace),
                )];
                lines.extend(
                    (0..self.models.len())
                        .filter(|m| self.probe.results.get(*m).is_none_or(Option::is_none))
                        .map(|m| render::not_checked(self.model(m))),
                );
                lines
            }
            FailureKind::ApiServerLost { why } => vec![render::api_server_lost(&c(why))],
            FailureKind::CannotStart(f) => vec![f.line(&rules.redactor)],
            FailureKind::Stopped {
                reason,
                on_models,
                not_checked,
                probe_error,
                ..
            } => {
                let line = if !on_models.is_empty() {
                    let models: Vec<&str> = on_models.iter().map(|m| self.model(*m)).collect();
                    render::pod_stopped(&c(reason), &models)
                } else if self.all_results() {
                    // Every result had come (the pod spoke out of turn after them).
                    render::pod_stopped_after_every_model(&c(reason))
                } else {
                    render::pod_stopped_before_any_model(&c(reason))
                };
                // Cleaned where it was read.
                let line = match probe_error {
                    Some(e) => render::with_probe_error(&line, e),
                    None => line,
                };
                let mut lines = vec![line];
                lines.extend(
                    not_checked
                        .iter()
                        .map(|m| render::not_checked(self.model(*m))),
                );
                lines
            }
            FailureKind::NodeLost {
                node,
                said,
                on_models,
                not_checked,
            } => {
                let (node, said) = (c(node), c(said));
                let mut lines = vec![if on_models.is_empty() {
                    render::node_lost_before_any_model(&node, &said)
                } else {
                    let models: Vec<&str> = on_models.iter().map(|m| self.model(*m)).collect();
                    render::node_lost(&node, &said, &models)
                }];
                lines.extend(
                    not_checked
                        .iter()
                        .map(|m| render::not_checked(self.model(*m))),
                );
                lines
            }
            FailureKind::NodeDidNotStart { node } => vec![render::node_did_not_start(
                &render::seconds(rules.timeout),
                &c(node),
            )],
            FailureKind::WouldPreempt {
                class,
                reason,
                message,
            } => {
                let mut lines = vec![render::would_preempt(&c(class), &c(reason), &c(message))];
                lines.extend(
                    (0..self.models.len())
                        .filter(|m| self.probe.results.get(*m).is_none_or(Option::is_none))
                        .map(|m| render::not_checked(self.model(m))),
                );
                lines
            }
            FailureKind::DidNotStart { reason, message } => vec![render::pod_did_not_start(
                &render::seconds(rules.timeout),
                &c(reason),
                &c(message),
            )],
            // Never reached by a run: the caller writes the lines of a pod it did not create.
            FailureKind::Interrupted
            | FailureKind::Unauthenticated { .. }
            | FailureKind::NotAllowed { .. }
            | FailureKind::PodSecurity { .. } => Vec::new(),
        };
        // The audit Warnings about the pod, counted, under a failure of the pod itself (issue 40, item 9).
        let mut lines = lines;
        if !lines.is_empty()
            && matches!(
                kind,
                FailureKind::CannotStart(_)
                    | FailureKind::Stopped { .. }
                    | FailureKind::DidNotStart { .. }
            )
        {
            lines.extend(self.seen.tally.lines(&rules.redactor));
        }
        self.phase = Phase::Done(PodOutcome::Failed(PodFailure { kind, lines }));
    }

    /// The probe's own error, when it stopped without a verdict: the last `error:` line of its termination message
    /// (not a summary), else of its log (it writes its refusal of a run spec on stderr, which the log carries),
    /// without the word `error:`, cleaned and cut as an `<error>`.
    pub(super) fn probe_error(&self, termination: Option<&str>, rules: &Rules) -> Option<String> {
        let said = termination
            .and_then(|m| last_error_line(m.lines()))
            .or_else(|| last_error_line(self.probe.lines.iter().map(String::as_str)))?;
        let said = rules.redactor.clean_to(said.trim(), MAX_ERROR_CHARS);
        (!said.is_empty()).then_some(said)
    }
}

/// The text of the last `error: <text>` line among `lines`.
fn last_error_line<'a>(mut lines: impl DoubleEndedIterator<Item = &'a str>) -> Option<&'a str> {
    lines
        .rfind(|l| l.trim_start().starts_with("error: "))
        .map(|l| &l.trim_start()["error: ".len()..])
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::run::PodToRun;

    fn state() -> PodState {
        let mut pod = Pod::default();
        pod.metadata.name = Some("p".to_owned());
        PodState::new(&PodToRun {
            pod,
            models: vec!["a/b".to_owned(), "c/d".to_owned()],
            resolved: Vec::new(),
        })
    }

    fn rules() -> Rules {
        Rules::of(&crate::run::RunConfig::default())
    }

    #[test]
    fn the_probe_s_error_is_its_last_error_line_cleaned() {
        let mut st = state();
        st.probe.lines = vec![
            "error: first".to_owned(),
            "  error: the run spec is \u{1b}[31mof another release".to_owned(),
        ];
        let said = st.probe_error(None, &rules()).unwrap();
        assert!(
            said.starts_with("the run spec is ") && !said.contains('\u{1b}'),
            "{said}"
        );
        assert_eq!(
            st.probe_error(Some("Error: x\nerror: from the message"), &rules())
                .as_deref(),
            Some("from the message"),
            "the termination message first"
        );
        st.probe.lines.clear();
        assert_eq!(st.probe_error(Some("error:   "), &rules()), None);
    }

    #[test]
    fn a_pod_stopped_with_every_result_finished() {
        let mut st = state();
        st.probe.results = vec![None, None];
        st.stopped("x".to_owned(), Some(1), PodCode::Stopped, None, &rules());
        assert!(matches!(st.phase, Phase::Done(PodOutcome::Failed(_))));
        let mut st = state();
        let r: jr2_probe::contract::verdict::ModelResult = serde_json::from_value(serde_json::json!({"model":"a/b","id":"b","api":"openai-completions","baseUrl":"http://h/v1","host":"h",
            "route":{"kind":"custom","apiKeySet":false,"maxTokensSet":true},"outcome":"ok","level":"pass",
            "code":"PROVIDER_OK","nextAction":"","error":null,"httpStatus":200,"stopReason":null,"toolName":null,
            "answer":null,"maxTokens":1024,"elapsedMs":1,"tries":[]})).unwrap();
        st.probe.results = vec![Some(r.clone()), Some(r)];
        st.stopped("x".to_owned(), Some(1), PodCode::Stopped, None, &rules());
        assert!(matches!(
            st.phase,
            Phase::Done(PodOutcome::Finished(ProbeReport {
                exit_code: Some(1),
                verdict: None,
                summary: None
            }))
        ));
    }
}
