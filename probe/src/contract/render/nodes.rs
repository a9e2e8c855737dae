//! The lines of a check pod and its node (issue 39): a node that stops answering while the check runs on it, a node
//! the pod was bound to that never starts it, and a placement whose Harness pods would evict others to run, which
//! the check pod never does. Every argument that came from the cluster arrives already sanitized.

/// The pod's node stopped answering while the probe was on `models`:
/// `error: provider preflight: the check pod's node <node> stopped answering (<what the cluster said>) while the
/// check was on model "<model>"`.
pub fn node_lost(node: &str, said: &str, models: &[&str]) -> String {
    let named: Vec<String> = models.iter().map(|m| format!("\"{m}\"")).collect();
    let which = if models.len() == 1 { "model" } else { "models" };
    format!(
        "error: provider preflight: the check pod's node {node} stopped answering ({said}) while the check was on {which} {}",
        named.join(", ")
    )
}

/// [`node_lost`] before the probe had started a model:
/// `error: provider preflight: the check pod's node <node> stopped answering (<said>) before any model was checked`.
pub fn node_lost_before_any_model(node: &str, said: &str) -> String {
    format!(
        "error: provider preflight: the check pod's node {node} stopped answering ({said}) before any model was checked"
    )
}

/// The pod was bound to a node whose kubelet never wrote a word of it:
/// `error: provider preflight: the check pod did not start in <s> s — it was scheduled to node <node>, which has not
/// started it (its kubelet reported nothing of the pod)`.
pub fn node_did_not_start(seconds: &str, node: &str) -> String {
    format!(
        "error: provider preflight: the check pod did not start in {seconds} s — it was scheduled to node {node}, which has not started it (its kubelet reported nothing of the pod)"
    )
}

/// The check pod stayed unschedulable where a Harness pod of the placement would preempt to run (the check pod
/// takes no priority class, so it never does): `warning: provider: the check pod could not run without evicting another pod — a
/// Harness pod of priority class "<class>" would preempt pods of lower priority to run, and the check pod never does
/// (<Reason>: <message>)`, followed by a `  not checked: <model>` line per model.
pub fn would_preempt(class: &str, reason: &str, message: &str) -> String {
    format!(
        "warning: provider: the check pod could not run without evicting another pod — a Harness pod of priority class \"{class}\" would preempt pods of lower priority to run, and the check pod never does ({reason}: {message})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::render::{not_checked, placement_detail};

    #[test]
    fn node_lines() {
        let said = "Ready is Unknown: NodeStatusUnknown: Kubelet stopped posting node status.";
        let lines = [
            "# node lost, one model in flight (the Node, watched)".to_owned(),
            node_lost("node-b", said, &["vllm/ok-delay-30000"]),
            not_checked("vllm/ok"),
            "# node lost, two models in flight, two placements (the pod's Event)".to_owned(),
            node_lost(
                "node-b",
                "NodeNotReady: Node is not ready",
                &["vllm/a", "vllm/b"],
            ),
            placement_detail("pool-b", Some("node-b")),
            "# node lost before any model".to_owned(),
            node_lost_before_any_model("node-b", said),
            not_checked("vllm/ok"),
            "# bound to a node that never started it".to_owned(),
            node_did_not_start("25", "node-b"),
            "# would preempt".to_owned(),
            would_preempt(
                "jr2-high",
                "Unschedulable",
                "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.",
            ),
            not_checked("vllm/ok"),
        ];
        insta::assert_snapshot!(lines.join("\n"));
    }
}
