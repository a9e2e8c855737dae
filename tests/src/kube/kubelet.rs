//! The kubelet stand-in (and the scheduler's part): a [`PodCtl`] writes a pod's status and Events as a 1.35 kubelet
//! does, and runs the real `jr2-probe` as the probe container (its args with the termination log repointed, its
//! env resolved from the spec and the Secrets a test added, its output as the log, its exit as `terminated`); the
//! [`Scenario`] of the fake says what it does with each pod created.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::pods::container_status;
use super::store::{Kind, LogBuf, LogKey, PodTimes, next_uid, rfc3339};
use super::{Inner, NODE, Scenario};

/// Under `terminationMessagePolicy: FallbackToLogsOnError`, a container that fails without a termination message
/// gets the end of its log instead: at most this many lines...
const FALLBACK_LOG_LINES: usize = 80;
/// ...and this many bytes (the kubelet's limits).
const FALLBACK_LOG_BYTES: usize = 2048;

/// The most of a termination message the kubelet keeps.
pub const TERMINATION_MESSAGE_LIMIT: usize = 4096;

/// How the kubelet stand-in runs the probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeRun {
    /// Kill the process (SIGKILL) right after its first `result` line: `OOMKilled`, exit code 137.
    pub oom_after_first_result: bool,
    /// Publish only this many of its output lines as the log (the rest is lost, as a rotated or broken log is): the
    /// driver must read the verdict from the termination message.
    pub log_lines: Option<usize>,
}

/// What a pod's probe process did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeExit {
    /// The container's exit code (137 when killed).
    pub exit_code: i32,
    /// The termination message.
    pub message: String,
    /// It was OOM-killed by the stand-in.
    pub oom_killed: bool,
}

/// A handle on one pod, as the kubelet stand-in (or a test's [`Script`](super::Script)) drives it: every method
/// writes the pod's status or an Event as a 1.35 kubelet would, and wakes the watchers.
#[derive(Clone)]
pub struct PodCtl {
    inner: Arc<Inner>,
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

