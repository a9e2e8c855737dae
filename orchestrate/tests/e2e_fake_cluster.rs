//! End to end with a fake cluster: the real `jr2-preflight` binary, through a kubeconfig, against
//! `jr2_testkit::fake_kube` (an API server on loopback whose kubelet stand-in runs the real `jr2-probe` as a process
//! with the pod's args and env), the probe calling a `jr2_testkit::fake_provider` on loopback.
//!
//! Per scenario: the exit code, the contract's lines on stderr (exact where the contract fixes them; the pending
//! lines only on a change), the JSON verdict (`-o json`), and that every pod the driver created was deleted with its
//! `uid` precondition, so the fake holds no check pod afterwards. The driver is also interrupted (SIGINT, SIGTERM)
//! at random moments from a seeded PRNG.
//!
//! The probe binary: `<target>/<profile>/jr2-probe`, next to the driver's. `cargo test -p jr2-preflight` builds only
//! the probe's library, so the first test runs `cargo build -p jr2-probe --bin jr2-probe` (a no-op when it is fresh,
//! so a stale probe never runs); when that cannot run, an existing binary is used, else the tests fail saying so.
//!
//! Figures (printed, not asserted; run with `--nocapture`): the time from the probe container's termination, as the
//! fake records it, to the verdict's first byte on stdout, and the driver's own CPU time (per scenario from
//! `/proc/<pid>/stat`, read while it is a zombie, before it is reaped, in clock ticks; in the figures test from
//! `bash`'s `times`, which reads getrusage of the child, to the millisecond).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use jr2_testkit::fake_kube::{
    FakeKube, NODE, ProbeRun, Scenario, UNSCHEDULABLE_MEMORY, UNSCHEDULABLE_TAINT_MEMORY,
};
use jr2_testkit::fake_provider::FakeProvider;

const NS: &str = "e2e";
const PROBE_IMAGE: &str = "registry.example.com/jr2/jr2-probe:0.1.0";
const MANAGED: &str = "app.kubernetes.io/managed-by=jr2-preflight";
const PENDING: &str = "provider: the check pod is not running yet — ";

// ---------------------------------------------------------------------------------------------------------------
// The probe binary.

fn probe_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_BIN_EXE_jr2-preflight"))
            .parent()
            .expect("the driver's folder")
            .to_path_buf();
        let bin = dir.join("jr2-probe");
        let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cmd.args(["build", "--quiet", "-p", "jr2-probe", "--bin", "jr2-probe"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if let Some(target) = dir.parent() {
            cmd.arg("--target-dir").arg(target);
        }
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let built = cmd.status().is_ok_and(|s| s.success());
        assert!(
            built || bin.exists(),
            "no jr2-probe at {} and `cargo build -p jr2-probe` failed: build the workspace first",
            bin.display()
        );
        bin
    })
    .clone()
}

// ---------------------------------------------------------------------------------------------------------------
// The driver as a process.

struct DriverRun {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    /// When the first byte of stdout came (the verdict, with `-o json`).
    verdict_at: Option<Instant>,
    started: Instant,
    ended: Instant,
    /// user + system CPU time, from /proc while the process is a zombie.
    cpu: Option<Duration>,
    /// When the signal was sent, if it was.
    signalled_at: Option<Instant>,
}

impl DriverRun {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// The verdict on stdout, checked against its JSON Schema.
    fn verdict(&self) -> Value {
        let v: Value = serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        });
        let schema: Value =
            serde_json::from_str(include_str!("../../schemas/driver-verdict.v1.schema.json"))
                .unwrap();
        let validator = jsonschema::draft202012::new(&schema).expect("a valid schema");
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(
            errors.is_empty(),
            "the verdict does not match its schema: {errors:?}\n{v}"
        );
        v
    }
}

fn clock_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .unwrap_or(100)
    })
}

