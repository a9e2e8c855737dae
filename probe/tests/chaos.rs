//! Hostile endpoints: the real `jr2-probe` binary against the raw TCP chaos server (`tests/src/chaos.rs`), whose HTTP
//! framing itself misbehaves. For every case: the right outcome, the process done within its deadline plus 2 s, a
//! peak RSS of at most 64 MiB (measured: `/usr/bin/time -f %M`, or the process's `VmHWM` where `time` is missing), and
//! the key (given through `--api-key-env`, echoed back by the server where a body can carry it) never in stdout or
//! stderr. The table of every case is printed, and written to `$CARGO_TARGET_TMPDIR/reliability/chaos.md`.
//!
//! Every connection goes to 127.0.0.1.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jr2_probe::outcome::Outcome;
use jr2_probe::verdict::Verdict;
use jr2_testkit::chaos::{Chaos, ChaosServer};

/// The key every case holds. Not `sk-`-shaped, so only the probe's knowledge of the key it holds can hide it.
const KEY: &str = "chaos-held-key-5f1e9a2c7b3d8e60";
const KEY_ENV: &str = "CHAOS_API_KEY";
/// The bound on peak RSS.
const MAX_RSS_KIB: u64 = 64 * 1024;
/// How far past its deadline a case may finish.
const SLACK: Duration = Duration::from_secs(2);

/// What a measured run of the binary gave.
struct Measured {
    code: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    peak_rss_kib: u64,
}

fn scratch(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("jr2-chaos-{}-{n}-{name}", std::process::id()))
}

/// Runs `jr2-probe <args>` with `envs` on a clean environment, and measures its peak RSS: with `/usr/bin/time -f %M`
/// when the machine has it, else by reading `/proc/<pid>/status` (`VmHWM`, the high-water mark) every 5 ms.
fn run_measured(args: &[String], envs: &[(String, String)]) -> Measured {
    let (out_path, err_path, time_path) = (scratch("out"), scratch("err"), scratch("time"));
    let gnu_time = std::path::Path::new("/usr/bin/time").exists();
    let mut cmd = if gnu_time {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&time_path)
            .arg(env!("CARGO_BIN_EXE_jr2-probe"));
        c
    } else {
        Command::new(env!("CARGO_BIN_EXE_jr2-probe"))
    };
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"));
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("run jr2-probe");
    let mut hwm_kib = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if !gnu_time {
            hwm_kib = hwm_kib.max(vm_hwm_kib(child.id()).unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = start.elapsed();
    let read = |p: &PathBuf| {
        let s = String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
        let _ = std::fs::remove_file(p);
        s
    };
    let (stdout, stderr) = (read(&out_path), read(&err_path));
    let peak_rss_kib = if gnu_time {
        // `-o` gets "Command exited with non-zero status N" first on a failure; the figure is the last line.
        let text = read(&time_path);
        text.lines()
            .last()
            .and_then(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("/usr/bin/time wrote no figure: {text:?}"))
    } else {
        hwm_kib
    };
    Measured {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
        elapsed,
        peak_rss_kib,
    }
}

fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// What a case must end with, beyond the outcome.
type Check = Box<dyn Fn(&Verdict, &ChaosServer) -> Result<(), String> + Send + Sync>;

struct Case {
    name: &'static str,
    chaos: Chaos,
    /// The `--timeout`: the case's deadline.
    deadline: Duration,
    outcome: Outcome,
    /// The `<error>` must contain each of these.
    words: &'static [&'static str],
    /// `https` base URL (the TLS stall), or a proxy in front of a loopback `https` target.
    how: How,
    max_tries: u32,
    check: Option<Check>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    Http,
    Https,
    /// `HTTPS_PROXY` names the chaos server; the target is `https://127.0.0.1:9/v1` (the proxy is asked for it and
    /// never connects anywhere).
    Proxy,
}

fn case(
    name: &'static str,
    chaos: Chaos,
    deadline_s: u64,
    outcome: Outcome,
    words: &'static [&'static str],
) -> Case {
    Case {
        name,
        chaos,
        deadline: Duration::from_secs(deadline_s),
        outcome,
        words,
        how: How::Http,
        max_tries: 4,
        check: None,
    }
}

