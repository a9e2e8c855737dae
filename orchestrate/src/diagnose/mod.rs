//! Why a check pod is not running, or why it stopped: pure functions from what the cluster shows.
//!
//! The input is the Pod as last watched (its spec and status), the Events about it, and, once the driver has read it,
//! the Custodian's log. The output is a [`Diagnosis`]: pending (with the reason and message the pending line shows),
//! a start failure of the contract (section 5, "Check pod failures"), stopped, running, or finished.
//!
//! Where the reasons live (research, Part 3): a pod the scheduler cannot place has `PodScheduled=False` with the
//! scheduler's message; image and env problems are container *waiting* reasons (`ErrImagePull`, `ImagePullBackOff`,
//! `CreateContainerConfigError` with the kubelet's `secret "<name>" not found` or
//! `couldn't find key <key> in Secret <ns>/<name>`); a Secret volume that does not mount is only a `FailedMount`
//! Event (`MountVolume.SetUp failed for volume "<v>" : secret "<s>" not found`), the containers stay
//! `ContainerCreating`; the Custodian refuses a held value at start with the log line
//! `jr2.custodian refuse secret=<NAME> reason=<why>`; an OOM kill is a terminated state `OOMKilled`.
//!
//! The run is judged by the probe container's own status, never by the pod phase: the Custodian is a plain container
//! beside the probe (the pod does not complete when the probe exits) or a native sidecar (an init container with
//! `restartPolicy: Always`, whose status lives in `initContainerStatuses`).
//! Nothing here cleans text: messages are kept raw, and [`StartFailure::line`] cleans them on their way to a line.

use k8s_openapi::api::core::v1::{Event, Pod};

use crate::pod::PROBE_CONTAINER;

mod containers;
mod failure;
mod init;
mod kubelet;
mod node;

pub use containers::{
    CUSTODIAN_CONTAINER, CustodianLogRequest, custodian_log_request, custodian_spec, memory_limit,
    node_name, probe_status,
};
use containers::{
    custodian_is_plain, custodian_status, custodian_volumes, ever_started, is_oom, is_oom_of,
    last_terminated, running, terminated, waiting,
};
pub use failure::StartFailure;
use failure::{volume_secret, waiting_failure};
pub use kubelet::{
    CUSTODIAN_REFUSE, NON_BLOCKING_WARNINGS, custodian_refusal, event_source, failed_mount,
    missing_key, missing_secret, tells_why_it_waits,
};
use kubelet::{
    events_of, failed_pull, from_kubelet, mount_failure_is_fatal, of_other_volumes,
    unmounted_volumes, volume_names,
};
pub use node::{NODE_NOT_READY, node_down, node_lost, silent_node};

/// What the check pod's state says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnosis {
    /// Not running yet, for a reason a person can act on (`Unschedulable` and the scheduler's message, a mount that
    /// fails, a pull that fails and is retried): the pending line.
    Pending {
        /// The reason, as the cluster writes it.
        reason: String,
        /// The message, raw (the pending line cleans it).
        message: String,
    },
    /// Not running yet, and nothing to act on: the scheduler has not placed it, the node pulls the image or creates
    /// the containers, the Custodian starts. No line; the last word is kept for a pod that does not start in time.
    Starting {
        /// The reason, as the cluster writes it (`Pending`, `ContainerCreating`, `PodInitializing`).
        reason: String,
        /// What it does meanwhile, raw.
        message: String,
    },
    /// One of the contract's start failures.
    CannotStart(StartFailure),
    /// The pod stopped without the probe finishing (evicted, the pod's deadline, deleted).
    Stopped {
        /// What the stopped line says between its parentheses, raw.
        reason: String,
    },
    /// The probe container runs.
    Running,
    /// The probe container terminated (not by an OOM kill).
    Finished {
        /// Its exit code: 0 or 1 when the probe wrote its verdict.
        exit_code: i32,
        /// The termination message (the probe's compact summary), when there is one.
        message: Option<String>,
        /// What the stopped line says when no verdict can be read: the pod's own reason when it failed
        /// (`DeadlineExceeded: ...`), else the container's (`Error, exit code 2`).
        stop_reason: String,
    },
}

fn condition<'a>(
    pod: &'a Pod,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

fn with_message(reason: &str, message: Option<&str>) -> String {
    match message.map(str::trim) {
        Some(m) if !m.is_empty() => format!("{reason}: {m}"),
        _ => reason.to_owned(),
    }
}

/// Why the pod stopped, from the pod itself: its `reason` when it failed (`DeadlineExceeded`, `Evicted`...), a
/// `DisruptionTarget` condition, or its deletion.
fn pod_stop_reason(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref();
    if status.and_then(|s| s.phase.as_deref()) == Some("Failed") {
        let reason = status.and_then(|s| s.reason.as_deref()).unwrap_or("Failed");
        return Some(with_message(
            reason,
            status.and_then(|s| s.message.as_deref()),
        ));
    }
    if let Some(c) = condition(pod, "DisruptionTarget").filter(|c| c.status == "True") {
        return Some(with_message(
            c.reason.as_deref().unwrap_or("DisruptionTarget"),
            c.message.as_deref(),
        ));
    }
    pod.metadata
        .deletion_timestamp
        .is_some()
        .then(|| "the pod was deleted".to_owned())
}

