//! The figure users care about, on the real cluster: the whole preflight (create → verdict → pod deleted) for 1, 4
//! and 16 models on 1 and 2 placements; beside it, in the same run, jr2's current design (one `kubectl run --rm` of
//! the probe per model, in sequence, with kubectl from the same build) and the floors this cluster sets: a bare pod of
//! the probe image, and the check pod itself as the driver's dry run writes it (the probe with the Custodian as a
//! native sidecar, which the kubelet starts first), each from create to the probe's first log line, with no driver. Where the time goes comes from a pod watch the bench keeps
//! open (kubectl, in the cluster's namespace): created, scheduled, sandbox ready, probe started, probe ended, gone.
//!
//! A benchmark, not a test: it prints medians and ratios and asserts only that every run passed.
//!
//! ```sh
//! cargo test -p jr2-preflight --test cluster_bench     # tests/run.sh's `cluster-bench` step
//! ```

#[path = "harness.rs"]
#[allow(dead_code)]
mod harness;

/// The bench's cluster has one node.
pub const NODES: usize = 1;

use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use harness::*;

const REPS: usize = 3;

/// One pod's moments, as the watch saw them (since the bench's start).
#[derive(Default, Clone, Debug)]
struct Moments {
    created: Option<Duration>,
    scheduled: Option<Duration>,
    sandbox: Option<Duration>,
    started: Option<Duration>,
    ended: Option<Duration>,
    gone: Option<Duration>,
}

type Seen = Arc<Mutex<BTreeMap<String, Moments>>>;

/// kubectl as the admin, inside the cluster's namespace.
fn admin_kubectl() -> std::process::Command {
    let env = env();
    let mut cmd = env.cluster.command(env.cluster.info().bin.join("kubectl"));
    cmd.arg(format!(
        "--kubeconfig={}",
        env.cluster.info().admin_kubeconfig.display()
    ));
    cmd
}

