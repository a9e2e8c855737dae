//! The handle on one pod the kubelet stand-in (or a test's [`Script`](super::scenario::Script)) drives: a
//! [`PodCtl`] writes the pod's status, its containers' statuses and logs and its Events as a 1.35 kubelet and
//! scheduler do, and wakes the watchers. Running the real probe as the probe container is `probe_run`; which of
//! these a pod goes through is `kubelet`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Value, json};

use super::shared::Inner;
use super::store::{Kind, LogBuf, LogKey, PodTimes, next_uid, rfc3339};

/// The node the kubelet stand-in schedules every pod on.
pub const NODE: &str = "kind-worker2";

/// A handle on one pod, as the kubelet stand-in (or a test's [`Script`](super::scenario::Script)) drives it: every method
/// writes the pod's status or an Event as a 1.35 kubelet would, and wakes the watchers.
#[derive(Clone)]
pub struct PodCtl {
    pub(super) inner: Arc<Inner>,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The pod's uid.
    pub uid: String,
    /// The pod as created.
    pub pod: Value,
}

impl PodCtl {
    pub(super) fn new(inner: Arc<Inner>, pod: &Value) -> Self {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Self {
            namespace: s(&pod["metadata"]["namespace"]),
            name: s(&pod["metadata"]["name"]),
            uid: s(&pod["metadata"]["uid"]),
            pod: pod.clone(),
            inner,
        }
    }

    /// The probe binary the stand-in runs.
    pub fn probe_bin(&self) -> &Path {
        &self.inner.probe_bin
    }

    /// A container of the pod's spec (`containers` or `initContainers`).
    pub fn container_spec(&self, name: &str) -> Option<&Value> {
        ["containers", "initContainers"]
            .iter()
            .filter_map(|list| self.pod["spec"][*list].as_array())
            .flatten()
            .find(|c| c["name"] == name)
    }

