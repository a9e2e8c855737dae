//! The second table (issue 35, "NetworkPolicy, enforced"), on the real dataplane: for each setup of the
//! namespace's NetworkPolicies, a Harness-like pod (the Harness labels; `jr2-test-custodian --dial`, a TCP connect to
//! the provider on the node's address every 250 ms) and the preflight's verdict, side by side. They agree, or the row
//! names the documented exception; a refused connect's `nextAction` points at the policy. Beside them, the other
//! rows: Pod Security `restricted` on the namespace, a provider that runs in the cluster behind an Ingress policy that
//! admits the Harness labels (the check pod carries them) and one that does not, and a namespace that refuses every
//! pod (a quota of none; the Harness pod's fate is a server-side dry run of it). Held by `real_cluster`, not here:
//! Pod Security variant by variant (`pod_security`), and the quota, LimitRange and ValidatingAdmissionPolicy that admit
//! a Harness pod, and a policy that refuses only check pods (`admission`). And the start race of the dataplane's
//! default mode, measured.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// The Harness pods' labels (`networkPolicyCheck.harnessPodLabels`).
fn harness_labels() -> Value {
    json!({"app": "harness"})
}

/// The check pod's own label.
const CHECK_LABEL: (&str, &str) = ("app.kubernetes.io/name", "jr2-provider-preflight");

/// `<address>:<port>` of the fake provider.
fn provider_addr() -> String {
    env()
        .provider
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

fn apply(ns: &str, object: &Value) {
    env()
        .cluster
        .kubectl_stdin(&["-n", ns, "apply", "-f", "-"], &object.to_string());
}

/// An Egress policy over `selector` with `egress` rules (none: it denies all egress of the pods it selects).
fn egress_policy(name: &str, selector: Value, egress: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
           "spec": {"podSelector": selector, "policyTypes": ["Egress"], "egress": egress}})
}

/// An Ingress policy over the provider that runs in the cluster, admitting the pods with `labels` to its port 8000.
fn ingress_from(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": name},
           "spec": {"podSelector": {"matchLabels": provider_labels()}, "policyTypes": ["Ingress"],
                    "ingress": [{"from": [{"podSelector": {"matchLabels": labels}}],
                                 "ports": [{"protocol": "TCP", "port": 8000}]}]}})
}

/// The Harness-like pod: the Harness labels, dialing the provider at `target` (`<address>:<port>`).
fn start_dialer(ns: &str, name: &str, target: &str) {
    apply(ns, &dialer(name, target));
}

