//! Runs the real `jr2-probe` binary and reads what it wrote.

#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

use jr2_probe::verdict::Verdict;

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// The stderr lines.
    pub fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// The verdict on stdout (`--output json`).
    pub fn verdict(&self) -> Verdict {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not a verdict ({e}):\n{}", self.stdout))
    }
}

/// Runs `jr2-probe <args>` with `envs` added to a clean environment (no proxy, no CA variables), in a blocking
/// thread so the test's own servers keep serving.
pub async fn probe(args: &[&str], envs: &[(&str, &str)]) -> Run {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let envs: Vec<(String, String)> = envs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_jr2-probe"));
        cmd.args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let start = Instant::now();
        let out = cmd.output().expect("run jr2-probe");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            elapsed: start.elapsed(),
        }
    })
    .await
    .expect("join")
}

/// The loopback warning every by-hand run against the fake prints first.
pub fn loopback_line(host: &str) -> String {
    jr2_probe::render::loopback_warning(host)
}

/// Checks `target` in this process, trusting the test CA in `ca_file` on top of Mozilla's roots, with the target's
/// key known to the redactor: what the per-API tests share.
pub async fn check_trusting(
    ca_file: &std::path::Path,
    target: &jr2_probe::target::Target,
    timeout: Duration,
    max_tries: u32,
) -> jr2_probe::verdict::ModelResult {
    use jr2_probe::check::{Checker, Settings};
    use jr2_probe::retry::RetryPolicy;
    use jr2_probe::sanitize::Redactor;
    use jr2_probe::transport::{CaFile, ClientFactory, Trust};
    let key = target.key_value().unwrap_or_default().to_owned();
    let trust = Trust::load(&[CaFile {
        source_name: "--ca-bundle".into(),
        path: ca_file.to_path_buf(),
    }])
    .unwrap();
    let settings = Settings {
        timeout,
        retry: RetryPolicy {
            max_tries,
            ..Default::default()
        },
        concurrency: 4,
    };
    Checker::new(
        ClientFactory::new(trust, Duration::from_secs(5)),
        Redactor::new([key]),
        settings,
    )
    .check(target)
    .await
}
