//! The driver's verdict: its types (what `--output json` prints, `orchestrate/schemas/driver-verdict.v1.schema.json`) and its
//! assembly from a run, one result per model in plan order (from the probe's log, else its termination message, else
//! `not checked` from what the plan's validation resolved), the pods' own failure lines (after the lines of what their
//! probe found before they failed), each failed pod's stable code, whose next action its unchecked models take, and
//! the exit code.

use std::time::{Instant, SystemTime};

use jr2_probe::contract::Exit;
use jr2_probe::contract::outcome::{Code, Level, Outcome, PodCode};
use jr2_probe::contract::render;
use jr2_probe::contract::summary::SummaryModel;
use jr2_probe::contract::verdict::{ModelResult, Origin, rfc3339_utc};
use serde::{Deserialize, Serialize};

use crate::plan::{PlanModel, Resolved, ValidPlan};
use crate::pod::CheckPod;
use crate::run::{FailureKind, PodOutcome, PodRun, RunResult};

/// The driver verdict's schema identifier.
pub const DRIVER_VERDICT_SCHEMA: &str = "jr2.dev/provider-preflight-driver-verdict/v1";

/// One check pod in the verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodVerdict {
    /// The pod's name.
    pub name: String,
    /// The placement it stood in for.
    pub placement: String,
    /// The node it ran on, when it was scheduled.
    pub node: Option<String>,
    /// `finished` (the probe gave its verdict) or `failed` (the pod did not let it).
    pub outcome: String,
    /// The failure's lines, when it failed.
    pub failure: Vec<String>,
    /// The failure's stable code, when it failed.
    pub code: Option<PodCode>,
    /// What to do next about the failure, in `jr2 up`'s words, when it failed.
    pub next_action: Option<String>,
    /// Kept for inspection (`--keep-pod`): delete it by hand.
    pub kept: bool,
}

/// The release that ran: the troubleshooting page asks for the exact release identity on every report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    /// The driver's version (`jr2-preflight`).
    pub driver: String,
    /// The probe's version as the probe reported it (its verdict's `probeVersion`); null when no probe reported
    /// one (skipped, nothing to check, no pod finished).
    pub probe: Option<String>,
    /// The probe image the check pods ran (or would have run).
    pub probe_image: String,
}

/// The cluster the run talked to, for the troubleshooting envelope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// The API server's host, with `:port` when the kubeconfig names one (no path, no credentials).
    pub server: String,
    /// The API server's `gitVersion` (`GET /version`); null when it was not asked (nothing contacted) or did not
    /// answer.
    pub kubernetes_version: Option<String>,
}

/// What `jr2-preflight run --output json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverVerdict {
    /// [`DRIVER_VERDICT_SCHEMA`].
    pub schema: String,
    /// No error (warnings allowed).
    pub ok: bool,
    /// The process's exit code ([`Exit`]): 0, 1, or 130 / 143 when interrupted (set by the caller).
    pub exit_code: i32,
    /// The run's id (the check pods' `jr2.dev/preflight-run` label).
    pub run_id: String,
    /// The namespace.
    pub namespace: String,
    /// The preflight was skipped (`--skip-provider-preflight`).
    pub skipped: bool,
    /// UTC start.
    pub started_at: String,
    /// Milliseconds.
    pub elapsed_ms: u64,
    /// Per model, in plan order.
    pub models: Vec<ModelResult>,
    /// Per check pod.
    pub pods: Vec<PodVerdict>,
    /// Every line written on stderr, in order.
    pub lines: Vec<String>,
    /// The release that ran (driver, probe, probe image).
    pub release: Release,
    /// The kubeconfig context (`--context`, else the current one); null when the kubeconfig could not be read.
    pub kube_context: Option<String>,
    /// The cluster; null when the kubeconfig could not be read.
    pub cluster: Option<ClusterInfo>,
}

