//! What is known before the create: the sweep of stale check pods, the NetworkPolicy warnings, and the namespace's
//! Pod Security level against each check pod (the pods it refuses are not created), asked all at once.

use std::time::{Duration, SystemTime};

use jr2_probe::contract::render;
use jr2_probe::sanitize;

use crate::access::{self, Access};
use crate::plan::ValidPlan;
use crate::run::{FailureKind, PodFailure, sweep_stale};
use crate::{network_policy, pod, pod_security};

/// What is known before the create: warnings to write, and the pods the namespace's Pod Security level refuses
/// (by their index), which are not created.
pub(super) struct Prepared {
    pub(super) warnings: Vec<String>,
    pub(super) refused: Vec<(usize, PodFailure)>,
}

/// Before the create: the sweep of stale check pods of the Instance (a failure is only logged), the NetworkPolicy
/// warning lines, and the Pod Security level of the namespace against each check pod (all at once).
pub(super) async fn prepare(
    client: kube::Client,
    plan: &ValidPlan,
    checks: &[pod::CheckPod],
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
            Vec::new()
        } else {
            network_policy::warnings(client.clone(), plan, checks).await
        }
    };
    let level = async {
        if access.denied(access::Use::Namespace) {
            None
        } else {
            pod_security::enforced(client.clone(), &plan.namespace).await
        }
    };
    let ((), warnings, level) = tokio::join!(sweep, policies, level);
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
