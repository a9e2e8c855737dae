//! `jr2-preflight check`: the operator's check from a pod, as a one-placement plan.
//!
//! An operator with a vLLM (or llama.cpp, or gateway) endpoint asks "will a pod in my cluster reach it, and will the
//! model call tools?". `jr2-probe check` on a laptop answers for the laptop; a plan is `jr2 up`'s to write. So the
//! flags become the plan `run` takes, and the run is `run`'s own code: the same check pod, lines, exit codes and
//! cleanup. The plan has one placement, `check`, of Instance `operator`:
//!
//! - by default a plain pod: one `harness` container whose env holds the key, when one is named, as a `secretKeyRef`
//!   (`--api-key-secret NAME/KEY`: the value never leaves the cluster, and the probe reads it as a Turn reads its
//!   key), no Custodian; `--node NAME` (a required node affinity on `metadata.name`, as the DaemonSet controller
//!   pins a pod, so the scheduler still checks taints and room) or `--node-selector k=v` place it;
//! - with `--from-deployment NAME`, the Deployment's pod template ([`adopt`]): its placement, its Custodian (the
//!   container named `custodian`) and the keys its Harness container holds, as `run --from-deployment` takes them.
//!
//! A model is `--model ID`: with `--base-url`, the custom provider's model (`<provider>/<ID>`, `--provider`
//! defaulting to `custom`, as `harness.provider.id` prefixes it); without, a model of pi's catalog
//! (`anthropic/claude-haiku-4-5`), whose key is the provider's variable.

use std::collections::BTreeMap;

use jr2_probe::api::ApiKind;
use jr2_probe::catalog;
use jr2_probe::spec::Source;
use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvVar, EnvVarSource, NodeAffinity, NodeSelector, NodeSelectorRequirement,
    NodeSelectorTerm, PodSecurityContext, PodSpec, SeccompProfile, SecretKeySelector,
};

use crate::plan::secret_env::PROVIDER_KEY_ENV;
use crate::plan::{
    self, Field, ModelField, Placement, PlanError, PlanModel, RawPlan, Step, TopField,
};
use crate::workload::{HarnessWorkload, WorkloadError};

/// The Instance the check pods of `check` belong to (their names and labels, and the stale sweep's selector).
pub const INSTANCE: &str = "operator";
/// The one placement's name.
pub const PLACEMENT: &str = "check";
/// The name of the Custodian container `--from-deployment` looks for.
pub const CUSTODIAN_CONTAINER: &str = "custodian";

/// A key in a Secret of the namespace: `--api-key-secret NAME/KEY`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretKey {
    /// The Secret's name.
    pub name: String,
    /// The key in it.
    pub key: String,
}

impl SecretKey {
    /// `NAME/KEY`: a Secret's name (a DNS subdomain) and a key (`[-._a-zA-Z0-9]+`), as the API server takes them.
    pub fn parse(text: &str) -> Result<SecretKey, PlanError> {
        let bad = |message: &str| PlanError::Invalid {
            field: Field::Flag("--api-key-secret"),
            message: message.to_owned(),
        };
        let Some((name, key)) = text.split_once('/') else {
            return Err(bad(
                "give it as NAME/KEY: the Secret and the key that holds the API key",
            ));
        };
        let subdomain = name.len() <= 253 && name.split('.').all(crate::plan::is_dns_label);
        if !subdomain {
            return Err(bad(
                "the Secret's name must be a DNS subdomain (lowercase letters, digits, '-' and '.')",
            ));
        }
        // A pasted key in place of the key's name (issue 25, item 8): refused, never repeated.
        if jr2_probe::sanitize::looks_like_key(name) || jr2_probe::sanitize::looks_like_key(key) {
            return Err(bad(&format!(
                "{} characters shaped like an API key, not repeated: give the Secret's name and the key of its \
                 data that holds the API key, never the key itself",
                text.chars().count()
            )));
        }
        if key.is_empty()
            || key.len() > 253
            || !key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(bad(
                "the key must be letters, digits, '-', '_' or '.' (a key of the Secret's data)",
            ));
        }
        Ok(SecretKey {
            name: name.to_owned(),
            key: key.to_owned(),
        })
    }
}

