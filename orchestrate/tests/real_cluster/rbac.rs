//! RBAC as the real authorizer answers it: the least-privilege user (a client certificate in the group
//! `jr2-preflight`) runs a whole preflight with the shipped Role alone (every other test does), and with each rule
//! of it removed in turn, the driver's SelfSubjectAccessReviews name what is missing: a required permission is an
//! `error:` line and nothing is created; an optional one is a warning, and the run goes on.

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
