//! When the API server refuses the check pod all the same: would it refuse a Harness pod of the placement too?
//! (issue 35, item 1). A server-side dry run (`dryRun=All`: every admission step runs, nothing is stored) of a pod of
//! the placement's own spec and the Harness pods' labels answers it, with the `create pods` the run already has:
//!
//! - refused as well: the namespace refuses the Harness pods (a quota used up, a namespace frozen by policy), a real
//!   problem that stops the converge; the line gives the server's message for the Harness pod;
//! - admitted: the namespace refuses only the check pod; the line says what the check pod has that the Harness pod
//!   has not (it must be rare: the check pod is made to be admitted wherever a Harness pod is);
//! - no answer in [`DRY_RUN_TIMEOUT`], or an answer that says nothing of admission (a 409, a 429, a 5xx): nothing
//!   is added, and the contract's line stands alone.
//!
//! Only a refused create is weighed (a pod never created); a refusal the Harness meets too is still named as fast
//! as the API server answers, plus one dry run.

use std::time::Duration;

use jr2_probe::contract::render;
use jr2_probe::sanitize::Redactor;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};

use crate::plan::ValidPlan;
use crate::pod::{CheckPod, PROBE_CONTAINER};
use crate::run::{FailureKind, PodOutcome, RunResult};

/// How long the API server has to answer the dry run.
pub const DRY_RUN_TIMEOUT: Duration = Duration::from_secs(15);

/// What the dry run of a Harness pod said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Twin {
    /// Refused too: the API server's message.
    RefusedToo(String),
    /// Admitted.
    Admitted,
    /// Not known (no answer, or an answer that says nothing of admission).
    Unknown,
}

/// A Harness pod of `placement`, as its controller would create it: the placement's own spec and the Harness pods'
/// labels, a generated name in the namespace.
pub fn harness_pod(plan: &ValidPlan, placement: &str) -> Option<Pod> {
    let p = plan.placements.iter().find(|p| p.name == placement)?;
    Some(Pod {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-harness-", crate::pod::MANAGED_BY)),
            namespace: Some(plan.namespace.clone()),
            labels: plan.harness_pod_labels(placement).cloned(),
            ..ObjectMeta::default()
        },
        spec: Some(p.pod_spec.clone()),
        status: None,
    })
}

/// The server-side dry run of `pod`'s create.
pub async fn dry_run(client: Client, namespace: &str, pod: &Pod) -> Twin {
    let api: Api<Pod> = Api::namespaced(client, namespace);
    let pp = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match tokio::time::timeout(DRY_RUN_TIMEOUT, api.create(&pp, pod)).await {
        Ok(Ok(_)) => Twin::Admitted,
        Ok(Err(kube::Error::Api(s))) if admission_refusal(s.code) => Twin::RefusedToo(s.message),
        Ok(Err(e)) => {
            tracing::info!(error = %e, "the dry run of a Harness pod said nothing of admission");
            Twin::Unknown
        }
        Err(_) => {
            tracing::info!("no answer to the dry run of a Harness pod");
            Twin::Unknown
        }
    }
}

/// A status that is admission's refusal: 400, 403, 422 and the other 4xx but a conflict and a throttle.
fn admission_refusal(code: u16) -> bool {
    (400..500).contains(&code) && !matches!(code, 404 | 408 | 409 | 429)
}

/// For each check pod whose create was refused, the dry run of a Harness pod of its placement (all at once), and its
/// line after the refusal's.
pub async fn explain(
    client: Client,
    plan: &ValidPlan,
    checks: &[CheckPod],
    result: &mut RunResult,
    redactor: &Redactor,
) {
    let refused: Vec<usize> = result
        .pods
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            p.uid.is_none()
                && matches!(&p.outcome, PodOutcome::Failed(f)
                    if matches!(f.kind, FailureKind::Refused { code: Some(c), .. } if admission_refusal(c)))
        })
        .map(|(i, _)| i)
        .filter(|&i| i < checks.len())
        .collect();
    let twins = futures_util::future::join_all(refused.iter().map(|&i| {
        let client = client.clone();
        let pod = harness_pod(plan, &checks[i].placement);
        async move {
            match pod {
                Some(pod) => dry_run(client, &plan.namespace, &pod).await,
                None => Twin::Unknown,
            }
        }
    }))
    .await;
    for (i, twin) in refused.into_iter().zip(twins) {
        let placement = &checks[i].placement;
        let line = match twin {
            Twin::RefusedToo(message) => {
                render::harness_refused_too(placement, &redactor.clean(&message))
            }
            Twin::Admitted => render::harness_admitted_only(
                placement,
                &differences(&checks[i].pod, plan.harness_pod_labels(placement).is_some()),
            ),
            Twin::Unknown => continue,
        };
        if let PodOutcome::Failed(f) = &mut result.pods[i].outcome {
            // After the contract's refusal line.
            let at = f.lines.len().min(1);
            f.lines.insert(at, line);
        }
    }
}

/// What the check pod has that a Harness pod of its placement has not, in words.
pub fn differences(check: &Pod, harness_labels_known: bool) -> String {
    let probe = check
        .spec
        .as_ref()
        .and_then(|s| s.containers.iter().find(|c| c.name == PROBE_CONTAINER));
    let image = probe.and_then(|c| c.image.as_deref()).unwrap_or("?");
    let mut parts = vec![format!(
        "its probe container ({image}, its requests and limits, its security context)"
    )];
    let carried = check.metadata.owner_references.is_some();
    parts.push(if carried {
        "its own labels beside the Harness pods', its readiness gate and its owner (its Namespace)".to_owned()
    } else if harness_labels_known {
        "its labels (its own only: the Harness pods' are carried only when the Namespace can be read) and its readiness gate".to_owned()
    } else {
        "its labels (its own only: the plan gives no Harness pod labels) and its readiness gate".to_owned()
    });
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_admission_refusals_are_weighed() {
        for code in [400, 403, 422] {
            assert!(admission_refusal(code), "{code}");
        }
        for code in [409, 429, 404, 500, 504, 201] {
            assert!(!admission_refusal(code), "{code}");
        }
    }

    #[test]
    fn the_differences_say_what_the_check_pod_carries() {
        let mut pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "jr2-preflight-demo-sandbox-abcd1234"},
            "spec": {"containers": [{"name": "probe", "image": "ghcr.io/jr2/jr2-probe:0.1.0"}]}
        }))
        .unwrap();
        insta::assert_snapshot!(
            [differences(&pod, false), differences(&pod, true), {
                pod.metadata.owner_references = Some(Vec::new());
                differences(&pod, true)
            },]
            .join("\n")
        );
    }
}
