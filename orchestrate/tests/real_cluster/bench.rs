//! The figure users care about, on the real cluster: the whole preflight (create → verdict → pod deleted) for 1, 4
//! and 16 models on 1 and 2 placements, against the floor this cluster sets: a bare pod of the probe image, create →
//! its result line, with no driver. Beside them, in the same run: jr2's current design (one `kubectl run --rm` of the
//! probe per model, in sequence, with kubectl from the same build), the preflight without a Custodian, and more floors
//! created by kubectl, each create → the probe's result line: the check pod as the driver's dry run writes it (the
//! Custodian as a plain container before the probe: the kubelet starts both in one sync; the probe asks the
//! Custodian's readiness itself), and the same pod with the Custodian as a native sidecar, as the driver wrote it
//! before (the kubelet starts the probe only once a relist saw the sidecar run: about a second).
//!
//! Where the time goes, per run: a pod watch the bench keeps open (kubectl, in the cluster's namespace) gives the
//! moment each change of the pod arrives (scheduled, sandbox ready, the Custodian running and ready as the kubelet
//! sees it, the probe running, the pod gone); the floors' first log line and result line come from `kubectl logs
//! -f`, the preflight's result line and verdict from the driver's stderr and stdout as they come. The arrival times,
//! not the status timestamps, which the API server keeps to the second.
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
/// No NetworkPolicy enforced: the tests of kube-router's firewall are `real_netpol`'s.
pub const NETWORK_POLICY: bool = false;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use harness::*;

const REPS: usize = 3;
/// `JR2_BENCH_FLOORS=N`: the floors alone, N runs of each (to weigh the pod's shapes on more runs than the whole
/// bench can take).
const FLOORS_ONLY: &str = "JR2_BENCH_FLOORS";

/// One pod's moments, as the watch saw them (since the bench's start).
#[derive(Default, Clone, Debug)]
struct Moments {
    created: Option<Duration>,
    scheduled: Option<Duration>,
    sandbox: Option<Duration>,
    custodian_started: Option<Duration>,
    custodian_ready: Option<Duration>,
    probe_started: Option<Duration>,
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

/// The status of the container `name`, among the init containers' and the containers'.
fn status_of<'a>(pod: &'a Value, name: &str) -> Option<&'a Value> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .flat_map(|k| pod["status"][k].as_array().into_iter().flatten())
        .find(|c| c["name"] == name)
}

fn ran(c: &Value) -> bool {
    !c["state"]["running"].is_null() || !c["state"]["terminated"].is_null()
}

