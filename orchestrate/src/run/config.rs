//! What a run is given: the pods to run, each with the models its probe checks ([`PodToRun`]), and how the run goes
//! ([`RunConfig`]: its deadline and windows, the cleanup and the cancel it shares with the caller, where progress
//! goes), and the part of it a pod's step judges by ([`Rules`]).

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use tokio::sync::mpsc::UnboundedSender;

use jr2_probe::sanitize::Redactor;

use crate::plan::{Resolved, ValidPlan};
use crate::pod::CheckPod;

use super::cancel::Cancel;
use super::cleanup::Cleanup;
use super::report::RunUpdate;

/// How a run is driven.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The overall deadline (`--timeout`), from the first create request to the last verdict.
    pub timeout: Duration,
    /// How long an image pull may fail (`ErrImagePull`, `ImagePullBackOff`) before it is fatal; shown as pending
    /// meanwhile. The kubelet's first retry comes 10 s after the first failure.
    pub image_pull_grace: Duration,
    /// How long a Secret or key the pod needs may be missing before it is fatal (a secrets operator may create it
    /// after the pod); shown as pending meanwhile. The kubelet retries a container's config every 10 to 15 s, and
    /// a mount with a backoff from 0.5 s (issue 40, item 15).
    pub secret_grace: Duration,
    /// Once the pod has stopped, how long to wait for the rest of the probe's log.
    pub log_drain: Duration,
    /// How long to wait before the probe's log is opened again after it broke off.
    pub log_retry: Duration,
    /// Tries of a create answered 429, 500, 503 or 504, or not answered at all.
    pub create_tries: u32,
    /// Keep a pod that failed (`--keep-pod`) rather than delete it.
    pub keep_failed: bool,
    /// Cleans the cluster's text on its way to a line.
    pub redactor: Redactor,
    /// Where progress goes as it happens (pending lines, each model's result).
    pub progress: Option<UnboundedSender<RunUpdate>>,
    /// The cleanup to register the pods with; shared with the caller so that it can wait for the deletes after
    /// Ctrl-C. A run without one makes its own (its deletes still run, but nobody awaits them).
    pub cleanup: Option<Cleanup>,
    /// Stops the run, with a result (every pod not finished is [`FailureKind::Interrupted`]).
    pub cancel: Option<Cancel>,
    /// The caller already warned that the Events cannot be read (a SelfSubjectAccessReview said so): the run does
    /// not say it again when their watch is refused.
    pub events_forbidden_said: bool,
    /// The pre-check found `list`/`watch nodes` denied (and said so): the check pods' nodes are not watched, and a
    /// node that stops answering shows only as the pod does (issue 39, `diagnose/node.rs`).
    pub nodes_denied: bool,
    /// When the check pods' own deadline comes (`JR2_PROBE_DEADLINE`, written on the API server's clock): the
    /// probe's budget is compared with the time left to it, and one much shorter names a node whose clock is ahead
    /// (`clock.rs`). `None`: not compared.
    pub pod_deadline: Option<tokio::time::Instant>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(300),
            image_pull_grace: Duration::from_secs(15),
            secret_grace: Duration::from_secs(20),
            log_drain: Duration::from_secs(5),
            log_retry: Duration::from_secs(1),
            create_tries: 3,
            keep_failed: false,
            redactor: Redactor::default(),
            progress: None,
            cleanup: None,
            cancel: None,
            events_forbidden_said: false,
            nodes_denied: false,
            pod_deadline: None,
        }
    }
}

/// A pod to create and run, and the models its probe checks, in its run spec's order (the probe's `index`).
#[derive(Clone, Debug, PartialEq)]
pub struct PodToRun {
    /// The pod, with a name and the `jr2.dev/preflight-run` label (as `pod::check_pod` builds it).
    pub pod: Pod,
    /// Its models' names, in its run spec's order.
    pub models: Vec<String>,
    /// What the plan's validation resolved of each model, in the same order: the id, base URL, host and route the
    /// driver's lines name, whatever the pod says.
    pub resolved: Vec<Resolved>,
}

impl PodToRun {
    /// A check pod of `plan`, with its models' names.
    pub fn of(check: &CheckPod, plan: &ValidPlan) -> Self {
        PodToRun {
            pod: check.pod.clone(),
            models: check
                .models
                .iter()
                .map(|&i| plan.models[i].model.clone())
                .collect(),
            resolved: check
                .models
                .iter()
                .map(|&i| plan.resolved(i).clone())
                .collect(),
        }
    }
}

/// What a step judges by: the run's windows and how to clean the cluster's text (the part of [`RunConfig`] that is
/// no I/O, which `step.rs` judges by).
#[derive(Clone, Debug)]
pub(super) struct Rules {
    /// The overall deadline ([`RunConfig::timeout`]), as the did-not-start line names it.
    pub(super) timeout: Duration,
    /// [`RunConfig::image_pull_grace`].
    pub(super) image_pull_grace: Duration,
    /// [`RunConfig::secret_grace`].
    pub(super) secret_grace: Duration,
    /// [`RunConfig::log_drain`].
    pub(super) log_drain: Duration,
    /// [`RunConfig::log_retry`].
    pub(super) log_retry: Duration,
    /// [`RunConfig::keep_failed`].
    pub(super) keep_failed: bool,
    /// Cleans the cluster's text on its way to a line.
    pub(super) redactor: Redactor,
    /// [`RunConfig::pod_deadline`].
    pub(super) deadline: Option<tokio::time::Instant>,
    /// Each check pod's node is watched once the pod is bound to it (not [`RunConfig::nodes_denied`]).
    pub(super) watch_nodes: bool,
}

impl Rules {
    /// The rules of a run driven so.
    pub(super) fn of(opts: &RunConfig) -> Self {
        Self {
            timeout: opts.timeout,
            image_pull_grace: opts.image_pull_grace,
            secret_grace: opts.secret_grace,
            log_drain: opts.log_drain,
            log_retry: opts.log_retry,
            keep_failed: opts.keep_failed,
            redactor: opts.redactor.clone(),
            deadline: opts.pod_deadline,
            watch_nodes: !opts.nodes_denied,
        }
    }
}