/// A watch of the namespace's pods: each event's arrival time, per pod.
fn watch(ns: &str, t0: Instant) -> (std::process::Child, Seen) {
    let mut child = admin_kubectl()
        .args([
            "-n",
            ns,
            "get",
            "pods",
            "--watch",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get pods --watch");
    let seen: Seen = Arc::default();
    let out = child.stdout.take().unwrap();
    let s = seen.clone();
    std::thread::spawn(move || {
        for ev in serde_json::Deserializer::from_reader(BufReader::new(out)).into_iter::<Value>() {
            let Ok(ev) = ev else { return };
            let at = t0.elapsed();
            let pod = &ev["object"];
            let name = pod["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let mut map = s.lock().unwrap();
            let m = map.entry(name).or_default();
            m.created.get_or_insert(at);
            if !pod["spec"]["nodeName"].is_null() {
                m.scheduled.get_or_insert(at);
            }
            let ready = pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "PodReadyToStartContainers" && c["status"] == "True");
            if ready {
                m.sandbox.get_or_insert(at);
            }
            for c in pod["status"]["containerStatuses"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if !c["state"]["running"].is_null() || !c["state"]["terminated"].is_null() {
                    m.started.get_or_insert(at);
                }
                if !c["state"]["terminated"].is_null() {
                    m.ended.get_or_insert(at);
                }
            }
            if ev["type"] == "DELETED" {
                m.gone.get_or_insert(at);
            }
        }
    });
    (child, seen)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// The phases of the pods whose names start with `prefix`, each relative to the run's start: the latest pod's.
fn phases(seen: &Seen, prefix: &str, start: Duration) -> [f64; 6] {
    let map = seen.lock().unwrap();
    let pods: Vec<&Moments> = map
        .iter()
        .filter(|(n, _)| n.starts_with(prefix))
        .map(|(_, m)| m)
        .collect();
    let at = |f: fn(&Moments) -> Option<Duration>| {
        pods.iter()
            .filter_map(|m| f(m))
            .max()
            .map_or(f64::NAN, |d| d.saturating_sub(start).as_secs_f64() * 1000.0)
    };
    [
        at(|m| m.created),
        at(|m| m.scheduled),
        at(|m| m.sandbox),
        at(|m| m.started),
        at(|m| m.ended),
        at(|m| m.gone),
    ]
}

fn main() {
    let env = env();
    let ns = namespace("bench", &[]);
    let t0 = Instant::now();
    let (mut watcher, seen) = watch(&ns, t0);
    let mut rows: Vec<(String, f64, [f64; 6])> = Vec::new();

    // The floor: a bare pod of the probe image (one model), create → first log line.
    let mut floor = Vec::new();
    for rep in 0..REPS {
        let name = format!("floor-{rep}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"restartPolicy": "Never", "automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "probe", "image": probe_image(), "imagePullPolicy": "IfNotPresent",
                                     "args": ["check", "--base-url", env.provider.as_str(), "--model", "ok"]}]}});
        let start = t0.elapsed();
        let ms = first_log_line(&ns, &name, &pod.to_string(), &seen);
        floor.push(ms);
        rows.push((
            format!("floor (bare pod, first log line) #{rep}"),
            ms,
            phases(&seen, &name, start),
        ));
    }

    // The floor of the check pod's own shape: the pod the driver's dry run writes for one model (the Custodian as a
    // native sidecar with its startup probe, then the probe), created by kubectl, create → the probe's first log line.
    let mut sidecar_floor = Vec::new();
    for rep in 0..REPS {
        let plan = plan(&ns, &[("floor", harness_spec(), &["ok"])]);
        let path = write_plan(&plan);
        let dry = driver(
            As::User,
            &["run", "--plan", path.to_str().unwrap(), "--dry-run"],
        );
        assert_eq!(dry.code(), Some(0), "{}", dry.stderr);
        let doc: Value = serde_yaml::from_str(&dry.stdout).expect("the dry run's pod");
        let name = format!("floor-sidecar-{rep}");
        let mut pod = doc;
        pod["metadata"]["name"] = json!(name);
        let start = t0.elapsed();
        let ms = first_log_line(&ns, &name, &pod.to_string(), &seen);
        sidecar_floor.push(ms);
        rows.push((
            format!("floor (check pod by kubectl, first log line) #{rep}"),
            ms,
            phases(&seen, &name, start),
        ));
    }

    // The preflight.
    let mut preflight: BTreeMap<(usize, usize), Vec<f64>> = BTreeMap::new();
    for placements in [1usize, 2] {
        for models in [1usize, 4, 16] {
            for rep in 0..REPS {
                let names: Vec<String> = (0..models).map(|i| format!("ok@{i}")).collect();
                let per: Vec<Vec<&str>> = (0..placements)
                    .map(|p| {
                        names
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| i % placements == p)
                            .map(|(_, n)| n.as_str())
                            .collect()
                    })
                    .collect();
                let specs: Vec<(String, Value, &[&str])> = per
                    .iter()
                    .enumerate()
                    .map(|(p, m)| (format!("p{p}"), harness_spec(), m.as_slice()))
                    .collect();
                let plan_placements: Vec<(&str, Value, &[&str])> = specs
                    .iter()
                    .map(|(n, s, m)| (n.as_str(), s.clone(), *m))
                    .collect();
                let plan = plan(&ns, &plan_placements);
                let start = t0.elapsed();
                let began = Instant::now();
                let run = run_plan(&plan, &[]);
                let ms = began.elapsed().as_secs_f64() * 1000.0;
                assert_eq!(run.code(), Some(0), "{}", run.stderr);
                let id = run.verdict()["runId"].as_str().unwrap()[..8].to_owned();
                let prefix = format!("jr2-preflight-{ns}-");
                let ph = {
                    let map = seen.lock().unwrap();
                    let ours: Vec<String> = map
                        .keys()
                        .filter(|k| k.starts_with(&prefix) && k.ends_with(&id))
                        .cloned()
                        .collect();
                    drop(map);
                    ours.first()
                        .map(|n| phases(&seen, &n[..n.len() - 8], start))
                        .unwrap_or([f64::NAN; 6])
                };
                preflight.entry((placements, models)).or_default().push(ms);
                rows.push((
                    format!("preflight {models:>2} model(s), {placements} placement(s) #{rep}"),
                    ms,
                    ph,
                ));
            }
        }
    }

    // The same preflight without a Custodian (the key from a Secret): what the native sidecar costs.
    let mut direct = Vec::new();
    for rep in 0..REPS {
        let spec = json!({
            "automountServiceAccountToken": false,
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "harness", "image": "registry.jr2.test/harness:1", "env": [
                {"name": "JR2_PROVIDER_API_KEY", "valueFrom": {"secretKeyRef": {"name": "jr2-held-secrets", "key": "JR2_PROVIDER_API_KEY"}}}
            ]}]
        });
        let mut plan = plan(&ns, &[("direct", spec, &["auth"])]);
        plan["placements"][0]
            .as_object_mut()
            .unwrap()
            .remove("custodianContainer");
        plan["models"][0]["keyHeld"] = json!(false);
        let start = t0.elapsed();
        let began = Instant::now();
        let run = run_plan(&plan, &[]);
        let ms = began.elapsed().as_secs_f64() * 1000.0;
        assert_eq!(run.code(), Some(0), "{}", run.stderr);
        let id = run.verdict()["runId"].as_str().unwrap()[..8].to_owned();
        let prefix = format!("jr2-preflight-{ns}-direct-{id}");
        direct.push(ms);
        rows.push((
            format!("preflight  1 model, no Custodian #{rep}"),
            ms,
            phases(&seen, &prefix, start),
        ));
    }

    // jr2's current design: one `kubectl run --rm` per model, in sequence.
    let mut kubectl_run: BTreeMap<usize, f64> = BTreeMap::new();
    for models in [1usize, 4, 16] {
        let began = Instant::now();
        for i in 0..models {
            let name = format!("kr-{models}-{i}");
            let out = admin_kubectl()
                .args([
                    "-n",
                    &ns,
                    "run",
                    &name,
                    "--rm",
                    "--attach",
                    "--quiet",
                    "--restart=Never",
                    "--image-pull-policy=IfNotPresent",
                    &format!("--image={}", probe_image()),
                    "--",
                    "check",
                    "--base-url",
                    env.provider.as_str(),
                    "--model",
                    "ok",
                ])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "kubectl run: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        kubectl_run.insert(models, began.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = watcher.kill();
    let _ = watcher.wait();

    println!(
        "\nwhere the time goes, as a pod watch sees it (ms since each run's start; the run's latest pod): created, scheduled,\nsandbox ready, first container running (the Custodian, else the probe), a container ended (the probe), pod gone"
    );
    for (what, ms, ph) in &rows {
        println!(
            "{what:<48} {ms:>7.0} ms   {:>6.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0}",
            ph[0], ph[1], ph[2], ph[3], ph[4], ph[5]
        );
    }
    let floor_ms = median(floor);
    let sidecar_floor_ms = median(sidecar_floor);
    let direct_ms = median(direct);
    println!("\nmedians of {REPS} (create → verdict → pods deleted), on this cluster:");
    println!("  floor: a bare probe pod, create → first log line      {floor_ms:>7.0} ms");
    println!("  floor: the check pod by kubectl, → first log line     {sidecar_floor_ms:>7.0} ms");
    println!("  preflight, 1 model, no Custodian                      {direct_ms:>7.0} ms");
    for ((placements, models), v) in &preflight {
        println!(
            "  preflight, {models:>2} model(s), {placements} placement(s)              {:>7.0} ms",
            median(v.clone())
        );
    }
    let one = median(preflight[&(1, 1)].clone());
    println!("\nratios:");
    println!(
        "  one model / floor of its own pod (the check pod)       {:>6.2}x  (goal ≤ 1.3x)",
        one / sidecar_floor_ms
    );
    println!(
        "  one model, no Custodian / floor (a bare probe pod)     {:>6.2}x  (goal ≤ 1.3x)",
        direct_ms / floor_ms
    );
    println!(
        "  one model / floor (a bare probe pod)                   {:>6.2}x  (the native sidecar's start included)",
        one / floor_ms
    );
    for placements in [1usize, 2] {
        let sixteen = median(preflight[&(placements, 16)].clone());
        let one_p = median(preflight[&(placements, 1)].clone());
        println!(
            "  16 models / 1 model, {placements} placement(s)                  {:>6.2}x  (goal ≤ 1.2x)",
            sixteen / one_p
        );
    }
    for models in [1usize, 4, 16] {
        let ours = median(preflight[&(1, models)].clone());
        println!(
            "  kubectl run --rm per model / preflight, {models:>2} model(s)     {:>6.2}x  ({:.0} ms against {ours:.0} ms)",
            kubectl_run[&models] / ours,
            kubectl_run[&models]
        );
    }
}

/// Creates `pod` (JSON) as the admin, waits for its probe container to run as the watch sees it, and reads the first
/// line of its log: the milliseconds from the create to that line. Deletes the pod, without waiting.
fn first_log_line(ns: &str, name: &str, pod: &str, seen: &Seen) -> f64 {
    let env = env();
    let began = Instant::now();
    env.cluster.kubectl_stdin(&["create", "-f", "-"], pod);
    // The logs can be read once the container has started, as the watch sees it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen
        .lock()
        .unwrap()
        .get(name)
        .and_then(|m| m.started)
        .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "{name} did not start within 60 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut logs = admin_kubectl()
        .args(["-n", ns, "logs", "-f", name, "-c", "probe"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut BufReader::new(logs.stdout.take().unwrap()), &mut line)
        .unwrap();
    let ms = began.elapsed().as_secs_f64() * 1000.0;
    assert!(!line.is_empty(), "{name} logged");
    let _ = logs.kill();
    let _ = logs.wait();
    env.cluster
        .kubectl(&["-n", ns, "delete", "pod", name, "--wait=false"]);
    ms
}