/// A watch of the namespace's pods: each change's arrival time, per pod.
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
            let sandbox = pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "PodReadyToStartContainers" && c["status"] == "True");
            if sandbox {
                m.sandbox.get_or_insert(at);
            }
            if let Some(c) = status_of(pod, "custodian") {
                if ran(c) {
                    m.custodian_started.get_or_insert(at);
                }
                if c["ready"] == true {
                    m.custodian_ready.get_or_insert(at);
                }
            }
            if status_of(pod, "probe").is_some_and(ran) {
                m.probe_started.get_or_insert(at);
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

/// The columns of the table of where the time goes.
const COLUMNS: [&str; 10] = [
    "sched", "sandbox", "cust.run", "cust.rdy", "probe", "1st line", "result", "verdict", "gone",
    "total",
];

/// One run: what, and its moments in ms since its start (NaN: not seen, or not for this run).
struct Row {
    what: String,
    marks: [f64; 10],
}

/// The moments of the pods `ours` picks by name (the latest pod's, for a run of two), since `start`, with the run's
/// own: the first log line, the result line, the verdict, the total.
fn marks(
    seen: &Seen,
    ours: impl Fn(&str) -> bool,
    start: Duration,
    own: [Option<Duration>; 4],
) -> [f64; 10] {
    let map = seen.lock().unwrap();
    let pods: Vec<&Moments> = map
        .iter()
        .filter(|(n, _)| ours(n))
        .map(|(_, m)| m)
        .collect();
    let ms = |d: Option<Duration>| {
        d.map_or(f64::NAN, |d| d.saturating_sub(start).as_secs_f64() * 1000.0)
    };
    let at = |f: fn(&Moments) -> Option<Duration>| ms(pods.iter().filter_map(|m| f(m)).max());
    [
        at(|m| m.scheduled),
        at(|m| m.sandbox),
        at(|m| m.custodian_started),
        at(|m| m.custodian_ready),
        at(|m| m.probe_started),
        ms(own[0]),
        ms(own[1]),
        ms(own[2]),
        at(|m| m.gone),
        ms(own[3]),
    ]
}

/// A driver run, timed: when its first result line came on stderr, when its verdict came on stdout.
struct Timed {
    run: DriverRun,
    result: Option<Duration>,
    verdict: Option<Duration>,
}

/// Runs `plan` as the least-privilege user with a JSON verdict, reading its output as it comes (times since `t0`).
fn timed_run(plan: &Value, t0: Instant) -> Timed {
    let path = write_plan(plan);
    let began = Instant::now();
    let mut child = spawn_driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "-o", "json"],
    );
    let mut out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let err_t = std::thread::spawn(move || {
        let mut text = String::new();
        let mut result = None;
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            if result.is_none() && line.contains("completed a tool call") {
                result = Some(t0.elapsed());
            }
            text.push_str(&line);
            text.push('\n');
        }
        (text, result)
    });
    let out_t = std::thread::spawn(move || {
        let mut first = [0u8; 1];
        let mut text = Vec::new();
        let mut verdict = None;
        if out.read(&mut first).unwrap_or(0) == 1 {
            verdict = Some(t0.elapsed());
            text.push(first[0]);
            let _ = out.read_to_end(&mut text);
        }
        (String::from_utf8_lossy(&text).into_owned(), verdict)
    });
    let deadline = Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the driver did not end within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let (stdout, verdict) = out_t.join().unwrap();
    let (stderr, result) = err_t.join().unwrap();
    Timed {
        run: DriverRun {
            status,
            stdout,
            stderr,
        },
        result,
        verdict,
    }
}

/// The check pod the driver's dry run writes for one model of a fresh plan, named `name`.
fn dry_run_pod(ns: &str, name: &str) -> Value {
    let plan = plan(ns, &[("floor", harness_spec(), &["ok"])]);
    let path = write_plan(&plan);
    let dry = driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "--dry-run"],
    );
    assert_eq!(dry.code(), Some(0), "{}", dry.stderr);
    let mut pod: Value = serde_yaml::from_str(&dry.stdout).expect("the dry run's pod");
    pod["metadata"]["name"] = json!(name);
    // Deleted as the driver deletes its pods (and as the bare floor is): at once, no grace. A plain Custodian runs on
    // after the probe exits; with the default 30 s grace a stand-in that ignores SIGTERM would keep each floor's pod
    // terminating on the node while the next floors run.
    pod["spec"]["terminationGracePeriodSeconds"] = json!(0);
    pod
}

