//! What the tests of the plan and the check pod share (`plan.rs`, `pod_spec.rs`, `pod_secrets.rs`,
//! `pod_security.rs`, `pod_schema.rs`, `dry_run.rs`): a fixed clock and run id, the example plan and its variants
//! read and validated as the driver takes them, the check pods made of a plan, and accessors into a pod.

// Each test file uses a part of these.
#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jr2_preflight::plan::{PlanError, RawPlan, ValidPlan};
use jr2_preflight::pod;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec, SecurityContext};
use serde_json::{Value, json};

/// 2026-01-01T00:00:00Z.
pub const NOW: u64 = 1_767_225_600;
pub const RUN_ID: &str = "k3x9q2m7pa";

pub fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

pub fn example_json() -> Value {
    serde_json::from_str(include_str!("../../examples/plan.json")).expect("the example is JSON")
}

/// A plan as the driver takes it: read, then validated.
pub fn plan_of(v: Value) -> Result<ValidPlan, PlanError> {
    RawPlan::from_value(v).and_then(RawPlan::validate)
}

/// A plan's text as the driver takes it: parsed, then validated.
pub fn parse(text: &str) -> Result<ValidPlan, PlanError> {
    RawPlan::parse(text).and_then(RawPlan::validate)
}

pub fn example() -> ValidPlan {
    plan_of(example_json()).expect("the example plan is valid")
}

/// The check pods of a plan, as created.
pub fn check_pods(plan: &ValidPlan, run_id: &str, now: SystemTime) -> Vec<Pod> {
    pod::check_pods(plan, run_id, now)
        .into_iter()
        .map(|c| c.pod)
        .collect()
}

pub fn spec(pod: &Pod) -> &PodSpec {
    pod.spec.as_ref().expect("a spec")
}

/// The probe container: the last of `containers`, after the Custodian when the Custodian is a plain container.
pub fn probe(pod: &Pod) -> &Container {
    let s = spec(pod);
    assert!(
        s.containers.len() <= 2,
        "the probe, and a plain Custodian before it: {:?}",
        s.containers.iter().map(|c| &c.name).collect::<Vec<_>>()
    );
    let probe = s.containers.last().expect("the probe");
    assert_eq!(probe.name, "probe");
    probe
}

/// The Custodian container: a plain container before the probe, else a native sidecar.
pub fn custodian(pod: &Pod) -> Option<&Container> {
    let s = spec(pod);
    match s.containers.as_slice() {
        [c, _] => Some(c),
        _ => s.init_containers.iter().flatten().next(),
    }
}

pub fn env_of<'a>(c: &'a Container, name: &str) -> Option<&'a EnvVar> {
    c.env.iter().flatten().find(|e| e.name == name)
}

pub fn names<T>(items: Option<&Vec<T>>, name: impl Fn(&T) -> &str) -> Vec<String> {
    items
        .into_iter()
        .flatten()
        .map(|i| name(i).to_owned())
        .collect()
}

/// The example with what it does not exercise: a runtime class, host aliases, a resource env of the Harness, a CA
/// mount outside /etc/jr2/ca that NODE_EXTRA_CA_CERTS points into, and the env the probe sets itself.
pub fn full_json() -> Value {
    let mut v = example_json();
    let s = &mut v["placements"][0]["podSpec"];
    s["runtimeClassName"] = json!("gvisor");
    s["schedulerName"] = json!("jr2-sandbox-scheduler");
    s["hostAliases"] = json!([{"ip": "10.0.0.5", "hostnames": ["vllm.lan.example"]}]);
    s["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "corp-ca", "configMap": {"name": "corp-ca"}}));
    let h = &mut s["containers"][0];
    h["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "corp-ca", "mountPath": "/opt/corp-ca"}));
    let env = h["env"].as_array_mut().unwrap();
    for e in env.iter_mut() {
        if e["name"] == "NODE_EXTRA_CA_CERTS" {
            e["value"] = json!("/opt/corp-ca/ca.crt");
        }
    }
    env.push(json!({"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"containerName": "harness", "resource": "limits.cpu"}}}));
    env.push(json!({"name": "ENVOY_MEM", "valueFrom": {"resourceFieldRef": {"containerName": "custodian", "resource": "limits.memory"}}}));
    env.push(json!({"name": "OTHER_MEM", "valueFrom": {"resourceFieldRef": {"containerName": "cache-warmer", "resource": "limits.memory"}}}));
    env.push(json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}));
    env.push(json!({"name": "NODE_NAME", "value": "from-the-harness"}));
    env.push(json!({"name": "JR2_PROBE_DEADLINE", "value": "1"}));
    v
}

pub fn full() -> ValidPlan {
    plan_of(full_json()).expect("the full variant is valid")
}

/// A placement without a Custodian (nothing held), and one whose Custodian is already a native sidecar.
pub fn variants_json() -> Value {
    let mut v = example_json();
    let p0 = v["placements"][0].as_object_mut().unwrap();
    p0.remove("custodianContainer");
    let s0 = &mut v["placements"][0]["podSpec"];
    s0["containers"].as_array_mut().unwrap().truncate(1);
    s0["volumes"]
        .as_array_mut()
        .unwrap()
        .retain(|vol| !vol["name"].as_str().unwrap().starts_with("custodian-"));
    let s1 = &mut v["placements"][1]["podSpec"];
    let mut custodian = s1["containers"].as_array_mut().unwrap().remove(1);
    custodian["restartPolicy"] = json!("Always");
    custodian["startupProbe"] =
        json!({"tcpSocket": {"port": 15001}, "periodSeconds": 1, "failureThreshold": 30});
    s1["initContainers"] = json!([custodian]);
    v
}

/// The probe's security context, as every check pod has it.
pub fn assert_probe_security_context(sc: &SecurityContext) {
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(sc.run_as_user, Some(65532));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    let caps = sc.capabilities.as_ref().unwrap();
    assert_eq!(caps.drop.as_deref(), Some(&["ALL".to_owned()][..]));
    assert_eq!(caps.add, None);
    assert_eq!(sc.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");
    assert_eq!(sc.privileged, None);
    assert_eq!(sc.proc_mount, None);
    assert_eq!(sc.se_linux_options, None);
    assert_eq!(sc.app_armor_profile, None);
    assert_eq!(sc.windows_options, None);
    assert_eq!(sc.run_as_group, None);
}
