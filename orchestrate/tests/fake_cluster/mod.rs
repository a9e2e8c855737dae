//! The harness of the end-to-end tests with a fake cluster, shared by the test files that use it: the real
//! `jr2-preflight` binary as a process, `jr2_testkit::kube` as its cluster (through a kubeconfig), a
//! `jr2_testkit::provider` as the provider, a plan of one or more placements, and the checks every scenario
//! makes (lines, verdict against its schema, every created pod deleted with its uid precondition).
//!
//! The probe binary: `<target>/<profile>/jr2-probe`, next to the driver's. `cargo test -p jr2-preflight` builds only
//! the probe's library, so the first test runs `cargo build -p jr2-probe --bin jr2-probe` (a no-op when it is fresh,
//! so a stale probe never runs); when that cannot run, an existing binary is used, else the tests fail saying so.

// Each test file uses a part of the harness.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use jr2_testkit::kube::{FakeKube, Scenario};
use jr2_testkit::provider::FakeProvider;

pub const NS: &str = "e2e";
pub const PROBE_IMAGE: &str = "registry.example.com/jr2/jr2-probe:0.1.0";
pub const MANAGED: &str = "app.kubernetes.io/managed-by=jr2-preflight";
pub const PENDING: &str = "provider: the check pod is not running yet — ";

// ---------------------------------------------------------------------------------------------------------------
// The probe binary.

pub fn probe_bin() -> PathBuf {
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
        // Not the variables cargo sets for this test process: a build script that reads one (ring's reads
        // CARGO_MANIFEST_DIR) would see it change, and the build would rebuild ring, rustls, reqwest and the probe here,
        // then again in the next plain `cargo build` or `cargo test`: minutes per alternation.
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k == "OUT_DIR"
                || k.starts_with("CARGO_PKG_")
                || k.starts_with("CARGO_BIN_")
                || matches!(
                    k.as_ref(),
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_MANIFEST_LINKS"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "CARGO_RUSTC_CURRENT_DIR"
                )
            {
                cmd.env_remove(&key);
            }
        }
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

pub struct DriverRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// When the first byte of stdout came (the verdict, with `-o json`).
    pub verdict_at: Option<Instant>,
    pub started: Instant,
    pub ended: Instant,
    /// user + system CPU time, from /proc while the process is a zombie.
    pub cpu: Option<Duration>,
    /// When the signal was sent, if it was.
    pub signalled_at: Option<Instant>,
    /// The driver's peak RSS in KiB (its `VmHWM`, read every 5 ms while it ran; 0 when it could not be read).
    pub peak_rss_kib: u64,
}

