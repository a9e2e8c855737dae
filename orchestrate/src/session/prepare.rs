//! What is known before the create: the sweep of stale check pods, what the namespace's admission weighs (its
//! Namespace, LimitRanges and ResourceQuotas: `admission/`), the NetworkPolicy warnings, and the namespace's Pod
//! Security level against each check pod (the pods it refuses are not created), asked all at once. The check pods
//! are fitted to what was read before they are judged: the warnings and the level weigh the pods as created.

use std::time::{Duration, SystemTime};

use jr2_probe::contract::render;
use jr2_probe::sanitize;

use crate::access::{self, Access};
use crate::plan::ValidPlan;
use crate::run::{FailureKind, PodFailure, sweep_stale};
use crate::{admission, network_policy, pod, pod_security};

/// What is known before the create: warnings to write, and the pods the namespace's Pod Security level refuses
/// (by their index), which are not created.
pub(super) struct Prepared {
    pub(super) warnings: Vec<String>,
    pub(super) refused: Vec<(usize, PodFailure)>,
}

/// Before the create: the sweep of stale check pods of the Instance (a failure is only logged), the reads of what
/// admission weighs (given to `checks`: `admission::fit`), the NetworkPolicy warning lines, and the Pod Security level
/// of the namespace against each check pod (the reads all at once).
pub(super) async fn prepare(
    client: kube::Client,
    plan: &ValidPlan,
    checks: &mut [pod::CheckPod],
    now: SystemTime,
    access: &Access,
) -> Prepared {
    let sweep = async {
        match tokio::time::timeout(
            Duration::from_secs(15),
            sweep_stale(client.clone(), &plan.namespace, &plan.instance, now),
        )
        .await
        {
            Ok(Ok(sweep)) if !sweep.deleted.is_empty() => {
                tracing::info!(deleted = ?sweep.deleted, "swept stale check pods");
            }
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot sweep stale check pods"),
            _ => {}
        }
    };
    let policies = async {
        if access.denied(access::Use::NetworkPolicies) {
            None
        } else {
            network_policy::list(client.clone(), plan).await
        }
    };
    let facts = admission::read(client.clone(), &plan.namespace, access);
    let ((), policies, facts) = tokio::join!(sweep, policies, facts);
    admission::fit(plan, checks, &facts);
    let warnings = policies
        .as_deref()
        .map(|p| network_policy::judge(plan, checks, p))
        .unwrap_or_default();
    if let Some(p) = policies.as_deref() {
        network_policy::find_denied(plan, checks, p);
    }
    let level = facts.namespace.as_ref().and_then(pod_security::level_of);
    let mut refused = Vec::new();
    if let Some(level) = level {
        for (i, check) in checks.iter().enumerate() {
            let found = pod_security::violations(&check.pod, level);
            if found.is_empty() {
                continue;
            }
            let name = check.pod.metadata.name.clone().unwrap_or_default();
            let mut lines = vec![render::pod_security_refusal(
                &plan.namespace,
                level.as_str(),
                &name,
                &found[0].field,
                &sanitize::escape(&found[0].what),
            )];
            lines.extend(
                found[1..]
                    .iter()
                    .map(|v| render::pod_security_also(&v.field, &sanitize::escape(&v.what))),
            );
            lines.push(render::pod_security_hint());
            refused.push((
                i,
                PodFailure {
                    kind: FailureKind::PodSecurity {
                        level: level.as_str().to_owned(),
                        fields: found.iter().map(|v| v.field.clone()).collect(),
                    },
                    lines,
                },
            ));
        }
    }
    Prepared { warnings, refused }
}
