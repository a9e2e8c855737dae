//! Each row of issue 39's table on two real nodes, and the rows that were right already.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// Node B: its name, and its kubelet's component name.
const NODE_B: &str = "jr2-node-b";
const KUBELET_B: &str = "kubelet-b";

/// The Harness spec placed on node B: its label selected, its taint tolerated.
fn on_node_b() -> Value {
    let mut spec = harness_spec();
    spec["nodeSelector"] = json!({"jr2.dev/pool": "b"});
    spec["tolerations"] = json!([{"key": "jr2.dev/dedicated", "operator": "Equal", "value": "b", "effect": "NoSchedule"}]);
    spec
}

/// The node each check pod of a run's verdict was on, by placement.
fn nodes_of(run: &DriverRun) -> Vec<(String, String)> {
    run.verdict()["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["placement"].as_str().unwrap_or("").to_owned(),
                p["node"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Starts node B's kubelet again and waits until the node is Ready and untainted.
fn restart_kubelet_b() {
    let cluster = &env().cluster;
    cluster.start_component(KUBELET_B).unwrap();
    cluster.wait_for("node B to be Ready again", Duration::from_secs(90), || {
        env().cluster.node_ready(NODE_B)
    });
}

/// Node B's kubelet, stopped while it is held: started again (and B Ready) when it is dropped, a failed assertion's
/// unwinding included. Held under [`alone`], so no other test sees node B down, nor after a test that failed with
/// it down.
struct KubeletBStopped;

impl KubeletBStopped {
    fn stop() -> Self {
        env().cluster.stop(KUBELET_B).unwrap();
        Self
    }
}

impl Drop for KubeletBStopped {
    fn drop(&mut self) {
        restart_kubelet_b();
    }
}

#[test]
fn a_placement_that_selects_node_b_lands_on_b() {
    let _g = shared();
    let ns = namespace("rn-node-b", &[]);
    let run = run_plan(&plan(&ns, &[("pool-b", on_node_b(), &["ok"])]), &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["ok"]);
    assert_eq!(nodes_of(&run), [("pool-b".to_owned(), NODE_B.to_owned())]);
    assert_no_pod_left(&ns);
}

#[test]
fn two_placements_land_on_their_two_nodes_in_one_run() {
    let _g = shared();
    let ns = namespace("rn-two", &[]);
    let mut on_a = harness_spec();
    on_a["nodeSelector"] = json!({"kubernetes.io/hostname": "jr2-node"});
    let run = run_plan(
        &plan(
            &ns,
            &[
                ("pool-a", on_a, &["ok"]),
                ("pool-b", on_node_b(), &["ok-delay-200"]),
            ],
        ),
        &[],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["ok", "ok-delay-200"]);
    assert_eq!(
        nodes_of(&run),
        [
            ("pool-a".to_owned(), "jr2-node".to_owned()),
            ("pool-b".to_owned(), NODE_B.to_owned())
        ]
    );
    assert_no_pod_left(&ns);
}

/// Neither node fits: the 1.35 scheduler's words for two nodes, and the verdict at `--timeout`.
#[test]
fn the_schedulers_two_node_reason() {
    let _g = shared();
    let ns = namespace("rn-nowhere", &[]);
    let mut spec = harness_spec();
    spec["nodeSelector"] = json!({"jr2.dev/pool": "nowhere"});
    let run = run_plan(
        &plan(&ns, &[("sandbox", spec, &["ok"])]),
        &["--timeout", "10s"],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let lines: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with(PENDING) || l.starts_with("error: "))
        .collect();
    insta::assert_snapshot!("two_node_reason", lines.join("\n"));
    assert_no_pod_left(&ns);
}

/// The Harness spreads over zones the nodes do not label: a Harness pod stays Pending, and so does the check pod
/// (the field was dropped before: a false pass).
#[test]
fn a_spread_over_zones_no_node_labels_is_no_pass() {
    let _g = shared();
    let ns = namespace("rn-spread", &[]);
    let mut spec = harness_spec();
    spec["topologySpreadConstraints"] = json!([{
        "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "jr2-harness"}}
    }]);
    let run = run_plan(
        &plan(&ns, &[("sandbox", spec, &["ok"])]),
        &["--timeout", "10s"],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.lines().iter().any(|l| l.starts_with(PENDING)
            && l.contains("didn't match pod topology spread constraints (missing required label)")),
        "the scheduler's own reason: {}",
        run.stderr
    );
    assert!(
        !run.lines()
            .iter()
            .any(|l| l.contains("completed a tool call")),
        "{}",
        run.stderr
    );
    assert_no_pod_left(&ns);
}

/// Node B's kubelet stops: a check pod bound to B before the cluster notices is named as not started by B; a check
/// that runs on B when it stops ends when the node controller says so (long before `--timeout`), naming B; and once
/// the kubelet is back, B runs a check again. No pod is left on any of these paths.
#[test]
fn node_b_stops_answering_and_comes_back() {
    let _g = alone();

    // 1. The kubelet is down, the API still says Ready: the pod is bound to B and never started.
    let ns = namespace("rn-silent", &[]);
    let stopped = KubeletBStopped::stop();
    let run = run_plan(
        &plan(&ns, &[("pool-b", on_node_b(), &["ok"])]),
        &["--timeout", "12s"],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let error = "error: provider preflight: the check pod did not start in 12 s — it was scheduled to node jr2-node-b, which has not started it (its kubelet reported nothing of the pod)";
    assert!(run.lines().contains(&error), "{}", run.stderr);
    assert_eq!(run.verdict()["pods"][0]["code"], "PROVIDER_POD_NODE_LOST");
    assert_no_pod_left(&ns);
    drop(stopped);

    // 2. The kubelet stops mid-check: the node is named within the check's deadline.
    let ns = namespace("rn-lost", &[]);
    let path = write_plan(&plan(&ns, &[("pool-b", on_node_b(), &["ok-delay-100000"])]));
    let started = Instant::now();
    let child = spawn_run(As::User, &path, "110s");
    wait_for_probe_running(&ns);
    let down = KubeletBStopped::stop();
    let stopped = started.elapsed();
    let run = finish(child, started, Duration::from_secs(170));
    let took = started.elapsed();
    eprintln!(
        "node B named {:.1} s after its kubelet stopped (run {:.1} s)",
        (took - stopped).as_secs_f64(),
        took.as_secs_f64()
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    // The Node's own words, as the 1.35 node lifecycle controller writes them, and the model left unchecked.
    let named: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| {
            l.starts_with("error: provider preflight: the check pod's node ")
                || l.starts_with("  not checked: ")
        })
        .collect();
    insta::assert_snapshot!("node_b_lost", named.join("\n"));
    assert!(
        took < Duration::from_secs(110),
        "before --timeout: {took:?}"
    );
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_NODE_LOST");
    assert_eq!(v["pods"][0]["node"], NODE_B);
    assert_eq!(v["models"][0]["outcome"], "not_checked");
    assert_no_pod_left(&ns);

    // 3. Back: B runs a check again.
    drop(down);
    let ns = namespace("rn-back", &[]);
    let run = run_plan(&plan(&ns, &[("pool-b", on_node_b(), &["ok"])]), &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(nodes_of(&run), [("pool-b".to_owned(), NODE_B.to_owned())]);
    assert_no_pod_left(&ns);
}

/// A placement of a high priority class, on the first node, which a filler pod of priority 0 holds all but 5m of:
/// the check pod never preempts the filler (it still runs, no `Preempted` Event), and the run warns that a Harness pod
/// would have to.
#[test]
fn a_check_pod_never_preempts_and_says_a_harness_pod_would() {
    let _g = alone();
    let cluster = &env().cluster;
    let ns = namespace("rn-preempt", &[]);
    cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "jr2-high"}, "value": 1_000_000, "preemptionPolicy": "PreemptLowerPriority"})
        .to_string(),
    );
    // Room on the first node: its allocatable CPU less what its pods request.
    let node: Value =
        serde_json::from_str(&cluster.kubectl(&["get", "node", "jr2-node", "-o", "json"])).unwrap();
    let allocatable = millicores(node["status"]["allocatable"]["cpu"].as_str().unwrap());
    let pods: Value = serde_json::from_str(&cluster.kubectl(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        "spec.nodeName=jr2-node,status.phase!=Succeeded,status.phase!=Failed",
        "-o",
        "json",
    ]))
    .unwrap();
    let requested: u64 = pods["items"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|p| {
            let spec = &p["spec"];
            spec["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(spec["initContainers"].as_array().into_iter().flatten())
        })
        .filter_map(|c| c["resources"]["requests"]["cpu"].as_str())
        .map(millicores)
        .sum();
    let filler_cpu = allocatable - requested - 5;
    cluster.kubectl_stdin(
        &["-n", &ns, "apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "filler"},
                "spec": {"nodeSelector": {"kubernetes.io/hostname": "jr2-node"},
                         "automountServiceAccountToken": false,
                         "containers": [{"name": "filler", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": format!("{filler_cpu}m")}}}]}})
        .to_string(),
    );
    cluster.wait_for("the filler to run", Duration::from_secs(60), || {
        filler_phase(&ns) == "Running"
    });

    let mut spec = harness_spec();
    spec["priorityClassName"] = json!("jr2-high");
    spec["nodeSelector"] = json!({"kubernetes.io/hostname": "jr2-node"});
    let run = run_plan(
        &plan(&ns, &[("sandbox", spec, &["ok"])]),
        &["--timeout", "12s"],
    );
    assert_eq!(
        run.code(),
        Some(0),
        "a warning, not a failure: {}",
        run.stderr
    );
    let warning: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| {
            l.starts_with("warning: provider: the check pod could not run without evicting")
                || l.starts_with("  not checked: ")
        })
        .collect();
    insta::assert_snapshot!("would_preempt", warning.join("\n"));
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_WOULD_PREEMPT");
    assert_eq!(v["models"][0]["outcome"], "not_checked");
    assert_eq!(v["models"][0]["level"], "warning");

    // No harm: the filler still runs, and nothing was preempted.
    assert_eq!(filler_phase(&ns), "Running");
    let preempted: Vec<Value> = cluster
        .events(&ns)
        .into_iter()
        .filter(|e| e["reason"] == "Preempted" || e["reason"] == "Killing")
        .collect();
    assert!(preempted.is_empty(), "{preempted:#?}");
    assert_no_pod_left(&ns);
    cluster.kubectl(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "filler",
        "--grace-period=0",
        "--force",
        "--wait=false",
    ]);
}

fn filler_phase(ns: &str) -> String {
    env()
        .cluster
        .kubectl(&[
            "-n",
            ns,
            "get",
            "pod",
            "filler",
            "-o",
            "jsonpath={.status.phase}",
        ])
        .trim()
        .to_owned()
}

/// `2`, `1500m`, `0.5` in millicores.
fn millicores(q: &str) -> u64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap(),
        None => (q.parse::<f64>().unwrap() * 1000.0) as u64,
    }
}

/// A RuntimeClass whose scheduling names node B: the RuntimeClass admission gives the check pod (which copies
/// `runtimeClassName`) the class's node selector and toleration, as it gives a Harness pod.
#[test]
fn a_runtime_class_that_names_node_b_places_the_check_pod_there() {
    let _g = shared();
    let ns = namespace("rn-runtime-class", &[]);
    env().cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "jr2-pool-b"},
                "handler": "runc",
                "scheduling": {"nodeSelector": {"jr2.dev/pool": "b"},
                               "tolerations": [{"key": "jr2.dev/dedicated", "operator": "Equal", "value": "b", "effect": "NoSchedule"}]}})
        .to_string(),
    );
    let mut spec = harness_spec();
    spec["runtimeClassName"] = json!("jr2-pool-b");
    let run = run_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]), &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(nodes_of(&run), [("sandbox".to_owned(), NODE_B.to_owned())]);
    assert_no_pod_left(&ns);
}

/// Node B cordoned: a placement on B waits with the scheduler's reason and fails at `--timeout`, as before.
#[test]
fn a_cordoned_node_is_the_schedulers_reason() {
    let _g = alone();
    let cluster = &env().cluster;
    let ns = namespace("rn-cordon", &[]);
    cluster.kubectl(&["cordon", NODE_B]);
    let run = run_plan(
        &plan(&ns, &[("pool-b", on_node_b(), &["ok"])]),
        &["--timeout", "8s"],
    );
    cluster.kubectl(&["uncordon", NODE_B]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.lines()
            .iter()
            .any(|l| l.starts_with(PENDING) && l.contains("1 node(s) were unschedulable")),
        "{}",
        run.stderr
    );
    assert_no_pod_left(&ns);
}
