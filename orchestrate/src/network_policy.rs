//! The NetworkPolicy check: what the namespace's policies allow the egress of a placement's Harness pods and of its
//! check pod, compared. The check pod carries labels of its own, so a policy may select one and not the other.
//!
//! Policies add up, as Kubernetes reads them: a pod no Egress policy selects has all egress; a pod that one selects has
//! the union of the egress rules of every Egress policy that selects it (none: no egress at all). So per placement:
//! - the check pod allows more than the Harness pods: a check can pass where a Turn fails; each policy that limits the
//!   Harness pods' egress and does not select the check pod is named (the contract's line);
//! - the check pod allows less (a `default-deny` selecting both, and an allowlist that selects only the Harness pods):
//!   a check can fail where a Turn passes; each policy that gives the Harness pods egress and does not select the check
//!   pod is named, with the check pod's labels to allow the same for (issue 27, item 2; before, such an allowlist was
//!   named as if it held the Harness pods back);
//! - the same: nothing is said. Rules are compared whole (a rule in one set and not the other is a difference).
//!
//! Ingress, the other direction: a provider that runs in the cluster (a vLLM or gateway pod in this namespace) sits
//! behind the Ingress policies that select it, and they admit callers by their labels. The Ingress policies with the
//! same `podSelector` are read as one set (they add up the same way: a source is admitted when any rule of any of them
//! admits it); when the set admits the Harness pods and not the check pod, each policy of it that admits the Harness
//! pods is named (the check can fail where a Turn passes; admit the check pod's labels too), and the other way round
//! (the check can pass where a Turn fails). A source is told apart only by its pod labels: an `ipBlock` peer admits
//! neither by label, a `namespaceSelector` alone admits both alike (they share a namespace), and the policies of other
//! namespaces are not read.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jr2_probe::contract::render;
use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::Client;
use kube::api::{Api, ListParams};

use crate::plan::ValidPlan;
use crate::pod::CheckPod;

/// The namespace's NetworkPolicies, when the plan asks for the check (`None`: not asked, or the list cannot be read).
pub async fn list(client: Client, plan: &ValidPlan) -> Option<Vec<NetworkPolicy>> {
    plan.network_policy_check.as_ref()?;
    let api: Api<NetworkPolicy> = Api::namespaced(client, &plan.namespace);
    let Ok(Ok(list)) =
        tokio::time::timeout(Duration::from_secs(10), api.list(&ListParams::default())).await
    else {
        tracing::info!("cannot list NetworkPolicies; no NetworkPolicy warning");
        return None;
    };
    Some(list.items)
}

/// The NetworkPolicies of the namespace that make a placement's check pod's traffic differ from its Harness pods'
/// (matched on the labels the check pod is created with), as warning lines. A policy list that could not be read
/// ([`list`] gave `None`) yields no warning.
pub fn judge(plan: &ValidPlan, checks: &[CheckPod], policies: &[NetworkPolicy]) -> Vec<String> {
    if plan.network_policy_check.is_none() {
        return Vec::new();
    }
    differences(plan, checks, policies)
        .into_iter()
        .map(|(name, d)| match d {
            Difference::CheckFreer => render::network_policy_warning(&name),
            Difference::CheckHeld { labels } => {
                render::network_policy_opens_warning(&name, &labels)
            }
            Difference::IngressHeld { labels } => {
                render::network_policy_ingress_held_warning(&name, &labels)
            }
            Difference::IngressFreer => render::network_policy_ingress_freer_warning(&name),
            Difference::CheckOnly => render::network_policy_check_only_warning(&name),
        })
        .collect()
}

/// The Egress policies that select a check pod and allow it no egress to a model's destination (issue 35): a connect
/// that fails there is named by them, in place of the hints about localhost and the model's server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeniedEgress {
    /// The policies that select the check pod and are of type Egress (none of their rules allows the destination).
    pub names: Vec<String>,
    /// `<address>:<port>`.
    pub destination: String,
    /// The Harness pods are denied that destination too.
    pub harness_too: bool,
    /// The check pod's own label, to allow the egress for.
    pub check_labels: String,
}