/// The skip: one warning line that names each model once (a model on two placements is one model to the user),
/// nothing contacted. A plan without models skips nothing, so it has no line.
pub fn skipped(plan: &ValidPlan, run_id: &str) -> DriverVerdict {
    let mut models: Vec<String> = Vec::new();
    for m in &plan.models {
        if !models.contains(&m.model) {
            models.push(m.model.clone());
        }
    }
    let lines = if models.is_empty() {
        Vec::new()
    } else {
        vec![render::skipped_warning(&models)]
    };
    // Each model is in `models` too, marked skipped, so that a typed reader sees which went unchecked without
    // parsing the line (issue 27, item 14).
    let results = plan
        .models
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut r = base(m, plan.resolved(i));
            r.outcome = Outcome::Skipped;
            r.level = Outcome::Skipped.level(r.api);
            r.code = Code::Skipped;
            r.next_action = render::next_action(&r);
            r
        })
        .collect();
    DriverVerdict {
        skipped: true,
        lines,
        models: results,
        ..nothing_to_check(plan, run_id)
    }
}

/// A plan without models: nothing to check, so nothing is contacted or created, no line, and the verdict is ok
/// (it is not bad input: an Instance may have no provider yet).
pub fn nothing_to_check(plan: &ValidPlan, run_id: &str) -> DriverVerdict {
    DriverVerdict {
        schema: DRIVER_VERDICT_SCHEMA.to_owned(),
        ok: true,
        exit_code: i32::from(Exit::Ok),
        run_id: run_id.to_owned(),
        namespace: plan.namespace.clone(),
        skipped: false,
        started_at: rfc3339_utc(SystemTime::now()),
        elapsed_ms: 0,
        models: Vec::new(),
        pods: Vec::new(),
        lines: Vec::new(),
        release: release(plan, None),
        kube_context: None,
        cluster: None,
    }
}

/// The release of a run: this driver's version, the probe's as it reported it, the plan's probe image.
fn release(plan: &ValidPlan, probe: Option<String>) -> Release {
    Release {
        driver: env!("CARGO_PKG_VERSION").to_owned(),
        probe,
        probe_image: plan.probe_image.clone(),
    }
}

/// The pass lines that may be written as they come without breaking plan order (issue 27, item 16): a model's
/// `completed a tool call` line is written at once only when every model before it in the plan has passed and had
/// its line written; any other is left to [`assemble`], which writes every line from the first model not written
/// on, in plan order.
#[derive(Debug)]
pub struct LiveOrder {
    /// Per plan model: `None` until its result came; then its pass line, or `None` for another level.
    slots: Vec<Option<Option<String>>>,
    /// Per pod name: its models' plan indices, in its run spec's order.
    by_pod: std::collections::HashMap<String, Vec<usize>>,
    /// The models whose lines were written, a prefix of the plan.
    written: usize,
}

impl LiveOrder {
    /// For the pods of `checks` running `plan`.
    pub fn new(plan: &ValidPlan, checks: &[CheckPod]) -> Self {
        LiveOrder {
            slots: vec![None; plan.models.len()],
            by_pod: checks
                .iter()
                .filter_map(|c| Some((c.pod.metadata.name.clone()?, c.models.clone())))
                .collect(),
            written: 0,
        }
    }

    /// A result came for model `index` of `pod`: the lines to write now, in plan order (none, or the pass lines
    /// it releases).
    pub fn result(&mut self, pod: &str, index: usize, r: &ModelResult) -> Vec<String> {
        let Some(&p) = self.by_pod.get(pod).and_then(|m| m.get(index)) else {
            return Vec::new();
        };
        if let Some(slot) = self.slots.get_mut(p) {
            *slot =
                Some((r.level == Level::Pass).then(|| render::completed(&r.model, r.elapsed_ms)));
        }
        let mut out = Vec::new();
        while let Some(Some(Some(line))) = self.slots.get(self.written) {
            out.push(line.clone());
            self.written += 1;
        }
        out
    }

    /// How many models of the plan (from the first) had their lines written.
    pub fn written(&self) -> usize {
        self.written
    }
}