/// What the pod's state says, judged by the probe container's own status.
///
/// `custodian_log` is the Custodian's log once the driver has read it (see [`custodian_log_request`]); `None` while
/// it has not.
pub fn diagnose(pod: &Pod, events: &[Event], custodian_log: Option<&[String]>) -> Diagnosis {
    let events: Vec<&Event> = events_of(pod, events).collect();
    let probe = probe_status(pod);
    let custodian = custodian_status(pod);
    let probe_started = probe.is_some_and(ever_started);

    // 1. A Custodian that refused a held value: whatever the probe did after, it went through no Custodian.
    if let Some((name, reason)) = custodian_log.and_then(custodian_refusal) {
        return Diagnosis::CannotStart(StartFailure::CustodianRefused { name, reason });
    }

    // 2. The probe terminated: by an OOM kill, or with its exit code (0 or 1 when it wrote a verdict).
    if let Some(t) = probe.and_then(terminated) {
        if is_oom(t) {
            return Diagnosis::CannotStart(StartFailure::OutOfMemory {
                container: PROBE_CONTAINER.to_owned(),
                limit: memory_limit(pod, PROBE_CONTAINER),
            });
        }
        let own = format!(
            "{}, exit code {}",
            t.reason.as_deref().unwrap_or("Error"),
            t.exit_code
        );
        // A pod that failed only because its probe exited says nothing the container's own reason does not.
        let pod_reason = pod_stop_reason(pod).filter(|r| r != "Failed");
        return Diagnosis::Finished {
            exit_code: t.exit_code,
            message: t.message.clone().filter(|m| !m.trim().is_empty()),
            stop_reason: pod_reason.unwrap_or(own),
        };
    }

    // 3. The pod failed, or is being deleted, before the probe ended; when it failed with an init container that
    //    never completed (one admission injected), that container is the cause (issue 40, item 7).
    if let Some(reason) = pod_stop_reason(pod) {
        let failed = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Failed");
        if failed
            && !probe_started
            && let Some(u) = init::unfinished(pod)
        {
            return Diagnosis::CannotStart(StartFailure::Other {
                message: format!("{}; the pod stopped: {reason}", u.message()),
                container: u.name,
                reason: u.shown,
            });
        }
        return Diagnosis::Stopped { reason };
    }

    // 4. The Custodian ran out of memory before the probe could start; or it is down after an OOM kill while the
    // probe runs (the kubelet starts the probe once it has seen the sidecar run, which can be just before the kill:
    // the step says whether the check had begun).
    if let Some(c) = custodian
        && (!probe_started || !running(c))
        && terminated(c)
            .or(last_terminated(c))
            .is_some_and(|t| is_oom_of(pod, &c.name, t))
    {
        return Diagnosis::CannotStart(StartFailure::OutOfMemory {
            container: c.name.clone(),
            limit: memory_limit(pod, &c.name),
        });
    }

    // 4b. A plain Custodian that exited (and did not say it refused a held value), whenever it did so before the
    //     probe ended: the kubelet starts the probe beside it and never restarts it, so the probe's own errors would
    //     only say that its proxy is gone (issue 36).
    if custodian_is_plain(pod)
        && let Some(c) = custodian
        && let Some(d) = custodian_exited(c, custodian_log)
    {
        return d;
    }

    // 5. The probe runs.
    if probe.is_some_and(running) {
        return Diagnosis::Running;
    }

    // 6. Not scheduled.
    if let Some(c) = condition(pod, "PodScheduled").filter(|c| c.status == "False") {
        return Diagnosis::Pending {
            reason: c
                .reason
                .clone()
                .unwrap_or_else(|| "Unschedulable".to_owned()),
            message: c.message.clone().unwrap_or_default(),
        };
    }
    if node_name(pod).is_none() {
        return Diagnosis::Starting {
            reason: "Pending".to_owned(),
            message: "waiting for the scheduler".to_owned(),
        };
    }

    // 7. Waiting reasons: the Custodian's (it starts first), then the probe's.
    for s in custodian.into_iter().chain(probe) {
        if let Some(f) = waiting_failure(pod, s, &events) {
            return Diagnosis::CannotStart(f);
        }
    }

    // 8. A Custodian that exits at start (and did not say it refused a held value).
    if !probe_started
        && let Some(c) = custodian
        && let Some(d) = custodian_exited(c, custodian_log)
    {
        return d;
    }

    // 9. Volumes: only Events say why one does not mount. Every volume mounts before any container starts.
    let any_started = probe_started || custodian.is_some_and(ever_started);
    if !any_started {
        let custodian_volumes = custodian_volumes(pod);
        let volumes = volume_names(pod);
        // The kubelet's FailedMount only, of a volume the pod has (issue 40, item 10).
        for e in events
            .iter()
            .rev()
            .filter(|e| e.reason.as_deref() == Some("FailedMount") && from_kubelet(e))
        {
            let message = e.message.as_deref().unwrap_or("");
            if let Some((volume, rest)) = failed_mount(message)
                && volumes.contains(&volume)
                && mount_failure_is_fatal(rest)
            {
                return Diagnosis::CannotStart(if custodian_volumes.contains(&volume) {
                    StartFailure::CustodianVolume {
                        volume: volume.to_owned(),
                        name: volume_secret(pod, volume, rest),
                        message: message.to_owned(),
                    }
                } else {
                    StartFailure::Other {
                        container: String::new(),
                        reason: "FailedMount".to_owned(),
                        message: message.to_owned(),
                    }
                });
            }
            if let Some(volume) = unmounted_volumes(message)
                .into_iter()
                .find(|v| custodian_volumes.contains(v))
            {
                return Diagnosis::CannotStart(StartFailure::CustodianVolume {
                    volume: volume.to_owned(),
                    name: volume_secret(pod, volume, ""),
                    message: message.to_owned(),
                });
            }
        }
        // A warning the kubelet keeps repeating (a mount not ready yet, a sandbox it cannot create); a mount of a
        // volume the pod does not have is not why it waits (issue 40, item 10: on the real cluster, such an Event
        // became the pending line).
        if let Some(e) = events.iter().rev().find(|e| {
            matches!(
                e.reason.as_deref(),
                Some("FailedMount" | "FailedCreatePodSandBox" | "FailedAttachVolume")
            ) && from_kubelet(e)
                && !of_other_volumes(e.message.as_deref().unwrap_or(""), &volumes)
        }) && events.last().is_some_and(|last| std::ptr::eq(*last, *e))
        {
            return Diagnosis::Pending {
                reason: e.reason.clone().unwrap_or_default(),
                message: e.message.clone().unwrap_or_default(),
            };
        }
    }

    // 10. An init container (one admission injected) that has not completed: nothing else starts before it does.
    //     Said as the last reason, for a pod that does not start in time (issue 40, item 7).
    if !probe_started && let Some(u) = init::unfinished(pod) {
        return Diagnosis::Starting {
            message: u.message(),
            reason: u.shown,
        };
    }

    // 11. Still being created: the waiting reason, with the kubelet's latest word when the status has none.
    let (reason, message) = custodian
        .filter(|c| !ever_started(c))
        .and_then(waiting)
        .or_else(|| probe.and_then(waiting))
        .map(|(r, m)| (r.to_owned(), m.to_owned()))
        .unwrap_or_else(|| {
            let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
            (phase.unwrap_or_else(|| "Pending".to_owned()), String::new())
        });
    let reason = if reason.is_empty() {
        "ContainerCreating".to_owned()
    } else {
        reason
    };
    if !message.is_empty() {
        return Diagnosis::Pending { reason, message };
    }
    // A Warning says why the pod waits, while it is the latest word: a Normal lifecycle Event after it (Scheduled,
    // Pulling, Pulled, Created, Started) says the pod moved on (a FailedScheduling before the Scheduled, a pull
    // back-off before the pull that worked), so the Warning is history, not a reason to act on.
    // Only an Event of the components that start, place or make room for a pod (issue 40, item 9), and not one of
    // a volume the pod does not have (item 10).
    let volumes = volume_names(pod);
    let latest = events
        .iter()
        .rev()
        .filter(|e| {
            tells_why_it_waits(e) && !of_other_volumes(e.message.as_deref().unwrap_or(""), &volumes)
        })
        .find(|e| {
            e.type_.as_deref() == Some("Warning")
                || matches!(
                    e.reason.as_deref(),
                    Some("Scheduled" | "Pulling" | "Pulled" | "Created" | "Started")
                )
        });
    if let Some(e) = latest
        && e.type_.as_deref() == Some("Warning")
        && let Some(message) = e.message.clone().filter(|m| !m.is_empty())
    {
        // The kubelet's Event of a pull that failed, which comes before the container's state says it: said as the
        // state will (`ErrImagePull: <image>: <error>`), so the line is the same whichever comes first; its Event
        // that only names the failure (`Error: ErrImagePull`, after it) is said as the pull it follows (issue 40,
        // item 13).
        if e.reason.as_deref() == Some("Failed") && from_kubelet(e) {
            let owned = |(image, error): (&str, &str)| format!("{image}: {error}");
            let pull = failed_pull(&message).map(owned).or_else(|| {
                matches!(
                    message.as_str(),
                    "Error: ErrImagePull" | "Error: ImagePullBackOff"
                )
                .then(|| {
                    events
                        .iter()
                        .rev()
                        .filter(|x| x.reason.as_deref() == Some("Failed") && from_kubelet(x))
                        .find_map(|x| x.message.as_deref().and_then(failed_pull))
                        .map(owned)
                })
                .flatten()
            });
            if let Some(message) = pull {
                return Diagnosis::Pending {
                    reason: "ErrImagePull".to_owned(),
                    message,
                };
            }
        }
        // The Event's own reason with its message: a container state beside another Event's message
        // (`ContainerCreating: Failed to pull image...`) reads as one cause where there are two (issue 27, item 19).
        let reason = e.reason.clone().filter(|r| !r.is_empty()).unwrap_or(reason);
        return Diagnosis::Pending { reason, message };
    }
    let message = events
        .iter()
        .rev()
        .filter(|e| e.reason.as_deref() == Some("Pulling"))
        .find_map(|e| e.message.clone().filter(|m| !m.is_empty()))
        .unwrap_or_else(|| {
            match reason.as_str() {
                "ContainerCreating" => "the node creates the containers",
                "PodInitializing" => "the Custodian starts",
                _ => "the cluster gives no message",
            }
            .to_owned()
        });
    Diagnosis::Starting { reason, message }
}