/// What the flags of `check` ask.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OneOff {
    /// `--base-url`: a custom endpoint; `None`: catalog models.
    pub base_url: Option<String>,
    /// `--provider`: the custom provider's id (default `custom`).
    pub provider: Option<String>,
    /// `--model`, in order.
    pub models: Vec<String>,
    /// `--api`.
    pub api: Option<ApiKind>,
    /// `--api-key-secret`.
    pub key: Option<SecretKey>,
    /// The namespace.
    pub namespace: String,
    /// `--node`.
    pub node: Option<String>,
    /// `--node-selector k=v`, repeated.
    pub node_selector: Vec<(String, String)>,
    /// `--probe-image`, else the release's.
    pub probe_image: Option<String>,
}

/// The env var a model's key is read from: `JR2_PROVIDER_API_KEY` for the custom provider (as
/// `harness.provider.apiKey` is held), the provider's own variable for a catalog model.
fn key_env_of(model: &PlanModel) -> Option<String> {
    match model.source {
        Source::Custom => Some(PROVIDER_KEY_ENV.to_owned()),
        Source::Catalog | Source::Gateway => {
            let provider = catalog::split_model_name(&model.model).ok()?.0;
            catalog::pinned()
                .suggested_key_env(provider)
                .map(str::to_owned)
        }
    }
}

/// The plan of `check`, not yet validated: its errors, once it is, are worded by [`as_flag`] (a model the probe
/// cannot check, a bad URL, is bad input named by its flag).
pub fn plan(o: &OneOff) -> Result<RawPlan, PlanError> {
    let provider = o.provider.as_deref().unwrap_or("custom");
    if o.base_url.is_some() {
        let ok = !provider.is_empty()
            && provider
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !ok {
            return Err(PlanError::Invalid {
                field: Field::Flag("--provider"),
                message: "a provider id is letters, digits, '-', '_' or '.' (harness.provider.id)"
                    .to_owned(),
            });
        }
    } else if o.provider.is_some() {
        return Err(PlanError::Invalid {
            field: Field::Flag("--provider"),
            message:
                "names the custom provider of --base-url; a catalog model names its provider itself"
                    .to_owned(),
        });
    }
    let mut models = Vec::with_capacity(o.models.len());
    for id in &o.models {
        let mut m = PlanModel::new(
            match &o.base_url {
                Some(_) => format!("{provider}/{id}"),
                None => id.clone(),
            },
            PLACEMENT,
            if o.base_url.is_some() {
                Source::Custom
            } else {
                Source::Catalog
            },
        );
        m.base_url = o.base_url.clone();
        m.api = o.api;
        m.key_env = key_env_of(&m);
        m.key_held = o.key.is_some();
        models.push(m);
    }
    // The key, as the Harness env holds it: a reference to the Secret, under each model's variable.
    let mut env: Vec<EnvVar> = Vec::new();
    if let Some(key) = &o.key {
        for m in &models {
            let Some(name) = &m.key_env else { continue };
            if env.iter().any(|e| &e.name == name) {
                continue;
            }
            env.push(EnvVar {
                name: name.clone(),
                value: None,
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: key.name.clone(),
                        key: key.key.clone(),
                        optional: Some(false),
                    }),
                    ..EnvVarSource::default()
                }),
            });
        }
    }
    let node_selector: BTreeMap<String, String> = o.node_selector.iter().cloned().collect();
    let pod_spec = PodSpec {
        containers: vec![Container {
            name: plan::DEFAULT_HARNESS_CONTAINER.to_owned(),
            env: (!env.is_empty()).then_some(env),
            ..Container::default()
        }],
        node_selector: (!node_selector.is_empty()).then_some(node_selector),
        affinity: o.node.as_ref().map(|node| Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".to_owned(),
                            operator: "In".to_owned(),
                            values: Some(vec![node.clone()]),
                        }]),
                        match_expressions: None,
                    }],
                }),
                ..NodeAffinity::default()
            }),
            ..Affinity::default()
        }),
        security_context: Some(PodSecurityContext {
            run_as_non_root: Some(true),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".to_owned(),
                localhost_profile: None,
            }),
            ..PodSecurityContext::default()
        }),
        ..PodSpec::default()
    };
    let mut plan = RawPlan::new(
        &o.namespace,
        INSTANCE,
        vec![Placement {
            name: PLACEMENT.to_owned(),
            pod_spec,
            harness_container: plan::DEFAULT_HARNESS_CONTAINER.to_owned(),
            custodian_container: None,
        }],
        models,
    );
    if let Some(image) = &o.probe_image {
        plan.probe_image = image.clone();
    }
    Ok(plan)
}

