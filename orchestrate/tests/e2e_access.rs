//! End to end with a fake cluster, for least privilege and Pod Security, checked before anything is created.
//!
//! The fake API server answers SelfSubjectAccessReviews from what a test denies, and refuses the denied requests
//! themselves with the API server's 403, as RBAC does. Per required permission: one `error:` line naming it, the
//! next action, `PROVIDER_PERMISSION_MISSING`, no pod posted. Per optional one: its warning, and the run goes on
//! without what it gives. The Role in the repo is what the code asks for, and every request a full run sends is in
//! it. A namespace that enforces a Pod Security level the check pod breaks: the field, before the create.

mod fake_cluster;

use std::path::Path;

use serde_json::{Value, json};

use fake_cluster::*;
use jr2_preflight::access::{self, ALL, Use};
use jr2_probe::contract::render;
use jr2_testkit::kube::{Scenario, attributes};

/// A plan that uses everything a run may ask for: a NetworkPolicy check, a placement whose pods take their pull
/// secrets from a ServiceAccount.
fn full_plan(s: &Setup) -> Value {
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["placements"][0]["podSpec"]["serviceAccountName"] = json!("jr2-harness");
    plan["networkPolicyCheck"] =
        json!({"harnessPodLabels": {"harness": {"app.kubernetes.io/name": "jr2-harness"}}});
    plan
}

