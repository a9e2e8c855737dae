//! A namespace deleted during the run (issue 40, item 12): its pods go with it, which the watch shows as a pod
//! deleted. A pod that stopped so is named by its namespace's deletion, not as a pod someone deleted that a new run
//! may pass with: the namespace is read once the run is over (`get namespaces`, which the Role grants; a read that is
//! refused or not answered changes nothing).

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::Api;

/// How long the read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The namespace is gone or being deleted (its read answered 404, or its object has a `deletionTimestamp`).
pub(super) async fn deleted(client: kube::Client, namespace: &str) -> bool {
    let api: Api<Namespace> = Api::all(client);
    match tokio::time::timeout(READ_TIMEOUT, api.get(namespace)).await {
        Ok(Ok(ns)) => ns.metadata.deletion_timestamp.is_some(),
        Ok(Err(kube::Error::Api(s))) => s.code == 404,
        _ => false,
    }
}
