//! The NetworkPolicy check: the policies of the namespace that select a placement's Harness pods and limit their
//! egress. The check pod carries labels of its own, so such a policy does not select it, and a check that passes may
//! not say what a Harness pod would see: each such policy is a warning line before the run.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jr2_probe::contract::render;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::plan::Plan;

/// The NetworkPolicies of the namespace that select a placement's Harness pods and limit their egress: the check
/// pod has labels of its own, so they do not select it. A policy list that cannot be read yields no warning.
pub async fn warnings(client: Client, plan: &Plan) -> Vec<String> {
    if plan.network_policy_check.is_none() {
        return Vec::new();
    }
    let api: Api<NetworkPolicy> = Api::namespaced(client, &plan.namespace);
    let Ok(Ok(list)) =
        tokio::time::timeout(Duration::from_secs(10), api.list(&ListParams::default())).await
    else {
        tracing::info!("cannot list NetworkPolicies; no NetworkPolicy warning");
        return Vec::new();
    };
    let mut names = BTreeSet::new();
    for placement in plan.placements_with_models() {
        let Some(labels) = plan.harness_pod_labels(&placement.name) else {
            continue;
        };
        for policy in &list.items {
            let Some(spec) = &policy.spec else { continue };
            let limits_egress = spec
                .policy_types
                .as_ref()
                .is_some_and(|t| t.iter().any(|t| t == "Egress"))
                || spec.egress.is_some();
            if limits_egress && selects(&spec.pod_selector, labels) {
                names.insert(policy.metadata.name.clone().unwrap_or_default());
            }
        }
    }
    names
        .iter()
        .map(|n| render::network_policy_warning(n))
        .collect()
}

/// A label selector matches these labels (matchLabels and the matchExpressions operators).
fn selects(selector: &Option<LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let by_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expressions = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.clone().unwrap_or_default();
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    by_labels && by_expressions
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn selectors_match_as_kubernetes_does() {
        let labels: BTreeMap<String, String> = [
            ("app".to_owned(), "jr2-harness".to_owned()),
            ("tier".to_owned(), "sandbox".to_owned()),
        ]
        .into();
        let by = |l: &[(&str, &str)], e: Vec<LabelSelectorRequirement>| {
            Some(LabelSelector {
                match_labels: Some(
                    l.iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                match_expressions: Some(e),
            })
        };
        assert!(selects(&None, &labels));
        assert!(
            selects(&Some(LabelSelector::default()), &labels),
            "an empty selector selects every pod"
        );
        assert!(selects(&by(&[("app", "jr2-harness")], vec![]), &labels));
        assert!(!selects(&by(&[("app", "other")], vec![]), &labels));
        let req = |op: &str, values: &[&str]| LabelSelectorRequirement {
            key: "tier".to_owned(),
            operator: op.to_owned(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        };
        assert!(selects(
            &by(&[], vec![req("In", &["sandbox", "x"])]),
            &labels
        ));
        assert!(!selects(
            &by(&[], vec![req("NotIn", &["sandbox"])]),
            &labels
        ));
        assert!(selects(&by(&[], vec![req("Exists", &[])]), &labels));
        assert!(!selects(&by(&[], vec![req("DoesNotExist", &[])]), &labels));
    }
}
