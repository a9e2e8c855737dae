//! The check pod's node (issue 39): a node that stopped answering while the pod was on it, and a node the pod was
//! bound to whose kubelet never wrote a word of it.
//!
//! When a node stops renewing its lease, the node lifecycle controller, once the node monitor's grace period has
//! passed (`monitorNodeHealth`, `pkg/controller/nodelifecycle`), sets the Node's `Ready` condition to `Unknown`
//! (`NodeStatusUnknown: Kubelet stopped posting node status.`) and taints it `node.kubernetes.io/unreachable`
//! (`NoSchedule`, and `NoExecute` for the taint eviction); a kubelet that still answers but says its node is not ready
//! writes `Ready=False` itself. [`node_down`] reads that off the Node the pod is bound to, which the run watches by
//! its name (`list`/`watch nodes`, optional: without them this signal is not there, and a warning said so).
//!
//! On the pod, the same controller marks every pod of the node not ready (`MarkPodsNotReady`,
//! `pkg/controller/util/node/controller_utils.go`): it sets the pod's `Ready` condition to `False` and records a
//! Warning Event `NodeNotReady` (`Node is not ready`), but only when that changes the condition. The check pod's
//! readiness gate (`jr2.dev/check-pod-never-ready`, which keeps it out of every Service's endpoints) holds `Ready` at
//! `False` for its whole life, so on a check pod neither comes: [`node_lost`] reads them still (a cluster that strips
//! the gate, a pod seen before it), but the Node is what names a lost node.

use k8s_openapi::api::core::v1::{Event, Node, Pod};

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

/// The taints the node lifecycle controller puts on a node that stopped answering, or whose kubelet says it is not
/// ready.
const NODE_DOWN_TAINTS: [&str; 2] = [
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/not-ready",
];

/// What the Node says of itself when it stopped answering (raw: the line cleans it): its `Ready` condition `Unknown`
/// or `False` (`Ready is Unknown: NodeStatusUnknown: Kubelet stopped posting node status.`), else the taint the node
/// lifecycle controller put on it (`tainted node.kubernetes.io/unreachable`). `None` while it is ready and
/// untainted (or says nothing of readiness yet).
pub fn node_down(node: &Node) -> Option<String> {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    if let Some(ready) = ready.filter(|c| c.status == "Unknown" || c.status == "False") {
        let said: Vec<&str> = [ready.reason.as_deref(), ready.message.as_deref()]
            .into_iter()
            .flatten()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        return Some(if said.is_empty() {
            format!("Ready is {}", ready.status)
        } else {
            format!("Ready is {}: {}", ready.status, said.join(": "))
        });
    }
    let taint = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .into_iter()
        .flatten()
        .find(|t| NODE_DOWN_TAINTS.contains(&t.key.as_str()))?;
    Some(format!("tainted {}:{}", taint.key, taint.effect))
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

    fn node(conditions: Value, taints: Value) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "node-b"},
            "spec": {"taints": taints},
            "status": {"conditions": conditions}
        }))
        .unwrap()
    }

    /// The Node as the 1.35 node lifecycle controller leaves it once the kubelet stopped posting its status: `Ready`
    /// `Unknown` and the unreachable taints; a kubelet's own `NotReady`; a ready node is no loss.
    #[test]
    fn a_node_not_ready_or_unreachable_is_down() {
        let unknown = json!([{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                              "message": "Kubelet stopped posting node status."}]);
        let unreachable = json!([
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2026-12-06T10:00:00Z"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-12-06T10:00:00Z"}]);
        assert_eq!(
            node_down(&node(unknown, unreachable.clone())).as_deref(),
            Some("Ready is Unknown: NodeStatusUnknown: Kubelet stopped posting node status.")
        );
        let not_ready = json!([{"type": "Ready", "status": "False", "reason": "KubeletNotReady",
                                "message": "container runtime is down"}]);
        assert_eq!(
            node_down(&node(not_ready, json!([]))).as_deref(),
            Some("Ready is False: KubeletNotReady: container runtime is down")
        );
        // The taint before the condition is seen (or a condition the watch has not shown yet).
        let ready = json!([{"type": "Ready", "status": "True", "reason": "KubeletReady"}]);
        assert_eq!(
            node_down(&node(ready.clone(), unreachable)).as_deref(),
            Some("tainted node.kubernetes.io/unreachable:NoSchedule")
        );
        let own = json!([{"key": "jr2.dev/dedicated", "value": "b", "effect": "NoSchedule"}]);
        assert_eq!(node_down(&node(ready, own)), None);
        assert_eq!(node_down(&node(json!([]), json!([]))), None);
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
