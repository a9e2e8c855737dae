//! Cleanup: every check pod a run creates is deleted on every path, and only the pod this run created.
//!
//! A pod is registered before its create request leaves ([`Cleanup::creating`]), and is deleted when its run is
//! over, when the run ends, fails, times out or is cancelled, or when the run's future is dropped ([`DeleteOnDrop`]:
//! Ctrl-C, SIGTERM). A create still on its way when the run stops deletes its pod as soon as it is answered. Deletes
//! are spawned and not awaited before the verdict returns; the caller awaits them, bounded, with [`Cleanup::wait`].
//! Each DELETE carries the pod's uid as a precondition: a pod of the same name that someone else made is not ours.
//!
//! A create whose outcome is unknown (a 5xx, a connection closed after the request went, no answer before the
//! deadline, the run stopped while it was on its way) may have written the pod: its name, which is ours and unique
//! to the run, is deleted with the same care as a created pod's (issue 25, item 4). A DELETE is retried with
//! backoff while it may pass on another try (a dropped connection, a 429 or 5xx, no answer), within a bounded time,
//! and counts only once the API server confirms the pod gone or terminating; what could not be confirmed is in the
//! [`CleanupReport`], for the verdict to name with its `kubectl delete` line (item 5).
//!
//! A create that got no answer at all (its connection broke, the driver gave up on it, the run stopped while it was
//! on its way) may still be written after the by-name DELETE found nothing: the API server works on a request until
//! its own deadline (the create's `timeout`, [`super::create::CREATE_SERVER_TIMEOUT`]). Until then a 404 is no
//! confirmation, so the DELETE is tried again; a name still unsettled when the cleanup's time is up is in the report,
//! with words that say so.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// How long the delete of one pod may take, its retries included.
pub(super) const DELETE_TIMEOUT: Duration = Duration::from_secs(8);
/// How long one DELETE request may take.
const DELETE_TRY_TIMEOUT: Duration = Duration::from_secs(4);
/// Why a pod whose create got no answer may outlive the run although its delete found nothing.
const UNSETTLED: &str = "its create was not answered, and the API server may still write it";

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
    /// For each pod, the creates of it that got no answer (yet): until when the API server may still write each.
    unsettled: BTreeMap<String, Vec<Instant>>,
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

