//! Validating a plan: what its types do not say. Names (DNS-1123 labels, images, env names), references between
//! fields (a model's placement, a placement's containers, a mount's volume, a policy check's placements), limits (the
//! deadline against the timeout, a run spec's size), each model through the probe's own resolution, and what a
//! check pod must never copy from a Harness spec (`host_access.rs`, `secret_env.rs`).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::Value;

use super::names::{dns_label, image_reference};
use super::read::schema_error;
use super::{
    Field, MAX_RUN_SPEC_BYTES, MAX_SECONDS, ModelField, NetworkPolicyField, Overrides, PLAN_SCHEMA,
    Placement, PlacementField, PlanError, RawPlan, Resolved, SpecPath, TopField, ValidPlan,
    host_access, invalid, secret_env,
};
use jr2_probe::spec::{Remedy, SpecError};

impl RawPlan {
    /// Puts the flags' values in place of the plan's own, each checked first under its flag's name.
    pub fn override_with(&mut self, overrides: &Overrides) -> Result<(), PlanError> {
        if let Some(namespace) = &overrides.namespace {
            dns_label(Field::Flag("--namespace"), namespace)?;
        }
        if let Some(image) = &overrides.probe_image {
            image_reference(Field::Flag("--probe-image"), image)?;
        }
        if let Some(namespace) = &overrides.namespace {
            self.namespace.clone_from(namespace);
        }
        if let Some(image) = &overrides.probe_image {
            self.probe_image.clone_from(image);
        }
        Ok(())
    }