/// The policies that deny the check pod the model's destination (`check.denied_egress`), when its connect failed
/// there: the probe's own (`unreachable`), or the Custodian's on its behalf (its 502: it runs in the check pod, under
/// the same policies). Issue 35.
fn denied_egress<'a>(
    r: &ModelResult,
    check: &'a CheckPod,
    plan_index: usize,
) -> Option<&'a crate::network_policy::DeniedEgress> {
    let connect_failed = r.outcome == Outcome::Unreachable
        || (r.outcome == Outcome::CustodianRefused && r.http_status == Some(502));
    if connect_failed {
        check.denied_egress.get(&plan_index)
    } else {
        None
    }
}

/// A model's lines; a connect that failed where the NetworkPolicies that select the check pod deny it the model's
/// destination ([`denied_egress`]) names them in place of the hints (issue 35): the `error:` line, then the
/// policies' line.
fn model_lines(
    r: &ModelResult,
    origin: &Origin,
    check: &CheckPod,
    plan_index: usize,
) -> Vec<String> {
    let mut lines = render::model_lines(r, origin);
    if let Some(d) = denied_egress(r, check, plan_index)
        && !lines.is_empty()
    {
        lines.truncate(1);
        lines.push(render::network_policy_denies(
            &d.names,
            &d.destination,
            d.harness_too,
            &d.check_labels,
        ));
    }
    lines
}

