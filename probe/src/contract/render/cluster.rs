//! The cluster's lines: what the driver says of the check pod and the cluster around it (pending, Pod Security,
//! permissions, a pod that cannot start or stopped, a pod left), and of the NetworkPolicies that make the check pod
//! differ from the Harness pods. Every argument that came from the cluster arrives already sanitized.

/// `provider: the check pod is not running yet — <Reason>: <message>`
pub fn pending(reason: &str, message: &str) -> String {
    format!("provider: the check pod is not running yet — {reason}: {message}")
}

/// `warning: provider: NetworkPolicy "<name>" limits the egress of the Harness pods, ...`
pub fn network_policy_warning(name: &str) -> String {
    format!(
        "warning: provider: NetworkPolicy \"{name}\" limits the egress of the Harness pods, and the check pod is not under it — this check can pass while a Turn fails"
    )
}

/// The other way round (issue 27, item 2): policies add up, and one that opens egress for the Harness pods leaves the
/// check pod under the others alone (a default-deny, say): `warning: provider: NetworkPolicy "<name>" allows egress of
/// the Harness pods, and the check pod is not under it — this check can fail where a Turn passes: allow the same
/// egress for the check pod's labels (<labels>)`.
pub fn network_policy_opens_warning(name: &str, check_labels: &str) -> String {
    format!(
        "warning: provider: NetworkPolicy \"{name}\" allows egress of the Harness pods, and the check pod is not under it — this check can fail where a Turn passes: allow the same egress for the check pod's labels ({check_labels})"
    )
}

/// Ingress (issue 27, item 2): a provider in the cluster behind a policy that admits the Harness pods by their labels
/// refuses the check pod: `warning: provider: NetworkPolicy "<name>" admits the Harness pods to the pods it selects,
/// and not the check pod — if a provider runs there, this check can fail where a Turn passes: admit the check pod's
/// labels (<labels>) too`.
pub fn network_policy_ingress_held_warning(name: &str, check_labels: &str) -> String {
    format!(
        "warning: provider: NetworkPolicy \"{name}\" admits the Harness pods to the pods it selects, and not the check pod — if a provider runs there, this check can fail where a Turn passes: admit the check pod's labels ({check_labels}) too"
    )
}

/// Ingress, the other way round: `warning: provider: NetworkPolicy "<name>" admits the check pod to the pods it
/// selects, and not the Harness pods — if a provider runs there, this check can pass while a Turn fails`.
pub fn network_policy_ingress_freer_warning(name: &str) -> String {
    format!(
        "warning: provider: NetworkPolicy \"{name}\" admits the check pod to the pods it selects, and not the Harness pods — if a provider runs there, this check can pass while a Turn fails"
    )
}

// The check pod's failures (the contract's section 5, "Check pod failures"). Each is one `error:` line; a stopped
// pod's detail lines follow it, indented two spaces. Every argument that came from the cluster (a pod's message, the
// API server's message) arrives here already through `sanitize::Redactor::clean`.

const CANNOT_START: &str = "error: provider preflight: the check pod cannot start —";

/// `error: provider preflight: the check pod cannot start — a node cannot pull <image>: <message>`
pub fn pod_cannot_start_image(image: &str, message: &str) -> String {
    format!("{CANNOT_START} a node cannot pull {image}: {message}")
}

/// `... cannot start — harness.envFrom names Secret "<name>", which this namespace does not hold`
pub fn pod_cannot_start_env_from(name: &str) -> String {
    format!(
        "{CANNOT_START} harness.envFrom names Secret \"{name}\", which this namespace does not hold"
    )
}

/// `... cannot start — harness.env names key "<key>" of Secret "<name>", which does not exist`
pub fn pod_cannot_start_env_key(key: &str, name: &str) -> String {
    format!(
        "{CANNOT_START} harness.env names key \"{key}\" of Secret \"{name}\", which does not exist"
    )
}

/// `... cannot start — a secrets valueFrom names Secret "<name>" (or its key), so the Custodian's volume does not
/// mount: <message>`
pub fn pod_cannot_start_custodian_volume(name: &str, message: &str) -> String {
    format!(
        "{CANNOT_START} a secrets valueFrom names Secret \"{name}\" (or its key), so the Custodian's volume does not mount: {message}"
    )
}

/// `... cannot start — the Custodian refused the held value <NAME> (<reason>)`
pub fn pod_custodian_refused(name: &str, reason: &str) -> String {
    format!("{CANNOT_START} the Custodian refused the held value {name} ({reason})")
}

