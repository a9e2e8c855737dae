//! The plan: what `jr2 up` hands the driver (`jr2-preflight run --plan <file|->`), as types.
//!
//! A plan names the namespace and the Instance, the probe's image, the deadline of the whole check, the placements
//! of the Harness pods (each with the pod spec `jr2 up` renders for them, Custodian container and volumes included)
//! and the models to check, each on the placement whose Harness pods run it. It is versioned (`schema`,
//! [`PLAN_SCHEMA`]) and closed: an unknown field is an error. Its JSON Schema is
//! `orchestrate/schemas/plan.v1.schema.json`; an example is `orchestrate/examples/plan.json`.
//!
//! The rooms: `read.rs` reads the JSON (strictly: a key given twice is refused) and names the field of a type error;
//! `unknown.rs` finds the pod-spec fields Kubernetes does not know (a warning each, as the API server gives);
//! `validate.rs` checks what the types do not; `names.rs` holds Kubernetes' grammar of names and images;
//! `host_access.rs` and `secret_env.rs` refuse what a check pod must never copy; `field.rs` names the field an error
//! is about, as data ([`Field`]), which each front end words its own way.
//!
//! A plan never holds a secret value: the Harness env carries Stand-ins (`jr2-held-<NAME>`) and `valueFrom`
//! references, the models name the env var of their key. [`RawPlan::validate`] refuses a plan whose Harness env sets a
//! model's key env var to a literal that is not its Stand-in.
//!
//! A plan is read as a [`RawPlan`], takes the flags' values ([`Overrides`]), and is validated once into a
//! [`ValidPlan`], which is what the rest of the driver takes (ripgrep's `LowArgs` → `HiArgs`): the models' resolution
//! ([`Resolved`]) comes with it, never missing. `--from-deployment` takes a valid plan back to a raw one
//! ([`ValidPlan::into_raw`]), puts the Deployment's template in it, and validates it again: a template is new input.
//!
//! Every error names the field it is about (`plan.models[2].placement: no placement "sandbox-gpu" ...`), and the
//! caller exits with [`PlanError::EXIT`] (2, bad input) before contacting the cluster.

mod error;
mod field;
pub mod host_access;
mod names;
mod read;
pub mod secret_env;
mod unknown;
mod validate;

pub use error::PlanError;
use error::invalid;
pub use field::{Field, ModelField, NetworkPolicyField, PlacementField, SpecPath, Step, TopField};
pub use names::{check_namespace, image_reference, is_dns_label};
pub use unknown::{unknown_field_lines, unknown_pod_spec_fields};

use std::collections::BTreeMap;

use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::contract::verdict::Route;
use jr2_probe::spec::{ModelSpec, RunSpec, Source};
use jr2_probe::target::Target;
use k8s_openapi::api::core::v1::{Container, LocalObjectReference, PodSpec};
use serde::{Deserialize, Serialize};

/// The plan's schema identifier.
pub const PLAN_SCHEMA: &str = "jr2.dev/provider-preflight-plan/v1";

/// The default deadline of the whole check, in seconds.
pub const DEFAULT_DEADLINE_SECONDS: u64 = 300;

/// The default time one model has to answer, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;

/// The most a deadline or a timeout may be: a day (a larger value is most likely milliseconds).
pub const MAX_SECONDS: u64 = 86_400;

/// The default name of the Harness container in a placement's pod spec.
pub const DEFAULT_HARNESS_CONTAINER: &str = "harness";

/// The plan as `jr2 up` hands it over, or as `check` builds it from its flags: read, not yet checked. The flags'
/// values go in here ([`RawPlan::override_with`]); [`RawPlan::validate`] makes it the [`ValidPlan`] the rest of the
/// driver takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawPlan {
    /// [`PLAN_SCHEMA`].
    pub schema: String,
    /// The namespace of the Instance: the check pods are created there.
    pub namespace: String,
    /// The Instance's name: in the check pods' names and labels, and what the stale-pod sweep selects on.
    pub instance: String,
    /// The probe's image (`jr2-probe`), as the cluster pulls it (re-homed to the kit registry where there is one);
    /// default [`DEFAULT_PROBE_IMAGE`], overridden by `--probe-image`.
    #[serde(default = "default_probe_image")]
    pub probe_image: String,
    /// The deadline of the whole check, in seconds: the pods' `activeDeadlineSeconds`, and the probe's deadline.
    #[serde(default = "default_deadline")]
    pub deadline_seconds: u64,
    /// The time one model has to answer, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Seconds a model waits for its verdict before its progress line, and between the next ones; absent: the
    /// probe's 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_note_seconds: Option<f64>,
    /// Where the Harness pods run: one check pod per placement that has a model.
    pub placements: Vec<Placement>,
    /// The models to check, in the order the lines are printed.
    pub models: Vec<PlanModel>,
    /// The labels of each placement's Harness pods, to find the NetworkPolicies that select them; absent: no
    /// NetworkPolicy check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy_check: Option<NetworkPolicyCheck>,
    /// The fields under the pod specs that a Kubernetes PodSpec does not have (`nodeSelectr`), found as the plan was
    /// read ([`unknown_pod_spec_fields`]): not the plan's JSON, and dropped from the pod specs as the API server
    /// drops them; the caller warns of each ([`RawPlan::unknown_field_lines`]).
    #[serde(skip)]
    pub unknown_fields: Vec<Field>,
}

