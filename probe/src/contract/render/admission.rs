//! Beyond the contract (issue 35): when the API server refuses the check pod, whether it would refuse a Harness pod
//! of the placement too, as a server-side dry run of one (its own spec and labels) answers it. One detail line after
//! the contract's `the cluster refused the check pod` line, indented two spaces; the API server's message arrives
//! here already cleaned.

/// The namespace refuses the Harness pods as well: a real problem, which stops the converge; the server's message.
pub fn harness_refused_too(placement: &str, message: &str) -> String {
    format!(
        "  the namespace refuses a Harness pod of placement \"{placement}\" as well (a server-side dry run of one): {message} — a Turn cannot start there either: make the namespace admit the Harness pods"
    )
}

/// The namespace admits a Harness pod and refuses only the check pod: what the check pod has that the Harness pod
/// has not (`differs`, already joined).
pub fn harness_admitted_only(placement: &str, differs: &str) -> String {
    format!(
        "  the namespace admits a Harness pod of placement \"{placement}\" (a server-side dry run of one) and refuses only the check pod, which differs from it in {differs}: a Turn can start there; allow the check pod, or run with --skip-provider-preflight"
    )
}

/// A NetworkPolicy that limits the egress of the check pod and does not select the Harness pods (a default-deny
/// over the check pod's own labels): `warning: provider: NetworkPolicy "<name>" limits the egress of the check pod,
/// and the Harness pods are not under it — this check can fail where a Turn passes`.
pub fn network_policy_check_only_warning(name: &str) -> String {
    format!(
        "warning: provider: NetworkPolicy \"{name}\" limits the egress of the check pod, and the Harness pods are not under it — this check can fail where a Turn passes"
    )
}

/// A connect that failed where the NetworkPolicies that select the check pod allow it no egress to the provider's
/// address and port (issue 35): the hint line that names them, in place of the localhost, model id and vLLM hints.
/// `names`: the policies (at least one); `destination`: `<address>:<port>`; `harness_too`: they deny the Harness
/// pods that destination as well (a Turn is refused the same), else `check_labels` are the check pod's own labels
/// to allow the egress for.
pub fn network_policy_denies(
    names: &[String],
    destination: &str,
    harness_too: bool,
    check_labels: &str,
) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let (which, verb, allow) = if names.len() == 1 {
        ("NetworkPolicy", "selects", "allows")
    } else {
        ("NetworkPolicies", "select", "allow")
    };
    let who = quoted.join(", ");
    if harness_too {
        format!(
            "  - {which} {who} {verb} the check pod and the Harness pods and {allow} them no egress to {destination}: a Turn is refused the same; allow that egress for the Harness pods' labels"
        )
    } else {
        format!(
            "  - {which} {who} {verb} the check pod, not the Harness pods, and {allow} it no egress to {destination}: a Turn is not refused; allow that egress for the check pod's labels ({check_labels})"
        )
    }
}

/// The next action of a model whose connect the NetworkPolicies of [`network_policy_denies`] deny (issue 35), in
/// place of its code's (check the address; fix the held secret): where they deny the Harness pods too, allow the
/// Harness pods that egress; where they select the check pod alone, remove them or allow the check pod's labels.
pub fn network_policy_next_action(
    names: &[String],
    destination: &str,
    harness_too: bool,
    check_labels: &str,
) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let who = quoted.join(", ");
    let (which, it, denies, them) = if names.len() == 1 {
        ("NetworkPolicy", "it selects", "denies", "it")
    } else {
        ("NetworkPolicies", "they select", "deny", "them")
    };
    if harness_too {
        format!(
            "allow the Harness pods' labels egress to {destination} (TCP) in a NetworkPolicy of the namespace: {which} {who} {denies} it to the Harness pods and the check pod alike, so a Turn is refused the same, then run jr2 up again"
        )
    } else {
        format!(
            "remove {which} {who} ({it} the check pod, not the Harness pods), or allow the check pod's labels ({check_labels}) egress to {destination} (TCP) in {them}, then run jr2 up again"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_lines() {
        let refused = "pods \"jr2-preflight-demo-sandbox-abcd1234\" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10";
        insta::assert_snapshot!(
            [
                "# the namespace refuses the Harness pods too".to_owned(),
                crate::contract::render::cluster_refused(refused),
                harness_refused_too(
                    "sandbox",
                    "pods \"jr2-harness-x7k2p\" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=10, limited: pods=10"
                ),
                String::new(),
                "# only the check pod is refused".to_owned(),
                crate::contract::render::cluster_refused(
                    "admission webhook \"images.example.com\" denied the request: image ghcr.io/jr2/jr2-probe:0.1.0 is not signed"
                ),
                harness_admitted_only(
                    "sandbox",
                    "its probe container (ghcr.io/jr2/jr2-probe:0.1.0, its requests and limits, its security context), its own labels and its readiness gate"
                ),
                String::new(),
                "# a NetworkPolicy over the check pod alone".to_owned(),
                network_policy_check_only_warning("deny-preflight"),
                String::new(),
                "# a refused connect, and the policies that deny the check pod that destination".to_owned(),
                "error: provider preflight failed for model \"vllm/qwen\" against 10.0.0.7:8000 (from a pod on node n1, as a Turn calls it): connection refused".to_owned(),
                network_policy_denies(&["deny-egress".to_owned()], "10.0.0.7:8000", true, "app.kubernetes.io/name=jr2-provider-preflight"),
                network_policy_denies(&["deny-preflight".to_owned(), "deny-more".to_owned()], "10.0.0.7:8000", false, "app.kubernetes.io/name=jr2-provider-preflight"),
                String::new(),
                "# their next actions (the verdict's nextAction)".to_owned(),
                network_policy_next_action(&["deny-egress".to_owned()], "10.0.0.7:8000", true, "app.kubernetes.io/name=jr2-provider-preflight"),
                network_policy_next_action(&["deny-preflight".to_owned()], "10.0.0.7:8000", false, "app.kubernetes.io/name=jr2-provider-preflight"),
                network_policy_next_action(&["deny-preflight".to_owned(), "deny-more".to_owned()], "10.0.0.7:8000", false, "app.kubernetes.io/name=jr2-provider-preflight"),
            ]
            .join("\n")
        );
    }
}
