//! The words of the kubelet, the API server and the Custodian, parsed: a missing Secret or key, a volume that does
//! not mount, a pull error, the Custodian's refusal line, and which Events are about the pod and matter. Each
//! parser takes the raw message and returns the names in it, raw (lines clean them).

use k8s_openapi::api::core::v1::{Event, Pod};

/// What the Custodian writes before it refuses to start with a held value.
pub const CUSTODIAN_REFUSE: &str = "jr2.custodian refuse ";

/// The first refusal in the Custodian's log: `(<NAME>, <why>)` from `jr2.custodian refuse secret=<NAME> reason=<why>`,
/// wherever the line carries it (Envoy prefixes its Lua log lines).
pub fn custodian_refusal<S: AsRef<str>>(lines: &[S]) -> Option<(String, String)> {
    lines.iter().find_map(|line| {
        let line = line.as_ref();
        let at = line.find(CUSTODIAN_REFUSE)?;
        let rest = &line[at + CUSTODIAN_REFUSE.len()..];
        let field = |key: &str| {
            rest.split_whitespace()
                .find_map(|w| w.strip_prefix(key))
                .map(str::to_owned)
        };
        Some((field("secret=")?, field("reason=").unwrap_or_default()))
    })
}

/// `secret "<name>" not found` (the watch-based secret manager) or `secrets "<name>" not found` (the API server's
/// wording): the name.
pub fn missing_secret(message: &str) -> Option<&str> {
    let end = message.find("\" not found")?;
    let before = &message[..end];
    let start = before.rfind('"')?;
    let head = &before[..start];
    (head.ends_with("secret ") || head.ends_with("secrets ")).then(|| &before[start + 1..])
}

/// `couldn't find key <KEY> in Secret <NS>/<NAME>`: the key and the Secret's name.
pub fn missing_key(message: &str) -> Option<(&str, &str)> {
    let rest = &message[message.find("couldn't find key ")? + "couldn't find key ".len()..];
    let (key, rest) = rest.split_once(" in Secret ")?;
    let full = rest.split_whitespace().next()?;
    let name = full.rsplit_once('/').map_or(full, |(_, n)| n);
    Some((key, name))
}

/// `MountVolume.SetUp failed for volume "<v>" : <message>`: the volume and the rest.
pub fn failed_mount(message: &str) -> Option<(&str, &str)> {
    let rest = message
        .strip_prefix("MountVolume.SetUp failed for volume \"")
        .or_else(|| {
            message
                .find("MountVolume.SetUp failed for volume \"")
                .map(|at| &message[at + "MountVolume.SetUp failed for volume \"".len()..])
        })?;
    let (volume, rest) = rest.split_once('"')?;
    Some((volume, rest.trim_start_matches([' ', ':']).trim()))
}

/// A mount message that names volumes, none of them the pod's (`volumes`): an Event about another pod's volumes, or
/// one a policy engine made up (issue 40, item 10). A message that names none is the pod's.
pub(super) fn of_other_volumes(message: &str, volumes: &[&str]) -> bool {
    let named: Vec<&str> = match failed_mount(message) {
        Some((volume, _)) => vec![volume],
        None => unmounted_volumes(message),
    };
    !named.is_empty() && named.iter().all(|v| !volumes.contains(v))
}

/// `unmounted volumes=[a b]` of the kubelet's mount time-out: the volumes.
pub(super) fn unmounted_volumes(message: &str) -> Vec<&str> {
    let Some(at) = message.find("unmounted volumes=[") else {
        return Vec::new();
    };
    let rest = &message[at + "unmounted volumes=[".len()..];
    rest.split(']')
        .next()
        .unwrap_or("")
        .split([' ', ','])
        .filter(|s| !s.is_empty())
        .collect()
}

/// A mount failure that will not clear by itself (a missing Secret or key). The watch-based manager's
/// `object "<ns>"/"<name>" not registered` at start-up is transient.
pub(super) fn mount_failure_is_fatal(rest: &str) -> bool {
    !rest.contains("not registered")
        && (rest.contains("not found")
            || rest.contains("non-existent")
            || rest.contains("couldn't find key"))
}

