//! The image-pull secrets a Harness pod gets from its ServiceAccount.
//!
//! The check pod does not run as the Harness's service account (contract, section 6), so the ServiceAccount admission
//! plugin would not give it that account's `imagePullSecrets`: a private probe or Custodian image that the Harness
//! pulls through them would not pull. The driver does what the plugin does for the Harness pod: when the Harness spec
//! names an account other than `default` and lists no pull secret of its own, that account's pull secrets become the
//! check pod's. (An account with none, or one that cannot be read, changes nothing: a pull that then fails is
//! diagnosed as any other.)

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{LocalObjectReference, ServiceAccount};
use kube::{Api, Client};

use crate::plan::ValidPlan;

/// How long the API server has to answer each read.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The account a Harness pod spec runs as, when it is one the check pod would not get by default.
fn named_account(spec: &k8s_openapi::api::core::v1::PodSpec) -> Option<&str> {
    #[allow(deprecated)]
    let deprecated = spec.service_account.as_deref();
    spec.service_account_name
        .as_deref()
        .or(deprecated)
        .filter(|n| !n.is_empty() && *n != "default")
}

/// Whether [`adopt`] would read a ServiceAccount for this plan (a placement names one and lists no pull secret).
pub fn reads_accounts(plan: &ValidPlan) -> bool {
    plan.placements.iter().any(|p| {
        p.pod_spec
            .image_pull_secrets
            .as_ref()
            .is_none_or(Vec::is_empty)
            && named_account(&p.pod_spec).is_some()
    })
}

/// Gives each placement whose Harness pods take their pull secrets from a named ServiceAccount those secrets, read
/// from the cluster (each account once).
pub async fn adopt(client: Client, plan: &mut ValidPlan) {
    let api: Api<ServiceAccount> = Api::namespaced(client, &plan.namespace);
    let mut read: BTreeMap<String, Option<Vec<LocalObjectReference>>> = BTreeMap::new();
    for index in 0..plan.placements.len() {
        let placement = &plan.placements[index];
        let spec = &placement.pod_spec;
        if spec
            .image_pull_secrets
            .as_ref()
            .is_some_and(|s| !s.is_empty())
        {
            continue;
        }
        let Some(account) = named_account(spec).map(str::to_owned) else {
            continue;
        };
        if !read.contains_key(&account) {
            let secrets = match tokio::time::timeout(READ_TIMEOUT, api.get(&account)).await {
                Ok(Ok(sa)) => sa.image_pull_secrets.filter(|s| !s.is_empty()),
                Ok(Err(e)) => {
                    tracing::info!(%account, error = %e, "cannot read the Harness's ServiceAccount; its pull secrets are not copied");
                    None
                }
                Err(_) => {
                    tracing::info!(%account, "no answer to the read of the Harness's ServiceAccount; its pull secrets are not copied");
                    None
                }
            };
            read.insert(account.clone(), secrets);
        }
        if let Some(secrets) = read.get(&account).cloned().flatten() {
            plan.set_pull_secrets(index, secrets);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodSpec;

    #[test]
    fn only_a_named_account_other_than_default_is_read() {
        let spec = |field: &str, name: &str| -> PodSpec {
            let mut v = serde_json::json!({"containers": []});
            if !field.is_empty() {
                v[field] = serde_json::json!(name);
            }
            serde_json::from_value(v).unwrap()
        };
        let account = |field, name| named_account(&spec(field, name)).map(str::to_owned);
        assert_eq!(
            account("serviceAccountName", "harness").as_deref(),
            Some("harness")
        );
        assert_eq!(
            account("serviceAccount", "old-harness").as_deref(),
            Some("old-harness")
        );
        assert_eq!(account("serviceAccountName", "default"), None);
        assert_eq!(account("serviceAccountName", ""), None);
        assert_eq!(account("", ""), None);
    }
}