/// The probe image the driver uses when the plan names none: the release of this version.
pub const DEFAULT_PROBE_IMAGE: &str = concat!("ghcr.io/jr2/jr2-probe:", env!("CARGO_PKG_VERSION"));

fn default_probe_image() -> String {
    DEFAULT_PROBE_IMAGE.to_owned()
}

fn default_deadline() -> u64 {
    DEFAULT_DEADLINE_SECONDS
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECONDS
}

fn default_harness() -> String {
    DEFAULT_HARNESS_CONTAINER.to_owned()
}

/// One placement of Harness pods: a Sandbox placement, or the Instance Harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Placement {
    /// The placement's name (a DNS-1123 label): in the check pod's name and its `jr2.dev/placement` label.
    pub name: String,
    /// The pod spec `jr2 up` renders for these Harness pods, Custodian container and volumes included.
    pub pod_spec: PodSpec,
    /// The Harness container's name in `pod_spec.containers`.
    #[serde(default = "default_harness")]
    pub harness_container: String,
    /// The Custodian container's name (in `pod_spec.containers`, or already a sidecar in `initContainers`); absent:
    /// these pods hold no secret and have no Custodian.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custodian_container: Option<String>,
}

impl Placement {
    /// The Harness container.
    pub fn harness(&self) -> Option<&Container> {
        self.pod_spec
            .containers
            .iter()
            .find(|c| c.name == self.harness_container)
    }

    /// The Custodian container, if the pods have one.
    pub fn custodian(&self) -> Option<&Container> {
        let name = self.custodian_container.as_deref()?;
        self.pod_spec
            .containers
            .iter()
            .chain(self.pod_spec.init_containers.iter().flatten())
            .find(|c| c.name == name)
    }

    /// The containers the check pod copies (the Harness and the Custodian), each with its field under the pod spec
    /// (`containers[0]`, `initContainers[1]`).
    pub fn copied_containers(&self) -> impl Iterator<Item = (SpecPath, &Container)> {
        let wanted = [
            Some(self.harness_container.as_str()),
            self.custodian_container.as_deref(),
        ];
        let spec = &self.pod_spec;
        [
            ("containers", Some(&spec.containers)),
            ("initContainers", spec.init_containers.as_ref()),
        ]
        .into_iter()
        .flat_map(|(list, containers)| {
            containers
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(i, c)| (SpecPath::default().key(list).index(i), c))
        })
        .filter(move |(_, c)| wanted.contains(&Some(c.name.as_str())))
    }

    /// Calls go through a Custodian: the pods have one.
    pub fn via_custodian(&self) -> bool {
        self.custodian_container.is_some()
    }
}

/// One model to check. Mirrors [`jr2_probe::spec::ModelSpec`], plus the placement; `viaCustodian` is derived from
/// the placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanModel {
    /// `<provider>/<id>`, as the Agent names it.
    pub model: String,
    /// The name of the placement whose Harness pods run this model.
    pub placement: String,
    /// Where it comes from: pi's catalog, a `harness.catalog` gateway, or the custom provider.
    pub source: Source,
    /// The base URL: required for `custom` and `gateway`; the catalog's when absent for `catalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// pi's API kind: default `openai-completions` for `custom`, the catalog's otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiKind>,
    /// The env var that holds the key (its value in the Harness env is the Stand-in `jr2-held-<NAME>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    /// A Harness pod holds that key (custom: `harness.provider.apiKey` is set).
    pub key_held: bool,
    /// The model's `maxTokens` as jr2 resolves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The model's context window as jr2 resolves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The `tool_choice` to send; absent: none, as a Turn sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// What the probe's resolution of a model gave on the host, when the plan was validated: the facts a result names
