//! The NetworkPolicy check: the policies of the namespace that limit the egress of a placement's Harness pods and do
//! not select its check pod. The check pod carries labels of its own, so such a policy leaves it free where a Harness
//! pod is held, and a check that passes may not say what a Turn would see: each such policy is a warning line before
//! the run. A policy that selects the check pod too (an empty `podSelector`, or one on `jr2.dev/instance`, which both
//! carry) or that allows all egress (`egress: [{}]`) is not a difference, so it is not named; and since policies add
//! up, none is named for a placement whose Harness pods another policy opens to all egress.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jr2_probe::contract::render;
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::plan::Plan;
use crate::pod::CheckPod;

/// The NetworkPolicies of the namespace that limit the egress of a placement's Harness pods and do not select that
/// placement's check pod (matched on the labels it is created with). A policy list that cannot be read yields no
/// warning.
pub async fn warnings(client: Client, plan: &Plan, checks: &[CheckPod]) -> Vec<String> {
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
    differences(plan, checks, &list.items)
        .iter()
        .map(|n| render::network_policy_warning(n))
        .collect()
}

/// The names of the policies that hold a placement's Harness pods and not its check pod, sorted and once each.
fn differences(plan: &Plan, checks: &[CheckPod], policies: &[NetworkPolicy]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for check in checks {
        let Some(harness) = plan.harness_pod_labels(&check.placement) else {
            continue;
        };
        let empty = BTreeMap::new();
        let check_labels = check.pod.metadata.labels.as_ref().unwrap_or(&empty);
        // Policies add up: one that selects the Harness pods and allows all egress leaves their egress open,
        // whatever the others say.
        let open = policies.iter().filter_map(|p| p.spec.as_ref()).any(|spec| {
            of_type_egress(spec)
                && selects(&spec.pod_selector, harness)
                && spec.egress.iter().flatten().any(allows_all)
        });
        if open {
            continue;
        }
        for policy in policies {
            let Some(spec) = &policy.spec else { continue };
            if limits_egress(spec)
                && selects(&spec.pod_selector, harness)
                && !selects(&spec.pod_selector, check_labels)
            {
                names.insert(policy.metadata.name.clone().unwrap_or_default());
            }
        }
    }
    names
}

/// The policy limits the egress of the pods it selects: it is of type Egress (given, or by default when it has egress
/// rules, as the API server defaults `policyTypes`), and none of its rules allows everything (a rule with no `to`
/// and no `ports` allows every destination and port).
fn limits_egress(spec: &NetworkPolicySpec) -> bool {
    of_type_egress(spec) && !spec.egress.iter().flatten().any(allows_all)
}

/// The policy is of type Egress: given in `policyTypes`, or by the API server's default when it has egress rules.
fn of_type_egress(spec: &NetworkPolicySpec) -> bool {
    match &spec.policy_types {
        Some(types) => types.iter().any(|t| t == "Egress"),
        None => spec.egress.as_ref().is_some_and(|r| !r.is_empty()),
    }
}

/// An egress rule that allows every destination on every port.
fn allows_all(rule: &NetworkPolicyEgressRule) -> bool {
    rule.to.as_deref().unwrap_or_default().is_empty()
        && rule.ports.as_deref().unwrap_or_default().is_empty()
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

    #[test]
    fn egress_is_limited_as_the_api_server_reads_the_policy() {
        let spec =
            |v: serde_json::Value| -> NetworkPolicySpec { serde_json::from_value(v).unwrap() };
        let to_llm = serde_json::json!({"to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}]});
        // Of type Egress with no rules: all egress denied.
        assert!(limits_egress(&spec(
            serde_json::json!({"policyTypes": ["Egress"]})
        )));
        // No policyTypes: Egress when it has egress rules, as the API server defaults it.
        assert!(limits_egress(&spec(
            serde_json::json!({"egress": [to_llm]})
        )));
        assert!(!limits_egress(&spec(serde_json::json!({"egress": []}))));
        assert!(!limits_egress(&spec(serde_json::json!({}))));
        // Ingress only: its egress rules are not read.
        assert!(!limits_egress(&spec(
            serde_json::json!({"policyTypes": ["Ingress"], "egress": [to_llm]})
        )));
        // A rule with no `to` and no `ports` allows everything, whatever the other rules say.
        assert!(!limits_egress(&spec(
            serde_json::json!({"policyTypes": ["Egress"], "egress": [to_llm, {}]})
        )));
        // Every destination, but one port: limited.
        assert!(limits_egress(&spec(
            serde_json::json!({"policyTypes": ["Egress"], "egress": [{"ports": [{"port": 443}]}]})
        )));
    }
}