fn cases() -> Vec<Case> {
    let half = Duration::from_millis(500);
    let no_answer = &["no answer in 3 s"];
    let mut v = vec![
        case(
            "stall before headers",
            Chaos::StallBeforeHeaders,
            3,
            Outcome::Timeout,
            no_answer,
        ),
        case(
            "stall mid-stream",
            Chaos::StallMidStream,
            3,
            Outcome::Timeout,
            no_answer,
        ),
        case(
            "slowloris: status line, a byte every 0.5 s",
            Chaos::SlowlorisHead { every: half },
            3,
            Outcome::Timeout,
            no_answer,
        ),
        case(
            "slowloris: body, a byte every 0.5 s",
            Chaos::SlowlorisBody { every: half },
            3,
            Outcome::Timeout,
            no_answer,
        ),
        case(
            "connection reset mid-stream",
            Chaos::ResetMidStream,
            3,
            Outcome::Protocol,
            &["the stream broke off", "connection reset"],
        ),
        case(
            "connection closed inside a chunk",
            Chaos::CloseMidChunk,
            3,
            Outcome::Protocol,
            &["the stream broke off"],
        ),
        case(
            "64 MiB line, no newline",
            Chaos::EndlessLine {
                bytes: 64 * 1024 * 1024,
            },
            10,
            Outcome::Protocol,
            &["longer than 1048576 bytes"],
        ),
        case(
            "invalid UTF-8",
            Chaos::InvalidUtf8,
            3,
            Outcome::Protocol,
            &["not valid UTF-8"],
        ),
        case(
            "garbage SSE",
            Chaos::GarbageSse,
            3,
            Outcome::Protocol,
            &["not a chat completion chunk"],
        ),
        case(
            "endless text, no tool call",
            Chaos::EndlessText,
            3,
            Outcome::Timeout,
            no_answer,
        ),
        case(
            "endless keep-alive comments",
            Chaos::EndlessComments,
            3,
            Outcome::Timeout,
            no_answer,
        ),
        case(
            "retry-after: 99999",
            Chaos::RateLimited {
                retry_after: "99999".to_owned(),
            },
            5,
            Outcome::Busy,
            &["HTTP 429: Rate limit reached for key [redacted]"],
        ),
        case(
            "retry-after: -5",
            Chaos::RateLimited {
                retry_after: "-5".to_owned(),
            },
            5,
            Outcome::Busy,
            &["HTTP 429"],
        ),
        case(
            "retry-after: soon (garbage)",
            Chaos::RateLimited {
                retry_after: "soon".to_owned(),
            },
            5,
            Outcome::Busy,
            &["HTTP 429"],
        ),
        case(
            "64 MiB error body",
            Chaos::HugeErrorBody {
                bytes: 64 * 1024 * 1024,
            },
            10,
            Outcome::Http,
            &["HTTP 500: "],
        ),
        case(
            "64 MiB header line",
            Chaos::HugeHeader {
                bytes: 64 * 1024 * 1024,
            },
            10,
            Outcome::Protocol,
            &["the answer is not HTTP/1.1 the probe can read: message head is too large"],
        ),
        case(
            "not HTTP (an SSH banner)",
            Chaos::NotHttp,
            3,
            Outcome::Protocol,
            &["the answer is not HTTP/1.1 the probe can read: invalid HTTP version parsed"],
        ),
        case(
            "redirect loop (307 to itself)",
            Chaos::RedirectLoop,
            3,
            Outcome::Http,
            &["too many redirects"],
        ),
        case(
            "TLS handshake stalls",
            Chaos::Silent,
            3,
            Outcome::Unreachable,
            &["connection timed out after 3 s"],
        ),
        case(
            "proxy refuses CONNECT (403)",
            Chaos::ProxyRefuse,
            3,
            Outcome::Unreachable,
            &["the proxy refused the tunnel"],
        ),
        case(
            "proxy stalls CONNECT",
            Chaos::ProxyStall,
            3,
            Outcome::Unreachable,
            &["connection timed out after 3 s"],
        ),
    ];
    for c in &mut v {
        match c.name {
            "TLS handshake stalls" => c.how = How::Https,
            "proxy refuses CONNECT (403)" | "proxy stalls CONNECT" => c.how = How::Proxy,
            _ => {}
        }
        match c.name {
            "retry-after: 99999" => {
                c.check = Some(Box::new(|v, _| {
                    let m = &v.models[0];
                    // A wait over 60 s is not waited: one try, the wait asked recorded, none taken.
                    let t = &m.tries;
                    if t.len() == 1
                        && t[0].wait_asked_ms == Some(99_999_000)
                        && t[0].wait_taken_ms == 0
                    {
                        Ok(())
                    } else {
                        Err(format!("want one try asking 99999 s, none taken: {t:?}"))
                    }
                }));
            }
            "retry-after: -5" | "retry-after: soon (garbage)" => {
                c.max_tries = 3;
                c.check = Some(Box::new(|v, _| {
                    // No wait asked for (the value is not one), so the backoff's waits are taken: every try made.
                    let t = &v.models[0].tries;
                    let asked = t.iter().any(|t| t.wait_asked_ms.is_some());
                    let taken = t[..t.len() - 1].iter().all(|t| t.wait_taken_ms >= 500);
                    if t.len() == 3 && !asked && taken {
                        Ok(())
                    } else {
                        Err(format!(
                            "want 3 tries with backoff waits, none asked: {t:?}"
                        ))
                    }
                }));
            }
            "redirect loop (307 to itself)" => {
                c.check = Some(Box::new(|_, server| {
                    // The probe follows 5 same-origin redirects: 6 requests, on however many connections; never without
                    // end.
                    let n = server.connections();
                    if (1..=6).contains(&n) {
                        Ok(())
                    } else {
                        Err(format!("{n} connections"))
                    }
                }));
            }
            "endless text, no tool call" | "endless keep-alive comments" => {
                c.check = Some(Box::new(|v, server| {
                    // The server really kept sending (the probe read on until its deadline), and the answer kept is
                    // bounded.
                    let sent = server.bytes_sent();
                    let answer = v.models[0].answer.as_deref().unwrap_or("");
                    if sent > 1024 * 1024 && answer.chars().count() <= 600 {
                        Ok(())
                    } else {
                        Err(format!(
                            "{sent} bytes sent, an answer of {} chars",
                            answer.chars().count()
                        ))
                    }
                }));
            }
            _ => {}
        }
    }
    v
}

