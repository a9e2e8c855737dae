//! What the driver may do in the namespace, asked before anything is created: least privilege, checked first.
//!
//! A run needs a handful of verbs (the table [`ALL`]: the API calls of `run/`, `network_policy.rs`,
//! `pull_secrets.rs`, `workload.rs` and the Pod Security read, each once). Learning that one is missing from the API
//! server's 403 halfway through a run is what users of check pods meet (Sonobuoy, `helm test`): a pod created and
//! then not watchable, or not deletable. So before the first create the driver sends one SelfSubjectAccessReview per
//! permission this run needs, all at once, and:
//!
//! - a missing **required** one (pods create/list/watch/delete, pods/log get, deployments get with
//!   `--from-deployment`) is an `error:` line naming the verb, resource and namespace, code
//!   `PROVIDER_PERMISSION_MISSING`, next action the Role to apply ([`role`], `jr2-preflight rbac`); nothing is created;
//! - a missing **optional** one is a warning that says what the run will lack (Events: the verdict rests on the
//!   pod's status alone; NetworkPolicies: no comparison with the Harness pods'; a ServiceAccount: its pull secrets;
//!   the Namespace: its Pod Security level is not known before the create, and the check pod does not carry the
//!   Harness pods' labels; LimitRanges and ResourceQuotas: the probe's resources are not fitted to them; nodes: a
//!   check pod's node that stops answering is not named before `--timeout`).
//!
//! A review that cannot be made (no answer, an API server without the authorization API, a 403 on the review
//! itself) proves nothing either way: the run goes on and the API server's own answers say the rest.
//!
//! Nodes are cluster-scoped, which no Role can grant: `list`/`watch nodes` (the one Node a check pod is bound to, by
//! its name) are a ClusterRole of their own ([`cluster_role`], [`CLUSTER_ROLE_NAME`]), reviewed without a namespace.
//!
//! The Role and RoleBinding of the repo (`orchestrate/rbac/jr2-preflight.yaml`, bound to the group `jr2-preflight`),
//! then the ClusterRole and its ClusterRoleBinding, are [`role`], [`role_binding`], [`cluster_role`] and
//! [`cluster_role_binding`] printed: a test compares them, and another reads every request the driver sends to the
//! fake API server as its authorizer does, and finds each in [`ALL`].

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};

/// How long the API server has to answer the reviews (sent at once).
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);

/// The name of the Role (and RoleBinding) `jr2-preflight rbac` prints.
pub const ROLE_NAME: &str = "jr2-preflight";

/// The name of the ClusterRole `jr2-preflight rbac` prints (nodes), and of its ClusterRoleBinding (with the
/// namespace after it, when one is given: one binding per namespace's subjects).
pub const CLUSTER_ROLE_NAME: &str = "jr2-preflight-nodes";

/// Why the driver asks for a permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Use {
    /// Every run: the check pods' life (create, watch, log, delete).
    Pods,
    /// Every run, optional: the check pods' Events (why a pod is pending, a Secret volume that does not mount).
    Events,
    /// A plan with `networkPolicyCheck` (or `--from-deployment`), optional: the NetworkPolicy warning.
    NetworkPolicies,
    /// A placement whose pods take their pull secrets from a named ServiceAccount, optional.
    ServiceAccounts,
    /// Every run, optional: the namespace's Pod Security label, read before the create.
    Namespace,
    /// `--from-deployment`, required.
    Deployment,
    /// Every run, optional: the namespace's LimitRanges, which the probe's requests and limits are fitted to.
    LimitRanges,
    /// Every run, optional: the namespace's ResourceQuotas, which say what every container must state.
    ResourceQuotas,
    /// Every run, optional: the Node each check pod is bound to, watched by its name (a node that stops answering).
    /// Cluster-scoped: a ClusterRole grants it.
    Nodes,
}