impl CleanupReport {
    /// The pods that may outlive the run: their delete failed or was not confirmed in time.
    pub fn survivors(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .unfinished
            .iter()
            .map(String::as_str)
            .chain(self.failed.iter().map(|(n, _)| n.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
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

    /// A create request for `name` leaves now; the API server gives up on it by `until` at the latest.
    pub(super) fn creating(&self, name: &str, until: Instant) {
        let mut st = self.lock();
        st.pods.insert(name.to_owned(), Tracked::Creating);
        st.unsettled.entry(name.to_owned()).or_default().push(until);
    }

    /// The create request for `name` sent with `until` was answered (whatever the answer): the API server is done
    /// with it. Another try of it that got no answer is not.
    pub(super) fn answered(&self, name: &str, until: Instant) {
        if let Some(tries) = self.lock().unsettled.get_mut(name) {
            tries.retain(|u| *u != until);
        }
    }

    /// A pod of `name` written by an earlier try of ours was found: the tries that got no answer are settled (a
    /// create writes one pod, and that one is it).
    pub(super) fn settled(&self, name: &str) {
        self.lock().unsettled.remove(name);
    }

    /// The create was answered: the pod exists. When the run already stopped, it is deleted at once.
    pub(super) fn created(&self, name: &str, uid: Option<String>) {
        let closing = {
            let mut st = self.lock();
            st.pods.insert(name.to_owned(), Tracked::Created(uid));
            st.closing
        };
        if closing {
            self.delete_all();
        }
    }

    /// The create failed: there is nothing to delete (a 409 names someone else's pod; a 4xx wrote nothing; the
    /// connection could not be opened).
    pub(super) fn not_created(&self, name: &str) {
        self.lock().pods.remove(name);
    }

    /// The create's outcome is unknown: it may have written the pod, so its name is deleted (without a uid: none is
    /// known) as a created pod's is.
    pub(super) fn maybe_created(&self, name: &str) {
        self.created(name, None);
    }

    pub(super) fn track(&self, task: JoinHandle<()>) {
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
        let CleanupState {
            pods, unsettled, ..
        } = &mut *st;
        let todo: Vec<(String, Option<String>, Option<Instant>)> = pods
            .iter_mut()
            .filter(|(name, _)| which(name))
            .filter_map(|(name, t)| match t {
                Tracked::Created(uid) => {
                    let uid = uid.take();
                    *t = Tracked::Deleting;
                    let unsettled = unsettled
                        .get(name)
                        .and_then(|tries| tries.iter().max().copied());
                    Some((name.clone(), uid, unsettled))
                }
                _ => None,
            })
            .collect();
        for (name, uid, unsettled) in todo {
            let api = self.api.clone();
            let state = self.state.clone();
            st.tasks.push(rt.spawn(async move {
                let outcome = delete_pod(&api, &name, uid, unsettled).await;
                if let Err(e) = &outcome {
                    // The verdict names it, with its kubectl line (`verdict::pods_left`).
                    tracing::debug!(pod = %name, error = %e, "cannot delete the check pod");
                }
                state
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .done
                    .insert(name, outcome);
            }));
        }
    }

    /// Deletes what is left and waits, at most `within`, for every delete (and every create still on its way). A
    /// create still on its way when half of `within` has passed has an unknown outcome: its name is deleted then
    /// (the create, answered later, deletes its pod again).
    pub async fn wait(&self, within: Duration) -> CleanupReport {
        let until = Instant::now() + within;
        let creates_until = Instant::now() + within / 2;
        let mut creating_given_up = false;
        loop {
            if !creating_given_up && Instant::now() >= creates_until {
                creating_given_up = true;
                let creating: Vec<String> = self
                    .lock()
                    .pods
                    .iter()
                    .filter(|(_, t)| **t == Tracked::Creating)
                    .map(|(n, _)| n.clone())
                    .collect();
                for name in creating {
                    self.maybe_created(&name);
                }
            }
            self.delete_all();
            let tasks = std::mem::take(&mut self.lock().tasks);
            if tasks.is_empty() {
                break;
            }
            let round = if creating_given_up {
                until
            } else {
                creates_until
            };
            let mut tasks = tasks;
            let timed_out = tokio::time::timeout_at(round, join_all(tasks.iter_mut()))
                .await
                .is_err();
            if timed_out {
                // Those not done yet are awaited again in the next round (or left running past the last).
                tasks.retain(|t| !t.is_finished());
                self.lock().tasks.extend(tasks);
                if creating_given_up {
                    break;
                }
            }
        }
        let st = self.lock();
        let mut report = CleanupReport::default();
        let now = Instant::now();
        for (name, t) in &st.pods {
            let unsettled = st
                .unsettled
                .get(name)
                .is_some_and(|tries| tries.iter().any(|until| *until > now));
            match (t, st.done.get(name)) {
                (Tracked::Kept, _) => report.kept.push(name.clone()),
                (_, Some(Ok(()))) => report.deleted.push(name.clone()),
                // Nothing of it found in time, but it may still be written: the words say so.
                (_, None) if unsettled => report.failed.push((name.clone(), UNSETTLED.to_owned())),
                (_, Some(Err(e))) => report.failed.push((name.clone(), e.clone())),
                (_, None) => report.unfinished.push(name.clone()),
            }
        }
        report
    }
}

/// Why a DELETE did not end in a confirmation.
#[derive(Debug, thiserror::Error)]
enum DeleteError {
    /// Another try may pass: no answer, a dropped connection, a 429 or 5xx, the pod not terminating yet; and a 401 or
    /// 403, which an API server that has just restarted answers until its authenticator and RBAC caches have synced
    /// (seen on the real cluster: `403 ... cannot delete resource "pods"` for the user the shipped Role binds, right
    /// after a restart). The run's permission pre-check granted the delete, so a refusal now is taken as passing; a
    /// lasting one costs the bounded window ([`DELETE_TIMEOUT`]) and keeps its words.
    #[error("{0}")]
    Transient(String),
    /// The API server refused it for good (400, 422...): another try would too.
    #[error("{0}")]
    Refused(String),
}

/// Deletes at once (a check pod has nothing to finish), only the pod this run created (`uid` precondition),
/// retried with backoff while another try may pass, within [`DELETE_TIMEOUT`]. `Ok` once the API server confirms:
/// gone already (404), replaced by someone else's (409), deleted, or terminating (its answer has a
/// `deletionTimestamp`). Until `unsettled`, while a create of that name that got no answer may still be written, a
/// confirmation counts only for a pod deleted by name (a create writes one pod): once gone, the name is deleted again
/// until then, by name, as whatever is written under it is that create's.
pub(super) async fn delete_pod(
    api: &Api<Pod>,
    name: &str,
    uid: Option<String>,
    unsettled: Option<Instant>,
) -> Result<(), String> {
    use backon::{ExponentialBuilder, Retryable};
    let uid = std::sync::Mutex::new(uid);
    let once = || async {
        let current = uid
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let by_name = current.is_none();
        let answer =
            tokio::time::timeout(DELETE_TRY_TIMEOUT, delete_once(api, name, current)).await;
        let open = unsettled.is_some_and(|until| Instant::now() < until);
        match answer {
            Ok(Ok(Gone::Deleted)) if by_name => Ok(()),
            Ok(Ok(_)) if open => {
                *uid.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
                Err(DeleteError::Transient(UNSETTLED.to_owned()))
            }
            Ok(r) => r.map(|_| ()),
            Err(_) => Err(DeleteError::Transient(format!(
                "no answer in {} s",
                DELETE_TRY_TIMEOUT.as_secs()
            ))),
        }
    };
    let backoff = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(2))
        .with_max_times(usize::MAX)
        .with_jitter();
    // The last failure, for the words when the time is up.
    let last = std::sync::Mutex::new(None::<String>);
    let retried = once
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(|e| matches!(e, DeleteError::Transient(_)))
        .notify(|e, after| {
            tracing::debug!(pod = %name, error = %e, ?after, "the delete of the check pod is tried again");
            *last.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e.to_string());
        });
    match tokio::time::timeout(DELETE_TIMEOUT, retried).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => {
            let secs = DELETE_TIMEOUT.as_secs();
            Err(
                match last
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                {
                    Some(e) if e == UNSETTLED => e,
                    Some(e) => format!("its delete failed for {secs} s: {e}"),
                    None => format!("its delete was not confirmed in {secs} s"),
                },
            )
        }
    }
}

