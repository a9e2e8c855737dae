//! Admitted wherever a Harness pod is (issue 35): what the namespace's admission weighs in a pod, read before the
//! create and given to each check pod.
//!
//! - `resources.rs`: the probe's requests and limits, fitted to the namespace's LimitRanges and ResourceQuotas;
//! - `identity.rs`: the Harness pods' labels beside the check pod's own, its Namespace as its controller (never
//!   adopted), a readiness gate (never a ready endpoint);
//! - `twin.rs`: when the API server refuses the check pod all the same, whether it refuses a Harness pod too;
//! - `quantity.rs`: Kubernetes quantities, read and written.
//!
//! The reads (the Namespace, `list limitranges`, `list resourcequotas`) are optional: a permission the pre-check
//! found denied is not asked, a read that fails or does not answer in [`READ_TIMEOUT`] is as if denied, and the run
//! goes on with what is known (the probe then asks [`resources::unread`]; without the Namespace's UID the check pod
//! carries its own labels only).

pub mod identity;
pub mod quantity;
pub mod resources;
pub mod twin;

use std::time::Duration;

use k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use kube::Client;
use kube::api::{Api, ListParams};

use crate::access::{Access, Use};
use crate::plan::ValidPlan;
use crate::pod::{CheckPod, PROBE_CONTAINER};

/// How long the API server has to answer each read.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many LimitRanges or ResourceQuotas are read (a namespace has a handful).
const LIST_LIMIT: u32 = 100;

/// What the namespace's admission weighs, as read before the create.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// The Namespace (its Pod Security label, its UID), when it could be read.
    pub namespace: Option<Namespace>,
    /// The LimitRanges, when they could be read.
    pub limit_ranges: Option<Vec<LimitRange>>,
    /// The ResourceQuotas (empty when they could not be read).
    pub quotas: Vec<ResourceQuota>,
}

/// Reads the Namespace, its LimitRanges and its ResourceQuotas at once, each only where the pre-check did not find
/// it denied.
pub async fn read(client: Client, namespace: &str, access: &Access) -> Facts {
    let ns = async {
        if access.denied(Use::Namespace) {
            None
        } else {
            crate::pod_security::read_namespace(client.clone(), namespace).await
        }
    };
    let ranges = async {
        if access.denied(Use::LimitRanges) {
            None
        } else {
            list::<LimitRange>(client.clone(), namespace).await
        }
    };
    let quotas = async {
        if access.denied(Use::ResourceQuotas) {
            None
        } else {
            list::<ResourceQuota>(client.clone(), namespace).await
        }
    };
    let (namespace, limit_ranges, quotas) = tokio::join!(ns, ranges, quotas);
    Facts {
        namespace,
        limit_ranges,
        quotas: quotas.unwrap_or_default(),
    }
}

async fn list<K>(client: Client, namespace: &str) -> Option<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client, namespace);
    let kind = K::kind(&K::DynamicType::default()).into_owned();
    match tokio::time::timeout(
        READ_TIMEOUT,
        api.list(&ListParams::default().limit(LIST_LIMIT)),
    )
    .await
    {
        Ok(Ok(list)) => Some(list.items),
        Ok(Err(e)) => {
            tracing::info!(error = %e, kind = %kind, "cannot list them; the probe's resources are not fitted to them");
            None
        }
        Err(_) => {
            tracing::info!(kind = %kind, "no answer to their list; the probe's resources are not fitted to them");
            None
        }
    }
}

/// Gives each check pod what the namespace's admission weighs: the probe's fitted resources, and, with the
/// Namespace as its controller, the Harness pods' labels of its placement.
pub fn fit(plan: &ValidPlan, checks: &mut [CheckPod], facts: &Facts) {
    let owner = facts.namespace.as_ref().and_then(identity::owner);
    for check in checks {
        let custodian = plan
            .placements
            .iter()
            .find(|p| p.name == check.placement)
            .and_then(|p| p.custodian())
            .cloned();
        let asks = resources::fit(
            facts.limit_ranges.as_deref(),
            &facts.quotas,
            custodian.as_ref(),
        );
        if let Some(probe) = check
            .pod
            .spec
            .as_mut()
            .and_then(|s| s.containers.iter_mut().find(|c| c.name == PROBE_CONTAINER))
        {
            probe.resources = Some(asks.requirements());
        }
        identity::carry_harness_labels(
            &mut check.pod,
            plan.harness_pod_labels(&check.placement),
            owner.as_ref(),
        );
    }
}
