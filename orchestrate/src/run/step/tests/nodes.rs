//! The node under the check pod (issue 39), one input at a time: a node that stops answering mid-check ends the
//! check at once, naming the node and what the cluster said; a pod bound to a node that never starts it and a pod
//! that stays unschedulable where a Harness pod would preempt end at the deadline with their own lines.

use super::*;

/// The node lifecycle controller's Event on a pod of a node that stopped answering (1.35's words).
fn node_not_ready(rv: u64) -> Event {
    let mut e = k8s_event(rv, "NodeNotReady", "Warning", "Node is not ready");
    e.source = Some(k8s_openapi::api::core::v1::EventSource {
        component: Some("node-controller".to_owned()),
        host: None,
    });
    e
}

/// The pod as the node lifecycle controller leaves it: `Ready` turned `False`, the rest as the kubelet last wrote it.
fn marked_not_ready(one: &mut One) -> Box<Pod> {
    let mut pod = one.object(&running());
    let conditions = [
        ("PodScheduled", "True"),
        ("Ready", "False"),
        ("ContainersReady", "True"),
    ]
    .map(|(t, s)| serde_json::from_value(json!({"type": t, "status": s})).unwrap());
    pod.status.as_mut().unwrap().conditions = Some(conditions.to_vec());
    pod
}

/// The Node as the 1.35 node lifecycle controller leaves it once its kubelet stopped posting its status.
fn node_unknown(name: &str) -> Box<Node> {
    Box::new(
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"taints": [
                {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2026-12-06T10:00:00Z"},
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-12-06T10:00:00Z"}]},
            "status": {"conditions": [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                       "message": "Kubelet stopped posting node status."}]}
        }))
        .unwrap(),
    )
}

fn node_ready(name: &str) -> Box<Node> {
    Box::new(
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}
        }))
        .unwrap(),
    )
}

const SAID_UNKNOWN: &str =
    "Ready is Unknown: NodeStatusUnknown: Kubelet stopped posting node status.";

/// The rules of a run that may read nodes.
fn watching() -> Rules {
    Rules {
        watch_nodes: true,
        ..rules()
    }
}

/// The scheduler's words for a pod of the default priority that does not fit and finds no pod below it (1.35).
const NO_ROOM: &str = "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";

#[test]
fn a_node_that_stops_answering_ends_the_check_at_once_and_is_named() {
    let mut one = One::new(rules());
    one.begin();
    one.seen(&running());
    one.lines(&[ev_start(), ev_started(0), ev_result(0), ev_started(1)]);
    let actions = one.step(Input::Event(Box::new(node_not_ready(2000))));
    assert_eq!(actions.last(), Some(&Action::Release { keep: false }));
    assert_eq!(
        one.failure_lines(),
        [
            render::node_lost("worker-2", "NodeNotReady: Node is not ready", &[MODELS[1]]),
            render::not_checked(MODELS[2]),
        ]
    );
    assert_eq!(one.failure().code(), PodCode::NodeLost);
    let run = one.run();
    assert!(!run.ok());
    assert_eq!(run.node.as_deref(), Some("worker-2"));
    assert!(
        run.results[0].is_some(),
        "the model that passed keeps its result"
    );
}

/// The check pod's readiness gate holds its `Ready` at `False`, so the node controller marks nothing on it: the Node
/// itself, watched once the pod is bound to it, says it stopped answering, and the check ends at once.
#[test]
fn the_watched_node_gone_unknown_ends_the_check_at_once_and_is_named() {
    let mut one = One::new(watching());
    one.begin();
    let actions = one.seen(&running());
    assert_eq!(
        actions
            .iter()
            .filter(|a| matches!(a, Action::WatchNode(_)))
            .collect::<Vec<_>>(),
        [&Action::WatchNode("worker-2".to_owned())],
        "the node it is bound to, watched by name"
    );
    one.lines(&[ev_start(), ev_started(0), ev_result(0), ev_started(1)]);
    assert!(
        !one.seen(&running())
            .iter()
            .any(|a| matches!(a, Action::WatchNode(_))),
        "once"
    );
    one.step(Input::Node(node_ready("worker-2")));
    assert!(matches!(one.st.phase, Phase::Running), "a ready node");
    let actions = one.step(Input::Node(node_unknown("worker-2")));
    assert_eq!(actions.last(), Some(&Action::Release { keep: false }));
    assert_eq!(
        one.failure_lines(),
        [
            render::node_lost("worker-2", SAID_UNKNOWN, &[MODELS[1]]),
            render::not_checked(MODELS[2]),
        ]
    );
    assert_eq!(one.failure().code(), PodCode::NodeLost);
    assert_eq!(one.run().node.as_deref(), Some("worker-2"));
}