impl DriverRun {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// The verdict on stdout, checked against its JSON Schema.
    pub fn verdict(&self) -> Value {
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

pub fn clock_ticks() -> u64 {
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
pub fn zombie_cpu(pid: u32, within: Duration) -> Option<Duration> {
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
pub fn run_driver_blocking(
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
    // The high-water mark of its memory, read until it exits (a zombie has none).
    let rss_t = std::thread::spawn(move || {
        let mut peak = 0u64;
        loop {
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                return peak;
            };
            let Some(kib) = status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            else {
                return peak;
            };
            peak = peak.max(kib);
            std::thread::sleep(Duration::from_millis(5));
        }
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
    let peak_rss_kib = rss_t.join().expect("the RSS reader");
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
        peak_rss_kib,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// A cluster, a provider, a plan.

pub struct Setup {
    pub kube: FakeKube,
    pub provider: FakeProvider,
    pub dir: PathBuf,
}

impl Setup {
    pub async fn new(scenario: Scenario) -> Self {
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

    pub fn kubeconfig(&self) -> String {
        self.dir.join("kubeconfig").display().to_string()
    }

    /// Writes the plan: per placement, its models (FakeProvider behaviours: `ok`, `ok-delay-<ms>`...).
    pub fn plan(&self, placements: &[(&str, &[&str])]) -> String {
        self.write_plan(&plan(&self.provider.base_url(), placements))
    }

    /// Writes `plan` as the plan file; its path.
    pub fn write_plan(&self, plan: &Value) -> String {
        let path = self.dir.join("plan.json");
        std::fs::write(&path, serde_json::to_vec_pretty(plan).unwrap()).unwrap();
        path.display().to_string()
    }

    /// The pods the driver posted, as it sent them.
    pub fn posted_pods(&self) -> Vec<Value> {
        self.kube
            .requests()
            .into_iter()
            // A server-side dry run (of a Harness pod, after a refusal) creates nothing.
            .filter(|r| r.method == "POST" && r.path.ends_with("/pods") && r.q("dryRun").is_none())
            .map(|r| r.body)
            .collect()
    }

    /// `run --plan <plan> --kubeconfig <kubeconfig> -o json <extra>`.
    pub fn args(&self, plan: &str, extra: &[&str]) -> Vec<String> {
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

    pub async fn run(&self, args: Vec<String>) -> DriverRun {
        self.run_with(args, Vec::new(), None).await
    }

    pub async fn run_with(
        &self,
        args: Vec<String>,
        env: Vec<(String, String)>,
        interrupt: Option<(Duration, &'static str)>,
    ) -> DriverRun {
        self.run_measured(args, env, interrupt, false).await
    }

    pub async fn run_measured(
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
    pub fn assert_cleaned_up(&self) {
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
    pub fn to_verdict(&self, run: &DriverRun) -> (Option<f64>, Option<f64>) {
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
        let last = |f: fn(&jr2_testkit::kube::PodTimes) -> Option<Instant>| {
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

    pub fn report(&self, scenario: &str, run: &DriverRun) {
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
pub fn pod_spec() -> Value {
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

pub fn plan(base_url: &str, placements: &[(&str, &[&str])]) -> Value {
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

pub fn completed_ms(line: &str, model: &str) -> Option<u64> {
    line.strip_prefix(&format!("provider: {model} completed a tool call ("))?
        .strip_suffix(" ms)")?
        .parse()
        .ok()
}

/// Every pending line is a change: never the same line twice in a row (other lines may come between), however many
/// pods: a line another pod's latest line already says is not written again.
pub fn assert_pending_on_change(lines: &[&str]) {
    let pending: Vec<&&str> = lines.iter().filter(|l| l.starts_with(PENDING)).collect();
    for pair in pending.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "a pending line is written on a change only: {lines:#?}"
        );
    }
}

/// Each model has exactly one `completed a tool call` line; every other line is a pending line.
pub fn assert_passes(lines: &[&str], models: &[&str]) {
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

pub fn assert_verdict_lines(run: &DriverRun, verdict: &Value) {
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

pub fn outcomes(verdict: &Value) -> Vec<(String, String)> {
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

pub fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The pods run as [`Scenario::AllOk`] does, but the probe's log is cut after `log_lines` lines (`None`: all of them):
/// with `Some(1)` the verdict can only come from the termination message.
pub fn log_cut_after(log_lines: Option<usize>) -> Scenario {
    let script: jr2_testkit::kube::Script = std::sync::Arc::new(move |ctl| {
        Box::pin(async move {
            ctl.schedule();
            ctl.start_sidecars();
            jr2_testkit::kube::run_probe(
                &ctl,
                jr2_testkit::kube::ProbeRun {
                    oom_after_first_result: false,
                    log_lines,
                },
            )
            .await;
        })
    });
    Scenario::Script(script)
}

/// The scheduler's two messages of `Scenario::UnschedulableThenScheduled`, each written once, in order.
pub fn assert_unschedulable_once_each(lines: &[&str], why: &str) {
    let unschedulable: Vec<&&str> = lines
        .iter()
        .filter(|l| l.starts_with(&format!("{PENDING}Unschedulable")))
        .collect();
    assert_eq!(
        unschedulable,
        [
            &format!(
                "{PENDING}Unschedulable: {}",
                jr2_testkit::kube::UNSCHEDULABLE_TAINT_MEMORY
            )
            .as_str(),
            &format!(
                "{PENDING}Unschedulable: {}",
                jr2_testkit::kube::UNSCHEDULABLE_MEMORY
            )
            .as_str(),
        ],
        "{why}: {lines:#?}"
    );
}
