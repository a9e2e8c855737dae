//! The run's loop: one `select!` over the watches, the logs and the timers (no task of its own: dropping its future
//! stops it), moving each pod's [`Phase`] on what [`diagnose`] says of it, sending progress as it happens, and
//! releasing each pod (delete, or keep) as soon as its run is over.

use std::collections::{BTreeSet, HashMap};

use futures_util::stream::{self, BoxStream, SelectAll, StreamExt};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::time::Instant;

use jr2_probe::contract::outcome::PodCode;
use jr2_probe::contract::render;
use jr2_probe::contract::verdict::Verdict;
use jr2_probe::contract::{Exit, ProbeEvent};
use jr2_probe::sanitize::MAX_ERROR_CHARS;

/// The most warning lines a run writes (the probes' and its own): more are dropped.
const MAX_PROBE_WARNINGS: usize = 20;

use super::RunConfig;
use super::cancel;
use super::cleanup::Cleanup;
use super::log::{self, LogItem};
use super::pod_state::{LogState, MAX_LOG_OPENS, Phase, PodState};
use super::protocol::{self, Termination};
use super::report::{FailureKind, PodFailure, PodOutcome, ProbeReport, RunResult, RunUpdate};
use super::watch::{self, Watch, forbidden};
use crate::diagnose::{self, Diagnosis, StartFailure};
use crate::pod::PROBE_CONTAINER;

/// What the loop waits on.
enum Input {
    /// The pod watch.
    Pod(Box<Result<watcher::Event<Pod>, watcher::Error>>),
    /// The Events watch of pod `usize`.
    Events(usize, Box<Result<watcher::Event<Event>, watcher::Error>>),
    /// The probe's log of pod `usize`, of that generation.
    Log(usize, u32, LogItem),
    /// The Custodian's log of pod `usize`.
    Custodian(usize, Result<Vec<String>, String>),
}

/// A run under way.
pub(super) struct Run {
    api: Api<Pod>,
    client: Client,
    namespace: String,
    opts: RunConfig,
    pods: Vec<PodState>,
    /// The (reason, message) of the last pending line written by any pod: the same line is never written twice in
    /// a row, whichever pod says it.
    last_pending: Option<(String, String)>,
    by_name: HashMap<String, usize>,
    streams: SelectAll<BoxStream<'static, Input>>,
    warnings: Vec<String>,
    start: Instant,
    deadline: Instant,
    cleanup: Cleanup,
    released: Vec<bool>,
    one_watch: bool,
}

