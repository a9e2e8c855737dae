//! The run in the cluster: create the check pods, watch them and their Events, stream the probe's JSON lines,
//! diagnose what goes wrong, and delete the pods on every path.
//!
//! [`run_pods`] creates every pod at once, then runs one loop (no task of its own: dropping its future stops it)
//! over a `kube::runtime::watcher` on the pods of the run (by label; the watcher re-watches from its resource
//! version when a stream closes, and re-lists after a `410 Gone`), one watcher per pod on its Events
//! (`fieldSelector=involvedObject.name=<pod>`), the probe container's log (`follow=true`, read line by line as it
//! comes), and the Custodian's log when it exits at start. Every wait has a deadline: the overall `timeout`, a grace
//! window for image pulls, a drain window for the rest of a log once the pod has stopped.
//!
//! Cleanup is a [`Cleanup`] the caller can share: every pod is registered before its create request leaves, and
//! is deleted when the run ends, fails, times out, is cancelled ([`Cancel`]) or its future is dropped (Ctrl-C,
//! SIGTERM). Deletes are spawned and not awaited before the verdict returns; the caller awaits them, bounded, with
//! [`Cleanup::wait`]. A create request in flight when the run stops deletes its pod as soon as it is answered.
//! [`sweep_stale`] removes the check pods of an Instance that outlived their deadline (a driver killed hard).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use futures_util::io::{AsyncBufRead, AsyncBufReadExt};
use futures_util::stream::{self, BoxStream, SelectAll, StreamExt};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use jr2_probe::render;
use jr2_probe::run::Summary;
use jr2_probe::sanitize::Redactor;
use jr2_probe::verdict::{ModelResult, Verdict};

use crate::diagnose::{self, Diagnosis, StartFailure};
use crate::pod::{LABEL_RUN, PROBE_CONTAINER};

/// The longest probe log line kept; a longer one is skipped to its newline.
pub const MAX_LOG_LINE: usize = 8 << 20;
/// Probe log lines kept as evidence.
const MAX_EVIDENCE_LINES: usize = 10_000;
/// How often the probe's log is opened, at most, per pod.
const MAX_LOG_OPENS: u32 = 5;
/// How long one DELETE may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the read of the Custodian's log may take.
const CUSTODIAN_LOG_TIMEOUT: Duration = Duration::from_secs(10);
/// The Custodian's log lines read (its refusal is among the first).
const CUSTODIAN_LOG_TAIL: i64 = 200;

/// How a run is driven.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The overall deadline (`--timeout`), from the first create request to the last verdict.
    pub timeout: Duration,
    /// How long an image pull may fail (`ErrImagePull`, `ImagePullBackOff`) before it is fatal; shown as pending
    /// meanwhile. The kubelet's first retry comes 10 s after the first failure.
    pub image_pull_grace: Duration,
    /// Once the pod has stopped, how long to wait for the rest of the probe's log.
    pub log_drain: Duration,
    /// How long to wait before the probe's log is opened again after it broke off.
    pub log_retry: Duration,
    /// Tries of a create answered 429, 500, 503 or 504, or not answered at all.
    pub create_tries: u32,
    /// Keep a pod that failed (`--keep-pod`) rather than delete it.
    pub keep_failed: bool,
    /// Cleans the cluster's text on its way to a line.
    pub redactor: Redactor,
    /// Where progress goes as it happens (pending lines, each model's result).
    pub progress: Option<UnboundedSender<Progress>>,
    /// The cleanup to register the pods with; shared with the caller so that it can wait for the deletes after
    /// Ctrl-C. A run without one makes its own (its deletes still run, but nobody awaits them).
    pub cleanup: Option<Cleanup>,
    /// Stops the run, with a result (every pod not finished is [`FailureKind::Interrupted`]).
    pub cancel: Option<Cancel>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            image_pull_grace: Duration::from_secs(15),
            log_drain: Duration::from_secs(5),
            log_retry: Duration::from_secs(1),
            create_tries: 3,
            keep_failed: false,
            redactor: Redactor::default(),
            progress: None,
            cleanup: None,
            cancel: None,
        }
    }
}

/// What happens during a run, as it happens.
#[derive(Clone, Debug, PartialEq)]
pub enum Progress {
    /// A pod was created.
    Created {
        /// The pod.
        pod: String,
    },
    /// A pod is not running yet, for a new reason or with a new message (cleaned): write
    /// [`render::pending`]`(reason, message)`.
    Pending {
        /// The pod.
        pod: String,
        /// The reason.
        reason: String,
        /// The message.
        message: String,
    },
    /// The probe started a model.
    ModelStarted {
        /// The pod.
        pod: String,
        /// The model's index in the pod's run spec.
        index: usize,
        /// The model.
        model: String,
    },
    /// The probe has a model's result (once per model): the caller writes `provider: <model> completed a tool
    /// call (<ms> ms)` for a pass, and keeps the rest for the lines in plan order.
    Result {
        /// The pod.
        pod: String,
        /// The model's index in the pod's run spec.
        index: usize,
        /// The result.
        result: Box<ModelResult>,
    },
    /// A warning line about the run itself (the Events cannot be read).
    Warning {
        /// The line.
        line: String,
    },
}

impl Progress {
    /// The line to write on stderr now, if this progress has one of its own.
    pub fn line(&self) -> Option<String> {
        match self {
            Progress::Pending {
                reason, message, ..
            } => Some(render::pending(reason, message)),
            Progress::Warning { line } => Some(line.clone()),
            Progress::Result { result, .. } if result.level == jr2_probe::outcome::Level::Pass => {
                Some(render::completed(&result.model, result.elapsed_ms))
            }
            _ => None,
        }
    }
}

/// What the run found, per pod in the order given.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Per pod.
    pub pods: Vec<PodRun>,
    /// Warning lines about the run itself (already sent as [`Progress::Warning`]).
    pub warnings: Vec<String>,
}

impl RunResult {
    /// Every pod finished with a verdict of no error.
    pub fn ok(&self) -> bool {
        self.pods.iter().all(PodRun::ok)
    }
}

