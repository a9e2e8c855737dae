//! What the probe's environment can hand it besides a key: CA files that never end (`/dev/zero`), block on open (a
//! FIFO) or are too large, and proxy variables that are not URLs. Each gives one clear line quickly, with bounded
//! memory, and a malformed proxy never lets a request go direct.
//!
//! The runs that read a CA file are made under `ulimit -v` (768 MiB of address space) and a 20 s limit, so a probe
//! that reads `/dev/zero` to the end aborts on allocation instead of taking the machine's memory, and one that blocks
//! on a FIFO is killed: either fails the test.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::probe;
use jr2_testkit::provider::FakeProvider;

/// The limit of a CA file, as the probe documents it.
const CA_LIMIT: u64 = 8 * 1024 * 1024;

struct Bounded {
    code: Option<i32>,
    stderr: String,
    elapsed: Duration,
}

/// Runs `jr2-probe <args>` with `envs` in a clean environment, under 768 MiB of address space, killed after 20 s.
fn probe_bounded(args: &[&str], envs: &[(&str, &str)]) -> Bounded {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"ulimit -v 786432 && exec "$0" "$@""#)
        .arg(env!("CARGO_BIN_EXE_jr2-probe"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("run jr2-probe");
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    Bounded {
        code,
        stderr,
        elapsed: start.elapsed(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("jr2-hostile-env-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

#[tokio::test(flavor = "multi_thread")]
async fn ca_files_that_never_end_block_or_are_too_large_are_refused_quickly() {
    let dir = temp_dir("ca");
    let fifo = dir.join("ca.fifo");
    mkfifo(&fifo);
    let big = dir.join("big.pem");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(CA_LIMIT + 1)
        .unwrap();
    let fifo_s = fifo.to_str().unwrap().to_owned();
    let big_s = big.to_str().unwrap().to_owned();
    let fake = FakeProvider::start().await;
    let base = fake.base_url();

    // --ca-bundle: bad input, exit 2, one `error:` line that names the flag and says why.
    for (path, why) in [
        ("/dev/zero", "is not a regular file (a character device)"),
        (fifo_s.as_str(), "is not a regular file (a FIFO)"),
        ("/tmp", "is not a regular file (a directory)"),
        (big_s.as_str(), "is larger than 8 MiB"),
    ] {
        let run = probe_bounded(
            &[
                "check",
                "--base-url",
                &base,
                "--model",
                "ok",
                "--ca-bundle",
                path,
            ],
            &[],
        );
        assert_eq!(
            run.code,
            Some(2),
            "--ca-bundle {path}: {run:?}",
            run = run.stderr
        );
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line: {}", run.stderr);
        assert!(
            lines[0].starts_with("error: --ca-bundle: ")
                && lines[0].contains(path)
                && lines[0].contains(why),
            "--ca-bundle {path}: {}",
            run.stderr
        );
        assert!(
            run.elapsed < Duration::from_secs(5),
            "{path}: {:?}",
            run.elapsed
        );
    }

    // The env's CA files: a warning, as Node.js gives, and the check goes on without them.
    for (var, path, why) in [
        (
            "NODE_EXTRA_CA_CERTS",
            "/dev/zero",
            "is not a regular file (a character device)",
        ),
        (
            "SSL_CERT_FILE",
            fifo_s.as_str(),
            "is not a regular file (a FIFO)",
        ),
        (
            "NODE_EXTRA_CA_CERTS",
            big_s.as_str(),
            "is larger than 8 MiB",
        ),
    ] {
        // SSL_CERT_FILE is read only under --use-openssl-ca, as Node 24 reads it.
        let run = probe_bounded(
            &["check", "--base-url", &base, "--model", "ok"],
            &[(var, path), ("NODE_OPTIONS", "--use-openssl-ca")],
        );
        assert_eq!(run.code, Some(0), "{var}={path}: {}", run.stderr);
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with("warning: provider: ")
                    && l.contains(var)
                    && l.contains(path)
                    && l.contains(why)
                    && l.ends_with("going on without it")),
            "{var}={path}: {}",
            run.stderr
        );
        assert!(
            run.elapsed < Duration::from_secs(5),
            "{var}={path}: {:?}",
            run.elapsed
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_proxy_variable_is_a_warning_and_no_request_goes_direct() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    for (var, value, why) in [
        ("HTTP_PROXY", "http://u:x@[::1", "invalid IPv6 address"),
        (
            "http_proxy",
            "http://proxy.lan:99999",
            "invalid port number",
        ),
        // The target is plain HTTP, but the Harness fails on the HTTPS proxy all the same.
        ("HTTPS_PROXY", "http://u:x@[::1", "invalid IPv6 address"),
        // A SOCKS proxy: undici 7 speaks it and the probe does not, so the line says the check, not the Turn, fails.
        (
            "HTTPS_PROXY",
            "socks5://127.0.0.1:1080",
            "is a SOCKS proxy, which a Turn can use and this check cannot",
        ),
    ] {
        let run = probe(
            &["check", "--base-url", &base, "--model", "ok", "-o", "json"],
            &[(var, value)],
        )
        .await;
        let scenario = format!("{var}={value}");
        assert_eq!(run.code, 1, "{scenario}: {}", run.stderr);
        let warning = run
            .stderr
            .lines()
            .find(|l| l.starts_with("warning: provider: ") && l.contains(var))
            .unwrap_or_else(|| panic!("{scenario}: no warning: {}", run.stderr));
        let socks = value.starts_with("socks");
        assert!(
            warning.contains(var)
                && warning.contains(why)
                && (socks || warning.contains("the Harness")),
            "{scenario}: {warning}"
        );
        assert!(
            !run.stderr.contains("u:x@"),
            "{scenario}: the credentials are shown: {}",
            run.stderr
        );
        let v = run.verdict();
        let m = &v.models[0];
        assert_eq!(m.outcome.as_str(), "unreachable", "{scenario}: {m:?}");
        assert_eq!(m.code.as_str(), "PROVIDER_UNREACHABLE");
        let error = m.error.as_deref().unwrap_or("");
        let expected = if socks {
            format!("{var} is a SOCKS proxy, which this check cannot use")
        } else {
            format!("{var} is not a proxy URL")
        };
        assert!(error.starts_with(&expected), "{scenario}: {error}");
    }
    assert!(
        fake.requests().is_empty(),
        "a request went direct: {:?}",
        fake.requests()
    );
    // A well-formed one that is empty, or a NO_PROXY alone, changes nothing.
    let run = probe(
        &["check", "--base-url", &base, "--model", "ok"],
        &[("HTTPS_PROXY", ""), ("NO_PROXY", "*")],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stderr.contains("warning: provider: HTTPS_PROXY"),
        "{}",
        run.stderr
    );
}