/// For each check pod and each of its models, the policies that deny the pod the model's destination
/// ([`DeniedEgress`]), kept in `check.denied_egress`. Only a destination the policies surely deny is kept (an address
/// outside every rule, or no rule at all); a host name or a selector peer makes it unknown, and nothing is said.
pub fn find_denied(plan: &ValidPlan, checks: &mut [CheckPod], policies: &[NetworkPolicy]) {
    for check in checks.iter_mut() {
        let empty = BTreeMap::new();
        let check_labels = check.pod.metadata.labels.clone().unwrap_or_default();
        let harness = plan.harness_pod_labels(&check.placement).unwrap_or(&empty);
        let selecting = |labels: &BTreeMap<String, String>| -> Vec<&NetworkPolicy> {
            policies
                .iter()
                .filter(|p| {
                    p.spec
                        .as_ref()
                        .is_some_and(|s| of_type_egress(s) && selects(&s.pod_selector, labels))
                })
                .collect()
        };
        let for_check = selecting(&check_labels);
        if for_check.is_empty() {
            continue;
        }
        let for_harness = selecting(harness);
        let mut denied = BTreeMap::new();
        for &m in &check.models {
            if let Some(d) = destinations_of(plan, m) {
                if reach(&specs_of(&for_check), &d) != Reach::Denied {
                    continue;
                }
                let destination = match d.0 {
                    Some(std::net::IpAddr::V6(a)) => format!("[{a}]:{}", d.2),
                    _ => format!("{}:{}", d.1, d.2),
                };
                denied.insert(
                    m,
                    DeniedEgress {
                        names: for_check
                            .iter()
                            .map(|p| p.metadata.name.clone().unwrap_or_default())
                            .collect(),
                        destination,
                        harness_too: plan.harness_pod_labels(&check.placement).is_some()
                            && reach(&specs_of(&for_harness), &d) == Reach::Denied,
                        check_labels: check_labels
                            .get("app.kubernetes.io/name")
                            .map(|v| format!("app.kubernetes.io/name={v}"))
                            .unwrap_or_default(),
                    },
                );
            }
        }
        check.denied_egress = denied;
    }
}

fn specs_of<'a>(policies: &[&'a NetworkPolicy]) -> Vec<&'a NetworkPolicySpec> {
    policies.iter().filter_map(|p| p.spec.as_ref()).collect()
}

/// How a policy makes the check pod's egress differ from the Harness pods'.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Difference {
    /// It limits the Harness pods and not the check pod: the check can pass where a Turn fails.
    CheckFreer,
    /// It gives the Harness pods egress the check pod lacks: the check can fail where a Turn passes. `labels`: the
    /// check pod's `app.kubernetes.io/name` label, to allow the same egress for.
    CheckHeld {
        /// `app.kubernetes.io/name=jr2-provider-preflight`.
        labels: String,
    },
    /// It admits the Harness pods to the pods it selects, and its set admits the check pod nowhere: the check can
    /// fail where a Turn passes, if a provider runs there. `labels`: the check pod's, to admit too.
    IngressHeld {
        /// `app.kubernetes.io/name=jr2-provider-preflight`.
        labels: String,
    },
    /// It admits the check pod to the pods it selects, and its set admits the Harness pods nowhere: the check can pass
    /// where a Turn fails, if a provider runs there.
    IngressFreer,
    /// It limits the egress of the check pod and does not select the Harness pods: the check can fail where a Turn
    /// passes.
    CheckOnly,
}

/// What the Egress policies that select a pod allow it: all egress, or the union of their rules.
#[derive(Debug, PartialEq, Eq)]
enum Allowed {
    All,
    Rules(BTreeSet<String>),
}

impl Allowed {
    fn of<'a>(selecting: impl Iterator<Item = &'a NetworkPolicySpec>) -> Self {
        let mut rules = BTreeSet::new();
        let mut isolated = false;
        for spec in selecting.filter(|s| of_type_egress(s)) {
            isolated = true;
            for rule in spec.egress.iter().flatten() {
                if allows_all(rule) {
                    return Allowed::All;
                }
                rules.insert(serde_json::to_string(rule).unwrap_or_default());
            }
        }
        if isolated {
            Allowed::Rules(rules)
        } else {
            Allowed::All
        }
    }

    /// Strictly less than `other`.
    fn less_than(&self, other: &Allowed) -> bool {
        match (self, other) {
            (Allowed::All, _) => false,
            (Allowed::Rules(_), Allowed::All) => true,
            (Allowed::Rules(a), Allowed::Rules(b)) => a.is_subset(b) && a != b,
        }
    }
}