/// The CPU time of `pid` once it is a zombie (exited, not reaped), waiting at most `within` for it to exit.
fn zombie_cpu(pid: u32, within: Duration) -> Option<Duration> {
    let until = Instant::now() + within;
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            let utime: u64 = fields.get(11)?.parse().ok()?;
            let stime: u64 = fields.get(12)?.parse().ok()?;
            return Some(Duration::from_millis(
                (utime + stime) * 1000 / clock_ticks(),
            ));
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `jr2-preflight <args>` in a clean environment (PATH and `env` only), optionally sending it `signal` after
/// `delay`. Blocking: call it from `spawn_blocking`, so the fakes keep serving.
/// With `bash_times`, the driver runs under `bash -c '...; times'`, whose children's line (getrusage, ms precision)
/// gives its CPU time in place of `/proc`'s clock ticks; that line is taken off stderr.
fn run_driver_blocking(
    args: Vec<String>,
    env: Vec<(String, String)>,
    interrupt: Option<(Duration, &'static str)>,
    bash_times: bool,
) -> DriverRun {
    let driver = env!("CARGO_BIN_EXE_jr2-preflight");
    let mut cmd = if bash_times {
        let mut c = Command::new("bash");
        c.args(["-c", "\"$0\" \"$@\"; rc=$?; times >&2; exit $rc", driver]);
        c
    } else {
        Command::new(driver)
    };
    cmd.args(&args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("run jr2-preflight");
    let pid = child.id();
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let (mut buf, mut first, mut chunk) = (Vec::new(), None, [0u8; 8192]);
        while let Ok(n) = out.read(&mut chunk) {
            if n == 0 {
                break;
            }
            first.get_or_insert_with(Instant::now);
            buf.extend_from_slice(&chunk[..n]);
        }
        (buf, first)
    });
    let err_t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    // The signal is sent only while the process is not reaped: its pid cannot be anyone else's.
    let reaped = Arc::new(Mutex::new(false));
    let signalled_at = Arc::new(Mutex::new(None));
    let sig_t = interrupt.map(|(delay, signal)| {
        let reaped = reaped.clone();
        let signalled_at = signalled_at.clone();
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            let gone = reaped.lock().unwrap();
            if !*gone {
                *signalled_at.lock().unwrap() = Some(Instant::now());
                let _ = Command::new("kill")
                    .args(["-s", signal, &pid.to_string()])
                    .status();
            }
        })
    });
    let (stdout, verdict_at) = out_t.join().expect("stdout reader");
    let stderr = err_t.join().expect("stderr reader");
    let cpu = zombie_cpu(pid, Duration::from_secs(60));
    let status = {
        let mut gone = reaped.lock().unwrap();
        let status = child.wait().expect("wait for jr2-preflight");
        *gone = true;
        status
    };
    let ended = Instant::now();
    if let Some(t) = sig_t {
        let _ = t.join();
    }
    let signalled_at = *signalled_at.lock().unwrap();
    let mut stderr = String::from_utf8_lossy(&stderr).into_owned();
    let mut cpu = cpu;
    if bash_times {
        // `times` prints the shell's own line, then its children's: `0m0.012s 0m0.004s`.
        let lines: Vec<&str> = stderr.lines().collect();
        let n = lines.len();
        assert!(n >= 2, "bash times: {stderr}");
        let secs = |t: &str| -> Option<f64> {
            let (m, s) = t.strip_suffix('s')?.split_once('m')?;
            Some(m.parse::<f64>().ok()? * 60.0 + s.parse::<f64>().ok()?)
        };
        let children: Vec<f64> = lines[n - 1].split_whitespace().filter_map(secs).collect();
        cpu = (children.len() == 2).then(|| Duration::from_secs_f64(children[0] + children[1]));
        stderr = lines[..n - 2].iter().map(|l| format!("{l}\n")).collect();
    }
    DriverRun {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr,
        verdict_at,
        started,
        ended,
        cpu,
        signalled_at,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// A cluster, a provider, a plan.

struct Setup {
    kube: FakeKube,
    provider: FakeProvider,
    dir: PathBuf,
}

impl Setup {
    async fn new(scenario: Scenario) -> Self {
        let kube = FakeKube::start(probe_bin(), scenario).await;
        let provider = FakeProvider::start().await;
        let dir = std::env::temp_dir().join(format!(
            "jr2-e2e-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        kube.kubeconfig(&dir.join("kubeconfig")).unwrap();
        Self {
            kube,
            provider,
            dir,
        }
    }

    fn kubeconfig(&self) -> String {
        self.dir.join("kubeconfig").display().to_string()
    }

    /// Writes the plan: per placement, its models (FakeProvider behaviours: `ok`, `ok-delay-<ms>`...).
    fn plan(&self, placements: &[(&str, &[&str])]) -> String {
        let plan = plan(&self.provider.base_url(), placements);
        let path = self.dir.join("plan.json");
        std::fs::write(&path, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
        path.display().to_string()
    }

    /// `run --plan <plan> --kubeconfig <kubeconfig> -o json <extra>`.
    fn args(&self, plan: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "run",
            "--plan",
            plan,
            "--kubeconfig",
            &self.kubeconfig(),
            "-o",
            "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    async fn run(&self, args: Vec<String>) -> DriverRun {
        self.run_with(args, Vec::new(), None).await
    }

    async fn run_with(
        &self,
        args: Vec<String>,
        env: Vec<(String, String)>,
        interrupt: Option<(Duration, &'static str)>,
    ) -> DriverRun {
        self.run_measured(args, env, interrupt, false).await
    }

    async fn run_measured(
        &self,
        args: Vec<String>,
        env: Vec<(String, String)>,
        interrupt: Option<(Duration, &'static str)>,
        bash_times: bool,
    ) -> DriverRun {
        let run = tokio::time::timeout(
            Duration::from_secs(180),
            tokio::task::spawn_blocking(move || {
                run_driver_blocking(args, env, interrupt, bash_times)
            }),
        )
        .await
        .expect("the driver ends within 180 s")
        .expect("join");
        eprintln!(
            "--- jr2-preflight: {:?} in {} ms\n{}",
            run.status,
            (run.ended - run.started).as_millis(),
            run.stderr
        );
        run
    }

    /// Every pod created was deleted, each by a DELETE with its uid precondition and no grace period; the fake holds
    /// no check pod.
    fn assert_cleaned_up(&self) {
        let left = self.kube.pods_matching(MANAGED);
        assert!(left.is_empty(), "check pods left: {left:#?}");
        let mut created = self.kube.created();
        let mut deleted = self.kube.deleted();
        created.sort();
        deleted.sort();
        deleted.dedup();
        assert_eq!(created, deleted, "every pod created is deleted");
        for r in self.kube.requests().iter().filter(|r| r.method == "DELETE") {
            assert_eq!(r.body["gracePeriodSeconds"], 0, "{r:?}");
            assert!(
                r.body["preconditions"]["uid"].is_string(),
                "only the pod this run created: {r:?}"
            );
        }
    }

    /// Milliseconds to the verdict's first byte on stdout from the last pod's probe `summary` line in the log, and
    /// from its container's `terminated` status (negative: the verdict came first). A pod whose probe the driver
    /// deleted before it exited has no termination.
    fn to_verdict(&self, run: &DriverRun) -> (Option<f64>, Option<f64>) {
        let Some(verdict_at) = run.verdict_at else {
            return (None, None);
        };
        let signed = |a: Instant| {
            if verdict_at >= a {
                (verdict_at - a).as_secs_f64() * 1e3
            } else {
                -((a - verdict_at).as_secs_f64() * 1e3)
            }
        };
        let times: Vec<_> = self
            .kube
            .created()
            .iter()
            .map(|p| self.kube.pod_times(p))
            .collect();
        let last = |f: fn(&jr2_testkit::fake_kube::PodTimes) -> Option<Instant>| {
            times
                .iter()
                .map(f)
                .collect::<Option<Vec<_>>>()?
                .into_iter()
                .max()
        };
        (
            last(|t| t.probe_summary_logged).map(signed),
            last(|t| t.probe_terminated).map(signed),
        )
    }

    fn report(&self, scenario: &str, run: &DriverRun) {
        let (from_summary, from_terminated) = self.to_verdict(run);
        let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:+.1} ms"));
        println!(
            "figure {scenario}: to the verdict on stdout: from the summary line {}, from the terminated status {}; driver CPU {} ms, wall {} ms",
            ms(from_summary),
            ms(from_terminated),
            run.cpu
                .map_or_else(|| "-".to_owned(), |c| c.as_millis().to_string()),
            (run.ended - run.started).as_millis()
        );
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Harness pod spec as `jr2 up` renders it: the Harness (its key a Stand-in, an `envFrom` Secret `x`, a
/// `secretKeyRef`) and the Custodian with its values volume from Secret `jr2-held-secrets`.
fn pod_spec() -> Value {
    json!({
        "automountServiceAccountToken": false,
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 2000},
        "nodeSelector": {"jr2.dev/pool": "harness"},
        "containers": [
            {
                "name": "harness",
                "image": "registry.example.com/jr2/harness:0.9.0",
                "env": [
                    {"name": "JR2_PROVIDER_API_KEY", "value": "jr2-held-JR2_PROVIDER_API_KEY"},
                    {"name": "SENTRY_DSN", "valueFrom": {"secretKeyRef": {"name": "jr2-app", "key": "sentry-dsn"}}},
                    {"name": "JR2_CUSTODIAN_URL", "value": "http://127.0.0.1:8081"}
                ],
                "envFrom": [{"secretRef": {"name": "x"}}]
            },
            {
                "name": "custodian",
                "image": "envoyproxy/envoy:distroless-v1.39.1",
                "resources": {"limits": {"memory": "64Mi"}},
                "volumeMounts": [{"name": "custodian-values", "mountPath": "/etc/jr2/custodian/values", "readOnly": true}]
            }
        ],
        "volumes": [{"name": "custodian-values", "projected": {"sources": [
            {"secret": {"name": "jr2-held-secrets", "items": [{"key": "JR2_PROVIDER_API_KEY", "path": "JR2_PROVIDER_API_KEY"}]}}
        ]}}]
    })
}

fn plan(base_url: &str, placements: &[(&str, &[&str])]) -> Value {
    let models: Vec<Value> = placements
        .iter()
        .flat_map(|(placement, models)| {
            models.iter().map(move |m| {
                json!({"model": format!("vllm/{m}"), "placement": placement, "source": "custom",
                       "baseUrl": base_url, "api": "openai-completions",
                       "keyEnv": "JR2_PROVIDER_API_KEY", "keyHeld": true})
            })
        })
        .collect();
    json!({
        "schema": "jr2.dev/provider-preflight-plan/v1",
        "namespace": NS,
        "instance": "e2e",
        "probeImage": PROBE_IMAGE,
        "deadlineSeconds": 90,
        "timeoutSeconds": 20,
        "placements": placements.iter().map(|(name, _)| json!({
            "name": name, "harnessContainer": "harness", "custodianContainer": "custodian", "podSpec": pod_spec()
        })).collect::<Vec<_>>(),
        "models": models,
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Line checks.

fn completed_ms(line: &str, model: &str) -> Option<u64> {
    line.strip_prefix(&format!("provider: {model} completed a tool call ("))?
        .strip_suffix(" ms)")?
        .parse()
        .ok()
}

/// Every pending line is a change: never the same line twice in a row (other lines may come between). For one pod
/// only: the line does not name its pod, so two pods in the same state write the same line each.
fn assert_pending_on_change(lines: &[&str]) {
    let pending: Vec<&&str> = lines.iter().filter(|l| l.starts_with(PENDING)).collect();
    for pair in pending.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "a pending line is written on a change only: {lines:#?}"
        );
    }
}

/// Each model has exactly one `completed a tool call` line; every other line is a pending line.
fn assert_passes(lines: &[&str], models: &[&str]) {
    for m in models {
        let n = lines
            .iter()
            .filter(|l| completed_ms(l, &format!("vllm/{m}")).is_some())
            .count();
        assert_eq!(n, 1, "one completed line for vllm/{m}: {lines:#?}");
    }
    for l in lines {
        assert!(
            l.starts_with(PENDING) || l.contains(" completed a tool call ("),
            "only pending and completed lines on a pass: {l:?}"
        );
    }
}

fn assert_verdict_lines(run: &DriverRun, verdict: &Value) {
    let from_json: Vec<&str> = verdict["lines"]
        .as_array()
        .expect("lines[]")
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let on_stderr = run.lines();
    assert!(
        on_stderr.starts_with(&from_json),
        "the verdict's lines are the stderr lines, in order:\n{from_json:#?}\n{on_stderr:#?}"
    );
}

fn outcomes(verdict: &Value) -> Vec<(String, String)> {
    verdict["models"]
        .as_array()
        .expect("models[]")
        .iter()
        .map(|m| {
            (
                m["model"].as_str().unwrap().to_owned(),
                m["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

// ---------------------------------------------------------------------------------------------------------------
// Scenarios.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_ok_two_placements() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[
        ("sandbox", &["ok"]),
        ("instance-harness", &["ok-delay-300", "ok@b"]),
    ]);
    let run = s.run(s.args(&plan, &["--context", "fake"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    assert_passes(&lines, &["ok", "ok-delay-300", "ok@b"]);
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(v["exitCode"], 0);
    assert_eq!(v["namespace"], NS);
    assert_eq!(
        outcomes(&v),
        owned(&[
            ("vllm/ok", "ok"),
            ("vllm/ok-delay-300", "ok"),
            ("vllm/ok@b", "ok")
        ])
    );
    for m in v["models"].as_array().unwrap() {
        assert_eq!(m["level"], "pass", "{m}");
    }
    let pods = v["pods"].as_array().unwrap();
    assert_eq!(pods.len(), 2);
    for p in pods {
        assert_eq!(p["outcome"], "finished", "{p}");
        assert_eq!(p["node"], NODE, "{p}");
        assert_eq!(p["failure"], json!([]), "{p}");
    }
    assert_verdict_lines(&run, &v);
    // Two pods, created at once; each ran the real probe, which called the provider.
    assert_eq!(s.kube.created().len(), 2);
    let mut names: Vec<String> = pods
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    let mut created = s.kube.created();
    created.sort();
    assert_eq!(names, created);
    assert_eq!(s.provider.requests().len(), 3);
    // (The driver deletes a pod once its probe's summary line is read: the process may be killed before it exits.)
    for pod in s.kube.created() {
        let t = s.kube.pod_times(&pod);
        assert!(
            t.probe_started.is_some() && t.probe_summary_logged.is_some(),
            "{pod} ran: {t:?}"
        );
    }
    s.assert_cleaned_up();
    s.report("all-ok", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_for_a_while_then_scheduled() {
    let s = Setup::new(Scenario::UnschedulableThenScheduled {
        messages: vec![
            UNSCHEDULABLE_TAINT_MEMORY.to_owned(),
            UNSCHEDULABLE_TAINT_MEMORY.to_owned(),
            UNSCHEDULABLE_MEMORY.to_owned(),
        ],
        each: Duration::from_millis(400),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok", "ok-delay-200"])]);
    // KUBECONFIG, as kubectl reads it, in place of --kubeconfig.
    let mut args = s.args(&plan, &[]);
    let at = args.iter().position(|a| a == "--kubeconfig").unwrap();
    args.drain(at..at + 2);
    let run = s
        .run_with(args, vec![("KUBECONFIG".into(), s.kubeconfig())], None)
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let lines = run.lines();
    let unschedulable: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with(&format!("{PENDING}Unschedulable")))
        .collect();
    assert_eq!(
        unschedulable,
        [
            &format!("{PENDING}Unschedulable: {UNSCHEDULABLE_TAINT_MEMORY}").as_str(),
            &format!("{PENDING}Unschedulable: {UNSCHEDULABLE_MEMORY}").as_str(),
        ],
        "one line per change, the same status written twice is one line: {lines:#?}"
    );
    assert!(
        lines[0].starts_with(&format!("{PENDING}Unschedulable")),
        "{lines:#?}"
    );
    assert_passes(&lines, &["ok", "ok-delay-200"]);
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "ok"), ("vllm/ok-delay-200", "ok")])
    );
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
    s.report("unschedulable-then-scheduled", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_pull_back_off_never_starts() {
    let s = Setup::new(Scenario::ImagePullBackOff).await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let error = format!(
        "rpc error: code = NotFound desc = failed to pull and unpack image \"{PROBE_IMAGE}\": failed to resolve reference \"{PROBE_IMAGE}\": {PROBE_IMAGE}: not found"
    );
    let lines = run.lines();
    // Pending within the grace window (the kubelet retries), then fatal. The back-off's message carries the last
    // pull error after the error's name, as a 1.32+ kubelet writes it.
    let expected = [
        format!("{PENDING}ErrImagePull: {PROBE_IMAGE}: {error}"),
        format!("{PENDING}ImagePullBackOff: {PROBE_IMAGE}: ErrImagePull: {error}"),
        format!(
            "error: provider preflight: the check pod cannot start — a node cannot pull {PROBE_IMAGE}: ErrImagePull: {error}"
        ),
    ];
    let n = lines.len();
    assert!(n >= 3, "{lines:#?}");
    assert_eq!(lines[n - 3..], expected, "{lines:#?}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with(PENDING) || *l == expected[2]),
        "{lines:#?}"
    );
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 1);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "not_checked"), ("vllm/ok@b", "not_checked")])
    );
    assert_eq!(v["pods"][0]["outcome"], "failed");
    assert_eq!(v["pods"][0]["failure"], json!([expected[2]]));
    assert_verdict_lines(&run, &v);
    let pod = &s.kube.created()[0];
    assert!(
        s.kube.pod_times(pod).probe_started.is_none(),
        "the probe never started"
    );
    s.assert_cleaned_up();
    s.report("image-pull-back-off", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_container_config_error_names_the_env_from_secret() {
    let s = Setup::new(Scenario::CreateContainerConfigError {
        message: "secret \"x\" not found".to_owned(),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let error = "error: provider preflight: the check pod cannot start — harness.envFrom names Secret \"x\", which this namespace does not hold";
    assert_eq!(lines.last(), Some(&error), "{lines:#?}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("error:")).count(),
        1,
        "{lines:#?}"
    );
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with(PENDING)),
        "{lines:#?}"
    );
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 1);
    assert_eq!(outcomes(&v), owned(&[("vllm/ok", "not_checked")]));
    assert_eq!(v["pods"][0]["failure"], json!([error]));
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
    s.report("create-container-config-error", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_mount_of_the_custodian_volume_from_its_event() {
    let s = Setup::new(Scenario::FailedMount {
        volume: "custodian-values".to_owned(),
        secret: "jr2-held-secrets".to_owned(),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let error = "error: provider preflight: the check pod cannot start — a secrets valueFrom names Secret \"jr2-held-secrets\" (or its key), so the Custodian's volume does not mount: MountVolume.SetUp failed for volume \"custodian-values\" : secret \"jr2-held-secrets\" not found";
    assert_eq!(lines.last(), Some(&error), "{lines:#?}");
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with(PENDING)),
        "{lines:#?}"
    );
    assert_pending_on_change(&lines);
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["pods"][0]["failure"], json!([error]));
    assert_verdict_lines(&run, &v);
    // Only an Event said so: the pod's own status shows the Custodian still being created.
    assert!(s.kube.events().iter().any(|e| e["reason"] == "FailedMount"),);
    s.assert_cleaned_up();
    s.report("failed-mount", &run);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oom_killed_mid_run_names_the_model_and_the_rest_not_checked() {
    let s = Setup::new(Scenario::OomKilledAfterFirstResult).await;
    let plan = s.plan(&[("harness", &["ok", "ok-delay-5000@a", "ok-delay-5000@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines = run.lines();
    let n = lines.len();
    assert!(n >= 3, "{lines:#?}");
    assert_eq!(
        lines[n - 2..],
        [
            "error: provider preflight: the check pod stopped (probe ran out of memory, limit 64Mi) while the check was on model \"vllm/ok-delay-5000@a\"",
            "  not checked: vllm/ok-delay-5000@b",
        ],
        "{lines:#?}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| completed_ms(l, "vllm/ok").is_some())
            .count(),
        1,
        "the result before the kill counts: {lines:#?}"
    );
    assert!(
        lines[..n - 2]
            .iter()
            .all(|l| l.starts_with(PENDING) || completed_ms(l, "vllm/ok").is_some()),
        "{lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 1);
    assert_eq!(
        outcomes(&v),
        owned(&[
            ("vllm/ok", "ok"),
            ("vllm/ok-delay-5000@a", "not_checked"),
            ("vllm/ok-delay-5000@b", "not_checked"),
        ])
    );
    assert_eq!(v["pods"][0]["failure"], json!(lines[n - 2..]));
    assert_verdict_lines(&run, &v);
    // The stand-in killed the probe; the driver deleted the pod after.
    let pod = &s.kube.created()[0];
    let times = s.kube.pod_times(pod);
    assert!(times.probe_exited.is_some() && times.probe_exited < times.deleted);
    s.assert_cleaned_up();
    s.report("oom-killed", &run);
}

/// The log is lost after the first line: the verdict comes from the termination message in the pod's status, as
/// the watch delivers it: this is the figure of "termination to verdict".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verdict_from_the_termination_message_when_the_log_is_lost() {
    let script: jr2_testkit::fake_kube::Script = Arc::new(|ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun {
                oom_after_first_result: false,
                log_lines: Some(1),
            })
            .await;
        })
    });
    let s = Setup::new(Scenario::Script(script)).await;
    let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["ok"], true);
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "ok"), ("vllm/ok@b", "ok")])
    );
    assert_verdict_lines(&run, &v);
    s.assert_cleaned_up();
    s.report("termination-message", &run);
}

/// splitmix64: a seeded PRNG, so that a failing run can be replayed.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_at_random_moments_the_pods_are_always_deleted() {
    let seed: u64 = std::env::var("JR2_E2E_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6a72_3270_7265);
    println!("interrupt seed {seed} (JR2_E2E_SEED replays it)");
    let mut rng = Prng(seed);
    let mut summary = Vec::new();
    for i in 0..10 {
        // Half the moments in the first 40 ms (the driver starts, listens for the signals, sweeps, creates), half
        // over the whole run (pending, running, done).
        let span = if rng.next().is_multiple_of(2) {
            40
        } else {
            2500
        };
        let delay = Duration::from_millis(rng.next() % span);
        let signal = if rng.next().is_multiple_of(2) {
            "INT"
        } else {
            "TERM"
        };
        let s = Setup::new(Scenario::UnschedulableThenScheduled {
            messages: vec![UNSCHEDULABLE_TAINT_MEMORY.to_owned()],
            each: Duration::from_millis(300),
        })
        .await;
        let plan = s.plan(&[("harness", &["ok-delay-1500", "ok"])]);
        let run = s
            .run_with(s.args(&plan, &[]), Vec::new(), Some((delay, signal)))
            .await;
        // Afterwards the fake holds no check pod, whatever the moment.
        s.assert_cleaned_up();
        let lines = run.lines();
        let created = s.kube.created().len();
        let outcome = match (run.code(), run.signalled_at) {
            (Some(0), _) => "finished first".to_owned(),
            (Some(130), Some(_)) if signal == "INT" => "interrupted".to_owned(),
            (Some(143), Some(_)) if signal == "TERM" => "interrupted".to_owned(),
            (None, Some(_)) => {
                // Killed by the signal before the driver listened for it: it had created nothing.
                assert_eq!(
                    created, 0,
                    "killed before its handler, yet a pod was created"
                );
                "killed before its handler".to_owned()
            }
            other => panic!(
                "run {i}: unexpected exit {other:?} for SIG{signal}:\n{}",
                run.stderr
            ),
        };
        if outcome == "interrupted" {
            assert_eq!(
                lines.last(),
                Some(&"error: provider preflight: interrupted; the check pods were deleted"),
                "{lines:#?}"
            );
            assert_eq!(run.verdict()["ok"], false);
        }
        let to_exit = run
            .signalled_at
            .map(|at| format!("{} ms", (run.ended - at).as_millis()))
            .unwrap_or_else(|| "-".to_owned());
        let create_at = s
            .kube
            .created()
            .first()
            .and_then(|p| s.kube.pod_times(p).created)
            .map(|t| format!("{} ms", (t - run.started).as_millis()))
            .unwrap_or_else(|| "-".to_owned());
        summary.push(format!(
            "run {i}: SIG{signal} at {} ms: {outcome}; pods created {created} (at {create_at}), deleted {}; signal to exit {to_exit}",
            delay.as_millis(),
            s.kube.deleted().len()
        ));
    }
    for line in summary {
        println!("{line}");
    }
}

/// Figures only: twelve runs of one pod with two models, six reading the verdict from the log's `summary` line, six
/// from the termination message (the log lost after its first line); "to the verdict" and the driver's CPU time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_termination_to_verdict_and_driver_cpu() {
    let mut from_summary = Vec::new();
    let mut from_terminated = Vec::new();
    let mut cpu = Vec::new();
    let mut cpu_proc = Vec::new();
    for log_lines in [None, Some(1)] {
        for i in 0..6 {
            // Every other run under bash's `times`; the others from /proc (clock ticks): the two readings side by side.
            let bash_times = i % 2 == 0;
            let script: jr2_testkit::fake_kube::Script = Arc::new(move |ctl| {
                Box::pin(async move {
                    ctl.schedule();
                    ctl.start_sidecars();
                    ctl.run_probe(ProbeRun {
                        oom_after_first_result: false,
                        log_lines,
                    })
                    .await;
                })
            });
            let s = Setup::new(Scenario::Script(script)).await;
            let plan = s.plan(&[("harness", &["ok", "ok@b"])]);
            let run = s
                .run_measured(s.args(&plan, &[]), Vec::new(), None, bash_times)
                .await;
            assert_eq!(run.code(), Some(0), "{}", run.stderr);
            s.assert_cleaned_up();
            let (summary, terminated) = s.to_verdict(&run);
            match log_lines {
                None => from_summary.extend(summary),
                Some(_) => from_terminated.extend(terminated),
            }
            let ms = run.cpu.map(|c| c.as_secs_f64() * 1e3);
            if bash_times {
                cpu.extend(ms);
            } else {
                cpu_proc.extend(ms);
            }
        }
    }
    let stats = |mut v: Vec<f64>| {
        if v.is_empty() {
            return "none".to_owned();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        format!(
            "min {:+.1} / median {:+.1} / max {:+.1} / mean {:+.1} ms (n={})",
            v[0],
            v[v.len() / 2],
            v[v.len() - 1],
            mean,
            v.len()
        )
    };
    println!(
        "figure: the probe's summary line in the log -> the verdict on stdout: {}",
        stats(from_summary)
    );
    println!(
        "figure: the probe container's terminated status (log lost) -> the verdict on stdout: {}",
        stats(from_terminated)
    );
    println!(
        "figure: the driver's CPU time per run, user+system (bash times, getrusage of the child): {}",
        stats(cpu)
    );
    println!(
        "figure: the driver's CPU time per run, user+system (/proc/<pid>/stat, {} ms ticks): {}",
        1000 / clock_ticks(),
        stats(cpu_proc)
    );
}
