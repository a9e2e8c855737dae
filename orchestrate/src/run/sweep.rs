//! The stale sweep: before a run, the check pods of the Instance that outlived their deadline are deleted (a driver
//! killed hard, SIGKILL or a lost node, left them behind; its cleanup never ran).
//!
//! The check pods are found by their names, which admission cannot rewrite (issue 40, item 2: a policy that sets
//! `app.kubernetes.io/managed-by` on every pod must not hide a stale check pod from the sweep): the namespace's pods
//! are listed by metadata only, in pages, and a pod is the Instance's when its name is a check pod's
//! (`jr2-preflight-...`) and its `jr2.dev/instance` label names the Instance, or, without that label, its name does
//! (`jr2-preflight-<instance>-...`).

use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
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

/// How long the list of the namespace's pods may take, all pages.
const LIST_TIMEOUT: Duration = Duration::from_secs(10);
/// Pods per page of the list.
const PAGE: u32 = 500;
/// At most this many pages are read (10,000 pods): past them, the sweep weighs what it saw.
const MOST_PAGES: usize = 20;

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
    let found = tokio::time::timeout(LIST_TIMEOUT, of_instance(&api, instance))
        .await
        .map_err(|_| SweepError::Timeout(LIST_TIMEOUT.as_secs()))??;
    let live: Vec<ObjectMeta> = found
        .into_iter()
        .filter(|m| m.deletion_timestamp.is_none())
        .collect();
    // Each pod is read whole for its `activeDeadlineSeconds` (the list gives metadata only): the deadline is the API
    // server's (`deadline`), the annotation only for a pod that cannot be read.
    let weighed = join_all(live.into_iter().map(|meta| {
        let api = api.clone();
        async move {
            let mut pod = Pod {
                metadata: meta,
                ..Pod::default()
            };
            if let Ok(Ok(whole)) =
                tokio::time::timeout(DELETE_TIMEOUT, api.get(&pod.name_any())).await
            {
                pod = whole;
            }
            pod
        }
    }))
    .await;
    let stale: Vec<(String, Option<String>)> = weighed
        .iter()
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

/// The metadata of the namespace's pods that are check pods of `instance`, by their names (and the instance label
/// where it is), page by page.
async fn of_instance(api: &Api<Pod>, instance: &str) -> Result<Vec<ObjectMeta>, SweepError> {
    let mut found = Vec::new();
    let mut lp = ListParams::default().limit(PAGE);
    for _ in 0..MOST_PAGES {
        let page = api.list_metadata(&lp).await.map_err(SweepError::List)?;
        found.extend(
            page.items
                .into_iter()
                .map(|p| p.metadata)
                .filter(|m| of_the_instance(m, instance)),
        );
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok(found),
        }
    }
    tracing::info!(
        pages = MOST_PAGES,
        "the namespace has more pods than the sweep reads; it weighs the first pages"
    );
    Ok(found)
}

/// A pod is a check pod of `instance`: its name is a check pod's, and its instance label names `instance` (or, without
/// that label, its name does).
fn of_the_instance(meta: &ObjectMeta, instance: &str) -> bool {
    let Some(name) = meta.name.as_deref() else {
        return false;
    };
    let prefix = format!("{}-", crate::pod::MANAGED_BY);
    if !name.starts_with(&prefix) {
        return false;
    }
    match meta
        .labels
        .as_ref()
        .and_then(|l| l.get(crate::pod::LABEL_INSTANCE))
    {
        Some(v) => v == instance,
        None => name.starts_with(&format!("{prefix}{instance}-")),
    }
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
    use std::collections::BTreeMap;

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

    fn meta(name: &str, instance: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            labels: instance
                .map(|i| BTreeMap::from([(crate::pod::LABEL_INSTANCE.to_owned(), i.to_owned())])),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn a_check_pod_is_told_by_its_name_whatever_admission_did_to_its_labels() {
        assert!(of_the_instance(
            &meta("jr2-preflight-demo-harness-abc", Some("demo")),
            "demo"
        ));
        // Its managed-by label rewritten, its instance label gone: the name still says it.
        assert!(of_the_instance(
            &meta("jr2-preflight-demo-harness-abc", None),
            "demo"
        ));
        // Another Instance whose name starts alike: its label says which.
        assert!(!of_the_instance(
            &meta("jr2-preflight-demo-x-harness-abc", Some("demo-x")),
            "demo"
        ));
        // Not a check pod, whatever its labels.
        assert!(!of_the_instance(&meta("web-7d9f", Some("demo")), "demo"));
        assert!(!of_the_instance(&ObjectMeta::default(), "demo"));
    }
}