/// A plan error of a field the flags made, named by its flag: how `check` words the errors of its plan.
pub fn as_flag(e: PlanError) -> PlanError {
    let PlanError::Invalid { field, message } = e else {
        return e;
    };
    let under_spec = |key: &str| match &field {
        Field::PodSpec(_, path) => matches!(path.steps().first(), Some(Step::Key(k)) if k == key),
        _ => false,
    };
    let flag = match &field {
        Field::Model(_, Some(ModelField::BaseUrl)) => "--base-url",
        Field::Model(_, Some(ModelField::Api)) => "--api",
        Field::Model(..) | Field::Top(TopField::Models) => "--model",
        Field::Top(TopField::ProbeImage) => "--probe-image",
        Field::Top(TopField::Namespace) => "--namespace",
        _ if under_spec("nodeSelector") => "--node-selector",
        _ if under_spec("affinity") => "--node",
        _ => return PlanError::Invalid { field, message },
    };
    PlanError::Invalid {
        field: Field::Flag(flag),
        message,
    }
}

/// `--from-deployment`: the Deployment's template becomes the placement, its container `harness` (or its only
/// container) the Harness, its container `custodian` the Custodian; each model's key is the one its Harness
/// container holds (a Stand-in the Custodian swaps, or a `valueFrom`), else none. The caller then validates the
/// plan as a `run --from-deployment` plan is.
pub fn adopt(plan: &mut RawPlan, workload: &HarnessWorkload) -> Result<(), WorkloadError> {
    let spec = &workload.pod_spec;
    let all: Vec<&Container> = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .collect();
    let harness = if spec
        .containers
        .iter()
        .any(|c| c.name == plan::DEFAULT_HARNESS_CONTAINER)
    {
        plan::DEFAULT_HARNESS_CONTAINER.to_owned()
    } else {
        let others: Vec<&Container> = spec
            .containers
            .iter()
            .filter(|c| c.name != CUSTODIAN_CONTAINER)
            .collect();
        match others.as_slice() {
            [only] => only.name.clone(),
            _ => {
                return Err(WorkloadError::Invalid {
                    name: workload.name.clone(),
                    field: "spec.template.spec.containers".to_owned(),
                    message: format!(
                        "no container \"harness\", and not one other container to take for it (it has {})",
                        spec.containers
                            .iter()
                            .map(|c| format!("\"{}\"", c.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
    };
    let custodian = all
        .iter()
        .any(|c| c.name == CUSTODIAN_CONTAINER)
        .then(|| CUSTODIAN_CONTAINER.to_owned());
    let held: Vec<String> = all
        .iter()
        .find(|c| c.name == harness)
        .and_then(|c| c.env.as_ref())
        .map(|env| env.iter().map(|e| e.name.clone()).collect())
        .unwrap_or_default();
    for placement in &mut plan.placements {
        placement.harness_container = harness.clone();
        placement.custodian_container = custodian.clone();
    }
    for m in &mut plan.models {
        // The provider's variable the Harness holds, in pi's order; else the one a user would set.
        let key_env = match m.source {
            Source::Custom => Some(PROVIDER_KEY_ENV.to_owned()),
            Source::Catalog | Source::Gateway => catalog::pinned()
                .held_key_env(&m.model, |name| held.iter().any(|h| h == name))
                .map(str::to_owned)
                .or_else(|| key_env_of(m)),
        };
        m.key_held = key_env.as_ref().is_some_and(|k| held.contains(k));
        m.key_env = key_env;
    }
    crate::workload::apply(plan, workload);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::ValidPlan;

    /// The plan of `check`, validated as `jr2-preflight check` validates it.
    fn plan(o: &OneOff) -> Result<ValidPlan, PlanError> {
        super::plan(o).and_then(RawPlan::validate).map_err(as_flag)
    }

    /// `adopt`, then the plan validated again, as `jr2-preflight check --from-deployment` does.
    fn adopted(plan: ValidPlan, w: &HarnessWorkload) -> Result<ValidPlan, WorkloadError> {
        let mut plan = plan.into_raw();
        adopt(&mut plan, w)?;
        plan.validate().map_err(|e| crate::workload::invalid(w, e))
    }

    fn one_off() -> OneOff {
        OneOff {
            base_url: Some("http://vllm.lan.example:8000/v1".to_owned()),
            models: vec!["Qwen/Qwen3-32B".to_owned()],
            namespace: "team-a".to_owned(),
            ..OneOff::default()
        }
    }

    #[test]
    fn a_custom_endpoint_is_one_plain_placement() {
        let mut o = one_off();
        o.key = Some(SecretKey::parse("vllm-key/token").unwrap());
        o.node = Some("gpu-1".to_owned());
        let plan = plan(&o).unwrap();
        assert_eq!(plan.instance, INSTANCE);
        assert_eq!(plan.placements.len(), 1);
        let m = &plan.models[0];
        assert_eq!(m.model, "custom/Qwen/Qwen3-32B");
        assert_eq!(m.source, Source::Custom);
        assert_eq!(m.key_env.as_deref(), Some(PROVIDER_KEY_ENV));
        assert!(m.key_held);
        let spec = &plan.placements[0].pod_spec;
        let env = spec.containers[0].env.as_ref().unwrap();
        assert_eq!(env.len(), 1);
        assert_eq!(env[0].value, None);
        let r = env[0]
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!((r.name.as_str(), r.key.as_str()), ("vllm-key", "token"));
        let term = &spec
            .affinity
            .as_ref()
            .unwrap()
            .node_affinity
            .as_ref()
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .as_ref()
            .unwrap()
            .node_selector_terms[0];
        assert_eq!(
            term.match_fields.as_ref().unwrap()[0].values.as_deref(),
            Some(&["gpu-1".to_owned()][..])
        );
        assert!(!plan.placements[0].via_custodian());
    }

    #[test]
    fn a_catalog_model_takes_its_providers_variable() {
        let o = OneOff {
            models: vec!["anthropic/claude-haiku-4-5".to_owned()],
            namespace: "team-a".to_owned(),
            key: Some(SecretKey::parse("anthropic/api-key").unwrap()),
            ..OneOff::default()
        };
        let plan = plan(&o).unwrap();
        assert_eq!(plan.models[0].source, Source::Catalog);
        assert_eq!(plan.models[0].key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        let env = plan.placements[0].pod_spec.containers[0]
            .env
            .as_ref()
            .unwrap();
        assert_eq!(env[0].name, "ANTHROPIC_API_KEY");
    }

    /// `--model anthropic/claude-haiku-4-5 --from-deployment jr2-instance-harness`: the Custodian and the key the
    /// Harness holds (its Stand-in), so the call goes through the Custodian as a Turn's does.
    #[test]
    fn a_catalog_model_from_a_deployment_goes_through_its_custodian() {
        let o = OneOff {
            models: vec!["anthropic/claude-haiku-4-5".to_owned()],
            namespace: "team-a".to_owned(),
            ..OneOff::default()
        };
        let plan = plan(&o).unwrap();
        let spec: PodSpec = serde_json::from_value(serde_json::json!({
            "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
            "containers": [
                {"name": "harness", "image": "h", "env": [
                    {"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"},
                    {"name": "HTTPS_PROXY", "value": "http://127.0.0.1:8081"}]},
                {"name": "custodian", "image": "c"}
            ]
        }))
        .unwrap();
        let workload = HarnessWorkload {
            name: "jr2-instance-harness".to_owned(),
            pod_spec: spec,
            labels: BTreeMap::from([("app".to_owned(), "h".to_owned())]),
        };
        let plan = adopted(plan, &workload).unwrap();
        let p = &plan.placements[0];
        assert_eq!(p.custodian_container.as_deref(), Some("custodian"));
        assert!(p.via_custodian());
        let m = &plan.models[0];
        assert_eq!(m.key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        assert!(m.key_held, "the Harness holds its Stand-in");
        let spec = plan.run_spec_for(PLACEMENT);
        assert!(spec.models[0].via_custodian);
        // A template whose Harness holds no key for the model: not held, so the line says which key to set.
        let mut w = workload.clone();
        w.pod_spec.containers[0].env = None;
        let plan2 = adopted(plan_of_catalog(), &w).unwrap();
        assert!(!plan2.models[0].key_held);
        // No container to take for the Harness: the containers are named.
        let mut w = workload;
        w.pod_spec.containers[0].name = "agent".to_owned();
        w.pod_spec.containers.push(Container {
            name: "sidecar".to_owned(),
            ..Container::default()
        });
        let e = adopted(plan_of_catalog(), &w).unwrap_err().to_string();
        assert!(e.contains("\"agent\", \"custodian\", \"sidecar\""), "{e}");
    }

    fn plan_of_catalog() -> ValidPlan {
        plan(&OneOff {
            models: vec!["anthropic/claude-haiku-4-5".to_owned()],
            namespace: "team-a".to_owned(),
            ..OneOff::default()
        })
        .unwrap()
    }

    #[test]
    fn bad_flags_are_named() {
        let field = |o: OneOff| match plan(&o).unwrap_err() {
            PlanError::Invalid { field, .. } => field.to_string(),
            other => panic!("{other}"),
        };
        let mut o = one_off();
        o.base_url = Some("ftp://x".to_owned());
        assert_eq!(field(o), "--base-url");
        let o = OneOff {
            models: vec!["nonesuch/model-x".to_owned()],
            namespace: "a".to_owned(),
            ..OneOff::default()
        };
        assert_eq!(field(o), "--model");
        let mut o = one_off();
        o.provider = Some("a b".to_owned());
        assert_eq!(field(o), "--provider");
        let long_label = format!("{}.keys/k", "a".repeat(64));
        for bad in [
            "no-slash",
            "/key",
            "Name/key",
            "name/",
            "name/k y",
            "-a/k",
            "a..b/k",
            &long_label,
        ] {
            let e = SecretKey::parse(bad).unwrap_err();
            assert_eq!(e.field(), Some(&Field::Flag("--api-key-secret")), "{bad}");
        }
        let dotted = format!("{}.keys/k", "a".repeat(63));
        assert!(SecretKey::parse(&dotted).is_ok());
    }

    /// Issue 25, item 8: a key pasted as the Secret's key name (or name) is refused and not repeated.
    #[test]
    fn a_key_in_place_of_a_secret_key_name_is_refused_unrepeated() {
        for pasted in [
            "x/AIzaSyD3kq8PW4242abcdefghijklmnopqrstu",
            "x/gsk_PW4242abcdefghijklmnop",
            "x/hf_PW4242abcdefghijklmnop",
            "sk-proj-pw4242abcdefghijkl/k",
        ] {
            let e = SecretKey::parse(pasted).unwrap_err();
            assert_eq!(
                e.field(),
                Some(&Field::Flag("--api-key-secret")),
                "{pasted}"
            );
            assert!(
                !e.to_string().contains("PW4242") && !e.to_string().contains("pw4242"),
                "{e}"
            );
        }
    }
}
