//! The probe container, as the kubelet stand-in runs it: the real `jr2-probe` as a child process, its args with
//! the termination log repointed to a temporary file, its env resolved from the spec and the Secrets a test added,
//! its stdout and stderr as the container's log as they come, and its exit as the container's `terminated` status
//! (the termination message, or the end of the log under `FallbackToLogsOnError`).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::pod_ctl::{NODE, PodCtl, set_condition};
use super::store::rfc3339;

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

/// Runs the real probe as `ctl`'s probe container: the pod's args (the termination log in a temporary file) and
/// env (the node's name for a `spec.nodeName` fieldRef), its stdout and stderr lines as the log as they come;
/// then the container's `terminated` status, the pod's phase, and the sidecars stopped. See [`ProbeRun`] for an
/// OOM kill and a lost log.
pub async fn run_probe(ctl: &PodCtl, how: ProbeRun) -> ProbeExit {
    let spec = ctl.container_spec("probe").cloned().unwrap_or(Value::Null);
    let term = std::env::temp_dir().join(format!(
        "jr2-fake-kube-{}-{}-{}.termination-log",
        std::process::id(),
        ctl.name,
        ctl.uid
    ));
    let _ = std::fs::remove_file(&term);
    let args = probe_args(&spec, &term);
    let env = probe_env(ctl, &spec);
    let mut cmd = tokio::process::Command::new(&ctl.inner.probe_bin);
    cmd.args(&args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let started_at = rfc3339(SystemTime::now());
    ctl.started_events("probe");
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let message = format!(
                "failed to create containerd task: failed to start {}: {e}",
                ctl.inner.probe_bin.display()
            );
            ctl.terminated("probe", "StartError", 128, &message, &started_at);
            ctl.finish();
            return ProbeExit {
                exit_code: 128,
                message,
                oom_killed: false,
            };
        }
    };
    ctl.open_log("probe");
    ctl.times(|t| t.probe_started = Some(Instant::now()));
    let now = rfc3339(SystemTime::now());
    ctl.container("probe", json!({"running": {"startedAt": started_at}}), true);
    ctl.update(|pod| {
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
        let ctl = ctl.clone();
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
    ctl.times(|t| t.probe_exited = Some(Instant::now()));
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
    ctl.close_log("probe");
    ctl.terminated("probe", reason, exit_code, &message, &started_at);
    ctl.finish();
    ProbeExit {
        exit_code,
        message,
        oom_killed: killed,
    }
}

/// The probe container's env as the kubelet resolves it, for this test process: literal values, the downward
/// API's pod fields; Secret, ConfigMap and resource references are left out (`envFrom` too).
fn probe_env(ctl: &PodCtl, spec: &Value) -> Vec<(String, String)> {
    let secrets = ctl.inner.lock().secrets.clone();
    let secret = |name: &Value| secrets.get(&(ctl.namespace.clone(), name.as_str()?.to_owned()));
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
            // The node's clock: the deadline is as far off as it is ahead.
            let ahead = ctl.inner.clocks().node_ahead_secs;
            let v = match v.parse::<i64>() {
                Ok(deadline) if name == "JR2_PROBE_DEADLINE" && ahead != 0 => {
                    (deadline - ahead).to_string()
                }
                _ => v.to_owned(),
            };
            env.push((name.to_owned(), v));
            continue;
        }
        if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
            let v = match path {
                "spec.nodeName" => NODE.to_owned(),
                "metadata.name" => ctl.name.clone(),
                "metadata.namespace" => ctl.namespace.clone(),
                "metadata.uid" => ctl.uid.clone(),
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