/// The policies that make a placement's check pod's egress differ from its Harness pods', sorted and once each.
fn differences(
    plan: &ValidPlan,
    checks: &[CheckPod],
    policies: &[NetworkPolicy],
) -> BTreeSet<(String, Difference)> {
    let mut names = BTreeSet::new();
    for check in checks {
        let Some(harness) = plan.harness_pod_labels(&check.placement) else {
            continue;
        };
        let empty = BTreeMap::new();
        let check_labels = check.pod.metadata.labels.as_ref().unwrap_or(&empty);
        let specs = || policies.iter().filter_map(|p| p.spec.as_ref());
        let for_harness = Allowed::of(specs().filter(|s| selects(&s.pod_selector, harness)));
        let for_check = Allowed::of(specs().filter(|s| selects(&s.pod_selector, check_labels)));
        // The policies that select the Harness pods and not the check pod make the difference.
        let only_harness = policies.iter().filter(|p| {
            p.spec.as_ref().is_some_and(|s| {
                of_type_egress(s)
                    && selects(&s.pod_selector, harness)
                    && !selects(&s.pod_selector, check_labels)
            })
        });
        let name = |p: &NetworkPolicy| p.metadata.name.clone().unwrap_or_default();
        let labels = check_labels
            .get("app.kubernetes.io/name")
            .map(|v| format!("app.kubernetes.io/name={v}"))
            .unwrap_or_default();
        names.extend(ingress_differences(
            policies,
            harness,
            check_labels,
            &labels,
        ));
        if for_harness == for_check {
            continue;
        }
        // Judged by the provider's destinations (issue 35): where every destination of the placement's models is an
        // address and both pods reach each alike, the difference in rules changes nothing the check sees.
        let destinations = destinations(plan, &check.placement);
        let reach = |labels: &BTreeMap<String, String>| -> Vec<Reach> {
            let selecting: Vec<&NetworkPolicySpec> = specs()
                .filter(|s| of_type_egress(s) && selects(&s.pod_selector, labels))
                .collect();
            destinations.iter().map(|d| reach(&selecting, d)).collect()
        };
        let (harness_reach, check_reach) = (reach(harness), reach(check_labels));
        if !destinations.is_empty()
            && !harness_reach.contains(&Reach::Unknown)
            && harness_reach == check_reach
        {
            continue;
        }
        // A policy that limits the check pod's egress and does not select the Harness pods (a default-deny over the
        // check pod's own labels): the check can fail where a Turn passes, and the policy is named (issue 35).
        if !for_harness.less_than(&for_check) {
            for p in policies.iter().filter(|p| {
                p.spec.as_ref().is_some_and(|s| {
                    limits_egress(s)
                        && selects(&s.pod_selector, check_labels)
                        && !selects(&s.pod_selector, harness)
                })
            }) {
                names.insert((name(p), Difference::CheckOnly));
            }
        }
        if for_check.less_than(&for_harness) {
            for p in only_harness {
                if p.spec
                    .as_ref()
                    .is_some_and(|s| s.egress.iter().flatten().next().is_some())
                {
                    names.insert((
                        name(p),
                        Difference::CheckHeld {
                            labels: labels.clone(),
                        },
                    ));
                }
            }
        } else {
            for p in only_harness {
                if p.spec.as_ref().is_some_and(limits_egress) {
                    names.insert((name(p), Difference::CheckFreer));
                }
            }
        }
    }
    names
}

/// Whether a pod reaches a destination under the Egress policies that select it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    Allowed,
    Denied,
    /// It depends on what cannot be known here: the address a host name resolves to, a named port, a pod or
    /// namespace selector (whether the address is a pod's).
    Unknown,
}

/// Where a placement's models send their requests: each base URL's host (an address when it is one) and port.
fn destinations(plan: &ValidPlan, placement: &str) -> Vec<(Option<std::net::IpAddr>, String, u16)> {
    let mut out = Vec::new();
    for (i, m) in plan.models.iter().enumerate() {
        if m.placement != placement {
            continue;
        }
        if let Some(d) = destinations_of(plan, i)
            && !out.contains(&d)
        {
            out.push(d);
        }
    }
    out
}