/// One DELETE, and what its answer confirms.
/// How a DELETE found the pod gone.
enum Gone {
    /// Deleted by this request, or terminating already.
    Deleted,
    /// Not there (404), or replaced by someone else's (409).
    NotFound,
}

async fn delete_once(api: &Api<Pod>, name: &str, uid: Option<String>) -> Result<Gone, DeleteError> {
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
        // Deleted (a Status), or the pod as it is now: terminating.
        Ok(answer) => match answer.left() {
            Some(pod) if pod.metadata.deletion_timestamp.is_none() => Err(DeleteError::Transient(
                "the API server answered the delete, but the pod is not terminating".to_owned(),
            )),
            _ => Ok(Gone::Deleted),
        },
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(Gone::NotFound),
        Err(kube::Error::Api(s))
            if s.code == 401 || s.code == 403 || s.code == 429 || s.code >= 500 =>
        {
            Err(DeleteError::Transient(format!("{} {}", s.code, s.message)))
        }
        Err(kube::Error::Api(s)) => Err(DeleteError::Refused(format!("{} {}", s.code, s.message))),
        // No answer that says anything: a dropped connection, a broken body, a TLS failure (in plain words).
        Err(e) => Err(DeleteError::Transient(super::lost::words(&e))),
    }
}

/// Deletes the pod when the run's future is dropped.
pub(super) struct DeleteOnDrop(pub(super) Cleanup);

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        self.0.delete_all();
    }
}
