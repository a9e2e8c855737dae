//! The watches of a run: the run's pods, and each pod's Events. `kube::runtime::watcher` re-watches from its
//! resource version when a stream closes, and re-lists after a `410 Gone`; a 403 ends the stream (what RBAC refuses
//! now it refuses for the whole run).

use futures_util::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};

/// A watch's stream of events.
pub(super) type Watch<T> = BoxStream<'static, Result<watcher::Event<T>, watcher::Error>>;

/// The watches of the pods, one per pod, by its name (`fieldSelector=metadata.name=<pod>`), with that name: the
/// driver finds its pods by what admission cannot rewrite (issue 40, item 2: a policy that sets
/// `app.kubernetes.io/managed-by` on every pod must not hide the check pod from its own watch). A list of one pod's
/// watch that does not show it says it is gone.
pub(super) fn pods(api: &Api<Pod>, pods: &[Pod]) -> Vec<(String, Watch<Pod>)> {
    pods.iter()
        .map(|p| {
            let name = p.name_any();
            let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
            let w = until_forbidden(watcher(api.clone(), config).default_backoff().boxed());
            (name, w)
        })
        .collect()
}

/// The watch of one pod's Events (`fieldSelector=involvedObject.name=<pod>`).
pub(super) fn events(client: Client, namespace: &str, pod: &str) -> Watch<Event> {
    let api: Api<Event> = Api::namespaced(client, namespace);
    let config = watcher::Config::default().fields(&format!("involvedObject.name={pod}"));
    until_forbidden(watcher(api, config).default_backoff().boxed())
}

/// The watch of one Node, by its name (`fieldSelector=metadata.name=<node>`): the node a check pod is bound to.
pub(super) fn node(client: Client, name: &str) -> Watch<Node> {
    let api: Api<Node> = Api::all(client);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    until_forbidden(watcher(api, config).default_backoff().boxed())
}

/// The API server's message when a watch was refused (403), else `None`.
pub(super) fn forbidden(e: &watcher::Error) -> Option<String> {
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
fn until_forbidden<T: Send + 'static>(s: Watch<T>) -> Watch<T> {
    stream::unfold((s, false), |(mut s, stop)| async move {
        if stop {
            return None;
        }
        let item = s.next().await?;
        let stop = item.as_ref().err().and_then(forbidden).is_some();
        Some((item, (s, stop)))
    })
    .boxed()
}