impl Run {
    /// A run of these pods, none created yet.
    pub(super) fn new(
        client: Client,
        namespace: &str,
        pods: Vec<PodState>,
        opts: RunConfig,
        cleanup: Cleanup,
        start: Instant,
    ) -> Self {
        let by_name = pods
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.clone(), i))
            .collect();
        Self {
            api: Api::namespaced(client.clone(), namespace),
            client,
            namespace: namespace.to_owned(),
            deadline: start + opts.timeout,
            opts,
            released: vec![false; pods.len()],
            pods,
            by_name,
            streams: SelectAll::new(),
            warnings: Vec::new(),
            start,
            cleanup,
            one_watch: true,
            last_pending: None,
        }
    }

    /// The overall deadline.
    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The create of pod `i` was answered: created, as `pod`.
    pub(super) fn created(&mut self, i: usize, pod: Pod) {
        let st = &mut self.pods[i];
        st.uid = pod.metadata.uid.clone();
        st.seen.last = Some(pod);
        st.phase = Phase::Waiting { grace_since: None };
        let pod = st.name.clone();
        self.emit(RunUpdate::Created { pod });
    }

    /// The run was cancelled: every pod not finished is interrupted.
    pub(super) fn interrupt(&mut self) {
        for i in 0..self.pods.len() {
            if !self.pods[i].done() {
                self.fail(i, FailureKind::Interrupted);
            }
        }
    }

    /// Opens the watches and runs the loop until every pod is done, the deadline passes or the run is cancelled.
    pub(super) async fn watch_and_drive(&mut self, pods: &[Pod]) {
        if self.pods.iter().all(PodState::done) {
            return;
        }
        let watches = watch::pods(&self.api, pods);
        self.one_watch = watches.len() == 1;
        for w in watches {
            self.streams
                .push(w.map(|r| Input::Pod(Box::new(r))).boxed());
        }
        for i in 0..self.pods.len() {
            if !self.pods[i].done() {
                self.watch_events(i);
                self.evaluate(i, Instant::now());
            }
        }
        self.drive().await;
    }

    /// What the run found; every pod not kept is deleted (not awaited).
    pub(super) fn finish(mut self) -> RunResult {
        tracing::debug!(
            elapsed_ms = self.start.elapsed().as_millis() as u64,
            "check pods done"
        );
        self.release_done();
        let kept: BTreeSet<String> = self.cleanup.kept();
        let pods = self
            .pods
            .into_iter()
            .map(|st| {
                let kept = kept.contains(&st.name);
                st.into_run(kept)
            })
            .collect();
        self.cleanup.delete_all();
        RunResult {
            pods,
            warnings: self.warnings,
        }
    }

    fn emit(&self, p: RunUpdate) {
        if let Some(tx) = &self.opts.progress {
            let _ = tx.send(p);
        }
    }

    fn clean(&self, s: &str) -> String {
        self.opts.redactor.clean(s)
    }

    /// Pod `i` failed: its lines, and [`Phase::Done`].
    pub(super) fn fail(&mut self, i: usize, kind: FailureKind) {
        let c = |s: &str| self.opts.redactor.clean(s);
        let st = &self.pods[i];
        let lines = match &kind {
            FailureKind::Refused { message, .. } => vec![render::cluster_refused(&c(message))],
            FailureKind::Unreachable { why } => {
                // One cluster: said once, whichever pods could not be created.
                let line = render::cannot_reach_cluster(&c(why));
                let said = self.pods.iter().any(|p| {
                    matches!(&p.phase, Phase::Done(PodOutcome::Failed(f)) if f.lines.contains(&line))
                });
                if said { Vec::new() } else { vec![line] }
            }
            FailureKind::CannotStart(f) => vec![f.line(&self.opts.redactor)],
            FailureKind::Stopped {
                reason,
                on_models,
                not_checked,
                probe_error,
                ..
            } => {
                let line = if !on_models.is_empty() {
                    let models: Vec<&str> = on_models.iter().map(|m| st.model(*m)).collect();
                    render::pod_stopped(&c(reason), &models)
                } else if st.all_results() {
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
                        .map(|m| render::not_checked(st.model(*m))),
                );
                lines
            }
            FailureKind::DidNotStart { reason, message } => vec![render::pod_did_not_start(
                &render::seconds(self.opts.timeout),
                &c(reason),
                &c(message),
            )],
            // Never reached by a run: the caller writes the lines of a pod it did not create.
            FailureKind::Interrupted
            | FailureKind::NotAllowed { .. }
            | FailureKind::PodSecurity { .. } => Vec::new(),
        };
        self.pods[i].phase = Phase::Done(PodOutcome::Failed(PodFailure { kind, lines }));
    }

    /// The pod stopped before the probe finished: which model it was on (none when the probe had started none),
    /// and the rest not checked; `probe_error` is the probe's own `error:` text, cleaned. When every result came
    /// anyway, the probe did finish.
    fn stopped(
        &mut self,
        i: usize,
        reason: String,
        exit_code: Option<i32>,
        code: PodCode,
        probe_error: Option<String>,
    ) {
        let st = &self.pods[i];
        if st.all_results() {
            self.pods[i].phase = Phase::Done(PodOutcome::Finished(ProbeReport {
                exit_code,
                ..ProbeReport::default()
            }));
            return;
        }
        self.stopped_unfinished(i, reason, code, probe_error);
    }

    /// The pod's probe spoke out of turn (a model index its run spec does not have): its run is over, whatever it
    /// said before, and the pod is deleted (as any pod whose run is over); its models are judged from what is known.
    fn out_of_turn(&mut self, i: usize, e: &protocol::ProtocolError) {
        tracing::debug!(pod = %self.pods[i].name, error = %e, "the probe broke the protocol");
        self.stopped_unfinished(
            i,
            format!("the driver stopped it: {e}"),
            PodCode::ProbeError,
            None,
        );
    }

    /// [`Run::stopped`] with the probe not finished: the model it was on and the rest not checked.
    fn stopped_unfinished(
        &mut self,
        i: usize,
        reason: String,
        code: PodCode,
        probe_error: Option<String>,
    ) {
        let st = &self.pods[i];
        let missing: Vec<usize> = if st.models.is_empty() {
            Vec::new()
        } else {
            (0..st.models.len())
                .filter(|m| st.probe.results[*m].is_none())
                .collect()
        };
        // No model had started: the probe never ran, or its log (which starts with its `start` line) or its own
        // error says so. A probe that ran and whose log gave nothing leaves it unknown: the first model not done.
        let none_started =
            !st.began() && (!st.ran || !st.probe.lines.is_empty() || probe_error.is_some());
        // Every model the probe had started and not concluded was in flight (its request may have been sent); when
        // the log named none, the first model not done.
        let on_models: Vec<usize> = if none_started {
            Vec::new()
        } else {
            let started: Vec<usize> = missing
                .iter()
                .copied()
                .filter(|m| st.probe.started.contains(m))
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
        self.fail(
            i,
            FailureKind::Stopped {
                reason,
                on_models,
                not_checked,
                probe_error,
                code,
            },
        );
    }

    /// Keeps the pod's latest word on why it is not running (for the not-started-in-time error), cleaned; returns it.
    fn note_pending(&mut self, i: usize, reason: &str, message: &str) -> (String, String) {
        let noted = (self.clean(reason), self.clean(message));
        self.pods[i].pending.last = Some(noted.clone());
        noted
    }

    fn pending(&mut self, i: usize, reason: &str, message: &str) {
        let (reason, message) = self.note_pending(i, reason, message);
        let st = &mut self.pods[i];
        let state = Some((reason.clone(), message.clone()));
        if st.pending.written != state {
            st.pending.written = state;
            let pod = st.name.clone();
            // The line does not name its pod (the contract's form): two placements waiting for the same reason
            // would write the same line twice, so a line that another pod's latest line already says is not
            // written again.
            let shown =
                self.pods.iter().enumerate().any(|(j, other)| {
                    j != i && other.pending.written == self.pods[i].pending.written
                });
            if shown || self.last_pending == self.pods[i].pending.written {
                return;
            }
            self.last_pending = self.pods[i].pending.written.clone();
            self.emit(RunUpdate::Pending {
                pod,
                reason,
                message,
            });
        }
    }

    fn open_log(&mut self, i: usize) {
        let generation = self.pods[i].log_opened();
        let lines = log::probe_log(self.api.clone(), self.pods[i].name.clone());
        self.streams
            .push(lines.map(move |it| Input::Log(i, generation, it)).boxed());
    }

    fn read_custodian_log(&mut self, i: usize, container: String, previous: bool) {
        let read = log::custodian_log(
            self.api.clone(),
            self.pods[i].name.clone(),
            container,
            previous,
        );
        self.streams
            .push(stream::once(async move { Input::Custodian(i, read.await) }).boxed());
    }

    fn watch_events(&mut self, i: usize) {
        let events: Watch<Event> =
            watch::events(self.client.clone(), &self.namespace, &self.pods[i].name);
        self.streams
            .push(events.map(move |r| Input::Events(i, Box::new(r))).boxed());
    }

    fn on_pod_watch_error(&mut self, e: &watcher::Error) {
        if let Some(message) = forbidden(e) {
            for i in 0..self.pods.len() {
                if !self.pods[i].done() {
                    self.fail(
                        i,
                        FailureKind::Refused {
                            code: Some(403),
                            message: message.clone(),
                        },
                    );
                }
            }
        } else {
            tracing::debug!(error = %e, "the watch of the check pods failed; it is re-established");
        }
    }

    fn on_event(&mut self, i: usize, ev: watcher::Event<Event>, now: Instant) {
        if let watcher::Event::Apply(e) | watcher::Event::InitApply(e) = ev {
            // The same Event again (its count went up): it moves to the end, where the latest are.
            let events = &mut self.pods[i].seen.events;
            let key = e.metadata.uid.clone().or(e.metadata.name.clone());
            events.retain(|old| old.metadata.uid.clone().or(old.metadata.name.clone()) != key);
            events.push(e);
        }
        self.evaluate(i, now);
    }

    fn on_event_watch_error(&mut self, i: usize, e: &watcher::Error) {
        if let Some(message) = forbidden(e) {
            // Said once for the run: by the first pod whose Events are forbidden, or before the run (`access.rs`).
            let said = self.opts.events_forbidden_said
                || self.pods.iter().any(|p| p.seen.events_forbidden);
            self.pods[i].seen.events_forbidden = true;
            if !said {
                let line = render::events_forbidden_warning(&self.clean(&message));
                self.warnings.push(line.clone());
                self.emit(RunUpdate::Warning { line });
            }
        } else {
            tracing::debug!(error = %e, "the watch of the Events failed; it is re-established");
        }
    }

    fn handle(&mut self, input: Input, now: Instant) {
        match input {
            Input::Pod(r) => match *r {
                Ok(ev) => self.on_pod_event(ev, now),
                Err(e) => self.on_pod_watch_error(&e),
            },
            Input::Events(i, r) => match *r {
                Ok(ev) => self.on_event(i, ev, now),
                Err(e) => self.on_event_watch_error(i, &e),
            },
            Input::Log(i, generation, item) => {
                if generation != self.pods[i].log.generation || self.pods[i].done() {
                    return;
                }
                match item {
                    LogItem::Line(line) => self.on_log_line(i, line),
                    LogItem::End(error) => {
                        if let Some(e) = &error {
                            tracing::debug!(pod = %self.pods[i].name, error = %e, "the probe's log broke off");
                        }
                        self.pods[i].log.state = LogState::Ended {
                            at: now,
                            clean: error.is_none(),
                        };
                        self.evaluate(i, now);
                    }
                }
            }
            Input::Custodian(i, r) => {
                self.pods[i].custodian.lines = Some(r.unwrap_or_else(|e| {
                    tracing::debug!(error = %e, "cannot read the Custodian's log");
                    Vec::new()
                }));
                self.evaluate(i, now);
            }
        }
    }

    fn on_pod_event(&mut self, ev: watcher::Event<Pod>, now: Instant) {
        match ev {
            watcher::Event::Init => {
                for st in &mut self.pods {
                    st.seen.in_list = false;
                }
            }
            watcher::Event::InitApply(p) | watcher::Event::Apply(p) => {
                let Some(&i) = self.by_name.get(&p.name_any()) else {
                    return;
                };
                let st = &mut self.pods[i];
                st.seen.in_list = true;
                match (&st.uid, &p.metadata.uid) {
                    (Some(ours), Some(theirs)) if ours != theirs => st.seen.deleted = true,
                    _ => {
                        st.uid = p.metadata.uid.clone();
                        st.seen.last = Some(p);
                    }
                }
                self.evaluate(i, now);
            }
            // One watcher lists every pod of the run: one it no longer lists is gone. (With one watcher per pod,
            // a list says nothing about the others.)
            watcher::Event::InitDone if self.one_watch => {
                for i in 0..self.pods.len() {
                    let st = &self.pods[i];
                    if !st.seen.in_list && st.uid.is_some() && !st.done() {
                        self.pods[i].seen.deleted = true;
                        self.evaluate(i, now);
                    }
                }
            }
            watcher::Event::InitDone => {}
            watcher::Event::Delete(p) => {
                let Some(&i) = self.by_name.get(&p.name_any()) else {
                    return;
                };
                let st = &mut self.pods[i];
                if st.uid.is_none() || st.uid == p.metadata.uid {
                    st.seen.deleted = true;
                    st.seen.last = Some(p);
                }
                self.evaluate(i, now);
            }
        }
    }

    /// What the plan says of pod `i`'s models, and how to clean what its probe says.
    fn trusted(&self, i: usize) -> protocol::Trusted<'_> {
        protocol::Trusted {
            redactor: &self.opts.redactor,
            models: &self.pods[i].models,
            resolved: &self.pods[i].resolved,
        }
    }

    fn on_log_line(&mut self, i: usize, line: String) {
        let event = protocol::event(&line, &self.trusted(i));
        let st = &mut self.pods[i];
        st.keep_line(line);
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                self.out_of_turn(i, &e);
                return;
            }
        };
        let st = &mut self.pods[i];
        match event {
            Some(ProbeEvent::ModelStarted { index, .. }) => {
                if st.probe.started.insert(index) {
                    let model = st.models.get(index).cloned().unwrap_or_default();
                    let pod = st.name.clone();
                    self.emit(RunUpdate::ModelStarted { pod, index, model });
                }
            }
            // The index is one of the run spec's (`protocol::event`).
            Some(ProbeEvent::Result { index, result }) => {
                if let Some(slot) = st.result_slot(index) {
                    *slot = Some((*result).clone());
                    let pod = st.name.clone();
                    self.emit(RunUpdate::Result { pod, index, result });
                }
            }
            Some(ProbeEvent::Summary { verdict }) => self.on_summary(i, verdict),
            // The probe's warning about its run (a CA file it cannot read): once, however many pods say it. Only a
            // `warning:` line: a pod cannot make the driver print another kind.
            Some(ProbeEvent::Warning { line }) => self.probe_warning(line),
            // A model still waiting: its line names the plan's model, never the pod's text; one whose index the
            // plan does not know makes none.
            Some(ProbeEvent::Waiting {
                index,
                waited_ms,
                timeout_ms,
                ..
            }) => {
                if let Some(model) = st.models.get(index).filter(|m| !m.is_empty()).cloned() {
                    let pod = st.name.clone();
                    self.emit(RunUpdate::Waiting {
                        pod,
                        model,
                        waited_ms,
                        timeout_ms,
                    });
                }
            }
            Some(ProbeEvent::Start { .. } | ProbeEvent::Try { .. }) | None => {}
        }
    }

    /// The probe's whole verdict: done, unless its Custodian refused a held value (then the probe's calls went
    /// through no Custodian, and its verdict says nothing).
    /// The probe's warning about its run (a CA file it cannot read), from its log or its termination message: once,
    /// however many pods say it, and only a `warning:` line (a pod cannot make the driver print another kind); at
    /// most MAX_PROBE_WARNINGS in a run, so a probe (of another release, or broken) cannot flood `jr2 up`'s output.
    fn probe_warning(&mut self, line: String) {
        if line.starts_with("warning: ")
            && self.warnings.len() < MAX_PROBE_WARNINGS
            && !self.warnings.contains(&line)
        {
            self.warnings.push(line.clone());
            self.emit(RunUpdate::Warning { line });
        }
    }

    fn on_summary(&mut self, i: usize, v: Box<Verdict>) {
        let st = &mut self.pods[i];
        if let Some((name, reason)) = st
            .custodian
            .lines
            .as_deref()
            .and_then(diagnose::custodian_refusal)
        {
            self.fail(
                i,
                FailureKind::CannotStart(StartFailure::CustodianRefused { name, reason }),
            );
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

    /// Judges one pod from what is known now, and moves its phase.
    fn evaluate(&mut self, i: usize, now: Instant) {
        if self.pods[i].done() {
            return;
        }
        let Some(pod) = self.pods[i].seen.last.clone() else {
            return;
        };
        if let Some(req) = diagnose::custodian_log_request(&pod)
            && self.pods[i].custodian.asked != Some((req.restart_count, req.previous))
        {
            let st = &mut self.pods[i];
            st.custodian.asked = Some((req.restart_count, req.previous));
            st.custodian.lines = None;
            self.read_custodian_log(i, req.container, req.previous);
        }
        let st = &self.pods[i];
        let diagnosis = if st.seen.deleted {
            Diagnosis::Stopped {
                reason: "the pod was deleted".to_owned(),
            }
        } else {
            diagnose::diagnose(&pod, &st.seen.events, st.custodian.lines.as_deref())
        };
        match diagnosis {
            Diagnosis::Pending { reason, message } => {
                self.pods[i].phase = Phase::Waiting { grace_since: None };
                self.pending(i, &reason, &message);
            }
            Diagnosis::Starting { reason, message } => {
                self.pods[i].phase = Phase::Waiting { grace_since: None };
                self.note_pending(i, &reason, &message);
            }
            Diagnosis::Running => {
                let st = &mut self.pods[i];
                st.phase = Phase::Running;
                st.ran = true;
                let (log, opens) = (st.log.state, st.log.opens);
                match log {
                    LogState::Closed => self.open_log(i),
                    LogState::Ended { at, .. }
                        if now >= at + self.opts.log_retry && opens < MAX_LOG_OPENS =>
                    {
                        self.open_log(i);
                    }
                    _ => {}
                }
            }
            Diagnosis::CannotStart(f) => {
                if f.is_transient() {
                    let since = match self.pods[i].phase {
                        Phase::Waiting {
                            grace_since: Some(since),
                        } => since,
                        _ => now,
                    };
                    if now < since + self.opts.image_pull_grace {
                        self.pods[i].phase = Phase::Waiting {
                            grace_since: Some(since),
                        };
                        let (reason, message) = f.as_pending();
                        self.pending(i, &reason, &message);
                        return;
                    }
                }
                let (began, ran) = (self.pods[i].began(), self.pods[i].ran);
                match f {
                    StartFailure::CustodianRefused { .. } => {
                        self.fail(i, FailureKind::CannotStart(f))
                    }
                    // The probe's own OOM: its log says whether, and where, the check had begun.
                    StartFailure::OutOfMemory { ref container, .. }
                        if container == PROBE_CONTAINER || began || ran =>
                    {
                        if self.wait_for_log(i, now) {
                            return;
                        }
                        if self.pods[i].began() {
                            self.stopped(i, f.stop_reason(), Some(137), PodCode::OutOfMemory, None);
                        } else {
                            self.fail(i, FailureKind::CannotStart(f));
                        }
                    }
                    _ => self.fail(i, FailureKind::CannotStart(f)),
                }
            }
            Diagnosis::Stopped { reason } => {
                if self.wait_for_log(i, now) {
                    return;
                }
                self.stopped(i, reason, None, PodCode::Stopped, None);
            }
            Diagnosis::Finished {
                exit_code,
                message,
                stop_reason,
            } => {
                self.pods[i].ran = true;
                if self.wait_for_log(i, now) {
                    return;
                }
                let termination = message
                    .as_deref()
                    .map(|m| protocol::termination(m, &self.trusted(i)));
                match termination {
                    Some(Termination::Verdict(v)) => self.on_summary(i, v),
                    Some(Termination::Summary(summary)) => {
                        // A lost log loses no warning: the termination message keeps them (issue 27, item 18).
                        // (Cleaned as the termination message was read.)
                        for line in summary.warnings.clone() {
                            self.probe_warning(line);
                        }
                        self.pods[i].phase = Phase::Done(PodOutcome::Finished(ProbeReport {
                            verdict: None,
                            summary: Some(summary),
                            exit_code: Some(exit_code),
                        }));
                    }
                    Some(Termination::Nothing) | None => {
                        let said = self.probe_error(i, message.as_deref());
                        // Exit 2: the probe refused its input (a run spec of another release): it does so again.
                        let code = if exit_code == i32::from(Exit::Usage) && said.is_some() {
                            PodCode::ProbeError
                        } else {
                            PodCode::Stopped
                        };
                        self.stopped(i, stop_reason, Some(exit_code), code, said)
                    }
                }
            }
        }
    }

    /// The probe's own error, when it stopped without a verdict: the last `error:` line of its termination message
    /// (not a summary), else of its log (it writes its refusal of a run spec on stderr, which the log carries),
    /// without the word `error:`, cleaned and cut as an `<error>`.
    fn probe_error(&self, i: usize, termination: Option<&str>) -> Option<String> {
        let said = termination
            .and_then(|m| last_error_line(m.lines()))
            .or_else(|| last_error_line(self.pods[i].probe.lines.iter().map(String::as_str)))?;
        let said = self.opts.redactor.clean_to(said.trim(), MAX_ERROR_CHARS);
        (!said.is_empty()).then_some(said)
    }

    /// The pod stopped ([`Phase::Stopping`]): true while the rest of the probe's log may still come (the stream is
    /// open and the drain window not over, or a log that broke off is worth one more read).
    fn wait_for_log(&mut self, i: usize, now: Instant) -> bool {
        let drain = self.opts.log_drain;
        let st = &mut self.pods[i];
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
            LogState::Open => return now < since + drain,
            LogState::Closed => probe_ran && !deleted,
            LogState::Ended { clean: false, .. } => {
                !st.log.reopened_after_stop && !deleted && st.log.opens < MAX_LOG_OPENS
            }
            LogState::Ended { clean: true, .. } => false,
        };
        if reopen {
            st.log.reopened_after_stop = true;
            self.open_log(i);
        }
        reopen
    }

    /// The next moment a timer matters: the deadline, the end of a grace or drain window, a log's reopen.
    fn next_wake(&self) -> Instant {
        let mut wake = self.deadline;
        for st in &self.pods {
            let log = st.log.state;
            let at = match st.phase {
                Phase::Waiting {
                    grace_since: Some(since),
                } => since + self.opts.image_pull_grace,
                Phase::Stopping { since } if log == LogState::Open => since + self.opts.log_drain,
                Phase::Running => match log {
                    LogState::Ended { at, .. } if st.log.opens < MAX_LOG_OPENS => {
                        at + self.opts.log_retry
                    }
                    _ => continue,
                },
                _ => continue,
            };
            wake = wake.min(at);
        }
        wake
    }

    fn deadline_passed(&mut self) {
        let secs = render::seconds(self.opts.timeout);
        for i in 0..self.pods.len() {
            if self.pods[i].done() {
                continue;
            }
            if self.pods[i].ran {
                self.stopped(
                    i,
                    format!("no verdict in {secs} s"),
                    None,
                    PodCode::Stopped,
                    None,
                );
            } else {
                let (reason, message) = self.pods[i].pending.last.clone().unwrap_or_else(|| {
                    (
                        "Pending".to_owned(),
                        "no status from the cluster yet".to_owned(),
                    )
                });
                self.fail(i, FailureKind::DidNotStart { reason, message });
            }
        }
    }

    /// Deletes each pod as soon as its run is over (a failed one stays when `keep_failed` says so).
    fn release_done(&mut self) {
        for (i, st) in self.pods.iter().enumerate() {
            let Some(outcome) = st.outcome() else {
                continue;
            };
            if std::mem::replace(&mut self.released[i], true) {
                continue;
            }
            let failed = matches!(
                outcome,
                PodOutcome::Failed(f) if !matches!(
                    f.kind,
                    FailureKind::Refused { .. } | FailureKind::Unreachable { .. } | FailureKind::Interrupted
                )
            );
            if self.opts.keep_failed && failed && st.uid.is_some() {
                self.cleanup.keep(&st.name);
            } else {
                self.cleanup.delete(&st.name);
            }
        }
    }

    async fn drive(&mut self) {
        loop {
            self.release_done();
            if self.pods.iter().all(PodState::done) {
                return;
            }
            let wake = self.next_wake();
            let cancel = self.opts.cancel.clone();
            tokio::select! {
                biased;
                () = cancel::cancelled(cancel.as_ref()) => {
                    self.interrupt();
                    return;
                }
                () = tokio::time::sleep_until(wake) => {
                    let now = Instant::now();
                    if now >= self.deadline {
                        self.deadline_passed();
                        return;
                    }
                    for i in 0..self.pods.len() {
                        self.evaluate(i, now);
                    }
                }
                Some(input) = self.streams.next(), if !self.streams.is_empty() => {
                    self.handle(input, Instant::now());
                }
            }
        }
    }
}

/// The text of the last `error: <text>` line among `lines`.
fn last_error_line<'a>(mut lines: impl DoubleEndedIterator<Item = &'a str>) -> Option<&'a str> {
    lines
        .rfind(|l| l.trim_start().starts_with("error: "))
        .map(|l| &l.trim_start()["error: ".len()..])
}
