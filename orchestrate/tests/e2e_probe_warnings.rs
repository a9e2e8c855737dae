//! End to end with a fake cluster (the harness of `e2e_fake_cluster.rs`, in `fake_cluster/mod.rs`): the probe's
//! warnings about its own run reach the user. In the pod the probe's stderr is not read; a CA file of the Harness
//! env that cannot be read is a `warning` event on its stdout, which the driver prints once and keeps in the
//! verdict's lines, and the check goes on. (That the readable CA files are still trusted is the probe's own test,
//! `check_tls.rs`: this endpoint is plain HTTP.)

mod fake_cluster;

use serde_json::{Value, json};

use fake_cluster::*;
use jr2_testkit::kube::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_file_the_probe_cannot_read_is_a_warning_the_driver_prints_once() {
    let s = Setup::new(Scenario::AllOk).await;
    let plan_path = s.plan(&[("sandbox", &["ok"]), ("instance-harness", &["ok@b"])]);
    let mut plan: Value = serde_json::from_slice(&std::fs::read(&plan_path).unwrap()).unwrap();
    for placement in plan["placements"].as_array_mut().unwrap() {
        placement["podSpec"]["containers"][0]["env"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "NODE_EXTRA_CA_CERTS", "value": "/nonexistent/jr2-extra.pem"}));
    }
    std::fs::write(&plan_path, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    let run = s.run(s.args(&plan_path, &["--context", "fake"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let warning = "warning: provider: cannot read the CA file /nonexistent/jr2-extra.pem named by \
                   NODE_EXTRA_CA_CERTS: No such file or directory (os error 2); going on without it";
    let lines = run.lines();
    assert_eq!(
        lines.iter().filter(|l| **l == warning).count(),
        1,
        "the warning once, whatever the number of pods: {lines:#?}"
    );
    let v = run.verdict();
    assert_eq!(
        outcomes(&v),
        owned(&[("vllm/ok", "ok"), ("vllm/ok@b", "ok")])
    );
    assert!(
        v["lines"].as_array().unwrap().iter().any(|l| l == warning),
        "the verdict keeps the line: {v}"
    );
    s.assert_cleaned_up();
}

/// The same with the log lost after its first line: the verdict comes from the termination message, which keeps the
/// warning, so the line is still printed (issue 27, item 18: before, only the log carried it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_warning_survives_a_lost_log() {
    let s = Setup::new(log_cut_after(Some(1))).await;
    let plan_path = s.plan(&[("sandbox", &["ok"])]);
    let mut plan: Value = serde_json::from_slice(&std::fs::read(&plan_path).unwrap()).unwrap();
    plan["placements"][0]["podSpec"]["containers"][0]["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "NODE_EXTRA_CA_CERTS", "value": "/nonexistent/jr2-extra.pem"}));
    std::fs::write(&plan_path, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    let run = s.run(s.args(&plan_path, &["--context", "fake"])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let warning = "warning: provider: cannot read the CA file /nonexistent/jr2-extra.pem named by \
                   NODE_EXTRA_CA_CERTS: No such file or directory (os error 2); going on without it";
    let lines = run.lines();
    assert_eq!(
        lines.iter().filter(|l| **l == warning).count(),
        1,
        "{lines:#?}"
    );
    assert_passes(
        &lines
            .iter()
            .copied()
            .filter(|l| *l != warning)
            .collect::<Vec<_>>(),
        &["ok"],
    );
    let v = run.verdict();
    assert!(
        v["lines"].as_array().unwrap().iter().any(|l| l == warning),
        "{v}"
    );
    s.assert_cleaned_up();
}