    /// Checks what the types do not: names, references between fields, the models (through the probe's own
    /// resolution, with an empty environment), and that no secret is a literal ([`super::secret_env`]). The only
    /// way to a [`ValidPlan`], which keeps what each model's resolution gave.
    pub fn validate(self) -> Result<ValidPlan, PlanError> {
        if self.schema != PLAN_SCHEMA {
            return Err(schema_error(&Value::String(self.schema.clone())));
        }
        dns_label(Field::top(TopField::Namespace), &self.namespace)?;
        dns_label(Field::top(TopField::Instance), &self.instance)?;
        image_reference(Field::top(TopField::ProbeImage), &self.probe_image)?;
        seconds(Field::top(TopField::DeadlineSeconds), self.deadline_seconds)?;
        seconds(Field::top(TopField::TimeoutSeconds), self.timeout_seconds)?;
        if self.deadline_seconds <= self.timeout_seconds {
            return Err(invalid(
                Field::top(TopField::DeadlineSeconds),
                format!(
                    "{} s leaves no time for one model's timeout ({}: {} s); make it longer",
                    self.deadline_seconds,
                    Field::top(TopField::TimeoutSeconds),
                    self.timeout_seconds
                ),
            ));
        }

        if self.placements.is_empty() {
            return Err(invalid(
                Field::top(TopField::Placements),
                "empty: name the placement of the Harness pods",
            ));
        }
        let key_envs: Vec<&str> = self
            .models
            .iter()
            .filter_map(|m| m.key_env.as_deref())
            .collect();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in self.placements.iter().enumerate() {
            dns_label(Field::placement(i, PlacementField::Name), &p.name)?;
            if let Some(first) = seen.insert(&p.name, i) {
                return Err(invalid(
                    Field::placement(i, PlacementField::Name),
                    format!(
                        "\"{}\" is already the name of {}",
                        p.name,
                        Field::Placement(first, None)
                    ),
                ));
            }
            validate_placement(i, p)?;
            secret_env::check(i, p, &key_envs)?;
        }

        let mut checked: HashMap<(&str, &str), usize> = HashMap::new();
        let mut resolved = Vec::with_capacity(self.models.len());
        for (i, m) in self.models.iter().enumerate() {
            let at = Field::Model(i, None).to_string();
            let Some(placement) = self.placement(&m.placement) else {
                return Err(invalid(
                    Field::model(i, ModelField::Placement),
                    format!(
                        "no placement \"{}\" (the plan's placements: {})",
                        jr2_probe::sanitize::escape_truncate(&m.placement, 100),
                        self.placement_names()
                    ),
                ));
            };
            // A key that happens to be a valid name (`AIza…`, `gsk_…`) is refused the same way (issue 25, item 8).
            if let Some(name) = &m.key_env
                && (!is_env_name(name) || jr2_probe::sanitize::looks_like_key(name))
            {
                return Err(invalid(
                    Field::model(i, ModelField::KeyEnv),
                    // Not repeated: what was pasted in place of a name is often the key itself.
                    format!(
                        "is not an environment variable name ({} characters, not repeated: it may be a key); name \
                         the variable that holds the key",
                        name.chars().count()
                    ),
                ));
            }
            // The probe's own resolution: a model without a provider, not in the catalog, a bad base URL. The env is
            // empty: validation never reads a key.
            let spec = m.spec(placement.via_custodian());
            let target = jr2_probe::spec::resolve(&spec, &at, &|_| None, "plan")
                .map_err(|e| spec_error(i, e))?;
            resolved.push(Resolved::of(&target));
            if let Some(first) = checked.insert((&m.placement, &m.model), i) {
                return Err(invalid(
                    Field::model(i, ModelField::Model),
                    format!(
                        "\"{}\" is already checked on placement \"{}\" ({})",
                        m.model,
                        m.placement,
                        Field::Model(first, None)
                    ),
                ));
            }
        }
        for p in &self.placements {
            let bytes =
                serde_json::to_string(&self.run_spec_for(&p.name)).map_or(0, |json| json.len());
            if bytes > MAX_RUN_SPEC_BYTES {
                let n = self.models.iter().filter(|m| m.placement == p.name).count();
                return Err(invalid(
                    Field::top(TopField::Models),
                    format!(
                        "the {n} models of placement \"{}\" make a run spec of {bytes} bytes; the probe takes it as \
                         one argument, and Linux takes at most 131072 bytes per argument: check fewer models in one run",
                        p.name
                    ),
                ));
            }
        }

        if let Some(check) = &self.network_policy_check {
            for name in check.harness_pod_labels.keys() {
                if self.placement(name).is_none() {
                    return Err(invalid(
                        Field::NetworkPolicy(NetworkPolicyField::Labels(name.clone())),
                        format!(
                            "no placement \"{}\" (the plan's placements: {})",
                            jr2_probe::sanitize::escape_truncate(name, 100),
                            self.placement_names()
                        ),
                    ));
                }
            }
        }
        Ok(ValidPlan {
            plan: self,
            resolved,
        })
    }
}

fn validate_placement(i: usize, p: &Placement) -> Result<(), PlanError> {
    let spec = &p.pod_spec;
    let containers = SpecPath::default().key("containers");
    let Some(hi) = spec
        .containers
        .iter()
        .position(|c| c.name == p.harness_container)
    else {
        return Err(invalid(
            Field::placement(i, PlacementField::HarnessContainer),
            format!(
                "no container \"{}\" in {} ({})",
                p.harness_container,
                Field::PodSpec(i, containers),
                names(&spec.containers)
            ),
        ));
    };
    let harness = containers.index(hi);
    check_mounts(i, &harness, &spec.containers[hi], spec)?;
    env_names(i, &harness, &spec.containers[hi])?;
    if let Some(name) = &p.custodian_container {
        if *name == p.harness_container {
            return Err(invalid(
                Field::placement(i, PlacementField::CustodianContainer),
                "names the Harness container; the Custodian is a container of its own",
            ));
        }
        let found = spec
            .containers
            .iter()
            .position(|c| &c.name == name)
            .map(|k| containers.index(k))
            .or_else(|| {
                spec.init_containers
                    .iter()
                    .flatten()
                    .position(|c| &c.name == name)
                    .map(|k| SpecPath::default().key("initContainers").index(k))
            });
        let Some(path) = found else {
            return Err(invalid(
                Field::placement(i, PlacementField::CustodianContainer),
                format!(
                    "no container \"{name}\" in {} or initContainers",
                    Field::PodSpec(i, containers)
                ),
            ));
        };
        let custodian = p.custodian().expect("found above");
        check_mounts(i, &path, custodian, spec)?;
        env_names(i, &path, custodian)?;
        let image = Field::PodSpec(i, path.key("image"));
        match custodian.image.as_deref() {
            Some(name) => image_reference(image, name)?,
            None => {
                return Err(invalid(
                    image,
                    "missing: the check pod runs the Custodian's image",
                ));
            }
        }
    }
    host_access::check(i, p)?;
    Ok(())
}

