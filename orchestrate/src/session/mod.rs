//! A validated plan's run, from the flags' values to its exit: skipped, a dry run, or the cluster contacted
//! (`connect.rs`), what is known before the create (`prepare.rs`), the check pods run (`run::run_pods`), the verdict
//! assembled and written, and the exit it asks for. `main.rs` only turns flags into a [`Session`] and a
//! [`ValidPlan`]; everything after that is here, in the order it happens.

mod connect;
mod lines;
mod prepare;
mod settings;

use std::time::{Duration, Instant, SystemTime};

use jr2_probe::contract::{Exit, render};
use jr2_probe::sanitize::Redactor;

use crate::access;
use crate::evidence;
use crate::plan::ValidPlan;
use crate::pod;
use crate::run::{
    Cancel, Cleanup, Evidence, FailureKind, PodFailure, PodOutcome, PodRun, PodToRun, RunConfig,
    RunResult, RunUpdate, run_pods,
};
use crate::signals::Signals;
use crate::verdict::{self, DriverVerdict};

pub use lines::shown;
pub use settings::{Session, valid_plan};

use connect::{Connected, NotConnected, connect};
use lines::Lines;
use prepare::prepare;

/// Runs a validated plan as the session asks and returns the exit the process ends with, its lines written on stderr
/// (and with `json`, the verdict on stdout). The check pods created are deleted on every path, a signal included
/// (its exit is then 130 or 143).
pub async fn execute(mut plan: ValidPlan, session: &Session<'_>, mut signals: Signals) -> Exit {
    let run_id = pod::new_run_id();
    // Skipped, or nothing to check: no pod, nothing contacted.
    if session.skip || (plan.models.is_empty() && !session.dry_run) {
        let verdict = if session.skip {
            verdict::skipped(&plan, &run_id)
        } else {
            verdict::nothing_to_check(&plan, &run_id)
        };
        let mut verdict = verdict;
        envelope(&mut verdict, session, None);
        for line in &verdict.lines {
            jr2_probe::say!("{line}");
        }
        let printed = print_verdict(session, &verdict);
        // A signal meanwhile still means "stop": `jr2 up` must not read a 0 as "go on".
        return match signals.received() {
            Some(exit) => interrupted(exit, false),
            None => printed.map_or_else(stdout_failed, |()| Exit::Ok),
        };
    }
    let now = SystemTime::now();
    let now_here = tokio::time::Instant::now();
    if session.dry_run {
        let checks = pod::check_pods(&plan, &run_id, now);
        let yaml = pod::to_yaml(checks.iter().map(|c| &c.pod));
        let printed = jr2_probe::console::out("the dry-run pods", yaml.as_bytes());
        return match signals.received() {
            Some(exit) => interrupted(exit, false),
            None => printed.map_or_else(stdout_failed, |()| Exit::Ok),
        };
    }
    // `--evidence DIR` must be a new directory (or an empty one): refused now, before anything reaches the cluster.
    if let Some(dir) = session.evidence
        && let Err(why) = evidence::check(dir)
    {
        jr2_probe::say!("error: --evidence: {why}");
        return Exit::Usage;
    }
    if session.cancel_on_stdin {
        // Only now, when the cluster is about to be contacted: a dry run or a skip is over before a cancel matters,
        // and what was already written to stdin stays there to be read.
        signals.cancel_on(|| std::io::stdin().lock());
    }
    // Until the pods are created, a signal stops the run at once: what is then in flight (the client, the access
    // reviews, the Deployment's read, the sweep, the NetworkPolicy list, the Namespace's read) only reads, or
    // deletes stale pods that the next run sweeps again, so it is dropped where it stands.
    let mut stopped: Option<Exit> = None;
    let mut lines = Lines(Vec::new());
    // Credentials that could not be used: no pod is created, and the run fails with its verdict and evidence.
    let mut unauthenticated: Option<String> = None;
    let connected = match signals.until(connect(session, &mut plan, &mut lines)).await {
        Ok(Ok(c)) => Some(c),
        Ok(Err(NotConnected::Exit(exit))) => return exit,
        Ok(Err(NotConnected::Credentials(why))) => {
            lines.emit(render::cannot_authenticate(&shown(&why)));
            lines.emit(render::cannot_authenticate_next_action());
            unauthenticated = Some(why);
            None
        }
        Err(exit) => {
            stopped = Some(exit);
            None
        }
    };
    // The API server's version, for the verdict's envelope: asked beside the run, never delaying it; not when the
    // run lacks a permission it needs (then nothing but the reviews is sent).
    let kube_version = connected
        .as_ref()
        .filter(|c| c.access.missing.is_empty())
        .map(|c| {
            let client = c.client.clone();
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(5), client.apiserver_version())
                    .await
                    .ok()?
                    .ok()
                    .map(|v| v.git_version)
            })
        });
    // The API server's clock: the pods' deadline and the stale sweep are measured on it, not on this machine's
    // (issue 40, items 3 and 6). Not read when the run lacks a permission it needs (then nothing but the reviews is
    // sent), nor after a signal.
    let now = match connected.as_ref().filter(|c| c.access.missing.is_empty()) {
        Some(c) if stopped.is_none() => {
            match signals.until(crate::server_clock::read(&c.client)).await {
                Ok(clock) => clock.map_or(now, |c| c.at(now)),
                Err(exit) => {
                    stopped = Some(exit);
                    now
                }
            }
        }
        _ => now,
    };
    let mut checks = pod::check_pods(&plan, &run_id, now);
    let mut connected = connected;
    if let Some(c) = connected.as_mut() {
        c.pod_deadline = Some(now_here + Duration::from_secs(plan.deadline_seconds));
    }
    let started_at = SystemTime::now();
    let start = Instant::now();
    // Pods the cluster would not let run (a permission denied, a Pod Security level): not created, their failure
    // known now. `None`: created and run.
    let mut not_created: Vec<Option<PodFailure>> = vec![None; checks.len()];
    if let Some(why) = unauthenticated {
        for slot in &mut not_created {
            *slot = Some(PodFailure {
                kind: FailureKind::Unauthenticated { why: why.clone() },
                // Said once for the run, above.
                lines: Vec::new(),
            });
        }
    }
    if let Some(c) = &connected {
        if !c.access.missing.is_empty() {
            for perm in &c.access.missing {
                lines.emit(render::permission_missing(
                    perm.verb,
                    &perm.qualified(),
                    &plan.namespace,
                ));
            }
            lines.emit(render::permission_next_action(&plan.namespace));
            let missing: Vec<String> = c
                .access
                .missing
                .iter()
                .map(|p| format!("{} {}", p.verb, p.qualified()))
                .collect();
            for slot in &mut not_created {
                *slot = Some(PodFailure {
                    kind: FailureKind::NotAllowed {
                        missing: missing.clone(),
                    },
                    // Said once for the run, above.
                    lines: Vec::new(),
                });
            }
        } else {
            match signals
                .until(prepare(
                    c.client.clone(),
                    &plan,
                    &mut checks,
                    now,
                    &c.access,
                ))
                .await
            {
                Ok(prepared) => {
                    for w in prepared.warnings {
                        lines.emit(w);
                    }
                    for (i, failure) in prepared.refused {
                        not_created[i] = Some(failure);
                    }
                }
                Err(exit) => stopped = Some(exit),
            }
        }
    }
    // A signal that came as the last answer was read: checked once more, so that no pod is created after it.
    // (One that the runtime has not dispatched yet is seen by the loop below, which deletes what was created.)
    if stopped.is_none() {
        stopped = signals.received();
    }
    // The pods as they will be created: fitted to the namespace by `prepare`.
    let to_run: Vec<PodToRun> = checks.iter().map(|c| PodToRun::of(c, &plan)).collect();
    let mut live = verdict::LiveOrder::new(&plan, &checks);
    let runnable: Vec<PodToRun> = to_run
        .iter()
        .zip(&not_created)
        .filter(|(_, f)| f.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let client = connected.as_ref().map(|c| c.client.clone());
    let (ran, cleanup, interrupted_by) = match (connected, stopped) {
        (Some(_), None) if runnable.is_empty() => (RunResult::default(), None, None),
        (Some(c), None) => {
            let (result, cleanup, exit) = run_checks(
                c,
                session,
                &plan,
                &runnable,
                &mut signals,
                &mut lines,
                &mut live,
            )
            .await;
            (result, Some(cleanup), exit)
        }
        (_, exit) => (not_run(&runnable), None, exit),
    };
    let mut result = merge(&to_run, not_created, ran);
    // A check pod the API server refused: would it refuse a Harness pod of the placement too? (a dry run)
    if let Some(client) = client.filter(|_| interrupted_by.is_none()) {
        crate::admission::twin::explain(client, &plan, &checks, &mut result, &Redactor::default())
            .await;
    }
    // The deletes were sent as each pod finished; give them a bounded moment to be confirmed, before the verdict,
    // which names a pod that may outlive the run.
    let report = match &cleanup {
        Some(cleanup) => Some(cleanup.wait(Duration::from_secs(10)).await),
        None => None,
    };
    let before = lines.0.len();
    let mut verdict = verdict::assemble(
        &plan,
        &checks,
        &result,
        &run_id,
        started_at,
        start,
        lines.0,
        live.written(),
    );
    let kube_version = match kube_version {
        // Finished by now, or given at most a moment: the run does not wait on it.
        Some(task) => tokio::time::timeout(Duration::from_millis(500), task)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten(),
        None => None,
    };
    envelope(&mut verdict, session, kube_version);
    if let Some(exit) = interrupted_by {
        // The verdict says what the process's exit code will say: a reader of either sees the same thing.
        verdict.ok = false;
        verdict.exit_code = i32::from(exit);
    }
    if let Some(report) = &report {
        let left: Vec<(String, String)> = report
            .failed
            .iter()
            .cloned()
            .chain(report.unfinished.iter().map(|name| {
                (
                    name.clone(),
                    "its delete was not confirmed in 10 s".to_owned(),
                )
            }))
            .collect();
        verdict::pods_left(&mut verdict, &left);
    }
    for line in &verdict.lines[before..] {
        jr2_probe::say!("{line}");
    }
    let printed = print_verdict(session, &verdict);
    if let Some(dir) = session.evidence.filter(|_| !verdict.ok)
        && let Err(e) = evidence::write(dir, &checks, &result, &verdict)
    {
        jr2_probe::say!(
            "{}",
            render::evidence_not_written(&dir.display().to_string(), &e.to_string())
        );
    }
    if let Some(exit) = interrupted_by {
        let left = report.as_ref().is_some_and(|r| !r.survivors().is_empty());
        return interrupted(exit, left);
    }
    match printed {
        Ok(()) => Exit::of_run(verdict.ok),
        Err(e) => stdout_failed(e),
    }
}