/// One pod's run.
#[derive(Clone, Debug)]
pub struct PodRun {
    /// The pod's name.
    pub name: String,
    /// Its uid, once created.
    pub uid: Option<String>,
    /// The node it ran on.
    pub node: Option<String>,
    /// Its models, in its run spec's order (the probe's `index`).
    pub models: Vec<String>,
    /// Each model's result as the probe's log gave it (`None`: none came).
    pub results: Vec<Option<ModelResult>>,
    /// How it ended.
    pub outcome: PodOutcome,
    /// What the cluster showed, for `--evidence`.
    pub evidence: Evidence,
    /// The pod was kept (`keep_failed`); it must be deleted by hand.
    pub kept: bool,
}

impl PodRun {
    /// The probe finished and no model failed.
    pub fn ok(&self) -> bool {
        match &self.outcome {
            PodOutcome::Finished(r) => r.ok(&self.results),
            PodOutcome::Failed(_) => false,
        }
    }

    /// The failure lines (the `error:` line and its detail lines), empty when the probe finished.
    pub fn failure_lines(&self) -> &[String] {
        match &self.outcome {
            PodOutcome::Failed(f) => &f.lines,
            PodOutcome::Finished(_) => &[],
        }
    }
}

/// How a pod's run ended.
#[derive(Clone, Debug)]
pub enum PodOutcome {
    /// The probe finished: its verdict, or what stands in for it.
    Finished(ProbeReport),
    /// The pod failed before the probe could finish.
    Failed(Failure),
}

/// What the probe said in the end.
#[derive(Clone, Debug, Default)]
pub struct ProbeReport {
    /// Its verdict, from its `summary` line.
    pub verdict: Option<Box<Verdict>>,
    /// Its compact summary, from the termination message (the log was lost before the `summary` line). The
    /// entries of models whose `result` line came are in [`PodRun::results`] in full.
    pub summary: Option<Summary>,
    /// The probe container's exit code, when the pod showed it.
    pub exit_code: Option<i32>,
}

impl ProbeReport {
    /// No model failed.
    pub fn ok(&self, results: &[Option<ModelResult>]) -> bool {
        if let Some(v) = &self.verdict {
            return v.ok;
        }
        if let Some(s) = &self.summary {
            return s.ok;
        }
        results.iter().all(|r| {
            r.as_ref()
                .is_some_and(|r| r.level != jr2_probe::outcome::Level::Error)
        })
    }
}

/// A pod that failed, and its lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// What failed.
    pub kind: FailureKind,
    /// The contract's lines: the `error:` line, then detail lines (`  not checked: <model>`).
    pub lines: Vec<String>,
}

/// What failed.
#[derive(Clone, Debug, PartialEq)]
pub enum FailureKind {
    /// The API server refused the pod (quota, Pod Security, a webhook, 422, a name conflict) or would not let the
    /// driver watch it.
    Refused {
        /// The HTTP status, when one came.
        code: Option<u16>,
        /// The API server's message, raw.
        message: String,
    },
    /// One of the contract's start failures.
    CannotStart(StartFailure),
    /// The pod stopped before the probe finished.
    Stopped {
        /// Why, raw.
        reason: String,
        /// The model the check was on (index in [`PodRun::models`]).
        on_model: Option<usize>,
        /// The models never checked.
        not_checked: Vec<usize>,
    },
    /// The deadline passed before the pod ran.
    DidNotStart {
        /// The last reason.
        reason: String,
        /// Its message.
        message: String,
    },
    /// The run was cancelled (Ctrl-C, SIGTERM).
    Interrupted,
}

/// What the cluster showed about a pod.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// The pod as last watched.
    pub pod: Option<Pod>,
    /// Its Events, in the order they last happened.
    pub events: Vec<Event>,
    /// The Events could not be read (RBAC).
    pub events_forbidden: bool,
    /// The probe's log lines (its JSON lines and anything else it wrote).
    pub probe_lines: Vec<String>,
    /// The Custodian's log, when it was read.
    pub custodian_log: Vec<String>,
}

/// Stops a run from elsewhere (a signal handler); [`run_pods`] returns with what it has.
#[derive(Clone)]
pub struct Cancel(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::channel(false).0))
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cancel").field(&self.is_cancelled()).finish()
    }
}

impl Cancel {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run that holds this token.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tracked {
    /// The create request is on its way.
    Creating,
    /// Created, with this uid.
    Created(Option<String>),
    /// The DELETE is on its way.
    Deleting,
    /// Kept for inspection.
    Kept,
}

#[derive(Default)]
struct CleanupState {
    pods: BTreeMap<String, Tracked>,
    closing: bool,
    tasks: Vec<JoinHandle<()>>,
    done: BTreeMap<String, Result<(), String>>,
}

/// The check pods a run created (or is creating), and their deletion. Cheap to clone; every clone is the same.
#[derive(Clone)]
pub struct Cleanup {
    api: Api<Pod>,
    state: Arc<Mutex<CleanupState>>,
}

impl fmt::Debug for Cleanup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cleanup")
            .field("pods", &self.lock().pods)
            .finish_non_exhaustive()
    }
}

/// What the cleanup did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Deleted (or found gone).
    pub deleted: Vec<String>,
    /// The DELETE failed: the pod and why.
    pub failed: Vec<(String, String)>,
    /// Not answered within the wait: the pod may still exist.
    pub unfinished: Vec<String>,
    /// Kept on purpose.
    pub kept: Vec<String>,
}