/// A Custodian that exited with an error: pending until the driver has read its log, then a start failure with its
/// last line.
fn custodian_exited(
    c: &k8s_openapi::api::core::v1::ContainerStatus,
    custodian_log: Option<&[String]>,
) -> Option<Diagnosis> {
    let t = terminated(c)
        .or(last_terminated(c))
        .filter(|t| t.exit_code != 0)?;
    let code = t.exit_code;
    let reason = waiting(c)
        .map(|(r, _)| r)
        .filter(|r| !r.is_empty())
        .or(t.reason.as_deref())
        .unwrap_or("Error")
        .to_owned();
    Some(match custodian_log {
        None => Diagnosis::Pending {
            reason,
            message: format!("the Custodian ({}) exited with code {code}", c.name),
        },
        Some(lines) => {
            let last = lines.iter().rev().map(|l| l.trim()).find(|l| !l.is_empty());
            Diagnosis::CannotStart(StartFailure::Other {
                container: c.name.clone(),
                reason,
                message: match last {
                    Some(l) => format!("the Custodian ({}) exited with code {code}: {l}", c.name),
                    None => format!("the Custodian ({}) exited with code {code}", c.name),
                },
            })
        }
    })
}

#[cfg(test)]
mod tests {
    //! Realistic fixtures: statuses as a 1.35 kubelet writes them, messages as the Kubernetes source words them.

    use super::*;
    use jr2_probe::sanitize::Redactor;
    use serde_json::{Value, json};

