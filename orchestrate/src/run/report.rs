//! What a run reports: as it happens ([`RunUpdate`], sent while the pods run) and at the end ([`RunResult`], per pod:
//! its results, how it ended, the lines of its failure, and what the cluster showed of it for `--evidence`).

use k8s_openapi::api::core::v1::{Event, Pod};

use jr2_probe::contract::outcome::{Level, PodCode};
use jr2_probe::contract::render;
use jr2_probe::contract::summary::Summary;
use jr2_probe::contract::verdict::{ModelResult, Verdict};

use crate::diagnose::StartFailure;

/// What happens during a run, as it happens.
#[derive(Clone, Debug, PartialEq)]
pub enum RunUpdate {
    /// A pod was created.
    Created {
        /// The pod.
        pod: String,
    },
    /// A pod is not running yet, for a new reason or with a new message (cleaned): write
    /// [`render::pending`]`(reason, message)`.
    Pending {
        /// The pod.
        pod: String,
        /// The reason.
        reason: String,
        /// The message.
        message: String,
    },
    /// The probe started a model.
    ModelStarted {
        /// The pod.
        pod: String,
        /// The model's index in the pod's run spec.
        index: usize,
        /// The model.
        model: String,
    },
    /// The probe has a model's result (once per model): the caller writes `provider: <model> completed a tool
    /// call (<ms> ms)` for a pass, and keeps the rest for the lines in plan order.
    Result {
        /// The pod.
        pod: String,
        /// The model's index in the pod's run spec.
        index: usize,
        /// The result.
        result: Box<ModelResult>,
    },
    /// A model has waited this long for its verdict: write [`render::waiting`].
    Waiting {
        /// The pod.
        pod: String,
        /// The model, as the plan names it.
        model: String,
        /// Milliseconds it has waited.
        waited_ms: u64,
        /// Its deadline, in milliseconds.
        timeout_ms: u64,
        /// How far its try has come.
        stage: jr2_probe::contract::events::WaitStage,
    },
    /// A warning line about the run itself (the Events cannot be read).
    Warning {
        /// The line.
        line: String,
    },
    /// A progress line about the run itself (a create the API server has not answered yet).
    Note {
        /// The line.
        line: String,
    },
}

impl RunUpdate {
    /// The line to write on stderr now, if this progress has one of its own.
    pub fn line(&self) -> Option<String> {
        match self {
            RunUpdate::Pending {
                reason, message, ..
            } => Some(render::pending(reason, message)),
            RunUpdate::Warning { line } | RunUpdate::Note { line } => Some(line.clone()),
            RunUpdate::Waiting {
                model,
                waited_ms,
                timeout_ms,
                stage,
                ..
            } => Some(render::waiting(
                model,
                std::time::Duration::from_millis(*waited_ms),
                std::time::Duration::from_millis(*timeout_ms),
                *stage,
            )),
            RunUpdate::Result { result, .. } if result.level == Level::Pass => {
                Some(render::completed(&result.model, result.elapsed_ms))
            }
            _ => None,
        }
    }
}

/// What the run found, per pod in the order given.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Per pod.
    pub pods: Vec<PodRun>,
    /// Warning lines about the run itself (already sent as [`RunUpdate::Warning`]).
    pub warnings: Vec<String>,
}

impl RunResult {
    /// Every pod finished with a verdict of no error.
    pub fn ok(&self) -> bool {
        self.pods.iter().all(PodRun::ok)
    }
}

/// One pod's run.
#[derive(Clone, Debug)]
pub struct PodRun {
    /// The pod's name.
    pub name: String,
    /// Its uid, once created.
    pub uid: Option<String>,
    /// The node it ran on.
    pub node: Option<String>,
    /// Its models, in its run spec's order (the probe's `index`).
    pub models: Vec<String>,
    /// Each model's result as the probe's log gave it (`None`: none came).
    pub results: Vec<Option<ModelResult>>,
    /// How it ended.
    pub outcome: PodOutcome,
    /// What the cluster showed, for `--evidence`.
    pub evidence: Evidence,
    /// The pod was kept (`keep_failed`); it must be deleted by hand.
    pub kept: bool,
    /// The node's clock was found this many seconds ahead of the API server's, at least (the probe's budget was
    /// that much short of the run's time left): the verdict names it (`PROVIDER_CLOCK_SKEW`).
    pub node_ahead: Option<u64>,
}

impl PodRun {
    /// The probe finished and no model failed.
    pub fn ok(&self) -> bool {
        match &self.outcome {
            PodOutcome::Finished(r) => r.ok(&self.results),
            PodOutcome::Failed(f) => f.kind.is_warning(),
        }
    }

    /// The failure lines (the `error:` line and its detail lines), empty when the probe finished.
    pub fn failure_lines(&self) -> &[String] {
        match &self.outcome {
            PodOutcome::Failed(f) => &f.lines,
            PodOutcome::Finished(_) => &[],
        }
    }
}