/// Warnings the kubelet writes about a pod that it goes on starting all the same: never why a pod waits. A real
/// cluster writes them for most pods (`MissingClusterDNS` where the kubelet has no `clusterDNS`, `DNSConfigForming`
/// where a `dnsConfig` lists more nameservers or search domains than a resolver takes,
/// `FailedToRetrieveImagePullSecret` where a listed pull Secret is missing but the image needs none).
pub const NON_BLOCKING_WARNINGS: &[&str] = &[
    "MissingClusterDNS",
    "DNSConfigForming",
    "FailedToRetrieveImagePullSecret",
];

/// The Events about this pod (the uid matches when both sides carry one), in the order given, without the
/// [`NON_BLOCKING_WARNINGS`].
pub(super) fn events_of<'a>(
    pod: &'a Pod,
    events: &'a [Event],
) -> impl Iterator<Item = &'a Event> + 'a {
    let uid = pod.metadata.uid.as_deref();
    events.iter().filter(move |e| {
        let o = &e.involved_object;
        !e.reason
            .as_deref()
            .is_some_and(|r| NON_BLOCKING_WARNINGS.contains(&r))
            && o.kind.as_deref().is_none_or(|k| k == "Pod")
            && match (uid, o.uid.as_deref()) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    })
}

/// The pull error in a kubelet image message, without the `Failed to pull image "<image>": ` or
/// `Back-off pulling image "<image>": ` prefix; a bare back-off message takes the error of the last `Failed` Event.
pub(super) fn pull_error(message: &str, image: &str, events: &[&Event]) -> String {
    let strip = |m: &str| -> Option<String> {
        for prefix in ["Back-off pulling image \"", "Failed to pull image \""] {
            if let Some(rest) = m.strip_prefix(prefix) {
                let rest = rest.split_once('"').map_or("", |(_, r)| r);
                return Some(rest.trim_start_matches([':', ' ']).trim().to_owned());
            }
        }
        None
    };
    match strip(message) {
        Some(rest) if !rest.is_empty() => rest,
        Some(_) => events
            .iter()
            .rev()
            .filter_map(|e| e.message.as_deref())
            .filter(|m| m.starts_with("Failed to pull image \"") && m.contains(image))
            .find_map(|m| strip(m).filter(|r| !r.is_empty()))
            .unwrap_or_else(|| message.to_owned()),
        None => message.to_owned(),
    }
}

/// The image and the error of the kubelet's Event of a pull that failed (`Failed to pull image "<image>": <error>`).
pub(super) fn failed_pull(message: &str) -> Option<(&str, &str)> {
    let (image, error) = message
        .strip_prefix("Failed to pull image \"")?
        .split_once("\": ")?;
    Some((image, error.trim()))
}

/// The Event is the kubelet's own (its `source.component` or `reportingComponent`): only the kubelet mounts a
/// volume, so only its `FailedMount` is the pod's (issue 40, item 10). A policy engine's or a webhook's Event of the
/// same reason (`kyverno-admission`) is an audit, not a mount that failed.
pub(super) fn from_kubelet(e: &Event) -> bool {
    e.source.as_ref().and_then(|s| s.component.as_deref()) == Some("kubelet")
        || e.reporting_component.as_deref() == Some("kubelet")
}

/// The names of the pod's volumes: a mount failure of a volume the pod does not have is not the pod's.
pub(super) fn volume_names(pod: &Pod) -> Vec<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .map(|vs| vs.iter().map(|v| v.name.as_str()).collect())
        .unwrap_or_default()
}

/// The component that wrote the Event: its `source.component`, else its `reportingComponent`.
pub fn event_source(e: &Event) -> Option<&str> {
    e.source
        .as_ref()
        .and_then(|s| s.component.as_deref())
        .filter(|c| !c.is_empty())
        .or(e.reporting_component.as_deref().filter(|c| !c.is_empty()))
}

/// The Event can say why the pod waits: it is the kubelet's, a scheduler's or an autoscaler's (the components that
/// start, place or make room for a pod), or it names no component. A policy engine's or a webhook's Warning
/// (`PolicyViolation` from `kyverno-admission`) is an audit of the pod, not why it waits (issue 40, item 9).
pub fn tells_why_it_waits(e: &Event) -> bool {
    event_source(e).is_none_or(|c| {
        c == "kubelet" || c.contains("scheduler") || c == "cluster-autoscaler" || c == "karpenter"
    })
}