/// Puts a run's results back in plan order and writes the final lines: every model's from the `written`-th of the
/// plan on (the first `written` passed, and their lines were written as they came: [`LiveOrder`]), a pass's
/// included, whether its result came from the log or from the termination message. `checks` are the pods the run
/// was given, in its order.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    plan: &ValidPlan,
    checks: &[CheckPod],
    run: &RunResult,
    run_id: &str,
    started_at: SystemTime,
    start: Instant,
    mut lines: Vec<String>,
    written: usize,
) -> DriverVerdict {
    let mut models = Vec::with_capacity(plan.models.len());
    let mut final_lines = Vec::new();
    let mut failed_pods_printed = std::collections::BTreeSet::new();
    // Models a finished probe did not check (its deadline came first): one `error:` line per reason after the
    // others, each followed by its models, as the probe itself writes them, not one header per model.
    let mut unchecked: Vec<ModelResult> = Vec::new();
    // The pods whose models went unchecked on a node whose clock is ahead.
    let mut skewed: std::collections::BTreeSet<usize> = std::collections::BTreeSet::new();
    let several = run.pods.len() > 1;
    let failures: Vec<Vec<String>> = run
        .pods
        .iter()
        .zip(checks)
        .map(|(r, c)| failure_block(r, c, several))
        .collect();
    for (plan_index, plan_model) in plan.models.iter().enumerate() {
        // The pod that checks it, and its index in that pod's run spec.
        let Some((pod_index, index)) = checks.iter().enumerate().find_map(|(p, c)| {
            let index = c.models.iter().position(|&m| m == plan_index)?;
            Some((p, index))
        }) else {
            continue;
        };
        let Some(pod_run) = run.pods.get(pod_index) else {
            continue;
        };
        let origin = Origin::Node {
            name: pod_run
                .node
                .clone()
                .unwrap_or_else(|| "an unscheduled node".to_owned()),
        };
        let facts = plan.resolved(plan_index);
        let mut result = result_of(pod_run, index, plan_model, facts);
        // Not checked on a node whose clock is ahead: the clocks are to be fixed, not the run repeated (issue 40,
        // item 3).
        if let (PodOutcome::Finished(_), Some(_), Some(r)) =
            (&pod_run.outcome, pod_run.node_ahead, result.as_mut())
            && r.outcome == Outcome::NotChecked
        {
            r.next_action = PodCode::ClockSkew.next_action().to_owned();
            skewed.insert(pod_index);
        }
        // A connect the NetworkPolicies deny: the next action points at them, not at the address or the held secret.
        if let Some(r) = result.as_mut()
            && let Some(d) = denied_egress(r, &checks[pod_index], plan_index)
        {
            r.next_action = render::network_policy_next_action(
                &d.names,
                &d.destination,
                d.harness_too,
                &d.check_labels,
            );
        }
        match &pod_run.outcome {
            PodOutcome::Finished(_) => match &result {
                Some(r) if r.outcome == Outcome::NotChecked => unchecked.push(r.clone()),
                Some(r) if plan_index >= written => {
                    final_lines.extend(model_lines(r, &origin, &checks[pod_index], plan_index));
                }
                _ => {}
            },
            PodOutcome::Failed(_) => {
                if failed_pods_printed.insert(pod_index) {
                    // What the probe found before the pod failed comes first, each model's own lines in plan
                    // order (a 401 found before an OOM is not left to the next run), then the pod's failure.
                    let mut mine: Vec<(usize, usize)> = checks[pod_index]
                        .models
                        .iter()
                        .enumerate()
                        .map(|(index, &p)| (p, index))
                        .collect();
                    mine.sort_unstable();
                    // (A failed pod has no verdict of its own: only what its log gave.)
                    for (p, index) in mine {
                        if let Some(Some(r)) = pod_run.results.get(index)
                            && p >= written
                        {
                            final_lines.extend(model_lines(r, &origin, &checks[pod_index], p));
                        }
                    }
                    final_lines.extend(failures[pod_index].iter().cloned());
                }
            }
        }
        models.push(result.unwrap_or_else(|| not_checked(plan_model, facts, pod_run)));
    }
    final_lines.extend(render::not_checked_lines(
        &unchecked.iter().collect::<Vec<_>>(),
    ));
    for &p in &skewed {
        let ahead = run.pods[p].node_ahead.unwrap_or_default();
        final_lines.push(render::clock_skew(&ahead.to_string()));
    }
    lines.extend(final_lines.iter().cloned());
    for pod_run in run.pods.iter().filter(|p| p.kept) {
        lines.push(render::pod_kept(&plan.namespace, &pod_run.name));
    }
    let ok = run.ok() && models.iter().all(|m| m.level != Level::Error);
    DriverVerdict {
        schema: DRIVER_VERDICT_SCHEMA.to_owned(),
        ok,
        exit_code: i32::from(Exit::of_run(ok)),
        run_id: run_id.to_owned(),
        namespace: plan.namespace.clone(),
        skipped: false,
        started_at: rfc3339_utc(started_at),
        elapsed_ms: start.elapsed().as_millis() as u64,
        models,
        pods: run
            .pods
            .iter()
            .zip(checks)
            .zip(failures)
            .enumerate()
            .map(|(p, ((r, c), failure))| {
                let code = match &r.outcome {
                    PodOutcome::Failed(f) => Some(f.kind.code()),
                    PodOutcome::Finished(_) if skewed.contains(&p) => Some(PodCode::ClockSkew),
                    PodOutcome::Finished(_) => None,
                };
                PodVerdict {
                    name: r.name.clone(),
                    placement: c.placement.clone(),
                    node: r.node.clone(),
                    outcome: match r.outcome {
                        PodOutcome::Finished(_) => "finished",
                        PodOutcome::Failed(_) => "failed",
                    }
                    .to_owned(),
                    failure,
                    code,
                    next_action: code.map(|c| c.next_action().to_owned()),
                    kept: r.kept,
                }
            })
            .collect(),
        lines,
        release: release(
            plan,
            run.pods.iter().find_map(|p| match &p.outcome {
                PodOutcome::Finished(report) => {
                    report.verdict.as_ref().map(|v| v.probe_version.clone())
                }
                PodOutcome::Failed(_) => None,
            }),
        ),
        kube_context: None,
        cluster: None,
    }
}

