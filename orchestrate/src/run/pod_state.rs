//! One check pod as the run sees it: its [`Phase`], what the cluster showed of it, what its probe said, and the
//! state of the logs being read.
//!
//! The phase is the one thing that moves: the pod's step (`step.rs`) moves it on what `diagnose` says of the pod as
//! each watch event, log line or timer comes, and each variant below says how it is entered and left. What was seen
//! and heard only grows; it is grouped by where it comes from, so that a flag cannot outlive the state that set it.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::ResourceExt;
use tokio::time::Instant;

use jr2_probe::contract::outcome::PodCode;
use jr2_probe::contract::verdict::ModelResult;

use super::config::PodToRun;
use super::report::{Evidence, FailureKind, PodFailure, PodOutcome, PodRun};
use crate::diagnose;
use crate::plan::Resolved;

/// How often the probe's log is opened, at most, per pod.
pub(super) const MAX_LOG_OPENS: u32 = 5;
/// Probe log lines kept as evidence.
const MAX_EVIDENCE_LINES: usize = 10_000;
/// The bytes of probe log lines kept as evidence, all lines together (issue 25, item 2): the pod's log bounds the
/// driver's memory by this, not by lines of up to [`MAX_LOG_LINE`](super::log::MAX_LOG_LINE) each. A probe writes
/// one line per event and a summary line of its whole verdict, well within it for any run spec the plan allows.
pub(super) const MAX_EVIDENCE_BYTES: usize = 4 << 20;

/// Where a check pod is, in the manner of kube-runtime's `watcher::State`: one variant per stage, each holding the
/// timer that belongs to it and nothing else.
#[derive(Clone, Debug)]
pub(super) enum Phase {
    /// The create request is on its way. Left when it is answered: for [`Phase::Waiting`], or [`Phase::Done`] when
    /// it was refused (or the run was cancelled first).
    Creating,
    /// Created, not running yet: scheduling, pulls, the Custodian starting. Each new reason is a pending line.
    /// `grace_since` is when a start failure that may pass by itself (an image pull back-off) was first seen in a
    /// row; past the image-pull grace it is fatal ([`Phase::Done`]), within it the failure shows as pending. Left for
    /// [`Phase::Running`] when the probe runs, [`Phase::Stopping`] when the pod stopped, [`Phase::Done`] on a start
    /// failure.
    Waiting {
        /// Since when a transient start failure has been seen, if one is.
        grace_since: Option<Instant>,
    },
    /// The probe container runs: its log is followed ([`ProbeLog`]), and opened again a moment after it broke off.
    /// Left for [`Phase::Done`] when the probe's verdict comes, [`Phase::Stopping`] when the pod stops.
    Running,
    /// The pod stopped at `since` (the probe exited, was OOM-killed, or the pod was evicted or deleted): the rest of
    /// the probe's log may still come, for the log-drain window (a log that broke off is read once more). Left for
    /// [`Phase::Done`] when the log has ended or the window is over; back to [`Phase::Waiting`] or
    /// [`Phase::Running`] if the watch shows the pod so again.
    Stopping {
        /// When the pod was first seen stopped.
        since: Instant,
    },
    /// Over: how it ended. Never left; the pod is then deleted (or kept).
    Done(PodOutcome),
}

/// The probe container's followed log, as a stream of the run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum LogState {
    /// Not open (not yet, or not since it ended and was not worth opening again).
    Closed,
    /// Open: lines come as the probe writes them.
    Open,
    /// Ended at `at`: `clean` when the container ended it, else it broke off.
    Ended {
        /// When.
        at: Instant,
        /// The container ended it.
        clean: bool,
    },
}

/// The reads of the probe's log. Each open is a generation: lines of an older one are dropped. A log read again
/// starts from its beginning, so the lines kept already are not kept twice.
#[derive(Debug)]
pub(super) struct ProbeLog {
    /// Where the stream is.
    pub(super) state: LogState,
    /// The current open's generation.
    pub(super) generation: u32,
    /// How often it was opened.
    pub(super) opens: u32,
    /// It was opened again after the pod stopped (once is enough).
    pub(super) reopened_after_stop: bool,
    /// The lines of the current read that were kept by an earlier one.
    replayed: usize,
    /// The lines of the current read so far.
    line_no: usize,
    /// The most lines any read gave: an earlier read's lines, kept or not.
    lines_seen: usize,
}

