//! The real scheduler's reasons, as the driver's pending line and its timeout verdict carry them: a nodeSelector
//! no node matches, a taint the pod does not tolerate, and not enough CPU, each said once though the scheduler says
//! it twice (its condition and its `FailedScheduling` Event, issue 40 item 13). The tainted node is a Node object of
//! its own (no kubelet: the scheduler only weighs it), always tainted `jr2.test/fake: NoSchedule` so no other test's
//! pod lands on it.

use std::time::Duration;

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
    assert_each_message_once(&run);
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

/// Issue 40, item 13: the scheduler says an unschedulable pod twice, as its `PodScheduled=False/Unschedulable`
/// condition and as a `FailedScheduling` Event of the same words; a pod placed before its `Scheduled` Event comes
/// leaves that Event the latest word about it, and the driver wrote it again under its own reason (`FailedScheduling:
/// <the same message>`). Here the pod waits for a partner pod that never comes (a required pod affinity), and the
/// test places it itself once the Event is stored (a `Binding`, as the scheduler's own: so no `Scheduled` Event ever
/// comes, the window held open; the kubelet does not weigh pod affinity). The message is said once, and the check
/// passes.
#[test]
fn the_scheduler_s_condition_and_event_are_said_once() {
    let _g = shared();
    let ns = namespace("rc-sched-once", &[]);
    let cluster = &env().cluster;
    let mut spec = harness_spec();
    spec["affinity"] = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"jr2.test/partner": ns}},
        "topologyKey": "kubernetes.io/hostname"
    }]}});
    let path = write_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]));
    let (child, started) = run_until_check_pod(As::User, &path, "90s", &ns);
    let name = cluster.pods(&ns, MANAGED)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let failed_scheduling = || -> Vec<String> {
        cluster
            .events(&ns)
            .iter()
            .filter(|e| {
                e["reason"] == "FailedScheduling" && e["involvedObject"]["name"] == name.as_str()
            })
            .filter_map(|e| e["message"].as_str().map(str::to_owned))
            .collect()
    };
    cluster.wait_for(
        "the scheduler's FailedScheduling Event",
        Duration::from_secs(30),
        || !failed_scheduling().is_empty(),
    );
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": ns},
        "target": {"apiVersion": "v1", "kind": "Node", "name": cluster.info().node_name}});
    cluster.kubectl_stdin(&["create", "-f", "-"], &binding.to_string());
    let run = finish(child, started, Duration::from_secs(120));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["ok"]);
    let pending: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with(PENDING))
        .collect();
    let message = failed_scheduling().remove(0);
    assert!(
        message.contains("didn't match pod affinity rules"),
        "the real scheduler's words: {message}"
    );
    assert_eq!(
        pending,
        [format!("{PENDING}Unschedulable: {message}")],
        "the scheduler's words once: {}",
        run.stderr
    );
    assert_each_message_once(&run);
    // The window held open: the scheduler never placed the pod.
    assert!(
        !cluster
            .events(&ns)
            .iter()
            .any(|e| e["reason"] == "Scheduled"),
        "no Scheduled Event"
    );
    assert_no_pod_left(&ns);
}