/// (its id, API, base URL, host and route) before the probe has said anything. The model is resolved once here; the
/// probe resolves it again where it runs, from the pod's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The id sent in the request.
    pub id: String,
    /// The API kind.
    pub api: ApiKind,
    /// The base URL.
    pub base_url: String,
    /// `<host>` of the lines.
    pub host: String,
    /// How the model is reached.
    pub route: Route,
}

impl Resolved {
    fn of(target: &Target) -> Self {
        Resolved {
            id: target.id.clone(),
            api: target.api,
            base_url: target.base_url.to_string(),
            host: target.host(),
            route: target.route.clone(),
        }
    }
}

impl PlanModel {
    /// A model of `placement` with nothing else set: no base URL, API, key or limits of its own.
    pub fn new(model: String, placement: &str, source: Source) -> Self {
        PlanModel {
            model,
            placement: placement.to_owned(),
            source,
            base_url: None,
            api: None,
            key_env: None,
            key_held: false,
            max_tokens: None,
            context_window: None,
            tool_choice: None,
        }
    }

    /// The probe's spec of this model.
    pub fn spec(&self, via_custodian: bool) -> ModelSpec {
        ModelSpec {
            model: self.model.clone(),
            source: self.source,
            base_url: self.base_url.clone(),
            api: self.api,
            key_env: self.key_env.clone(),
            key_held: self.key_held,
            via_custodian,
            max_tokens: self.max_tokens,
            context_window: self.context_window,
            tool_choice: self.tool_choice,
        }
    }
}

/// What the NetworkPolicy check needs: the check pod has labels of its own, so a policy that selects the Harness
/// pods does not select it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicyCheck {
    /// Per placement name: the labels of its Harness pods.
    pub harness_pod_labels: BTreeMap<String, BTreeMap<String, String>>,
}

/// The Stand-in of a held secret: what the Harness env holds in place of its value.
pub fn stand_in(name: &str) -> String {
    format!("jr2-held-{name}")
}

/// The largest plan read, in bytes. Each check pod copies its placement's pod spec and carries its models as one
/// argument, and the API server stores a pod of at most 1.5 MiB (etcd's request limit): a plan of 1 MiB keeps every
/// pod under it. `/dev/zero` as the plan stops here instead of filling memory.
pub const MAX_PLAN_BYTES: u64 = jr2_probe::spec::input::MIB;

/// The longest run spec one check pod's probe takes, in bytes of JSON: it is one argument (`--spec-json`), and
/// Linux takes at most 128 KiB per argument (`MAX_ARG_STRLEN`, with its NUL). Past it the container cannot start.
pub const MAX_RUN_SPEC_BYTES: usize = 128 * 1024 - 1;

/// A plan that passed validation ([`RawPlan::validate`], the only way to one): its fields as the plan gives them
/// (through `Deref`, read-only), and what the probe's resolution gave for each of its models.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidPlan {
    plan: RawPlan,
    /// Per model of `plan.models`, in order.
    resolved: Vec<Resolved>,
}

impl std::ops::Deref for ValidPlan {
    type Target = RawPlan;

    fn deref(&self) -> &RawPlan {
        &self.plan
    }
}

impl Serialize for ValidPlan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.plan.serialize(s)
    }
}

impl ValidPlan {
    /// What the probe's resolution gave for model `index` of the plan when it was validated.
    pub fn resolved(&self, index: usize) -> &Resolved {
        &self.resolved[index]
    }

    /// The plan as it was read, to change (`--from-deployment`) and validate again.
    pub fn into_raw(self) -> RawPlan {
        self.plan
    }

    /// The image-pull secrets of placement `index`'s Harness pods, read from their ServiceAccount
    /// (`pull_secrets.rs`). Validation reads no pull secret, so the plan stays valid.
    pub fn set_pull_secrets(&mut self, index: usize, secrets: Vec<LocalObjectReference>) {
        self.plan.placements[index].pod_spec.image_pull_secrets = Some(secrets);
    }
}

/// What the command line puts in place of a plan's own values. Each is checked under its flag's name
/// (`--namespace: ...`) before it stands in for the plan's, which is then not checked: the plan is validated as it
/// will run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--namespace`.
    pub namespace: Option<String>,
    /// `--probe-image`.
    pub probe_image: Option<String>,
}