fn main() {
    let env = env();
    let ns = namespace("bench", &[]);
    let t0 = Instant::now();
    let (mut watcher, seen) = watch(&ns, t0);
    let mut rows: Vec<Row> = Vec::new();
    let floors_only: Option<usize> = std::env::var(FLOORS_ONLY)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0);
    let floor_reps = floors_only.unwrap_or(REPS);
    // Each floor: a pod created by kubectl, create → the probe's result line.
    let floor_run = |rows: &mut Vec<Row>, what: &str, name: &str, pod: &Value| -> f64 {
        let start = t0.elapsed();
        let (ms, [first, result]) = to_result(&ns, name, &pod.to_string(), &seen, t0);
        rows.push(Row {
            what: what.to_owned(),
            marks: marks(
                &seen,
                |n| n == name,
                start,
                [Some(first), Some(result), None, Some(result)],
            ),
        });
        ms
    };

    // The floor: a bare pod of the probe image (one model).
    let mut floor = Vec::new();
    for rep in 0..floor_reps {
        let name = format!("floor-{rep}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"restartPolicy": "Never", "automountServiceAccountToken": false, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "probe", "image": probe_image(), "imagePullPolicy": "IfNotPresent",
                                     "args": ["check", "--base-url", env.provider.as_str(), "--model", "ok"]}]}});
        floor.push(floor_run(
            &mut rows,
            &format!("floor: a bare probe pod #{rep}"),
            &name,
            &pod,
        ));
    }

    // The floor of the check pod's own shape: the pod the driver's dry run writes for one model (the Custodian as a
    // plain container before the probe, which asks its readiness itself).
    let mut sidecar_floor = Vec::new();
    for rep in 0..floor_reps {
        let name = format!("floor-sidecar-{rep}");
        let pod = dry_run_pod(&ns, &name);
        assert!(
            pod["spec"]["initContainers"].is_null(),
            "the Custodian is a plain container: {pod:#}"
        );
        sidecar_floor.push(floor_run(
            &mut rows,
            &format!("floor: the check pod by kubectl #{rep}"),
            &name,
            &pod,
        ));
    }

    // The same pod as the driver wrote it before issue 36's departure: the Custodian as a native sidecar (an init
    // container with `restartPolicy: Always`), which the kubelet starts the probe after only once a relist saw it.
    let mut native_floor = Vec::new();
    for rep in 0..floor_reps {
        let name = format!("floor-native-{rep}");
        let mut pod = dry_run_pod(&ns, &name);
        let spec = pod["spec"].as_object_mut().unwrap();
        let mut custodian = spec["containers"].as_array_mut().unwrap().remove(0);
        custodian["restartPolicy"] = json!("Always");
        spec.insert("initContainers".to_owned(), json!([custodian]));
        native_floor.push(floor_run(
            &mut rows,
            &format!("floor: Custodian as a native sidecar #{rep}"),
            &name,
            &pod,
        ));
    }

    if floors_only.is_some() {
        let _ = watcher.kill();
        let _ = watcher.wait();
        print_rows(&rows);
        let floor_ms = median(floor);
        println!(
            "\nmedians of {floor_reps}, create → the probe's result line, and against the bare floor:"
        );
        for (what, v) in [
            ("a bare probe pod", floor_ms),
            ("the check pod by kubectl", median(sidecar_floor)),
            ("the Custodian as a native sidecar", median(native_floor)),
        ] {
            println!("  {what:<40} {v:>7.0} ms  {:>5.2}x", v / floor_ms);
        }
        return;
    }

    // The preflight.
    let prefix = format!("jr2-preflight-{ns}-");
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
                let timed = timed_run(&plan, t0);
                let total = t0.elapsed();
                let ms = total.saturating_sub(start).as_secs_f64() * 1000.0;
                assert_eq!(timed.run.code(), Some(0), "{}", timed.run.stderr);
                let id = timed.run.verdict()["runId"].as_str().unwrap()[..8].to_owned();
                let run_marks = marks(
                    &seen,
                    |n| n.starts_with(&prefix) && n.ends_with(&id),
                    start,
                    [None, timed.result, timed.verdict, Some(total)],
                );
                preflight.entry((placements, models)).or_default().push(ms);
                rows.push(Row {
                    what: format!(
                        "preflight {models:>2} model(s), {placements} placement(s) #{rep}"
                    ),
                    marks: run_marks,
                });
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
        let timed = timed_run(&plan, t0);
        let total = t0.elapsed();
        let ms = total.saturating_sub(start).as_secs_f64() * 1000.0;
        assert_eq!(timed.run.code(), Some(0), "{}", timed.run.stderr);
        let id = timed.run.verdict()["runId"].as_str().unwrap()[..8].to_owned();
        let name = format!("{prefix}direct-{id}");
        direct.push(ms);
        rows.push(Row {
            what: format!("preflight  1 model, no Custodian #{rep}"),
            marks: marks(
                &seen,
                |n| n == name,
                start,
                [None, timed.result, timed.verdict, Some(total)],
            ),
        });
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

    print_rows(&rows);
    let floor_ms = median(floor);
    let sidecar_floor_ms = median(sidecar_floor);
    let native_floor_ms = median(native_floor);
    let direct_ms = median(direct);
    println!("\nmedians of {REPS}, on this cluster:");
    println!(
        "  floor: a bare probe pod, create → its result line                 {floor_ms:>7.0} ms"
    );
    println!(
        "  floor: the check pod by kubectl, → the probe's result line        {sidecar_floor_ms:>7.0} ms"
    );
    println!(
        "  floor: the same, the Custodian as a native sidecar (before)       {native_floor_ms:>7.0} ms"
    );
    println!(
        "  preflight, 1 model, no Custodian (create → verdict → pods deleted) {direct_ms:>7.0} ms"
    );
    for ((placements, models), v) in &preflight {
        println!(
            "  preflight, {models:>2} model(s), {placements} placement(s)                          {:>7.0} ms",
            median(v.clone())
        );
    }
    for (models, ms) in &kubectl_run {
        println!(
            "  kubectl run --rm, one per model, {models:>2} model(s)                   {ms:>7.0} ms"
        );
    }
    let one = median(preflight[&(1, 1)].clone());
    println!("\ngoals:");
    println!(
        "  one model, with the Custodian / the bare floor                   {:>6.2}x  (goal ≤ 1.3x)",
        one / floor_ms
    );
    println!(
        "  one model, with the Custodian / kubectl run --rm of one model    {:>6.2}x  (goal ≤ 1x)",
        one / kubectl_run[&1]
    );
    for placements in [1usize, 2] {
        let sixteen = median(preflight[&(placements, 16)].clone());
        let one_p = median(preflight[&(placements, 1)].clone());
        println!(
            "  16 models / 1 model, {placements} placement(s)                             {:>6.2}x  (goal ≤ 1.2x)",
            sixteen / one_p
        );
    }
    println!("ratios:");
    println!(
        "  one model / the floor of the check pod's own shape               {:>6.2}x",
        one / sidecar_floor_ms
    );
    println!(
        "  one model, no Custodian / the bare floor                         {:>6.2}x",
        direct_ms / floor_ms
    );
    println!(
        "  the check pod's own shape / the bare floor                       {:>6.2}x  (a plain Custodian)",
        sidecar_floor_ms / floor_ms
    );
    println!(
        "  the Custodian as a native sidecar / the bare floor               {:>6.2}x  (before the departure)",
        native_floor_ms / floor_ms
    );
    for models in [1usize, 4, 16] {
        let ours = median(preflight[&(1, models)].clone());
        println!(
            "  kubectl run --rm per model / preflight, {models:>2} model(s)             {:>6.2}x",
            kubectl_run[&models] / ours
        );
    }
}