struct Row {
    name: &'static str,
    outcome: String,
    elapsed: Duration,
    deadline: Duration,
    rss_kib: u64,
    failures: Vec<String>,
}

async fn run_case(c: &Case) -> Row {
    let server = ChaosServer::start(c.chaos.clone()).await;
    let (base, proxy) = match c.how {
        How::Http => (server.base_url(), None),
        How::Https => (server.https_base_url(), None),
        How::Proxy => (
            "https://127.0.0.1:9/v1".to_owned(),
            Some(server.proxy_url()),
        ),
    };
    let timeout = format!("{}s", c.deadline.as_secs());
    let args: Vec<String> = [
        "check",
        "--base-url",
        &base,
        "--model",
        "chaos/model",
        "--api-key-env",
        KEY_ENV,
        "--timeout",
        &timeout,
        "--max-tries",
        &c.max_tries.to_string(),
        "-o",
        "json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut envs = vec![(KEY_ENV.to_owned(), KEY.to_owned())];
    if let Some(p) = proxy {
        envs.push(("HTTPS_PROXY".to_owned(), p));
        envs.push(("NO_PROXY".to_owned(), String::new()));
        envs.push(("NODE_USE_ENV_PROXY".to_owned(), "1".to_owned()));
    }
    let run = tokio::task::spawn_blocking(move || run_measured(&args, &envs))
        .await
        .expect("join");
    let mut failures = Vec::new();
    let mut outcome = "?".to_owned();
    match serde_json::from_str::<Verdict>(&run.stdout) {
        Ok(v) => {
            let m = &v.models[0];
            outcome = m.outcome.as_str().to_owned();
            if m.outcome != c.outcome {
                failures.push(format!(
                    "outcome {} (want {}): {:?}",
                    m.outcome.as_str(),
                    c.outcome.as_str(),
                    m.error
                ));
            }
            let error = m.error.as_deref().unwrap_or("");
            for w in c.words {
                if !error.contains(w) {
                    failures.push(format!("the error {error:?} does not say {w:?}"));
                }
            }
            let want_code = i32::from(m.outcome.level(m.api) == jr2_probe::outcome::Level::Error);
            if run.code != want_code {
                failures.push(format!("exit code {} (want {want_code})", run.code));
            }
            if let Some(check) = &c.check
                && let Err(e) = check(&v, &server)
            {
                failures.push(e);
            }
        }
        Err(e) => failures.push(format!(
            "stdout is not a verdict ({e}); exit {}; stderr: {}",
            run.code, run.stderr
        )),
    }
    if run.elapsed > c.deadline + SLACK {
        failures.push(format!(
            "took {:?}, past its deadline {:?} + {:?}",
            run.elapsed, c.deadline, SLACK
        ));
    }
    if run.peak_rss_kib > MAX_RSS_KIB {
        failures.push(format!("peak RSS {} KiB > 64 MiB", run.peak_rss_kib));
    }
    if run.stdout.contains(KEY) || run.stderr.contains(KEY) {
        failures.push("the key appears in the output".to_owned());
    }
    if run.peak_rss_kib == 0 {
        failures.push("no RSS figure".to_owned());
    }
    Row {
        name: c.name,
        outcome,
        elapsed: run.elapsed,
        deadline: c.deadline,
        rss_kib: run.peak_rss_kib,
        failures,
    }
}

fn table(rows: &[Row]) -> String {
    let mut t = String::from(
        "| case | outcome | elapsed / deadline | peak RSS | |\n|---|---|---|---|---|\n",
    );
    for r in rows {
        t.push_str(&format!(
            "| {} | {} | {:.2} s / {} s | {:.1} MiB | {} |\n",
            r.name,
            r.outcome,
            r.elapsed.as_secs_f64(),
            r.deadline.as_secs(),
            r.rss_kib as f64 / 1024.0,
            if r.failures.is_empty() {
                "ok"
            } else {
                "FAILED"
            }
        ));
    }
    t
}

#[tokio::test(flavor = "multi_thread")]
async fn hostile_endpoints_end_in_time_in_bounded_memory_without_the_key() {
    let cases = cases();
    // A few at once: the cases spend most of their time waiting on their deadlines.
    let permits = Arc::new(tokio::sync::Semaphore::new(4));
    let mut handles = Vec::new();
    for c in cases {
        let permits = permits.clone();
        handles.push(tokio::spawn(async move {
            let _p = permits.acquire_owned().await.expect("semaphore");
            run_case(&c).await
        }));
    }
    let mut rows = Vec::new();
    for h in handles {
        rows.push(h.await.expect("a case panicked"));
    }
    let text = table(&rows);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("reliability");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("chaos.md"), &text);
    println!("{text}");
    let failures: Vec<String> = rows
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.name)))
        .collect();
    assert!(failures.is_empty(), "{text}\n{}", failures.join("\n"));
}