fn harness_deployment() -> Value {
    json!({"metadata": {"name": "jr2-instance-harness"}, "spec": {
        "selector": {"matchLabels": {"app": "h"}},
        "template": {"metadata": {"labels": {"app": "h"}}, "spec": pod_spec()}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_required_permission_denied_is_one_error_and_nothing_is_created() {
    for perm in ALL.iter().filter(|p| p.required) {
        let s = Setup::new(Scenario::AllOk).await;
        s.kube.deny(perm.verb, perm.group, &perm.resource_name());
        let plan = s.plan(&[("harness", &["ok"])]);
        let mut extra: Vec<&str> = Vec::new();
        if perm.used_for == Use::Deployment {
            s.kube.add_deployment(NS, harness_deployment());
            extra = vec!["--from-deployment", "jr2-instance-harness"];
        }
        let run = s.run(s.args(&plan, &extra)).await;
        let what = format!("{} {}", perm.verb, perm.qualified());
        assert_eq!(run.code(), Some(1), "{what}: {}", run.stderr);
        assert_eq!(
            run.lines(),
            [
                render::permission_missing(perm.verb, &perm.qualified(), NS).as_str(),
                render::permission_next_action(NS).as_str(),
            ],
            "{what}"
        );
        let verdict = run.verdict();
        assert_verdict_lines(&run, &verdict);
        assert_eq!(
            verdict["pods"][0]["code"], "PROVIDER_PERMISSION_MISSING",
            "{what}"
        );
        assert_eq!(verdict["models"][0]["outcome"], "not_checked", "{what}");
        assert!(
            verdict["pods"][0]["nextAction"]
                .as_str()
                .unwrap()
                .contains("jr2-preflight rbac"),
            "{what}"
        );
        assert!(s.posted_pods().is_empty(), "{what}: a pod was created");
        // Nothing but the reviews (and the client's discovery) was sent: no read of the Deployment, no sweep.
        let sent: Vec<String> = s
            .kube
            .requests()
            .iter()
            .filter(|r| !r.path.ends_with("/selfsubjectaccessreviews"))
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert!(sent.is_empty(), "{what}: {sent:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_required_permissions_denied_are_two_errors() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.deny("create", "", "pods");
    s.kube.deny("get", "", "pods/log");
    let plan = s.plan(&[("harness", &["ok"]), ("sandbox", &["ok"])]);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1));
    insta::assert_snapshot!("permissions_missing", run.stderr);
    let verdict = run.verdict();
    assert_verdict_lines(&run, &verdict);
    for pod in verdict["pods"].as_array().unwrap() {
        assert_eq!(pod["code"], "PROVIDER_PERMISSION_MISSING");
    }
    assert!(s.posted_pods().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_optional_permission_denied_is_a_warning_and_the_run_goes_on() {
    for used_for in [
        Use::Events,
        Use::NetworkPolicies,
        Use::ServiceAccounts,
        Use::Namespace,
        Use::LimitRanges,
        Use::ResourceQuotas,
        Use::Nodes,
    ] {
        let s = Setup::new(Scenario::AllOk).await;
        let denied: Vec<_> = ALL.iter().filter(|p| p.used_for == used_for).collect();
        for perm in &denied {
            s.kube.deny(perm.verb, perm.group, &perm.resource_name());
        }
        // What each would have given: a policy to name, an account's pull secrets, a level to check.
        s.kube.add_network_policy(
            NS,
            json!({"metadata": {"name": "harness-egress"}, "spec": {
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}},
                "policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}}),
        );
        s.kube.add_service_account(
            NS,
            json!({"metadata": {"name": "jr2-harness"}, "imagePullSecrets": [{"name": "kit-registry"}]}),
        );
        let plan = s.write_plan(&full_plan(&s));
        let run = s.run(s.args(&plan, &[])).await;
        let label = format!("{used_for:?}");
        assert_eq!(run.code(), Some(0), "{label}: {}", run.stderr);
        let lines = run.lines();
        let warning = lines
            .iter()
            .find(|l| l.starts_with("warning: provider: not allowed to "))
            .unwrap_or_else(|| panic!("{label}: no warning: {lines:?}"));
        let verbs = denied
            .iter()
            .map(|p| p.verb)
            .collect::<Vec<_>>()
            .join(" and ");
        let scope = if denied[0].cluster_scoped() {
            "(cluster-wide)".to_owned()
        } else {
            format!("in namespace \"{NS}\"")
        };
        assert!(
            warning.starts_with(&format!(
                "warning: provider: not allowed to {verbs} {} {scope} — ",
                denied[0].qualified()
            )),
            "{label}: {warning}"
        );
        assert_eq!(
            lines
                .iter()
                .filter(|l| l.starts_with("warning: provider: not allowed"))
                .count(),
            1,
            "{label}"
        );
        let requests = s.kube.requests();
        let sent = |path_end: &str| {
            requests
                .iter()
                .any(|r| r.method == "GET" && r.path.ends_with(path_end))
        };
        let pod = &s.posted_pods()[0];
        match used_for {
            Use::Events => {
                // Said once, before the run: not again when the watch is refused.
                assert!(
                    !lines
                        .iter()
                        .any(|l| l.contains("the check pod's Events cannot be read")),
                    "{lines:?}"
                );
            }
            Use::NetworkPolicies => {
                assert!(!sent("/networkpolicies"), "the policies were listed");
                assert!(
                    !lines
                        .iter()
                        .any(|l| l.contains("NetworkPolicy \"harness-egress\""))
                );
            }
            Use::ServiceAccounts => {
                assert!(
                    !sent("/serviceaccounts/jr2-harness"),
                    "the account was read"
                );
                assert!(pod["spec"]["imagePullSecrets"].is_null(), "{pod:#}");
            }
            Use::Namespace => assert!(
                !sent(&format!("/namespaces/{NS}")),
                "the namespace was read"
            ),
            Use::LimitRanges => {
                assert!(!sent("/limitranges"), "the LimitRanges were listed");
                assert_eq!(
                    // The probe: the last container (after a plain Custodian: issue 36).
                    pod["spec"]["containers"]
                        .as_array()
                        .and_then(|cs| cs.last())
                        .map(|c| c["resources"]["requests"].clone())
                        .unwrap_or_default(),
                    json!({"cpu": "100m", "memory": "128Mi"}),
                    "the asks that pass common floors: {pod:#}"
                );
            }
            Use::ResourceQuotas => {
                assert!(!sent("/resourcequotas"), "the ResourceQuotas were listed")
            }
            Use::Nodes => {
                assert_eq!(
                    *warning,
                    "warning: provider: not allowed to list and watch nodes (cluster-wide) — a check pod's node that stops answering is not watched, so such a check ends at its --timeout without naming the node"
                );
                assert!(
                    !requests.iter().any(|r| r.path.starts_with("/api/v1/nodes")),
                    "the node was watched"
                );
            }
            Use::Pods | Use::Deployment => unreachable!(),
        }
        if used_for != Use::NetworkPolicies {
            // The run went on with the rest: the policy warning, the pull secrets.
            assert!(
                lines
                    .iter()
                    .any(|l| l.contains("NetworkPolicy \"harness-egress\"")),
                "{label}: {lines:?}"
            );
        }
        if used_for != Use::ServiceAccounts {
            assert_eq!(
                pod["spec"]["imagePullSecrets"],
                json!([{"name": "kit-registry"}]),
                "{label}"
            );
        }
        s.assert_cleaned_up();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_full_run_is_in_the_role() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube.add_deployment(NS, harness_deployment());
    s.kube
        .add_service_account(NS, json!({"metadata": {"name": "jr2-harness"}}));
    let mut plan = full_plan(&s);
    plan["placements"][0]["podSpec"]["serviceAccountName"] = json!("jr2-harness");
    let plan = s.write_plan(&plan);
    let run = s
        .run(s.args(&plan, &["--from-deployment", "jr2-instance-harness"]))
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let role: Vec<(String, String, String)> = ALL
        .iter()
        .map(|p| (p.verb.to_owned(), p.group.to_owned(), p.resource_name()))
        .collect();
    let mut used = std::collections::BTreeSet::new();
    for r in s.kube.requests() {
        let Some((rule, _ns)) = attributes(&r.method, &r.path, r.is_watch()) else {
            continue;
        };
        // Every authenticated user may review their own access (system:basic-user).
        if rule.resource == "selfsubjectaccessreviews" {
            continue;
        }
        let key = (rule.verb, rule.group, rule.resource);
        assert!(
            role.contains(&key),
            "{} {} is not in the Role: {key:?}",
            r.method,
            r.path
        );
        used.insert(key);
    }
    // And the run used most of the Role: pods' create, list, watch, delete, their log; the Events; the policies;
    // the namespace; the Deployment (the ServiceAccount is read only when a template names one: it does).
    assert!(used.len() >= 10, "{used:?}");
}

#[test]
fn the_role_in_the_repo_is_what_the_code_asks_for() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("rbac/jr2-preflight.yaml");
    let text = std::fs::read_to_string(&repo).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(["rbac", "--group", "jr2-preflight"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        text,
        "orchestrate/rbac/jr2-preflight.yaml is not `jr2-preflight rbac --group jr2-preflight`: regenerate it"
    );
    let docs: Vec<&str> = text
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .collect();
    assert_eq!(
        docs.len(),
        4,
        "a Role and its RoleBinding, the nodes' ClusterRole and its ClusterRoleBinding"
    );
    let binding: k8s_openapi::api::rbac::v1::RoleBinding = serde_yaml::from_str(docs[1]).unwrap();
    assert_eq!(
        (
            binding.role_ref.kind.as_str(),
            binding.role_ref.name.as_str()
        ),
        ("Role", access::ROLE_NAME)
    );
    let subjects = binding.subjects.unwrap();
    assert_eq!(
        (
            subjects.len(),
            subjects[0].kind.as_str(),
            subjects[0].name.as_str()
        ),
        (1, "Group", "jr2-preflight")
    );
    let cluster_binding: k8s_openapi::api::rbac::v1::ClusterRoleBinding =
        serde_yaml::from_str(docs[3]).unwrap();
    assert_eq!(
        (
            cluster_binding.role_ref.kind.as_str(),
            cluster_binding.role_ref.name.as_str()
        ),
        ("ClusterRole", access::CLUSTER_ROLE_NAME)
    );
    assert_eq!(cluster_binding.subjects, Some(subjects));
    // The Role's rules and the ClusterRole's, read back, are ALL: each permission once, nothing else; nodes (no
    // namespace's) in the ClusterRole alone.
    let role: k8s_openapi::api::rbac::v1::Role = serde_yaml::from_str(docs[0]).unwrap();
    let cluster_role: k8s_openapi::api::rbac::v1::ClusterRole =
        serde_yaml::from_str(docs[2]).unwrap();
    let cluster_rules = cluster_role.rules.unwrap();
    assert!(
        cluster_rules
            .iter()
            .all(|r| r.resources.as_deref() == Some(&["nodes".to_owned()][..])),
        "{cluster_rules:?}"
    );
    let mut granted: Vec<(String, String, String)> = Vec::new();
    for rule in role.rules.unwrap().into_iter().chain(cluster_rules) {
        for group in rule.api_groups.unwrap() {
            for resource in rule.resources.clone().unwrap() {
                for verb in &rule.verbs {
                    granted.push((verb.clone(), group.clone(), resource.clone()));
                }
            }
        }
    }
    let mut asked: Vec<(String, String, String)> = ALL
        .iter()
        .map(|p| (p.verb.to_owned(), p.group.to_owned(), p.resource_name()))
        .collect();
    granted.sort();
    asked.sort();
    assert_eq!(granted, asked);
}

#[test]
fn the_role_and_binding_validate_against_kubernetes_1_35() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jr2-preflight-rbac");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args([
            "rbac",
            "-n",
            "team-a",
            "--user",
            "alice@example.com",
            "--group",
            "platform",
            "--service-account",
            "ci",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.matches("\nkind: ").count() + usize::from(text.starts_with("kind: ")),
        4
    );
    let file = dir.join("rbac.yaml");
    std::fs::write(&file, &text).unwrap();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("rbac/jr2-preflight.yaml");
    jr2_testkit::peers::validate_1_35(&[file, repo]);
    // And what is not a name is refused, exit 2.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(["rbac", "--user", ""])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// ---------------------------------------------------------------------------------------------------------------
// Pod Security, up front.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_the_check_pod_breaks_is_said_before_the_create() {
    let s = Setup::new(Scenario::AllOk).await;
    s.kube
        .label_namespace(NS, &[("pod-security.kubernetes.io/enforce", "restricted")]);
    // Two placements: the Harness pod spec's Custodian sets no security context (restricted refuses it); the
    // other's Custodian is restricted.
    let mut plan = plan(
        &s.provider.base_url(),
        &[("harness", &["ok"]), ("sandbox", &["ok"])],
    );
    plan["placements"][1]["podSpec"]["containers"][1]["securityContext"] = json!({
        "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": true,
        "seccompProfile": {"type": "RuntimeDefault"}});
    let plan = s.write_plan(&plan);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let verdict = run.verdict();
    assert_verdict_lines(&run, &verdict);
    let pods = verdict["pods"].as_array().unwrap();
    assert_eq!(pods[0]["code"], "PROVIDER_POD_SECURITY");
    assert_eq!(pods[1]["outcome"], "finished", "the admitted placement ran");
    // Only the admitted pod was created.
    let posted = s.posted_pods();
    assert_eq!(posted.len(), 1);
    assert_eq!(
        posted[0]["metadata"]["labels"]["jr2.dev/placement"],
        "sandbox"
    );
    let stable: String = run
        .stderr
        .lines()
        .map(|l| {
            let l = match l.find("jr2-preflight-e2e-harness-") {
                Some(i) => format!("{}jr2-preflight-e2e-harness-RUN{}", &l[..i], &l[i + 34..]),
                None => l.to_owned(),
            };
            match (l.find('('), l.find(" ms)")) {
                (Some(a), Some(b)) if l.starts_with("provider: ") && a < b => {
                    format!("{}(N ms)", &l[..a])
                }
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("pod_security_refused", stable);
    s.assert_cleaned_up();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_the_check_pod_meets_is_no_line() {
    for level in ["baseline", "privileged"] {
        let s = Setup::new(Scenario::AllOk).await;
        s.kube
            .label_namespace(NS, &[("pod-security.kubernetes.io/enforce", level)]);
        let plan = s.plan(&[("harness", &["ok"])]);
        let run = s.run(s.args(&plan, &[])).await;
        assert_eq!(run.code(), Some(0), "{level}: {}", run.stderr);
        assert_eq!(s.posted_pods().len(), 1, "{level}");
        assert!(
            run.lines().iter().all(|l| !l.contains("Pod Security")),
            "{level}"
        );
        s.assert_cleaned_up();
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Credentials (issue 40, item 5).

/// An exec credential plugin that fails prints a token on stdout and another on stderr (as `kubelogin` and cloud
/// plugins do when a refresh fails): none of it reaches a line, the verdict or the evidence; the failure is named as
/// authentication, with its code and next action, and `-o json` and `--evidence` write as for any failure. On no
/// cluster at all: the plugin runs before any request (kube runs it as the client is built), so the fake API server
/// is not needed and the server address is never contacted.
#[cfg(unix)]
#[test]
fn a_failing_credential_plugin_is_named_and_nothing_it_printed_is_shown() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jr2-preflight-exec-auth");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJQVzQyNDIifQ.PW4242signature";
    let plugin = dir.join("corp-login");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho '{{\"status\":{{\"token\":\"{token}\"}}}}'\necho 'refresh failed for token {token}' >&2\nexit 3\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:9\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: {}\n",
            plugin.display()
        ),
    )
    .unwrap();
    let evidence = dir.join("evidence");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args([
            "run",
            "--plan",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plan.json"),
            "-o",
            "json",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("--evidence")
        .arg(&evidence)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains("PW4242") && !text.contains("eyJ"), "{text}");
    }
    insta::assert_snapshot!(stderr.trim_end(), @r"
    error: provider preflight: cannot authenticate to the cluster: the kubeconfig's exec credential plugin failed (exit status 3); what it printed is not shown, as it can hold a token
      - log in again as the kubeconfig's user does (kubectl get pods runs the same credential plugin and shows what it says), then run again
    ");
    let verdict: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(verdict["ok"], false);
    assert_eq!(
        verdict["pods"][0]["code"], "PROVIDER_CLUSTER_AUTH",
        "{verdict}"
    );
    let action = verdict["models"][0]["nextAction"]
        .as_str()
        .unwrap_or_default();
    assert!(
        action.starts_with("the kubeconfig's credentials"),
        "{verdict}"
    );
    let mut files = 0;
    for entry in walk(&evidence) {
        let text = std::fs::read_to_string(&entry).unwrap();
        assert!(
            !text.contains("PW4242") && !text.contains("eyJ"),
            "{entry:?}"
        );
        files += 1;
    }
    assert!(
        evidence.join("verdict.json").is_file(),
        "the bundle is written"
    );
    assert!(files >= 3, "{files}");
}

/// Every file under `dir`.
#[cfg(unix)]
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
