//! RBAC as the real authorizer answers it: the least-privilege user (a client certificate in the group
//! `jr2-preflight`) runs a whole preflight with the shipped Role alone (every other test does), and with each rule
//! of it removed in turn, the driver's SelfSubjectAccessReviews name what is missing: a required permission is an
//! `error:` line and nothing is created; an optional one is a warning, and the run goes on.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::*;

/// The shipped Role's rules, one (group, resource, verb) each.
const RULES: &[(&str, &str, &str, bool)] = &[
    ("", "pods", "create", true),
    ("", "pods", "list", true),
    ("", "pods", "watch", true),
    ("", "pods", "delete", true),
    ("", "pods/log", "get", true),
    ("", "events", "list", false),
    ("", "events", "watch", false),
    ("networking.k8s.io", "networkpolicies", "list", false),
    ("", "serviceaccounts", "get", false),
    ("", "namespaces", "get", false),
    ("apps", "deployments", "get", true),
    ("", "limitranges", "list", false),
    ("", "resourcequotas", "list", false),
];

/// The shipped Role with one rule removed, bound to the group `jr2-preflight`.
fn rbac_without(skip: usize) -> String {
    let rules: Vec<Value> = RULES
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != skip)
        .map(|(_, (group, resource, verb, _))| json!({"apiGroups": [group], "resources": [resource], "verbs": [verb]}))
        .collect();
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "jr2-preflight"}, "rules": rules});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "jr2-preflight"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "jr2-preflight"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "jr2-preflight"}]});
    format!("{role}\n---\n{binding}\n")
}

/// The shipped Role's table is the file's: a rule added to the YAML and not here would go untested.
#[test]
fn the_table_is_the_shipped_role() {
    let shipped: Vec<(String, String, String)> = {
        let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(RBAC)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let role = docs.iter().find(|d| d["kind"] == "Role").expect("a Role");
        let mut out = Vec::new();
        for rule in role["rules"].as_sequence().unwrap() {
            for group in rule["apiGroups"].as_sequence().unwrap() {
                for resource in rule["resources"].as_sequence().unwrap() {
                    for verb in rule["verbs"].as_sequence().unwrap() {
                        out.push((
                            group.as_str().unwrap().to_owned(),
                            resource.as_str().unwrap().to_owned(),
                            verb.as_str().unwrap().to_owned(),
                        ));
                    }
                }
            }
        }
        out.sort();
        out
    };
    let mut ours: Vec<(String, String, String)> = RULES
        .iter()
        .map(|(g, r, v, _)| (g.to_string(), r.to_string(), v.to_string()))
        .collect();
    ours.sort();
    assert_eq!(ours, shipped);
}

#[test]
fn each_permission_removed_gives_its_line() {
    let _g = shared();
    let cluster = &env().cluster;
    for (i, (_group, resource, verb, required)) in RULES.iter().enumerate() {
        let ns = namespace_with_rbac(&format!("rc-rbac-{i}"), &[], &rbac_without(i));
        // What makes the run use each permission: a Deployment, NetworkPolicies, a ServiceAccount.
        let mut spec = harness_spec();
        spec["serviceAccountName"] = json!("jr2-harness");
        cluster.kubectl_stdin(
            &["-n", &ns, "apply", "-f", "-"],
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "jr2-harness"}}).to_string(),
        );
        let mut plan = plan(&ns, &[("sandbox", spec, &["ok"])]);
        plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"sandbox": {"app": "harness"}}});
        let mut extra: Vec<&str> = Vec::new();
        if *resource == "deployments" {
            let template = harness_spec();
            let deployment = json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "harness"},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "harness"}},
                         "template": {"metadata": {"labels": {"app": "harness"}}, "spec": template}}
            });
            cluster.kubectl_stdin(&["-n", &ns, "apply", "-f", "-"], &deployment.to_string());
            extra.extend(["--from-deployment", "harness"]);
        }
        let run = run_plan(&plan, &extra);
        let qualified = resource.split('/').next().unwrap_or(resource);
        let named = |start: &str| {
            run.lines().iter().any(|l| {
                l.starts_with(start)
                    && l.contains(&format!("not allowed to {verb} "))
                    && l.contains(qualified)
                    && l.contains(&format!("namespace \"{ns}\""))
            })
        };
        if *required {
            assert_eq!(run.code(), Some(1), "{verb} {resource}: {}", run.stderr);
            assert!(
                named("error: "),
                "{verb} {qualified} named in an error line: {}",
                run.stderr
            );
            assert!(
                cluster.pods(&ns, MANAGED).is_empty(),
                "{verb} {resource}: nothing is created"
            );
        } else {
            assert_eq!(
                run.code(),
                Some(0),
                "{verb} {resource}: the run goes on: {}",
                run.stderr
            );
            assert!(
                named("warning: "),
                "{verb} {qualified} named in a warning: {}",
                run.stderr
            );
            assert_no_pod_left(&ns);
        }
    }
}

/// Whether the least-privilege user may list nodes, as the API server's authorizer answers now (its RBAC cache
/// follows a binding's delete or create a moment later).
fn user_may_list_nodes() -> bool {
    let cluster = &env().cluster;
    let out = cluster.kubectl_output(
        &cluster.info().user_kubeconfig,
        &["auth", "can-i", "list", "nodes"],
        None,
    );
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

/// The shipped ClusterRoleBinding of the nodes, taken away while held (the user then may not list or watch nodes,
/// whatever namespace applied it), and applied again from the shipped file when dropped, a failed assertion's
/// unwinding included. Held under [`alone`]: no other test runs without it.
struct NodesUnbound;

impl NodesUnbound {
    fn take() -> Self {
        env().cluster.kubectl(&[
            "delete",
            "clusterrolebinding",
            "jr2-preflight-nodes",
            "--ignore-not-found",
        ]);
        env()
            .cluster
            .wait_for("the nodes unbound", Duration::from_secs(30), || {
                !user_may_list_nodes()
            });
        Self
    }
}

impl Drop for NodesUnbound {
    fn drop(&mut self) {
        let binding = RBAC
            .split("---\n")
            .find(|d| d.contains("\nkind: ClusterRoleBinding\n"))
            .expect("the shipped ClusterRoleBinding");
        env().cluster.kubectl_stdin(&["apply", "-f", "-"], binding);
        env().cluster.wait_for(
            "the nodes bound again",
            Duration::from_secs(30),
            user_may_list_nodes,
        );
    }
}

/// Nodes are cluster-scoped: the shipped file grants `list`/`watch nodes` by a ClusterRole and its binding, which the
/// real authorizer honours for a review without a namespace (no warning then). Without the binding, one warning says
/// what the run lacks, and the run goes on and passes.
#[test]
fn without_the_nodes_cluster_role_the_run_warns_and_goes_on() {
    let _g = alone();
    let ns = namespace("rc-rbac-nodes", &[]);
    let plan = plan(&ns, &[("sandbox", harness_spec(), &["ok"])]);
    let nodes_warning = |run: &DriverRun| {
        run.lines()
            .into_iter()
            .filter(|l| l.starts_with("warning: provider: not allowed to list and watch nodes"))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let run = run_plan(&plan, &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(nodes_warning(&run), Vec::<String>::new(), "granted");
    let unbound = NodesUnbound::take();
    let run = run_plan(&plan, &[]);
    drop(unbound);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(
        nodes_warning(&run),
        [
            "warning: provider: not allowed to list and watch nodes (cluster-wide) — a check pod's node that stops answering is not watched, so such a check ends at its --timeout without naming the node"
        ]
    );
    assert_no_pod_left(&ns);
}