impl Cleanup {
    /// A cleanup for pods in `namespace`.
    pub fn new(client: Client, namespace: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            state: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, CleanupState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn creating(&self, name: &str) {
        self.lock().pods.insert(name.to_owned(), Tracked::Creating);
    }

    /// The create was answered: the pod exists. When the run already stopped, it is deleted at once.
    fn created(&self, name: &str, uid: Option<String>) {
        let closing = {
            let mut st = self.lock();
            st.pods.insert(name.to_owned(), Tracked::Created(uid));
            st.closing
        };
        if closing {
            self.delete_all();
        }
    }

    /// The create failed: there is nothing to delete (a 409 names someone else's pod).
    fn not_created(&self, name: &str) {
        self.lock().pods.remove(name);
    }

    fn track(&self, task: JoinHandle<()>) {
        self.lock().tasks.push(task);
    }

    /// The pods kept for inspection.
    pub fn kept(&self) -> BTreeSet<String> {
        self.lock()
            .pods
            .iter()
            .filter(|(_, t)| **t == Tracked::Kept)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Keeps a pod for inspection: it is not deleted.
    pub fn keep(&self, name: &str) {
        if let Some(t) = self.lock().pods.get_mut(name) {
            *t = Tracked::Kept;
        }
    }

    /// Deletes every pod created and not kept, without waiting; a pod whose create is still on its way is deleted
    /// when it is answered. Needs a tokio runtime; without one, [`Cleanup::wait`] does it.
    pub fn delete_all(&self) {
        self.delete_where(true, |_| true);
    }

    /// Deletes one pod, without waiting (its run is over; the others go on).
    pub fn delete(&self, name: &str) {
        self.delete_where(false, |n| n == name);
    }

    fn delete_where(&self, closing: bool, which: impl Fn(&str) -> bool) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut st = self.lock();
        st.closing |= closing;
        let todo: Vec<(String, Option<String>)> = st
            .pods
            .iter_mut()
            .filter(|(name, _)| which(name))
            .filter_map(|(name, t)| match t {
                Tracked::Created(uid) => {
                    let uid = uid.take();
                    *t = Tracked::Deleting;
                    Some((name.clone(), uid))
                }
                _ => None,
            })
            .collect();
        for (name, uid) in todo {
            let api = self.api.clone();
            let state = self.state.clone();
            st.tasks.push(rt.spawn(async move {
                let outcome = match tokio::time::timeout(
                    DELETE_TIMEOUT,
                    delete_pod(&api, &name, uid),
                )
                .await
                {
                    Ok(r) => r,
                    Err(_) => Err(format!("no answer in {} s", DELETE_TIMEOUT.as_secs())),
                };
                if let Err(e) = &outcome {
                    tracing::warn!(pod = %name, error = %e, "cannot delete the check pod");
                }
                state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .done
                    .insert(name, outcome);
            }));
        }
    }

    /// Deletes what is left and waits, at most `within`, for every delete (and every create still on its way).
    pub async fn wait(&self, within: Duration) -> CleanupReport {
        let until = Instant::now() + within;
        loop {
            self.delete_all();
            let tasks = std::mem::take(&mut self.lock().tasks);
            if tasks.is_empty() {
                break;
            }
            if tokio::time::timeout_at(until, join_all(tasks))
                .await
                .is_err()
            {
                break;
            }
        }
        let st = self.lock();
        let mut report = CleanupReport::default();
        for (name, t) in &st.pods {
            match (t, st.done.get(name)) {
                (Tracked::Kept, _) => report.kept.push(name.clone()),
                (_, Some(Ok(()))) => report.deleted.push(name.clone()),
                (_, Some(Err(e))) => report.failed.push((name.clone(), e.clone())),
                (_, None) => report.unfinished.push(name.clone()),
            }
        }
        report
    }
}

/// Deletes at once (a check pod has nothing to finish), only the pod this run created (`uid` precondition). Gone
/// already (404) or replaced (409) is fine.
async fn delete_pod(api: &Api<Pod>, name: &str, uid: Option<String>) -> Result<(), String> {
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        propagation_policy: Some(PropagationPolicy::Background),
        preconditions: uid.map(|uid| Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// Deletes the pod when the run's future is dropped.
struct DeleteOnDrop(Cleanup);

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        self.0.delete_all();
    }
}

/// What the stale sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Deleted: past their deadline.
    pub deleted: Vec<String>,
    /// Could not be deleted: the pod and why.
    pub failed: Vec<(String, String)>,
}

/// Why the sweep could not look.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The list of check pods failed.
    #[error("cannot list the check pods: {0}")]
    List(#[source] kube::Error),
    /// The list took too long.
    #[error("the list of check pods took longer than {0} s")]
    Timeout(u64),
}

/// Deletes the check pods of `instance` that outlived their deadline (the `jr2.dev/preflight-deadline`
/// annotation; without it, creation plus `activeDeadlineSeconds`): what a driver killed hard left behind. A pod
/// being deleted already, or without a deadline, is left alone. Bounded: 10 s for the list, 15 s per delete.
pub async fn sweep_stale(
    client: Client,
    namespace: &str,
    instance: &str,
    now: SystemTime,
) -> Result<Sweep, SweepError> {
    let api: Api<Pod> = Api::namespaced(client, namespace);
    let lp = ListParams::default().labels(&crate::pod::instance_selector(instance));
    let list = tokio::time::timeout(Duration::from_secs(10), api.list(&lp))
        .await
        .map_err(|_| SweepError::Timeout(10))?
        .map_err(SweepError::List)?;
    let stale: Vec<(String, Option<String>)> = list
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| deadline(p).is_some_and(|d| d < now))
        .map(|p| (p.name_any(), p.metadata.uid.clone()))
        .collect();
    let outcomes = join_all(stale.into_iter().map(|(name, uid)| {
        let api = api.clone();
        async move {
            let r = tokio::time::timeout(DELETE_TIMEOUT, delete_pod(&api, &name, uid))
                .await
                .unwrap_or_else(|_| Err(format!("no answer in {} s", DELETE_TIMEOUT.as_secs())));
            (name, r)
        }
    }))
    .await;
    let mut sweep = Sweep::default();
    for (name, r) in outcomes {
        match r {
            Ok(()) => sweep.deleted.push(name),
            Err(e) => sweep.failed.push((name, e)),
        }
    }
    Ok(sweep)
}

fn deadline(pod: &Pod) -> Option<SystemTime> {
    crate::pod::deadline_of(pod).or_else(|| {
        let created = pod.metadata.creation_timestamp.as_ref()?.0;
        let active = pod.spec.as_ref()?.active_deadline_seconds?;
        let secs = u64::try_from(created.as_second()).ok()? + u64::try_from(active).ok()?;
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
    })
}

