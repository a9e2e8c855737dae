//! Cleanup: every check pod a run creates is deleted on every path, and only the pod this run created.
//!
//! A pod is registered before its create request leaves ([`Cleanup::creating`]), and is deleted when its run is
//! over, when the run ends, fails, times out or is cancelled, or when the run's future is dropped ([`DeleteOnDrop`]:
//! Ctrl-C, SIGTERM). A create still on its way when the run stops deletes its pod as soon as it is answered. Deletes
//! are spawned and not awaited before the verdict returns; the caller awaits them, bounded, with [`Cleanup::wait`].
//! Each DELETE carries the pod's uid as a precondition: a pod of the same name that someone else made is not ours.

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

/// How long one DELETE may take.
pub(super) const DELETE_TIMEOUT: Duration = Duration::from_secs(15);

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

    pub(super) fn creating(&self, name: &str) {
        self.lock().pods.insert(name.to_owned(), Tracked::Creating);
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

    /// The create failed: there is nothing to delete (a 409 names someone else's pod).
    pub(super) fn not_created(&self, name: &str) {
        self.lock().pods.remove(name);
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
pub(super) async fn delete_pod(
    api: &Api<Pod>,
    name: &str,
    uid: Option<String>,
) -> Result<(), String> {
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
pub(super) struct DeleteOnDrop(pub(super) Cleanup);

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        self.0.delete_all();
    }
}
