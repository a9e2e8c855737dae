//! The control plane failing under a run: the API server restarted while the probe runs (its watches and the log
//! stream cut, then a new API server with the same etcd). The verdict says what happened, and no pod is left once
//! the API server is back. Alone on the cluster: the restart would disturb the other tests.

use std::time::{Duration, Instant};

use crate::harness::*;

#[test]
fn the_api_server_restarted_mid_run_leaves_no_pod() {
    let _g = alone();
    let ns = namespace("rc-restart", &[]);
    let path = write_plan(&plan(
        &ns,
        &[("sandbox", harness_spec(), &["ok-delay-8000"])],
    ));
    let started = Instant::now();
    let child = spawn_driver(
        As::User,
        &[
            "run",
            "--plan",
            path.to_str().unwrap(),
            "-o",
            "json",
            "--timeout",
            "90s",
        ],
    );
    let cluster = &env().cluster;
    cluster.wait_for(
        "the probe container to run",
        Duration::from_secs(90),
        || {
            cluster.pods(&ns, MANAGED).iter().any(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["name"] == "probe" && !c["state"]["running"].is_null())
            })
        },
    );
    cluster
        .restart("kube-apiserver")
        .expect("the API server restarts");
    let run = finish(child, started, Duration::from_secs(150));
    // Either the run carried on through the restart (its watch and log re-established) and the model passed, or it
    // said the cluster was lost: never a crash, never silence.
    match run.code() {
        Some(0) => assert_passes(&run, &["ok-delay-8000"]),
        Some(1) => assert!(
            run.lines().iter().any(|l| l.starts_with("error: ")),
            "a failed run says why: {}",
            run.stderr
        ),
        other => panic!("exit {other:?}: {}", run.stderr),
    }
    assert!(run.verdict().is_object());
    assert_no_pod_left(&ns);
}