/// Where one model (its index into `plan.models`) sends its requests: its base URL's host and port (none when the
/// URL cannot be read).
fn destinations_of(plan: &ValidPlan, i: usize) -> Option<(Option<std::net::IpAddr>, String, u16)> {
    let url = plan.resolved(i).base_url.parse::<http::Uri>().ok()?;
    let host = url
        .host()?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = url
        .port_u16()
        .unwrap_or(if url.scheme_str() == Some("http") {
            80
        } else {
            443
        });
    Some((host.parse().ok(), host, port))
}

/// Whether the pod these Egress policies select reaches `(address, host, port)` over TCP: no policy, everything;
/// else any rule of any of them.
fn reach(
    selecting: &[&NetworkPolicySpec],
    dest: &(Option<std::net::IpAddr>, String, u16),
) -> Reach {
    if selecting.is_empty() {
        return Reach::Allowed;
    }
    let mut unknown = false;
    for rule in selecting.iter().flat_map(|s| s.egress.iter().flatten()) {
        let port = match rule.ports.as_deref() {
            None | Some([]) => Reach::Allowed,
            Some(ports) => any(ports.iter().map(|p| port_allows(p, dest.2))),
        };
        let peer = match rule.to.as_deref() {
            None | Some([]) => Reach::Allowed,
            Some(peers) => any(peers.iter().map(|p| peer_allows(p, dest.0))),
        };
        match (port, peer) {
            (Reach::Allowed, Reach::Allowed) => return Reach::Allowed,
            (Reach::Denied, _) | (_, Reach::Denied) => {}
            _ => unknown = true,
        }
    }
    if unknown {
        Reach::Unknown
    } else {
        Reach::Denied
    }
}

fn any(it: impl Iterator<Item = Reach>) -> Reach {
    let mut unknown = false;
    for r in it {
        match r {
            Reach::Allowed => return Reach::Allowed,
            Reach::Unknown => unknown = true,
            Reach::Denied => {}
        }
    }
    if unknown {
        Reach::Unknown
    } else {
        Reach::Denied
    }
}

fn port_allows(p: &k8s_openapi::api::networking::v1::NetworkPolicyPort, port: u16) -> Reach {
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    if p.protocol.as_deref().is_some_and(|proto| proto != "TCP") {
        return Reach::Denied;
    }
    match &p.port {
        None => Reach::Allowed,
        Some(IntOrString::Int(n)) => {
            let end = p.end_port.unwrap_or(*n);
            if (*n..=end).contains(&i32::from(port)) {
                Reach::Allowed
            } else {
                Reach::Denied
            }
        }
        // A named port is a destination pod's: not known for an address.
        Some(IntOrString::String(_)) => Reach::Unknown,
    }
}

fn peer_allows(peer: &NetworkPolicyPeer, address: Option<std::net::IpAddr>) -> Reach {
    let Some(block) = &peer.ip_block else {
        // A pod or namespace selector: whether the address is such a pod's is not known here.
        return Reach::Unknown;
    };
    let Some(address) = address else {
        return Reach::Unknown;
    };
    let within = |cidr: &str| {
        cidr.parse::<ipnet::IpNet>()
            .is_ok_and(|net| net.contains(&address))
    };
    if within(&block.cidr) && !block.except.iter().flatten().any(|e| within(e)) {
        Reach::Allowed
    } else {
        Reach::Denied
    }
}

/// The Ingress policies, in sets of the same `podSelector`, that admit the Harness pods and not the check pod to the
/// pods they select, or the other way round. `labels`: the check pod's, for the words.
fn ingress_differences(
    policies: &[NetworkPolicy],
    harness: &BTreeMap<String, String>,
    check: &BTreeMap<String, String>,
    labels: &str,
) -> Vec<(String, Difference)> {
    let mut sets: BTreeMap<String, Vec<&NetworkPolicy>> = BTreeMap::new();
    for p in policies {
        if let Some(spec) = p.spec.as_ref().filter(|s| of_type_ingress(s)) {
            let key = serde_json::to_string(&spec.pod_selector).unwrap_or_default();
            sets.entry(key).or_default().push(p);
        }
    }
    let name = |p: &NetworkPolicy| p.metadata.name.clone().unwrap_or_default();
    let mut found = Vec::new();
    for set in sets.values() {
        let admits_harness = set.iter().any(|p| admits(p, harness));
        let admits_check = set.iter().any(|p| admits(p, check));
        if admits_harness && !admits_check {
            found.extend(set.iter().filter(|p| admits(p, harness)).map(|p| {
                let labels = labels.to_owned();
                (name(p), Difference::IngressHeld { labels })
            }));
        } else if admits_check && !admits_harness {
            found.extend(
                set.iter()
                    .filter(|p| admits(p, check))
                    .map(|p| (name(p), Difference::IngressFreer)),
            );
        }
    }
    found
}