/// One permission: an RBAC verb on a resource of the namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permission {
    /// The verb (`create`).
    pub verb: &'static str,
    /// The API group (`""` for core, `apps`, `networking.k8s.io`).
    pub group: &'static str,
    /// The resource (`pods`).
    pub resource: &'static str,
    /// The subresource (`log`), if any.
    pub subresource: Option<&'static str>,
    /// What asks for it.
    pub used_for: Use,
    /// Without it the run cannot go on; else a warning says what the run lacks.
    pub required: bool,
}

impl Permission {
    /// `pods`, `pods/log`: as RBAC rules and `kubectl auth can-i` name it.
    pub fn resource_name(&self) -> String {
        match self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.to_owned(),
        }
    }

    /// A resource of the cluster, not of a namespace: a ClusterRole grants it, and its review names no namespace.
    pub fn cluster_scoped(&self) -> bool {
        self.used_for == Use::Nodes
    }

    /// `pods/log`, `deployments.apps`: the resource with its group, as `kubectl auth can-i` takes it.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource_name()
        } else {
            match self.subresource {
                Some(sub) => format!("{}.{}/{sub}", self.resource, self.group),
                None => format!("{}.{}", self.resource, self.group),
            }
        }
    }
}

const fn p(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: Option<&'static str>,
    used_for: Use,
    required: bool,
) -> Permission {
    Permission {
        verb,
        group,
        resource,
        subresource,
        used_for,
        required,
    }
}

/// Every permission the driver may ask, in the Role's order.
///
/// - pods create (`run/create.rs`), list and watch (the pods' watcher, `run/watch.rs`; the stale sweep,
///   `run/sweep.rs`), delete (`run/cleanup.rs`, the sweep);
/// - pods/log get (the probe's log, followed; the Custodian's at a failed start: `run/log.rs`);
/// - events list and watch (`run/watch.rs`);
/// - networkpolicies list (`network_policy.rs`);
/// - serviceaccounts get (`pull_secrets.rs`);
/// - namespaces get (the Pod Security label; a Role grants it on its own namespace);
/// - deployments get (`workload.rs`);
/// - limitranges and resourcequotas list (`admission/`);
/// - nodes list and watch, cluster-wide (`run/watch.rs`: the check pod's node, by its name).
pub const ALL: [Permission; 15] = [
    p("create", "", "pods", None, Use::Pods, true),
    p("list", "", "pods", None, Use::Pods, true),
    p("watch", "", "pods", None, Use::Pods, true),
    p("delete", "", "pods", None, Use::Pods, true),
    p("get", "", "pods", Some("log"), Use::Pods, true),
    p("list", "", "events", None, Use::Events, false),
    p("watch", "", "events", None, Use::Events, false),
    p(
        "list",
        "networking.k8s.io",
        "networkpolicies",
        None,
        Use::NetworkPolicies,
        false,
    ),
    p(
        "get",
        "",
        "serviceaccounts",
        None,
        Use::ServiceAccounts,
        false,
    ),
    p("get", "", "namespaces", None, Use::Namespace, false),
    p("get", "apps", "deployments", None, Use::Deployment, true),
    p("list", "", "limitranges", None, Use::LimitRanges, false),
    p(
        "list",
        "",
        "resourcequotas",
        None,
        Use::ResourceQuotas,
        false,
    ),
    p("list", "", "nodes", None, Use::Nodes, false),
    p("watch", "", "nodes", None, Use::Nodes, false),
];

/// What a run will do, so what it needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// It reads a Deployment (`--from-deployment`).
    pub deployment: bool,
    /// It lists the NetworkPolicies (the plan has `networkPolicyCheck`, or `--from-deployment` gives it).
    pub network_policies: bool,
    /// It may read a ServiceAccount (for its pull secrets).
    pub service_accounts: bool,
}

impl Needs {
    /// The permissions of [`ALL`] this run asks for.
    pub fn permissions(&self) -> Vec<Permission> {
        ALL.iter()
            .filter(|p| match p.used_for {
                Use::Pods
                | Use::Events
                | Use::Namespace
                | Use::LimitRanges
                | Use::ResourceQuotas
                | Use::Nodes => true,
                Use::NetworkPolicies => self.network_policies,
                Use::ServiceAccounts => self.service_accounts,
                Use::Deployment => self.deployment,
            })
            .copied()
            .collect()
    }
}