    /// The check pod as `pod.rs` builds it: a Custodian sidecar with its projected values volume, the probe with
    /// the Harness env.
    fn spec() -> Value {
        json!({
            "nodeName": "worker-2",
            "restartPolicy": "Never",
            "initContainers": [{
                "name": "custodian", "image": "envoyproxy/envoy:distroless-v1.39.1", "restartPolicy": "Always",
                "resources": {"limits": {"memory": "64Mi"}},
                "volumeMounts": [
                    {"name": "custodian-values", "mountPath": "/etc/jr2/custodian/values"},
                    {"name": "custodian-config", "mountPath": "/etc/jr2/custodian/config"}
                ]
            }],
            "containers": [{
                "name": "probe", "image": "ghcr.io/jr2/probe:0.1.0",
                "resources": {"limits": {"memory": "64Mi"}},
                "envFrom": [{"secretRef": {"name": "harness-env"}}],
                "env": [
                    {"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"},
                    {"name": "EXTRA_TOKEN", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "token"}}}
                ],
                "volumeMounts": [{"name": "jr2-ca", "mountPath": "/etc/jr2/ca", "readOnly": true}]
            }],
            "volumes": [
                {"name": "custodian-values", "projected": {"sources": [
                    {"secret": {"name": "jr2-held-secrets", "items": [{"key": "JR2_SANDBOX_TOKEN", "path": "JR2_SANDBOX_TOKEN"}]}},
                    {"secret": {"name": "anthropic", "items": [{"key": "api-key", "path": "ANTHROPIC_API_KEY"}]}}
                ]}},
                {"name": "custodian-config", "configMap": {"name": "jr2-held"}},
                {"name": "jr2-ca", "configMap": {"name": "jr2-ca"}}
            ]
        })
    }

    fn pod(status: Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "jr2-preflight-demo-harness-abcd1234", "namespace": "demo", "uid": "u-1"},
            "spec": spec(),
            "status": status
        }))
        .unwrap()
    }

    fn unscheduled(status: Value) -> Pod {
        let mut p = pod(status);
        p.spec.as_mut().unwrap().node_name = None;
        p
    }

    fn scheduled() -> Value {
        json!({"type": "PodScheduled", "status": "True"})
    }

    fn waiting(name: &str, reason: &str, message: Option<&str>) -> Value {
        let mut w = json!({"reason": reason});
        if let Some(m) = message {
            w["message"] = json!(m);
        }
        json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": w}})
    }

    fn running(name: &str) -> Value {
        json!({"name": name, "image": "x", "imageID": "", "ready": true, "restartCount": 0, "started": true,
               "state": {"running": {"startedAt": "2026-12-04T18:36:47Z"}}})
    }

    fn terminated(name: &str, reason: &str, code: i32, message: Option<&str>) -> Value {
        let mut t = json!({"reason": reason, "exitCode": code, "startedAt": "2026-12-04T18:36:47Z",
                           "finishedAt": "2026-12-04T18:36:50Z"});
        if let Some(m) = message {
            t["message"] = json!(m);
        }
        json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": {"terminated": t}})
    }

    fn event(reason: &str, type_: &str, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "demo"},
            "involvedObject": {"kind": "Pod", "name": "jr2-preflight-demo-harness-abcd1234", "namespace": "demo", "uid": "u-1"},
            "reason": reason, "type": type_, "message": message,
            "source": {"component": "kubelet", "host": "worker-2"}
        }))
        .unwrap()
    }

    fn pending(reason: &str, message: &str) -> Diagnosis {
        Diagnosis::Pending {
            reason: reason.to_owned(),
            message: message.to_owned(),
        }
    }

    fn starting(reason: &str, message: &str) -> Diagnosis {
        Diagnosis::Starting {
            reason: reason.to_owned(),
            message: message.to_owned(),
        }
    }

    /// Unschedulable: the scheduler's condition, word for word.
    #[test]
    fn unschedulable_reads_the_pod_scheduled_condition() {
        let msg = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu, 2 Insufficient memory. no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";
        let p = unscheduled(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": msg}
        ]}));
        assert_eq!(diagnose(&p, &[], None), pending("Unschedulable", msg));
        let gated = unscheduled(json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated", "message": "Scheduling is blocked due to non-empty scheduling gates"}
        ]}));
        assert_eq!(
            diagnose(&gated, &[], None),
            pending(
                "SchedulingGated",
                "Scheduling is blocked due to non-empty scheduling gates"
            )
        );
    }

    /// Just created: no condition, no node.
    #[test]
    fn a_fresh_pod_waits_for_the_scheduler() {
        let p = unscheduled(json!({"phase": "Pending"}));
        assert_eq!(
            diagnose(&p, &[], None),
            starting("Pending", "waiting for the scheduler")
        );
    }

    /// ContainerCreating with no message takes the kubelet's latest Event: a Warning is a pending line (issue 12,
    /// item 17); the pull in progress and the lifecycle Events are progress, kept but not written.
    #[test]
    fn container_creating_says_what_the_kubelet_does() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [waiting("custodian", "ContainerCreating", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        let events = [
            event(
                "Scheduled",
                "Normal",
                "Successfully assigned demo/jr2-preflight-demo-harness-abcd1234 to worker-2",
            ),
            event(
                "Pulling",
                "Normal",
                "Pulling image \"envoyproxy/envoy:distroless-v1.39.1\"",
            ),
        ];
        assert_eq!(
            diagnose(&p, &events, None),
            starting(
                "ContainerCreating",
                "Pulling image \"envoyproxy/envoy:distroless-v1.39.1\""
            )
        );
        // A Warning that a later lifecycle Event overtook is history: no pending line.
        let old = [
            event(
                "FailedScheduling",
                "Warning",
                "0/3 nodes are available: 3 Insufficient memory.",
            ),
            events[0].clone(),
            events[1].clone(),
        ];
        assert_eq!(
            diagnose(&p, &old, None),
            starting(
                "ContainerCreating",
                "Pulling image \"envoyproxy/envoy:distroless-v1.39.1\""
            )
        );
        // A Warning that is the latest word is a reason to act on.
        let slow = event(
            "NetworkNotReady",
            "Warning",
            "network is not ready: container runtime network not ready: NetworkReady=false",
        );
        let events = [events[0].clone(), events[1].clone(), slow];
        assert_eq!(
            diagnose(&p, &events, None),
            pending(
                "NetworkNotReady",
                "network is not ready: container runtime network not ready: NetworkReady=false"
            )
        );
        // The Custodian runs; the probe waits for it.
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        assert_eq!(
            diagnose(
                &p,
                &[event("Started", "Normal", "Started container custodian")],
                None
            ),
            starting("PodInitializing", "the Custodian starts")
        );
    }

    /// Issue 40, item 13: the kubelet's `Failed` Event of a pull, before the container's state says it, is said as
    /// the state will (`ErrImagePull: <image>: <error>`); a `Failed` Event of another cause keeps its words.
    #[test]
    fn a_failed_pull_event_is_said_as_the_state_says_it() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [waiting("probe", "ContainerCreating", None)]}));
        let kubelet = |message: &str| {
            let mut e = event("Failed", "Warning", message);
            e.source = Some(k8s_openapi::api::core::v1::EventSource {
                component: Some("kubelet".to_owned()),
                host: None,
            });
            e
        };
        let failed = kubelet(
            "Failed to pull image \"registry.jr2.test/p:1\": failed to resolve reference \"registry.jr2.test/p:1\": not found",
        );
        assert_eq!(
            diagnose(&p, std::slice::from_ref(&failed), None),
            pending(
                "ErrImagePull",
                "registry.jr2.test/p:1: failed to resolve reference \"registry.jr2.test/p:1\": not found"
            )
        );
        // Its Event that only names the failure, after it (or both listed at once): the pull it follows.
        let restated = kubelet("Error: ErrImagePull");
        assert_eq!(
            diagnose(&p, &[failed.clone(), restated.clone()], None),
            diagnose(&p, std::slice::from_ref(&failed), None)
        );
        assert_eq!(
            diagnose(&p, std::slice::from_ref(&restated), None),
            pending("Failed", "Error: ErrImagePull"),
            "no pull before it"
        );
        let other = kubelet("Error: failed to reserve container name");
        assert_eq!(
            diagnose(&p, &[failed, other], None),
            pending("Failed", "Error: failed to reserve container name")
        );
    }

    /// ImagePullBackOff: the image from the spec, the pull error without the kubelet's prefix.
    #[test]
    fn image_pull_back_off_names_the_image_and_the_error() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [waiting("probe", "ImagePullBackOff",
                Some("Back-off pulling image \"ghcr.io/jr2/probe:0.1.0\": ErrImagePull: failed to pull and unpack image \"ghcr.io/jr2/probe:0.1.0\": not found"))]}));
        let d = diagnose(&p, &[], None);
        let Diagnosis::CannotStart(f) = &d else {
            panic!("{d:?}")
        };
        assert!(f.is_transient());
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — a node cannot pull ghcr.io/jr2/probe:0.1.0: ErrImagePull: failed to pull and unpack image \"ghcr.io/jr2/probe:0.1.0\": not found"
        );
        // A bare back-off (before 1.32) takes the error of the last `Failed` Event.
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "containerStatuses": [waiting("probe", "ImagePullBackOff", Some("Back-off pulling image \"ghcr.io/jr2/probe:0.1.0\""))]}));
        let events = [event(
            "Failed",
            "Warning",
            "Failed to pull image \"ghcr.io/jr2/probe:0.1.0\": rpc error: code = Unknown desc = failed to resolve reference: unexpected status: 401 Unauthorized",
        )];
        let Diagnosis::CannotStart(StartFailure::Image { message, .. }) =
            diagnose(&p, &events, None)
        else {
            panic!()
        };
        assert_eq!(
            message,
            "rpc error: code = Unknown desc = failed to resolve reference: unexpected status: 401 Unauthorized"
        );
    }

    /// An invalid name is not transient.
    #[test]
    fn invalid_image_name_is_fatal_at_once() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "containerStatuses": [waiting("probe", "InvalidImageName",
                Some("Failed to apply default image tag \"BUSYBOX\": couldn't parse image reference \"BUSYBOX\": invalid reference format: repository name must be lowercase"))]}));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert!(!f.is_transient());
    }

    /// `secret "<name>" not found` for a Secret `envFrom` names.
    #[test]
    fn missing_env_from_secret() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [waiting("probe", "CreateContainerConfigError", Some("secret \"harness-env\" not found"))]}));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — harness.envFrom names Secret \"harness-env\", which this namespace does not hold"
        );
    }

    /// `secret "<name>" not found` for a Secret only an `env` `secretKeyRef` names: the key line, with its key.
    #[test]
    fn missing_secret_of_an_env_key() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "containerStatuses": [waiting("probe", "CreateContainerConfigError", Some("secrets \"extra\" not found"))]}));
        assert_eq!(
            diagnose(&p, &[], None),
            Diagnosis::CannotStart(StartFailure::EnvKey {
                container: "probe".into(),
                key: "token".into(),
                name: "extra".into()
            })
        );
    }

    /// `couldn't find key <key> in Secret <ns>/<name>`.
    #[test]
    fn missing_key_in_env() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "containerStatuses": [waiting("probe", "CreateContainerConfigError", Some("couldn't find key token in Secret demo/extra"))]}));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — harness.env names key \"token\" of Secret \"extra\", which does not exist"
        );
    }

    /// The Custodian's volume: only a `FailedMount` Event says it; the containers stay `ContainerCreating`.
    #[test]
    fn failed_mount_of_the_custodian_volume() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled(),
                {"type": "PodReadyToStartContainers", "status": "False"}],
            "initContainerStatuses": [waiting("custodian", "ContainerCreating", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        let msg = "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found";
        let events = [
            event(
                "Scheduled",
                "Normal",
                "Successfully assigned demo/x to worker-2",
            ),
            event("FailedMount", "Warning", msg),
        ];
        let Diagnosis::CannotStart(f) = diagnose(&p, &events, None) else {
            panic!()
        };
        assert_eq!(
            f,
            StartFailure::CustodianVolume {
                volume: "custodian-values".into(),
                name: "anthropic".into(),
                message: msg.into()
            }
        );
        assert_eq!(
            f.line(&Redactor::default()),
            format!(
                "error: provider preflight: the check pod cannot start — a secrets valueFrom names Secret \"anthropic\" (or its key), so the Custodian's volume does not mount: {msg}"
            )
        );
        // A missing key: the projected source whose items name it.
        let key_msg = "MountVolume.SetUp failed for volume \"custodian-values\" : references non-existent secret key: api-key";
        let Diagnosis::CannotStart(StartFailure::CustodianVolume { name, .. }) =
            diagnose(&p, &[event("FailedMount", "Warning", key_msg)], None)
        else {
            panic!()
        };
        assert_eq!(name, "anthropic");
    }

    /// `object "<ns>"/"<name>" not registered` is the secret manager catching up: pending, not fatal.
    #[test]
    fn not_registered_is_transient() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [waiting("custodian", "ContainerCreating", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        let msg = "MountVolume.SetUp failed for volume \"custodian-values\" : object \"demo\"/\"anthropic\" not registered";
        assert_eq!(
            diagnose(&p, &[event("FailedMount", "Warning", msg)], None),
            pending("FailedMount", msg)
        );
    }

    /// Issue 40, item 10: the kubelet's FailedMount of a volume the pod does not have (an Event created through the
    /// API, as on the real cluster) is neither the pod's failure nor why it waits.
    #[test]
    fn a_failed_mount_of_a_volume_the_pod_lacks_is_not_the_pending_reason() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [waiting("custodian", "ContainerCreating", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        for msg in [
            "MountVolume.SetUp failed for volume \"vault-secrets\" : secret \"vault\" not found",
            "Unable to attach or mount volumes: unmounted volumes=[vault-secrets], unattached volumes=[vault-secrets]: timed out waiting for the condition",
        ] {
            let d = diagnose(&p, &[event("FailedMount", "Warning", msg)], None);
            assert!(
                !matches!(&d, Diagnosis::CannotStart(_))
                    && !matches!(&d, Diagnosis::Pending { reason, .. } if reason == "FailedMount"),
                "{d:?}"
            );
        }
        // The pod's own volume, not ready yet: pending on it, as before.
        let own = "MountVolume.SetUp failed for volume \"custodian-values\" : object \"demo\"/\"anthropic\" not registered";
        assert_eq!(
            diagnose(&p, &[event("FailedMount", "Warning", own)], None),
            pending("FailedMount", own)
        );
    }

    /// A FailedMount of a volume only the probe mounts (its CA) has no contract line: the generic start failure.
    #[test]
    fn failed_mount_of_another_volume() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "containerStatuses": [waiting("probe", "ContainerCreating", None)]}));
        let msg = "MountVolume.SetUp failed for volume \"jr2-ca\" : configmap \"jr2-ca\" not found";
        let Diagnosis::CannotStart(StartFailure::Other { reason, .. }) =
            diagnose(&p, &[event("FailedMount", "Warning", msg)], None)
        else {
            panic!()
        };
        assert_eq!(reason, "FailedMount");
    }

    /// The Custodian refuses a held value: its log line decides, once read.
    #[test]
    fn custodian_refusal_from_its_log() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [{"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 1,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s restarting failed container=custodian pod=jr2-preflight-demo-harness-abcd1234_demo(u-1)"}},
                "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}}],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        assert_eq!(
            custodian_log_request(&p),
            Some(CustodianLogRequest {
                container: "custodian".into(),
                previous: true,
                restart_count: 1
            })
        );
        // Before the log is read: pending, with what is known.
        assert_eq!(
            diagnose(&p, &[], None),
            pending(
                "CrashLoopBackOff",
                "the Custodian (custodian) exited with code 1"
            )
        );
        let log = vec![
            "[2026-12-04 18:36:47.120][1][info][main] [source/server/server.cc:430] initializing epoch 0".to_owned(),
            "[2026-12-04 18:36:47.311][1][critical][lua] [source/extensions/filters/common/lua/lua.cc:52] script log: jr2.custodian refuse secret=ANTHROPIC_API_KEY reason=empty-value".to_owned(),
        ];
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], Some(&log)) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — the Custodian refused the held value ANTHROPIC_API_KEY (empty-value)"
        );
        // A crash without a refusal line: the generic start failure, with the log's last word.
        let other =
            vec!["[critical][main] error initializing configuration: missing listener".to_owned()];
        let Diagnosis::CannotStart(StartFailure::Other { message, .. }) =
            diagnose(&p, &[], Some(&other))
        else {
            panic!()
        };
        assert_eq!(
            message,
            "the Custodian (custodian) exited with code 1: [critical][main] error initializing configuration: missing listener"
        );
    }

    /// The per-request refusal log line (`action=refuse`) is not a refusal at start.
    #[test]
    fn a_request_refusal_is_not_a_start_refusal() {
        let lines = [
            "jr2.custodian action=refuse target=api.anthropic.com:443 secret=ANTHROPIC_API_KEY reason=standin method=POST status=403",
        ];
        assert_eq!(custodian_refusal(&lines), None);
    }

    /// OOM of the Custodian at start, and of the probe: the container and its limit.
    #[test]
    fn out_of_memory_names_the_container_and_its_limit() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [{"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 1,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — a container ran out of memory: custodian (limit 64Mi)"
        );
        assert_eq!(custodian_log_request(&p), None);
        let p = pod(json!({"phase": "Failed", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [terminated("probe", "OOMKilled", 137, None)]}));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(f.stop_reason(), "probe ran out of memory, limit 64Mi");
    }

    /// The kubelet saw the Custodian run and started the probe, and then the Custodian was killed: down after its
    /// OOM kill, it is named while the probe runs; up again after one, the probe's run goes on.
    #[test]
    fn a_custodian_killed_after_the_probe_started_is_named() {
        let oom = json!({"terminated": {"reason": "OOMKilled", "exitCode": 137}});
        let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
            "initContainerStatuses": [{"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 1,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": oom}],
            "containerStatuses": [running("probe")]}));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — a container ran out of memory: custodian (limit 64Mi)"
        );
        let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
            "initContainerStatuses": [{"name": "custodian", "image": "x", "imageID": "", "ready": true, "restartCount": 1,
                "state": {"running": {"startedAt": "2026-12-04T18:36:50Z"}}, "lastState": oom}],
            "containerStatuses": [running("probe")]}));
        assert_eq!(diagnose(&p, &[], None), Diagnosis::Running);
    }

    /// The check pod as `pod.rs` builds it when the probe asks the Custodian's readiness itself (issue 36): the
    /// Custodian a plain container before the probe, named by the pod's annotation, its status in
    /// `containerStatuses`.
    fn plain_pod(statuses: Value) -> Pod {
        let mut p = pod(
            json!({"phase": "Running", "conditions": [scheduled()], "containerStatuses": statuses}),
        );
        let spec = p.spec.as_mut().unwrap();
        let mut c = spec.init_containers.take().unwrap().remove(0);
        c.restart_policy = None;
        spec.containers.insert(0, c);
        p.metadata.annotations = Some(
            [(
                crate::pod::ANNOTATION_CUSTODIAN.to_owned(),
                "custodian".to_owned(),
            )]
            .into(),
        );
        p
    }

    /// A plain Custodian is found in `containerStatuses`; one that exits while the probe runs (the kubelet started
    /// both in one sync, and never restarts it) is named with its exit code and last log line, not left to the
    /// probe's proxy errors; one that is OOM-killed is named with its limit; one that runs leaves the probe running.
    #[test]
    fn a_plain_custodian_that_exits_while_the_probe_runs_is_named() {
        let p = plain_pod(json!([running("custodian"), running("probe")]));
        assert!(custodian_is_plain(&p));
        assert_eq!(custodian_status(&p).unwrap().name, "custodian");
        assert_eq!(diagnose(&p, &[], None), Diagnosis::Running);
        assert_eq!(custodian_log_request(&p), None);

        let p = plain_pod(json!([
            terminated("custodian", "Error", 2, None),
            running("probe")
        ]));
        assert_eq!(
            custodian_log_request(&p),
            Some(CustodianLogRequest {
                container: "custodian".to_owned(),
                previous: false,
                restart_count: 0
            })
        );
        assert_eq!(
            diagnose(&p, &[], None),
            pending("Error", "the Custodian (custodian) exited with code 2")
        );
        let log = ["jr2-test-custodian: unknown argument \"--no-such-flag\"".to_owned()];
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], Some(&log)) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — Error: the Custodian (custodian) exited with code 2: jr2-test-custodian: unknown argument \"--no-such-flag\""
        );

        let oom = json!({"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}});
        let p = plain_pod(json!([oom, running("probe")]));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — a container ran out of memory: custodian (limit 64Mi)"
        );
        // containerd's `Error` for an OOM kill whose event it read too late (seen on the real cluster under load):
        // a SIGKILL of a container with a memory limit is the same kill.
        let late = json!({"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"reason": "Error", "exitCode": 137}}});
        let p = plain_pod(json!([late, running("probe")]));
        let Diagnosis::CannotStart(f) = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            f.line(&Redactor::default()),
            "error: provider preflight: the check pod cannot start — a container ran out of memory: custodian (limit 64Mi)"
        );

        // The probe ended first: its verdict, whatever the Custodian does after.
        let p = plain_pod(json!([
            terminated("custodian", "Error", 2, None),
            terminated("probe", "Completed", 0, Some("{}"))
        ]));
        assert!(matches!(
            diagnose(&p, &[], None),
            Diagnosis::Finished { exit_code: 0, .. }
        ));
    }

    /// Judged by the probe container, not the phase: the pod is `Running` while the sidecar lives on.
    #[test]
    fn finished_by_the_probe_container() {
        let summary =
            r#"{"schema":"jr2.dev/provider-preflight-summary/v1","ok":true,"n":1,"models":[]}"#;
        let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [terminated("probe", "Completed", 0, Some(summary))]}));
        assert_eq!(
            diagnose(&p, &[], None),
            Diagnosis::Finished {
                exit_code: 0,
                message: Some(summary.to_owned()),
                stop_reason: "Completed, exit code 0".to_owned()
            }
        );
        let p = pod(json!({"phase": "Running", "conditions": [scheduled()],
            "initContainerStatuses": [running("custodian")],
            "containerStatuses": [running("probe")]}));
        assert_eq!(diagnose(&p, &[], None), Diagnosis::Running);
    }

    /// The pod's own deadline: the kubelet kills the probe; the pod's reason is what the line says.
    #[test]
    fn deadline_exceeded_and_eviction_stop_the_pod() {
        let p = pod(json!({"phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "containerStatuses": [terminated("probe", "Error", 143, None)]}));
        let Diagnosis::Finished { stop_reason, .. } = diagnose(&p, &[], None) else {
            panic!()
        };
        assert_eq!(
            stop_reason,
            "DeadlineExceeded: Pod was active on the node longer than the specified deadline"
        );
        let p = pod(json!({"phase": "Failed", "reason": "Evicted",
            "message": "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki.",
            "containerStatuses": [running("probe")]}));
        assert_eq!(
            diagnose(&p, &[], None),
            Diagnosis::Stopped {
                reason: "Evicted: The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki.".into()
            }
        );
    }

    /// Preempted or deleted while the probe ran.
    #[test]
    fn disruption_and_deletion_stop_the_pod() {
        let mut p = pod(json!({"phase": "Running", "conditions": [scheduled(),
                {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
                 "message": "default-scheduler: preempting to accommodate a higher priority pod"}],
            "containerStatuses": [running("probe")]}));
        assert_eq!(
            diagnose(&p, &[], None),
            Diagnosis::Stopped {
                reason: "PreemptionByScheduler: default-scheduler: preempting to accommodate a higher priority pod".into()
            }
        );
        p.status.as_mut().unwrap().conditions = None;
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2026-12-04T18:36:47Z".parse().unwrap(),
        ));
        assert_eq!(
            diagnose(&p, &[], None),
            Diagnosis::Stopped {
                reason: "the pod was deleted".into()
            }
        );
    }

    /// Events of an earlier pod of the same name do not count.
    /// The kubelet's warnings that hold nothing back are never the pending reason, as the real kubelet writes them
    /// (seen on the real cluster of `orchestrate/tests/real_cluster`): the latest word stays the one before them.
    #[test]
    fn a_non_blocking_kubelet_warning_is_never_the_reason() {
        let p = pod(
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
            "initContainerStatuses": [waiting("custodian", "PodInitializing", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}),
        );
        let dns = "pod: \"jr2-preflight-x_ns(uid)\". kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy.";
        let forming = "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3";
        let pull = "Unable to retrieve some image pull secrets (jr2-registry); attempting to pull the image may not succeed.";
        for (reason, message) in [
            ("MissingClusterDNS", dns),
            ("DNSConfigForming", forming),
            ("FailedToRetrieveImagePullSecret", pull),
        ] {
            let events = [
                event("Scheduled", "Normal", "Successfully assigned ns/x to node"),
                event(reason, "Warning", message),
            ];
            assert_eq!(
                diagnose(&p, &events, None),
                starting("PodInitializing", "the Custodian starts"),
                "{reason} is no reason"
            );
        }
        // A warning that does hold the pod back still is.
        let events = [
            event(
                "FailedCreatePodSandBox",
                "Warning",
                "failed to setup network",
            ),
            event("MissingClusterDNS", "Warning", dns),
        ];
        assert_eq!(
            diagnose(&p, &events, None),
            pending("FailedCreatePodSandBox", "failed to setup network")
        );
    }

    /// Issue 40, item 10: a FailedMount from a policy engine, or about a volume the pod does not have, is not the
    /// pod's mount failing; the run goes on.
    #[test]
    fn a_failed_mount_not_the_kubelet_s_or_not_the_pod_s_does_not_end_the_run() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [waiting("custodian", "ContainerCreating", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        let msg = "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found";
        let mut audit = event("FailedMount", "Warning", msg);
        audit.source = Some(k8s_openapi::api::core::v1::EventSource {
            component: Some("kyverno-admission".into()),
            host: None,
        });
        let d = diagnose(&p, &[audit], None);
        assert!(!matches!(d, Diagnosis::CannotStart(_)), "{d:?}");
        let other = event(
            "FailedMount",
            "Warning",
            "MountVolume.SetUp failed for volume \"vault-secrets\" : secret \"vault\" not found",
        );
        let d = diagnose(&p, &[other], None);
        assert!(!matches!(d, Diagnosis::CannotStart(_)), "{d:?}");
        // The kubelet's, of the pod's own volume: the start failure, as before.
        let d = diagnose(&p, &[event("FailedMount", "Warning", msg)], None);
        assert!(
            matches!(
                d,
                Diagnosis::CannotStart(StartFailure::CustodianVolume { .. })
            ),
            "{d:?}"
        );
    }

    /// Issue 40, item 9: a policy engine's audit Warning is not why the pod waits.
    #[test]
    fn an_audit_warning_is_not_why_the_pod_waits() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "initContainerStatuses": [waiting("custodian", "ContainerCreating", None)],
            "containerStatuses": [waiting("probe", "PodInitializing", None)]}));
        let mut audit = event(
            "PolicyViolation",
            "Warning",
            "policy require-labels/check-team fail: label team is required",
        );
        audit.source = Some(k8s_openapi::api::core::v1::EventSource {
            component: Some("kyverno-admission".into()),
            host: None,
        });
        assert_eq!(
            diagnose(&p, &[audit], None),
            starting("ContainerCreating", "the node creates the containers")
        );
    }

    #[test]
    fn events_of_another_uid_are_ignored() {
        let p = pod(json!({"phase": "Pending", "conditions": [scheduled()],
            "containerStatuses": [waiting("probe", "ContainerCreating", None)]}));
        let mut old = event(
            "FailedMount",
            "Warning",
            "MountVolume.SetUp failed for volume \"custodian-values\" : secret \"anthropic\" not found",
        );
        old.involved_object.uid = Some("u-0".into());
        assert_eq!(
            diagnose(&p, &[old], None),
            starting("ContainerCreating", "the node creates the containers")
        );
    }

    #[test]
    fn parsers_take_the_upstream_wording() {
        assert_eq!(missing_secret("secret \"a\" not found"), Some("a"));
        assert_eq!(missing_secret("secrets \"b-c\" not found"), Some("b-c"));
        assert_eq!(missing_secret("configmap \"a\" not found"), None);
        assert_eq!(
            missing_key("couldn't find key API_KEY in Secret demo/keys"),
            Some(("API_KEY", "keys"))
        );
        assert_eq!(
            failed_mount("MountVolume.SetUp failed for volume \"v\" : secret \"s\" not found"),
            Some(("v", "secret \"s\" not found"))
        );
        assert_eq!(
            unmounted_volumes(
                "Unable to attach or mount volumes: unmounted volumes=[custodian-values jr2-ca], unattached volumes=[], failed to process volumes=[]: timed out waiting for the condition"
            ),
            vec!["custodian-values", "jr2-ca"]
        );
    }
}
