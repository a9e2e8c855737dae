//! Ctrl-C and SIGTERM while the probe runs on the real node: the driver deletes its pods (the real API server's
//! graceful delete, the real kubelet stopping the containers) and exits as the shells expect.

use std::time::{Duration, Instant};

use crate::harness::*;

fn interrupt(ns: &str, signal: &str, code: i32) {
    let path = write_plan(&plan(ns, &[("sandbox", harness_spec(), &["stall"])]));
    let started = Instant::now();
    let child = spawn_driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "-o", "json"],
    );
    let cluster = &env().cluster;
    // The condition: the probe container runs (its request is in flight, the provider stalls).
    cluster.wait_for(
        "the probe container to run",
        Duration::from_secs(90),
        || {
            cluster.pods(ns, MANAGED).iter().any(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["name"] == "probe" && !c["state"]["running"].is_null())
            })
        },
    );
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let signalled = Instant::now();
    let run = finish(child, started, Duration::from_secs(120));
    assert_eq!(run.code(), Some(code), "{}", run.stderr);
    assert!(
        signalled.elapsed() < Duration::from_secs(30),
        "the driver ended {:?} after the signal",
        signalled.elapsed()
    );
    assert_no_pod_left(ns);
}

#[test]
fn ctrl_c_deletes_the_check_pod_and_exits_130() {
    let _g = shared();
    interrupt(&namespace("rc-sigint", &[]), "INT", 130);
}

#[test]
fn sigterm_deletes_the_check_pod_and_exits_143() {
    let _g = shared();
    interrupt(&namespace("rc-sigterm", &[]), "TERM", 143);
}
