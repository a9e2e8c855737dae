//! Where the check pod goes, and the harm it never does (issue 39): every scheduling field of the Harness pod spec
//! is copied into the check pod or left out for a reason ([`FIELDS`], which orchestrate/README.md's check-pod section
//! lists), the check pod never preempts another pod (`preemptionPolicy: Never`, its priority class kept for the
//! scheduler's queue), and where a Harness pod of the placement would have to preempt to run, the run says so as a
//! warning ([`would_preempt`]) rather than fail the models a Harness pod could in fact run.

use k8s_openapi::api::core::v1::{Pod, PodSpec, TopologySpreadConstraint};

/// The check pod's `preemptionPolicy`: it waits for room, it never makes room by evicting another pod.
pub const PREEMPTION_POLICY: &str = "Never";

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
        Treatment::Copied,
        "PrioritySort: the check pod waits in the scheduler's queue where a Harness pod would",
    ),
    (
        "priority",
        Treatment::LeftOut,
        "the Priority admission plugin sets it from priorityClassName (and refuses a pod whose value disagrees)",
    ),
    (
        "preemptionPolicy",
        Treatment::Own,
        "Never: the check pod never evicts another pod to run; where a Harness pod of the placement would, the run \
         says so (a warning, PROVIDER_POD_WOULD_PREEMPT, its models not checked)",
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

/// The scheduler's reasons a preemption can resolve (a filter that failed with `Unschedulable`, not
/// `UnschedulableAndUnresolvable`): room (`Insufficient <resource>`, `Too many pods`) and the anti-affinity of pods
/// that could be evicted.
const RESOLVABLE_BY_PREEMPTION: &[&str] = &[
    "Insufficient ",
    "Too many pods",
    "didn't satisfy existing pods anti-affinity rules",
    "didn't match pod anti-affinity rules",
];

/// The scheduler's words for a pod with `preemptionPolicy: Never` (`default_preemption.go`).
const NOT_ELIGIBLE: &str = "not eligible due to preemptionPolicy=Never";

/// The priority class of a check pod that stays unschedulable where a Harness pod of its placement would preempt:
/// the scheduler said it cannot place the pod (`Unschedulable`), that it did not try to preempt because of the
/// check pod's `preemptionPolicy: Never`, and that some node lacks only what an eviction frees (room, or the
/// anti-affinity of a running pod); and the pod's priority class is above the default (its `priority`, which the
/// admission set from the class, is positive, or not known). `message` is the scheduler's, as the pending line
/// keeps it.
pub fn would_preempt(pod: Option<&Pod>, reason: &str, message: &str) -> Option<String> {
    let spec = pod?.spec.as_ref()?;
    let class = spec.priority_class_name.as_deref()?;
    let eligible = reason == "Unschedulable"
        && message.contains(NOT_ELIGIBLE)
        && spec.priority.is_none_or(|p| p > 0);
    if !eligible {
        return None;
    }
    // The filters' part of the message: before the post-filter plugins' words.
    let filters = message
        .find(NOT_ELIGIBLE)
        .map_or(message, |end| &message[..end]);
    RESOLVABLE_BY_PREEMPTION
        .iter()
        .any(|r| filters.contains(r))
        .then(|| class.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(class: Option<&str>, priority: Option<i32>) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [], "priorityClassName": class, "priority": priority,
                     "preemptionPolicy": "Never"}
        }))
        .unwrap()
    }

    /// The 1.35 scheduler's words for a pod that does not fit and may not preempt.
    const FULL: &str = "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.";

    #[test]
    fn a_high_class_that_lacks_only_room_would_preempt() {
        let p = pod(Some("jr2-high"), Some(1_000_000));
        assert_eq!(
            would_preempt(Some(&p), "Unschedulable", FULL).as_deref(),
            Some("jr2-high")
        );
        // Unknown priority (the pod as created, before admission's answer): the class decides.
        let p = pod(Some("jr2-high"), None);
        assert!(would_preempt(Some(&p), "Unschedulable", FULL).is_some());
        let two = "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node affinity/selector. preemption: not eligible due to preemptionPolicy=Never.";
        assert!(would_preempt(Some(&p), "Unschedulable", two).is_some());
    }

    #[test]
    fn nothing_an_eviction_frees_is_no_preemption() {
        let p = pod(Some("jr2-high"), Some(1_000_000));
        for message in [
            // A selector, a taint: no eviction makes a node fit.
            "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s). no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never.",
            // The scheduler tried (a pod without the policy) and said it would not help.
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints (missing required label). preemption: not eligible due to preemptionPolicy=Never.",
        ] {
            assert_eq!(
                would_preempt(Some(&p), "Unschedulable", message),
                None,
                "{message}"
            );
        }
        assert_eq!(would_preempt(Some(&p), "SchedulingGated", FULL), None);
        // No class, or one no higher than the default: a Harness pod could not preempt either.
        assert_eq!(
            would_preempt(Some(&pod(None, Some(0))), "Unschedulable", FULL),
            None
        );
        assert_eq!(
            would_preempt(Some(&pod(Some("low"), Some(0))), "Unschedulable", FULL),
            None
        );
        assert_eq!(would_preempt(None, "Unschedulable", FULL), None);
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