/// `... cannot start — a container ran out of memory: <container> (limit <limit>)`
pub fn pod_out_of_memory(container: &str, limit: &str) -> String {
    format!("{CANNOT_START} a container ran out of memory: {container} (limit {limit})")
}

/// Beyond the contract's list: a start failure it does not name (`CreateContainerError`, `InvalidImageName`...),
/// in the same form: `... cannot start — <Reason>: <message>`.
pub fn pod_cannot_start_other(reason: &str, message: &str) -> String {
    format!("{CANNOT_START} {reason}: {message}")
}

/// `error: provider preflight: the check pod stopped (<reason>) while the check was on model "<model>"`; with more
/// than one model in flight (the probe checks several at once), each is named: `... while the check was on models
/// "<a>", "<b>"`, since each request may have been sent.
pub fn pod_stopped(reason: &str, models: &[&str]) -> String {
    let named: Vec<String> = models.iter().map(|m| format!("\"{m}\"")).collect();
    let which = if models.len() == 1 { "model" } else { "models" };
    format!(
        "error: provider preflight: the check pod stopped ({reason}) while the check was on {which} {}",
        named.join(", ")
    )
}

/// Beyond the contract, in the family of [`pod_stopped`]: the pod stopped before its probe had started any model
/// (its deadline passed while it was initializing, or the probe refused its run spec), so no model is named:
/// `error: provider preflight: the check pod stopped (<reason>) before any model was checked`.
pub fn pod_stopped_before_any_model(reason: &str) -> String {
    format!(
        "error: provider preflight: the check pod stopped ({reason}) before any model was checked"
    )
}

/// Beyond the contract, in the family of [`pod_stopped`]: the pod's run was stopped once every model had its result
/// (its probe spoke out of turn after them):
/// `error: provider preflight: the check pod stopped (<reason>) after every model was checked`.
pub fn pod_stopped_after_every_model(reason: &str) -> String {
    format!(
        "error: provider preflight: the check pod stopped ({reason}) after every model was checked"
    )
}

/// A stopped line that carries the probe's own error (its `error:` line, without that word, already cleaned):
/// `<stopped line> — the probe said: <error>`.
pub fn with_probe_error(stopped: &str, error: &str) -> String {
    format!("{stopped} — the probe said: {error}")
}

/// Beyond the contract: a detail line under a check pod's failure when the run has more than one check pod, naming
/// the placement (and the node, once it was scheduled) whose pod it is: `  placement "<name>" (node <node>)`.
pub fn placement_detail(placement: &str, node: Option<&str>) -> String {
    match node {
        Some(node) => format!("  placement \"{placement}\" (node {node})"),
        None => format!("  placement \"{placement}\" (not scheduled)"),
    }
}

/// `  not checked: <model>`: a detail line under [`pod_stopped`].
pub fn not_checked(model: &str) -> String {
    format!("  not checked: {model}")
}

/// `error: provider preflight: the cluster refused the check pod: <the API server's message>`
pub fn cluster_refused(message: &str) -> String {
    format!("error: provider preflight: the cluster refused the check pod: {message}")
}

/// `error: provider preflight: the check pod did not start in <s> s — last reason <Reason>: <message>`
pub fn pod_did_not_start(seconds: &str, reason: &str, message: &str) -> String {
    format!(
        "error: provider preflight: the check pod did not start in {seconds} s — last reason {reason}: {message}"
    )
}

/// Beyond the contract: the Events of the check pod cannot be read (RBAC), so the verdict rests on the pod's status
/// alone, and a Secret volume that does not mount (shown only as an Event) ends as a timeout.
pub fn events_forbidden_warning(message: &str) -> String {
    format!(
        "warning: provider: the check pod's Events cannot be read ({message}) — the verdict rests on the pod's status alone, and a Secret volume that does not mount shows only as a timeout"
    )
}

/// Beyond the contract: the driver's own lines about its run (not about a model or a pod's start).
///
/// `error: provider preflight: interrupted; the check pods were deleted`: the last line of a run stopped by SIGINT or
/// SIGTERM.
pub fn interrupted() -> String {
    "error: provider preflight: interrupted; the check pods were deleted".to_owned()
}

/// [`interrupted`] when a check pod may outlive the run (its [`pod_left`] line is above).
pub fn interrupted_pods_left() -> String {
    "error: provider preflight: interrupted; not every check pod could be deleted (see the kubectl line above)"
        .to_owned()
}

