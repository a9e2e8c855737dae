//! A closed stdout or a full stderr never ends `jr2-probe` in a panic (issue 11, item 10): the release build aborts on
//! one (exit 134), and in pod mode that loses the termination message the driver reads.

use std::process::{Command, Stdio};

use jr2_testkit::streams::{closed_pipe, dev_full};

#[test]
fn the_probe_survives_a_closed_stdout_and_a_full_stderr() {
    let probe = env!("CARGO_BIN_EXE_jr2-probe");
    // Bad flags with stderr full: exit 2, no abort.
    let out = Command::new(probe)
        .args(["check", "--model", "x"])
        .stdout(Stdio::piped())
        .stderr(dev_full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // Pod mode with no model and its stdout gone: the termination message is still written, exit 0.
    let term = std::env::temp_dir().join(format!("jr2-broken-streams-{}", std::process::id()));
    let spec = r#"{"schema": "jr2.dev/provider-preflight-run/v1", "models": []}"#;
    let out = Command::new(probe)
        .args(["run", "--spec-json", spec, "--termination-log"])
        .arg(&term)
        .stdout(closed_pipe())
        .stderr(dev_full())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&term).unwrap()).unwrap();
    assert_eq!(summary["n"], 0);
    let _ = std::fs::remove_file(term);
}
