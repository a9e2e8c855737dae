//! The real scheduler's reasons, as the driver's pending line and its timeout verdict carry them: a nodeSelector
//! no node matches, a taint the pod does not tolerate, and not enough CPU. The tainted node is a Node object of its
//! own (no kubelet: the scheduler only weighs it), always tainted `jr2.test/fake: NoSchedule` so no other test's pod
//! lands on it.

use serde_json::json;

use crate::harness::*;

/// A second Node, for scheduling only: labelled `jr2.test/pool=tainted`, tainted with `jr2.test/dedicated=gpu`
/// (1.35's scheduler words it `1 node(s) had untolerated taint(s)`, without the key).
fn tainted_node() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "jr2-fake-tainted", "labels": {"jr2.test/pool": "tainted", "kubernetes.io/hostname": "jr2-fake-tainted"}},
            "spec": {"taints": [{"key": "jr2.test/dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        });
        env().cluster.kubectl_stdin(&["apply", "-f", "-"], &node.to_string());
    });
}

/// Runs a plan whose check pod cannot be scheduled; returns the run (exit 1 at `--timeout`) and its pending lines.
fn unschedulable(ns: &str, spec: serde_json::Value) -> (DriverRun, Vec<String>) {
    let run = run_plan(
        &plan(ns, &[("sandbox", spec, &["ok"])]),
        &["--timeout", "15s"],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let pending = run
        .lines()
        .iter()
        .filter(|l| l.starts_with(PENDING))
        .map(|l| l.to_string())
        .collect();
    assert_no_pod_left(ns);
    (run, pending)
}

#[test]
fn a_node_selector_no_node_matches() {
    let _g = shared();
    let ns = namespace("rc-selector", &[]);
    let mut spec = harness_spec();
    spec["nodeSelector"] = json!({"jr2.test/pool": "nowhere"});
    let (run, pending) = unschedulable(&ns, spec);
    assert!(
        pending.iter().any(|l| l.contains("Unschedulable")
            && l.contains("didn't match Pod's node affinity/selector")),
        "the real scheduler's words: {}",
        run.stderr
    );
}

#[test]
fn a_taint_the_pod_does_not_tolerate() {
    let _g = shared();
    tainted_node();
    let ns = namespace("rc-taint", &[]);
    let mut spec = harness_spec();
    spec["nodeSelector"] = json!({"jr2.test/pool": "tainted"});
    let (run, pending) = unschedulable(&ns, spec);
    assert!(
        pending
            .iter()
            .any(|l| l.contains("1 node(s) had untolerated taint")),
        "the real scheduler's words: {}",
        run.stderr
    );
}

#[test]
fn not_enough_cpu() {
    let _g = shared();
    let ns = namespace("rc-cpu", &[]);
    let mut spec = harness_spec();
    // The Custodian keeps its resources in the check pod: a request no node can hold.
    spec["containers"][1]["resources"]["requests"]["cpu"] = json!("64");
    let (run, pending) = unschedulable(&ns, spec);
    assert!(
        pending.iter().any(|l| l.contains("Insufficient cpu")),
        "the real scheduler's words: {}",
        run.stderr
    );
}