/// The verdict's troubleshooting envelope: the kube context and the cluster's server from the kubeconfig (read
/// again, contacting nothing), and the Kubernetes version when the API server gave it.
fn envelope(
    verdict: &mut DriverVerdict,
    session: &Session<'_>,
    kubernetes_version: Option<String>,
) {
    let (context, server) = crate::cluster::describe(session.kubeconfig, session.context);
    verdict.kube_context = context;
    verdict.cluster = server.map(|server| verdict::ClusterInfo {
        server,
        kubernetes_version,
    });
}

/// The run's result in `to_run`'s order: the pods not created with their failure, the others as the run gave them
/// (in the same order, without the pods not created).
fn merge(to_run: &[PodToRun], not_created: Vec<Option<PodFailure>>, ran: RunResult) -> RunResult {
    let mut ran_pods = ran.pods.into_iter();
    let pods = to_run
        .iter()
        .zip(not_created)
        .filter_map(|(p, failure)| match failure {
            None => ran_pods.next(),
            Some(failure) => Some(PodRun {
                name: p.pod.metadata.name.clone().unwrap_or_default(),
                uid: None,
                node: None,
                results: p.models.iter().map(|_| None).collect(),
                models: p.models.clone(),
                outcome: PodOutcome::Failed(failure),
                evidence: Evidence::default(),
                kept: false,
                node_ahead: None,
            }),
        })
        .collect();
    RunResult {
        pods,
        warnings: ran.warnings,
    }
}