    fn image(&self, container: &str) -> String {
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

    fn times(&self, f: impl FnOnce(&mut PodTimes)) {
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
        for s in &sidecars {
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
        for s in self.sidecars() {
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

    fn started_events(&self, container: &str) {
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

    /// Runs the real probe as the probe container: the pod's args (the termination log in a temporary file) and
    /// env (the node's name for a `spec.nodeName` fieldRef), its stdout and stderr lines as the log as they come;
    /// then the container's `terminated` status, the pod's phase, and the sidecars stopped. See [`ProbeRun`] for an
    /// OOM kill and a lost log.
    pub async fn run_probe(&self, how: ProbeRun) -> ProbeExit {
        let spec = self.container_spec("probe").cloned().unwrap_or(Value::Null);
        let term = std::env::temp_dir().join(format!(
            "jr2-fake-kube-{}-{}-{}.termination-log",
            std::process::id(),
            self.name,
            self.uid
        ));
        let _ = std::fs::remove_file(&term);
        let args = probe_args(&spec, &term);
        let env = self.probe_env(&spec);
        let mut cmd = tokio::process::Command::new(&self.inner.probe_bin);
        cmd.args(&args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started_at = rfc3339(SystemTime::now());
        self.started_events("probe");
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let message = format!(
                    "failed to create containerd task: failed to start {}: {e}",
                    self.inner.probe_bin.display()
                );
                self.terminated("probe", "StartError", 128, &message, &started_at);
                self.finish();
                return ProbeExit {
                    exit_code: 128,
                    message,
                    oom_killed: false,
                };
            }
        };
        self.open_log("probe");
        self.times(|t| t.probe_started = Some(Instant::now()));
        let now = rfc3339(SystemTime::now());
        self.container("probe", json!({"running": {"startedAt": started_at}}), true);
        self.update(|pod| {
            pod["status"]["phase"] = json!("Running");
            pod["status"]["podIP"] = json!("10.244.1.23");
            pod["status"]["podIPs"] = json!([{"ip": "10.244.1.23"}]);
            set_condition(pod, "Ready", "True", None, None, &now);
            set_condition(pod, "ContainersReady", "True", None, None, &now);
        });

        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let published = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        // The container's output as the kubelet keeps it (a lost log is the driver's stream, not the node's file):
        // the end of it becomes the termination message under `FallbackToLogsOnError`.
        let tail: Arc<std::sync::Mutex<std::collections::VecDeque<String>>> = Arc::default();
        let publish = {
            let ctl = self.clone();
            let published = published.clone();
            let tail = tail.clone();
            move |line: &str| {
                {
                    let mut tail = tail
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    if tail.len() == FALLBACK_LOG_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line.to_owned());
                }
                let n = published.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if how.log_lines.is_none_or(|max| n < max) {
                    ctl.log_line("probe", line);
                    if line.contains("\"event\":\"summary\"") {
                        ctl.times(|t| t.probe_summary_logged = Some(Instant::now()));
                    }
                }
            }
        };
        let err_publish = publish.clone();
        let err_pump = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                err_publish(&line);
            }
        });
        let mut lines = BufReader::new(stdout).lines();
        let mut killed = false;
        while let Ok(Some(line)) = lines.next_line().await {
            let is_result = line.contains("\"event\":\"result\"");
            publish(&line);
            if how.oom_after_first_result && is_result && !killed {
                killed = true;
                let _ = child.start_kill();
            }
        }
        let status = child.wait().await;
        let _ = err_pump.await;
        self.times(|t| t.probe_exited = Some(Instant::now()));
        let message = std::fs::read(&term)
            .map(|mut b| {
                b.truncate(TERMINATION_MESSAGE_LIMIT);
                String::from_utf8_lossy(&b).into_owned()
            })
            .unwrap_or_default();
        let _ = std::fs::remove_file(&term);
        let exit_code = if killed {
            137
        } else {
            match status {
                Ok(s) => s.code().unwrap_or(137),
                Err(_) => 137,
            }
        };
        let message = if message.is_empty()
            && exit_code != 0
            && spec["terminationMessagePolicy"] == "FallbackToLogsOnError"
        {
            let tail = tail
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let text = tail.iter().cloned().collect::<Vec<_>>().join("\n");
            let cut = text.len().saturating_sub(FALLBACK_LOG_BYTES);
            let cut = (cut..=text.len())
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(text.len());
            text[cut..].to_owned()
        } else {
            message
        };
        let reason = match (killed, exit_code) {
            (true, _) => "OOMKilled",
            (false, 0) => "Completed",
            _ => "Error",
        };
        // The container's output ends with it; the kubelet's status update follows.
        self.close_log("probe");
        self.terminated("probe", reason, exit_code, &message, &started_at);
        self.finish();
        ProbeExit {
            exit_code,
            message,
            oom_killed: killed,
        }
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
    fn finish(&self) {
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

    /// The probe container's env as the kubelet resolves it, for this test process: literal values, the downward
    /// API's pod fields; Secret, ConfigMap and resource references are left out (`envFrom` too).
    fn probe_env(&self, spec: &Value) -> Vec<(String, String)> {
        let secrets = self.inner.lock().secrets.clone();
        let secret =
            |name: &Value| secrets.get(&(self.namespace.clone(), name.as_str()?.to_owned()));
        // As a kubelet: `envFrom` first (each key of the Secret, with its prefix), then `env`, which wins.
        let mut env = Vec::new();
        for from in spec["envFrom"].as_array().into_iter().flatten() {
            let prefix = from["prefix"].as_str().unwrap_or_default();
            for (k, v) in secret(&from["secretRef"]["name"]).into_iter().flatten() {
                env.push((format!("{prefix}{k}"), v.clone()));
            }
        }
        for e in spec["env"].as_array().into_iter().flatten() {
            let Some(name) = e["name"].as_str() else {
                continue;
            };
            if let Some(v) = e["value"].as_str() {
                env.push((name.to_owned(), v.to_owned()));
                continue;
            }
            if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                let v = match path {
                    "spec.nodeName" => NODE.to_owned(),
                    "metadata.name" => self.name.clone(),
                    "metadata.namespace" => self.namespace.clone(),
                    "metadata.uid" => self.uid.clone(),
                    "status.podIP" => "10.244.1.23".to_owned(),
                    "status.hostIP" => "172.18.0.3".to_owned(),
                    _ => continue,
                };
                env.push((name.to_owned(), v));
            } else if let Some(r) = e["valueFrom"].get("secretKeyRef") {
                if let Some(v) = secret(&r["name"]).and_then(|s| s.get(r["key"].as_str()?)) {
                    env.push((name.to_owned(), v.clone()));
                }
            } else if e.get("valueFrom").is_none() {
                // No value at all: the empty string. (`valueFrom` a ConfigMap or a resource: left out.)
                env.push((name.to_owned(), String::new()));
            }
        }
        env
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

fn set_condition(
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

/// The probe container's args, with `--termination-log` pointed at `term` (added when absent).
fn probe_args(spec: &Value, term: &Path) -> Vec<String> {
    let mut args: Vec<String> = spec["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    let term = term.to_string_lossy().into_owned();
    if let Some(i) = args.iter().position(|a| a == "--termination-log") {
        if i + 1 < args.len() {
            args[i + 1] = term;
        } else {
            args.push(term);
        }
    } else if let Some(a) = args
        .iter_mut()
        .find(|a| a.starts_with("--termination-log="))
    {
        *a = format!("--termination-log={term}");
    } else {
        args.push("--termination-log".to_owned());
        args.push(term);
    }
    args
}

/// Plays `scenario` on a pod just created.
pub(super) async fn kubelet(ctl: PodCtl, scenario: Scenario) {
    tokio::time::sleep(Duration::from_millis(5)).await;
    match scenario {
        Scenario::Nothing => {}
        Scenario::AllOk => {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun::default()).await;
        }
        Scenario::OomKilledAfterFirstResult => {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun {
                oom_after_first_result: true,
                log_lines: None,
            })
            .await;
        }
        Scenario::UnschedulableThenScheduled { messages, each } => {
            for m in &messages {
                ctl.unschedulable(m);
                tokio::time::sleep(each).await;
            }
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun::default()).await;
        }
        Scenario::ImagePullBackOff => {
            ctl.schedule();
            ctl.start_sidecars();
            let image = ctl.image("probe");
            let error = format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"
            );
            ctl.event(
                "Normal",
                "Pulling",
                &format!("Pulling image \"{image}\""),
                "kubelet",
            );
            // The kubelet's words (pkg/kubelet/images/image_manager.go, 1.32+): the Event says "Failed to pull
            // image", the status carries the runtime's error; the back-off's status appends the last pull error.
            let failed = format!("Failed to pull image \"{image}\": {error}");
            ctl.event("Warning", "Failed", &failed, "kubelet");
            ctl.event("Warning", "Failed", "Error: ErrImagePull", "kubelet");
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ErrImagePull", "message": error}}),
                false,
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            let back_off = format!("Back-off pulling image \"{image}\": ErrImagePull: {error}");
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ImagePullBackOff", "message": back_off}}),
                false,
            );
            loop {
                ctl.event(
                    "Normal",
                    "BackOff",
                    &format!("Back-off pulling image \"{image}\""),
                    "kubelet",
                );
                ctl.event("Warning", "Failed", "Error: ImagePullBackOff", "kubelet");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        Scenario::CreateContainerConfigError { message } => {
            ctl.schedule();
            ctl.start_sidecars();
            let image = ctl.image("probe");
            loop {
                ctl.event(
                    "Normal",
                    "Pulled",
                    &format!("Container image \"{image}\" already present on machine"),
                    "kubelet",
                );
                ctl.event("Warning", "Failed", &format!("Error: {message}"), "kubelet");
                ctl.container(
                    "probe",
                    json!({"waiting": {"reason": "CreateContainerConfigError", "message": message}}),
                    false,
                );
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        Scenario::FailedMount { volume, secret } => {
            ctl.schedule();
            let message = format!(
                "MountVolume.SetUp failed for volume \"{volume}\" : secret \"{secret}\" not found"
            );
            loop {
                ctl.event("Warning", "FailedMount", &message, "kubelet");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Scenario::Script(script) => script(ctl).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn termination_log_is_repointed() {
        let spec = json!({"args": ["run", "--termination-log", "/dev/termination-log", "--spec-json", "{}"]});
        assert_eq!(
            probe_args(&spec, Path::new("/tmp/t")),
            ["run", "--termination-log", "/tmp/t", "--spec-json", "{}"]
        );
        let spec = json!({"args": ["run", "--spec-json", "{}"]});
        assert_eq!(
            probe_args(&spec, Path::new("/tmp/t")),
            ["run", "--spec-json", "{}", "--termination-log", "/tmp/t"]
        );
    }
}