/// A failed pod's lines: its own, and with more than one check pod in the run, which placement (and node) it was
/// and the models it left unchecked, so that no placement's models go unchecked without a line naming them. A
/// cluster that cannot be reached is one line for the run; an interrupted run has the interrupted line.
fn failure_block(pod: &PodRun, check: &CheckPod, several: bool) -> Vec<String> {
    let PodOutcome::Failed(f) = &pod.outcome else {
        return Vec::new();
    };
    let mut lines = f.lines.clone();
    if !several
        || lines.is_empty()
        || matches!(
            f.kind,
            FailureKind::Unreachable { .. }
                | FailureKind::Unauthenticated { .. }
                | FailureKind::ApiServerLost { .. }
                | FailureKind::Interrupted
                | FailureKind::NotAllowed { .. }
        )
    {
        return lines;
    }
    lines.insert(
        1,
        render::placement_detail(&check.placement, pod.node.as_deref()),
    );
    // A stopped pod's lines (its node's loss, a preemption it would need) name the models it did not reach already.
    if !matches!(
        f.kind,
        FailureKind::Stopped { .. }
            | FailureKind::NamespaceTerminating { message: None, .. }
            | FailureKind::NodeLost { .. }
            | FailureKind::WouldPreempt { .. }
    ) {
        lines.extend(
            pod.models
                .iter()
                .enumerate()
                .filter(|(i, _)| pod.results.get(*i).is_none_or(Option::is_none))
                .map(|(_, m)| render::not_checked(m)),
        );
    }
    lines
}

/// A model's result: its `result` line, else the probe's verdict, else its entry in the termination message.
fn result_of(
    pod: &PodRun,
    index: usize,
    model: &PlanModel,
    facts: &Resolved,
) -> Option<ModelResult> {
    if let Some(Some(r)) = pod.results.get(index) {
        return Some(r.clone());
    }
    let PodOutcome::Finished(report) = &pod.outcome else {
        return None;
    };
    if let Some(v) = &report.verdict
        && let Some(r) = v.models.get(index)
    {
        return Some(r.clone());
    }
    let entry = report.summary.as_ref()?.models.get(index)?;
    Some(from_summary(model, facts, entry))
}

/// A result the probe did not give: the model's facts as the plan's validation resolved them, not checked.
fn base(model: &PlanModel, facts: &Resolved) -> ModelResult {
    ModelResult {
        findings: Default::default(),
        model: model.model.clone(),
        id: facts.id.clone(),
        api: facts.api,
        base_url: facts.base_url.clone(),
        host: facts.host.clone(),
        route: facts.route.clone(),
        outcome: Outcome::NotChecked,
        level: Level::Error,
        code: Code::NotChecked,
        next_action: Code::NotChecked.next_action().to_owned(),
        error: None,
        http_status: None,
        stop_reason: None,
        tool_name: None,
        answer: None,
        max_tokens: 0,
        elapsed_ms: 0,
        tries: Vec::new(),
    }
}

fn from_summary(model: &PlanModel, facts: &Resolved, entry: &SummaryModel) -> ModelResult {
    let mut r = base(model, facts);
    r.outcome = entry.outcome;
    r.code = entry.code;
    r.level = entry.outcome.level(r.api);
    r.error = entry.error.clone();
    r.next_action = render::next_action(&r);
    r.error = entry.error.clone();
    r.http_status = entry.status;
    r.elapsed_ms = entry.elapsed_ms;
    r
}

/// A model the probe gave no result for: not checked; when its pod failed, what to do next is what that failure
/// asks for (a missing Secret is created, not retried).
fn not_checked(model: &PlanModel, facts: &Resolved, pod: &PodRun) -> ModelResult {
    let mut r = base(model, facts);
    r.error = Some(format!(
        "not checked: the check pod {} did not finish",
        pod.name
    ));
    if let PodOutcome::Failed(f) = &pod.outcome {
        r.next_action = f.kind.code().next_action().to_owned();
        // Not checked because checking would have evicted a pod: the run's warning, not its failure.
        if f.kind.is_warning() {
            r.level = Level::Warning;
        }
    }
    r
}

