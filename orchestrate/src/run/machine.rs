//! The run's loop: one `select!` over the watches, the logs and the timers (no task of its own: dropping its future
//! stops it). It turns what its streams bring into each pod's [`Input`], lets the pod's step (`step.rs`) move it,
//! and carries out the [`Action`]s that come back: it opens the probe's log, reads the Custodian's, watches the
//! Events, sends progress, and releases each pod (delete, or keep) as soon as its run is over. It moves no pod's
//! phase itself.

use std::collections::{BTreeSet, HashMap};

use futures_util::stream::{self, BoxStream, SelectAll, StreamExt};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::time::Instant;

use jr2_probe::contract::render;

use super::cancel;
use super::cleanup::Cleanup;
use super::config::{Rules, RunConfig};
use super::log::{self, LogItem};
use super::lost;
use super::pod_state::PodState;
use super::report::{FailureKind, RunResult};
use super::said::{self, Said};
use super::step::{self, Action, Input};
use super::watch::{self, Watch, forbidden};

/// What the loop's streams bring.
enum Arrived {
    /// The watch of pod `usize` (by its name).
    Pod(usize, Box<Result<watcher::Event<Pod>, watcher::Error>>),
    /// The Events watch of pod `usize`.
    Events(usize, Box<Result<watcher::Event<Event>, watcher::Error>>),
    /// The watch of pod `usize`'s node.
    Node(usize, Box<Result<watcher::Event<Node>, watcher::Error>>),
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
    rules: Rules,
    pods: Vec<PodState>,
    said: Said,
    by_name: HashMap<String, usize>,
    streams: SelectAll<BoxStream<'static, Arrived>>,
    start: Instant,
    deadline: Instant,
    cleanup: Cleanup,
    /// The API server stopped answering the pod watch, and why (`lost.rs`); `None` once it answers again.
    lost: Option<String>,
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
            rules: Rules::of(&opts),
            said: Said::new(opts.events_forbidden_said),
            opts,
            pods,
            by_name,
            streams: SelectAll::new(),
            start,
            cleanup,
            lost: None,
        }
    }

    /// The overall deadline.
    pub(super) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The create of pod `i` was answered: created, as `pod`.
    pub(super) fn created(&mut self, i: usize, pod: Pod) {
        self.input(i, Input::Created(Box::new(pod)), Instant::now());
    }

    /// The create of pod `i` was refused (or dropped).
    pub(super) fn refused(&mut self, i: usize, code: Option<u16>, message: String) {
        self.input(i, Input::Refused { code, message }, Instant::now());
    }

    /// The create of pod `i` got no answer: the cluster cannot be reached.
    pub(super) fn unreachable(&mut self, i: usize, why: String) {
        let said = said::unreachable_said(&self.pods, &self.rules.redactor, &why);
        self.input(i, Input::Unreachable { why, said }, Instant::now());
    }

    /// The create of pod `i` failed otherwise: not finished in time, or its namespace is being deleted.
    pub(super) fn not_created(&mut self, i: usize, kind: FailureKind) {
        let said = false;
        self.input(i, Input::Failed { kind, said }, Instant::now());
    }

    /// The watch of the pods got no answer (`lost.rs`): said at once, each cause once; the run ends on it if the
    /// API server does not answer again before the deadline.
    fn api_lost(&mut self, why: String) {
        let line = render::api_server_lost_warning(&self.rules.redactor.clean(&why));
        self.lost = Some(why);
        if let (Some(update), Some(tx)) = (self.said.probe_warning(line), &self.opts.progress) {
            let _ = tx.send(update);
        }
    }

    /// The deadline passed while the API server was lost: every pod not done fails on it, said by the first.
    fn lost_at_deadline(&mut self, why: &str, now: Instant) {
        let mut said = false;
        for i in 0..self.pods.len() {
            if self.pods[i].done() {
                continue;
            }
            let kind = FailureKind::ApiServerLost {
                why: why.to_owned(),
            };
            self.input(i, Input::Failed { kind, said }, now);
            said = true;
        }
    }

    /// The `Warning:` headers of the API server's answers to the creates: each a `warning:` line, cleaned and cut,
    /// said once for the run (issue 40, item 11).
    pub(super) fn api_warnings(&mut self, warnings: &[String]) {
        for w in warnings {
            let line = render::api_warning(&self.rules.redactor.clean(w));
            if let (Some(update), Some(tx)) = (self.said.probe_warning(line), &self.opts.progress) {
                let _ = tx.send(update);
            }
        }
    }

    /// A pod stopped as deleted (the only word the watch has for a pod its namespace took with it).
    pub(super) fn stopped_as_deleted(&self) -> bool {
        self.pods.iter().any(PodState::stopped_as_deleted)
    }

    /// The namespace is gone or being deleted: every pod that stopped as deleted stopped with it.
    pub(super) fn namespace_deleted(&mut self) {
        let namespace = self.namespace.clone();
        self.every_pod(
            || Input::NamespaceDeleted {
                namespace: namespace.clone(),
            },
            Instant::now(),
        );
    }

    /// The run was cancelled: every pod not finished is interrupted.
    pub(super) fn interrupt(&mut self) {
        self.every_pod(|| Input::Interrupted, Instant::now());
    }

    /// Opens the watches and runs the loop until every pod is done, the deadline passes or the run is cancelled.
    pub(super) async fn watch_and_drive(&mut self, pods: &[Pod]) {
        if self.pods.iter().all(PodState::done) {
            return;
        }
        for (name, w) in watch::pods(&self.api, pods) {
            let Some(&i) = self.by_name.get(&name) else {
                continue;
            };
            self.streams
                .push(w.map(move |r| Arrived::Pod(i, Box::new(r))).boxed());
        }
        for i in 0..self.pods.len() {
            self.input(i, Input::Watched, Instant::now());
        }
        self.drive().await;
    }

    /// What the run found; every pod not kept is deleted (not awaited).
    pub(super) fn finish(self) -> RunResult {
        tracing::debug!(
            elapsed_ms = self.start.elapsed().as_millis() as u64,
            "check pods done"
        );
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
            warnings: self.said.warnings,
        }
    }

    /// Steps pod `i` with what arrived, and carries out what it says.
    fn input(&mut self, i: usize, input: Input, now: Instant) {
        let actions = step::step(&mut self.pods[i], input, now, &self.rules);
        for action in actions {
            self.carry_out(i, action);
        }
    }

    /// The same input for every pod, in order.
    fn every_pod(&mut self, input: impl Fn() -> Input, now: Instant) {
        for i in 0..self.pods.len() {
            self.input(i, input(), now);
        }
    }

    fn carry_out(&mut self, i: usize, action: Action) {
        let update = match action {
            Action::WatchEvents => {
                self.watch_events(i);
                None
            }
            Action::WatchNode(node) => {
                let w: Watch<Node> = watch::node(self.client.clone(), &node);
                self.streams
                    .push(w.map(move |r| Arrived::Node(i, Box::new(r))).boxed());
                None
            }
            Action::OpenLog { generation } => {
                self.open_log(i, generation);
                None
            }
            Action::ReadCustodianLog {
                container,
                previous,
            } => {
                self.read_custodian_log(i, container, previous);
                None
            }
            Action::Send(update) => Some(update),
            Action::Pending { reason, message } => {
                self.said.pending(&self.pods, i, reason, message)
            }
            Action::Warning(line) => self.said.probe_warning(line),
            Action::EventsForbidden(line) => self.said.events_forbidden(&self.pods, i, line),
            Action::Release { keep } => {
                let name = &self.pods[i].name;
                if keep {
                    self.cleanup.keep(name);
                } else {
                    self.cleanup.delete(name);
                }
                None
            }
        };
        if let (Some(update), Some(tx)) = (update, &self.opts.progress) {
            let _ = tx.send(update);
        }
    }

    fn open_log(&mut self, i: usize, generation: u32) {
        let lines = log::probe_log(self.api.clone(), self.pods[i].name.clone());
        self.streams
            .push(lines.map(move |it| Arrived::Log(i, generation, it)).boxed());
    }

    fn read_custodian_log(&mut self, i: usize, container: String, previous: bool) {
        let read = log::custodian_log(
            self.api.clone(),
            self.pods[i].name.clone(),
            container,
            previous,
        );
        self.streams
            .push(stream::once(async move { Arrived::Custodian(i, read.await) }).boxed());
    }

    fn watch_events(&mut self, i: usize) {
        let events: Watch<Event> =
            watch::events(self.client.clone(), &self.namespace, &self.pods[i].name);
        self.streams
            .push(events.map(move |r| Arrived::Events(i, Box::new(r))).boxed());
    }

    fn handle(&mut self, arrived: Arrived, now: Instant) {
        match arrived {
            Arrived::Pod(i, r) => match *r {
                Ok(ev) => {
                    self.lost = None;
                    self.on_pod_event(i, ev, now);
                }
                Err(e) => {
                    if let Some(message) = forbidden(&e) {
                        self.input(i, Input::WatchForbidden(message), now);
                    } else if let Some(why) = lost::cause(&e) {
                        self.api_lost(why);
                    } else {
                        tracing::debug!(error = %e, "the watch of the check pods failed; it is re-established");
                    }
                }
            },
            Arrived::Events(i, r) => match *r {
                Ok(watcher::Event::Apply(e) | watcher::Event::InitApply(e)) => {
                    self.input(i, Input::Event(Box::new(e)), now);
                }
                Ok(_) => self.input(i, Input::Recheck, now),
                Err(e) => {
                    if let Some(message) = forbidden(&e) {
                        self.input(i, Input::EventsForbidden(message), now);
                    } else {
                        tracing::debug!(error = %e, "the watch of the Events failed; it is re-established");
                    }
                }
            },
            Arrived::Node(i, r) => match *r {
                Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)) => {
                    self.input(i, Input::Node(Box::new(n)), now);
                }
                Ok(_) => {}
                // Refused (a pre-check that could not tell), or not answered: the pod's own signs are left, and
                // the pre-check's warning (when it could tell) said so.
                Err(e) => tracing::debug!(error = %e, "the watch of a check pod's node failed"),
            },
            Arrived::Log(i, generation, LogItem::Line(line)) => {
                self.input(i, Input::LogLine { generation, line }, now);
            }
            Arrived::Log(i, generation, LogItem::End(error)) => {
                self.input(i, Input::LogEnded { generation, error }, now);
            }
            Arrived::Custodian(i, read) => self.input(i, Input::CustodianLog(read), now),
        }
    }

    /// An event of pod `i`'s watch, which lists that pod alone (by its name): a list that no longer shows it says
    /// it is gone.
    fn on_pod_event(&mut self, i: usize, ev: watcher::Event<Pod>, now: Instant) {
        let name = self.pods[i].name.clone();
        let ours = |p: &Pod| p.name_any() == name;
        match ev {
            watcher::Event::Init => self.input(i, Input::Relisting, now),
            watcher::Event::InitApply(p) | watcher::Event::Apply(p) => {
                if ours(&p) {
                    self.input(i, Input::Seen(Box::new(p)), now);
                }
            }
            watcher::Event::InitDone => self.input(i, Input::Relisted, now),
            watcher::Event::Delete(p) => {
                if ours(&p) {
                    self.input(i, Input::Gone(Box::new(p)), now);
                }
            }
        }
    }

    /// The next moment a timer matters: the deadline, or the earliest of the pods' wakes.
    fn next_wake(&self) -> Instant {
        self.pods
            .iter()
            .filter_map(|st| step::wake(st, &self.rules))
            .fold(self.deadline, Instant::min)
    }

    async fn drive(&mut self) {
        loop {
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
                        if let Some(why) = self.lost.clone() {
                            self.lost_at_deadline(&why, now);
                        }
                        self.every_pod(|| Input::Deadline, now);
                        return;
                    }
                    self.every_pod(|| Input::Recheck, now);
                }
                Some(arrived) = self.streams.next(), if !self.streams.is_empty() => {
                    self.handle(arrived, Instant::now());
                }
            }
        }
    }
}