/// `error: provider preflight: cannot reach the cluster: <why>` (the kubeconfig or the client cannot be set up).
pub fn cannot_reach_cluster(why: &str) -> String {
    format!("error: provider preflight: cannot reach the cluster: {why}")
}

/// Beyond the contract: the kubeconfig's credentials could not be used (issue 40, item 5): `error: provider
/// preflight: cannot authenticate to the cluster: <why>`, `why` in the driver's words (never what an exec credential
/// plugin printed), and the next action on its own line ([`cannot_authenticate_next_action`]).
pub fn cannot_authenticate(why: &str) -> String {
    format!("error: provider preflight: cannot authenticate to the cluster: {why}")
}

/// After [`cannot_authenticate`]: what to do.
pub fn cannot_authenticate_next_action() -> String {
    "  - log in again as the kubeconfig's user does (kubectl get pods runs the same credential plugin and shows what it says), then run again"
        .to_owned()
}

/// Beyond the contract, under a check pod's failure: the Warning Events that do not say why it waits (a policy
/// engine's audit), counted by reason and source (issue 40, item 9).
pub fn audit_events(reason: &str, source: &str, count: u64) -> String {
    format!("  - {count} Warning Events {reason} from {source} (not why the check pod waits)")
}

/// After the [`audit_events`] lines: the count of the others.
pub fn audit_events_more(count: u64) -> String {
    format!("  - {count} more Warning Events of other reasons (not why the check pod waits)")
}

/// Beyond the contract, the message of a pending line: a Secret (or key) the pod needs is missing, and the driver
/// waits a short grace for it, as the kubelet would start a Harness pod once it appears (issue 40, item 15).
pub fn secret_wait(what: &str, seconds: &str) -> String {
    format!(
        "{what} not found; waiting up to {seconds} s for it to be created (a secrets operator may create it after the pod)"
    )
}

/// Beyond the contract: a permission every check needs, denied (a SelfSubjectAccessReview said no before anything was
/// created). `resource` as `kubectl auth can-i` takes it (`pods`, `pods/log`, `deployments.apps`).
pub fn permission_missing(verb: &str, resource: &str, namespace: &str) -> String {
    format!(
        "error: provider preflight: not allowed to {verb} {resource} in namespace \"{namespace}\", which the check needs — nothing was created"
    )
}

/// After the [`permission_missing`] lines: the Role that grants them.
pub fn permission_next_action(namespace: &str) -> String {
    format!(
        "  - apply the Role and RoleBinding that `jr2-preflight rbac -n {namespace} --user <you>` prints (kubectl apply -f -), then run again"
    )
}

/// Beyond the contract: an optional permission, denied; the run goes on without what it gives (`lack`).
pub fn permission_lacking(verbs: &str, resource: &str, namespace: &str, lack: &str) -> String {
    format!(
        "warning: provider: not allowed to {verbs} {resource} in namespace \"{namespace}\" — {lack}"
    )
}

/// Beyond the contract: an optional permission on a cluster-scoped resource (nodes), denied:
/// `warning: provider: not allowed to <verbs> <resource> (cluster-wide) — <lack>`.
pub fn cluster_permission_lacking(verbs: &str, resource: &str, lack: &str) -> String {
    format!("warning: provider: not allowed to {verbs} {resource} (cluster-wide) — {lack}")
}

/// Beyond the contract: the namespace's Pod Security level would refuse the check pod; said before the create, with
/// what breaks it (`what`, as PSA words a check) and the check pod's field (`field`). The pod is not created.
pub fn pod_security_refusal(
    namespace: &str,
    level: &str,
    pod: &str,
    field: &str,
    what: &str,
) -> String {
    format!(
        "error: provider preflight: namespace \"{namespace}\" enforces Pod Security \"{level}\", which refuses the check pod {pod}: {what}, at {field} — the pod was not created"
    )
}

/// After the first [`pod_security_refusal`] of a pod: its other fields the level refuses.
pub fn pod_security_also(field: &str, what: &str) -> String {
    format!("  also {what}, at {field}")
}

/// The last line of a [`pod_security_refusal`]: where the field comes from, and so what else it refuses.
pub fn pod_security_hint() -> String {
    "  - the check pod takes it from the Harness pod spec (its Custodian, volumes or pod security context), so the level refuses the Harness pods the same way: make the spec meet it".to_owned()
}

/// A delete that was not confirmed in time: the pod may outlive the run, so the line says how to remove it.
pub fn pod_may_still_exist(namespace: &str, pod: &str) -> String {
    format!(
        "warning: provider: the check pod {pod} may still exist: kubectl -n {namespace} delete pod {pod}"
    )
}

