//! The npm client as `jr2 up` calls it, on the real cluster: `runPreflight` of `@jr2/preflight` (the built `dist/`,
//! as `orchestrate/npm/preflight/check.sh` leaves it in the `client` step) runs the real driver, which runs the plan
//! on the real node; an abort during the run deletes the pod (exit 130).

use std::path::PathBuf;
use std::time::Duration;

use crate::harness::*;

fn client() -> PathBuf {
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("npm/preflight/dist/index.js");
    assert!(
        dist.exists(),
        "{} is missing: build the client first (orchestrate/npm/preflight/check.sh, the `client` step)",
        dist.display()
    );
    dist
}

/// The node script: runs the plan through the client, aborting after `abort_after_ms` when it is given, and prints
/// `{"exitCode": ..., "ok": ...}`.
const SCRIPT: &str = r#"
const [dist, plan, kubeconfig, binary, abortAfter] = process.argv.slice(1);
const { runPreflight } = await import(dist);
const controller = new AbortController();
if (abortAfter) setTimeout(() => controller.abort(), Number(abortAfter));
const fs = await import("node:fs");
const r = await runPreflight(JSON.parse(fs.readFileSync(plan, "utf8")), {
  kubeconfig, binary, signal: controller.signal, onLine: (l) => console.error(l),
});
console.log(JSON.stringify({ exitCode: r.exitCode, ok: r.verdict?.ok ?? null }));
"#;

fn run_client(ns: &str, models: &[&str], abort_after_ms: Option<u64>) -> serde_json::Value {
    let env = env();
    let path = write_plan(&plan(ns, &[("sandbox", harness_spec(), models)]));
    let mut cmd = env.cluster.command("node");
    cmd.args(["--input-type=module", "-e", SCRIPT])
        .arg(client())
        .arg(&path)
        .arg(&env.cluster.info().user_kubeconfig)
        .arg(env!("CARGO_BIN_EXE_jr2-preflight"))
        .arg(abort_after_ms.map(|ms| ms.to_string()).unwrap_or_default());
    let out = cmd.output().expect("run node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- the client:\n{stderr}");
    assert!(out.status.success(), "node failed: {stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_client_runs_a_plan_on_the_real_cluster() {
    let _g = shared();
    let ns = namespace("rc-client", &[]);
    let result = run_client(&ns, &["auth", "ok"], None);
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["ok"], true, "{result}");
    assert_no_pod_left(&ns);
}

#[test]
fn an_abort_through_the_client_deletes_the_pod() {
    let _g = shared();
    let ns = namespace("rc-client-abort", &[]);
    // The model stalls; the abort comes once the run is under way (the pod created and starting).
    let started = std::time::Instant::now();
    let result = run_client(&ns, &["stall"], Some(4000));
    assert_eq!(result["exitCode"], 130, "{result}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_no_pod_left(&ns);
}
