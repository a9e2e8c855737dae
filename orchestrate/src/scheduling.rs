//! Where the check pod goes, and the harm it never does (issue 39): every scheduling field of the Harness pod spec
//! is copied into the check pod or left out for a reason ([`FIELDS`], which orchestrate/README.md's check-pod section
//! lists); the check pod never takes the Harness's priority class, so it cannot preempt a pod of the default
//! priority or above; and where a Harness pod of the placement may have to preempt to run, the run says so as a
//! warning ([`would_preempt`]) rather than fail the models a Harness pod could in fact run.
//!
//! Why no class, rather than the class and `preemptionPolicy: Never`: the Priority admission plugin sets a pod's
//! priority and preemption policy from its class alone, and refuses a pod that asks for another policy (`the string
//! value of PreemptionPolicy (Never) must not be provided in pod spec; priority admission controller computed
//! PreemptLowerPriority from the given PriorityClass name`, seen on the 1.35 test cluster); a class of the driver's
//! own that says `Never` is cluster-scoped, which a namespaced Role cannot create.

use k8s_openapi::api::core::v1::{Pod, PodSpec, TopologySpreadConstraint};

/// The check pod's annotation that names the Harness's priority class, which the check pod does not take.
pub const ANNOTATION_HARNESS_PRIORITY_CLASS: &str = "jr2.dev/harness-priority-class";

/// What the check pod does with a field of the Harness pod spec that the scheduler (or the admission that feeds it)
/// reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Copied as the Harness spec has it.
    Copied,
    /// Not copied.
    LeftOut,
    /// The check pod's own value, whatever the Harness spec says.
    Own,
    /// Copied in part, as the reason says.
    InPart,
    /// A Harness spec that asks for it is bad input (`plan/host_access.rs`): exit 2, nothing created.
    Refused,
}

impl Treatment {
    /// As orchestrate/README.md writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Treatment::Copied => "copied",
            Treatment::LeftOut => "left out",
            Treatment::Own => "its own",
            Treatment::InPart => "in part",
            Treatment::Refused => "refused (exit 2)",
        }
    }
}

/// Every field of the pod spec a scheduler plugin (or the admission that sets what it reads) weighs, in the order
/// orchestrate/README.md lists them: the field, what the check pod does with it, and why.
pub const FIELDS: &[(&str, Treatment, &str)] = &[
    (
        "nodeSelector",
        Treatment::Copied,
        "NodeAffinity: the nodes a Harness pod may run on",
    ),
    (
        "affinity",
        Treatment::Copied,
        "NodeAffinity and InterPodAffinity: the Harness pods already running weigh on the check pod as on a new \
         Harness pod; the check pod carries none of the Harness's labels, so a term that counts Harness pods does not \
         count the check pod itself",
    ),
    (
        "tolerations",
        Treatment::Copied,
        "TaintToleration: the tainted nodes a Harness pod may run on",
    ),
    (
        "topologySpreadConstraints",
        Treatment::Copied,
        "PodTopologySpread: a node without the topology label, or a domain the constraint rules out, is ruled out \
         for the check pod too (the scheduler's own reason, then a pod that did not start, never a pass); its \
         labelSelector counts the Harness pods, and the check pod, without their labels, is not counted itself, so \
         where only that one more pod would break maxSkew the check pod still goes",
    ),
    (
        "nodeName",
        Treatment::Copied,
        "NodeName: a Harness spec that names a node runs there without the scheduler, and so does the check pod",
    ),
    (
        "schedulerName",
        Treatment::Copied,
        "the scheduler that places the Harness pods places the check pod, by its own rules",
    ),
    (
        "priorityClassName",
        Treatment::LeftOut,
        "DefaultPreemption: a pod of the Harness's class may preempt pods of lower priority to run, and the class \
         alone decides (the Priority admission refuses a pod whose preemptionPolicy differs from its class's), so \
         the check pod runs at the namespace's default priority and evicts no pod of that priority or above; the \
         class is named in its annotation jr2.dev/harness-priority-class, and where the check pod stays \
         unschedulable for want of room a Harness pod of that class may preempt for, the run says so (a warning, \
         PROVIDER_POD_WOULD_PREEMPT, its models not checked)",
    ),
    (
        "priority, preemptionPolicy",
        Treatment::LeftOut,
        "the Priority admission sets both from the class (or the default), and refuses a pod whose values disagree",
    ),
    (
        "runtimeClassName",
        Treatment::Copied,
        "the RuntimeClass admission adds the class's scheduling (nodeSelector, tolerations) and overhead, as it \
         does for a Harness pod",
    ),
    (
        "overhead",
        Treatment::LeftOut,
        "the RuntimeClass admission sets it from runtimeClassName (and refuses a pod whose value disagrees)",
    ),
    (
        "resources",
        Treatment::LeftOut,
        "NodeResourcesFit: the pod's and the Harness container's are left out; the probe asks for 10m and 32Mi (the Custodian keeps its own), so the check pod fits \
         where a Harness pod may not: it checks the provider, not room for the Harness",
    ),
    (
        "resourceClaims",
        Treatment::LeftOut,
        "DynamicResources: the probe uses no device, and a claim would allocate one (a template) or reserve a shared \
         one for the check; a node chosen by a Harness's device is not followed",
    ),
    (
        "schedulingGates",
        Treatment::LeftOut,
        "SchedulingGates: the controller that set a gate for the Harness pods removes it from them only; a check \
         pod under it would wait to its deadline",
    ),
    (
        "volumes",
        Treatment::InPart,
        "VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits: only the volumes the Custodian and the CA \
         mounts use are copied; a Harness volume that ties it to a zone or a node (a bound PersistentVolumeClaim) \
         does not place the check pod",
    ),
    (
        "hostNetwork, hostPort",
        Treatment::Refused,
        "NodePorts: host access is never inherited; a Harness on the host network reaches the provider from the \
         node's own address, routes and DNS, outside every NetworkPolicy, which a check pod on the pod network \
         does not see, so such a plan is refused rather than checked from elsewhere",
    ),
    (
        "os",
        Treatment::LeftOut,
        "the probe image is Linux; a node's OS is a node label nodeSelector and affinity already follow",
    ),
];