/// The table of where the time goes.
fn print_rows(rows: &[Row]) {
    println!(
        "\nwhere the time goes (ms since each run's start, as they arrived: a pod watch, the floors' `kubectl logs -f`,\n\
         the driver's stderr and stdout; the latest pod's for two placements): scheduled, sandbox ready, the Custodian\n\
         running and ready (as the kubelet sees them), the probe running, its first log line (the floors), its result\n\
         line (the floors: the log's; a preflight: the driver's first), the driver's verdict, the pod gone, the total\n\
         (a floor's: to the result line; a preflight's: its end, the pods' deletes confirmed)"
    );
    print!("{:<48}", "");
    for c in COLUMNS {
        print!(" {c:>8}");
    }
    println!();
    for Row { what, marks: m } in rows {
        print!("{what:<48}");
        for v in m {
            if v.is_nan() {
                print!(" {:>8}", "-");
            } else {
                print!(" {v:>8.0}");
            }
        }
        println!();
    }
}

/// Creates `pod` (JSON) as the admin, waits for its probe container to run as the watch sees it, and follows its
/// log to the probe's result (its first line by hand, `check`; its `result` event in pod mode, `run`): when its first
/// line came and when its result came (since `t0`), and the milliseconds from the create to the result. Deletes the
/// pod, without waiting.
fn to_result(ns: &str, name: &str, pod: &str, seen: &Seen, t0: Instant) -> (f64, [Duration; 2]) {
    let env = env();
    let began = Instant::now();
    env.cluster.kubectl_stdin(&["create", "-f", "-"], pod);
    // The logs can be read once the container has started, as the watch sees it.
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen
        .lock()
        .unwrap()
        .get(name)
        .and_then(|m| m.probe_started)
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
    let pod_mode = pod.contains("\"--spec-json\"");
    let mut first = None;
    let mut result = None;
    for line in BufReader::new(logs.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        first.get_or_insert(t0.elapsed());
        if !pod_mode || line.contains(r#""event":"result""#) {
            result = Some(t0.elapsed());
            break;
        }
    }
    let ms = began.elapsed().as_secs_f64() * 1000.0;
    let (Some(first), Some(result)) = (first, result) else {
        panic!("{name} logged no result");
    };
    let _ = logs.kill();
    let _ = logs.wait();
    env.cluster
        .kubectl(&["-n", ns, "delete", "pod", name, "--wait=false"]);
    (ms, [first, result])
}
