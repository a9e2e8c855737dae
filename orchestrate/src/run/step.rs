//! A check pod's run as a pure step, in the manner of kube-runtime's watcher `State`: [`step`] takes what
//! arrived for the pod ([`Input`]) and the time it arrived, moves the pod's [`Phase`], and returns what the loop
//! must do ([`Action`]). It does no I/O and reads no clock, so each transition is a plain unit test; the loop
//! (`machine.rs`) turns its streams into inputs and carries out the actions.
//!
//! What a pod says that the whole run says once (a pending line another pod already wrote, a probe's warning, the
//! Events that cannot be read) is an action here and the run's to word once (`machine.rs`); whether the cluster's
//! unreachability was already said comes in with the input.

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use tokio::time::Instant;

use jr2_probe::contract::outcome::PodCode;
use jr2_probe::contract::render;
use jr2_probe::contract::verdict::Verdict;
use jr2_probe::contract::{Exit, ProbeEvent};

use super::clock;
use super::config::Rules;
use super::pod_state::{LogState, MAX_LOG_OPENS, Phase, PodState};
use super::protocol::{self, Termination};
use super::report::{FailureKind, PodFailure, PodOutcome, ProbeReport, RunUpdate};
use crate::diagnose::{self, Diagnosis, StartFailure};
use crate::pod::PROBE_CONTAINER;
use crate::scheduling;

/// What arrived for one pod.
#[derive(Debug)]
pub(super) enum Input {
    /// Its create was answered: created, as this pod.
    Created(Box<Pod>),
    /// Its create was refused (or dropped).
    Refused {
        /// The HTTP status, when one came.
        code: Option<u16>,
        /// The API server's message, raw.
        message: String,
    },
    /// Its create got no answer: the cluster cannot be reached; `said` when another pod's failure says so already.
    Unreachable {
        /// Why.
        why: String,
        /// Another pod's line says it.
        said: bool,
    },
    /// Its run failed for a cause the run found (issue 40): its create did not finish in time, its namespace is being
    /// deleted, the API server stopped answering; `said` when another pod's failure says it already.
    Failed {
        /// The failure.
        kind: FailureKind,
        /// Another pod's line says it.
        said: bool,
    },
    /// The run is over and its namespace is gone or being deleted: a pod that stopped as deleted went with it.
    NamespaceDeleted {
        /// The namespace.
        namespace: String,
    },
    /// The watches are open: its Events are to be watched, and the pod judged.
    Watched,
    /// The pod watch lists the run's pods again (its list begins).
    Relisting,
    /// The pod watch showed it (listed, added or modified).
    Seen(Box<Pod>),
    /// The one pod watch of the run finished its list: a pod it did not list is gone.
    Relisted,
    /// The pod watch saw it deleted.
    Gone(Box<Pod>),
    /// The pod watch was refused (403): the API server's message.
    WatchForbidden(String),
    /// One of its Events (new, or again with a higher count).
    Event(Box<Event>),
    /// Its Events watch was refused (403): the API server's message.
    EventsForbidden(String),
    /// The watch of its node showed the Node (listed, added or modified).
    Node(Box<Node>),
    /// A line of the probe's log, of that read (its generation).
    LogLine {
        /// The read.
        generation: u32,
        /// The line, without its newline.
        line: String,
    },
    /// The probe's log of that read ended: cleanly (`None`), or broken off (why).
    LogEnded {
        /// The read.
        generation: u32,
        /// Why it broke off.
        error: Option<String>,
    },
    /// The Custodian's log, read (or why it could not be).
    CustodianLog(Result<Vec<String>, String>),
    /// Nothing new of the pod, but time passed (a timer woke, the Events watch moved): it is judged again.
    Recheck,
    /// The run's deadline passed.
    Deadline,
    /// The run was cancelled.
    Interrupted,
}

/// What the loop must do for one pod.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Action {
    /// Watch the pod's Events.
    WatchEvents,
    /// Watch the Node the pod is bound to, by its name.
    WatchNode(String),
    /// Open (again) the probe's log, from its beginning: its lines are of this read.
    OpenLog {
        /// The read.
        generation: u32,
    },
    /// Read the Custodian's log: of this container, of its previous instance or not.
    ReadCustodianLog {
        /// The container.
        container: String,
        /// Its previous instance (it restarted since it refused).
        previous: bool,
    },
    /// Send this progress.
    Send(RunUpdate),
    /// A new pending line of this pod (cleaned): written unless another pod's latest, or the last written, says it.
    Pending {
        /// The reason.
        reason: String,
        /// The message.
        message: String,
    },
    /// The probe's warning line: written once a run, at most the run's cap, and only a `warning:` line.
    Warning(String),
    /// The pod's Events cannot be read: this warning line, said once a run.
    EventsForbidden(String),
    /// The pod's run is over: delete it, or keep it (`--keep-pod` and it failed).
    Release {
        /// Keep it.
        keep: bool,
    },
}

/// Takes what arrived for `pod` at `now`, moves its phase, and says what the loop must do. A pod whose run is
/// over still records what the cluster shows of it (for the evidence); its phase no longer moves. The step that
/// ends the run of the pod returns its [`Action::Release`], once.
pub(super) fn step(pod: &mut PodState, input: Input, now: Instant, rules: &Rules) -> Vec<Action> {
    let mut step = Step {
        st: pod,
        rules,
        now,
        actions: Vec::new(),
    };
    step.take(input);
    step.release();
    step.actions
}

/// The next moment a timer matters to the pod: the end of a grace or drain window, a log's reopen.
pub(super) fn wake(pod: &PodState, rules: &Rules) -> Option<Instant> {
    let log = pod.log.state;
    match pod.phase {
        Phase::Waiting {
            grace_since: Some(since),
        } => Some(since + pod.pending.grace),
        Phase::Stopping { since } if log == LogState::Open => Some(since + rules.log_drain),
        Phase::Running => match log {
            LogState::Ended { at, .. } if pod.log.opens < MAX_LOG_OPENS => {
                Some(at + rules.log_retry)
            }
            _ => None,
        },
        _ => None,
    }
}

/// One step of one pod under way.
struct Step<'a> {
    st: &'a mut PodState,
    rules: &'a Rules,
    now: Instant,
    actions: Vec<Action>,
}