/// How a pod's run ended.
#[derive(Clone, Debug)]
pub enum PodOutcome {
    /// The probe finished: its verdict, or what stands in for it.
    Finished(ProbeReport),
    /// The pod failed before the probe could finish.
    Failed(PodFailure),
}

/// What the probe said in the end.
#[derive(Clone, Debug, Default)]
pub struct ProbeReport {
    /// Its verdict, from its `summary` line.
    pub verdict: Option<Box<Verdict>>,
    /// Its compact summary, from the termination message (the log was lost before the `summary` line). The
    /// entries of models whose `result` line came are in [`PodRun::results`] in full.
    pub summary: Option<Summary>,
    /// The probe container's exit code, when the pod showed it.
    pub exit_code: Option<i32>,
}

impl ProbeReport {
    /// No model failed.
    pub fn ok(&self, results: &[Option<ModelResult>]) -> bool {
        if let Some(v) = &self.verdict {
            return v.ok;
        }
        if let Some(s) = &self.summary {
            return s.ok;
        }
        results
            .iter()
            .all(|r| r.as_ref().is_some_and(|r| r.level != Level::Error))
    }
}

/// A pod that failed, and its lines.
#[derive(Clone, Debug, PartialEq)]
pub struct PodFailure {
    /// What failed.
    pub kind: FailureKind,
    /// The contract's lines: the `error:` line, then detail lines (`  not checked: <model>`).
    pub lines: Vec<String>,
}

/// What failed.
#[derive(Clone, Debug, PartialEq)]
pub enum FailureKind {
    /// The API server refused the pod (quota, Pod Security, a webhook, 422, a name conflict) or would not let the
    /// driver watch it.
    Refused {
        /// The HTTP status, when one came.
        code: Option<u16>,
        /// The API server's message, raw.
        message: String,
    },
    /// The API server did not answer the create (a closed port, no route, a TLS failure): the cluster cannot be
    /// reached, which is no refusal.
    Unreachable {
        /// Why, in plain words (`connection refused`).
        why: String,
    },
    /// Not created: the kubeconfig's credentials could not be used (an exec credential plugin that failed), in the
    /// words of `credentials.rs` (issue 40, item 5).
    Unauthenticated {
        /// Why, never what a plugin printed.
        why: String,
    },
    /// The create did not finish in time (issue 40, item 1): the API server's `504 Timeout` (its admission outlasted
    /// the create's `timeout`), or no answer before the run's deadline. No refusal.
    CreateTimedOut {
        /// The longest any try of the create was given or waited, in seconds (not the last one's alone).
        seconds: u64,
        /// The API server's message, raw.
        message: String,
    },
    /// The namespace is being deleted: the create was refused for it (`NamespaceTerminating`), or the pod went with
    /// it during the run (issue 40, item 12).
    NamespaceTerminating {
        /// The namespace.
        namespace: String,
        /// The API server's message, raw; `None` when the pod went with its namespace during the run.
        message: Option<String>,
    },
    /// The API server stopped answering during the run (a lost connection, a TLS failure), and the run ended before
    /// it answered again (issue 40, item 8).
    ApiServerLost {
        /// Why, in plain words (the innermost cause).
        why: String,
    },
    /// One of the contract's start failures.
    CannotStart(StartFailure),
    /// The pod stopped before the probe finished.
    Stopped {
        /// Why, raw.
        reason: String,
        /// The models the check was on (indices in [`PodRun::models`]): every one the probe had started without a
        /// result (issue 27, item 17); empty when the probe had started none.
        on_models: Vec<usize>,
        /// The models never checked.
        not_checked: Vec<usize>,
        /// The probe's own `error:` text (from its termination message or its log, cleaned), when it wrote one.
        probe_error: Option<String>,
        /// The cause, as a stable code: [`PodCode::OutOfMemory`], [`PodCode::ProbeError`] or [`PodCode::Stopped`].
        code: PodCode,
    },
    /// The deadline passed before the pod ran.
    DidNotStart {
        /// The last reason.
        reason: String,
        /// Its message.
        message: String,
    },
    /// The run was cancelled (Ctrl-C, SIGTERM).
    Interrupted,
    /// Not created: the driver may not do what the check needs (SelfSubjectAccessReviews said no, `access.rs`).
    NotAllowed {
        /// The permissions denied: `create pods`, `get pods/log`.
        missing: Vec<String>,
    },
    /// The pod's node stopped answering while the pod was on it (issue 39): the Node's `Ready` condition
    /// `Unknown`/`False` or its unreachable taint (the node watched), else the node lifecycle controller's
    /// `NodeNotReady` on the pod, or the pod's `Ready` condition it turned `False`.
    NodeLost {
        /// The node.
        node: String,
        /// What the cluster said, raw.
        said: String,
        /// The models the check was on, as for [`FailureKind::Stopped`].
        on_models: Vec<usize>,
        /// The models never checked.
        not_checked: Vec<usize>,
    },
    /// The deadline passed while the pod was bound to a node whose kubelet reported nothing of it.
    NodeDidNotStart {
        /// The node.
        node: String,
    },
    /// The deadline passed while the pod stayed unschedulable where a Harness pod of its priority class would
    /// preempt to run (the check pod never does): a warning, its models not checked (`scheduling.rs`).
    WouldPreempt {
        /// The priority class.
        class: String,
        /// The scheduler's reason (`Unschedulable`).
        reason: String,
        /// The scheduler's message.
        message: String,
    },
    /// Not created: the namespace's Pod Security level would refuse the pod (`pod_security.rs`).
    PodSecurity {
        /// The level the namespace enforces.
        level: String,
        /// The pod's fields it refuses.
        fields: Vec<String>,
    },
}