/// What the cluster showed of the pod.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// The pod as last watched (or as the create answered).
    pub(super) last: Option<Pod>,
    /// The current list of the pod watch showed it.
    pub(super) in_list: bool,
    /// It was deleted (or replaced by a pod of the same name), by someone else.
    pub(super) deleted: bool,
    /// Its Events, in the order they last happened.
    pub(super) events: Vec<Event>,
    /// Its Events could not be read (RBAC).
    pub(super) events_forbidden: bool,
    /// Its audit Warnings, counted (`events.rs`).
    pub(super) tally: super::events::Tally,
    /// The node it is bound to, once its watch was asked for (by name), and the Node as last watched.
    pub(super) node: Option<(String, Option<Node>)>,
}

/// What the probe's log said.
#[derive(Debug)]
pub(super) struct ProbeSaid {
    /// Its lines, for the evidence (at most [`MAX_EVIDENCE_LINES`], of [`MAX_EVIDENCE_BYTES`] together).
    pub(super) lines: Vec<String>,
    /// The bytes of `lines`.
    pub(super) bytes: usize,
    /// The lines not kept: past the bounds.
    pub(super) dropped: usize,
    /// The models it started (index in the run spec).
    pub(super) started: BTreeSet<usize>,
    /// Each model's result, as its `result` line (or the verdict) gave it.
    pub(super) results: Vec<Option<ModelResult>>,
    /// Its first line gave it a budget shorter than the run's time left: the node's clock is this many seconds
    /// ahead of the API server's, at least (`clock.rs`).
    pub(super) node_ahead: Option<u64>,
}

/// The Custodian's log, read when it exits at start.
#[derive(Debug, Default)]
pub(super) struct CustodianLog {
    /// The read asked for last: (restart count, previous instance); one read per restart.
    pub(super) asked: Option<(i32, bool)>,
    /// Its lines, once read (empty when the read failed).
    pub(super) lines: Option<Vec<String>>,
}

/// The pending lines of a pod.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// The (reason, message) of the last pending line sent.
    pub(super) written: Option<(String, String)>,
    /// The last reason the pod was not running, and its message (cleaned): what a deadline that passes names.
    pub(super) last: Option<(String, String)>,
    /// The length of the grace of the start failure shown as pending ([`Phase::Waiting`]'s `grace_since`): the
    /// image pull's, or a missing Secret's (issue 40, item 15).
    pub(super) grace: std::time::Duration,
}

/// One check pod of the run.
#[derive(Debug)]
pub(super) struct PodState {
    /// Its name.
    pub(super) name: String,
    /// Its models, in its run spec's order (the probe's `index`).
    pub(super) models: Vec<String>,
    /// What the plan resolved of each model, in the same order.
    pub(super) resolved: Vec<Resolved>,
    /// Its uid, once created.
    pub(super) uid: Option<String>,
    /// Where it is.
    pub(super) phase: Phase,
    /// The probe container was seen running (or finished): a pod that stops now stopped during the check.
    pub(super) ran: bool,
    /// What the cluster showed.
    pub(super) seen: Seen,
    /// The reads of the probe's log.
    pub(super) log: ProbeLog,
    /// What the probe's log said.
    pub(super) probe: ProbeSaid,
    /// The Custodian's log.
    pub(super) custodian: CustodianLog,
    /// Its pending lines.
    pub(super) pending: Pending,
    /// Its run is over and the loop was told to delete (or keep) it: told once.
    pub(super) released: bool,
}

impl PodState {
    /// A pod whose create is about to leave.
    pub(super) fn new(to_run: &PodToRun) -> Self {
        Self {
            name: to_run.pod.name_any(),
            models: to_run.models.clone(),
            resolved: to_run.resolved.clone(),
            uid: None,
            phase: Phase::Creating,
            ran: false,
            seen: Seen::default(),
            log: ProbeLog {
                state: LogState::Closed,
                generation: 0,
                opens: 0,
                reopened_after_stop: false,
                replayed: 0,
                line_no: 0,
                lines_seen: 0,
            },
            probe: ProbeSaid {
                lines: Vec::new(),
                bytes: 0,
                dropped: 0,
                started: BTreeSet::new(),
                results: vec![None; to_run.models.len()],
                node_ahead: None,
            },
            custodian: CustodianLog::default(),
            pending: Pending::default(),
            released: false,
        }
    }

