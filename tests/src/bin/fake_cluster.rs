//! `jr2-fake-cluster`: the testkit's fake API server and kubelet stand-in (`jr2_testkit::kube`), with the
//! OpenAI-compatible fake provider, as a process, for callers that are not Rust: the npm package's `node:test` tests
//! (`orchestrate/npm/preflight/test/`) run the real driver against it, as `orchestrate/tests/fake_cluster` does.
//!
//! ```text
//! jr2-fake-cluster --probe PATH --dir DIR [--scenario ok|image-pull]
//! ```
//!
//! It writes `DIR/kubeconfig` (its current context reaches the fake), prints one JSON line on stdout,
//! `{"kubeconfig": ..., "server": ..., "providerBaseUrl": ...}`, and serves until its stdin closes. Each pod created
//! plays the scenario (`ok`: scheduled and the real probe, `PATH`, run to its end; `image-pull`: the probe's image
//! never pulls, the kubelet's pull errors repeated until the pod is deleted); what each model does is the
//! fake provider's behaviour named by its id (`ok`, `missing`, `stall`, `ok-delay-<ms>`...).
//!
//! Commands on stdin, one a line, each answered by one JSON line on stdout that names it (`"command"`), as soon as it
//! can be (a `wait-probe` does not hold up a `state`):
//! - `state`: `{"pods": [<check pods held now>], "created": [...], "deleted": [...]}` (names, in order);
//! - `wait-probe`: waits (at most 30 s) until a probe process has started in a check pod held now: `{"ok": true|false}`.

use std::path::PathBuf;
use std::time::Duration;

use jr2_testkit::kube::{FakeKube, Scenario};
use jr2_testkit::provider::FakeProvider;
use serde_json::json;
use std::io::BufRead;

/// The check pods' label, as the driver sets it.
const MANAGED: &str = "app.kubernetes.io/managed-by=jr2-preflight";

struct Args {
    probe: PathBuf,
    dir: PathBuf,
    scenario: Scenario,
}

fn parse_args() -> Result<Args, String> {
    let mut probe = None;
    let mut dir = None;
    let mut scenario = Scenario::AllOk;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} takes a value"));
        match flag.as_str() {
            "--probe" => probe = Some(PathBuf::from(value()?)),
            "--dir" => dir = Some(PathBuf::from(value()?)),
            "--scenario" => {
                scenario = match value()?.as_str() {
                    "ok" => Scenario::AllOk,
                    "image-pull" => Scenario::ImagePullBackOff,
                    other => return Err(format!("--scenario: unknown scenario {other:?}")),
                }
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args {
        probe: probe.ok_or("--probe PATH is required")?,
        dir: dir.ok_or("--dir DIR is required")?,
        scenario,
    })
}

fn names(pods: &[serde_json::Value]) -> Vec<&str> {
    pods.iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: jr2-fake-cluster: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let kube = FakeKube::start(&args.probe, args.scenario).await;
    let provider = FakeProvider::start().await;
    let kubeconfig = args.dir.join("kubeconfig");
    if let Err(e) = kube.kubeconfig(&kubeconfig) {
        eprintln!(
            "error: jr2-fake-cluster: cannot write {}: {e}",
            kubeconfig.display()
        );
        return std::process::ExitCode::FAILURE;
    }
    println!(
        "{}",
        json!({"kubeconfig": kubeconfig, "server": kube.server_url(), "providerBaseUrl": provider.base_url()})
    );
    // Stdin on a thread of its own (tokio's `io-std` would change the workspace's tokio features, and with them
    // every build of the driver); the channel closes when stdin does.
    let (tx, mut commands) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let kube = std::sync::Arc::new(kube);
    while let Some(line) = commands.recv().await {
        let kube = kube.clone();
        let command = line.trim().to_owned();
        // Each command answers when it can (a wait does not hold up a `state`, nor the exit when stdin closes).
        tokio::spawn(async move {
            let answer = match command.as_str() {
                "state" => {
                    let held = kube.pods_matching(MANAGED);
                    json!({"command": command, "pods": names(&held), "created": kube.created(), "deleted": kube.deleted()})
                }
                "wait-probe" => {
                    let started = kube
                        .wait_for(Duration::from_secs(30), |k| {
                            names(&k.pods_matching(MANAGED))
                                .iter()
                                .any(|p| k.pod_times(p).probe_started.is_some())
                        })
                        .await;
                    json!({"command": command, "ok": started})
                }
                other => json!({"command": other, "error": format!("unknown command {other:?}")}),
            };
            println!("{answer}");
        });
    }
    drop(provider);
    drop(kube);
    std::process::ExitCode::SUCCESS
}