/// The Harness spec's `topologySpreadConstraints`, as they are.
pub fn topology_spread(harness: &PodSpec) -> Option<Vec<TopologySpreadConstraint>> {
    harness.topology_spread_constraints.clone()
}

/// The annotation that names the Harness's priority class, when it names one.
pub fn harness_priority_annotation(harness: &PodSpec) -> Option<(String, String)> {
    let class = harness
        .priority_class_name
        .as_deref()
        .filter(|c| !c.is_empty())?;
    Some((
        ANNOTATION_HARNESS_PRIORITY_CLASS.to_owned(),
        class.to_owned(),
    ))
}

/// The scheduler's reasons a preemption can resolve (a filter that failed with `Unschedulable`, not
/// `UnschedulableAndUnresolvable`): room (`Insufficient <resource>`, `Too many pods`) and the anti-affinity of pods
/// that could be evicted.
const RESOLVABLE_BY_PREEMPTION: &[&str] = &[
    "Insufficient ",
    "Too many pods",
    "didn't satisfy existing pods anti-affinity rules",
    "didn't match pod anti-affinity rules",
];

/// The Harness's priority class, when the check pod stayed unschedulable where a Harness pod of that class may
/// preempt to run: the scheduler could not place it (`Unschedulable`), some node lacks only what an eviction frees
/// (room, or the anti-affinity of a running pod), and the Harness spec names a class (the check pod's annotation
/// [`ANNOTATION_HARNESS_PRIORITY_CLASS`]). `message` is the scheduler's, as the pending line keeps it. The class's
/// value is not read (PriorityClasses are cluster-scoped, outside the driver's Role): a class below the pods in the
/// way would not preempt them, which the warning's "may" leaves open.
pub fn would_preempt(pod: Option<&Pod>, reason: &str, message: &str) -> Option<String> {
    let class = pod?
        .metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_HARNESS_PRIORITY_CLASS)?;
    if reason != "Unschedulable" || class.is_empty() {
        return None;
    }
    // The filters' part of the message: before the post-filter plugins' words (`no new claims to deallocate`,
    // `preemption: ...`).
    let filters = message.split(". ").next().unwrap_or(message);
    RESOLVABLE_BY_PREEMPTION
        .iter()
        .any(|r| filters.contains(r))
        .then(|| class.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A check pod as created, with the Harness's class in its annotation or not.
    fn pod(class: Option<&str>) -> Pod {
        let annotations = class.map(|c| json!({ANNOTATION_HARNESS_PRIORITY_CLASS: c}));
        serde_json::from_value(json!({
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {"containers": []}
        }))
        .unwrap()
    }

    /// The 1.35 scheduler's words for a pod of the default priority that does not fit and finds no pod below it.
    const FULL: &str = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling.";

    #[test]
    fn a_class_where_only_room_lacks_may_preempt() {
        let p = pod(Some("jr2-high"));
        assert_eq!(
            would_preempt(Some(&p), "Unschedulable", FULL).as_deref(),
            Some("jr2-high")
        );
        let two = "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.";
        assert!(would_preempt(Some(&p), "Unschedulable", two).is_some());
    }

    #[test]
    fn nothing_an_eviction_frees_is_no_preemption() {
        let p = pod(Some("jr2-high"));
        for message in [
            // A selector, a taint: no eviction makes a node fit.
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
            "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        ] {
            assert_eq!(
                would_preempt(Some(&p), "Unschedulable", message),
                None,
                "{message}"
            );
        }
        assert_eq!(would_preempt(Some(&p), "SchedulingGated", FULL), None);
        // No class in the Harness spec: a Harness pod could not preempt either.
        assert_eq!(would_preempt(Some(&pod(None)), "Unschedulable", FULL), None);
        assert_eq!(would_preempt(None, "Unschedulable", FULL), None);
    }

    #[test]
    fn the_annotation_names_the_harness_class() {
        let spec: PodSpec =
            serde_json::from_value(json!({"containers": [], "priorityClassName": "jr2-high"}))
                .unwrap();
        assert_eq!(
            harness_priority_annotation(&spec),
            Some((
                ANNOTATION_HARNESS_PRIORITY_CLASS.to_owned(),
                "jr2-high".to_owned()
            ))
        );
        assert_eq!(harness_priority_annotation(&PodSpec::default()), None);
    }

    #[test]
    fn every_field_is_listed_in_the_readme() {
        let readme = include_str!("../README.md");
        for (field, treatment, why) in FIELDS {
            let row = format!("| `{field}` | {} | {why} |", treatment.as_str());
            assert!(readme.contains(&row), "orchestrate/README.md lacks:\n{row}");
        }
    }
}
