//! The whole preflight against a real cluster: `KUBECONFIG` points at one (kind, with the probe's image loaded), and
//! `JR2_E2E_PLAN` names a plan whose models the cluster's pods can reach. Ignored unless asked for:
//!
//! ```sh
//! images/build && kind load image-archive target/images/jr2-probe-<version>-amd64.docker.tar
//! KUBECONFIG=~/.kube/config JR2_E2E_PLAN=examples/plan-kind.json \
//!   cargo test -p jr2-preflight --test real_cluster -- --ignored --nocapture
//! ```

use std::process::Command;

#[test]
#[ignore = "needs cluster"]
fn the_preflight_runs_against_a_real_cluster() {
    let kubeconfig = std::env::var("KUBECONFIG").expect("KUBECONFIG must point at a cluster");
    let plan =
        std::env::var("JR2_E2E_PLAN").expect("JR2_E2E_PLAN must name a plan the cluster can run");
    let (out, verdict) = driver(&[
        "run",
        "--plan",
        &plan,
        "--kubeconfig",
        &kubeconfig,
        "--output",
        "json",
        "--timeout",
        "300s",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(verdict["exitCode"].as_i64().unwrap() as i32)
    );
    assert_eq!(verdict["ok"], true, "{stderr}");
    // No check pod survives the run.
    let namespace = verdict["namespace"].as_str().unwrap();
    let left = Command::new("kubectl")
        .args([
            "--kubeconfig",
            &kubeconfig,
            "-n",
            namespace,
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/managed-by=jr2-preflight",
            "-o",
            "name",
        ])
        .output()
        .expect("kubectl");
    let names = String::from_utf8_lossy(&left.stdout);
    assert!(
        names
            .lines()
            .all(|n| !n.contains(verdict["runId"].as_str().unwrap())),
        "left behind: {names}"
    );
}

/// `jr2-preflight check` against a real cluster: `JR2_E2E_BASE_URL` and `JR2_E2E_MODEL` name an endpoint the
/// cluster's pods reach (`JR2_E2E_NAMESPACE`, default the context's), e.g. a llama-server on the kind network:
///
/// ```sh
/// KUBECONFIG=~/.kube/config JR2_E2E_BASE_URL=http://172.18.0.1:8080/v1 JR2_E2E_MODEL=smollm2 \
///   cargo test -p jr2-preflight --test real_cluster -- --ignored --nocapture check
/// ```
#[test]
#[ignore = "needs cluster"]
fn the_check_runs_from_a_pod_of_a_real_cluster() {
    let kubeconfig = std::env::var("KUBECONFIG").expect("KUBECONFIG must point at a cluster");
    let base_url =
        std::env::var("JR2_E2E_BASE_URL").expect("JR2_E2E_BASE_URL: an endpoint pods reach");
    let model = std::env::var("JR2_E2E_MODEL").expect("JR2_E2E_MODEL: a model it serves");
    let namespace = std::env::var("JR2_E2E_NAMESPACE").ok();
    let mut args = vec![
        "check",
        "--base-url",
        &base_url,
        "--model",
        &model,
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
        "--timeout",
        "300s",
    ];
    if let Some(ns) = &namespace {
        args.extend(["-n", ns]);
    }
    let (out, verdict) = driver(&args);
    assert_eq!(
        verdict["ok"],
        true,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(verdict["pods"][0]["node"].is_string(), "it ran on a node");
}

/// Runs the driver with `args`, echoes its lines, and reads its JSON verdict.
fn driver(args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(args)
        .output()
        .expect("run jr2-preflight");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let verdict = serde_json::from_slice(&out.stdout).expect("a JSON verdict on stdout");
    (out, verdict)
}
