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

/// Deletes the check pods of `instance` that outlived their deadline: what a driver killed hard left behind. The
/// deadline is the pod's `creationTimestamp` plus its `activeDeadlineSeconds`, both of the API server's clock, and
/// `now` is the API server's time (`server_clock.rs`): the `jr2.dev/preflight-deadline` annotation, written on the
/// clock of the machine that ran that driver, counts only for a pod without them (issue 40, item 6: a run whose
/// clock is 90 s ahead no longer sweeps another run's live pod). A pod being deleted already, or without a
/// deadline, is left alone. Bounded: 10 s for the list, 15 s per delete.
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
    let on_the_server = || {
        let created = pod.metadata.creation_timestamp.as_ref()?.0;
        let active = pod.spec.as_ref()?.active_deadline_seconds?;
        let secs = u64::try_from(created.as_second()).ok()? + u64::try_from(active).ok()?;
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
    };
    on_the_server().or_else(|| crate::pod::deadline_of(pod))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deadline is the API server's: creation plus `activeDeadlineSeconds`, whatever the annotation a driver
    /// with a clock 90 s behind wrote; the annotation only without them.
    #[test]
    fn the_deadline_is_the_api_servers() {
        let created = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_409_407);
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-12-04T18:36:47Z",
                         "annotations": {crate::pod::ANNOTATION_DEADLINE: "2026-12-04T18:36:17Z"}},
            "spec": {"containers": [], "activeDeadlineSeconds": 60}
        }))
        .unwrap();
        assert_eq!(deadline(&pod), Some(created + Duration::from_secs(60)));
        pod.spec.as_mut().unwrap().active_deadline_seconds = None;
        assert_eq!(deadline(&pod), Some(created - Duration::from_secs(30)));
    }
}
