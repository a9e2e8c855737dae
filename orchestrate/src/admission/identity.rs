//! Who the check pod is to the namespace's admission and controllers (issue 35, item 1): it carries the Harness
//! pods' labels beside its own, so a rule that reads their labels (a ValidatingAdmissionPolicy that wants a
//! `cost-center` label, a Kyverno or Gatekeeper rule, a NetworkPolicy) weighs it as it weighs them; and nothing that
//! selects the Harness pods by those labels takes it for one of them:
//!
//! - **never adopted**: a ReplicaSet, StatefulSet, DaemonSet, Job or ReplicationController adopts only an orphan its
//!   selector matches (Kubernetes' `controller_ref_manager.go`: a pod with a controller ownerReference of another
//!   UID is "owned by someone else. Ignore."). The check pod's controller is its Namespace: an owner that exists as
//!   long as the pod can (the garbage collector deletes a pod whose owner is gone; a Namespace's pods go with it
//!   anyway), cluster-scoped (a namespaced pod may name one), and read already for its Pod Security level. Without the
//!   Namespace's UID (`get namespaces` not allowed, no answer) the check pod carries its own labels only;
//! - **never a ready endpoint**: a readiness gate whose condition nobody sets keeps it not Ready for its life, so a
//!   Service that selects the Harness pods never routes to it (an EndpointSlice lists it as not ready; a Service with
//!   `publishNotReadyAddresses` lists not-ready pods all the same);
//! - **never a replica**: a controller counts the pods it owns;
//! - **still told apart**: its own labels win over a Harness label of the same key
//!   (`app.kubernetes.io/name: jr2-provider-preflight`, `app.kubernetes.io/managed-by`, `jr2.dev/*`), and the driver
//!   finds its pods by their names and UIDs, which admission cannot rewrite (`run/watch.rs`, `run/sweep.rs`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Pod, PodReadinessGate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// The readiness gate of every check pod: its condition is never set, so the pod is never Ready.
pub const NEVER_READY: &str = "jr2.dev/check-pod-never-ready";

/// The controller ownerReference to `namespace`, when its UID is known.
pub fn owner(namespace: &Namespace) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        name: namespace.metadata.name.clone()?,
        uid: namespace.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: None,
    })
}

/// The readiness gate that keeps the check pod out of every Service's ready endpoints.
pub fn readiness_gates() -> Vec<PodReadinessGate> {
    vec![PodReadinessGate {
        condition_type: NEVER_READY.to_owned(),
    }]
}

/// Gives `pod` the Harness pods' labels beside its own (its own win on a key both have), with `owner` as its
/// controller. Without an owner, nothing is added: a pod with the Harness labels and no controller is an orphan a
/// Harness controller would adopt.
pub fn carry_harness_labels(
    pod: &mut Pod,
    harness: Option<&BTreeMap<String, String>>,
    owner: Option<&OwnerReference>,
) {
    let (Some(harness), Some(owner)) = (harness, owner) else {
        return;
    };
    let own = pod.metadata.labels.take().unwrap_or_default();
    let mut labels = harness.clone();
    labels.extend(own);
    pod.metadata.labels = Some(labels);
    pod.metadata.owner_references = Some(vec![owner.clone()]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_labels_come_only_with_a_controller_and_never_replace_the_pods_own() {
        let mut pod = Pod::default();
        pod.metadata.labels = Some(BTreeMap::from([
            (
                "app.kubernetes.io/name".to_owned(),
                "jr2-provider-preflight".to_owned(),
            ),
            ("jr2.dev/instance".to_owned(), "demo".to_owned()),
        ]));
        let harness = BTreeMap::from([
            (
                "app.kubernetes.io/name".to_owned(),
                "jr2-sandbox".to_owned(),
            ),
            ("cost-center".to_owned(), "cc-42".to_owned()),
        ]);
        let mut alone = pod.clone();
        carry_harness_labels(&mut alone, Some(&harness), None);
        assert_eq!(alone, pod, "no owner: nothing carried");

        let mut ns = Namespace::default();
        assert_eq!(owner(&ns), None, "no UID, no owner");
        ns.metadata.name = Some("demo".to_owned());
        ns.metadata.uid = Some("6c0e4a1e-0000-4000-8000-000000000001".to_owned());
        let owner = owner(&ns).unwrap();
        assert_eq!(owner.controller, Some(true));
        assert_eq!(
            (owner.kind.as_str(), owner.api_version.as_str()),
            ("Namespace", "v1")
        );
        carry_harness_labels(&mut pod, Some(&harness), Some(&owner));
        let labels = pod.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["app.kubernetes.io/name"], "jr2-provider-preflight");
        assert_eq!(labels["cost-center"], "cc-42");
        assert_eq!(labels["jr2.dev/instance"], "demo");
        assert_eq!(pod.metadata.owner_references, Some(vec![owner]));
    }
}