/// A check pod whose delete the cluster did not confirm, after its retries (`PROVIDER_POD_LEFT`): why, and the
/// exact line that deletes it.
pub fn pod_left(namespace: &str, pod: &str, why: &str) -> String {
    format!(
        "error: provider preflight: the check pod {pod} may still exist ({why}): kubectl -n {namespace} delete pod {pod}"
    )
}

/// `--keep-pod`: a failed pod left for inspection, and how to delete it.
pub fn pod_kept(namespace: &str, pod: &str) -> String {
    format!(
        "  the check pod {pod} was kept for inspection: kubectl -n {namespace} delete pod {pod}"
    )
}

/// `--evidence DIR` that cannot be written: a warning, the verdict stands.
pub fn evidence_not_written(dir: &str, why: &str) -> String {
    format!("warning: provider: cannot write the evidence to {dir}: {why}")
}

// Beyond the contract: what a real cluster does to the check pod's create and run (issue 40).

/// Progress: the create of a check pod has waited `waited` s for the API server, whose admission (a webhook) may
/// take up to its `timeoutSeconds`; the create waits up to `limit` s.
pub fn create_slow(waited: &str, limit: &str) -> String {
    format!(
        "provider: the API server has not answered the create of the check pod after {waited} s — an admission webhook may be slow; waiting up to {limit} s"
    )
}

/// The create of the check pod timed out in the API server (its admission took longer than the create's `timeout`,
/// `seconds`), or got no answer in that time: no refusal. `message`: the API server's words, cleaned.
pub fn create_timed_out(seconds: &str, message: &str) -> String {
    format!(
        "error: provider preflight: the API server did not finish the create of the check pod in {seconds} s — its admission (a webhook) was too slow: {message}"
    )
}

/// A `Warning:` header of the API server's answer to the create (a ValidatingAdmissionPolicy in `Warn` mode, Pod
/// Security's `warn` level): `text` cleaned and cut.
pub fn api_warning(text: &str) -> String {
    format!("warning: provider: the API server warned about the check pod: {text}")
}

/// The create was refused because the namespace is being deleted (`NamespaceTerminating`).
pub fn namespace_terminating(namespace: &str, message: &str) -> String {
    format!(
        "error: provider preflight: namespace \"{namespace}\" is being deleted, so the check pod cannot be created: {message}"
    )
}

/// The reason of a check pod that stopped because its namespace was deleted during the run (in [`pod_stopped`]).
pub fn namespace_deleted_reason(namespace: &str) -> String {
    format!("its namespace \"{namespace}\" was deleted")
}

/// The API server stopped answering the run's watches (`why`: the innermost cause: `Connection refused`, a TLS
/// failure such as `invalid peer certificate: UnknownIssuer`), said as it happens.
pub fn api_server_lost_warning(why: &str) -> String {
    format!(
        "warning: provider: the API server stopped answering ({why}) — the check pod is not seen until it answers again"
    )
}

/// The run ended with the API server still not answering: the pod's state is unknown.
pub fn api_server_lost(why: &str) -> String {
    format!(
        "error: provider preflight: the API server stopped answering during the run ({why}), so the check pod's end is unknown"
    )
}

/// The `why` of [`cannot_reach_cluster`] when the proxy the client goes through (`proxy`: `host:port`, from `from`:
/// `kubeconfig proxy-url`, `HTTPS_PROXY`...) could not be reached or would not open the tunnel.
pub fn proxy_unreachable(proxy: &str, from: &str, why: &str) -> String {
    format!("its proxy {proxy} ({from}) cannot be reached: {why}")
}

/// The check pod's probe found its deadline (nearly) passed as it started, while the API server's clock gave it
/// `seconds` more: the node's clock is ahead of the API server's by at least that much (issue 40, item 3).
pub fn clock_skew(seconds: &str) -> String {
    format!(
        "error: provider preflight: the node's clock is at least {seconds} s ahead of the API server's, so the probe found the check pod's deadline passed as it started"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 40, item 5: an authentication failure is named as one, with its next action.
    #[test]
    fn cannot_authenticate_lines() {
        insta::assert_snapshot!(
            [
                cannot_authenticate(
                    "the kubeconfig's exec credential plugin failed (exit status 3); what it printed is not shown, as it can hold a token"
                ),
                cannot_authenticate_next_action(),
            ]
            .join("\n")
        );
    }
}
