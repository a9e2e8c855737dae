//! Whole runs of the driver on the real cluster: `run` with the Custodian beside the probe, `check`,
//! `--from-deployment` with a real Deployment, the dry run against the real API server's server-side dry run, the
//! skip, the stale sweep, two runs at once in one namespace.

use serde_json::json;

use crate::harness::*;

/// A plan of two placements and three models runs as the least-privilege user: the real PSA admits the check pods
/// in a `restricted` namespace, the real kubelet starts the Custodian stand-in (a plain container) and the real
/// probe image, whose request reaches the provider through the Custodian, which swaps the Stand-in for the held key
/// (the model `auth` answers only to it). The verdict is ok, no pending line quotes the kubelet's `MissingClusterDNS`
/// (this cluster has no DNS, as many do not), and no pod is left.
#[test]
fn a_plan_passes_through_the_custodian_and_leaves_no_pod() {
    let _g = shared();
    let ns = namespace(
        "rc-pass",
        &[("pod-security.kubernetes.io/enforce", "restricted")],
    );
    let plan = plan(
        &ns,
        &[
            ("sandbox", harness_spec(), &["auth", "ok"]),
            ("instance", harness_spec(), &["ok@2"]),
        ],
    );
    let run = run_plan(&plan, &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let verdict = run.verdict();
    assert_eq!(verdict["ok"], json!(true));
    assert_eq!(
        verdict["pods"].as_array().map(Vec::len),
        Some(2),
        "{verdict:#}"
    );
    assert_passes(&run, &["auth", "ok", "ok@2"]);
    assert_no_non_blocking_reason(&run);
    for pod in verdict["pods"].as_array().unwrap() {
        assert_eq!(
            pod["node"],
            json!("jr2-node"),
            "it ran on the real node: {pod:#}"
        );
    }
    assert_no_pod_left(&ns);
}

/// Without the Custodian's swap the key is the Stand-in, which the provider refuses: the check fails as a Turn
/// would (the model `auth` answers 401 to anything but the held key), and the lines name the held secret.
#[test]
fn a_stand_in_that_reaches_the_provider_fails_as_a_turn_does() {
    let _g = shared();
    let ns = namespace("rc-standin", &[]);
    let mut spec = harness_spec();
    // No proxy: the request goes direct, with the Stand-in.
    spec["containers"][0]["env"] = json!([
        {"name": "JR2_PROVIDER_API_KEY", "value": "jr2-held-JR2_PROVIDER_API_KEY"}
    ]);
    let run = run_plan(&plan(&ns, &[("sandbox", spec, &["auth"])]), &[]);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("HTTP 401"), "{}", run.stderr);
    assert!(!run.stderr.contains(GOOD_KEY) && !run.stdout.contains(GOOD_KEY));
    assert_no_pod_left(&ns);
}

/// `jr2-preflight check` from a pod of the real cluster: the endpoint, the model, the key as a Secret reference.
#[test]
fn check_runs_from_a_pod_with_the_key_as_a_secret_reference() {
    let _g = shared();
    let ns = namespace(
        "rc-check",
        &[("pod-security.kubernetes.io/enforce", "restricted")],
    );
    let provider = env().provider.clone();
    let run = driver(
        As::User,
        &[
            "check",
            "--base-url",
            &provider,
            "--model",
            "auth",
            "--model",
            "ok",
            "--api-key-secret",
            "jr2-held-secrets/JR2_PROVIDER_API_KEY",
            "-n",
            &ns,
            "--probe-image",
            &probe_image(),
            "-o",
            "json",
            "--timeout",
            "120s",
        ],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let verdict = run.verdict();
    assert_eq!(verdict["pods"][0]["node"], json!("jr2-node"));
    assert!(
        run.stderr.contains("custom/auth completed a tool call"),
        "{}",
        run.stderr
    );
    assert_no_pod_left(&ns);
}

/// `--from-deployment`: the placement and the Custodian come from a real Deployment's pod template (read through
/// the apps API as the least-privilege user), not from the plan.
#[test]
fn from_deployment_takes_the_placement_of_a_real_deployment() {
    let _g = shared();
    let ns = namespace("rc-deploy", &[]);
    let mut template = harness_spec();
    template["containers"][0]["command"] = json!(["/nonexistent"]);
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "jr2-instance-harness", "namespace": ns},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "harness"}},
            "template": {"metadata": {"labels": {"app": "harness"}}, "spec": template}
        }
    });
    env()
        .cluster
        .kubectl_stdin(&["apply", "-f", "-"], &deployment.to_string());
    // The plan's own spec could not be scheduled: the Deployment's must be the one used.
    let mut stale = harness_spec();
    stale["nodeSelector"] = json!({"jr2.test/pool": "nowhere"});
    let run = run_plan(
        &plan(&ns, &[("instance-harness", stale, &["auth"])]),
        &[
            "--from-deployment",
            "jr2-instance-harness",
            "--timeout",
            "60s",
        ],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["auth"]);
    assert_no_pod_left(&ns);
}