    /// Its run is over.
    pub(super) fn done(&self) -> bool {
        matches!(self.phase, Phase::Done(_))
    }

    /// How it ended, once it did.
    pub(super) fn outcome(&self) -> Option<&PodOutcome> {
        match &self.phase {
            Phase::Done(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// The probe's log gave every model's result.
    pub(super) fn all_results(&self) -> bool {
        !self.probe.results.is_empty() && self.probe.results.iter().all(Option::is_some)
    }

    /// The check had begun: the probe started a model or gave a result.
    pub(super) fn began(&self) -> bool {
        !self.probe.started.is_empty() || self.probe.results.iter().any(Option::is_some)
    }

    /// A model's name, by its index in the run spec.
    pub(super) fn model(&self, index: usize) -> &str {
        self.models.get(index).map_or("(unknown)", String::as_str)
    }

    /// The probe's log is opened (again): a new generation, read from its beginning.
    pub(super) fn log_opened(&mut self) -> u32 {
        let log = &mut self.log;
        log.generation += 1;
        log.opens += 1;
        log.state = LogState::Open;
        log.replayed = log.lines_seen;
        log.line_no = 0;
        log.generation
    }

    /// Keeps a line of the probe's log for the evidence, unless an earlier read had it, or the lines kept are at
    /// their bounds (then it is counted as dropped).
    pub(super) fn keep_line(&mut self, line: String) {
        let log = &mut self.log;
        log.line_no += 1;
        log.lines_seen = log.lines_seen.max(log.line_no);
        if log.line_no <= log.replayed {
            return;
        }
        let said = &mut self.probe;
        if said.lines.len() < MAX_EVIDENCE_LINES && said.bytes + line.len() <= MAX_EVIDENCE_BYTES {
            said.bytes += line.len();
            said.lines.push(line);
        } else {
            said.dropped += 1;
        }
    }

    /// Where the probe's result of model `index` goes: `None` when it came already, or when the run spec has no such
    /// model (nothing is ever sized by what the pod says).
    pub(super) fn result_slot(&mut self, index: usize) -> Option<&mut Option<ModelResult>> {
        self.probe.results.get_mut(index).filter(|r| r.is_none())
    }

    /// It failed as a pod deleted under the run (a plain stop, its pod seen deleted or being deleted: a pod the
    /// namespace controller deletes on a node shows its `deletionTimestamp` first).
    pub(super) fn stopped_as_deleted(&self) -> bool {
        let deleting = self
            .seen
            .last
            .as_ref()
            .is_some_and(|p| p.metadata.deletion_timestamp.is_some());
        (self.seen.deleted || deleting)
            && matches!(
                &self.phase,
                Phase::Done(PodOutcome::Failed(PodFailure {
                    kind: FailureKind::Stopped {
                        code: PodCode::Stopped,
                        ..
                    },
                    ..
                }))
            )
    }

    /// What the run found of this pod.
    pub(super) fn into_run(self, kept: bool) -> PodRun {
        PodRun {
            node: self
                .seen
                .last
                .as_ref()
                .and_then(diagnose::node_name)
                .map(str::to_owned),
            evidence: Evidence {
                pod: self.seen.last,
                events: self.seen.events,
                events_forbidden: self.seen.events_forbidden,
                probe_lines: {
                    let mut lines = self.probe.lines;
                    if self.probe.dropped > 0 {
                        lines.push(format!(
                            "(jr2-preflight: {} more lines not kept: the evidence keeps at most {} lines, {} MiB)",
                            self.probe.dropped,
                            MAX_EVIDENCE_LINES,
                            MAX_EVIDENCE_BYTES >> 20
                        ));
                    }
                    lines
                },
                custodian_log: self.custodian.lines.unwrap_or_default(),
            },
            name: self.name,
            uid: self.uid,
            models: self.models,
            results: self.probe.results,
            node_ahead: self.probe.node_ahead,
            outcome: match self.phase {
                Phase::Done(outcome) => outcome,
                _ => PodOutcome::Failed(PodFailure {
                    kind: FailureKind::Interrupted,
                    lines: Vec::new(),
                }),
            },
            kept,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(models: &[&str]) -> PodState {
        let mut pod = Pod::default();
        pod.metadata.name = Some("p".to_owned());
        PodState::new(&PodToRun {
            pod,
            models: models.iter().map(|m| (*m).to_owned()).collect(),
            resolved: Vec::new(),
        })
    }

    #[test]
    fn a_log_read_again_keeps_each_line_once() {
        let mut st = state(&["a/b"]);
        assert_eq!(st.log_opened(), 1);
        st.keep_line("one".to_owned());
        st.keep_line("two".to_owned());
        // Broke off; read again from the beginning: the first two come again, then a new one.
        assert_eq!(st.log_opened(), 2);
        for line in ["one", "two", "three"] {
            st.keep_line(line.to_owned());
        }
        assert_eq!(st.probe.lines, ["one", "two", "three"]);
        assert_eq!(st.log.opens, 2);
        assert_eq!(st.log.state, LogState::Open);
    }

    #[test]
    fn a_result_is_taken_once_and_an_index_past_the_spec_has_no_slot() {
        let mut st = state(&["a/b"]);
        assert!(!st.all_results() && !st.began());
        *st.result_slot(0).expect("a slot") = Some(serde_json::from_value(result()).unwrap());
        assert!(st.result_slot(0).is_none(), "taken once");
        for index in [1, 100_000_000, 1 << 40, usize::MAX] {
            assert!(st.result_slot(index).is_none(), "{index}");
        }
        assert_eq!(st.probe.results.len(), 1);
        assert_eq!(st.model(0), "a/b");
        assert_eq!(st.model(2), "(unknown)");
    }

    fn result() -> serde_json::Value {
        serde_json::json!({"model":"a/b","id":"b","api":"openai-completions","baseUrl":"http://h/v1","host":"h",
            "route":{"kind":"custom","apiKeySet":false,"maxTokensSet":true},"outcome":"ok","level":"pass",
            "code":"PROVIDER_OK","nextAction":"","error":null,"httpStatus":200,"stopReason":null,"toolName":null,
            "answer":null,"maxTokens":1024,"elapsedMs":1,"tries":[]})
    }

    #[test]
    fn a_pod_that_never_finished_is_interrupted() {
        let st = state(&["a/b"]);
        assert!(matches!(st.phase, Phase::Creating));
        assert!(!st.done() && st.outcome().is_none());
        let run = st.into_run(false);
        assert!(matches!(
            run.outcome,
            PodOutcome::Failed(PodFailure {
                kind: FailureKind::Interrupted,
                ..
            })
        ));
        assert_eq!(run.results, [None]);
    }

    /// What is kept of the probe's log is bounded by its bytes, not only its lines (issue 25, item 2): 200 lines of
    /// 7 MiB kept nothing like 1.3 GB.
    #[test]
    fn the_lines_kept_are_bounded_by_their_bytes() {
        let mut st = state(&["a/b"]);
        st.log_opened();
        let big = "x".repeat(7 << 20);
        st.keep_line("first".to_owned());
        for _ in 0..3 {
            st.keep_line(big.clone());
        }
        let mib = "y".repeat(1 << 20);
        for _ in 0..10 {
            st.keep_line(mib.clone());
        }
        st.keep_line("last".to_owned());
        let kept: usize = st.probe.lines.iter().map(String::len).sum();
        assert!(kept <= MAX_EVIDENCE_BYTES, "{kept}");
        assert_eq!(st.probe.lines[0], "first");
        assert_eq!(st.probe.lines.last().map(String::as_str), Some("last"));
        assert_eq!(
            st.probe.lines.len(),
            1 + 3 + 1,
            "three lines of 1 MiB fit beside the first and last"
        );
        assert_eq!(st.probe.dropped, 3 + 7);
        // Read again: the lines of the first read, kept or not, are not taken twice.
        st.log_opened();
        st.keep_line("first".to_owned());
        for _ in 0..13 {
            st.keep_line(String::new());
        }
        st.keep_line("last".to_owned());
        st.keep_line("new".to_owned());
        assert_eq!(st.probe.lines.last().map(String::as_str), Some("new"));
        let run = st.into_run(false);
        assert_eq!(
            run.evidence.probe_lines.last().map(String::as_str),
            Some(
                "(jr2-preflight: 10 more lines not kept: the evidence keeps at most 10000 lines, 4 MiB)"
            )
        );
    }
}