fn names(containers: &[Container]) -> String {
    if containers.is_empty() {
        return "none".to_owned();
    }
    containers
        .iter()
        .map(|c| format!("\"{}\"", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every mount of a container the check pod copies names a volume of the spec.
fn check_mounts(i: usize, at: &SpecPath, c: &Container, spec: &PodSpec) -> Result<(), PlanError> {
    for (j, m) in c.volume_mounts.iter().flatten().enumerate() {
        if !spec.volumes.iter().flatten().any(|v| v.name == m.name) {
            return Err(invalid(
                Field::PodSpec(i, at.key("volumeMounts").index(j).key("name")),
                format!("no volume \"{}\" in the pod spec's volumes", m.name),
            ));
        }
    }
    Ok(())
}

/// The env names of a container the check pod copies, as the API server takes them (1.35): not empty, printable
/// ASCII, no `=`. Refused here rather than by the create, with the field named.
fn env_names(i: usize, at: &SpecPath, c: &Container) -> Result<(), PlanError> {
    for (k, e) in c.env.iter().flatten().enumerate() {
        let ok = !e.name.is_empty()
            && e.name
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'=');
        if !ok {
            return Err(invalid(
                Field::PodSpec(i, at.key("env").index(k).key("name")),
                format!(
                    "\"{}\" is not an environment variable name (printable ASCII, no '=', not empty)",
                    jr2_probe::sanitize::escape_truncate(&e.name, 100)
                ),
            ));
        }
    }
    Ok(())
}

fn seconds(field: Field, value: u64) -> Result<(), PlanError> {
    if value == 0 {
        return Err(invalid(field, "must be at least 1 (seconds)"));
    }
    if value > MAX_SECONDS {
        return Err(invalid(
            field,
            format!("{value} is more than a day; the value is in seconds"),
        ));
    }
    Ok(())
}

pub(super) fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A model the probe cannot check (its name, its base URL, not in the catalog): the probe's problem, worded with
/// the plan's fields.
fn spec_error(index: usize, e: SpecError) -> PlanError {
    invalid(
        Field::model(index, ModelField::from(e.input)),
        e.problem.message(|remedy| match remedy {
            Remedy::CheckAsCustom => {
                "to check it anyway, make it source \"custom\" with its baseUrl and api"
            }
            Remedy::KeyInEnv => "put the key in an environment variable and name it with keyEnv",
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Value {
        serde_json::from_str(include_str!("../../examples/plan.json")).unwrap()
    }

    /// Issue 25, item 8: a key pasted as a model's `keyEnv` is refused and not repeated, though it is a valid name.
    #[test]
    fn a_key_shaped_key_env_is_refused_unrepeated() {
        let mut v = example();
        v["models"][0]["keyEnv"] = serde_json::json!("AIzaSyD3kq8PW4242abcdefghijklmnopqrstu");
        let e = RawPlan::from_value(v).unwrap().validate().unwrap_err();
        assert_eq!(
            e.field().map(ToString::to_string).as_deref(),
            Some("plan.models[0].keyEnv"),
            "{e}"
        );
        assert!(!e.to_string().contains("PW4242"), "{e}");
    }

    #[test]
    fn env_names() {
        assert!(is_env_name("JR2_PROVIDER_API_KEY"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name(""));
    }
}