impl RawPlan {
    /// A plan of these placements and models, every other field its default (not validated).
    pub fn new(
        namespace: &str,
        instance: &str,
        placements: Vec<Placement>,
        models: Vec<PlanModel>,
    ) -> RawPlan {
        RawPlan {
            schema: PLAN_SCHEMA.to_owned(),
            namespace: namespace.to_owned(),
            instance: instance.to_owned(),
            probe_image: default_probe_image(),
            deadline_seconds: DEFAULT_DEADLINE_SECONDS,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            waiting_note_seconds: None,
            placements,
            models,
            network_policy_check: None,
            unknown_fields: Vec::new(),
        }
    }

    /// The `warning:` lines for the pod-spec fields Kubernetes does not know: one per field, bounded. The run goes on.
    pub fn unknown_field_lines(&self) -> Vec<String> {
        unknown_field_lines(&self.unknown_fields)
    }

    /// The placement of that name.
    pub fn placement(&self, name: &str) -> Option<&Placement> {
        self.placements.iter().find(|p| p.name == name)
    }

    /// The placements that have a model to check, in plan order: one check pod each.
    pub fn placements_with_models(&self) -> impl Iterator<Item = &Placement> {
        self.placements
            .iter()
            .filter(|p| self.models.iter().any(|m| m.placement == p.name))
    }

    /// The run spec of one placement's check pod: its models, in plan order, with `viaCustodian` derived from the
    /// placement. It names env vars, never a value.
    pub fn run_spec_for(&self, placement: &str) -> RunSpec {
        let via_custodian = self
            .placement(placement)
            .is_some_and(Placement::via_custodian);
        let models: Vec<ModelSpec> = self
            .models
            .iter()
            .filter(|m| m.placement == placement)
            .map(|m| m.spec(via_custodian))
            .collect();
        // The probe's own defaults (tries, concurrency), the plan's timeout.
        RunSpec {
            timeout_seconds: self.timeout_seconds as f64,
            waiting_note_seconds: self.waiting_note_seconds,
            ..RunSpec::new(models)
        }
    }

    /// The labels of a placement's Harness pods, for the NetworkPolicy check.
    pub fn harness_pod_labels(&self, placement: &str) -> Option<&BTreeMap<String, String>> {
        self.network_policy_check
            .as_ref()?
            .harness_pod_labels
            .get(placement)
    }

    fn placement_names(&self) -> String {
        self.placements
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jr2_probe::spec::RUN_SPEC_SCHEMA;
    use serde_json::Value;

    fn example() -> Value {
        serde_json::from_str(include_str!("../../examples/plan.json")).unwrap()
    }

    #[test]
    fn defaults_apply() {
        let mut v = example();
        let o = v.as_object_mut().unwrap();
        o.remove("deadlineSeconds");
        o.remove("timeoutSeconds");
        o["placements"][1]
            .as_object_mut()
            .unwrap()
            .remove("harnessContainer");
        let plan = RawPlan::from_value(v).unwrap().validate().unwrap();
        assert_eq!(plan.deadline_seconds, DEFAULT_DEADLINE_SECONDS);
        assert_eq!(plan.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
        assert_eq!(plan.placements[1].harness_container, "harness");
    }

    #[test]
    fn run_spec_takes_the_placements_models_in_plan_order() {
        let plan = RawPlan::from_value(example()).unwrap().validate().unwrap();
        let spec = plan.run_spec_for("instance-harness");
        assert_eq!(spec.schema, RUN_SPEC_SCHEMA);
        assert_eq!(spec.timeout_seconds, 120.0);
        assert_eq!(spec.max_tries, 4);
        assert_eq!(spec.concurrency, 32);
        assert_eq!(
            spec.concurrency_per_host, None,
            "the probe's default, left out"
        );
        let names: Vec<_> = spec.models.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["vllm/Qwen/Qwen3-32B", "google/gemini-2.5-flash"]);
        assert!(spec.models.iter().all(|m| m.via_custodian));
        assert!(plan.run_spec_for("nowhere").models.is_empty());
    }

    #[test]
    fn via_custodian_follows_the_placement() {
        let mut v = example();
        v["placements"][0]
            .as_object_mut()
            .unwrap()
            .remove("custodianContainer");
        let plan = RawPlan::from_value(v).unwrap().validate().unwrap();
        assert!(!plan.run_spec_for("sandbox").models[0].via_custodian);
        assert!(plan.run_spec_for("instance-harness").models[0].via_custodian);
    }
}
