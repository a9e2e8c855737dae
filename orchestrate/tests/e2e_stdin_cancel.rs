//! End to end with a fake cluster, the cancel over stdin (`--cancel-on-stdin`, what `@jr2/preflight` passes: on
//! Windows a parent cannot send SIGINT, and Node's `kill()` ends the child before it deletes anything): the real
//! `jr2-preflight` binary, the plan written on its stdin and stdin kept open.
//!
//! - A `cancel` line once the check pod is created: the pod is deleted, the interrupted line is the last, exit 130,
//!   and the verdict says 130 too; the same when stdin is closed instead.
//! - Without the flag the end of stdin after the plan is only the end of the plan: the run goes on and passes.

mod fake_cluster;

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use fake_cluster::*;
use jr2_testkit::kube::Scenario;

const INTERRUPTED: &str = "error: provider preflight: interrupted; the check pods were deleted";

/// What the test does to stdin once the check pod is created.
#[derive(Clone, Copy, Debug)]
enum Then {
    /// Writes `cancel` and a newline, stdin still open.
    CancelLine,
    /// Closes stdin.
    Close,
    /// Nothing (stdin was closed right after the plan).
    Nothing,
}

struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Ended {
    fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jr2-preflight")
}

/// Runs `jr2-preflight run --plan - ... <extra>` with the plan written on stdin; with [`Then::Nothing`] stdin is
/// closed after it, else kept open until the fake holds the check pod, then `then`.
async fn run_on_stdin(s: &Setup, plan: &str, extra: &[&str], then: Then) -> Ended {
    let mut child = spawn(&s.args("-", extra));
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(&std::fs::read(plan).expect("the plan"))
        .expect("write the plan");
    stdin.flush().expect("flush the plan");
    let mut stdin = Some(stdin);
    if matches!(then, Then::Nothing) {
        drop(stdin.take());
    }
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    if !matches!(then, Then::Nothing) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while s.kube.created().is_empty() {
            assert!(
                Instant::now() < deadline,
                "no check pod created within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut stdin = stdin.take().expect("stdin still open");
        if matches!(then, Then::CancelLine) {
            stdin.write_all(b"cancel\n").expect("write the cancel");
            stdin.flush().expect("flush the cancel");
            // Kept open until the driver is done: only the line cancels.
            let status = wait(child).await;
            drop(stdin);
            return ended(status, out_t, err_t);
        }
        drop(stdin);
    }
    let status = wait(child).await;
    ended(status, out_t, err_t)
}

async fn wait(mut child: Child) -> std::process::ExitStatus {
    tokio::time::timeout(
        Duration::from_secs(120),
        tokio::task::spawn_blocking(move || child.wait().expect("wait for jr2-preflight")),
    )
    .await
    .expect("the driver ends within 120 s")
    .expect("join")
}

fn ended(
    status: std::process::ExitStatus,
    out_t: std::thread::JoinHandle<String>,
    err_t: std::thread::JoinHandle<String>,
) -> Ended {
    let ended = Ended {
        code: status.code(),
        stdout: out_t.join().expect("stdout reader"),
        stderr: err_t.join().expect("stderr reader"),
    };
    eprintln!("--- jr2-preflight: {status:?}\n{}", ended.stderr);
    ended
}

/// Interrupted as by SIGINT: 130 in the exit and in the verdict, the interrupted line last, no pod left.
fn assert_cancelled(s: &Setup, run: &Ended, how: &str) {
    assert_eq!(run.code, Some(130), "{how}: {}", run.stderr);
    assert_eq!(
        run.lines().last(),
        Some(&INTERRUPTED),
        "{how}: {}",
        run.stderr
    );
    let verdict: Value = serde_json::from_str(&run.stdout).expect("the verdict on stdout");
    assert_eq!(verdict["ok"], false, "{how}: {verdict}");
    assert_eq!(verdict["exitCode"], 130, "{how}: {verdict}");
    assert_eq!(s.kube.created().len(), 1, "{how}: one pod was created");
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_line_mid_run_deletes_the_pod_and_exits_130() {
    // The probe's image never pulls: without a cancel the run would wait until its deadline.
    let s = Setup::new(Scenario::ImagePullBackOff).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = run_on_stdin(&s, &plan, &["--cancel-on-stdin"], Then::CancelLine).await;
    assert_cancelled(&s, &run, "a cancel line");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_stdin_mid_run_cancels_too() {
    let s = Setup::new(Scenario::ImagePullBackOff).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = run_on_stdin(&s, &plan, &["--cancel-on-stdin"], Then::Close).await;
    assert_cancelled(&s, &run, "stdin closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_flag_the_end_of_stdin_is_only_the_end_of_the_plan() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan = s.plan(&[("harness", &["ok"])]);
    let run = run_on_stdin(&s, &plan, &[], Then::Nothing).await;
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stderr.contains(INTERRUPTED), "{}", run.stderr);
    assert_passes(&run.lines(), &["ok"]);
    s.assert_cleaned_up();
}