/// A pod to create and run, and the models its probe checks, in its run spec's order (the probe's `index`).
#[derive(Clone, Debug, PartialEq)]
pub struct PodToRun {
    /// The pod, with a name and the `jr2.dev/preflight-run` label (as `pod::check_pod` builds it).
    pub pod: Pod,
    /// Its models' names, in its run spec's order.
    pub models: Vec<String>,
}

// ---------------------------------------------------------------------------------------------------------------
// The run.

enum Input {
    Pod(Box<Result<watcher::Event<Pod>, watcher::Error>>),
    Events(usize, Box<Result<watcher::Event<Event>, watcher::Error>>),
    Log(usize, u32, LogItem),
    Custodian(usize, Result<Vec<String>, String>),
}

enum LogItem {
    Line(String),
    /// The stream ended: cleanly (`None`, the container ended) or broken off.
    End(Option<String>),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum LogState {
    Closed,
    Open,
    Ended { at: Instant, clean: bool },
}

struct PodState {
    name: String,
    models: Vec<String>,
    uid: Option<String>,
    last: Option<Pod>,
    seen_in_list: bool,
    deleted: bool,
    events: Vec<Event>,
    events_forbidden: bool,
    written: Option<(String, String)>,
    last_reason: Option<(String, String)>,
    ever_running: bool,
    running_now: bool,
    grace_since: Option<Instant>,
    terminal_since: Option<Instant>,
    log: LogState,
    log_gen: u32,
    log_opens: u32,
    reopened_after_stop: bool,
    probe_lines: Vec<String>,
    replayed: usize,
    line_no: usize,
    started: BTreeSet<usize>,
    results: Vec<Option<ModelResult>>,
    custodian_req: Option<(i32, bool)>,
    custodian_log: Option<Vec<String>>,
    outcome: Option<PodOutcome>,
}

impl PodState {
    fn new(to_run: &PodToRun) -> Self {
        let models = to_run.models.clone();
        Self {
            name: to_run.pod.name_any(),
            results: vec![None; models.len()],
            models,
            uid: None,
            last: None,
            seen_in_list: false,
            deleted: false,
            events: Vec::new(),
            events_forbidden: false,
            written: None,
            last_reason: None,
            ever_running: false,
            running_now: false,
            grace_since: None,
            terminal_since: None,
            log: LogState::Closed,
            log_gen: 0,
            log_opens: 0,
            reopened_after_stop: false,
            probe_lines: Vec::new(),
            replayed: 0,
            line_no: 0,
            started: BTreeSet::new(),
            custodian_req: None,
            custodian_log: None,
            outcome: None,
        }
    }

    fn done(&self) -> bool {
        self.outcome.is_some()
    }

    fn all_results(&self) -> bool {
        !self.results.is_empty() && self.results.iter().all(Option::is_some)
    }

    fn into_run(self, kept: bool) -> PodRun {
        PodRun {
            node: self
                .last
                .as_ref()
                .and_then(diagnose::node_name)
                .map(str::to_owned),
            evidence: Evidence {
                pod: self.last,
                events: self.events,
                events_forbidden: self.events_forbidden,
                probe_lines: self.probe_lines,
                custodian_log: self.custodian_log.unwrap_or_default(),
            },
            name: self.name,
            uid: self.uid,
            models: self.models,
            results: self.results,
            outcome: self.outcome.unwrap_or(PodOutcome::Failed(Failure {
                kind: FailureKind::Interrupted,
                lines: Vec::new(),
            })),
            kept,
        }
    }
}

/// One probe log line, as far as the driver cares.
enum ProbeLine {
    ModelStarted(usize),
    Result(usize, Box<ModelResult>),
    Summary(Box<Verdict>),
    Other,
}

fn parse_probe_line(line: &str) -> ProbeLine {
    let Ok(mut v) = serde_json::from_str::<Value>(line) else {
        return ProbeLine::Other;
    };
    let index = v
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok());
    match (v.get("event").and_then(Value::as_str), index) {
        (Some("modelStarted"), Some(i)) => ProbeLine::ModelStarted(i),
        (Some("result"), Some(i)) => serde_json::from_value(v["result"].take())
            .map_or(ProbeLine::Other, |r| ProbeLine::Result(i, Box::new(r))),
        (Some("summary"), _) => serde_json::from_value(v["verdict"].take())
            .map_or(ProbeLine::Other, |s| ProbeLine::Summary(Box::new(s))),
        _ => ProbeLine::Other,
    }
}

/// The compact summary in a termination message; with `FallbackToLogsOnError`, the `summary` line of the log tail.
fn parse_termination(message: &str) -> (Option<Summary>, Option<Box<Verdict>>) {
    if let Ok(s) = serde_json::from_str::<Summary>(message.trim()) {
        return (Some(s), None);
    }
    let verdict = message
        .lines()
        .rev()
        .find_map(|l| match parse_probe_line(l) {
            ProbeLine::Summary(v) => Some(v),
            _ => None,
        });
    (None, verdict)
}

/// Reads lines of at most [`MAX_LOG_LINE`] bytes; a longer one is skipped. Ends with [`LogItem::End`].
fn log_input(api: Api<Pod>, name: String, i: usize, generation: u32) -> BoxStream<'static, Input> {
    type Reader = Pin<Box<dyn AsyncBufRead + Send>>;
    enum St {
        Opening(Box<Api<Pod>>, String),
        Reading(Reader, Vec<u8>, bool),
        Done,
    }
    let item = move |it: LogItem| Input::Log(i, generation, it);
    stream::unfold(St::Opening(Box::new(api), name), move |st| async move {
        let (mut reader, mut buf, mut skipping) = match st {
            St::Done => return None,
            St::Opening(api, name) => {
                let lp = LogParams {
                    container: Some(PROBE_CONTAINER.to_owned()),
                    follow: true,
                    ..LogParams::default()
                };
                match api.log_stream(&name, &lp).await {
                    Ok(r) => (Box::pin(r) as Reader, Vec::new(), false),
                    Err(e) => return Some((item(LogItem::End(Some(e.to_string()))), St::Done)),
                }
            }
            St::Reading(r, b, s) => (r, b, s),
        };
        loop {
            let chunk = match reader.fill_buf().await {
                Ok(c) => c,
                Err(e) => return Some((item(LogItem::End(Some(e.to_string()))), St::Done)),
            };
            if chunk.is_empty() {
                if buf.is_empty() || skipping {
                    return Some((item(LogItem::End(None)), St::Done));
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                return Some((
                    item(LogItem::Line(line)),
                    St::Reading(reader, Vec::new(), false),
                ));
            }
            if let Some(pos) = chunk.iter().position(|b| *b == b'\n') {
                if !skipping {
                    buf.extend_from_slice(&chunk[..pos]);
                }
                reader.as_mut().consume(pos + 1);
                if std::mem::take(&mut skipping) {
                    buf.clear();
                    continue;
                }
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                buf.clear();
                return Some((item(LogItem::Line(line)), St::Reading(reader, buf, false)));
            }
            let n = chunk.len();
            if !skipping {
                buf.extend_from_slice(chunk);
                if buf.len() > MAX_LOG_LINE {
                    buf = Vec::new();
                    skipping = true;
                }
            }
            reader.as_mut().consume(n);
        }
    })
    .boxed()
}