/// In process: a checker whose connect limit (30 s) is longer than the model's deadline (2 s), so the deadline is
/// what ends a connection that never comes up.
fn checker(timeout: Duration, max_tries: u32) -> jr2_probe::check::Checker {
    use jr2_probe::check::{Checker, Settings};
    use jr2_probe::retry::RetryPolicy;
    use jr2_probe::transport::{ClientFactory, Trust};
    Checker::new(
        ClientFactory::new(Trust::load(&[]).unwrap(), Duration::from_secs(30)),
        jr2_probe::sanitize::Redactor::default(),
        Settings {
            timeout,
            retry: RetryPolicy {
                max_tries,
                ..RetryPolicy::default()
            },
            concurrency: 1,
            per_host: 1,
            waiting_note: Settings::DEFAULT_WAITING_NOTE,
        },
    )
}

fn target(base: &str) -> jr2_probe::target::Target {
    jr2_probe::target::Target::test(jr2_probe::api::ApiKind::OpenAiCompletions)
        .model("chaos")
        .base_url(base)
}

/// The model's deadline passing while the connection is still coming up (a TLS handshake that never ends) is a
/// connect timeout, whichever timer fires first: not "no answer", which would send the reader to a loading model.
#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_that_passes_while_connecting_is_a_connect_timeout() {
    let server = ChaosServer::start(Chaos::Silent).await;
    let r = checker(Duration::from_secs(2), 1)
        .check(&target(&server.https_base_url()))
        .await;
    assert_eq!(r.outcome, Outcome::Unreachable, "{:?}", r.error);
    assert_eq!(r.error.as_deref(), Some("connection timed out after 2 s"));
    assert!(
        Duration::from_millis(r.elapsed_ms) <= Duration::from_secs(2) + SLACK,
        "{} ms",
        r.elapsed_ms
    );
}

/// A retry on a pooled connection that then stalls is a timeout (no connection was coming up), not a connect
/// timeout.
#[tokio::test(flavor = "multi_thread")]
async fn a_stall_on_a_pooled_connection_after_a_429_is_busy() {
    let server = ChaosServer::start(Chaos::RateLimitedThenStall).await;
    let r = checker(Duration::from_secs(3), 3)
        .check(&target(&server.base_url()))
        .await;
    // A 429, then a retry that never gets an answer: busy, as the user's document says (issue 12, item 2).
    assert_eq!(r.outcome, Outcome::Busy, "{:?}", r.error);
    assert!(
        r.error
            .as_deref()
            .is_some_and(|e| e.starts_with("the retry got no answer in ")),
        "{:?}",
        r.error
    );
    assert_eq!(r.tries.len(), 2, "{:?}", r.tries);
    assert_eq!(r.tries[0].status, Some(429));
    assert_eq!(
        r.tries[1].timings.connect_ms, None,
        "the retry reused the connection"
    );
    // The tries' one connection, and the look at llama-server's `/slots` 2 s before the deadline, on a client of its
    // own so that it never takes the tries' pooled connection (issue 27, item 8).
    assert_eq!(server.connections(), 2);
}
