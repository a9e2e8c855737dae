//! The check pod's node, as the pod shows it (issue 39): a node that stopped answering while the pod was on it, and
//! a node the pod was bound to whose kubelet never wrote a word of it. Read off the pod and its Events only: the
//! driver does not read Node objects (no `get nodes` in its Role).
//!
//! When a node stops renewing its lease, the node lifecycle controller marks every pod on it not ready once the
//! node monitor's grace period has passed (`MarkPodsNotReady`, `pkg/controller/util/node/controller_utils.go`): it
//! sets the pod's `Ready` condition to `False`, leaving `ContainersReady` as the kubelet last wrote it, and records a
//! Warning Event `NodeNotReady` (`Node is not ready`) on the pod. The kubelet itself never writes `Ready=False`
//! beside `ContainersReady=True` (a pod with readiness gates aside, which a check pod has none of).

use k8s_openapi::api::core::v1::{Event, Pod};

use super::condition;
use super::kubelet::events_of;

/// The Event the node lifecycle controller records on each pod of a node that stopped answering.
pub const NODE_NOT_READY: &str = "NodeNotReady";

/// What the cluster said of the pod's node when it stopped answering (raw: the line cleans it): the
/// [`NODE_NOT_READY`] Event (`NodeNotReady: Node is not ready`), else the pod's `Ready` condition turned `False`
/// under containers that are ready. `None` while neither shows.
pub fn node_lost(pod: &Pod, events: &[Event]) -> Option<String> {
    if let Some(e) = events_of(pod, events).find(|e| e.reason.as_deref() == Some(NODE_NOT_READY)) {
        let message = e.message.as_deref().unwrap_or("").trim();
        return Some(if message.is_empty() {
            NODE_NOT_READY.to_owned()
        } else {
            format!("{NODE_NOT_READY}: {message}")
        });
    }
    let ready = condition(pod, "Ready")?;
    let containers_ready = condition(pod, "ContainersReady")?;
    let marked = ready.status == "False"
        && containers_ready.status == "True"
        && ready.reason.as_deref() != Some("ReadinessGatesNotReady");
    marked.then(|| "the pod's Ready condition is False while its containers are ready".to_owned())
}

/// The node a pod is bound to whose kubelet has reported nothing of it: no container status, no condition but the
/// scheduler's, no Event from a kubelet. `None` once the kubelet wrote anything, or while the pod is not bound.
pub fn silent_node<'a>(pod: &'a Pod, events: &[Event]) -> Option<&'a str> {
    let node = super::node_name(pod)?;
    let status = pod.status.as_ref();
    let statuses = status.is_some_and(|s| {
        s.container_statuses.as_ref().is_some_and(|c| !c.is_empty())
            || s.init_container_statuses
                .as_ref()
                .is_some_and(|c| !c.is_empty())
    });
    let kubelet_conditions = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ != "PodScheduled"));
    let kubelet_events = events_of(pod, events).any(|e| {
        e.source
            .as_ref()
            .and_then(|s| s.component.as_deref())
            .is_some_and(|c| c == "kubelet")
            || e.reporting_component.as_deref() == Some("kubelet")
    });
    (!statuses && !kubelet_conditions && !kubelet_events).then_some(node)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(status: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "jr2-preflight-demo-b-abcd1234", "namespace": "demo", "uid": "u-1"},
            "spec": {"nodeName": "node-b", "containers": [{"name": "probe"}]},
            "status": status
        }))
        .unwrap()
    }

    fn event(reason: &str, message: &str, component: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "demo"},
            "involvedObject": {"kind": "Pod", "name": "jr2-preflight-demo-b-abcd1234", "namespace": "demo", "uid": "u-1"},
            "reason": reason, "type": "Warning", "message": message,
            "source": {"component": component}
        }))
        .unwrap()
    }

    fn cond(type_: &str, status: &str) -> Value {
        json!({"type": type_, "status": status})
    }

    fn running() -> Value {
        json!([{"name": "probe", "image": "x", "imageID": "", "ready": true, "restartCount": 0, "started": true,
                "state": {"running": {"startedAt": "2026-12-06T10:00:00Z"}}}])
    }

    /// The node lifecycle controller's Event on the pod, as 1.35 records it.
    #[test]
    fn the_node_not_ready_event_names_the_loss() {
        let p = pod(
            json!({"phase": "Running", "conditions": [cond("Ready", "True"), cond("ContainersReady", "True")],
            "containerStatuses": running()}),
        );
        let events = [event(
            "NodeNotReady",
            "Node is not ready",
            "node-controller",
        )];
        assert_eq!(
            node_lost(&p, &events).as_deref(),
            Some("NodeNotReady: Node is not ready")
        );
        assert_eq!(node_lost(&p, &[]), None, "a pod whose node answers");
    }

    /// Without Events (not allowed to read them), the pod's conditions say it: `Ready` turned `False` by the
    /// controller, `ContainersReady` as the kubelet last wrote it.
    #[test]
    fn ready_false_under_ready_containers_names_the_loss() {
        let marked = pod(json!({"phase": "Running", "conditions": [
            cond("PodScheduled", "True"), cond("Ready", "False"), cond("ContainersReady", "True")],
            "containerStatuses": running()}));
        assert!(node_lost(&marked, &[]).is_some());
        // The kubelet's own not-ready: both False (a container not ready yet, or one that finished).
        let starting = pod(json!({"phase": "Pending", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
            {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady"}]}));
        assert_eq!(node_lost(&starting, &[]), None);
        let gated = pod(json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady"}, cond("ContainersReady", "True")]}));
        assert_eq!(node_lost(&gated, &[]), None);
    }

    /// Bound to a node whose kubelet never took the pod: the scheduler's condition and Event only.
    #[test]
    fn a_node_that_never_wrote_of_the_pod_is_silent() {
        let bound = pod(json!({"phase": "Pending", "conditions": [cond("PodScheduled", "True")]}));
        let scheduled = event(
            "Scheduled",
            "Successfully assigned demo/jr2-preflight-demo-b-abcd1234 to node-b",
            "default-scheduler",
        );
        assert_eq!(
            silent_node(&bound, std::slice::from_ref(&scheduled)),
            Some("node-b")
        );
        // The kubelet wrote a condition, a status or an Event: it has the pod.
        let taken = pod(
            json!({"phase": "Pending", "conditions": [cond("PodScheduled", "True"),
            cond("PodReadyToStartContainers", "False")]}),
        );
        assert_eq!(silent_node(&taken, &[]), None);
        let pulling = event("Pulling", "Pulling image \"x\"", "kubelet");
        assert_eq!(silent_node(&bound, &[scheduled, pulling]), None);
        let mut unbound = bound.clone();
        unbound.spec.as_mut().unwrap().node_name = None;
        assert_eq!(silent_node(&unbound, &[]), None);
    }
}
