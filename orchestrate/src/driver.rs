//! From a plan to a verdict: what `jr2-preflight run` does between reading the plan and printing the last line.
//!
//! It sweeps stale check pods of the Instance, warns about NetworkPolicies the check pod escapes, runs the pods
//! ([`crate::run::run_pods`]), and puts the results back in plan order: one result per model (from the probe's
//! log, else its termination message, else `not checked`), the pods' own failure lines, the JSON verdict and the exit
//! code. `--evidence` writes a secret-safe bundle of what the cluster showed.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::render;
use jr2_probe::run::SummaryModel;
use jr2_probe::verdict::{ModelResult, Origin, Route, rfc3339_utc};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Client;
use kube::api::{Api, ListParams};
use serde::{Deserialize, Serialize};

use crate::plan::{Plan, PlanModel};
use crate::pod::CheckPod;
use crate::run::{PodOutcome, PodRun, RunResult};

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
    /// Kept for inspection (`--keep-pod`): delete it by hand.
    pub kept: bool,
}

/// What `jr2-preflight run --output json` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DriverVerdict {
    /// [`DRIVER_VERDICT_SCHEMA`].
    pub schema: String,
    /// No error (warnings allowed).
    pub ok: bool,
    /// The process's exit code: 0, 1, or 130 / 143 when interrupted (set by the caller).
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
}

/// The skip: one warning line, nothing contacted.
pub fn skipped(plan: &Plan, run_id: &str) -> DriverVerdict {
    let models: Vec<String> = plan.models.iter().map(|m| m.model.clone()).collect();
    DriverVerdict {
        schema: DRIVER_VERDICT_SCHEMA.to_owned(),
        ok: true,
        exit_code: 0,
        run_id: run_id.to_owned(),
        namespace: plan.namespace.clone(),
        skipped: true,
        started_at: rfc3339_utc(SystemTime::now()),
        elapsed_ms: 0,
        models: Vec::new(),
        pods: Vec::new(),
        lines: vec![render::skipped_warning(&models)],
    }
}

/// The NetworkPolicies of the namespace that select a placement's Harness pods and limit their egress: the check
/// pod has labels of its own, so they do not select it. A policy list that cannot be read yields no warning.
pub async fn network_policy_warnings(client: Client, plan: &Plan) -> Vec<String> {
    if plan.network_policy_check.is_none() {
        return Vec::new();
    }
    let api: Api<NetworkPolicy> = Api::namespaced(client, &plan.namespace);
    let Ok(Ok(list)) =
        tokio::time::timeout(Duration::from_secs(10), api.list(&ListParams::default())).await
    else {
        tracing::info!("cannot list NetworkPolicies; no NetworkPolicy warning");
        return Vec::new();
    };
    let mut names = std::collections::BTreeSet::new();
    for placement in plan.placements_with_models() {
        let Some(labels) = plan.harness_pod_labels(&placement.name) else {
            continue;
        };
        for policy in &list.items {
            let Some(spec) = &policy.spec else { continue };
            let limits_egress = spec
                .policy_types
                .as_ref()
                .is_some_and(|t| t.iter().any(|t| t == "Egress"))
                || spec.egress.is_some();
            if limits_egress && selects(&spec.pod_selector, labels) {
                names.insert(policy.metadata.name.clone().unwrap_or_default());
            }
        }
    }
    names
        .iter()
        .map(|n| render::network_policy_warning(n))
        .collect()
}