fn forbidden(e: &watcher::Error) -> Option<String> {
    let status = match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s)) => s,
        watcher::Error::WatchError(s) => s,
        _ => return None,
    };
    (status.code == 403).then(|| status.message.clone())
}

/// A stream that ends after the first 403 its watcher yields.
fn until_forbidden<T: Send + 'static>(
    s: BoxStream<'static, Result<T, watcher::Error>>,
    wrap: impl Fn(Result<T, watcher::Error>) -> Input + Send + 'static,
) -> BoxStream<'static, Input> {
    stream::unfold((s, false, wrap), |(mut s, stop, wrap)| async move {
        if stop {
            return None;
        }
        let item = s.next().await?;
        let stop = item.as_ref().err().and_then(forbidden).is_some();
        Some((wrap(item), (s, stop, wrap)))
    })
    .boxed()
}

fn cleaned(r: &Redactor, s: &str) -> String {
    r.clean(s)
}

struct Run {
    api: Api<Pod>,
    client: Client,
    namespace: String,
    opts: RunOptions,
    pods: Vec<PodState>,
    by_name: HashMap<String, usize>,
    streams: SelectAll<BoxStream<'static, Input>>,
    warnings: Vec<String>,
    start: Instant,
    deadline: Instant,
    cleanup: Cleanup,
    released: Vec<bool>,
    one_watch: bool,
}

enum Created {
    Ok(Box<Pod>),
    Refused(Option<u16>, String),
}