impl Step<'_> {
    fn take(&mut self, input: Input) {
        let st = &mut *self.st;
        match input {
            Input::Created(pod) => {
                st.uid = pod.metadata.uid.clone();
                st.seen.last = Some(*pod);
                st.phase = Phase::Waiting { grace_since: None };
                let pod = st.name.clone();
                self.actions.push(Action::Send(RunUpdate::Created { pod }));
            }
            Input::Refused { code, message } => self.fail(FailureKind::Refused { code, message }),
            Input::Unreachable { why, said } => {
                let kind = FailureKind::Unreachable { why };
                if said {
                    // One cluster: said once, whichever pods could not be created.
                    let lines = Vec::new();
                    st.phase = Phase::Done(PodOutcome::Failed(PodFailure { kind, lines }));
                } else {
                    self.fail(kind);
                }
            }
            Input::Failed { kind, said } if !st.done() => {
                if said {
                    let lines = Vec::new();
                    st.phase = Phase::Done(PodOutcome::Failed(PodFailure { kind, lines }));
                } else {
                    self.fail(kind);
                }
            }
            Input::Failed { .. } => {}
            Input::NamespaceDeleted { namespace } => {
                if st.stopped_as_deleted() {
                    let message = None;
                    st.fail(
                        FailureKind::NamespaceTerminating { namespace, message },
                        self.rules,
                    );
                }
            }
            Input::Watched => {
                if !st.done() {
                    self.actions.push(Action::WatchEvents);
                    self.evaluate();
                }
            }
            Input::Relisting => st.seen.in_list = false,
            Input::Seen(p) => {
                st.seen.in_list = true;
                match (&st.uid, &p.metadata.uid) {
                    (Some(ours), Some(theirs)) if ours != theirs => st.seen.deleted = true,
                    _ => {
                        st.uid = p.metadata.uid.clone();
                        st.seen.last = Some(*p);
                    }
                }
                self.evaluate();
            }
            Input::Relisted => {
                if !st.seen.in_list && st.uid.is_some() && !st.done() {
                    st.seen.deleted = true;
                    self.evaluate();
                }
            }
            Input::Gone(p) => {
                if st.uid.is_none() || st.uid == p.metadata.uid {
                    st.seen.deleted = true;
                    st.seen.last = Some(*p);
                }
                self.evaluate();
            }
            Input::WatchForbidden(message) => {
                if !st.done() {
                    self.fail(FailureKind::Refused {
                        code: Some(403),
                        message,
                    });
                }
            }
            Input::Event(e) => {
                // The same Event again (its count went up): it moves to the end, where the latest are. Counted,
                // and kept within bounds (issue 40, item 9).
                st.seen.tally.add(&e);
                super::events::keep(&mut st.seen.events, *e);
                self.evaluate();
            }
            Input::EventsForbidden(message) => {
                // Said once for the run: by the first pod whose Events are forbidden (the run knows the others).
                if !std::mem::replace(&mut st.seen.events_forbidden, true) {
                    let line =
                        render::events_forbidden_warning(&self.rules.redactor.clean(&message));
                    self.actions.push(Action::EventsForbidden(line));
                }
            }
            Input::Node(node) => {
                if let Some((_, seen)) = &mut st.seen.node {
                    *seen = Some(*node);
                }
                self.evaluate();
            }
            Input::LogLine { generation, line } => {
                if generation == st.log.generation && !st.done() {
                    self.log_line(line);
                }
            }
            Input::LogEnded { generation, error } => {
                if generation != st.log.generation || st.done() {
                    return;
                }
                if let Some(e) = &error {
                    tracing::debug!(pod = %st.name, error = %e, "the probe's log broke off");
                }
                st.log.state = LogState::Ended {
                    at: self.now,
                    clean: error.is_none(),
                };
                self.evaluate();
            }
            Input::CustodianLog(read) => {
                st.custodian.lines = Some(read.unwrap_or_else(|e| {
                    tracing::debug!(error = %e, "cannot read the Custodian's log");
                    Vec::new()
                }));
                self.evaluate();
            }
            Input::Recheck => self.evaluate(),
            Input::Deadline => self.deadline_passed(),
            Input::Interrupted => {
                if !st.done() {
                    self.fail(FailureKind::Interrupted);
                }
            }
        }
    }

    /// The pod's run is over and it was not released yet: delete it, or keep it when it failed and `keep_failed`
    /// says so (never one the cluster refused or could not create, nor one the run was cancelled under).
    fn release(&mut self) {
        let st = &mut *self.st;
        let Some(outcome) = st.outcome() else {
            return;
        };
        let failed = matches!(
            outcome,
            PodOutcome::Failed(f) if !matches!(
                f.kind,
                FailureKind::Refused { .. }
                    | FailureKind::Unreachable { .. }
                    | FailureKind::Interrupted
                    | FailureKind::CreateTimedOut { .. }
            )
        );
        let keep = self.rules.keep_failed && failed && st.uid.is_some();
        if !std::mem::replace(&mut st.released, true) {
            self.actions.push(Action::Release { keep });
        }
    }

    /// What the plan says of the pod's models, and how to clean what its probe says.
    fn trusted(&self) -> protocol::Trusted<'_> {
        protocol::Trusted {
            redactor: &self.rules.redactor,
            models: &self.st.models,
            resolved: &self.st.resolved,
        }
    }

    fn log_line(&mut self, line: String) {
        let event = protocol::event(&line, &self.trusted());
        self.st.keep_line(line);
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                self.out_of_turn(&e);
                return;
            }
        };
        let st = &mut *self.st;
        match event {
            Some(ProbeEvent::ModelStarted { index, .. }) => {
                if st.probe.started.insert(index) {
                    let model = st.models.get(index).cloned().unwrap_or_default();
                    let pod = st.name.clone();
                    let started = RunUpdate::ModelStarted { pod, index, model };
                    self.actions.push(Action::Send(started));
                }
            }
            // The index is one of the run spec's (`protocol::event`).
            Some(ProbeEvent::Result { index, result }) => {
                if let Some(slot) = st.result_slot(index) {
                    *slot = Some((*result).clone());
                    let pod = st.name.clone();
                    let result = RunUpdate::Result { pod, index, result };
                    self.actions.push(Action::Send(result));
                }
            }
            Some(ProbeEvent::Summary { verdict }) => self.summary(verdict),
            // The probe's warning about its run (a CA file it cannot read): the run's to say once.
            Some(ProbeEvent::Warning { line }) => self.actions.push(Action::Warning(line)),
            // A model still waiting: its line names the plan's model, never the pod's text; one whose index the
            // plan does not know makes none.
            Some(ProbeEvent::Waiting {
                index,
                waited_ms,
                timeout_ms,
                stage,
                ..
            }) => {
                if let Some(model) = st.models.get(index).filter(|m| !m.is_empty()).cloned() {
                    let pod = st.name.clone();
                    self.actions.push(Action::Send(RunUpdate::Waiting {
                        pod,
                        model,
                        waited_ms,
                        timeout_ms,
                        stage,
                    }));
                }
            }
            // How long it gives itself, against the run's time left: a node whose clock is ahead (`clock.rs`).
            Some(ProbeEvent::Start {
                budget_ms: Some(budget),
                ..
            }) => {
                if let Some(deadline) = self.rules.deadline {
                    let left = deadline.saturating_duration_since(self.now);
                    let budget = std::time::Duration::from_millis(budget);
                    st.probe.node_ahead = clock::node_ahead(left, budget);
                }
            }
            Some(ProbeEvent::Start { .. } | ProbeEvent::Try { .. }) | None => {}
        }
    }

    /// The probe's whole verdict: done, unless its Custodian refused a held value (then the probe's calls went
    /// through no Custodian, and its verdict says nothing).
    fn summary(&mut self, v: Box<Verdict>) {
        let st = &mut *self.st;
        if let Some((name, reason)) = st
            .custodian
            .lines
            .as_deref()
            .and_then(diagnose::custodian_refusal)
        {
            self.fail(FailureKind::CannotStart(StartFailure::CustodianRefused {
                name,
                reason,
            }));
            return;
        }
        for (m, r) in v.models.iter().enumerate() {
            if let Some(slot) = st.result_slot(m) {
                *slot = Some(r.clone());
            }
        }
        st.phase = Phase::Done(PodOutcome::Finished(ProbeReport {
            verdict: Some(v),
            ..ProbeReport::default()
        }));
    }

    /// Judges the pod from what is known now, and moves its phase.
    fn evaluate(&mut self) {
        let now = self.now;
        let st = &mut *self.st;
        if st.done() {
            return;
        }
        let Some(pod) = st.seen.last.clone() else {
            return;
        };
        // Bound: its node is watched (once), whose own word names a node that stopped answering.
        if self.rules.watch_nodes
            && st.seen.node.is_none()
            && let Some(node) = diagnose::node_name(&pod)
        {
            st.seen.node = Some((node.to_owned(), None));
            self.actions.push(Action::WatchNode(node.to_owned()));
        }
        if let Some(req) = diagnose::custodian_log_request(&pod)
            && st.custodian.asked != Some((req.restart_count, req.previous))
        {
            st.custodian.asked = Some((req.restart_count, req.previous));
            st.custodian.lines = None;
            self.actions.push(Action::ReadCustodianLog {
                container: req.container,
                previous: req.previous,
            });
        }
        let diagnosis = if st.seen.deleted {
            Diagnosis::Stopped {
                reason: "the pod was deleted".to_owned(),
            }
        } else {
            diagnose::diagnose(&pod, &st.seen.events, st.custodian.lines.as_deref())
        };
        // A node that stopped answering ends the check at once: nothing more comes from a pod there.
        if matches!(
            diagnosis,
            Diagnosis::Running | Diagnosis::Starting { .. } | Diagnosis::Pending { .. }
        ) && let Some(node) = diagnose::node_name(&pod)
            && let Some(said) = st
                .seen
                .node
                .as_ref()
                .and_then(|(name, n)| n.as_ref().filter(|_| name == node))
                .and_then(diagnose::node_down)
                .or_else(|| diagnose::node_lost(&pod, &st.seen.events))
        {
            st.node_lost(node.to_owned(), said, self.rules);
            return;
        }
        match diagnosis {
            Diagnosis::Pending { reason, message } => {
                st.phase = Phase::Waiting { grace_since: None };
                self.pending(&reason, &message);
            }
            Diagnosis::Starting { reason, message } => {
                st.phase = Phase::Waiting { grace_since: None };
                self.note_pending(&reason, &message);
            }
            Diagnosis::Running => {
                st.phase = Phase::Running;
                st.ran = true;
                let (log, opens) = (st.log.state, st.log.opens);
                match log {
                    LogState::Closed => self.open_log(),
                    LogState::Ended { at, .. }
                        if now >= at + self.rules.log_retry && opens < MAX_LOG_OPENS =>
                    {
                        self.open_log();
                    }
                    _ => {}
                }
            }
            Diagnosis::CannotStart(f) => self.cannot_start(f),
            Diagnosis::Stopped { reason } => {
                if self.wait_for_log() {
                    return;
                }
                self.stopped(reason, None, PodCode::Stopped, None);
            }
            Diagnosis::Finished {
                exit_code,
                message,
                stop_reason,
            } => {
                st.ran = true;
                if self.wait_for_log() {
                    return;
                }
                self.finished(exit_code, message, stop_reason);
            }
        }
    }

    /// The pod cannot start: pending within the grace of a failure that may pass, else over (an OOM of the probe
    /// once the check had begun is a stop, read from its log first).
    fn cannot_start(&mut self, f: StartFailure) {
        let now = self.now;
        // An image pull that may pass, or a Secret a secrets operator may yet create (issue 40, item 15).
        let grace = if f.is_transient() {
            Some(self.rules.image_pull_grace)
        } else if f.waits_for_a_secret() {
            Some(self.rules.secret_grace)
        } else {
            None
        };
        if let Some(grace) = grace {
            let since = match self.st.phase {
                Phase::Waiting {
                    grace_since: Some(since),
                } => since,
                _ => now,
            };
            if now < since + grace {
                self.st.phase = Phase::Waiting {
                    grace_since: Some(since),
                };
                self.st.pending.grace = grace;
                let (reason, message) = f.as_pending(&render::seconds(grace));
                self.pending(&reason, &message);
                return;
            }
        }
        let (began, ran) = (self.st.began(), self.st.ran);
        match f {
            StartFailure::CustodianRefused { .. } => self.fail(FailureKind::CannotStart(f)),
            // The probe's own OOM: its log says whether, and where, the check had begun.
            StartFailure::OutOfMemory { ref container, .. }
                if container == PROBE_CONTAINER || began || ran =>
            {
                if self.wait_for_log() {
                    return;
                }
                if self.st.began() {
                    self.stopped(f.stop_reason(), Some(137), PodCode::OutOfMemory, None);
                } else {
                    self.fail(FailureKind::CannotStart(f));
                }
            }
            _ => self.fail(FailureKind::CannotStart(f)),
        }
    }

    /// The probe container terminated and its log is read: its verdict, from the log or its termination message, or
    /// the stop it was.
    fn finished(&mut self, exit_code: i32, message: Option<String>, stop_reason: String) {
        let termination = message
            .as_deref()
            .map(|m| protocol::termination(m, &self.trusted()));
        match termination {
            Some(Termination::Verdict(v)) => self.summary(v),
            Some(Termination::Summary(summary)) => {
                // A lost log loses no warning: the termination message keeps them (issue 27, item 18).
                // (Cleaned as the termination message was read.)
                for line in summary.warnings.clone() {
                    self.actions.push(Action::Warning(line));
                }
                self.st.phase = Phase::Done(PodOutcome::Finished(ProbeReport {
                    verdict: None,
                    summary: Some(summary),
                    exit_code: Some(exit_code),
                }));
            }
            Some(Termination::Nothing) | None => {
                let said = self.probe_error(message.as_deref());
                // Exit 2: the probe refused its input (a run spec of another release): it does so again.
                let code = if exit_code == i32::from(Exit::Usage) && said.is_some() {
                    PodCode::ProbeError
                } else {
                    PodCode::Stopped
                };
                self.stopped(stop_reason, Some(exit_code), code, said);
            }
        }
    }

    fn probe_error(&self, termination: Option<&str>) -> Option<String> {
        self.st.probe_error(termination, self.rules)
    }

    fn stopped(
        &mut self,
        reason: String,
        exit_code: Option<i32>,
        code: PodCode,
        probe_error: Option<String>,
    ) {
        self.st
            .stopped(reason, exit_code, code, probe_error, self.rules);
    }

    /// The pod's probe spoke out of turn (a model index its run spec does not have): its run is over, whatever it
    /// said before, and the pod is deleted (as any pod whose run is over); its models are judged from what is known.
    fn out_of_turn(&mut self, e: &protocol::ProtocolError) {
        tracing::debug!(pod = %self.st.name, error = %e, "the probe broke the protocol");
        let reason = format!("the driver stopped it: {e}");
        self.st
            .stopped_unfinished(reason, PodCode::ProbeError, None, self.rules);
    }

    fn fail(&mut self, kind: FailureKind) {
        self.st.fail(kind, self.rules);
    }

    /// Keeps the pod's latest word on why it is not running (for the not-started-in-time error), cleaned; returns it.
    fn note_pending(&mut self, reason: &str, message: &str) -> (String, String) {
        let c = |s: &str| self.rules.redactor.clean(s);
        let noted = (c(reason), c(message));
        self.st.pending.last = Some(noted.clone());
        noted
    }

    /// A reason the pod is not running: a pending line when it is new for this pod.
    fn pending(&mut self, reason: &str, message: &str) {
        let (reason, message) = self.note_pending(reason, message);
        let now = (reason.clone(), message.clone());
        // The same cause under another reason (`Unschedulable` then `FailedScheduling`, `ErrImagePull` then
        // `ImagePullBackOff`) is said once (issue 40, item 13).
        let said = self.st.pending.written.as_ref();
        if !said.is_some_and(|w| super::said::one_cause(w, &now)) {
            let state = Some(now);
            self.st.pending.written = state;
            self.actions.push(Action::Pending { reason, message });
        }
    }

    fn open_log(&mut self) {
        let generation = self.st.log_opened();
        self.actions.push(Action::OpenLog { generation });
    }

    /// The pod stopped ([`Phase::Stopping`]): true while the rest of the probe's log may still come (the stream is
    /// open and the drain window not over, or a log that broke off is worth one more read).
    fn wait_for_log(&mut self) -> bool {
        let now = self.now;
        let st = &mut *self.st;
        let since = match st.phase {
            Phase::Stopping { since } => since,
            _ => now,
        };
        st.phase = Phase::Stopping { since };
        let probe_ran = st.ran
            || st
                .seen
                .last
                .as_ref()
                .and_then(diagnose::probe_status)
                .and_then(|s| s.state.as_ref())
                .is_some_and(|s| s.terminated.is_some());
        let deleted = st.seen.deleted;
        let reopen = match st.log.state {
            LogState::Open => return now < since + self.rules.log_drain,
            LogState::Closed => probe_ran && !deleted,
            LogState::Ended { clean: false, .. } => {
                !st.log.reopened_after_stop && !deleted && st.log.opens < MAX_LOG_OPENS
            }
            LogState::Ended { clean: true, .. } => false,
        };
        if reopen {
            st.log.reopened_after_stop = true;
            self.open_log();
        }
        reopen
    }

    fn deadline_passed(&mut self) {
        if self.st.done() {
            return;
        }
        if self.st.ran {
            let secs = render::seconds(self.rules.timeout);
            let reason = format!("no verdict in {secs} s");
            self.stopped(reason, None, PodCode::Stopped, None);
        } else {
            let (reason, message) = self.st.pending.last.clone().unwrap_or_else(|| {
                (
                    "Pending".to_owned(),
                    "no status from the cluster yet".to_owned(),
                )
            });
            let pod = self.st.seen.last.as_ref();
            let kind = if let Some(class) = scheduling::would_preempt(pod, &reason, &message) {
                FailureKind::WouldPreempt {
                    class,
                    reason,
                    message,
                }
            } else if let Some(node) =
                pod.and_then(|p| diagnose::silent_node(p, &self.st.seen.events))
            {
                FailureKind::NodeDidNotStart {
                    node: node.to_owned(),
                }
            } else {
                FailureKind::DidNotStart { reason, message }
            };
            self.fail(kind);
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each transition of [`Phase`], one input at a time, and the pod's stories that `tests/cluster_mock.rs` told
    //! over a mock API server before the step was pure (issue 26): the same pods, statuses and probe lines, as a
    //! 1.35 API server and the probe write them, the same assertions.

    use std::time::{Duration, SystemTime};

    use serde_json::{Value, json};

    use jr2_probe::contract::summary::{Summary, TERMINATION_LIMIT};

    use super::*;
    use crate::plan::{PLAN_SCHEMA, RawPlan, ValidPlan};
    use crate::run::PodToRun;
    use crate::run::report::PodRun;
    use crate::run::said::Said;
    use jr2_probe::sanitize::Redactor;
    use jr2_testkit::check_run::{
        MODELS, c_running, c_terminated, c_waiting, ev_result, ev_start, ev_started, ev_summary,
        verdict,
    };

    const NS: &str = "demo";
    const POD: &str = "jr2-preflight-demo-harness-run0001";
    const RUN: &str = "run0001";
    const PROBE_IMAGE: &str = "ghcr.io/jr2/probe:0.1.0";
    const UNSCHEDULABLE: &str = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient memory. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";

    // -----------------------------------------------------------------------------------------------------------
    // Fixtures: the check pod as `pod::check_pod` builds it, its states as a 1.35 kubelet writes them, the probe's
    // lines (written through the probe's own `ProbeEvent`).

    /// When the run starts: 2026-12-04T18:36:47Z.
    fn wall() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_409_407)
    }

    /// The plan the check pod comes from: the Instance Harness with its Custodian, checking the three models. The
    /// Custodian has an `exec` readiness probe, which the probe cannot ask: it is a native sidecar (`pod.rs`), the
    /// shape these steps' statuses are written for (a plain Custodian's: `diagnose`'s tests and the real cluster's).
    fn plan() -> ValidPlan {
        let placement = json!({"name": "harness", "custodianContainer": "custodian", "podSpec": {
            "containers": [
                {"name": "harness", "image": "ghcr.io/jr2/harness:0.1.0",
                 "envFrom": [{"secretRef": {"name": "harness-env"}}],
                 "env": [
                     {"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"},
                     {"name": "EXTRA_TOKEN", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "token"}}}
                 ]},
                {"name": "custodian", "image": "envoyproxy/envoy:distroless-v1.39.1",
                 "resources": {"limits": {"memory": "64Mi"}},
                 "readinessProbe": {"exec": {"command": ["/ready"]}},
                 "volumeMounts": [{"name": "custodian-values", "mountPath": "/etc/jr2/custodian/values"}]}
            ],
            "volumes": [{"name": "custodian-values", "projected": {"sources": [
                {"secret": {"name": "anthropic", "items": [{"key": "api-key", "path": "ANTHROPIC_API_KEY"}]}}
            ]}}]
        }});
        RawPlan::from_value(json!({
            "schema": PLAN_SCHEMA, "namespace": NS, "instance": "demo", "probeImage": PROBE_IMAGE,
            "placements": [placement],
            "models": [
                {"model": MODELS[0], "placement": "harness", "source": "catalog", "keyEnv": "ANTHROPIC_API_KEY", "keyHeld": true},
                {"model": MODELS[1], "placement": "harness", "source": "custom", "baseUrl": "http://vllm.lan.example:8000/v1", "keyHeld": false},
                {"model": MODELS[2], "placement": "harness", "source": "catalog", "keyEnv": "GEMINI_API_KEY", "keyHeld": true}
            ]
        }))
        .and_then(RawPlan::validate)
        .expect("a valid plan")
    }

    mod nodes;

    /// Where the pod is.
    enum Stage {
        Created,
        Unschedulable(&'static str),
        Scheduled {
            phase: &'static str,
            custodian: Value,
            probe: Value,
        },
    }

    fn scheduled(custodian: Value, probe: Value) -> Stage {
        Stage::Scheduled {
            phase: "Pending",
            custodian,
            probe,
        }
    }

    fn running() -> Stage {
        Stage::Scheduled {
            phase: "Running",
            custodian: c_running("custodian"),
            probe: c_running("probe"),
        }
    }

    fn stopped_by(probe: Value, phase: &'static str) -> Stage {
        Stage::Scheduled {
            phase,
            custodian: c_running("custodian"),
            probe,
        }
    }

    fn k8s_event(rv: u64, reason: &str, type_: &str, message: &str) -> Event {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": format!("{POD}.{rv:x}"), "namespace": NS, "uid": format!("ev-{rv}"), "resourceVersion": rv.to_string()},
           "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": POD, "namespace": NS, "uid": "uid-1"},
           "reason": reason, "type": type_, "message": message, "count": 1,
           "source": {"component": "kubelet", "host": "worker-2"}}))
        .unwrap()
    }

    fn rules() -> Rules {
        Rules {
            timeout: Duration::from_secs(20),
            image_pull_grace: Duration::ZERO,
            secret_grace: Duration::ZERO,
            log_drain: Duration::from_secs(2),
            log_retry: Duration::from_secs(1),
            keep_failed: false,
            redactor: Redactor::default(),
            deadline: None,
            // The node watch (issue 39) is `tests/nodes.rs`'s; the other stories are told without it.
            watch_nodes: false,
        }
    }

    // -----------------------------------------------------------------------------------------------------------
    // One pod stepped as the loop steps it: the actions it returns, and the progress the run sends of them.

    struct One {
        st: PodState,
        rules: Rules,
        said: Said,
        /// The pod as created (the server's uid `uid-1`), as a 1.35 API server returns it.
        posted: Value,
        rv: u64,
        now: Instant,
        actions: Vec<Action>,
        progress: Vec<RunUpdate>,
    }

    impl One {
        fn new(rules: Rules) -> Self {
            let plan = plan();
            let check = crate::pod::check_pods(&plan, RUN, wall())
                .into_iter()
                .find(|c| c.pod.metadata.name.as_deref() == Some(POD))
                .expect("a check pod of the plan");
            let to_run = PodToRun::of(&check, &plan);
            Self {
                st: PodState::new(&to_run),
                rules,
                said: Said::default(),
                posted: serde_json::to_value(&to_run.pod).unwrap(),
                rv: 1000,
                now: Instant::now(),
                actions: Vec::new(),
                progress: Vec::new(),
            }
        }

        /// Steps the pod; the run's part of the actions (what it says once) as the loop does it.
        fn step(&mut self, input: Input) -> Vec<Action> {
            let actions = step(&mut self.st, input, self.now, &self.rules);
            for a in &actions {
                let update = match a.clone() {
                    Action::Send(u) => Some(u),
                    Action::Pending { reason, message } => {
                        self.said
                            .pending(std::slice::from_ref(&self.st), 0, reason, message)
                    }
                    Action::Warning(line) => self.said.probe_warning(line),
                    Action::EventsForbidden(line) => {
                        self.said
                            .events_forbidden(std::slice::from_ref(&self.st), 0, line)
                    }
                    _ => None,
                };
                self.progress.extend(update);
            }
            self.actions.extend(actions.clone());
            actions
        }

        fn later(&mut self, by: Duration) {
            self.now += by;
        }

        /// The pod as the server holds it, at this stage.
        fn object(&mut self, stage: &Stage) -> Box<Pod> {
            self.rv += 1;
            let mut pod = self.posted.clone();
            pod["metadata"]["uid"] = json!("uid-1");
            pod["metadata"]["resourceVersion"] = json!(self.rv.to_string());
            pod["metadata"]["creationTimestamp"] = json!("2026-12-04T18:36:40Z");
            pod["status"] = match stage {
                Stage::Created => json!({"phase": "Pending", "qosClass": "Burstable"}),
                Stage::Unschedulable(message) => json!({"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message,
                     "lastTransitionTime": "2026-12-04T18:36:40Z"}]}),
                Stage::Scheduled {
                    phase,
                    custodian,
                    probe,
                } => {
                    pod["spec"]["nodeName"] = json!("worker-2");
                    json!({"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}],
                           "startTime": "2026-12-04T18:36:41Z",
                           "initContainerStatuses": [custodian], "containerStatuses": [probe]})
                }
            };
            Box::new(serde_json::from_value(pod).unwrap())
        }

        fn seen(&mut self, stage: &Stage) -> Vec<Action> {
            let pod = self.object(stage);
            self.step(Input::Seen(pod))
        }

        /// The usual beginning: created, the watches open, the pod watch's list.
        fn begin(&mut self) {
            let created = self.object(&Stage::Created);
            self.step(Input::Created(created));
            assert!(matches!(
                self.st.phase,
                Phase::Waiting { grace_since: None }
            ));
            assert_eq!(self.step(Input::Watched), [Action::WatchEvents]);
            self.step(Input::Relisting);
            self.seen(&Stage::Created);
            self.step(Input::Relisted);
        }

        /// The log's lines, of its current read.
        fn lines(&mut self, events: &[ProbeEvent]) {
            for e in events {
                self.line(&e.to_line());
            }
        }

        fn line(&mut self, line: &str) -> Vec<Action> {
            let generation = self.st.log.generation;
            self.step(Input::LogLine {
                generation,
                line: line.to_owned(),
            })
        }

        fn log_ends(&mut self, error: Option<&str>) -> Vec<Action> {
            let generation = self.st.log.generation;
            self.step(Input::LogEnded {
                generation,
                error: error.map(str::to_owned),
            })
        }

        /// The usual end: Running, the probe's lines, its summary, the end of its log.
        fn run_to_verdict(&mut self) {
            let open = self.seen(&running());
            assert!(matches!(self.st.phase, Phase::Running));
            assert!(open.contains(&Action::OpenLog {
                generation: self.st.log.generation
            }));
            self.lines(&[ev_start()]);
            for i in 0..3 {
                self.lines(&[ev_started(i)]);
                self.line("{\"level\":\"debug\",\"msg\":\"not an event\"}");
                self.lines(&[ev_result(i)]);
            }
            let end = self.line(&ev_summary().to_line());
            assert_eq!(end.last(), Some(&Action::Release { keep: false }));
            self.log_ends(None);
        }

        fn releases(&self) -> Vec<bool> {
            self.actions
                .iter()
                .filter_map(|a| match a {
                    Action::Release { keep } => Some(*keep),
                    _ => None,
                })
                .collect()
        }

        fn pending_lines(&self) -> Vec<String> {
            self.progress
                .iter()
                .filter(|p| matches!(p, RunUpdate::Pending { .. }))
                .filter_map(RunUpdate::line)
                .collect()
        }

        fn failure_lines(&self) -> Vec<String> {
            match &self.st.phase {
                Phase::Done(PodOutcome::Failed(f)) => f.lines.clone(),
                other => panic!("{other:?}"),
            }
        }

        fn failure(&self) -> FailureKind {
            match &self.st.phase {
                Phase::Done(PodOutcome::Failed(f)) => f.kind.clone(),
                other => panic!("{other:?}"),
            }
        }

        fn run(self) -> PodRun {
            self.st.into_run(false)
        }
    }

    fn assert_verdict(run: &PodRun) {
        let PodOutcome::Finished(report) = &run.outcome else {
            panic!("{:?}", run.outcome)
        };
        let v = report.verdict.as_ref().expect("the verdict from the log");
        assert!(v.ok);
        assert_eq!(v.models.len(), 3);
        assert_eq!(run.node.as_deref(), Some("worker-2"));
        assert!(run.results.iter().all(Option::is_some));
    }

    // -----------------------------------------------------------------------------------------------------------
    // Each transition.

    /// Creating → Waiting: the create was answered.
    #[test]
    fn creating_to_waiting_when_created() {
        let mut one = One::new(rules());
        assert!(matches!(one.st.phase, Phase::Creating));
        let created = one.object(&Stage::Created);
        let actions = one.step(Input::Created(created));
        assert_eq!(
            actions,
            [Action::Send(RunUpdate::Created {
                pod: POD.to_owned()
            })]
        );
        assert!(matches!(one.st.phase, Phase::Waiting { grace_since: None }));
        assert_eq!(one.st.uid.as_deref(), Some("uid-1"));
    }

    /// Creating → Done: refused, or the cluster unreachable (said by one pod only); released, never kept.
    #[test]
    fn creating_to_done_when_the_create_fails() {
        let keep = Rules {
            keep_failed: true,
            ..rules()
        };
        let mut one = One::new(keep.clone());
        let actions = one.step(Input::Refused {
            code: Some(403),
            message: "quota".to_owned(),
        });
        assert_eq!(actions, [Action::Release { keep: false }]);
        assert_eq!(
            one.failure_lines(),
            ["error: provider preflight: the cluster refused the check pod: quota"]
        );
        let mut one = One::new(keep.clone());
        one.step(Input::Unreachable {
            why: "connection refused".to_owned(),
            said: false,
        });
        assert_eq!(
            one.failure_lines(),
            [render::cannot_reach_cluster("connection refused")]
        );
        let mut one = One::new(keep);
        let actions = one.step(Input::Unreachable {
            why: "connection refused".to_owned(),
            said: true,
        });
        assert_eq!(actions, [Action::Release { keep: false }]);
        assert!(one.failure_lines().is_empty());
        assert!(matches!(one.failure(), FailureKind::Unreachable { .. }));
    }

    /// Any phase → Done when the run is cancelled; Done is never left, and released once.
    #[test]
    fn interrupted_and_done_is_never_left() {
        for begun in [false, true] {
            let mut one = One::new(rules());
            if begun {
                one.begin();
                one.seen(&running());
            }
            assert_eq!(
                one.step(Input::Interrupted),
                [Action::Release { keep: false }]
            );
            assert_eq!(one.failure(), FailureKind::Interrupted);
            // Nothing moves it now; what the cluster shows is still kept.
            assert_eq!(one.step(Input::Interrupted), []);
            assert_eq!(one.step(Input::Deadline), []);
            assert_eq!(one.seen(&running()), []);
            assert_eq!(one.line(&ev_summary().to_line()), []);
            assert_eq!(one.failure(), FailureKind::Interrupted);
            assert_eq!(one.releases(), [false]);
            if begun {
                let rv = one.rv.to_string();
                let last = one.st.seen.last.as_ref().unwrap();
                assert_eq!(last.metadata.resource_version.as_deref(), Some(&*rv));
            }
        }
    }

    /// Waiting → Waiting: a reason to act on is a pending line; a start in progress is only noted, for the deadline.
    #[test]
    fn waiting_notes_the_reason_and_writes_a_pending_line_only_for_one_to_act_on() {
        let mut one = One::new(rules());
        one.begin();
        let actions = one.seen(&scheduled(
            c_waiting("custodian", "ContainerCreating", None),
            c_waiting("probe", "PodInitializing", None),
        ));
        assert_eq!(actions, []);
        assert!(one.st.pending.last.is_some());
        let actions = one.seen(&Stage::Unschedulable(UNSCHEDULABLE));
        assert_eq!(
            actions,
            [Action::Pending {
                reason: "Unschedulable".to_owned(),
                message: UNSCHEDULABLE.to_owned()
            }]
        );
        assert!(matches!(one.st.phase, Phase::Waiting { grace_since: None }));
        assert_eq!(one.seen(&Stage::Unschedulable(UNSCHEDULABLE)), [], "once");
    }

    /// Waiting → Waiting with its grace, → Done past it: an image pull that fails is pending within the grace,
    /// fatal after; the timer wakes at its end.
    #[test]
    fn waiting_in_the_image_pull_grace_then_done_past_it() {
        let grace = Duration::from_secs(10);
        let mut one = One::new(Rules {
            image_pull_grace: grace,
            ..rules()
        });
        one.begin();
        let back_off = scheduled(
            c_running("custodian"),
            c_waiting(
                "probe",
                "ImagePullBackOff",
                Some(&format!(
                    "Back-off pulling image \"{PROBE_IMAGE}\": ErrImagePull: not found"
                )),
            ),
        );
        let since = one.now;
        assert_eq!(one.seen(&back_off).len(), 1, "a pending line");
        assert!(matches!(one.st.phase, Phase::Waiting { grace_since: Some(s) } if s == since));
        assert_eq!(wake(&one.st, &one.rules), Some(since + grace));
        one.later(Duration::from_secs(4));
        one.step(Input::Recheck);
        assert!(matches!(one.st.phase, Phase::Waiting { grace_since: Some(s) } if s == since));
        one.later(Duration::from_secs(6));
        assert_eq!(one.step(Input::Recheck), [Action::Release { keep: false }]);
        assert!(matches!(
            one.failure(),
            FailureKind::CannotStart(StartFailure::Image { .. })
        ));
    }

    /// Waiting → Done: a start failure, kept with `--keep-pod` (the pod stays for a look).
    #[test]
    fn waiting_to_done_on_a_start_failure_kept_with_keep_pod() {
        let mut one = One::new(Rules {
            keep_failed: true,
            ..rules()
        });
        one.begin();
        let actions = one.seen(&scheduled(
            c_running("custodian"),
            c_waiting(
                "probe",
                "CreateContainerConfigError",
                Some("secret \"harness-env\" not found"),
            ),
        ));
        assert_eq!(actions, [Action::Release { keep: true }]);
    }

    /// Waiting → Running: the probe's log is opened; Running → Running: a log that broke off is opened again a
    /// moment later (the timer wakes then), at most MAX_LOG_OPENS times.
    #[test]
    fn running_opens_the_log_and_again_after_it_broke_off() {
        let mut one = One::new(rules());
        one.begin();
        assert_eq!(one.seen(&running()), [Action::OpenLog { generation: 1 }]);
        assert!(one.st.ran);
        assert_eq!(wake(&one.st, &one.rules), None, "nothing to wait for");
        for generation in 2..=MAX_LOG_OPENS {
            assert_eq!(one.log_ends(Some("connection reset by peer")), []);
            let at = one.now;
            assert_eq!(wake(&one.st, &one.rules), Some(at + one.rules.log_retry));
            one.later(Duration::from_millis(500));
            assert_eq!(one.step(Input::Recheck), [], "not yet");
            one.later(Duration::from_millis(500));
            assert_eq!(one.step(Input::Recheck), [Action::OpenLog { generation }]);
            // A line of the read before is dropped.
            assert_eq!(
                one.step(Input::LogLine {
                    generation: generation - 1,
                    line: ev_summary().to_line()
                }),
                []
            );
        }
        one.log_ends(Some("connection reset by peer"));
        assert_eq!(wake(&one.st, &one.rules), None, "no more reads");
        one.later(Duration::from_secs(5));
        assert_eq!(one.step(Input::Recheck), []);
        assert!(matches!(one.st.phase, Phase::Running));
    }

    /// Running → Done: the summary line of the probe's log is its verdict; progress as each line comes.
    #[test]
    fn running_to_done_on_the_verdict() {
        let mut one = One::new(rules());
        one.begin();
        one.run_to_verdict();
        let lines: Vec<String> = one.progress.iter().filter_map(RunUpdate::line).collect();
        assert_eq!(
            lines,
            [
                "provider: anthropic/claude-haiku-4-5 completed a tool call (840 ms)",
                "provider: vllm/Qwen/Qwen3-32B completed a tool call (841 ms)",
                "provider: google/gemini-2.5-flash completed a tool call (842 ms)",
            ]
        );
        let run = one.run();
        assert_verdict(&run);
        assert_eq!(run.evidence.probe_lines.len(), 11);
    }

    /// Running → Stopping → Done: the pod stopped with its log still open: the drain window, then the stop.
    #[test]
    fn stopping_waits_for_the_log_then_done() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.lines(&[ev_start(), ev_started(0)]);
        let since = one.now;
        let actions = one.seen(&stopped_by(
            c_terminated("probe", "Error", 1, None),
            "Failed",
        ));
        assert_eq!(actions, []);
        assert!(matches!(one.st.phase, Phase::Stopping { since: s } if s == since));
        assert_eq!(wake(&one.st, &one.rules), Some(since + one.rules.log_drain));
        one.later(Duration::from_secs(1));
        one.step(Input::Recheck);
        assert!(matches!(one.st.phase, Phase::Stopping { since: s } if s == since));
        one.later(Duration::from_secs(1));
        assert_eq!(one.step(Input::Recheck), [Action::Release { keep: false }]);
        assert!(matches!(
            one.failure(),
            FailureKind::Stopped { ref on_models, .. } if on_models == &[0]
        ));
    }

    /// Stopping → Running: the watch shows the pod running again (a stale status came first).
    #[test]
    fn stopping_back_to_running() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.seen(&stopped_by(
            c_terminated("probe", "Error", 1, None),
            "Failed",
        ));
        assert!(matches!(one.st.phase, Phase::Stopping { .. }));
        assert_eq!(one.seen(&running()), []);
        assert!(matches!(one.st.phase, Phase::Running));
    }

    /// Running → Done: a line out of turn (an index the run spec lacks) ends the pod's run.
    #[test]
    fn running_to_done_when_the_probe_speaks_out_of_turn() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        let actions = one.line(r#"{"event":"modelStarted","index":7,"model":"evil/x"}"#);
        assert_eq!(actions, [Action::Release { keep: false }]);
        let FailureKind::Stopped { code, reason, .. } = one.failure() else {
            panic!()
        };
        assert_eq!(code, PodCode::ProbeError);
        assert!(reason.starts_with("the driver stopped it: "), "{reason}");
    }

    /// Running → Stopping → Done: a probe that exits 2 with its own error refused its run spec.
    #[test]
    fn exit_2_with_the_probe_s_error_is_a_probe_error() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.line("error: the run spec is of another release");
        one.log_ends(None);
        one.seen(&stopped_by(
            c_terminated("probe", "Error", 2, Some("Error: exit 2")),
            "Failed",
        ));
        let FailureKind::Stopped {
            code, probe_error, ..
        } = one.failure()
        else {
            panic!()
        };
        assert_eq!(code, PodCode::ProbeError);
        assert_eq!(
            probe_error.as_deref(),
            Some("the run spec is of another release")
        );
    }

    /// Running → Done from the termination message when the log had no summary: a verdict from its log tail.
    #[test]
    fn a_log_tail_in_the_termination_message_is_the_verdict() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.log_ends(None);
        let tail = format!("{}\n", ev_summary().to_line());
        one.seen(&stopped_by(
            c_terminated("probe", "Completed", 0, Some(&tail)),
            "Succeeded",
        ));
        assert_verdict(&one.run());
    }

    /// Waiting → Done: the watch was refused (403).
    #[test]
    fn a_refused_watch_ends_the_run_of_the_pod() {
        let mut one = One::new(rules());
        one.begin();
        one.step(Input::WatchForbidden("pods is forbidden".to_owned()));
        assert_eq!(
            one.failure(),
            FailureKind::Refused {
                code: Some(403),
                message: "pods is forbidden".to_owned()
            }
        );
    }

    /// Running → Stopping → Done: the one watch of the run lists it no more: it is gone.
    #[test]
    fn a_pod_the_list_no_longer_shows_is_gone() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.lines(&[ev_start()]);
        one.log_ends(None);
        one.step(Input::Relisting);
        one.step(Input::Relisted);
        assert_eq!(
            one.failure_lines()[0],
            "error: provider preflight: the check pod stopped (the pod was deleted) before any model was checked"
        );
    }

    /// The Events that cannot be read: said by the run once (the pod asks once).
    #[test]
    fn events_forbidden_are_noted_and_said_once() {
        let mut one = One::new(rules());
        one.begin();
        let actions = one.step(Input::EventsForbidden("events is forbidden".to_owned()));
        assert_eq!(actions.len(), 1);
        assert!(one.st.seen.events_forbidden);
        assert_eq!(one.step(Input::EventsForbidden("again".to_owned())), []);
        assert_eq!(one.said.warnings.len(), 1);
    }

    /// Waiting → Done: the Custodian's log is read (its previous instance, once per restart), and its refusal ends
    /// the pod.
    #[test]
    fn the_custodian_s_log_is_read_and_its_refusal_ends_the_pod() {
        let mut one = One::new(rules());
        one.begin();
        let crashed = json!({"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 1,
            "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container"}},
            "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}});
        let stage = scheduled(crashed, c_waiting("probe", "PodInitializing", None));
        let actions = one.seen(&stage);
        assert_eq!(
            actions[0],
            Action::ReadCustodianLog {
                container: "custodian".to_owned(),
                previous: true
            }
        );
        assert!(
            !one.seen(&stage)
                .iter()
                .any(|a| matches!(a, Action::ReadCustodianLog { .. })),
            "once per restart"
        );
        one.step(Input::CustodianLog(Ok(vec![
            "[critical][lua] script log: jr2.custodian refuse secret=ANTHROPIC_API_KEY reason=empty-value"
                .to_owned(),
        ])));
        assert_eq!(
            one.failure_lines(),
            [
                "error: provider preflight: the check pod cannot start — the Custodian refused the held value ANTHROPIC_API_KEY (empty-value)"
            ]
        );
    }

    // -----------------------------------------------------------------------------------------------------------
    // The pod's stories, moved from `tests/cluster_mock.rs` (issue 26): the same inputs, the same assertions.

    #[test]
    fn unschedulable_then_scheduled_writes_the_pending_line_on_change_only() {
        let mut one = One::new(rules());
        one.begin();
        let other = "0/4 nodes are available: 4 Insufficient memory. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";
        for message in [UNSCHEDULABLE, UNSCHEDULABLE, other] {
            one.seen(&Stage::Unschedulable(message));
        }
        one.seen(&scheduled(
            c_waiting("custodian", "ContainerCreating", None),
            c_waiting("probe", "PodInitializing", None),
        ));
        one.run_to_verdict();
        assert_eq!(
            one.pending_lines(),
            [
                format!("provider: the check pod is not running yet — Unschedulable: {UNSCHEDULABLE}"),
                "provider: the check pod is not running yet — Unschedulable: 0/4 nodes are available: 4 Insufficient memory. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.".to_owned(),
            ],
            "the containers being created is progress, not a reason to act on (issue 12, item 17)"
        );
        assert_verdict(&one.run());
    }

    #[test]
    fn image_pull_back_off_names_the_image() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&scheduled(
            c_running("custodian"),
            c_waiting("probe", "ImagePullBackOff", Some(&format!(
                "Back-off pulling image \"{PROBE_IMAGE}\": ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image \"{PROBE_IMAGE}\": not found"
            ))),
        ));
        assert_eq!(
            one.failure_lines(),
            [format!(
                "error: provider preflight: the check pod cannot start — a node cannot pull {PROBE_IMAGE}: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image \"{PROBE_IMAGE}\": not found"
            )]
        );
        assert_eq!(one.releases(), [false], "deleted once");
    }

    #[test]
    fn an_image_pull_that_recovers_within_the_grace_is_only_pending() {
        let mut one = One::new(Rules {
            image_pull_grace: Duration::from_secs(10),
            ..rules()
        });
        one.begin();
        one.seen(&scheduled(
            c_running("custodian"),
            c_waiting("probe", "ErrImagePull", Some(&format!(
                "Failed to pull image \"{PROBE_IMAGE}\": rpc error: code = Unavailable desc = connection reset by peer"
            ))),
        ));
        one.run_to_verdict();
        assert_eq!(
            one.pending_lines(),
            [format!(
                "provider: the check pod is not running yet — ErrImagePull: {PROBE_IMAGE}: rpc error: code = Unavailable desc = connection reset by peer"
            )]
        );
        assert_verdict(&one.run());
    }

    /// Issue 40, item 13: a pull's error and then its back-off are one cause, said once.
    #[test]
    fn a_pull_error_and_its_back_off_are_said_once() {
        let mut one = One::new(Rules {
            image_pull_grace: Duration::from_secs(10),
            ..rules()
        });
        one.begin();
        let error = "rpc error: code = Unavailable desc = connection reset by peer";
        one.seen(&scheduled(
            c_running("custodian"),
            c_waiting(
                "probe",
                "ErrImagePull",
                Some(&format!("Failed to pull image \"{PROBE_IMAGE}\": {error}")),
            ),
        ));
        one.seen(&scheduled(
            c_running("custodian"),
            c_waiting(
                "probe",
                "ImagePullBackOff",
                Some(&format!(
                    "Back-off pulling image \"{PROBE_IMAGE}\": ErrImagePull: {error}"
                )),
            ),
        ));
        one.run_to_verdict();
        assert_eq!(
            one.pending_lines(),
            [format!(
                "provider: the check pod is not running yet — ErrImagePull: {PROBE_IMAGE}: {error}"
            )]
        );
    }

    /// Issue 40, item 13: the scheduler's condition, then its `FailedScheduling` Event with the same message read
    /// once the pod is placed but before its `Scheduled` Event came: one cause, said once.
    #[test]
    fn unschedulable_then_failed_scheduling_of_the_same_message_is_said_once() {
        const M: &str = "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.";
        let mut one = One::new(rules());
        one.begin();
        one.seen(&Stage::Unschedulable(M));
        let mut e = k8s_event(400, "FailedScheduling", "Warning", M);
        e.source = Some(k8s_openapi::api::core::v1::EventSource {
            component: Some("default-scheduler".to_owned()),
            host: None,
        });
        one.step(Input::Event(Box::new(e)));
        one.seen(&scheduled(
            c_waiting("custodian", "ContainerCreating", None),
            c_waiting("probe", "PodInitializing", None),
        ));
        one.run_to_verdict();
        assert_eq!(
            one.pending_lines(),
            [format!(
                "provider: the check pod is not running yet — Unschedulable: {M}"
            )]
        );
        assert_verdict(&one.run());
    }

    fn missing_secret(message: &str) -> One {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&scheduled(
            c_running("custodian"),
            c_waiting("probe", "CreateContainerConfigError", Some(message)),
        ));
        one
    }

    #[test]
    fn a_missing_env_from_secret() {
        let one = missing_secret("secret \"harness-env\" not found");
        assert_eq!(
            one.failure_lines(),
            [
                "error: provider preflight: the check pod cannot start — harness.envFrom names Secret \"harness-env\", which this namespace does not hold"
            ]
        );
        assert_eq!(one.releases(), [false], "deleted once");
    }

    /// Issue 40, item 15: a missing Secret gets a short grace with a progress line: one a secrets operator creates
    /// within it lets the pod run and pass; one that never comes fails when the grace is over, well before the
    /// deadline.
    #[test]
    fn a_missing_secret_gets_a_short_grace() {
        let grace = Rules {
            secret_grace: Duration::from_secs(20),
            timeout: Duration::from_secs(360),
            ..rules()
        };
        let waiting = scheduled(
            c_running("custodian"),
            c_waiting(
                "probe",
                "CreateContainerConfigError",
                Some("secret \"jr2-app\" not found"),
            ),
        );
        // The Secret comes 3 s later: the kubelet starts the probe, the check passes.
        let mut one = One::new(grace.clone());
        one.begin();
        one.seen(&waiting);
        assert!(matches!(
            one.st.phase,
            Phase::Waiting {
                grace_since: Some(_)
            }
        ));
        assert_eq!(
            wake(&one.st, &one.rules),
            Some(one.now + Duration::from_secs(20))
        );
        one.later(Duration::from_secs(3));
        one.seen(&waiting);
        one.run_to_verdict();
        insta::assert_snapshot!(one.pending_lines().join("\n"), @"provider: the check pod is not running yet — CreateContainerConfigError: Secret \"jr2-app\" not found; waiting up to 20 s for it to be created (a secrets operator may create it after the pod)");
        assert_verdict(&one.run());

        // It never comes: failed once the grace is over, with the contract's line.
        let mut one = One::new(grace);
        one.begin();
        one.seen(&waiting);
        one.later(Duration::from_secs(19));
        one.step(Input::Recheck);
        assert!(!one.st.done());
        one.later(Duration::from_secs(1));
        one.step(Input::Recheck);
        assert_eq!(
            one.failure_lines(),
            [
                "error: provider preflight: the check pod cannot start — harness.envFrom names Secret \"jr2-app\", which this namespace does not hold"
            ]
        );
        assert_eq!(one.pending_lines().len(), 1, "said once");
    }

    #[test]
    fn a_missing_env_key() {
        let one = missing_secret("couldn't find key token in Secret demo/extra");
        assert_eq!(
            one.failure_lines(),
            [
                "error: provider preflight: the check pod cannot start — harness.env names key \"token\" of Secret \"extra\", which does not exist"
            ]
        );
    }

    #[test]
    fn the_custodian_volume_shows_only_as_an_event() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&scheduled(
            c_waiting("custodian", "ContainerCreating", None),
            c_waiting("probe", "PodInitializing", None),
        ));
        one.step(Input::Event(Box::new(k8s_event(
            101,
            "Scheduled",
            "Normal",
            "Successfully assigned demo/jr2-preflight-demo-harness-run0001 to worker-2",
        ))));
        one.step(Input::Event(Box::new(k8s_event(102, "FailedMount", "Warning",
            "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found"))));
        assert_eq!(
            one.failure_lines(),
            [
                "error: provider preflight: the check pod cannot start — a secrets valueFrom names Secret \"anthropic\" (or its key), so the Custodian's volume does not mount: MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found"
            ]
        );
        assert_eq!(one.releases(), [false], "deleted once");
        assert_eq!(one.run().evidence.events.len(), 2);
    }

    /// An Event as another component writes it (a policy engine's).
    fn audit_event(rv: u64, reason: &str, component: &str, message: &str) -> Event {
        let mut e = k8s_event(rv, reason, "Warning", message);
        e.source = Some(k8s_openapi::api::core::v1::EventSource {
            component: Some(component.to_owned()),
            host: None,
        });
        e
    }

    /// Issue 40, item 9: an Event storm of audit Warnings, each message different, says no pending line, is kept
    /// within bounds, and is counted under the failure in one line per reason and source.
    #[test]
    fn an_event_storm_is_counted_not_shown_as_why_the_pod_waits() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&scheduled(
            c_waiting("custodian", "ContainerCreating", None),
            c_waiting("probe", "PodInitializing", None),
        ));
        for i in 0..4084 {
            one.step(Input::Event(Box::new(audit_event(
                200 + i,
                "PolicyViolation",
                "kyverno-admission",
                &format!("policy require-team/check-{i} fail: label team is required"),
            ))));
        }
        assert_eq!(one.pending_lines(), Vec::<String>::new());
        assert_eq!(one.st.seen.events.len(), super::super::events::MAX_EVENTS);
        one.later(Duration::from_secs(21));
        one.step(Input::Deadline);
        insta::assert_snapshot!(one.failure_lines().join("\n"), @r"
        error: provider preflight: the check pod did not start in 20 s — last reason ContainerCreating: the node creates the containers
          - 4084 Warning Events PolicyViolation from kyverno-admission (not why the check pod waits)
        ");
    }

    /// Issue 40, item 10: a FailedMount from a policy engine, or of a volume the pod does not have, does not end the
    /// run; the pod starts and its check passes.
    #[test]
    fn a_failed_mount_that_is_not_the_pod_s_does_not_end_the_run() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&scheduled(
            c_waiting("custodian", "ContainerCreating", None),
            c_waiting("probe", "PodInitializing", None),
        ));
        one.step(Input::Event(Box::new(audit_event(
            300,
            "FailedMount",
            "kyverno-admission",
            "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found",
        ))));
        one.step(Input::Event(Box::new(k8s_event(
            301,
            "FailedMount",
            "Warning",
            "MountVolume.SetUp failed for volume \"vault-secrets\" : secret \"vault\" not found",
        ))));
        assert!(!one.st.done(), "{:?}", one.st.phase);
        one.run_to_verdict();
        assert_verdict(&one.run());
    }

    /// The pod with an init container `mesh-init` that admission put before the Custodian, in `mesh` state, and
    /// the pod's phase and reason.
    fn with_mesh_init(one: &mut One, mesh: Value, phase: &str, reason: Option<&str>) -> Box<Pod> {
        let mut pod = serde_json::to_value(one.object(&scheduled(
            c_waiting("custodian", "PodInitializing", None),
            c_waiting("probe", "PodInitializing", None),
        )))
        .unwrap();
        pod["spec"]["initContainers"]
            .as_array_mut()
            .unwrap()
            .insert(0, json!({"name": "mesh-init", "image": "mesh/init:1"}));
        pod["status"]["initContainerStatuses"]
            .as_array_mut()
            .unwrap()
            .insert(0, mesh);
        pod["status"]["phase"] = json!(phase);
        if let Some(r) = reason {
            pod["status"]["reason"] = json!(r);
            pod["status"]["message"] =
                json!("Pod was active on the node longer than the specified deadline");
        }
        Box::new(serde_json::from_value(pod).unwrap())
    }

    /// Issue 40, item 7: an injected init container that never completes is named in the failure, whether the
    /// pod's own deadline or the run's ends it.
    #[test]
    fn an_injected_init_container_that_never_completes_is_named() {
        let mut one = One::new(rules());
        one.begin();
        let waiting = with_mesh_init(&mut one, c_running("mesh-init"), "Pending", None);
        one.step(Input::Seen(waiting));
        assert!(!one.st.done());
        let stopped = with_mesh_init(
            &mut one,
            c_running("mesh-init"),
            "Failed",
            Some("DeadlineExceeded"),
        );
        one.step(Input::Seen(stopped));
        assert_eq!(one.failure().code(), PodCode::CannotStart);
        insta::assert_snapshot!(one.failure_lines().join("\n"), @"error: provider preflight: the check pod cannot start — Init:0/2: the init container mesh-init has not completed (running); nothing else starts before it does; the pod stopped: DeadlineExceeded: Pod was active on the node longer than the specified deadline");

        let mut one = One::new(rules());
        one.begin();
        let waiting = with_mesh_init(&mut one, c_running("mesh-init"), "Pending", None);
        one.step(Input::Seen(waiting));
        one.later(Duration::from_secs(21));
        one.step(Input::Deadline);
        insta::assert_snapshot!(one.failure_lines().join("\n"), @"error: provider preflight: the check pod did not start in 20 s — last reason Init:0/2: the init container mesh-init has not completed (running); nothing else starts before it does");
    }

    /// The probe OOM-killed after these lines; its log ends before or after the watch shows the kill.
    fn oom(lines: &[ProbeEvent], log_ends_first: bool) -> One {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.lines(lines);
        let killed = stopped_by(c_terminated("probe", "OOMKilled", 137, None), "Failed");
        if log_ends_first {
            one.log_ends(None);
            one.seen(&killed);
        } else {
            one.seen(&killed);
            assert!(matches!(one.st.phase, Phase::Stopping { .. }));
            one.log_ends(None);
        }
        one
    }

    #[test]
    fn oom_mid_run_names_the_model_and_the_rest_not_checked() {
        for log_ends_first in [true, false] {
            let one = oom(
                &[ev_start(), ev_started(0), ev_result(0), ev_started(1)],
                log_ends_first,
            );
            assert_eq!(
                one.failure_lines(),
                [
                    "error: provider preflight: the check pod stopped (probe ran out of memory, limit 64Mi) while the check was on model \"vllm/Qwen/Qwen3-32B\"",
                    "  not checked: google/gemini-2.5-flash",
                ]
            );
            assert_eq!(
                one.failure(),
                FailureKind::Stopped {
                    reason: "probe ran out of memory, limit 64Mi".into(),
                    on_models: vec![1],
                    not_checked: vec![2],
                    probe_error: None,
                    code: PodCode::OutOfMemory,
                }
            );
            assert_eq!(one.releases(), [false], "deleted once");
            // The first model's result came before the kill, and counts.
            assert!(one.run().results[0].is_some());
        }
    }

    /// Two models in flight when the pod stops: both are named as what the check was on, since each request may have
    /// been sent; only the model never started is `not checked` (issue 27, item 17).
    #[test]
    fn every_model_in_flight_is_named_when_the_pod_stops() {
        let one = oom(&[ev_start(), ev_started(0), ev_started(1)], true);
        let FailureKind::Stopped {
            on_models,
            not_checked,
            ..
        } = one.failure()
        else {
            panic!("{:?}", one.failure())
        };
        assert_eq!(on_models, vec![0, 1]);
        assert_eq!(not_checked, vec![2]);
        let models = one.st.models.clone();
        assert_eq!(
            one.failure_lines(),
            [
                format!(
                    "error: provider preflight: the check pod stopped (probe ran out of memory, limit 64Mi) while the check was on models \"{}\", \"{}\"",
                    models[0], models[1]
                ),
                format!("  not checked: {}", models[2]),
            ]
        );
    }

    /// Waiting → Done at the deadline: the last reason; Running → Done at the deadline: no verdict in time.
    #[test]
    fn the_deadline_gives_the_last_reason_and_the_pod_is_deleted() {
        let mut one = One::new(Rules {
            timeout: Duration::from_millis(1500),
            ..rules()
        });
        one.begin();
        one.seen(&Stage::Unschedulable(UNSCHEDULABLE));
        one.later(Duration::from_millis(1500));
        assert_eq!(one.step(Input::Deadline), [Action::Release { keep: false }]);
        assert_eq!(
            one.failure_lines(),
            [format!(
                "error: provider preflight: the check pod did not start in 1.5 s — last reason Unschedulable: {UNSCHEDULABLE}"
            )]
        );
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.lines(&[ev_start(), ev_started(0)]);
        one.step(Input::Deadline);
        assert_eq!(
            one.failure_lines()[0],
            "error: provider preflight: the check pod stopped (no verdict in 20 s) while the check was on model \"anthropic/claude-haiku-4-5\""
        );
    }

    #[test]
    fn a_lost_log_falls_back_to_the_termination_message() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.lines(&[ev_start(), ev_started(0), ev_result(0)]);
        one.log_ends(Some("connection reset by peer"));
        let summary = Summary::fitting(&verdict(), &[], TERMINATION_LIMIT);
        let actions = one.seen(&Stage::Scheduled {
            phase: "Running",
            custodian: c_running("custodian"),
            probe: c_terminated("probe", "Completed", 0, Some(&summary)),
        });
        // The driver tries the log once more; it is gone.
        assert_eq!(actions, [Action::OpenLog { generation: 2 }]);
        assert!(matches!(one.st.phase, Phase::Stopping { .. }));
        one.log_ends(Some("failed to try resolving symlinks in path \"/var/log/pods/demo_x/probe/0.log\": no such file or directory"));
        assert_eq!(one.releases(), [false], "deleted once");
        let results = one
            .progress
            .iter()
            .filter(|p| matches!(p, RunUpdate::Result { .. }))
            .count();
        let run = one.run();
        let PodOutcome::Finished(report) = &run.outcome else {
            panic!("{:?}", run.outcome)
        };
        assert!(report.verdict.is_none());
        let summary = report.summary.as_ref().expect("the termination message");
        assert!(summary.ok);
        assert_eq!(summary.n, 3);
        assert_eq!(report.exit_code, Some(0));
        assert!(run.results[0].is_some() && run.results[1].is_none());
        // The evidence keeps the lines that came before the log broke off.
        assert_eq!(run.evidence.probe_lines.len(), 3);
        assert!(run.ok());
        // The first result was reported once, though the log was read twice.
        assert_eq!(results, 1);
    }

    #[test]
    fn a_pod_deleted_by_someone_else_stops_the_check() {
        let mut one = One::new(rules());
        one.begin();
        one.seen(&running());
        one.lines(&[ev_start(), ev_started(0)]);
        one.log_ends(None);
        let mut gone = serde_json::to_value(&*one.object(&running())).unwrap();
        gone["metadata"]["deletionTimestamp"] = json!("2026-12-04T18:36:50Z");
        one.step(Input::Gone(Box::new(serde_json::from_value(gone).unwrap())));
        assert_eq!(
            one.failure_lines(),
            [
                "error: provider preflight: the check pod stopped (the pod was deleted) while the check was on model \"anthropic/claude-haiku-4-5\"",
                "  not checked: vllm/Qwen/Qwen3-32B",
                "  not checked: google/gemini-2.5-flash",
            ]
        );
        // It is gone already: the driver's DELETE (a 404, which is fine) comes once.
        assert_eq!(one.releases(), [false]);
    }

    /// Issue 40, item 3: the probe's first line gives it a budget much shorter than the time left to the pod's
    /// deadline: the node's clock is ahead, by at least the difference; a budget that agrees names nothing.
    #[test]
    fn a_short_budget_names_a_node_clock_ahead() {
        let start = |budget_ms| {
            ProbeEvent::start(
                jr2_probe::contract::verdict::Origin::Node {
                    name: "worker-2".to_owned(),
                },
                3,
                Some(budget_ms),
            )
        };
        for (budget_ms, ahead) in [(0, Some(57)), (56_000, None)] {
            let mut one = One::new(rules());
            one.rules.deadline = Some(one.now + Duration::from_secs(60));
            one.begin();
            one.seen(&running());
            one.lines(&[start(budget_ms)]);
            assert_eq!(one.st.probe.node_ahead, ahead, "{budget_ms}");
        }
    }
}