/// What the reviews said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// Denied, and required: the run cannot go on.
    pub missing: Vec<Permission>,
    /// Denied, and optional: the run goes on without it.
    pub lacking: Vec<Permission>,
}

impl Access {
    /// Whether this permission was denied.
    pub fn denied(&self, used_for: Use) -> bool {
        self.missing
            .iter()
            .chain(&self.lacking)
            .any(|p| p.used_for == used_for)
    }
}

/// Asks the API server, one SelfSubjectAccessReview per permission, all at once, whether this client may do what the
/// run needs in `namespace`. Each review has [`REVIEW_TIMEOUT`].
pub async fn review(client: Client, namespace: &str, needs: &Needs) -> Access {
    let api: Api<SelfSubjectAccessReview> = Api::all(client);
    let permissions = needs.permissions();
    let answers = join_all(permissions.iter().map(|perm| {
        let api = api.clone();
        let review = request(perm, namespace);
        async move {
            match tokio::time::timeout(REVIEW_TIMEOUT, api.create(&PostParams::default(), &review))
                .await
            {
                Ok(Ok(r)) => r.status.map(|s| s.allowed),
                Ok(Err(e)) => {
                    tracing::info!(error = %e, "a SelfSubjectAccessReview was not answered; the permission is not known");
                    None
                }
                Err(_) => {
                    tracing::info!("no answer to a SelfSubjectAccessReview in time; the permission is not known");
                    None
                }
            }
        }
    }))
    .await;
    let mut access = Access::default();
    for (perm, allowed) in permissions.into_iter().zip(answers) {
        match allowed {
            Some(true) => {}
            Some(false) if perm.required => access.missing.push(perm),
            Some(false) => access.lacking.push(perm),
            // Not answered (no review API, no answer in time, the review refused): it proves nothing, and the run
            // goes on as if allowed; the request itself, if refused, says so later.
            None => tracing::debug!(
                verb = perm.verb,
                resource = perm.resource,
                "a permission not known; the run goes on"
            ),
        }
    }
    access
}

/// The warnings of the optional permissions denied: one per use, naming its verbs, and what the run will lack.
pub fn lacking_lines(access: &Access, namespace: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut uses: Vec<Use> = Vec::new();
    for perm in &access.lacking {
        if !uses.contains(&perm.used_for) {
            uses.push(perm.used_for);
        }
    }
    for used_for in uses {
        let denied: Vec<&Permission> = access
            .lacking
            .iter()
            .filter(|p| p.used_for == used_for)
            .collect();
        let verbs = denied
            .iter()
            .map(|p| p.verb)
            .collect::<Vec<_>>()
            .join(" and ");
        let lack = match used_for {
            Use::Events => {
                "the verdict rests on the pod's status alone, and a Secret volume that does not mount shows only as a timeout"
            }
            Use::NetworkPolicies => {
                "no NetworkPolicy is compared with the Harness pods', so one that holds their egress back is not named"
            }
            Use::ServiceAccounts => {
                "the check pod does not get the pull secrets of the Harness pods' ServiceAccount, so an image only they pull will not pull"
            }
            Use::Namespace => {
                "its Pod Security level is not checked before the create, so a refusal shows only as the API server's"
            }
            Use::LimitRanges => {
                "the probe's requests and limits are not fitted to its LimitRanges: it asks cpu 100m and memory 128Mi, requests equal to limits"
            }
            Use::ResourceQuotas => {
                "a quota on ephemeral storage is not known, so the probe does not state it"
            }
            Use::Nodes => {
                "a check pod's node that stops answering is not watched, so such a check ends at its --timeout without naming the node"
            }
            // Required: never lacking.
            Use::Pods | Use::Deployment => continue,
        };
        lines.push(if denied[0].cluster_scoped() {
            jr2_probe::contract::render::cluster_permission_lacking(
                &verbs,
                &denied[0].qualified(),
                lack,
            )
        } else {
            jr2_probe::contract::render::permission_lacking(
                &verbs,
                &denied[0].qualified(),
                namespace,
                lack,
            )
        });
    }
    lines
}