/// Creates one pod; retries what may pass on a second try (429, 5xx but 501, no answer).
async fn create_pod(
    api: Api<Pod>,
    cleanup: Cleanup,
    pod: Pod,
    tries: u32,
    deadline: Instant,
) -> Created {
    let name = pod.name_any();
    cleanup.creating(&name);
    let mut wait = Duration::from_millis(500);
    let mut last: (Option<u16>, String) = (None, String::new());
    for attempt in 0..tries.max(1) {
        if attempt > 0 {
            if Instant::now() + wait >= deadline {
                break;
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        let r = tokio::time::timeout_at(deadline, api.create(&PostParams::default(), &pod)).await;
        match r {
            Ok(Ok(p)) => {
                cleanup.created(&name, p.metadata.uid.clone());
                return Created::Ok(Box::new(p));
            }
            // An earlier try did create it: the 5xx came after the write.
            Ok(Err(kube::Error::Api(s))) if s.code == 409 && attempt > 0 => {
                cleanup.created(&name, None);
                return Created::Ok(Box::new(pod));
            }
            Ok(Err(kube::Error::Api(s))) => {
                last = (Some(s.code), s.message.clone());
                if !matches!(s.code, 429 | 500 | 502 | 503 | 504) {
                    break;
                }
            }
            Ok(Err(e)) => last = (None, format!("cannot reach the API server: {e}")),
            Err(_) => {
                last = (
                    None,
                    "no answer from the API server before the deadline".to_owned(),
                );
                break;
            }
        }
    }
    // A 5xx may have come after the write: delete by name in case (gone already is fine).
    if last.0.is_some_and(|c| c >= 500) {
        cleanup.created(&name, None);
    } else {
        cleanup.not_created(&name);
    }
    Created::Refused(last.0, last.1)
}

impl Run {
    fn emit(&self, p: Progress) {
        if let Some(tx) = &self.opts.progress {
            let _ = tx.send(p);
        }
    }

    fn clean(&self, s: &str) -> String {
        cleaned(&self.opts.redactor, s)
    }

    fn fail(&mut self, i: usize, kind: FailureKind) {
        let r = &self.opts.redactor;
        let st = &self.pods[i];
        let lines = match &kind {
            FailureKind::Refused { message, .. } => {
                vec![render::cluster_refused(&cleaned(r, message))]
            }
            FailureKind::CannotStart(f) => vec![f.line(r)],
            FailureKind::Stopped {
                reason,
                on_model,
                not_checked,
            } => {
                let model = |i: &usize| st.models.get(*i).map_or("(unknown)", String::as_str);
                let mut lines = vec![render::pod_stopped(
                    &cleaned(r, reason),
                    on_model.as_ref().map_or("(unknown)", model),
                )];
                lines.extend(not_checked.iter().map(|i| render::not_checked(model(i))));
                lines
            }
            FailureKind::DidNotStart { reason, message } => vec![render::pod_did_not_start(
                &render::seconds(self.opts.timeout),
                &cleaned(r, reason),
                &cleaned(r, message),
            )],
            FailureKind::Interrupted => Vec::new(),
        };
        self.pods[i].outcome = Some(PodOutcome::Failed(Failure { kind, lines }));
    }

    /// The pod stopped before the probe finished: which model it was on, and the rest not checked. When every
    /// result came anyway, the probe did finish.
    fn stopped(&mut self, i: usize, reason: String, exit_code: Option<i32>) {
        let st = &self.pods[i];
        if st.all_results() {
            self.pods[i].outcome = Some(PodOutcome::Finished(ProbeReport {
                exit_code,
                ..ProbeReport::default()
            }));
            return;
        }
        let missing: Vec<usize> = if st.models.is_empty() {
            Vec::new()
        } else {
            (0..st.models.len())
                .filter(|m| st.results[*m].is_none())
                .collect()
        };
        let on_model = missing
            .iter()
            .copied()
            .find(|m| st.started.contains(m))
            .or_else(|| missing.first().copied());
        let not_checked = missing
            .into_iter()
            .filter(|m| Some(*m) != on_model)
            .collect();
        self.fail(
            i,
            FailureKind::Stopped {
                reason,
                on_model,
                not_checked,
            },
        );
    }

    fn pending(&mut self, i: usize, reason: &str, message: &str) {
        let reason = self.clean(reason);
        let message = self.clean(message);
        let st = &mut self.pods[i];
        st.last_reason = Some((reason.clone(), message.clone()));
        // The first moments of every pod say nothing worth a line.
        if reason == "Pending" && message == "waiting for the scheduler" {
            return;
        }
        let state = Some((reason.clone(), message.clone()));
        if st.written != state {
            st.written = state;
            let pod = st.name.clone();
            // The line does not name its pod (the contract's form): two placements waiting for the same reason
            // would write the same line twice, so a line that another pod's latest line already says is not
            // written again.
            let shown = self
                .pods
                .iter()
                .enumerate()
                .any(|(j, other)| j != i && other.written == self.pods[i].written);
            if shown {
                return;
            }
            self.emit(Progress::Pending {
                pod,
                reason,
                message,
            });
        }
    }

    fn open_log(&mut self, i: usize) {
        let st = &mut self.pods[i];
        st.log_gen += 1;
        st.log_opens += 1;
        st.log = LogState::Open;
        // A log read again starts from the beginning: the lines already kept come again first.
        st.replayed = st.probe_lines.len();
        st.line_no = 0;
        let s = log_input(self.api.clone(), st.name.clone(), i, st.log_gen);
        self.streams.push(s);
    }

    fn read_custodian_log(&mut self, i: usize, container: String, previous: bool) {
        let api = self.api.clone();
        let name = self.pods[i].name.clone();
        let s = stream::once(async move {
            let lp = LogParams {
                container: Some(container),
                previous,
                tail_lines: Some(CUSTODIAN_LOG_TAIL),
                limit_bytes: Some(64 << 10),
                ..LogParams::default()
            };
            let r = match tokio::time::timeout(CUSTODIAN_LOG_TIMEOUT, api.logs(&name, &lp)).await {
                Ok(Ok(text)) => Ok(text.lines().map(str::to_owned).collect()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err("no answer".to_owned()),
            };
            Input::Custodian(i, r)
        })
        .boxed();
        self.streams.push(s);
    }

    fn watch_events(&mut self, i: usize) {
        let api: Api<Event> = Api::namespaced(self.client.clone(), &self.namespace);
        let config = watcher::Config::default()
            .fields(&format!("involvedObject.name={}", self.pods[i].name));
        let s = watcher(api, config).default_backoff().boxed();
        self.streams
            .push(until_forbidden(s, move |r| Input::Events(i, Box::new(r))));
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
            let st = &mut self.pods[i];
            let key = e.metadata.uid.clone().or(e.metadata.name.clone());
            st.events
                .retain(|old| old.metadata.uid.clone().or(old.metadata.name.clone()) != key);
            st.events.push(e);
        }
        self.evaluate(i, now);
    }

    fn on_event_watch_error(&mut self, i: usize, e: &watcher::Error) {
        if let Some(message) = forbidden(e) {
            self.pods[i].events_forbidden = true;
            if self.warnings.is_empty() {
                let line = render::events_forbidden_warning(&self.clean(&message));
                self.warnings.push(line.clone());
                self.emit(Progress::Warning { line });
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
                if generation != self.pods[i].log_gen || self.pods[i].done() {
                    return;
                }
                match item {
                    LogItem::Line(line) => self.on_log_line(i, line),
                    LogItem::End(error) => {
                        if let Some(e) = &error {
                            tracing::debug!(pod = %self.pods[i].name, error = %e, "the probe's log broke off");
                        }
                        self.pods[i].log = LogState::Ended {
                            at: now,
                            clean: error.is_none(),
                        };
                        self.evaluate(i, now);
                    }
                }
            }
            Input::Custodian(i, r) => {
                self.pods[i].custodian_log = Some(r.unwrap_or_else(|e| {
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
                    st.seen_in_list = false;
                }
            }
            watcher::Event::InitApply(p) | watcher::Event::Apply(p) => {
                let Some(&i) = self.by_name.get(&p.name_any()) else {
                    return;
                };
                let st = &mut self.pods[i];
                st.seen_in_list = true;
                match (&st.uid, &p.metadata.uid) {
                    (Some(ours), Some(theirs)) if ours != theirs => st.deleted = true,
                    _ => {
                        st.uid = p.metadata.uid.clone();
                        st.last = Some(p);
                    }
                }
                self.evaluate(i, now);
            }
            // One watcher lists every pod of the run: one it no longer lists is gone. (With one watcher per pod,
            // a list says nothing about the others.)
            watcher::Event::InitDone if self.one_watch => {
                for i in 0..self.pods.len() {
                    if !self.pods[i].seen_in_list
                        && self.pods[i].uid.is_some()
                        && !self.pods[i].done()
                    {
                        self.pods[i].deleted = true;
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
                    st.deleted = true;
                    st.last = Some(p);
                }
                self.evaluate(i, now);
            }
        }
    }

    fn on_log_line(&mut self, i: usize, line: String) {
        let parsed = parse_probe_line(&line);
        let st = &mut self.pods[i];
        st.line_no += 1;
        if st.line_no > st.replayed && st.probe_lines.len() < MAX_EVIDENCE_LINES {
            st.probe_lines.push(line);
        }
        match parsed {
            ProbeLine::ModelStarted(m) => {
                if st.started.insert(m) {
                    let model = st.models.get(m).cloned().unwrap_or_default();
                    let pod = st.name.clone();
                    self.emit(Progress::ModelStarted {
                        pod,
                        index: m,
                        model,
                    });
                }
            }
            ProbeLine::Result(m, r) => {
                if st.results.len() <= m {
                    st.results.resize(m + 1, None);
                }
                if st.models.len() <= m {
                    st.models.resize(m + 1, String::new());
                    st.models[m] = r.model.clone();
                }
                if st.results[m].is_none() {
                    st.results[m] = Some((*r).clone());
                    let pod = st.name.clone();
                    self.emit(Progress::Result {
                        pod,
                        index: m,
                        result: r,
                    });
                }
            }
            ProbeLine::Summary(v) => self.on_summary(i, v),
            ProbeLine::Other => {}
        }
    }

    /// The probe's whole verdict: done, unless its Custodian refused a held value (then the probe's calls went
    /// through no Custodian, and its verdict says nothing).
    fn on_summary(&mut self, i: usize, v: Box<Verdict>) {
        let st = &mut self.pods[i];
        if let Some((name, reason)) = st
            .custodian_log
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
            if st.results.len() <= m {
                st.results.resize(m + 1, None);
            }
            if st.results[m].is_none() {
                st.results[m] = Some(r.clone());
            }
        }
        if st.models.len() < v.models.len() {
            st.models = v.models.iter().map(|r| r.model.clone()).collect();
        }
        st.outcome = Some(PodOutcome::Finished(ProbeReport {
            verdict: Some(v),
            ..ProbeReport::default()
        }));
    }

    /// Judges one pod from what is known now.
    fn evaluate(&mut self, i: usize, now: Instant) {
        if self.pods[i].done() {
            return;
        }
        let Some(pod) = self.pods[i].last.clone() else {
            return;
        };
        if let Some(req) = diagnose::custodian_log_request(&pod)
            && self.pods[i].custodian_req != Some((req.restart_count, req.previous))
        {
            let st = &mut self.pods[i];
            st.custodian_req = Some((req.restart_count, req.previous));
            st.custodian_log = None;
            self.read_custodian_log(i, req.container, req.previous);
        }
        let st = &self.pods[i];
        let diagnosis = if st.deleted {
            Diagnosis::Stopped {
                reason: "the pod was deleted".to_owned(),
            }
        } else {
            diagnose::diagnose(&pod, &st.events, st.custodian_log.as_deref())
        };
        // Timers belong to the state that set them.
        let st = &mut self.pods[i];
        if !matches!(&diagnosis, Diagnosis::CannotStart(f) if f.is_transient()) {
            st.grace_since = None;
        }
        st.running_now = diagnosis == Diagnosis::Running;
        if matches!(diagnosis, Diagnosis::Pending { .. } | Diagnosis::Running) {
            st.terminal_since = None;
        }
        let grace = self.opts.image_pull_grace;
        match diagnosis {
            Diagnosis::Pending { reason, message } => {
                self.pods[i].grace_since = None;
                self.pending(i, &reason, &message);
            }
            Diagnosis::Running => {
                let st = &mut self.pods[i];
                st.grace_since = None;
                st.ever_running = true;
                let (log, opens) = (st.log, st.log_opens);
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
                let st = &mut self.pods[i];
                if f.is_transient() {
                    let since = *st.grace_since.get_or_insert(now);
                    if now < since + grace {
                        let (reason, message) = f.as_pending();
                        self.pending(i, &reason, &message);
                        return;
                    }
                }
                let began = !st.started.is_empty() || st.results.iter().any(Option::is_some);
                match f {
                    StartFailure::CustodianRefused { .. } => {
                        self.fail(i, FailureKind::CannotStart(f))
                    }
                    // The probe's own OOM: its log says whether, and where, the check had begun.
                    StartFailure::OutOfMemory { ref container, .. }
                        if container == PROBE_CONTAINER || began || st.ever_running =>
                    {
                        if self.wait_for_log(i, now) {
                            return;
                        }
                        let began = !self.pods[i].started.is_empty()
                            || self.pods[i].results.iter().any(Option::is_some);
                        if began {
                            self.stopped(i, f.stop_reason(), Some(137));
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
                self.stopped(i, reason, None);
            }
            Diagnosis::Finished {
                exit_code,
                message,
                stop_reason,
            } => {
                self.pods[i].ever_running = true;
                if self.wait_for_log(i, now) {
                    return;
                }
                let (summary, verdict) = message
                    .as_deref()
                    .map(parse_termination)
                    .unwrap_or_default();
                if let Some(v) = verdict {
                    self.on_summary(i, v);
                    if self.pods[i].done() {
                        return;
                    }
                }
                if let Some(summary) = summary {
                    self.pods[i].outcome = Some(PodOutcome::Finished(ProbeReport {
                        verdict: None,
                        summary: Some(summary),
                        exit_code: Some(exit_code),
                    }));
                    return;
                }
                self.stopped(i, stop_reason, Some(exit_code));
            }
        }
    }

    /// The pod stopped: true while the rest of the probe's log may still come (the stream is open and the drain
    /// window not over, or a log that broke off is worth one more read).
    fn wait_for_log(&mut self, i: usize, now: Instant) -> bool {
        let drain = self.opts.log_drain;
        let st = &mut self.pods[i];
        let since = *st.terminal_since.get_or_insert(now);
        let probe_ran = st.ever_running
            || st
                .last
                .as_ref()
                .and_then(diagnose::probe_status)
                .and_then(|s| s.state.as_ref())
                .is_some_and(|s| s.terminated.is_some());
        let reopen = match st.log {
            LogState::Open => return now < since + drain,
            LogState::Closed => probe_ran && !st.deleted,
            LogState::Ended { clean: false, .. } => {
                !st.reopened_after_stop && !st.deleted && st.log_opens < MAX_LOG_OPENS
            }
            LogState::Ended { clean: true, .. } => false,
        };
        if reopen {
            st.reopened_after_stop = true;
            self.open_log(i);
        }
        reopen
    }

    /// The next moment a timer matters.
    fn next_wake(&self) -> Instant {
        let mut wake = self.deadline;
        for st in self.pods.iter().filter(|st| !st.done()) {
            if let Some(since) = st.grace_since {
                wake = wake.min(since + self.opts.image_pull_grace);
            }
            if let (Some(since), LogState::Open) = (st.terminal_since, st.log) {
                wake = wake.min(since + self.opts.log_drain);
            }
            if let LogState::Ended { at, .. } = st.log
                && st.running_now
                && st.log_opens < MAX_LOG_OPENS
            {
                wake = wake.min(at + self.opts.log_retry);
            }
        }
        wake
    }

    fn deadline_passed(&mut self) {
        let secs = render::seconds(self.opts.timeout);
        for i in 0..self.pods.len() {
            if self.pods[i].done() {
                continue;
            }
            if self.pods[i].ever_running {
                self.stopped(i, format!("no verdict in {secs} s"), None);
            } else {
                let (reason, message) = self.pods[i].last_reason.clone().unwrap_or_else(|| {
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
            let Some(outcome) = &st.outcome else { continue };
            if std::mem::replace(&mut self.released[i], true) {
                continue;
            }
            let failed = matches!(
                outcome,
                PodOutcome::Failed(f) if !matches!(f.kind, FailureKind::Refused { .. } | FailureKind::Interrupted)
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
                () = async { match &cancel { Some(c) => c.cancelled().await, None => std::future::pending().await } } => {
                    for i in 0..self.pods.len() {
                        if !self.pods[i].done() {
                            self.fail(i, FailureKind::Interrupted);
                        }
                    }
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

/// Runs the check pods: creates them all at once, watches them and their Events, streams each probe's JSON lines,
/// and returns when every pod has a verdict or a failure, the deadline passes, or the run is cancelled. Every pod
/// it created is deleted on every path (not awaited: see [`Cleanup::wait`]), but a failed one when
/// [`RunOptions::keep_failed`] says so.
///
/// Each pod must have a name and the `jr2.dev/preflight-run` label (as `pod::check_pod` builds it).
pub async fn run_pods(
    client: Client,
    namespace: &str,
    to_run: Vec<PodToRun>,
    opts: RunOptions,
) -> RunResult {
    let start = Instant::now();
    let deadline = start + opts.timeout;
    let pods: Vec<Pod> = to_run.iter().map(|p| p.pod.clone()).collect();
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let cleanup = opts
        .cleanup
        .clone()
        .unwrap_or_else(|| Cleanup::new(client.clone(), namespace));
    let _guard = DeleteOnDrop(cleanup.clone());
    let mut run = Run {
        api: api.clone(),
        client: client.clone(),
        namespace: namespace.to_owned(),
        pods: to_run.iter().map(PodState::new).collect(),
        by_name: pods
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name_any(), i))
            .collect(),
        streams: SelectAll::new(),
        warnings: Vec::new(),
        start,
        deadline,
        cleanup: cleanup.clone(),
        released: vec![false; pods.len()],
        one_watch: true,
        opts,
    };

    // All at once; each create is its own task, so that one still on its way when the run stops deletes its pod.
    let creates: Vec<tokio::sync::oneshot::Receiver<Created>> = pods
        .iter()
        .map(|p| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let create = create_pod(
                api.clone(),
                cleanup.clone(),
                p.clone(),
                run.opts.create_tries,
                deadline,
            );
            cleanup.track(tokio::spawn(async move {
                let _ = tx.send(create.await);
            }));
            rx
        })
        .collect();
    let cancel = run.opts.cancel.clone();
    let created = tokio::select! {
        biased;
        () = async { match &cancel { Some(c) => c.cancelled().await, None => std::future::pending().await } } => None,
        all = join_all(creates) => Some(all),
    };
    let Some(created) = created else {
        for i in 0..run.pods.len() {
            run.fail(i, FailureKind::Interrupted);
        }
        return finish(run, &cleanup);
    };
    for (i, c) in created.into_iter().enumerate() {
        match c {
            Ok(Created::Ok(p)) => {
                let st = &mut run.pods[i];
                st.uid = p.metadata.uid.clone();
                st.last = Some(*p);
                run.emit(Progress::Created {
                    pod: run.pods[i].name.clone(),
                });
            }
            Ok(Created::Refused(code, message)) => {
                run.fail(i, FailureKind::Refused { code, message })
            }
            Err(e) => run.fail(
                i,
                FailureKind::Refused {
                    code: None,
                    message: format!("the create request was dropped: {e}"),
                },
            ),
        }
    }

    if !run.pods.iter().all(PodState::done) {
        // One watcher for the run's pods (by its label), one per pod for its Events.
        let runs: BTreeSet<&str> = pods
            .iter()
            .filter_map(|p| p.labels().get(LABEL_RUN).map(String::as_str))
            .collect();
        let configs: Vec<watcher::Config> = match runs.iter().next() {
            Some(id) if runs.len() == 1 => {
                vec![watcher::Config::default().labels(&crate::pod::run_selector(id))]
            }
            _ => pods
                .iter()
                .map(|p| {
                    watcher::Config::default().fields(&format!("metadata.name={}", p.name_any()))
                })
                .collect(),
        };
        run.one_watch = configs.len() == 1;
        for config in configs {
            let s = watcher(api.clone(), config).default_backoff().boxed();
            run.streams
                .push(until_forbidden(s, |r| Input::Pod(Box::new(r))));
        }
        for i in 0..run.pods.len() {
            if !run.pods[i].done() {
                run.watch_events(i);
                run.evaluate(i, Instant::now());
            }
        }
        run.drive().await;
    }
    finish(run, &cleanup)
}

fn finish(mut run: Run, cleanup: &Cleanup) -> RunResult {
    tracing::debug!(
        elapsed_ms = run.start.elapsed().as_millis() as u64,
        "check pods done"
    );
    run.release_done();
    let kept: BTreeSet<String> = cleanup.kept();
    let pods = run
        .pods
        .into_iter()
        .map(|st| {
            let kept = kept.contains(&st.name);
            st.into_run(kept)
        })
        .collect();
    cleanup.delete_all();
    RunResult {
        pods,
        warnings: run.warnings,
    }
}
