//! The fields of a placement's pod spec that Kubernetes does not know (`nodeSelectr`, a typo): serde drops them as it
//! reads the `PodSpec`, so the check pod would be made without them and nothing would say so. The API server says so
//! of a Harness pod with the same typo (`unknown field "spec.nodeSelectr"`, a warning; an error under kubectl's strict
//! field validation): the driver says it too, one `warning:` line per field naming its path, and the run goes on.
//!
//! Found by what serde kept: the pod spec as read, written back as JSON, against the plan's own JSON. A key the plan
//! gives that is not among what was kept is unknown (a `null` is not: serde reads it as absent, as the API server does).

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::Value;

use super::{Field, SpecPath};

/// The most unknown fields named one line each; the rest are counted on one line after them.
pub const MAX_NAMED: usize = 10;

/// The longest field path a line shows, in characters (a key is the plan's text: any length).
const MAX_PATH_CHARS: usize = 200;

/// The fields under the placements' pod specs of `plan` (the plan's JSON, as read) that a Kubernetes core/v1 PodSpec
/// does not have, in the plan's order. A pod spec that does not read as one is left to the reader's error.
pub fn unknown_pod_spec_fields(plan: &Value) -> Vec<Field> {
    let Some(placements) = plan.get("placements").and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (i, placement) in placements.iter().enumerate() {
        let Some(given) = placement.get("podSpec") else {
            continue;
        };
        let Ok(kept) = serde_json::from_value::<PodSpec>(given.clone())
            .and_then(|spec| serde_json::to_value(&spec))
        else {
            continue;
        };
        dropped(given, &kept, &SpecPath::default(), &mut |path| {
            found.push(Field::PodSpec(i, path));
        });
    }
    found
}

/// Calls `found` with the path of each key of `given` that `kept` lacks, object by object, item by item.
fn dropped(given: &Value, kept: &Value, at: &SpecPath, found: &mut impl FnMut(SpecPath)) {
    match (given, kept) {
        (Value::Object(given), Value::Object(kept)) => {
            for (key, value) in given {
                if value.is_null() {
                    continue;
                }
                match kept.get(key) {
                    Some(kept) => dropped(value, kept, &at.key(key.as_str()), found),
                    None => found(at.key(key.as_str())),
                }
            }
        }
        (Value::Array(given), Value::Array(kept)) => {
            for (i, (given, kept)) in given.iter().zip(kept).enumerate() {
                dropped(given, kept, &at.index(i), found);
            }
        }
        _ => {}
    }
}

/// The `warning:` lines for `fields` (from [`unknown_pod_spec_fields`]): one per field, at most [`MAX_NAMED`], then
/// one that counts the rest. A field's path is the plan's text: secrets by their shape redacted, escaped, bounded.
pub fn unknown_field_lines(fields: &[Field]) -> Vec<String> {
    let mut lines: Vec<String> = fields
        .iter()
        .take(MAX_NAMED)
        .map(|field| {
            let (path, as_api) = match field {
                Field::PodSpec(_, path) => (field.to_string(), format!("spec{path}")),
                other => (other.to_string(), other.to_string()),
            };
            format!(
                "warning: {}: unknown field, not in a Kubernetes PodSpec: the check pod is made without it, as the \
                 API server makes the Harness pods (it warns: unknown field \"{}\")",
                shown(&path),
                shown(&as_api)
            )
        })
        .collect();
    if fields.len() > MAX_NAMED {
        lines.push(format!(
            "warning: plan.placements: {} more unknown fields under the pod specs (the first {MAX_NAMED} are above)",
            fields.len() - MAX_NAMED
        ));
    }
    lines
}

fn shown(text: &str) -> String {
    jr2_probe::sanitize::escape_truncate(&jr2_probe::sanitize::redact_shapes(text), MAX_PATH_CHARS)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::plan::RawPlan;

    fn plan_with(spec: Value) -> Value {
        let mut plan: Value =
            serde_json::from_str(include_str!("../../examples/plan.json")).expect("the example");
        plan["placements"][0]["podSpec"] = spec;
        plan
    }

    #[test]
    fn a_misspelt_field_is_named_by_its_path_and_the_plan_still_reads() {
        let plan = plan_with(json!({
            "nodeSelectr": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "efect": "NoSchedule"}],
            "containers": [
                {"name": "harness", "image": "ghcr.io/jr2/harness:1", "imagePullPolcy": "Always",
                 "env": [{"name": "A", "value": "1", "valueFrm": {}}]},
            ],
            "priorityClassName": null,
        }));
        let fields = unknown_pod_spec_fields(&plan);
        let shown: Vec<String> = fields.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "plan.placements[0].podSpec.containers[0].env[0].valueFrm",
                "plan.placements[0].podSpec.containers[0].imagePullPolcy",
                "plan.placements[0].podSpec.nodeSelectr",
                "plan.placements[0].podSpec.tolerations[0].efect",
            ]
        );
        // The plan itself reads: the warning is all.
        let raw =
            RawPlan::from_value(plan).expect("a plan with unknown pod-spec fields still reads");
        assert_eq!(raw.unknown_fields, fields);
        insta::assert_snapshot!(
            "unknown_pod_spec_fields",
            unknown_field_lines(&fields).join("\n")
        );
    }

    #[test]
    fn the_example_plan_and_every_known_field_warn_of_nothing() {
        let example: Value =
            serde_json::from_str(include_str!("../../examples/plan.json")).expect("the example");
        assert_eq!(unknown_pod_spec_fields(&example), []);
        // Every field a PodSpec has, each with a value, and maps whose keys are the user's own.
        let plan = plan_with(json!({
            "containers": [{"name": "harness", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
            "nodeSelector": {"any-key.example.com/zone": "a"},
            "overhead": {"cpu": "250m"},
            "affinity": {"nodeAffinity": {}},
            "dnsConfig": {"options": [{"name": "ndots", "value": "2"}]},
            "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}],
            "securityContext": {"runAsNonRoot": true, "sysctls": []},
            "tolerations": [],
            "volumes": [{"name": "ca", "configMap": {"name": "jr2-ca"}}],
            "terminationGracePeriodSeconds": 5,
        }));
        assert_eq!(unknown_pod_spec_fields(&plan), []);
    }

    #[test]
    fn the_lines_are_bounded_and_escaped() {
        let fields: Vec<Field> = (0..MAX_NAMED + 3)
            .map(|i| Field::PodSpec(0, SpecPath::default().key(format!("x{i}\u{1b}[31m"))))
            .collect();
        let lines = unknown_field_lines(&fields);
        assert_eq!(lines.len(), MAX_NAMED + 1);
        assert!(lines.iter().all(|l| !l.contains('\u{1b}')), "{lines:?}");
        assert_eq!(
            lines.last().map(String::as_str),
            Some(
                "warning: plan.placements: 3 more unknown fields under the pod specs (the first 10 are above)"
            )
        );
        let long = [Field::PodSpec(
            0,
            SpecPath::default().key("k".repeat(10_000)),
        )];
        assert!(unknown_field_lines(&long)[0].len() < 2 * MAX_PATH_CHARS + 300);
    }
}
