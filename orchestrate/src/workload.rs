//! `--from-deployment NAME`: the placement and the Custodian of a Harness workload that runs in the cluster now.
//!
//! An operator who asks "would the models answer from where my Harness pods stand today?" names the Deployment; its
//! pod template replaces every placement's pod spec, and its pod labels become the Harness labels the NetworkPolicy
//! check compares with (where the plan names none). The template goes through the plan's own validation, so a
//! template that carries a literal key is refused as a plan would be, its field named as the Deployment names it
//! (`spec.template.spec...`) and its value never repeated.

use std::collections::BTreeMap;
use std::time::Duration;

use jr2_probe::contract::Exit;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PodSpec;
use kube::{Api, Client};
use thiserror::Error;

use crate::plan::{Field, NetworkPolicyCheck, PlanError, RawPlan};

/// How long the API server has to answer the read.
pub const READ_TIMEOUT: Duration = Duration::from_secs(15);

/// What a Harness Deployment's pods run: their spec and their labels.
#[derive(Clone, Debug, PartialEq)]
pub struct HarnessWorkload {
    /// The Deployment's name.
    pub name: String,
    /// Its pod template's spec.
    pub pod_spec: PodSpec,
    /// Its pod template's labels.
    pub labels: BTreeMap<String, String>,
}

/// Why `--from-deployment` cannot be used. Rendered as `error: --from-deployment: <this>`, exit 2, nothing created.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// No such Deployment.
    #[error("there is no Deployment \"{name}\" in namespace \"{namespace}\"")]
    NotFound {
        /// The name given.
        name: String,
        /// The namespace looked in.
        namespace: String,
    },
    /// The API server refused the read (RBAC) or failed.
    #[error("cannot read Deployment \"{name}\" in namespace \"{namespace}\": {message}")]
    Api {
        /// The name given.
        name: String,
        /// The namespace.
        namespace: String,
        /// The API server's message (or the transport's).
        message: String,
    },
    /// No answer in [`READ_TIMEOUT`].
    #[error("the API server did not answer the read of Deployment \"{name}\" in {} s", READ_TIMEOUT.as_secs())]
    Timeout {
        /// The name given.
        name: String,
    },
    /// The Deployment has no pod template spec.
    #[error("Deployment \"{name}\" has no pod template")]
    NoTemplate {
        /// The name given.
        name: String,
    },
    /// The template is not what a plan accepts.
    #[error("Deployment \"{name}\": {field}: {message}")]
    Invalid {
        /// The Deployment.
        name: String,
        /// The field, as the Deployment names it (`spec.template.spec.containers[0].env[0]`).
        field: String,
        /// Why.
        message: String,
    },
}

impl WorkloadError {
    /// The exit: a name that does not lead to a usable template is bad input.
    pub const EXIT: Exit = PlanError::EXIT;
}

/// Reads the Deployment `name` in `namespace`.
pub async fn read_deployment(
    client: Client,
    namespace: &str,
    name: &str,
) -> Result<HarnessWorkload, WorkloadError> {
    let api: Api<Deployment> = Api::namespaced(client, namespace);
    let deployment = tokio::time::timeout(READ_TIMEOUT, api.get(name))
        .await
        .map_err(|_| WorkloadError::Timeout {
            name: name.to_owned(),
        })?
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 404 => WorkloadError::NotFound {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
            },
            kube::Error::Api(s) => WorkloadError::Api {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                message: format!("{} ({})", s.message, s.code),
            },
            other => WorkloadError::Api {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                message: other.to_string(),
            },
        })?;
    let template = deployment.spec.map(|s| s.template);
    let labels = template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let pod_spec = template
        .and_then(|t| t.spec)
        .ok_or_else(|| WorkloadError::NoTemplate {
            name: name.to_owned(),
        })?;
    Ok(HarnessWorkload {
        name: name.to_owned(),
        pod_spec,
        labels,
    })
}

/// A plan error of the plan the workload went into, its field named as the Deployment names it: how
/// `--from-deployment` words the errors of the plan it validates again.
pub fn invalid(workload: &HarnessWorkload, e: PlanError) -> WorkloadError {
    match e {
        PlanError::Invalid { field, message } => WorkloadError::Invalid {
            name: workload.name.clone(),
            field: as_deployment_field(field),
            message,
        },
        other => WorkloadError::Invalid {
            name: workload.name.clone(),
            field: "spec.template.spec".to_owned(),
            message: other.to_string(),
        },
    }
}