/// The Harness-like pod's manifest.
fn dialer(name: &str, target: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": harness_labels()},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
                "containers": [{"name": "dial", "image": CUSTODIAN_IMAGE, "imagePullPolicy": "IfNotPresent",
                    "args": ["--dial", target],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
                    "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}]}})
}

/// The labels of the provider that runs in the cluster.
fn provider_labels() -> Value {
    json!({"app": "in-cluster-provider"})
}

/// A provider that runs in the cluster: a pod serving the fake provider on its own address, port 8000
/// (`jr2-test-custodian --forward`, each connection relayed to the fake provider on the node's address); its
/// `<address>:<port>` once it runs.
fn start_in_cluster_provider(ns: &str) -> String {
    apply(
        ns,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "provider", "labels": provider_labels()},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0, "automountServiceAccountToken": false,
                "containers": [{"name": "serve", "image": CUSTODIAN_IMAGE, "imagePullPolicy": "IfNotPresent",
                    "args": ["--listen", "0.0.0.0:8000", "--forward", provider_addr()],
                    "ports": [{"containerPort": 8000}],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
                    "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}}]}}),
    );
    let c = &env().cluster;
    let mut ip = String::new();
    c.wait_for(
        &format!("the provider pod of {ns} to run"),
        Duration::from_secs(90),
        || {
            let out = c.kubectl_output(
                &c.info().admin_kubeconfig,
                &[
                    "-n",
                    ns,
                    "get",
                    "pod",
                    "provider",
                    "-o",
                    "jsonpath={.status.phase} {.status.podIP}",
                ],
                None,
            );
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            match text.split_once(' ') {
                Some(("Running", a)) if !a.is_empty() => {
                    ip = a.to_owned();
                    true
                }
                _ => false,
            }
        },
    );
    format!("{ip}:8000")
}

/// A server-side dry run of `pod` as the admin: `Err` with the API server's words when refused.
fn server_dry_run(ns: &str, pod: &Value) -> Result<(), String> {
    env().cluster.server_dry_run(ns, &pod.to_string()).map(drop)
}

/// One dial: its time from the container's start, and whether it connected (else its error).
#[derive(Debug)]
struct Dial {
    ms: u64,
    outcome: String,
}

impl Dial {
    fn ok(&self) -> bool {
        self.outcome == "ok"
    }
}

/// The dialer's lines so far (none while its container is not running).
fn dials(ns: &str, name: &str) -> Vec<Dial> {
    let c = &env().cluster;
    let out = c.kubectl_output(&c.info().admin_kubeconfig, &["-n", ns, "logs", name], None);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("dial ")?;
            let (ms, outcome) = rest.split_once(' ')?;
            Some(Dial {
                ms: ms.parse().ok()?,
                outcome: outcome.to_owned(),
            })
        })
        .collect()
}

/// Whether the Harness-like pod reaches the provider: its last dial once it has dialed for 3 s (its first packets
/// may wait for the dataplane: `--netpol-default-deny` drops them until the pod's chains are programmed).
fn harness_reaches(ns: &str, name: &str) -> bool {
    let mut last = None;
    env().cluster.wait_for(
        &format!("the dialer {ns}/{name} to dial for 3 s"),
        Duration::from_secs(90),
        || {
            let d = dials(ns, name);
            let done = d.last().is_some_and(|d| d.ms >= 3000);
            if done {
                last = d.into_iter().last();
            }
            done
        },
    );
    let last = last.unwrap();
    eprintln!("{ns}: the Harness-like pod's last dial: {last:?}");
    last.ok()
}

/// What the preflight is to say in a row.
enum Expect {
    /// It passes, and no line names a NetworkPolicy.
    Passes,
    /// It fails to connect, the lines hold each of these (the policies named in place of the hints), and the model's
    /// `nextAction` is the second.
    Refused(Vec<String>, String),
    /// It fails to connect (a provider in the cluster whose Ingress policies refuse the caller): the model's code.
    NotReached(&'static str),
    /// The API server refuses the check pod, and the line after says it refuses a Harness pod as well.
    Inadmissible,
}

/// How the Harness-like pod's fate is found.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// It runs, dialing the provider: `harness_reaches` is whether it connects.
    Dials,
    /// A server-side dry run of it: `harness_reaches` is whether the API server admits it.
    DryRun,
}

struct Row {
    name: &'static str,
    /// The namespace's labels (Pod Security's).
    ns_labels: &'static [(&'static str, &'static str)],
    /// The objects of the setup (NetworkPolicies, a ResourceQuota), applied before the dialer starts.
    policies: Vec<Value>,
    /// The provider runs in the cluster ([`start_in_cluster_provider`]), and the plan's base URL is its pod's
    /// address; else the fake provider on the node's address.
    in_cluster: bool,
    fate: Fate,
    /// What the Harness-like pod meets.
    harness_reaches: bool,
    expect: Expect,
    /// The documented exception, when the two differ.
    exception: Option<&'static str>,
    /// The check goes through the Custodian (the Harness pod spec of `harness_spec`), whose connect fails in its
    /// place (its 502).
    custodian: bool,
}

/// A plan of one placement with no Custodian (the probe dials the provider itself, as a Turn's pod does), whose
/// Harness labels are [`harness_labels`].
fn direct_plan(ns: &str) -> Value {
    let spec = json!({
        "automountServiceAccountToken": false,
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "harness", "image": "registry.jr2.test/harness:1", "env": [
            {"name": "JR2_PROVIDER_API_KEY", "valueFrom": {"secretKeyRef": {"name": "jr2-held-secrets", "key": "JR2_PROVIDER_API_KEY"}}}
        ], "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]
    });
    let mut plan = plan(ns, &[("sandbox", spec, &["ok"])]);
    plan["placements"][0]
        .as_object_mut()
        .unwrap()
        .remove("custodianContainer");
    plan["models"][0]["keyHeld"] = json!(false);
    plan["networkPolicyCheck"] = json!({"harnessPodLabels": {"sandbox": harness_labels()}});
    plan
}

fn run_row(row: &Row) {
    let ns = namespace(&format!("np-{}", row.name), row.ns_labels);
    for p in &row.policies {
        apply(&ns, p);
    }
    let target = if row.in_cluster {
        start_in_cluster_provider(&ns)
    } else {
        provider_addr()
    };
    let reaches = match row.fate {
        Fate::Dials => {
            start_dialer(&ns, "harness-dialer", &target);
            harness_reaches(&ns, "harness-dialer")
        }
        Fate::DryRun => {
            // Until the quota controller has counted the namespace's use, the quota admission refuses with "status
            // unknown": wait for its own words.
            let mut last = Ok(());
            env().cluster.wait_for(
                &format!("{}: the quota to refuse a Harness pod", row.name),
                Duration::from_secs(60),
                || {
                    last = server_dry_run(&ns, &dialer("harness-dialer", &target));
                    last.as_ref().is_err_and(|e| e.contains("exceeded quota"))
                },
            );
            eprintln!("{}: a Harness pod's dry run: {last:?}", row.name);
            last.is_ok()
        }
    };
    assert_eq!(
        reaches,
        row.harness_reaches,
        "{}: the Harness-like pod {} the provider",
        row.name,
        if reaches { "reaches" } else { "does not reach" }
    );
    let mut plan = if row.custodian {
        let mut p = plan(&ns, &[("sandbox", harness_spec(), &["ok"])]);
        p["networkPolicyCheck"] = json!({"harnessPodLabels": {"sandbox": harness_labels()}});
        p
    } else {
        direct_plan(&ns)
    };
    if row.in_cluster {
        plan["models"][0]["baseUrl"] = json!(format!("http://{target}/v1"));
    }
    let run = run_plan(&plan, &[]);
    let lines = run.lines();
    let v = run.verdict();
    match &row.expect {
        Expect::Passes => {
            assert_eq!(run.code(), Some(0), "{}: {}", row.name, run.stderr);
            assert!(
                !lines.iter().any(|l| l.contains("NetworkPolicy")),
                "{}: no NetworkPolicy is named where the Harness pods and the check pod reach the provider alike:\n{}",
                row.name,
                run.stderr
            );
        }
        Expect::NotReached(code) => {
            assert_ne!(run.code(), Some(0), "{}: {}", row.name, run.stderr);
            assert_eq!(v["models"][0]["code"], *code, "{}: {v:#}", row.name);
        }
        Expect::Inadmissible => {
            assert_eq!(run.code(), Some(1), "{}: {}", row.name, run.stderr);
            let at = lines
                .iter()
                .position(|l| {
                    l.starts_with("error: provider preflight: the cluster refused the check pod: ")
                })
                .unwrap_or_else(|| panic!("{}: {}", row.name, run.stderr));
            assert!(
                lines.get(at + 1).is_some_and(|l| l.starts_with(
                    "  the namespace refuses a Harness pod of placement \"sandbox\" as well (a server-side dry run of one): "
                )),
                "{}: {}",
                row.name,
                run.stderr
            );
        }
        Expect::Refused(named, next_action) => {
            assert_ne!(run.code(), Some(0), "{}: {}", row.name, run.stderr);
            let code = if row.custodian {
                "PROVIDER_CUSTODIAN_REFUSED"
            } else {
                "PROVIDER_UNREACHABLE"
            };
            assert_eq!(v["models"][0]["code"], code, "{}: {v:#}", row.name);
            assert_eq!(
                v["models"][0]["nextAction"],
                next_action.as_str(),
                "{}: {v:#}",
                row.name
            );
            for n in named {
                assert!(
                    lines.iter().any(|l| l.contains(n.as_str())),
                    "{}: a line holds {n:?}:\n{}",
                    row.name,
                    run.stderr
                );
            }
            // The policy in place of the hints about localhost, the model id and vLLM's flags.
            for hint in [
                "localhost never works",
                "vLLM needs",
                "the model id must be",
            ] {
                assert!(
                    !lines.iter().any(|l| l.contains(hint)),
                    "{}: no {hint:?} hint:\n{}",
                    row.name,
                    run.stderr
                );
            }
        }
    }
    let agree = matches!(row.expect, Expect::Passes) == row.harness_reaches;
    eprintln!(
        "row {:<20} a Harness pod: {:<16} the preflight: {:<8} {}",
        row.name,
        match (row.fate, row.harness_reaches) {
            (Fate::Dials, true) => "reaches",
            (Fate::Dials, false) => "blocked",
            (Fate::DryRun, true) => "admitted",
            (Fate::DryRun, false) => "refused",
        },
        if matches!(row.expect, Expect::Passes) {
            "passes"
        } else {
            "fails"
        },
        row.exception.unwrap_or("they agree")
    );
    assert_eq!(
        agree,
        row.exception.is_none(),
        "{}: the preflight and the Harness pod {}, and the row {}",
        row.name,
        if agree { "agree" } else { "differ" },
        if row.exception.is_some() {
            "names an exception"
        } else {
            "names none"
        }
    );
    assert_no_pod_left(&ns);
}

/// The table: each setup in its own namespace, the rows at once.
#[test]
fn the_preflight_and_a_harness_pod_agree_under_each_policy_setup() {
    let _g = shared();
    // The cluster is up before the clock starts (its start, and the images' build, are not the table's).
    let addr = provider_addr();
    let started = Instant::now();
    let (ip, port) = addr.rsplit_once(':').unwrap();
    let port: u16 = port.parse().unwrap();
    let deny = |name: &str, selector: Value| egress_policy(name, selector, json!([]));
    let harness = json!({"matchLabels": harness_labels()});
    let both = |name: &str| {
        format!(
            "NetworkPolicy \"{name}\" selects the check pod and the Harness pods and allows them no egress to {addr}"
        )
    };
    let allow_harness = |name: &str| {
        format!(
            "allow the Harness pods' labels egress to {addr} (TCP) in a NetworkPolicy of the namespace: NetworkPolicy \"{name}\" denies it to the Harness pods and the check pod alike, so a Turn is refused the same, then run jr2 up again"
        )
    };
    let rows = [
        Row {
            name: "deny-harness",
            policies: vec![deny("deny-harness", harness.clone())],
            harness_reaches: false,
            // The check pod carries the Harness labels: the policy selects it too.
            expect: Expect::Refused(vec![both("deny-harness")], allow_harness("deny-harness")),
            exception: None,
            custodian: false,
            ns_labels: &[],
            in_cluster: false,
            fate: Fate::Dials,
        },
        Row {
            name: "allow-provider",
            policies: vec![
                deny("deny-harness", harness.clone()),
                egress_policy(
                    "allow-provider",
                    harness.clone(),
                    json!([{"to": [{"ipBlock": {"cidr": format!("{ip}/32")}}], "ports": [{"protocol": "TCP", "port": port}]}]),
                ),
            ],
            harness_reaches: true,
            expect: Expect::Passes,
            exception: None,
            custodian: false,
            ns_labels: &[],
            in_cluster: false,
            fate: Fate::Dials,
        },
        Row {
            name: "deny-check-only",
            policies: vec![deny(
                "deny-check-only",
                json!({"matchLabels": {CHECK_LABEL.0: CHECK_LABEL.1}}),
            )],
            harness_reaches: true,
            expect: Expect::Refused(vec![
                "warning: provider: NetworkPolicy \"deny-check-only\" limits the egress of the check pod, and the Harness pods are not under it".to_owned(),
                format!("NetworkPolicy \"deny-check-only\" selects the check pod, not the Harness pods, and allows it no egress to {addr}: a Turn is not refused; allow that egress for the check pod's labels (app.kubernetes.io/name=jr2-provider-preflight)"),
            ], format!("remove NetworkPolicy \"deny-check-only\" (it selects the check pod, not the Harness pods), or allow the check pod's labels (app.kubernetes.io/name=jr2-provider-preflight) egress to {addr} (TCP) in it, then run jr2 up again")),
            exception: Some(
                "a policy that selects the check pod alone: the check fails where a Turn passes, and says so by name",
            ),
            custodian: false,
            ns_labels: &[],
            in_cluster: false,
            fate: Fate::Dials,
        },
        Row {
            name: "deny-all",
            policies: vec![deny("deny-all", json!({}))],
            harness_reaches: false,
            expect: Expect::Refused(vec![both("deny-all")], allow_harness("deny-all")),
            exception: None,
            custodian: false,
            ns_labels: &[],
            in_cluster: false,
            fate: Fate::Dials,
        },
        Row {
            name: "deny-all-custodian",
            policies: vec![deny("deny-all", json!({}))],
            harness_reaches: false,
            // The Custodian's connect is refused in the check pod: its 502 names the policy as the probe's would.
            expect: Expect::Refused(vec![
                format!("jr2 custodian: {addr} could not be reached"),
                both("deny-all"),
            ], allow_harness("deny-all")),
            exception: None,
            custodian: true,
            ns_labels: &[],
            in_cluster: false,
            fate: Fate::Dials,
        },
        // Pod Security `restricted` on the namespace: the Harness pod (restricted as it is) runs and reaches the
        // provider, and the check pod, restricted by the driver, is admitted and passes.
        Row {
            name: "restricted",
            ns_labels: &[("pod-security.kubernetes.io/enforce", "restricted")],
            policies: vec![],
            in_cluster: false,
            fate: Fate::Dials,
            harness_reaches: true,
            expect: Expect::Passes,
            exception: None,
            custodian: false,
        },
        // A provider that runs in the cluster, behind an Ingress policy that admits the Harness pods by their labels:
        // the check pod carries them, so it is admitted as a Turn is.
        Row {
            name: "ingress-harness",
            ns_labels: &[],
            policies: vec![ingress_from("from-harness", harness_labels())],
            in_cluster: true,
            fate: Fate::Dials,
            harness_reaches: true,
            expect: Expect::Passes,
            exception: None,
            custodian: false,
        },
        // ... and behind one that admits other pods only: a Turn is refused, and so is the check.
        Row {
            name: "ingress-others",
            ns_labels: &[],
            policies: vec![ingress_from("from-others", json!({"app": "someone-else"}))],
            in_cluster: true,
            fate: Fate::Dials,
            harness_reaches: false,
            expect: Expect::NotReached("PROVIDER_UNREACHABLE"),
            exception: None,
            custodian: false,
        },
        // A namespace that refuses everyone (a quota of no pods): a Harness pod's dry run is refused, and the
        // preflight stops with the line that says the namespace refuses a Harness pod as well.
        Row {
            name: "refuses-everyone",
            ns_labels: &[],
            policies: vec![json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "no-pods"},
                "spec": {"hard": {"pods": "0"}}})],
            in_cluster: false,
            fate: Fate::DryRun,
            harness_reaches: false,
            expect: Expect::Inadmissible,
            exception: None,
            custodian: false,
        },
    ];
    std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .iter()
            .map(|row| (row.name, s.spawn(move || run_row(row))))
            .collect();
        let mut failed = Vec::new();
        for (name, h) in handles {
            if h.join().is_err() {
                failed.push(name);
            }
        }
        assert!(failed.is_empty(), "rows failed: {failed:?} (see above)");
    });
    eprintln!(
        "the table's {} rows in {:.1} s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The start race (the table's last row): the dataplane in its default mode polices a new pod only once it has its
/// address, and its first packets go out before that. Measured with the Harness-like pod under a default-deny for
/// every pod: how long after its container starts it still connects. Then the preflight in the same namespace:
/// whether its one request met the policy is the race's; the row names it as the documented exception when it did not.
#[test]
fn the_default_mode_polices_a_new_pod_late() {
    let _g = alone();
    let cluster = &env().cluster;
    cluster.stop("kube-router").unwrap();
    cluster.start_component("kube-router-default-mode").unwrap();
    // The default mode back to the --netpol-default-deny one, whatever the test did.
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let c = &env().cluster;
            let _ = c.stop("kube-router-default-mode");
            let _ = c.start_component("kube-router");
        }
    }
    let _restore = Restore;
    let ns = namespace("np-race", &[]);
    apply(&ns, &egress_policy("deny-all", json!({}), json!([])));
    // The policy holds for a pod that runs already: the dialer of a first pod is refused.
    start_dialer(&ns, "settled", &provider_addr());
    cluster.wait_for(
        "a running pod to be refused under the policy",
        Duration::from_secs(90),
        || dials(&ns, "settled").last().is_some_and(|d| !d.ok()),
    );
    let mut windows = Vec::new();
    for i in 0..3 {
        let name = format!("race-{i}");
        start_dialer(&ns, &name, &provider_addr());
        let mut seen = Vec::new();
        cluster.wait_for(
            &format!("{name} to be refused"),
            Duration::from_secs(90),
            || {
                seen = dials(&ns, &name);
                seen.iter().any(|d| !d.ok())
            },
        );
        let refused = seen.iter().find(|d| !d.ok()).unwrap();
        let last_ok = seen.iter().take_while(|d| d.ok()).last().map(|d| d.ms);
        eprintln!(
            "{name}: connected until {last_ok:?} ms after its start, refused from {} ms ({})",
            refused.ms, refused.outcome
        );
        windows.push((last_ok, refused.ms));
    }
    // The race is there: a new pod's first dial connected, under a policy that denies it.
    assert!(
        windows.iter().any(|(ok, _)| ok.is_some()),
        "no new pod connected before it was policed: {windows:?}"
    );
    let run = run_plan(&direct_plan(&ns), &[]);
    eprintln!(
        "the preflight in the default mode, under a default-deny for every pod: exit {:?}, {}",
        run.code(),
        run.verdict()["models"][0]["code"]
    );
    if run.code() == Some(0) {
        eprintln!(
            "the documented exception: the probe's request left before the dataplane policed the check pod"
        );
    } else {
        assert!(
            run.lines()
                .iter()
                .any(|l| l.contains("NetworkPolicy \"deny-all\" selects the check pod")),
            "{}",
            run.stderr
        );
    }
    assert_no_pod_left(&ns);
}