/// The verdict or the dry-run pods did not reach stdout: one line, exit 1 (the caller has nothing to read).
pub fn stdout_failed(e: jr2_probe::console::StdoutError) -> Exit {
    jr2_probe::say!("{}", e.line());
    Exit::Failed
}

fn interrupted(exit: Exit, pods_left: bool) -> Exit {
    if pods_left {
        jr2_probe::say!("{}", render::interrupted_pods_left());
    } else {
        jr2_probe::say!("{}", render::interrupted());
    }
    exit
}

/// Creates and runs the pods, writing the progress lines as they come; a signal cancels the run (its pods are
/// deleted as `run_pods` returns) and is returned as the exit it asks for.
async fn run_checks(
    connected: Connected,
    session: &Session<'_>,
    plan: &ValidPlan,
    to_run: &[PodToRun],
    signals: &mut Signals,
    lines: &mut Lines,
    live: &mut verdict::LiveOrder,
) -> (RunResult, Cleanup, Option<Exit>) {
    let client = connected.client;
    let cleanup = Cleanup::new(client.clone(), &plan.namespace);
    let cancel = Cancel::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let timeout = session
        .timeout
        .unwrap_or(Duration::from_secs(plan.deadline_seconds + 60));
    let options = RunConfig {
        timeout,
        keep_failed: session.keep_pod,
        redactor: Redactor::default(),
        progress: Some(tx),
        cleanup: Some(cleanup.clone()),
        cancel: Some(cancel.clone()),
        events_forbidden_said: connected.access.denied(access::Use::Events),
        nodes_denied: connected.access.denied(access::Use::Nodes),
        pod_deadline: connected.pod_deadline,
        ..RunConfig::default()
    };
    let running = run_pods(client, &plan.namespace, to_run.to_vec(), options);
    tokio::pin!(running);
    let mut interrupted: Option<Exit> = None;
    let result = loop {
        tokio::select! {
            result = &mut running => break result,
            Some(p) = rx.recv() => progress(p, lines, live),
            exit = signals.recv(), if interrupted.is_none() => {
                interrupted = Some(exit);
                cancel.cancel();
            }
        }
    };
    while let Ok(p) = rx.try_recv() {
        progress(p, lines, live);
    }
    (result, cleanup, interrupted)
}

/// A progress update's lines: a result's in plan order ([`verdict::LiveOrder`]), any other's at once.
fn progress(p: RunUpdate, lines: &mut Lines, live: &mut verdict::LiveOrder) {
    match &p {
        RunUpdate::Result { pod, index, result } => {
            for line in live.result(pod, *index, result) {
                lines.emit(line);
            }
        }
        _ => {
            if let Some(line) = p.line() {
                lines.emit(line);
            }
        }
    }
}

/// The result of a run stopped before anything was created: every pod interrupted, as `run_pods` reports a run
/// cancelled before its creates were answered.
fn not_run(to_run: &[PodToRun]) -> RunResult {
    let failures = to_run
        .iter()
        .map(|_| {
            Some(PodFailure {
                kind: FailureKind::Interrupted,
                lines: Vec::new(),
            })
        })
        .collect();
    merge(to_run, failures, RunResult::default())
}

fn print_verdict(
    session: &Session<'_>,
    verdict: &DriverVerdict,
) -> Result<(), jr2_probe::console::StdoutError> {
    if session.json {
        jr2_probe::console::out_json("the verdict", verdict)?;
    }
    Ok(())
}
