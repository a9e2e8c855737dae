//! The check pod's scheduling fields (issue 39): it never preempts (no priority class, no priority, no preemption
//! policy on any pod: the Priority admission sets them from a class alone; the Harness's class in an annotation), it
//! copies the fields that place a new Harness pod (`topologySpreadConstraints`, `nodeName` beside the placement
//! fields), and it leaves out, whatever the Harness spec says, the ones `jr2_preflight::scheduling::FIELDS` gives a
//! reason for; `--dry-run` prints them so.

use jr2_preflight::scheduling::{FIELDS, Treatment};
use serde_json::{Value, json};

mod common;
use common::{RUN_ID, check_pods, example_json, now, plan_of, spec};

/// The example plan with every scheduling field a Harness pod spec can carry, on its first placement.
fn scheduled_json() -> Value {
    let mut v = example_json();
    let s = &mut v["placements"][0]["podSpec"];
    s["priorityClassName"] = json!("jr2-high");
    s["priority"] = json!(1_000_000);
    s["preemptionPolicy"] = json!("PreemptLowerPriority");
    s["nodeName"] = json!("node-b");
    s["topologySpreadConstraints"] = json!([{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}},
        "matchLabelKeys": ["pod-template-hash"]
    }]);
    s["overhead"] = json!({"cpu": "250m"});
    s["resourceClaims"] = json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]);
    s["schedulingGates"] = json!([{"name": "example.com/quota"}]);
    s["os"] = json!({"name": "linux"});
    s["hostname"] = json!("harness-0");
    v
}

#[test]
fn no_check_pod_takes_a_priority_class() {
    for v in [example_json(), scheduled_json()] {
        let plan = plan_of(v).unwrap();
        for (pod, placement) in check_pods(&plan, RUN_ID, now())
            .iter()
            .zip(&plan.placements)
        {
            let s = spec(pod);
            assert_eq!(s.priority_class_name, None, "{:?}", pod.metadata.name);
            assert_eq!(s.priority, None);
            assert_eq!(s.preemption_policy, None);
            // The Harness's class, named for the warning.
            assert_eq!(
                pod.metadata
                    .annotations
                    .as_ref()
                    .unwrap()
                    .get("jr2.dev/harness-priority-class"),
                placement.pod_spec.priority_class_name.as_ref()
            );
        }
    }
}

#[test]
fn the_scheduling_fields_are_copied_or_left_out_as_the_list_says() {
    let plan = plan_of(scheduled_json()).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    let h = &plan.placements[0].pod_spec;
    let s = spec(&pods[0]);
    // Copied.
    assert_eq!(s.node_name.as_deref(), Some("node-b"));
    assert_eq!(s.topology_spread_constraints, h.topology_spread_constraints);
    assert!(s.topology_spread_constraints.is_some());
    // Left out.
    assert_eq!(s.priority_class_name, None, "it never preempts");
    assert_eq!(s.priority, None, "admission sets it from the class");
    assert_eq!(
        s.preemption_policy, None,
        "admission sets it from the class"
    );
    assert_eq!(s.overhead, None, "admission sets it from the RuntimeClass");
    assert_eq!(s.resource_claims, None);
    assert_eq!(s.scheduling_gates, None);
    assert_eq!(s.os, None);
    assert_eq!(s.hostname, None);
    assert_eq!(s.resources, None);
    // The other placement names none of them: none appear.
    let other = spec(&pods[1]);
    assert_eq!(other.node_name, None);
    assert_eq!(other.topology_spread_constraints, None);

    // The list the README shows says the same of each field this test sets.
    let said = |field: &str| {
        FIELDS
            .iter()
            .find(|(f, _, _)| *f == field)
            .unwrap_or_else(|| panic!("{field} is in scheduling::FIELDS"))
            .1
    };
    for field in ["nodeName", "topologySpreadConstraints"] {
        assert_eq!(said(field), Treatment::Copied, "{field}");
    }
    for field in [
        "priorityClassName",
        "priority, preemptionPolicy",
        "overhead",
        "resourceClaims",
        "schedulingGates",
        "os",
        "resources",
    ] {
        assert_eq!(said(field), Treatment::LeftOut, "{field}");
    }
}

/// `--dry-run` shows the spread constraints (no longer dropped: the false pass of issue 39) and no priority class.
#[test]
fn the_dry_run_shows_the_spread_and_no_priority_class() {
    let dir = std::env::temp_dir().join(format!("jr2-pod-scheduling-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plan.json");
    let mut v = example_json();
    v["placements"][0]["podSpec"]["topologySpreadConstraints"] = json!([{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}}
    }]);
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(["run", "--dry-run", "--plan"])
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    assert!(!yaml.contains("priorityClassName:"), "{yaml}");
    assert_eq!(
        yaml.matches("jr2.dev/harness-priority-class: jr2-sandbox")
            .count(),
        2,
        "{yaml}"
    );
    assert!(yaml.contains("topologySpreadConstraints:"), "{yaml}");
    assert!(
        yaml.contains("topologyKey: topology.kubernetes.io/zone"),
        "{yaml}"
    );
}