/// The dry run's pods are what the real API server accepts: its server-side dry run (admission included: Pod
/// Security at `restricted`, the ServiceAccount plugin) takes every document, and nothing is created.
#[test]
fn the_dry_run_pods_pass_the_real_server_side_dry_run() {
    let _g = shared();
    let ns = namespace(
        "rc-dry",
        &[("pod-security.kubernetes.io/enforce", "restricted")],
    );
    let plan = plan(
        &ns,
        &[
            ("sandbox", harness_spec(), &["ok"]),
            ("instance", harness_spec(), &["ok"]),
        ],
    );
    let path = write_plan(&plan);
    let run = driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "--dry-run"],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.matches("kind: Pod").count(), 2, "{}", run.stdout);
    let stdout = env()
        .cluster
        .server_dry_run(&ns, &run.stdout)
        .unwrap_or_else(|e| panic!("the real API server refused the dry run's pods: {e}"));
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        env().cluster.pods(&ns, MANAGED).is_empty(),
        "a dry run creates nothing"
    );
}

/// The skip: one warning line, exit 0, nothing created.
#[test]
fn the_skip_creates_nothing() {
    let _g = shared();
    let ns = namespace("rc-skip", &[]);
    let run = run_plan(
        &plan(&ns, &[("sandbox", harness_spec(), &["ok"])]),
        &["--skip-provider-preflight"],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.lines().len(), 1, "{}", run.stderr);
    assert!(run.lines()[0].starts_with("warning: "), "{}", run.stderr);
    assert!(env().cluster.pods(&ns, MANAGED).is_empty());
}

/// The stale sweep on the real cluster: a check pod of the Instance past its deadline (a driver killed hard left
/// it) is deleted by the next run; a check pod of another Instance is not touched.
#[test]
fn the_next_run_sweeps_a_stale_check_pod() {
    let _g = shared();
    let ns = namespace("rc-sweep", &[]);
    let stale = |name: &str, instance: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "namespace": ns,
                "labels": {"app.kubernetes.io/managed-by": "jr2-preflight", "app.kubernetes.io/name": "jr2-provider-preflight",
                           "jr2.dev/instance": instance, "jr2.dev/preflight-run": "stale00000"},
                "annotations": {"jr2.dev/preflight-deadline": "2020-01-01T00:00:00.000Z"}
            },
            "spec": {"containers": [{"name": "p", "image": "registry.k8s.io/pause:3.10", "imagePullPolicy": "Never"}],
                     "terminationGracePeriodSeconds": 0}
        })
        .to_string()
    };
    env().cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &stale("jr2-preflight-stale-mine", &ns),
    );
    env().cluster.kubectl_stdin(
        &["apply", "-f", "-"],
        &stale("jr2-preflight-stale-other", "another"),
    );
    let run = run_plan(&plan(&ns, &[("sandbox", harness_spec(), &["ok"])]), &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let cluster = &env().cluster;
    cluster.wait_for(
        "the stale pod to be gone",
        std::time::Duration::from_secs(60),
        || {
            let out = cluster.kubectl(&["-n", &ns, "get", "pods", "-o", "name"]);
            !out.contains("jr2-preflight-stale-mine")
        },
    );
    let out = cluster.kubectl(&["-n", &ns, "get", "pods", "-o", "name"]);
    assert!(
        out.contains("jr2-preflight-stale-other"),
        "another Instance's pod is left alone: {out}"
    );
    cluster.kubectl(&[
        "-n",
        &ns,
        "delete",
        "pod",
        "jr2-preflight-stale-other",
        "--wait=false",
    ]);
}

/// Two runs of one plan at once in one namespace: each its own pods (run ids), both pass, neither deletes the
/// other's pods, nothing is left.
#[test]
fn two_runs_at_once_in_one_namespace() {
    let _g = shared();
    let ns = namespace("rc-twice", &[]);
    let path = write_plan(&plan(
        &ns,
        &[("sandbox", harness_spec(), &["ok-delay-1500", "ok"])],
    ));
    let args = ["run", "--plan", path.to_str().unwrap(), "-o", "json"];
    let started = std::time::Instant::now();
    let a = spawn_driver(As::User, &args);
    let b = spawn_driver(As::User, &args);
    let deadline = std::time::Duration::from_secs(180);
    let (a, b) = (finish(a, started, deadline), finish(b, started, deadline));
    for run in [&a, &b] {
        assert_eq!(run.code(), Some(0), "{}", run.stderr);
        assert_passes(run, &["ok-delay-1500", "ok"]);
    }
    assert_ne!(a.verdict()["runId"], b.verdict()["runId"]);
    assert_no_pod_left(&ns);
}