/// A label selector matches these labels (matchLabels and the matchExpressions operators).
fn selects(
    selector: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let by_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let by_expressions = selector.match_expressions.iter().flatten().all(|e| {
        let value = labels.get(&e.key);
        let values = e.values.clone().unwrap_or_default();
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    by_labels && by_expressions
}

/// Puts a run's results back in plan order and writes the final lines (warnings and errors; passes were written as
/// they came). `checks` are the pods the run was given, in its order.
pub fn assemble(
    plan: &Plan,
    checks: &[CheckPod],
    run: &RunResult,
    run_id: &str,
    started_at: SystemTime,
    start: Instant,
    mut lines: Vec<String>,
) -> DriverVerdict {
    let mut models = Vec::with_capacity(plan.models.len());
    let mut final_lines = Vec::new();
    let mut failed_pods_printed = std::collections::BTreeSet::new();
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
        let result = result_of(pod_run, index, plan_model);
        match &pod_run.outcome {
            PodOutcome::Finished(_) => {
                if let Some(r) = &result
                    && r.level != Level::Pass
                {
                    final_lines.extend(render::model_lines(r, &origin));
                }
            }
            PodOutcome::Failed(_) => {
                if failed_pods_printed.insert(pod_run.name.clone()) {
                    final_lines.extend(pod_run.failure_lines().iter().cloned());
                }
            }
        }
        models.push(result.unwrap_or_else(|| not_checked(plan_model, pod_run)));
    }
    lines.extend(final_lines.iter().cloned());
    for pod_run in run.pods.iter().filter(|p| p.kept) {
        lines.push(render::pod_kept(&plan.namespace, &pod_run.name));
    }
    let ok = run.ok() && models.iter().all(|m| m.level != Level::Error);
    DriverVerdict {
        schema: DRIVER_VERDICT_SCHEMA.to_owned(),
        ok,
        exit_code: if ok { 0 } else { 1 },
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
            .map(|(r, c)| PodVerdict {
                name: r.name.clone(),
                placement: c.placement.clone(),
                node: r.node.clone(),
                outcome: match r.outcome {
                    PodOutcome::Finished(_) => "finished",
                    PodOutcome::Failed(_) => "failed",
                }
                .to_owned(),
                failure: r.failure_lines().to_vec(),
                kept: r.kept,
            })
            .collect(),
        lines,
    }
}

/// A model's result: its `result` line, else the probe's verdict, else its entry in the termination message.
fn result_of(pod: &PodRun, index: usize, model: &PlanModel) -> Option<ModelResult> {
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
    Some(from_summary(model, entry))
}

/// A result the probe did not give: the model's facts as the plan's validation resolved them, not checked.
fn base(model: &PlanModel) -> ModelResult {
    let (id, api, base_url, host, route) = match model.resolved() {
        Some(r) => (
            r.id.clone(),
            r.api,
            r.base_url.clone(),
            r.host.clone(),
            r.route.clone(),
        ),
        // A plan not validated: what the plan itself says.
        None => (
            model.model.clone(),
            model
                .api
                .unwrap_or(jr2_probe::api::ApiKind::OpenAiCompletions),
            String::new(),
            String::new(),
            Route::Custom {
                api_key_set: model.key_held,
            },
        ),
    };
    ModelResult {
        model: model.model.clone(),
        id,
        api,
        base_url,
        host,
        route,
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

fn from_summary(model: &PlanModel, entry: &SummaryModel) -> ModelResult {
    let mut r = base(model);
    r.outcome = entry.outcome;
    r.code = entry.code;
    r.level = entry.outcome.level(r.api);
    r.next_action = entry.code.next_action().to_owned();
    r.error = entry.error.clone();
    r.http_status = entry.status;
    r.elapsed_ms = entry.elapsed_ms;
    r
}

fn not_checked(model: &PlanModel, pod: &PodRun) -> ModelResult {
    let mut r = base(model);
    r.error = Some(format!(
        "not checked: the check pod {} did not finish",
        pod.name
    ));
    r
}

/// Writes the evidence bundle: the pods as created (Stand-ins only), their last status, Events, the probe's lines,
/// the Custodian's log, the verdict, the run id and UTC times. Nothing in it holds a secret value: the pods carry
/// references and Stand-ins, and the probe's output is redacted at the source.
pub fn write_evidence(
    dir: &Path,
    created: &[CheckPod],
    run: &RunResult,
    verdict: &DriverVerdict,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let yaml = |v: &dyn erased::Yaml| v.to_yaml();
    std::fs::write(
        dir.join("pods-as-created.yaml"),
        crate::pod::to_yaml(created.iter().map(|c| &c.pod)),
    )?;
    for pod in &run.pods {
        let d = dir.join(&pod.name);
        std::fs::create_dir_all(&d)?;
        if let Some(p) = &pod.evidence.pod {
            std::fs::write(d.join("pod-last-status.yaml"), yaml(p))?;
        }
        std::fs::write(d.join("events.yaml"), yaml(&pod.evidence.events))?;
        std::fs::write(d.join("probe.jsonl"), pod.evidence.probe_lines.join("\n"))?;
        std::fs::write(
            d.join("custodian.log"),
            pod.evidence.custodian_log.join("\n"),
        )?;
        if pod.evidence.events_forbidden {
            std::fs::write(
                d.join("events-forbidden.txt"),
                "the Events of this pod could not be read (RBAC)\n",
            )?;
        }
    }
    std::fs::write(
        dir.join("verdict.json"),
        serde_json::to_string_pretty(verdict).unwrap_or_default(),
    )?;
    std::fs::write(
        dir.join("run.txt"),
        format!(
            "run id: {}\nnamespace: {}\nstarted at (UTC): {}\nwritten at (UTC): {}\n",
            verdict.run_id,
            verdict.namespace,
            verdict.started_at,
            rfc3339_utc(SystemTime::now())
        ),
    )?;
    Ok(())
}

mod erased {
    //! YAML of anything serializable, behind a trait object.
    pub trait Yaml {
        fn to_yaml(&self) -> String;
    }

    impl<T: serde::Serialize> Yaml for T {
        fn to_yaml(&self) -> String {
            serde_yaml::to_string(self).unwrap_or_default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    #[test]
    fn selectors_match_as_kubernetes_does() {
        let labels: BTreeMap<String, String> = [
            ("app".to_owned(), "jr2-harness".to_owned()),
            ("tier".to_owned(), "sandbox".to_owned()),
        ]
        .into();
        let by = |l: &[(&str, &str)], e: Vec<LabelSelectorRequirement>| {
            Some(LabelSelector {
                match_labels: Some(
                    l.iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                match_expressions: Some(e),
            })
        };
        assert!(selects(&None, &labels));
        assert!(
            selects(&Some(LabelSelector::default()), &labels),
            "an empty selector selects every pod"
        );
        assert!(selects(&by(&[("app", "jr2-harness")], vec![]), &labels));
        assert!(!selects(&by(&[("app", "other")], vec![]), &labels));
        let req = |op: &str, values: &[&str]| LabelSelectorRequirement {
            key: "tier".to_owned(),
            operator: op.to_owned(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        };
        assert!(selects(
            &by(&[], vec![req("In", &["sandbox", "x"])]),
            &labels
        ));
        assert!(!selects(
            &by(&[], vec![req("NotIn", &["sandbox"])]),
            &labels
        ));
        assert!(selects(&by(&[], vec![req("Exists", &[])]), &labels));
        assert!(!selects(&by(&[], vec![req("DoesNotExist", &[])]), &labels));
    }
}
