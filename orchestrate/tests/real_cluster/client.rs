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

/// The node script: runs the plan through the client with the options given (JSON; `abortAfterMs` aborts the run that
/// long after it starts), and prints what `jr2 up` reads of the result: the exit code, the verdict (ok, its models,
/// its lines), every line in order as `onLine` saw it and as the result has it, and the dry run's pods.
const SCRIPT: &str = r#"
const [dist, plan, kubeconfig, binary, optionsJson] = process.argv.slice(1);
const { runPreflight } = await import(dist);
const { abortAfterMs, ...options } = JSON.parse(optionsJson);
const controller = new AbortController();
if (abortAfterMs !== undefined) setTimeout(() => controller.abort(), abortAfterMs);
const fs = await import("node:fs");
const seen = [];
const r = await runPreflight(JSON.parse(fs.readFileSync(plan, "utf8")), {
  ...options, kubeconfig, binary, signal: controller.signal, onLine: (l) => { seen.push(l); console.error(l); },
});
console.log(JSON.stringify({
  exitCode: r.exitCode, killed: r.killed, ok: r.verdict?.ok ?? null, skipped: r.verdict?.skipped ?? null,
  models: r.verdict?.models?.map((m) => [m.model, m.outcome, m.code]) ?? null,
  verdictLines: r.verdict?.lines ?? null, lines: r.lines, seen, dryRunPods: r.dryRunPods ?? null,
}));
"#;

/// Runs a plan of `models` (the fake provider's, behind the Custodian) in `ns` through the client, with `options`.
fn client_run(ns: &str, models: &[&str], options: serde_json::Value) -> serde_json::Value {
    let plan = plan(ns, &[("sandbox", harness_spec(), models)]);
    client_run_plan(&plan, options)
}

fn client_run_plan(plan: &serde_json::Value, options: serde_json::Value) -> serde_json::Value {
    let env = env();
    let path = write_plan(plan);
    let mut cmd = env.cluster.command("node");
    cmd.args(["--input-type=module", "-e", SCRIPT])
        .arg(client())
        .arg(&path)
        .arg(&env.cluster.info().user_kubeconfig)
        .arg(env!("CARGO_BIN_EXE_jr2-preflight"))
        .arg(options.to_string());
    let out = cmd.output().expect("run node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- the client:\n{stderr}");
    assert!(out.status.success(), "node failed: {stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    // `onLine` saw every line, in order, as the result has them.
    assert_eq!(result["seen"], result["lines"], "{result}");
    result
}

fn run_client(ns: &str, models: &[&str], abort_after_ms: Option<u64>) -> serde_json::Value {
    let options = match abort_after_ms {
        Some(ms) => serde_json::json!({"abortAfterMs": ms}),
        None => serde_json::json!({}),
    };
    client_run(ns, models, options)
}

#[test]
fn the_client_runs_a_plan_on_the_real_cluster() {
    let _g = shared();
    let ns = namespace("rc-client", &[]);
    let result = run_client(&ns, &["auth", "ok"], None);
    assert_eq!(result["exitCode"], 0, "{result}");
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(
        result["models"],
        serde_json::json!([
            ["vllm/auth", "ok", "PROVIDER_OK"],
            ["vllm/ok", "ok", "PROVIDER_OK"]
        ]),
        "{result}"
    );
    // The verdict's lines are the lines on stderr, one per model.
    assert_eq!(result["verdictLines"], result["lines"], "{result}");
    assert_eq!(result["lines"].as_array().unwrap().len(), 2, "{result}");
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

/// An error through the client: exit 1, the verdict not ok, the failing model's code, its lines in the verdict and on
/// stderr alike, the last an `error:` line; the pod deleted.
#[test]
fn an_error_through_the_client_is_exit_1_with_its_lines() {
    let _g = shared();
    let ns = namespace("rc-client-error", &[]);
    let result = client_run(&ns, &["ok", "missing"], serde_json::json!({}));
    assert_eq!(result["exitCode"], 1, "{result}");
    assert_eq!(result["ok"], false, "{result}");
    assert_eq!(result["models"][0][2], "PROVIDER_OK", "{result}");
    assert_eq!(result["models"][1][0], "vllm/missing", "{result}");
    assert_eq!(
        result["models"][1][2], "PROVIDER_MODEL_NOT_FOUND",
        "{result}"
    );
    assert_eq!(result["verdictLines"], result["lines"], "{result}");
    let lines = result["lines"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("error: ")),
        "{result}"
    );
    assert_no_pod_left(&ns);
}

/// Bad input through the client: exit 2, one `error:` line naming the field, no verdict, nothing created.
#[test]
fn bad_input_through_the_client_is_exit_2_and_creates_nothing() {
    let _g = shared();
    let ns = namespace("rc-client-bad", &[]);
    let mut plan = plan(&ns, &[("sandbox", harness_spec(), &["ok"])]);
    plan["models"][0]["placement"] = serde_json::json!("nowhere");
    let result = client_run_plan(&plan, serde_json::json!({}));
    assert_eq!(result["exitCode"], 2, "{result}");
    assert_eq!(
        result["ok"],
        serde_json::Value::Null,
        "no verdict: {result}"
    );
    let lines = result["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{result}");
    assert!(
        lines[0].as_str().unwrap().starts_with("error: ")
            && lines[0].as_str().unwrap().contains("placement"),
        "{result}"
    );
    assert!(
        env().cluster.pods(&ns, MANAGED).is_empty(),
        "nothing created"
    );
}

/// The skip and the dry run through the client: exit 0 each; the skip's verdict is skipped and names every model in
/// its one warning line; the dry run returns the check pod the real API server's dry run accepted; nothing created.
#[test]
fn skip_and_dry_run_through_the_client_create_nothing() {
    let _g = shared();
    let ns = namespace("rc-client-skip", &[]);
    let skipped = client_run(&ns, &["ok", "auth"], serde_json::json!({"skip": true}));
    assert_eq!(skipped["exitCode"], 0, "{skipped}");
    assert_eq!(skipped["skipped"], true, "{skipped}");
    let lines = skipped["lines"].as_array().unwrap();
    assert_eq!(lines.len(), 1, "{skipped}");
    let line = lines[0].as_str().unwrap();
    assert!(
        line.starts_with("warning: ") && line.contains("vllm/ok") && line.contains("vllm/auth"),
        "{skipped}"
    );
    let dry = client_run(&ns, &["ok"], serde_json::json!({"dryRun": true}));
    assert_eq!(dry["exitCode"], 0, "{dry}");
    let pods = dry["dryRunPods"].as_str().expect("the dry run's pods");
    assert_eq!(pods.matches("kind: Pod").count(), 1, "{pods}");
    assert!(
        env().cluster.pods(&ns, MANAGED).is_empty(),
        "nothing created"
    );
}

/// A pending line through the client, as it comes: an image that cannot be pulled gives the pending line while the
/// driver still runs, then the image's error line; the pod deleted.
#[test]
fn a_pending_line_reaches_the_client_while_the_driver_runs() {
    let _g = shared();
    let ns = namespace("rc-client-pending", &[]);
    let result = client_run(
        &ns,
        &["ok"],
        serde_json::json!({"probeImage": "registry.jr2.test/no-such-probe:0.0.0", "timeout": "40s"}),
    );
    assert_eq!(result["exitCode"], 1, "{result}");
    let lines: Vec<&str> = result["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(lines.iter().any(|l| l.starts_with(PENDING)), "{lines:#?}");
    assert!(lines.last().unwrap().starts_with("error: "), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("no-such-probe")),
        "the image is named: {lines:#?}"
    );
    assert_no_pod_left(&ns);
}