/// The review of one permission in `namespace`. The Namespace is reviewed by its name: the API server authorizes
/// `GET /api/v1/namespaces/<ns>` as a request in `<ns>`, so a Role there grants it.
pub fn request(perm: &Permission, namespace: &str) -> SelfSubjectAccessReview {
    SelfSubjectAccessReview {
        metadata: ObjectMeta::default(),
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                namespace: (!perm.cluster_scoped()).then(|| namespace.to_owned()),
                verb: Some(perm.verb.to_owned()),
                group: Some(perm.group.to_owned()),
                resource: Some(perm.resource.to_owned()),
                subresource: perm.subresource.map(str::to_owned),
                name: (perm.used_for == Use::Namespace).then(|| namespace.to_owned()),
                ..ResourceAttributes::default()
            }),
            ..SelfSubjectAccessReviewSpec::default()
        },
        status: None,
    }
}

/// The Role that grants every permission of [`ALL`] of the namespace, one rule per API group and resource with its
/// verbs (sorted), in `namespace` when one is given.
pub fn role(namespace: Option<&str>) -> Role {
    Role {
        metadata: meta(ROLE_NAME, namespace),
        rules: Some(rules(false)),
    }
}

/// The ClusterRole that grants the cluster-scoped permissions of [`ALL`] (nodes), as [`role`] does the rest.
pub fn cluster_role() -> ClusterRole {
    ClusterRole {
        metadata: meta(CLUSTER_ROLE_NAME, None),
        rules: Some(rules(true)),
        ..ClusterRole::default()
    }
}

/// The rules of the permissions of [`ALL`] that are cluster-scoped, or not.
fn rules(cluster_scoped: bool) -> Vec<PolicyRule> {
    let mut rules: BTreeMap<(&str, String), Vec<&str>> = BTreeMap::new();
    let mut order: Vec<(&str, String)> = Vec::new();
    for perm in ALL.iter().filter(|p| p.cluster_scoped() == cluster_scoped) {
        let key = (perm.group, perm.resource_name());
        if !order.contains(&key) {
            order.push(key.clone());
        }
        rules.entry(key).or_default().push(perm.verb);
    }
    order
        .into_iter()
        .map(|key| {
            let mut verbs: Vec<String> = rules[&key].iter().map(|v| (*v).to_owned()).collect();
            verbs.sort();
            PolicyRule {
                api_groups: Some(vec![key.0.to_owned()]),
                resources: Some(vec![key.1]),
                verbs,
                ..PolicyRule::default()
            }
        })
        .collect()
}

/// Who a RoleBinding binds the Role to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bound {
    /// A user, as the cluster authenticates them.
    User(String),
    /// A group.
    Group(String),
    /// A ServiceAccount of the Role's namespace.
    ServiceAccount(String),
}

/// The RoleBinding of [`role`] to `subjects`.
pub fn role_binding(namespace: Option<&str>, subjects: &[Bound]) -> RoleBinding {
    RoleBinding {
        metadata: meta(ROLE_NAME, namespace),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: ROLE_NAME.to_owned(),
        },
        subjects: Some(subjects_of(namespace, subjects)),
    }
}

/// The ClusterRoleBinding of [`cluster_role`] to `subjects` (a ServiceAccount's of `namespace`): named
/// [`CLUSTER_ROLE_NAME`], then `-<namespace>` when one is given, so that the bindings of two namespaces do not
/// replace each other.
pub fn cluster_role_binding(namespace: Option<&str>, subjects: &[Bound]) -> ClusterRoleBinding {
    let name = match namespace {
        Some(ns) => format!("{CLUSTER_ROLE_NAME}-{ns}"),
        None => CLUSTER_ROLE_NAME.to_owned(),
    };
    let mut metadata = meta(CLUSTER_ROLE_NAME, None);
    metadata.name = Some(name);
    ClusterRoleBinding {
        metadata,
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: CLUSTER_ROLE_NAME.to_owned(),
        },
        subjects: Some(subjects_of(namespace, subjects)),
    }
}