impl FailureKind {
    /// The stable code of this failure (the driver verdict's `pods[].code`), whose next action the models it left
    /// unchecked take.
    pub fn code(&self) -> PodCode {
        match self {
            FailureKind::Refused { .. } => PodCode::ClusterRefused,
            FailureKind::Unreachable { .. } | FailureKind::ApiServerLost { .. } => {
                PodCode::ClusterUnreachable
            }
            FailureKind::Unauthenticated { .. } => PodCode::ClusterAuth,
            FailureKind::CreateTimedOut { .. } => PodCode::CreateTimeout,
            FailureKind::NamespaceTerminating { .. } => PodCode::NamespaceTerminating,
            FailureKind::CannotStart(f) => f.code(),
            FailureKind::Stopped { code, .. } => *code,
            FailureKind::DidNotStart { .. } => PodCode::NotStarted,
            FailureKind::Interrupted => PodCode::Interrupted,
            FailureKind::NotAllowed { .. } => PodCode::PermissionMissing,
            FailureKind::PodSecurity { .. } => PodCode::PodSecurity,
            FailureKind::NodeLost { .. } | FailureKind::NodeDidNotStart { .. } => PodCode::NodeLost,
            FailureKind::WouldPreempt { .. } => PodCode::WouldPreempt,
        }
    }

    /// A failure that is a warning: the check could not run without harm, and a Harness pod would run.
    pub fn is_warning(&self) -> bool {
        matches!(self, FailureKind::WouldPreempt { .. })
    }
}

/// What the cluster showed about a pod.
#[derive(Clone, Debug, Default)]
pub struct Evidence {
    /// The pod as last watched.
    pub pod: Option<Pod>,
    /// Its Events, in the order they last happened.
    pub events: Vec<Event>,
    /// The Events could not be read (RBAC).
    pub events_forbidden: bool,
    /// The probe's log lines (its JSON lines and anything else it wrote).
    pub probe_lines: Vec<String>,
    /// The Custodian's log, when it was read.
    pub custodian_log: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each pod failure has its own code; a stop is an OOM, the probe's refusal or a plain stop as the run decided.
    #[test]
    fn every_failure_has_its_code() {
        let stopped = |code| FailureKind::Stopped {
            reason: "Evicted".into(),
            on_models: Vec::new(),
            not_checked: Vec::new(),
            probe_error: None,
            code,
        };
        let cases = [
            (
                FailureKind::Refused {
                    code: Some(403),
                    message: "forbidden".into(),
                },
                PodCode::ClusterRefused,
            ),
            (
                FailureKind::Unreachable {
                    why: "Connection refused".into(),
                },
                PodCode::ClusterUnreachable,
            ),
            (
                FailureKind::CannotStart(StartFailure::EnvFromSecret {
                    container: "probe".into(),
                    name: "x".into(),
                }),
                PodCode::SecretMissing,
            ),
            (
                FailureKind::CannotStart(StartFailure::OutOfMemory {
                    container: "custodian".into(),
                    limit: "64Mi".into(),
                }),
                PodCode::OutOfMemory,
            ),
            (stopped(PodCode::Stopped), PodCode::Stopped),
            (stopped(PodCode::ProbeError), PodCode::ProbeError),
            (
                FailureKind::DidNotStart {
                    reason: "Unschedulable".into(),
                    message: "0/3 nodes are available".into(),
                },
                PodCode::NotStarted,
            ),
            (FailureKind::Interrupted, PodCode::Interrupted),
            (
                FailureKind::CreateTimedOut {
                    seconds: 40,
                    message: "Timeout: request did not complete within the allotted timeout".into(),
                },
                PodCode::CreateTimeout,
            ),
            (
                FailureKind::NamespaceTerminating {
                    namespace: "demo".into(),
                    message: None,
                },
                PodCode::NamespaceTerminating,
            ),
            (
                FailureKind::ApiServerLost {
                    why: "Connection refused".into(),
                },
                PodCode::ClusterUnreachable,
            ),
            (
                FailureKind::NotAllowed {
                    missing: vec!["create pods".into()],
                },
                PodCode::PermissionMissing,
            ),
            (
                FailureKind::PodSecurity {
                    level: "restricted".into(),
                    fields: vec!["spec.volumes[0].nfs".into()],
                },
                PodCode::PodSecurity,
            ),
        ];
        for (kind, code) in cases {
            assert_eq!(kind.code(), code, "{kind:?}");
        }
    }
}
