//! An init container that admission added and that does not complete (issue 40, item 7).
//!
//! A service mesh or a secrets agent can inject a regular init container (`mesh-init`, `vault-agent-init`) into every
//! pod of a namespace. Until it completes nothing else starts (kubectl shows `Init:0/1`); when it never does, the pod
//! waits until the run's deadline or its own (`DeadlineExceeded`). A Harness pod of the placement hangs the same, so
//! failing is right, but the cause is that container: it is named, with kubectl's `Init:<done>/<all>`, rather than
//! the stop it ends in. The Custodian is a native sidecar (`restartPolicy: Always`), never such a container.

use k8s_openapi::api::core::v1::Pod;

use super::containers::{ever_started, statuses, terminated, waiting};

/// A regular init container that has not completed: its name, kubectl's `Init:<done>/<all>`, and what it does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Unfinished {
    /// The container.
    pub(super) name: String,
    /// `Init:0/1`, as kubectl shows it.
    pub(super) shown: String,
    /// What it does: `running`, `waiting (<reason>)`, `exited with code <n>`.
    pub(super) state: String,
}

/// The first regular init container (not a sidecar) of the pod that has not completed, when there is one.
pub(super) fn unfinished(pod: &Pod) -> Option<Unfinished> {
    let inits = pod.spec.as_ref()?.init_containers.as_ref()?;
    let sidecar = |name: &str| {
        inits
            .iter()
            .any(|c| c.name == name && c.restart_policy.as_deref() == Some("Always"))
    };
    let mut done = 0usize;
    let mut first: Option<Unfinished> = None;
    for c in inits {
        let status = statuses(pod, true).find(|s| s.name == c.name);
        if sidecar(&c.name) {
            done += usize::from(status.is_some_and(|s| s.started == Some(true)));
            continue;
        }
        let completed = status
            .and_then(terminated)
            .is_some_and(|t| t.exit_code == 0);
        if completed {
            done += 1;
            continue;
        }
        if first.is_none() {
            let state = match status {
                Some(s) => match (terminated(s), waiting(s)) {
                    (Some(t), _) => format!("exited with code {}", t.exit_code),
                    (None, Some((reason, _))) if !reason.is_empty() => {
                        format!("waiting ({reason})")
                    }
                    _ if ever_started(s) => "running".to_owned(),
                    _ => "not started".to_owned(),
                },
                None => "not started".to_owned(),
            };
            first = Some(Unfinished {
                name: c.name.clone(),
                shown: String::new(),
                state,
            });
        }
    }
    first.map(|u| Unfinished {
        shown: format!("Init:{done}/{}", inits.len()),
        ..u
    })
}

impl Unfinished {
    /// The message of its pending line and of its failure: the container, and what it does.
    pub(super) fn message(&self) -> String {
        format!(
            "the init container {} has not completed ({}); nothing else starts before it does",
            self.name, self.state
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(init_statuses: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {
                "initContainers": [
                    {"name": "mesh-init", "image": "mesh/init:1"},
                    {"name": "custodian", "image": "envoy", "restartPolicy": "Always"}
                ],
                "containers": [{"name": "probe", "image": "probe"}]
            },
            "status": {"phase": "Pending", "initContainerStatuses": init_statuses}
        }))
        .unwrap()
    }

    fn status(name: &str, state: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": state})
    }

    #[test]
    fn a_running_injected_init_container_is_named() {
        let p = pod(json!([
            status(
                "mesh-init",
                json!({"running": {"startedAt": "2026-12-04T18:36:41Z"}})
            ),
            status(
                "custodian",
                json!({"waiting": {"reason": "PodInitializing"}})
            )
        ]));
        let u = unfinished(&p).unwrap();
        assert_eq!(u.name, "mesh-init");
        assert_eq!(u.shown, "Init:0/2");
        assert_eq!(
            u.message(),
            "the init container mesh-init has not completed (running); nothing else starts before it does"
        );
    }

    #[test]
    fn a_completed_one_and_the_sidecar_are_not() {
        let p = pod(json!([
            status(
                "mesh-init",
                json!({"terminated": {"exitCode": 0, "reason": "Completed"}})
            ),
            status("custodian", json!({"running": {}}))
        ]));
        assert_eq!(unfinished(&p), None);
        let failed = pod(json!([status(
            "mesh-init",
            json!({"terminated": {"exitCode": 1, "reason": "Error"}})
        )]));
        assert_eq!(unfinished(&failed).unwrap().state, "exited with code 1");
    }
}