/// A pod still starting on a node that goes: named too, before any model.
#[test]
fn a_node_gone_before_the_probe_ran_is_named() {
    let mut one = One::new(watching());
    one.begin();
    one.seen(&scheduled(
        c_waiting("custodian", "ContainerCreating", None),
        c_waiting("probe", "PodInitializing", None),
    ));
    one.step(Input::Node(node_unknown("worker-2")));
    assert_eq!(
        one.failure_lines()[0],
        render::node_lost_before_any_model("worker-2", SAID_UNKNOWN)
    );
}

/// Without the permission (the pre-check warned), no node is watched: the run is as before.
#[test]
fn nodes_not_readable_are_not_watched() {
    let mut one = One::new(rules());
    one.begin();
    let actions = one.seen(&running());
    assert!(
        !actions.iter().any(|a| matches!(a, Action::WatchNode(_))),
        "{actions:?}"
    );
}

/// Without Events, the pod's own conditions say it.
#[test]
fn a_pod_marked_not_ready_by_the_node_controller_names_its_node() {
    let mut one = One::new(rules());
    one.begin();
    one.seen(&running());
    let pod = marked_not_ready(&mut one);
    one.step(Input::Seen(pod));
    let lines = one.failure_lines();
    assert_eq!(
        lines[0],
        render::node_lost(
            "worker-2",
            "the pod's Ready condition is False while its containers are ready",
            &[MODELS[0]]
        ),
        "the log named no model: the first is the one it was on"
    );
    assert_eq!(lines.len(), 3, "{lines:?}");
}

/// A node that stops answering after every result came: the check finished.
#[test]
fn a_node_lost_after_every_result_is_no_failure() {
    let mut one = One::new(rules());
    one.begin();
    one.seen(&running());
    one.lines(&[ev_start()]);
    for i in 0..3 {
        one.lines(&[ev_started(i), ev_result(i)]);
    }
    one.step(Input::Event(Box::new(node_not_ready(2000))));
    assert!(matches!(one.st.phase, Phase::Done(PodOutcome::Finished(_))));
    assert_eq!(one.releases(), [false]);
}

/// Bound to a node whose kubelet never wrote a word of it: the deadline names the node, not room.
#[test]
fn a_pod_bound_to_a_silent_node_names_the_node_at_the_deadline() {
    let mut one = One::new(rules());
    one.begin();
    let mut pod = one.object(&Stage::Created);
    pod.spec.as_mut().unwrap().node_name = Some("worker-2".to_owned());
    pod.status.as_mut().unwrap().conditions = Some(vec![
        serde_json::from_value(json!({"type": "PodScheduled", "status": "True"})).unwrap(),
    ]);
    one.step(Input::Seen(pod));
    assert!(one.pending_lines().is_empty(), "progress, no line");
    one.step(Input::Deadline);
    assert_eq!(
        one.failure_lines(),
        [render::node_did_not_start("20", "worker-2")]
    );
    assert_eq!(one.failure().code(), PodCode::NodeLost);
    // Once the kubelet wrote of it, the last reason is the kubelet's, as before.
    let mut one = One::new(rules());
    one.begin();
    one.seen(&scheduled(
        c_waiting("custodian", "ContainerCreating", None),
        c_waiting("probe", "PodInitializing", None),
    ));
    one.step(Input::Deadline);
    assert!(matches!(one.failure(), FailureKind::DidNotStart { .. }));
}

/// A placement of a high priority class on a full node: the check pod (of the default priority) waits, and at the
/// deadline the run warns that a Harness pod would preempt; its models are not checked, as a warning.
#[test]
fn unschedulable_where_a_harness_pod_would_preempt_is_a_warning() {
    let mut one = One::new(rules());
    one.posted["metadata"]["annotations"]["jr2.dev/harness-priority-class"] = json!("jr2-high");
    one.begin();
    one.seen(&Stage::Unschedulable(NO_ROOM));
    assert_eq!(
        one.pending_lines(),
        [render::pending("Unschedulable", NO_ROOM)]
    );
    one.step(Input::Deadline);
    let mut want = vec![render::would_preempt("jr2-high", "Unschedulable", NO_ROOM)];
    want.extend(MODELS.iter().map(|m| render::not_checked(m)));
    assert_eq!(one.failure_lines(), want);
    assert_eq!(one.failure().code(), PodCode::WouldPreempt);
    assert!(one.run().ok(), "a warning: the run is not failed by it");

    // The same pod of a Harness spec without a priority class: a pod that did not start, an error.
    let mut one = One::new(rules());
    one.begin();
    one.seen(&Stage::Unschedulable(NO_ROOM));
    one.step(Input::Deadline);
    assert!(matches!(one.failure(), FailureKind::DidNotStart { .. }));
    assert!(!one.run().ok());
}
