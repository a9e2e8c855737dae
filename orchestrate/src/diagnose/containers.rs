//! Where each container of a check pod stands, read off its spec and status: the probe's and the Custodian's (the
//! container the pod's `jr2.dev/custodian-container` annotation names: a plain container, whose status lives in
//! `containerStatuses`, or a native sidecar, an init container with `restartPolicy: Always`, whose status lives in
//! `initContainerStatuses`), their states, their memory limits, and when the Custodian's log is worth reading.

use k8s_openapi::api::core::v1::{Container, ContainerStateTerminated, ContainerStatus, Pod};

use crate::pod::{ANNOTATION_CUSTODIAN, PROBE_CONTAINER};

/// The Custodian's name when the spec does not mark it (the sidecar is found by `restartPolicy: Always` first).
pub const CUSTODIAN_CONTAINER: &str = "custodian";

/// The log the driver should read from the Custodian: after it terminated with an error, to find a refusal line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustodianLogRequest {
    /// The Custodian container's name.
    pub container: String,
    /// Read the previous instance (the container restarted since it failed).
    pub previous: bool,
    /// The restart count this request is for: one read per restart.
    pub restart_count: i32,
}

/// The probe container's status.
pub fn probe_status(pod: &Pod) -> Option<&ContainerStatus> {
    statuses(pod, false).find(|s| s.name == PROBE_CONTAINER)
}

/// The node the pod runs on.
pub fn node_name(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// The Custodian's container spec: the container the pod's [`ANNOTATION_CUSTODIAN`] names (a plain container or a
/// native sidecar); on a pod without it (one of an earlier release), the native sidecar (an init container with
/// `restartPolicy: Always`), else an init container named [`CUSTODIAN_CONTAINER`].
pub fn custodian_spec(pod: &Pod) -> Option<&Container> {
    if let Some(name) = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_CUSTODIAN))
        .filter(|n| n.as_str() != PROBE_CONTAINER)
    {
        return container_spec(pod, name);
    }
    let inits = pod.spec.as_ref()?.init_containers.as_ref()?;
    inits
        .iter()
        .find(|c| c.restart_policy.as_deref() == Some("Always"))
        .or_else(|| inits.iter().find(|c| c.name == CUSTODIAN_CONTAINER))
}

/// The Custodian is a plain container: the kubelet never restarts it (the pod's `restartPolicy: Never`), and starts
/// the probe beside it without waiting for it.
pub(super) fn custodian_is_plain(pod: &Pod) -> bool {
    custodian_spec(pod).is_some_and(|c| {
        pod.spec
            .as_ref()
            .is_some_and(|s| s.containers.iter().any(|p| p.name == c.name))
    })
}

pub(super) fn custodian_status(pod: &Pod) -> Option<&ContainerStatus> {
    let name = &custodian_spec(pod)?.name;
    statuses(pod, !custodian_is_plain(pod)).find(|s| &s.name == name)
}

pub(super) fn statuses(pod: &Pod, init: bool) -> impl Iterator<Item = &ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| {
            if init {
                s.init_container_statuses.as_ref()
            } else {
                s.container_statuses.as_ref()
            }
        })
        .into_iter()
        .flatten()
}

pub(super) fn container_spec<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
        .find(|c| c.name == name)
}

pub(super) fn terminated(s: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    s.state.as_ref()?.terminated.as_ref()
}

pub(super) fn last_terminated(s: &ContainerStatus) -> Option<&ContainerStateTerminated> {
    s.last_state.as_ref()?.terminated.as_ref()
}

pub(super) fn running(s: &ContainerStatus) -> bool {
    s.state.as_ref().is_some_and(|st| st.running.is_some())
}

pub(super) fn waiting(s: &ContainerStatus) -> Option<(&str, &str)> {
    let w = s.state.as_ref()?.waiting.as_ref()?;
    Some((
        w.reason.as_deref().unwrap_or(""),
        w.message.as_deref().unwrap_or(""),
    ))
}

/// The container ever ran (it runs, or it ran and terminated): its volumes mounted.
pub(super) fn ever_started(s: &ContainerStatus) -> bool {
    running(s) || terminated(s).is_some() || last_terminated(s).is_some()
}

pub(super) fn is_oom(t: &ContainerStateTerminated) -> bool {
    t.reason.as_deref() == Some("OOMKilled")
}

/// An OOM kill of `container` of `pod`: the runtime's `OOMKilled`, or a SIGKILL (exit code 137, reason `Error`) of a
/// container that has a memory limit. containerd says `Error` when the process is gone before it has read the
/// cgroup's OOM event: seen on the real cluster under load, for a Custodian over its 32Mi. Read for the Custodian only,
/// after the pod's own stop (a deletion or its deadline) was ruled out: the probe's verdict comes first, and a kill
/// at a stop can end in a SIGKILL too.
pub(super) fn is_oom_of(pod: &Pod, container: &str, t: &ContainerStateTerminated) -> bool {
    is_oom(t)
        || (t.exit_code == 137
            && t.reason.as_deref().is_none_or(|r| r == "Error")
            && memory_limit(pod, container) != "none")
}

/// The memory limit of a container, as its spec writes it, or `none`.
pub fn memory_limit(pod: &Pod, container: &str) -> String {
    container_spec(pod, container)
        .and_then(|c| c.resources.as_ref()?.limits.as_ref()?.get("memory"))
        .map_or_else(|| "none".to_owned(), |q| q.0.clone())
}

/// Whether the driver should read the Custodian's log now: it terminated with an error (or restarted after one),
/// and its log may hold a refusal line. `None` when there is nothing to read.
pub fn custodian_log_request(pod: &Pod) -> Option<CustodianLogRequest> {
    let status = custodian_status(pod)?;
    let failed =
        |t: &ContainerStateTerminated| t.exit_code != 0 && !is_oom_of(pod, &status.name, t);
    let previous = match (terminated(status), last_terminated(status)) {
        (Some(t), _) if failed(t) => false,
        (None, Some(t)) if failed(t) => true,
        _ => return None,
    };
    Some(CustodianLogRequest {
        container: status.name.clone(),
        previous,
        restart_count: status.restart_count,
    })
}

/// The Custodian's volumes: the volumes its container mounts.
pub(super) fn custodian_volumes(pod: &Pod) -> Vec<&str> {
    custodian_spec(pod)
        .and_then(|c| c.volume_mounts.as_ref())
        .into_iter()
        .flatten()
        .map(|m| m.name.as_str())
        .collect()
}
