//! The stale sweep: before a run, the check pods of the Instance that outlived their deadline are deleted (a driver
//! killed hard, SIGKILL or a lost node, left them behind; its cleanup never ran).

use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

use super::cleanup::{DELETE_TIMEOUT, delete_pod};

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
            let r = tokio::time::timeout(DELETE_TIMEOUT, delete_pod(&api, &name, uid, None))
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
