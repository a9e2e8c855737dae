//! What a session is given: the values of the flags `run` and `check` share and what each adds ([`Session`]), and
//! the one place a raw plan becomes a [`ValidPlan`] under them ([`valid_plan`]).

use std::path::Path;
use std::time::Duration;

use crate::plan::{Overrides, PlanError, RawPlan, ValidPlan};

/// How a validated plan is run: the values of the flags `run` and `check` share, and what each adds.
#[derive(Debug, Default)]
pub struct Session<'a> {
    /// `--kubeconfig` (default: KUBECONFIG, then ~/.kube/config).
    pub kubeconfig: Option<&'a Path>,
    /// `--context`.
    pub context: Option<&'a str>,
    /// `--output json`: the verdict on stdout too.
    pub json: bool,
    /// `--dry-run`: print the check pods, contact nothing.
    pub dry_run: bool,
    /// `--timeout`: the whole check's deadline (default: the plan's deadline and a minute).
    pub timeout: Option<Duration>,
    /// `--keep-pod`: keep a failed check pod.
    pub keep_pod: bool,
    /// `--evidence`: where a failed check's evidence bundle goes.
    pub evidence: Option<&'a Path>,
    /// `--from-deployment`: the Harness Deployment whose template the placements take.
    pub from_deployment: Option<&'a str>,
    /// `check`: the Deployment is adopted as `one_off::adopt` does (its containers found by name).
    pub one_off: bool,
    /// `--skip-provider-preflight`.
    pub skip: bool,
    /// `--cancel-on-stdin`.
    pub cancel_on_stdin: bool,
}

/// The one place a plan becomes a [`ValidPlan`]: the flags' values in place of the plan's own (each checked under its
/// flag's name), then the plan validated as it will run.
pub fn valid_plan(mut plan: RawPlan, overrides: &Overrides) -> Result<ValidPlan, PlanError> {
    plan.override_with(overrides)?;
    plan.validate()
}
