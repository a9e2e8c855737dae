//! The run in the cluster: create the check pods, watch them and their Events, stream the probe's JSON lines,
//! diagnose what goes wrong, and delete the pods on every path.
//!
//! [`run_pods`] creates every pod at once, then runs one loop (no task of its own: dropping its future stops it)
//! over a `kube::runtime::watcher` on the pods of the run (by label; the watcher re-watches from its resource
//! version when a stream closes, and re-lists after a `410 Gone`), one watcher per pod on its Events
//! (`fieldSelector=involvedObject.name=<pod>`), the probe container's log (`follow=true`, read line by line as it
//! comes), and the Custodian's log when it exits at start. Every wait has a deadline: the overall `timeout`, a grace
//! window for image pulls, a drain window for the rest of a log once the pod has stopped.
//!
//! Cleanup is a [`Cleanup`] the caller can share: every pod is registered before its create request leaves, and
//! is deleted when the run ends, fails, times out, is cancelled ([`Cancel`]) or its future is dropped (Ctrl-C,
//! SIGTERM). Deletes are spawned and not awaited before the verdict returns; the caller awaits them, bounded, with
//! [`Cleanup::wait`]. A create request in flight when the run stops deletes its pod as soon as it is answered.
//! [`sweep_stale`] removes the check pods of an Instance that outlived their deadline (a driver killed hard).
//!
//! The rooms: `config` (what a run is given: its pods and how it goes), `pod_state` (each pod's phase and what was seen of it), `step` (the pure step that moves a pod's
//! phase on what arrived, and says what to do), `ending` (the outcome and lines of a pod's run that ends), `said`
//! (what the run says once for all its pods), `machine` (the loop that turns its streams into inputs and carries out
//! the actions), `create`, `watch`, `log` (the cluster I/O the loop reads), `protocol` (the probe's lines, read),
//! `cleanup`, `cancel`, `sweep`, `lost` (the API server lost during the run), `clock` (a node whose clock is ahead),
//! `namespace` (a namespace deleted under the run), and `report` (what the run says, as it happens and at the end).

mod cancel;
mod cleanup;
mod clock;
mod config;
mod create;
mod ending;
mod events;
mod log;
mod lost;
mod machine;
mod namespace;
mod pod_state;
mod protocol;
mod report;
mod said;
mod step;
mod sweep;
mod watch;

use futures_util::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::Api;
use tokio::time::Instant;

use jr2_probe::sanitize::Redactor;

pub use cancel::Cancel;
pub use cleanup::{Cleanup, CleanupReport};
pub use config::{PodToRun, RunConfig};
pub use log::MAX_LOG_LINE;
pub use protocol::ProtocolError;
pub use report::{
    Evidence, FailureKind, PodFailure, PodOutcome, PodRun, ProbeReport, RunResult, RunUpdate,
};
pub use sweep::{Sweep, SweepError, sweep_stale};

use cleanup::DeleteOnDrop;
use create::{CreateNotes, Created, create_pod};
use machine::Run;
use pod_state::PodState;

/// Reads one line of a probe's log as a run reads it, for a pod whose run spec has `models` (the plan's names, by
/// index): its event, cleaned and named as the plan names its models; `None` for a line that is no event; or the
/// protocol error that stops the pod (a model index the run spec lacks). The door of the fuzz target `probe_line`.
pub fn read_probe_line(
    line: &str,
    models: &[String],
) -> Result<Option<jr2_probe::contract::ProbeEvent>, ProtocolError> {
    let redactor = Redactor::default();
    let trusted = protocol::Trusted {
        redactor: &redactor,
        models,
        resolved: &[],
    };
    protocol::event(line, &trusted)
}

/// Runs the check pods: creates them all at once, watches them and their Events, streams each probe's JSON lines,
/// and returns when every pod has a verdict or a failure, the deadline passes, or the run is cancelled. Every pod
/// it created is deleted on every path (not awaited: see [`Cleanup::wait`]), but a failed one when
/// [`RunConfig::keep_failed`] says so.
pub async fn run_pods(
    client: Client,
    namespace: &str,
    to_run: Vec<PodToRun>,
    opts: RunConfig,
) -> RunResult {
    let start = Instant::now();
    let cleanup = opts
        .cleanup
        .clone()
        .unwrap_or_else(|| Cleanup::new(client.clone(), namespace));
    let _guard = DeleteOnDrop(cleanup.clone());
    let (tries, cancel) = (opts.create_tries, opts.cancel.clone());
    let notes = CreateNotes::new(opts.progress.clone());
    let states = to_run.iter().map(PodState::new).collect();
    let mut run = Run::new(
        client.clone(),
        namespace,
        states,
        opts,
        cleanup.clone(),
        start,
    );
    let pods: Vec<Pod> = to_run.into_iter().map(|p| p.pod).collect();

    // All at once; each create is its own task, so that one still on its way when the run stops deletes its pod.
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let creates: Vec<tokio::sync::oneshot::Receiver<create::CreateOutcome>> = pods
        .iter()
        .map(|p| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let create = create_pod(
                api.clone(),
                cleanup.clone(),
                p.clone(),
                tries,
                run.deadline(),
                notes.clone(),
            );
            cleanup.track(tokio::spawn(async move {
                let _ = tx.send(create.await);
            }));
            rx
        })
        .collect();
    let created = tokio::select! {
        biased;
        () = cancel::cancelled(cancel.as_ref()) => None,
        all = join_all(creates) => Some(all),
    };
    let Some(created) = created else {
        run.interrupt();
        return run.finish();
    };
    for (i, c) in created.into_iter().enumerate() {
        let c = match c {
            Ok(c) => {
                run.api_warnings(&c.warnings);
                Ok(c.created)
            }
            Err(e) => Err(e),
        };
        match c {
            Ok(Created::Ok(p)) => run.created(i, *p),
            Ok(Created::Refused(code, message)) => run.refused(i, code, message),
            Ok(Created::Unreachable(why)) => run.unreachable(i, why),
            Ok(Created::TimedOut(waited, message)) => {
                let seconds = waited.as_secs_f64().round() as u64;
                run.not_created(i, FailureKind::CreateTimedOut { seconds, message });
            }
            Ok(Created::NamespaceTerminating(message)) => {
                let namespace = namespace.to_owned();
                let message = Some(message);
                run.not_created(i, FailureKind::NamespaceTerminating { namespace, message });
            }
            Err(e) => run.refused(i, None, format!("the create request was dropped: {e}")),
        }
    }
    run.watch_and_drive(&pods).await;
    // A pod that stopped as deleted: its namespace may have gone with it (`namespace.rs`).
    if run.stopped_as_deleted() && namespace::deleted(client.clone(), namespace).await {
        run.namespace_deleted();
    }
    run.finish()
}
