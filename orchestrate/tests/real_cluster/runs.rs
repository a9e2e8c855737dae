//! Whole runs of the driver on the real cluster: `run` with the Custodian as a native sidecar, `check`, the dry run
//! against the real API server's server-side dry run, the skip.

use serde_json::json;

use crate::harness::*;

/// A plan of two placements and three models runs as the least-privilege user: the real PSA admits the check pods
/// in a `restricted` namespace, the real kubelet starts the Custodian stand-in as a native sidecar and then the real
/// probe image, whose request reaches the provider through the Custodian, which swaps the Stand-in for the held key
/// (the model `auth` answers only to it). The verdict is ok, and no pod is left.
#[test]
fn a_plan_passes_through_the_custodian_and_leaves_no_pod() {
    let ns = namespace(
        "rc-pass",
        &[("pod-security.kubernetes.io/enforce", "restricted")],
    );
    let plan = plan(
        &ns,
        &[
            ("sandbox", harness_spec(), &["auth", "ok"]),
            ("instance", harness_spec(), &["ok@2"]),
        ],
    );
    let run = run_plan(&plan, &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let verdict = run.verdict();
    assert_eq!(verdict["ok"], json!(true));
    assert_eq!(
        verdict["pods"].as_array().map(Vec::len),
        Some(2),
        "{verdict:#}"
    );
    assert_passes(&run, &["auth", "ok", "ok@2"]);
    for pod in verdict["pods"].as_array().unwrap() {
        assert_eq!(
            pod["node"],
            json!("jr2-node"),
            "it ran on the real node: {pod:#}"
        );
    }
    assert_no_pod_left(&ns);
}