/// Puts the workload in every placement of the plan: its template in place of each pod spec, its labels where the
/// plan names none. The caller validates the plan again (a template is new input), its errors worded by
/// [`invalid`].
pub fn apply(plan: &mut RawPlan, workload: &HarnessWorkload) {
    for placement in &mut plan.placements {
        placement.pod_spec = workload.pod_spec.clone();
    }
    if !workload.labels.is_empty() {
        let check = plan
            .network_policy_check
            .get_or_insert_with(|| NetworkPolicyCheck {
                harness_pod_labels: BTreeMap::new(),
            });
        for placement in &plan.placements {
            check
                .harness_pod_labels
                .entry(placement.name.clone())
                .or_insert_with(|| workload.labels.clone());
        }
    }
}

/// `plan.placements[3].podSpec.containers[0]` → `spec.template.spec.containers[0]`; other fields as the plan names
/// them.
fn as_deployment_field(field: Field) -> String {
    match field {
        Field::PodSpec(_, path) => format!("spec.template.spec{path}"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> RawPlan {
        let text = include_str!("../examples/plan.json");
        serde_json::from_str(text).expect("the example plan")
    }

    #[test]
    fn fields_are_named_as_the_deployment_names_them() {
        use crate::plan::{PlacementField, SpecPath};
        let containers = SpecPath::default().key("containers").index(0);
        assert_eq!(
            as_deployment_field(Field::PodSpec(1, containers.key("env").index(2))),
            "spec.template.spec.containers[0].env[2]"
        );
        assert_eq!(
            as_deployment_field(Field::PodSpec(0, SpecPath::default())),
            "spec.template.spec"
        );
        assert_eq!(
            as_deployment_field(Field::placement(0, PlacementField::HarnessContainer)),
            "plan.placements[0].harnessContainer"
        );
        assert_eq!(as_deployment_field(Field::Model(0, None)), "plan.models[0]");
    }

    #[test]
    fn the_template_replaces_every_placement_and_gives_its_labels() {
        let mut plan = plan();
        plan.network_policy_check = None;
        let harness = plan.placements[1].clone();
        let mut spec = harness.pod_spec.clone();
        spec.node_selector = Some([("pool".to_owned(), "gpu".to_owned())].into());
        let labels: BTreeMap<String, String> = [("app".to_owned(), "h".to_owned())].into();
        // Both placements name their containers alike in the example, so one template serves both.
        for p in &mut plan.placements {
            p.harness_container = harness.harness_container.clone();
            p.custodian_container = harness.custodian_container.clone();
        }
        let workload = HarnessWorkload {
            name: "jr2-instance-harness".to_owned(),
            pod_spec: spec.clone(),
            labels: labels.clone(),
        };
        apply(&mut plan, &workload);
        let plan = plan
            .validate()
            .map_err(|e| invalid(&workload, e))
            .expect("valid");
        for p in &plan.placements {
            assert_eq!(p.pod_spec, spec);
            assert_eq!(plan.harness_pod_labels(&p.name), Some(&labels));
        }
    }

    #[test]
    fn a_template_with_a_literal_key_is_refused_by_its_field() {
        let mut plan = plan();
        let harness = plan.placements[1].clone();
        let mut spec = harness.pod_spec.clone();
        let key_env = plan
            .models
            .iter()
            .find(|m| m.placement == harness.name && m.key_env.is_some())
            .and_then(|m| m.key_env.clone())
            .expect("a model with a key env var");
        let container = spec
            .containers
            .iter_mut()
            .find(|c| c.name == harness.harness_container)
            .unwrap();
        let env = container.env.get_or_insert_with(Vec::new);
        env.retain(|e| e.name != key_env);
        env.push(k8s_openapi::api::core::v1::EnvVar {
            name: key_env.clone(),
            value: Some("sk-live-0123456789abcdefghijklmnop".to_owned()),
            value_from: None,
        });
        for p in &mut plan.placements {
            p.harness_container = harness.harness_container.clone();
            p.custodian_container = harness.custodian_container.clone();
        }
        let workload = HarnessWorkload {
            name: "leaky".to_owned(),
            pod_spec: spec,
            labels: BTreeMap::new(),
        };
        apply(&mut plan, &workload);
        let e = plan
            .validate()
            .map_err(|e| invalid(&workload, e))
            .unwrap_err();
        let line = e.to_string();
        assert!(
            line.starts_with("Deployment \"leaky\": spec.template.spec.containers["),
            "{line}"
        );
        assert!(!line.contains("sk-live-"), "{line}");
    }
}