/// The check pods that may outlive the run, and why (their delete failed, or was not confirmed in time): each
/// gets an `error:` line with its `kubectl delete` line (issue 25, item 5), a pod that had no failure of its own
/// fails with [`PodCode::Left`], and the verdict is not ok, so that `jr2 up`, which reads it, learns of it.
pub fn pods_left(verdict: &mut DriverVerdict, left: &[(String, String)]) {
    for (pod, why) in left {
        let why = jr2_probe::sanitize::Redactor::default()
            .clean_to(why, jr2_probe::sanitize::MAX_ERROR_CHARS);
        let line = render::pod_left(&verdict.namespace, pod, &why);
        verdict.lines.push(line.clone());
        match verdict.pods.iter_mut().find(|p| p.name == *pod) {
            Some(p) if p.code.is_none() => {
                p.outcome = "failed".to_owned();
                p.failure = vec![line];
                p.code = Some(PodCode::Left);
                p.next_action = Some(PodCode::Left.next_action().to_owned());
            }
            // The pod's first cause keeps its code (an interrupted run); its failure names the pod left too.
            Some(p) => p.failure.push(line),
            None => {}
        }
    }
    if !left.is_empty() {
        verdict.ok = false;
        if verdict.exit_code == i32::from(Exit::Ok) {
            verdict.exit_code = i32::from(Exit::Failed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Evidence, ProbeReport};

    /// A finished probe whose deadline came before three of its models: one `error:` line for the reason, then the
    /// three models, as the probe writes them; the model it did check keeps its own lines first.
    #[test]
    fn models_a_finished_probe_did_not_check_are_one_block_per_reason() {
        use crate::plan::RawPlan;
        let mut raw = RawPlan::parse(include_str!("../examples/plan.json")).unwrap();
        let mut extra = raw.models[2].clone();
        extra.model = "google/gemini-2.5-pro".to_owned();
        raw.models.push(extra);
        let plan = raw.validate().unwrap();
        let checks = crate::pod::check_pods(&plan, "run0001", SystemTime::now());
        let pods = checks
            .iter()
            .map(|c| {
                let results = c
                    .models
                    .iter()
                    .map(|&m| {
                        let mut r = base(&plan.models[m], plan.resolved(m));
                        if m == 0 {
                            r.outcome = Outcome::KeyRefused;
                            r.code = Code::KeyRefused;
                            r.error = Some("HTTP 401: invalid x-api-key".to_owned());
                        } else {
                            r.error = Some(render::deadline_came_first_error());
                        }
                        Some(r)
                    })
                    .collect();
                PodRun {
                    name: c.pod.metadata.name.clone().unwrap(),
                    uid: None,
                    node: Some("worker-2".to_owned()),
                    models: c
                        .models
                        .iter()
                        .map(|&m| plan.models[m].model.clone())
                        .collect(),
                    results,
                    outcome: PodOutcome::Finished(ProbeReport::default()),
                    evidence: Evidence::default(),
                    kept: false,
                    node_ahead: None,
                }
            })
            .collect();
        let run = RunResult {
            pods,
            warnings: Vec::new(),
        };
        let v = assemble(
            &plan,
            &checks,
            &run,
            "run0001",
            SystemTime::now(),
            Instant::now(),
            Vec::new(),
            0,
        );
        let headers: Vec<&String> = v
            .lines
            .iter()
            .filter(|l| l.starts_with("error: provider preflight: the check pod's deadline"))
            .collect();
        assert_eq!(headers.len(), 1, "{:#?}", v.lines);
        let at = v.lines.iter().position(|l| l == headers[0]).unwrap();
        assert_eq!(
            v.lines[at..],
            [
                "error: provider preflight: the check pod's deadline came first".to_owned(),
                "  not checked: vllm/Qwen/Qwen3-32B".to_owned(),
                "  not checked: google/gemini-2.5-flash".to_owned(),
                "  not checked: google/gemini-2.5-pro".to_owned(),
            ],
            "{:#?}",
            v.lines
        );
        assert!(
            v.lines[0].contains("anthropic/claude-haiku-4-5"),
            "{:#?}",
            v.lines
        );
    }
}