    /// The sidecars (`initContainers` with `restartPolicy: Always`): the Custodian.
    pub fn sidecars(&self) -> Vec<String> {
        self.pod["spec"]["initContainers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["restartPolicy"] == "Always")
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// The Custodian as a plain container (issue 36): the one of `containers` the pod's `jr2.dev/custodian-container`
    /// annotation names. Started with the sidecars, before the probe; never stopped when the probe ends (the pod
    /// does not complete: the driver deletes it).
    pub fn plain_custodian(&self) -> Option<String> {
        let name = self.pod["metadata"]["annotations"]["jr2.dev/custodian-container"].as_str()?;
        self.pod["spec"]["containers"]
            .as_array()?
            .iter()
            .any(|c| c["name"] == name && name != "probe")
            .then(|| name.to_owned())
    }

    /// The containers started before the probe: the sidecars, and a plain Custodian.
    fn started_first(&self) -> Vec<String> {
        let mut all = self.sidecars();
        all.extend(self.plain_custodian());
        all
    }

    pub(super) fn image(&self, container: &str) -> String {
        self.container_spec(container)
            .and_then(|c| c["image"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// Changes the pod as it is now (`false`: it is gone).
    pub fn update(&self, f: impl FnOnce(&mut Value)) -> bool {
        let key = (Kind::Pod, self.namespace.clone(), self.name.clone());
        self.inner.mutate(|st| {
            let Some(mut pod) = st.objects.get(&key).cloned() else {
                return false;
            };
            if pod["metadata"]["uid"] != self.uid.as_str() {
                return false;
            }
            f(&mut pod);
            st.put(Kind::Pod, pod, "MODIFIED");
            true
        })
    }

    /// Sets a pod condition (replacing one of that type).
    pub fn condition(
        &self,
        type_: &str,
        status: &str,
        reason: Option<&str>,
        message: Option<&str>,
    ) {
        let now = rfc3339(SystemTime::now());
        self.update(|pod| set_condition(pod, type_, status, reason, message, &now));
    }

    /// Sets the pod's phase.
    pub fn phase(&self, phase: &str) {
        self.update(|pod| pod["status"]["phase"] = json!(phase));
    }

    /// Sets a container's status: `state` is `{"waiting": ...}`, `{"running": ...}` or `{"terminated": ...}`.
    pub fn container(&self, name: &str, state: Value, ready: bool) {
        let image = self.image(name);
        let list = if self.pod["spec"]["initContainers"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["name"] == name))
        {
            "initContainerStatuses"
        } else {
            "containerStatuses"
        };
        let started = state.get("running").is_some();
        let id = state
            .get("waiting")
            .is_none()
            .then(|| container_id(&self.uid, name));
        self.update(|pod| {
            let mut s = json!({"name": name, "image": image, "imageID": "", "ready": ready, "started": started,
                               "restartCount": 0, "state": state});
            if let Some(id) = id {
                s["containerID"] = json!(id);
                s["imageID"] = json!(image_id(&image));
            }
            let statuses = pod["status"][list].as_array_mut();
            match statuses {
                Some(arr) => match arr.iter_mut().find(|c| c["name"] == name) {
                    Some(c) => *c = s,
                    None => arr.push(s),
                },
                None => pod["status"][list] = json!([s]),
            }
        });
    }

    /// Records an Event about this pod (a repeated one, same reason and message, counts up), from `component`
    /// (`kubelet`, `default-scheduler`).
    pub fn event(&self, type_: &str, reason: &str, message: &str, component: &str) {
        let base = self.inner.uid_base;
        let now = rfc3339(SystemTime::now());
        let pod_rv = self
            .inner
            .lock()
            .get(Kind::Pod, &self.namespace, &self.name)
            .map(|p| p["metadata"]["resourceVersion"].clone())
            .unwrap_or(Value::Null);
        self.inner.mutate(|st| {
            let existing = st
                .objects
                .iter()
                .find(|((k, ns, _), e)| {
                    *k == Kind::Event
                        && *ns == self.namespace
                        && e["involvedObject"]["uid"] == self.uid.as_str()
                        && e["reason"] == reason
                        && e["message"] == message
                })
                .map(|(_, e)| e.clone());
            match existing {
                Some(mut e) => {
                    e["count"] = json!(e["count"].as_u64().unwrap_or(1) + 1);
                    e["lastTimestamp"] = json!(now);
                    st.put(Kind::Event, e, "MODIFIED");
                }
                None => {
                    let uid = next_uid(st, base);
                    st.seq += 1;
                    let e = json!({
                        "metadata": {"name": format!("{}.{:016x}", self.name, 0x1880_0000_0000_0000_u64 + st.seq),
                                     "namespace": self.namespace, "uid": uid, "creationTimestamp": now},
                        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": self.name,
                                           "namespace": self.namespace, "uid": self.uid, "resourceVersion": pod_rv},
                        "reason": reason, "message": message, "type": type_, "count": 1,
                        "firstTimestamp": now, "lastTimestamp": now,
                        "source": {"component": component, "host": if component == "kubelet" { NODE } else { "" }},
                        "reportingComponent": component,
                        "reportingInstance": if component == "kubelet" { NODE } else { "" }
                    });
                    st.put(Kind::Event, e, "ADDED");
                }
            }
        });
    }

    /// Opens a container's log (the container started): a log request is answered from now on.
    pub fn open_log(&self, container: &str) {
        let key = self.log_key(container);
        self.inner.mutate(|st| {
            st.logs.entry(key).or_default();
        });
    }

    /// Appends a line to a container's log.
    pub fn log_line(&self, container: &str, line: &str) {
        let key = self.log_key(container);
        self.inner.mutate(|st| {
            let buf = st.logs.entry(key).or_default();
            if !buf.closed {
                buf.lines.push(line.to_owned());
            }
        });
    }

    /// Ends a container's log: a followed stream ends.
    pub fn close_log(&self, container: &str) {
        let key = self.log_key(container);
        self.inner
            .mutate(|st| st.logs.entry(key).or_default().closed = true);
    }

    /// Sets a container's previous log (what `previous=true` reads), as after a restart.
    pub fn previous_log(&self, container: &str, lines: &[&str]) {
        let mut key = self.log_key(container);
        key.3 = true;
        self.inner.mutate(|st| {
            st.logs.insert(
                key,
                LogBuf {
                    lines: lines.iter().map(|l| (*l).to_owned()).collect(),
                    closed: true,
                },
            );
        });
    }

    fn log_key(&self, container: &str) -> LogKey {
        (
            self.namespace.clone(),
            self.name.clone(),
            container.to_owned(),
            false,
        )
    }

    pub(super) fn times(&self, f: impl FnOnce(&mut PodTimes)) {
        f(self
            .inner
            .lock()
            .times
            .entry(self.name.clone())
            .or_default());
    }

    /// The scheduler places the pod: `spec.nodeName`, `PodScheduled=True`, its `Scheduled` Event; the kubelet
    /// accepts it (`startTime`, the containers waiting).
    pub fn schedule(&self) {
        let now = rfc3339(SystemTime::now());
        let sidecars = self.sidecars();
        self.update(|pod| {
            pod["spec"]["nodeName"] = json!(NODE);
            set_condition(pod, "PodScheduled", "True", None, None, &now);
        });
        self.event(
            "Normal",
            "Scheduled",
            &format!(
                "Successfully assigned {}/{} to {NODE}",
                self.namespace, self.name
            ),
            "default-scheduler",
        );
        self.update(|pod| {
            let st = &mut pod["status"];
            st["hostIP"] = json!("172.18.0.3");
            st["hostIPs"] = json!([{"ip": "172.18.0.3"}]);
            st["startTime"] = json!(now);
            set_condition(pod, "PodReadyToStartContainers", "False", None, None, &now);
            set_condition(
                pod,
                "Initialized",
                if sidecars.is_empty() { "True" } else { "False" },
                (!sidecars.is_empty()).then_some("ContainersNotInitialized"),
                (!sidecars.is_empty())
                    .then(|| {
                        format!(
                            "containers with incomplete status: [{}]",
                            sidecars.join(" ")
                        )
                    })
                    .as_deref(),
                &now,
            );
            set_condition(
                pod,
                "Ready",
                "False",
                Some("ContainersNotReady"),
                Some("containers with unready status: [probe]"),
                &now,
            );
            set_condition(
                pod,
                "ContainersReady",
                "False",
                Some("ContainersNotReady"),
                Some("containers with unready status: [probe]"),
                &now,
            );
        });
        for s in &self.started_first() {
            self.container(
                s,
                json!({"waiting": {"reason": "ContainerCreating"}}),
                false,
            );
        }
        let waiting = if sidecars.is_empty() {
            "ContainerCreating"
        } else {
            "PodInitializing"
        };
        self.container("probe", json!({"waiting": {"reason": waiting}}), false);
    }

    /// The scheduler cannot place the pod: `PodScheduled=False`, `Unschedulable`, and its `FailedScheduling` Event.
    pub fn unschedulable(&self, message: &str) {
        self.condition(
            "PodScheduled",
            "False",
            Some("Unschedulable"),
            Some(message),
        );
        self.event("Warning", "FailedScheduling", message, "default-scheduler");
    }

    /// The sidecars' volumes mount and they start (`Pulled`, `Created`, `Started`), running and ready; the pod is
    /// initialized.
    pub fn start_sidecars(&self) {
        let now = rfc3339(SystemTime::now());
        self.update(|pod| {
            set_condition(pod, "PodReadyToStartContainers", "True", None, None, &now);
        });
        for s in self.started_first() {
            self.started_events(&s);
            self.open_log(&s);
            self.container(&s, json!({"running": {"startedAt": now}}), true);
        }
        self.update(|pod| set_condition(pod, "Initialized", "True", None, None, &now));
        self.container(
            "probe",
            json!({"waiting": {"reason": "ContainerCreating"}}),
            false,
        );
    }

    pub(super) fn started_events(&self, container: &str) {
        let image = self.image(container);
        self.event(
            "Normal",
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
            "kubelet",
        );
        self.event(
            "Normal",
            "Created",
            &format!("Created container: {container}"),
            "kubelet",
        );
        self.event(
            "Normal",
            "Started",
            &format!("Started container {container}"),
            "kubelet",
        );
    }

    /// Sets a container `terminated`.
    pub fn terminated(
        &self,
        container: &str,
        reason: &str,
        exit_code: i32,
        message: &str,
        started_at: &str,
    ) {
        let mut t = json!({"exitCode": exit_code, "reason": reason, "startedAt": started_at,
                           "finishedAt": rfc3339(SystemTime::now())});
        if !message.is_empty() {
            t["message"] = json!(message);
        }
        let phase = if exit_code == 0 {
            "Succeeded"
        } else {
            "Failed"
        };
        let now = rfc3339(SystemTime::now());
        let image = self.image(container);
        let key = (Kind::Pod, self.namespace.clone(), self.name.clone());
        // One status write: the container terminated, and the pod's phase with it (restartPolicy Never; the sidecars
        // do not count).
        self.inner.mutate(|st| {
            let Some(mut pod) = st.objects.get(&key).cloned() else {
                return;
            };
            if pod["metadata"]["uid"] != self.uid.as_str() {
                return;
            }
            let s = json!({"name": container, "image": image, "imageID": image_id(&image),
                           "containerID": container_id(&self.uid, container), "ready": false, "started": false,
                           "restartCount": 0, "state": {"terminated": t}});
            match pod["status"]["containerStatuses"].as_array_mut() {
                Some(arr) => match arr.iter_mut().find(|c| c["name"] == container) {
                    Some(c) => *c = s,
                    None => arr.push(s),
                },
                None => pod["status"]["containerStatuses"] = json!([s]),
            }
            if container == "probe" {
                // Recorded before the watchers are woken.
                st.times.entry(self.name.clone()).or_default().probe_terminated = Some(Instant::now());
                pod["status"]["phase"] = json!(phase);
                set_condition(&mut pod, "Ready", "False", Some("PodCompleted"), None, &now);
                set_condition(&mut pod, "ContainersReady", "False", Some("PodCompleted"), None, &now);
            }
            st.put(Kind::Pod, pod, "MODIFIED");
        });
    }

    /// The regular containers are done: the kubelet stops the sidecars (`Killing`), and they end.
    pub(super) fn finish(&self) {
        for s in self.sidecars() {
            self.event(
                "Normal",
                "Killing",
                &format!("Stopping container {s}"),
                "kubelet",
            );
            self.close_log(&s);
            let started = self
                .inner
                .lock()
                .get(Kind::Pod, &self.namespace, &self.name)
                .and_then(|p| container_status(p, &s).cloned())
                .and_then(|c| {
                    c["state"]["running"]["startedAt"]
                        .as_str()
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            let now = rfc3339(SystemTime::now());
            self.container(
                &s,
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now}}),
                false,
            );
        }
        let now = rfc3339(SystemTime::now());
        self.update(|pod| {
            set_condition(pod, "PodReadyToStartContainers", "False", None, None, &now);
        });
    }
}

/// FNV-1a, for ids that look like the runtime's and stay the same for the same input.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.bytes().chain([0])) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn container_id(uid: &str, container: &str) -> String {
    let h = fnv(&[uid, container]);
    format!(
        "containerd://{h:016x}{:016x}{h:016x}{:016x}",
        !h,
        h.rotate_left(17)
    )
}

fn image_id(image: &str) -> String {
    let h = fnv(&[image]);
    format!(
        "{image}@sha256:{h:016x}{:016x}{h:016x}{:016x}",
        !h,
        h.rotate_left(29)
    )
}

pub(super) fn set_condition(
    pod: &mut Value,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: &str,
) {
    let mut c =
        json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    match pod["status"]["conditions"].as_array_mut() {
        Some(arr) => match arr.iter_mut().find(|x| x["type"] == type_) {
            Some(x) => {
                if x["status"] == status {
                    c["lastTransitionTime"] = x["lastTransitionTime"].clone();
                }
                *x = c;
            }
            None => arr.push(c),
        },
        None => pod["status"]["conditions"] = json!([c]),
    }
}

/// A container's status in a pod (`initContainerStatuses` or `containerStatuses`).
pub(super) fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|list| pod["status"][*list].as_array())
        .flatten()
        .find(|s| s["name"] == container)
}