/// The policy is of type Ingress: given in `policyTypes`, or by the API server's default (always Ingress).
fn of_type_ingress(spec: &NetworkPolicySpec) -> bool {
    spec.policy_types
        .as_ref()
        .is_none_or(|types| types.iter().any(|t| t == "Ingress"))
}

/// An Ingress policy admits a source pod of this namespace with these labels (on some port).
fn admits(policy: &NetworkPolicy, labels: &BTreeMap<String, String>) -> bool {
    let rules = policy.spec.as_ref().and_then(|s| s.ingress.as_ref());
    rules
        .into_iter()
        .flatten()
        .any(|rule| match rule.from.as_deref() {
            // No `from`: every source.
            None | Some([]) => true,
            Some(peers) => peers.iter().any(|peer| peer_admits(peer, labels)),
        })
}

/// A `from` peer admits a source pod of this namespace with these labels: by its `podSelector`; a `namespaceSelector`
/// alone admits every pod of the namespaces it selects (both alike); an `ipBlock` admits none by label.
fn peer_admits(peer: &NetworkPolicyPeer, labels: &BTreeMap<String, String>) -> bool {
    if peer.ip_block.is_some() {
        return false;
    }
    match &peer.pod_selector {
        Some(selector) => selects(&Some(selector.clone()), labels),
        None => peer.namespace_selector.is_some(),
    }
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

    fn policy(name: &str, spec: serde_json::Value) -> NetworkPolicy {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "spec": spec}))
            .unwrap()
    }

    fn example() -> (ValidPlan, Vec<CheckPod>) {
        let plan = crate::plan::RawPlan::parse(include_str!("../examples/plan.json"))
            .and_then(crate::plan::RawPlan::validate)
            .unwrap();
        let checks = crate::pod::check_pods(&plan, "run0001", std::time::SystemTime::now());
        (plan, checks)
    }

    /// Policies add up (issue 27, item 2): a default-deny over every pod and an allowlist for the Harness pods leave
    /// the check pod with no egress, so the check can fail where a Turn passes; the allowlist is named that way, not
    /// as a limit the check pod escapes.
    #[test]
    fn a_default_deny_and_an_allowlist_hold_the_check_pod_back() {
        let (plan, checks) = example();
        let deny = policy(
            "default-deny",
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"]}),
        );
        let allow = policy(
            "allow-harness",
            serde_json::json!({"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-sandbox"}},
                "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}),
        );
        let held = Difference::CheckHeld {
            labels: "app.kubernetes.io/name=jr2-provider-preflight".to_owned(),
        };
        assert_eq!(
            differences(&plan, &checks, &[deny.clone(), allow.clone()]),
            BTreeSet::from([("allow-harness".to_owned(), held)])
        );
        // The allowlist alone limits the Harness pods, and the check pod is under nothing: the contract's case.
        assert_eq!(
            differences(&plan, &checks, std::slice::from_ref(&allow)),
            BTreeSet::from([("allow-harness".to_owned(), Difference::CheckFreer)])
        );
        // The same allowlist for every pod: the same egress, nothing to say.
        let for_all = policy(
            "allow-all-pods",
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}),
        );
        assert_eq!(
            differences(&plan, &checks, &[deny, for_all]),
            BTreeSet::new()
        );
        // An Ingress-only policy says nothing of egress.
        let ingress_only = policy(
            "vllm-ingress",
            serde_json::json!({"podSelector": {"matchLabels": {"app": "vllm"}}, "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": {}}]}]}),
        );
        assert_eq!(
            differences(&plan, &checks, &[ingress_only]),
            BTreeSet::new()
        );
        // The line names the labels to allow the same egress for.
        assert_eq!(
            render::network_policy_opens_warning(
                "allow-harness",
                "app.kubernetes.io/name=jr2-provider-preflight"
            ),
            "warning: provider: NetworkPolicy \"allow-harness\" allows egress of the Harness pods, and the check pod is not under it — this check can fail where a Turn passes: allow the same egress for the check pod's labels (app.kubernetes.io/name=jr2-provider-preflight)"
        );
    }

    /// A default-deny over the check pod's own labels alone (issue 35): the Harness pods reach everything, the check
    /// pod nothing; the policy is named.
    #[test]
    fn a_policy_over_the_check_pod_alone_is_named() {
        let (plan, checks) = example();
        let deny_check = policy(
            "deny-preflight",
            serde_json::json!({"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-provider-preflight"}},
                "policyTypes": ["Egress"]}),
        );
        assert_eq!(
            differences(&plan, &checks, std::slice::from_ref(&deny_check)),
            BTreeSet::from([("deny-preflight".to_owned(), Difference::CheckOnly)])
        );
        // Over every pod: the Harness pods are under it too, nothing to say.
        let deny_all = policy(
            "deny-all",
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"]}),
        );
        assert_eq!(differences(&plan, &checks, &[deny_all]), BTreeSet::new());
    }

    /// The example plan's instance-harness placement alone, its one model at `base_url`, and its check pods.
    fn plan_at(base_url: &str) -> (crate::plan::ValidPlan, Vec<crate::pod::CheckPod>) {
        let mut raw: serde_json::Value =
            serde_json::from_str(include_str!("../examples/plan.json")).unwrap();
        let mut custom = raw["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["source"] == "custom")
            .unwrap()
            .clone();
        custom["baseUrl"] = serde_json::json!(base_url);
        raw["models"] = serde_json::json!([custom]);
        let plan = crate::plan::RawPlan::parse(&raw.to_string())
            .and_then(crate::plan::RawPlan::validate)
            .unwrap();
        let checks = crate::pod::check_pods(&plan, "run0001", std::time::SystemTime::now());
        (plan, checks)
    }

    /// Judged by the provider's address and port (issue 35): an allowlist for the Harness pods that covers the
    /// provider says nothing when the check pod reaches it too; one that leaves it out is named.
    #[test]
    fn egress_is_judged_by_the_providers_destination() {
        let allow = |cidr: &str| {
            policy(
                "allow-harness",
                serde_json::json!({"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}},
                    "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": cidr}}], "ports": [{"port": 8000}]}]}),
            )
        };
        let (plan, checks) = plan_at("http://10.0.0.7:8000/v1");
        // The Harness pods reach the provider, the check pod (under no policy) too: nothing to say.
        assert_eq!(
            differences(&plan, &checks, &[allow("10.0.0.0/8")]),
            BTreeSet::new()
        );
        // The allowlist leaves the provider out: a Turn fails where the check passes.
        assert_eq!(
            differences(&plan, &checks, &[allow("192.168.0.0/16")]),
            BTreeSet::from([("allow-harness".to_owned(), Difference::CheckFreer)])
        );
        // A host name: what it resolves to is not known here, so the rules are compared whole.
        let (plan, checks) = plan_at("http://vllm.lan.example:8000/v1");
        assert_eq!(
            differences(&plan, &checks, &[allow("10.0.0.0/8")]),
            BTreeSet::from([("allow-harness".to_owned(), Difference::CheckFreer)])
        );
    }

    /// A refused connect is named (issue 35): the Egress policies that select the check pod and allow it no egress to
    /// the model's address and port, and whether they deny the Harness pods too; none where a rule allows it or the
    /// destination is a host name.
    #[test]
    fn the_policies_that_deny_the_check_pod_its_destination_are_found() {
        let deny_all = policy(
            "deny-all",
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"]}),
        );
        let deny_check = policy(
            "deny-preflight",
            serde_json::json!({"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-provider-preflight"}},
                "policyTypes": ["Egress"]}),
        );
        let allow_lan = policy(
            "allow-lan",
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 8000}]}]}),
        );
        let found = |base_url: &str, policies: &[NetworkPolicy]| {
            let (plan, mut checks) = plan_at(base_url);
            find_denied(&plan, &mut checks, policies);
            checks
                .into_iter()
                .flat_map(|c| c.denied_egress.into_values())
                .collect::<Vec<_>>()
        };
        let denied = found("http://10.0.0.7:8000/v1", std::slice::from_ref(&deny_all));
        assert_eq!(
            denied,
            vec![DeniedEgress {
                names: vec!["deny-all".to_owned()],
                destination: "10.0.0.7:8000".to_owned(),
                harness_too: true,
                check_labels: "app.kubernetes.io/name=jr2-provider-preflight".to_owned(),
            }]
        );
        let denied = found("http://10.0.0.7:8000/v1", std::slice::from_ref(&deny_check));
        assert_eq!(denied.len(), 1);
        assert_eq!(denied[0].names, ["deny-preflight"]);
        assert!(
            !denied[0].harness_too,
            "the Harness pods are under no policy"
        );
        // A rule that allows the destination: nothing denies it. One that allows another port: denied.
        assert_eq!(
            found(
                "http://10.0.0.7:8000/v1",
                &[deny_all.clone(), allow_lan.clone()]
            ),
            Vec::new()
        );
        assert_eq!(
            found(
                "http://10.0.0.7:9000/v1",
                &[deny_all.clone(), allow_lan.clone()]
            )[0]
            .names,
            ["deny-all", "allow-lan"]
        );
        // A host name under a rule by address: unknown, nothing said; under a policy with no rule: denied.
        assert_eq!(
            found(
                "http://vllm.lan.example:8000/v1",
                &[deny_all.clone(), allow_lan]
            ),
            Vec::new()
        );
        assert_eq!(
            found(
                "http://vllm.lan.example:8000/v1",
                std::slice::from_ref(&deny_all)
            )
            .len(),
            1
        );
        // No policy: nothing.
        assert_eq!(found("http://10.0.0.7:8000/v1", &[]), Vec::new());
    }

    /// The ingress side (issue 27, item 2): a provider in the cluster behind a policy that admits the Harness pods by
    /// their labels refuses the check pod, so the check can fail where a Turn passes; Ingress policies over the same
    /// pods add up; one that admits every pod of the namespace, or every source, says nothing.
    #[test]
    fn an_ingress_allowlist_for_the_harness_pods_holds_the_check_pod_back() {
        let (plan, checks) = example();
        let labels = "app.kubernetes.io/name=jr2-provider-preflight".to_owned();
        let from_harness = policy(
            "vllm-from-harness",
            serde_json::json!({"podSelector": {"matchLabels": {"app": "vllm"}},
                "ingress": [{"from": [{"podSelector": {"matchExpressions": [{"key": "app.kubernetes.io/name",
                                 "operator": "In", "values": ["jr2-sandbox", "jr2-harness"]}]}}],
                             "ports": [{"port": 8000}]}]}),
        );
        assert_eq!(
            differences(&plan, &checks, std::slice::from_ref(&from_harness)),
            BTreeSet::from([(
                "vllm-from-harness".to_owned(),
                Difference::IngressHeld {
                    labels: labels.clone()
                }
            )])
        );
        // A second policy over the same pods that admits the check pod: they add up, nothing to say.
        let from_check = policy(
            "vllm-from-preflight",
            serde_json::json!({"podSelector": {"matchLabels": {"app": "vllm"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-provider-preflight"}}}]}]}),
        );
        assert_eq!(
            differences(&plan, &checks, &[from_harness.clone(), from_check.clone()]),
            BTreeSet::new()
        );
        // The check pod alone admitted: the check can pass where a Turn fails (for both placements: one line).
        assert_eq!(
            differences(&plan, &checks, std::slice::from_ref(&from_check)),
            BTreeSet::from([("vllm-from-preflight".to_owned(), Difference::IngressFreer)])
        );
        // Every pod of the namespace, every source, a namespace selector, or an ipBlock only: the same for both.
        for (name, ingress) in [
            (
                "all-pods",
                serde_json::json!([{"from": [{"podSelector": {}}]}]),
            ),
            ("anyone", serde_json::json!([{}])),
            (
                "namespaces",
                serde_json::json!([{"from": [{"namespaceSelector": {}}]}]),
            ),
            (
                "cidr",
                serde_json::json!([{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]),
            ),
            ("none", serde_json::json!([])),
        ] {
            let p = policy(
                name,
                serde_json::json!({"podSelector": {"matchLabels": {"app": "vllm"}}, "ingress": ingress}),
            );
            assert_eq!(differences(&plan, &checks, &[p]), BTreeSet::new(), "{name}");
        }
        // An Egress-only policy's ingress is not read.
        let egress_only = policy(
            "egress-only",
            serde_json::json!({"podSelector": {"matchLabels": {"app": "vllm"}}, "policyTypes": ["Egress"],
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-sandbox"}}}]}]}),
        );
        assert_eq!(differences(&plan, &checks, &[egress_only]), BTreeSet::new());
    }
}
