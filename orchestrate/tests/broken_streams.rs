//! A stdout or stderr that cannot be written never ends either binary in a panic (issue 11, item 10).
//!
//! The release build aborts on a panic (exit 134: no line, no verdict, and for the driver a check pod that may
//! outlive the run), and `println!` panics on a failed write. Here stdout is `/dev/full` (ENOSPC) or a pipe whose
//! reader is already gone (EPIPE: `jr2-preflight --dry-run | true`), and stderr is `/dev/full`. What is wanted: a
//! failed stdout is one `error:` line on stderr and exit 1; a failed stderr changes nothing but the lines.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use jr2_testkit::streams::{closed_pipe, dev_full};

fn example_plan() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan.json")
}

fn driver(args: &[&str], stdout: impl Into<Stdio>, stderr: impl Into<Stdio>) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .arg("run")
        .arg("--plan")
        .arg(example_plan())
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .expect("run jr2-preflight")
}

#[test]
fn a_full_or_closed_stdout_is_one_line_and_exit_1() {
    let cases: [(&[&str], &str); 2] = [
        (&["--dry-run"], "the dry-run pods"),
        (
            &["--skip-provider-preflight", "--output", "json"],
            "the verdict",
        ),
    ];
    for (args, what) in cases {
        for (stdout, why) in [
            (
                Stdio::from(dev_full()),
                "No space left on device (os error 28)",
            ),
            (Stdio::from(closed_pipe()), "Broken pipe (os error 32)"),
        ] {
            let out = driver(args, stdout, Stdio::piped());
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?} ({why}): {stderr}");
            let want = format!("error: cannot write {what} to stdout: {why}");
            assert_eq!(
                stderr.lines().last(),
                Some(want.as_str()),
                "{args:?}: {stderr}"
            );
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
}

#[test]
fn a_full_stderr_changes_nothing_but_the_lines() {
    // Bad input still exits 2; the skipped preflight still exits 0 with its verdict on stdout.
    let out = driver(
        &["--namespace", "Not_A_Namespace"],
        Stdio::piped(),
        dev_full(),
    );
    assert_eq!(out.status.code(), Some(2));
    let out = driver(
        &["--skip-provider-preflight", "--output", "json"],
        Stdio::piped(),
        dev_full(),
    );
    assert_eq!(out.status.code(), Some(0));
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the verdict");
    assert_eq!(verdict["ok"], true);
}