fn subjects_of(namespace: Option<&str>, subjects: &[Bound]) -> Vec<Subject> {
    subjects
        .iter()
        .map(|s| match s {
            Bound::User(name) => Subject {
                api_group: Some("rbac.authorization.k8s.io".to_owned()),
                kind: "User".to_owned(),
                name: name.clone(),
                namespace: None,
            },
            Bound::Group(name) => Subject {
                api_group: Some("rbac.authorization.k8s.io".to_owned()),
                kind: "Group".to_owned(),
                name: name.clone(),
                namespace: None,
            },
            Bound::ServiceAccount(name) => Subject {
                api_group: None,
                kind: "ServiceAccount".to_owned(),
                name: name.clone(),
                namespace: namespace.map(str::to_owned),
            },
        })
        .collect()
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(BTreeMap::from([(
            crate::pod::LABEL_MANAGED_BY.to_owned(),
            crate::pod::MANAGED_BY.to_owned(),
        )])),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_asks_what_it_will_do() {
        let names = |n: &Needs| -> Vec<String> {
            n.permissions()
                .iter()
                .map(|p| format!("{} {}", p.verb, p.qualified()))
                .collect()
        };
        assert_eq!(
            names(&Needs::default()),
            [
                "create pods",
                "list pods",
                "watch pods",
                "delete pods",
                "get pods/log",
                "list events",
                "watch events",
                "get namespaces",
                "list limitranges",
                "list resourcequotas",
                "list nodes",
                "watch nodes"
            ]
        );
        let all = Needs {
            deployment: true,
            network_policies: true,
            service_accounts: true,
        };
        assert_eq!(all.permissions(), ALL.to_vec());
    }

    #[test]
    fn the_namespace_is_reviewed_by_its_name() {
        let ns = ALL.iter().find(|p| p.used_for == Use::Namespace).unwrap();
        let attrs = request(ns, "team-a").spec.resource_attributes.unwrap();
        assert_eq!(attrs.name.as_deref(), Some("team-a"));
        assert_eq!(attrs.namespace.as_deref(), Some("team-a"));
        let log = &ALL[4];
        let attrs = request(log, "team-a").spec.resource_attributes.unwrap();
        assert_eq!(
            (
                attrs.verb.as_deref(),
                attrs.resource.as_deref(),
                attrs.subresource.as_deref(),
                attrs.name
            ),
            (Some("get"), Some("pods"), Some("log"), None)
        );
        let nodes = ALL.iter().find(|p| p.used_for == Use::Nodes).unwrap();
        let attrs = request(nodes, "team-a").spec.resource_attributes.unwrap();
        assert_eq!(
            (attrs.resource.as_deref(), attrs.namespace, attrs.name),
            (Some("nodes"), None, None),
            "a cluster-scoped review names no namespace"
        );
    }

    /// The Role holds what a namespace can grant, the ClusterRole the nodes: every permission of [`ALL`] once.
    #[test]
    fn nodes_are_in_the_cluster_role_alone() {
        let resources = |rules: Vec<PolicyRule>| -> Vec<String> {
            rules
                .into_iter()
                .flat_map(|r| r.resources.unwrap_or_default())
                .collect()
        };
        let role = resources(role(Some("team-a")).rules.unwrap());
        assert!(!role.contains(&"nodes".to_owned()), "{role:?}");
        let cluster = cluster_role().rules.unwrap();
        assert_eq!(resources(cluster.clone()), ["nodes"]);
        assert_eq!(cluster[0].verbs, ["list", "watch"]);
        let binding = cluster_role_binding(Some("team-a"), &[Bound::ServiceAccount("ci".into())]);
        assert_eq!(
            binding.metadata.name.as_deref(),
            Some("jr2-preflight-nodes-team-a")
        );
        let subject = &binding.subjects.unwrap()[0];
        assert_eq!(
            (subject.kind.as_str(), subject.namespace.as_deref()),
            ("ServiceAccount", Some("team-a"))
        );
    }
}
