//! The real kubelet's own failures, as the driver names them: a missing Secret or key
//! (`CreateContainerConfigError`), an image it cannot pull (there is no registry: the pull fails at once), a memory
//! limit crossed (`OOMKilled`), a Custodian whose startup probe never passes, and a kubelet warning that holds
//! nothing back (`DNSConfigForming`), which is never the pending reason.

use serde_json::json;

use crate::harness::*;

/// Runs `spec` with one model in a fresh namespace `ns` (with `extra` flags, a 60 s timeout): it fails (exit 1), an
/// `error:` line holds every one of `named`, and no pod is left; returns the run.
fn fails_naming(ns: &str, spec: serde_json::Value, extra: &[&str], named: &[&str]) -> DriverRun {
    let _g = shared();
    let ns = namespace(ns, &[]);
    let mut args = vec!["--timeout", "60s"];
    args.extend_from_slice(extra);
    let started = std::time::Instant::now();
    let run = run_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]), &args);
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    // A cause that does not pass (a Secret that never comes, after its grace) fails well before the deadline.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(45),
        "{:?}: {}",
        started.elapsed(),
        run.stderr
    );
    assert!(
        run.lines()
            .iter()
            .any(|l| l.starts_with("error: ") && named.iter().all(|n| l.contains(n))),
        "{named:?} named in an error line: {}",
        run.stderr
    );
    assert_no_pod_left(&ns);
    run
}

/// The Harness spec with one more env entry from a Secret's key.
fn with_secret_env(secret: &str, key: &str) -> serde_json::Value {
    let mut spec = harness_spec();
    spec["containers"][0]["env"].as_array_mut().unwrap().push(
        json!({"name": "SENTRY_DSN", "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}),
    );
    spec
}

#[test]
fn a_missing_secret_is_named() {
    fails_naming(
        "rc-nosecret",
        with_secret_env("jr2-app", "sentry-dsn"),
        &[],
        &["\"jr2-app\""],
    );
}

/// Issue 40, item 15: a Secret that a secrets operator creates after the pod (here once the real kubelet has
/// refused the probe container for it, `CreateContainerConfigError`, which ended the run at once before) lets the
/// run pass, as a Harness pod would start: the driver waits a short grace, with a progress line.
#[test]
fn a_secret_created_after_the_pod_lets_the_check_pass() {
    let _g = shared();
    let ns = namespace("rc-latesecret", &[]);
    let path = write_plan(&plan(
        &ns,
        &[(
            "sandbox",
            with_secret_env("jr2-late", "sentry-dsn"),
            &["ok"],
        )],
    ));
    let started = std::time::Instant::now();
    let child = spawn_run(As::User, &path, "120s");
    let cluster = &env().cluster;
    cluster.wait_for(
        "the kubelet to refuse the probe container for the missing Secret",
        std::time::Duration::from_secs(90),
        || {
            cluster.pods(&ns, MANAGED).iter().any(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["state"]["waiting"]["reason"] == "CreateContainerConfigError")
            })
        },
    );
    cluster.kubectl(&[
        "-n",
        &ns,
        "create",
        "secret",
        "generic",
        "jr2-late",
        "--from-literal=sentry-dsn=https://errors.example.invalid/1",
    ]);
    let run = finish(child, started, std::time::Duration::from_secs(180));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["ok"]);
    assert!(
        run.lines().iter().any(|l| l.starts_with(PENDING)
            && l.contains("Secret \"jr2-late\" not found; waiting up to 20 s")),
        "the grace has its progress line: {}",
        run.stderr
    );
    assert_no_pod_left(&ns);
}

#[test]
fn a_missing_key_of_a_secret_is_named() {
    fails_naming(
        "rc-nokey",
        with_secret_env("jr2-held-secrets", "sentry-dsn"),
        &[],
        &["sentry-dsn"],
    );
}

/// The pull fails at once: the name resolves nowhere (the cluster's network namespace has no route out, so no
/// lookup leaves it). Issue 40, item 13: the real kubelet says the one pull that failed four times within the
/// driver's grace (its `Failed` Event with the error, its `Failed` Event `Error: ErrImagePull`, the container's
/// `ErrImagePull`, then its `ImagePullBackOff`); the driver says it once.
#[test]
fn an_image_that_does_not_pull_is_named() {
    let image = "registry.jr2.test/jr2/jr2-probe:does-not-exist";
    let run = fails_naming(
        "rc-nopull",
        harness_spec(),
        &["--probe-image", image],
        &[image],
    );
    let pending: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with(PENDING))
        .collect();
    assert_eq!(
        pending.len(),
        1,
        "the pull said once within the grace: {}",
        run.stderr
    );
    assert!(pending[0].contains(image), "{}", run.stderr);
    let reasons: Vec<String> = env()
        .cluster
        .events("rc-nopull")
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        reasons.iter().any(|m| m == "Error: ErrImagePull")
            && reasons
                .iter()
                .any(|m| m.starts_with("Back-off pulling image")),
        "the kubelet said the pull more than once (else this test proves nothing): {reasons:#?}"
    );
}

/// The Custodian allocates past its memory limit: the real kubelet reports `OOMKilled`, and the driver names the
/// Custodian and its limit.
#[test]
fn a_custodian_over_its_memory_limit_is_named() {
    let mut spec = harness_spec();
    spec["containers"][1] = custodian(&["--allocate-mib", "256"]);
    spec["containers"][1]["resources"]["limits"]["memory"] = json!("32Mi");
    fails_naming("rc-oom", spec, &[], &["custodian", "32Mi"]);
}

/// A Custodian that dies at start (an argument it does not know: exit code 2): a plain container beside the probe,
/// which the kubelet starts in the same sync and never restarts, so the probe is already waiting for it; the driver
/// names the Custodian, its exit code and its last log line, not the probe's proxy errors.
#[test]
fn a_custodian_that_dies_at_start_is_named() {
    let mut spec = harness_spec();
    spec["containers"][1] = custodian(&["--no-such-flag"]);
    fails_naming(
        "rc-dies",
        spec,
        &[],
        &[
            "the Custodian (custodian) exited with code 2",
            "unknown argument",
        ],
    );
}

/// A Custodian whose startup probe (the Harness spec's own: it keeps the Custodian a native sidecar) never passes: the probe container never starts (a native sidecar holds the
/// main containers back until it has started), and the pending line and the verdict at `--timeout` carry the real
/// kubelet's words for it (`Unhealthy: Startup probe failed: HTTP probe failed with statuscode: 503`).
#[test]
fn a_custodian_that_never_starts_holds_the_check_back() {
    let _g = shared();
    let ns = namespace("rc-notready", &[]);
    let mut spec = harness_spec();
    spec["containers"][1] = custodian(&["--never-ready"]);
    spec["containers"][1]["startupProbe"] = json!({"httpGet": {"path": "/healthz", "port": 15021}, "periodSeconds": 1, "failureThreshold": 600});
    let run = run_plan(
        &plan(&ns, &[("sandbox", spec, &["ok"])]),
        &["--timeout", "20s"],
    );
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        !run.lines()
            .iter()
            .any(|l| l.contains("completed a tool call")),
        "the probe never ran: {}",
        run.stderr
    );
    assert!(
        run.lines()
            .iter()
            .any(|l| l.starts_with(PENDING) && l.contains("Startup probe failed")),
        "the pod waits on its Custodian's startup probe: {}",
        run.stderr
    );
    assert!(
        run.lines()
            .iter()
            .any(|l| l.starts_with("error: ") && l.contains("Startup probe failed")),
        "the verdict says what the pod waited on: {}",
        run.stderr
    );
    assert_no_pod_left(&ns);
}

/// More nameservers than a resolver takes (the node's resolv.conf has one, the pod's `dnsConfig` adds three: the API
/// server refuses more than three in a spec, the kubelet merges them): the real kubelet warns `DNSConfigForming`
/// ("Nameserver limits were exceeded") and starts the pod all the same; the warning is never the pending line.
#[test]
fn dns_config_forming_is_never_the_pending_reason() {
    let _g = shared();
    let ns = namespace("rc-dns", &[]);
    let mut spec = harness_spec();
    spec["dnsPolicy"] = json!("Default");
    spec["dnsConfig"] = json!({"nameservers": ["10.77.0.2", "10.77.0.3", "10.77.0.4"]});
    let run = run_plan(&plan(&ns, &[("sandbox", spec, &["ok-delay-1500"])]), &[]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_no_non_blocking_reason(&run);
    let warned = env()
        .cluster
        .events(&ns)
        .iter()
        .any(|e| e["reason"] == "DNSConfigForming");
    assert!(
        warned,
        "the real kubelet warned DNSConfigForming (else this test proves nothing)"
    );
    assert_no_pod_left(&ns);
}

/// The ServiceAccount's `imagePullSecrets`: the real ServiceAccount admission gives them to a Harness pod that
/// names the account and lists none; the driver gives the same list to the check pod (which runs under no account).
#[test]
fn the_service_accounts_pull_secrets_reach_the_check_pod_as_admission_gives_them() {
    let _g = shared();
    let ns = namespace("rc-pullsecrets", &[]);
    let cluster = &env().cluster;
    cluster.kubectl_stdin(
        &["-n", &ns, "apply", "-f", "-"],
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "jr2-harness"},
                "imagePullSecrets": [{"name": "jr2-registry"}, {"name": "jr2-mirror"}]})
        .to_string(),
    );
    let mut spec = harness_spec();
    spec["serviceAccountName"] = json!("jr2-harness");
    // What admission gives a Harness pod of this spec.
    let harness_pod =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "harness"}, "spec": spec});
    let admitted: serde_json::Value = serde_json::from_str(&cluster.kubectl_stdin(
        &[
            "-n",
            &ns,
            "create",
            "--dry-run=server",
            "-o",
            "json",
            "-f",
            "-",
        ],
        &harness_pod.to_string(),
    ))
    .unwrap();
    let from_admission = admitted["spec"]["imagePullSecrets"].clone();
    assert_eq!(
        from_admission,
        json!([{"name": "jr2-registry"}, {"name": "jr2-mirror"}])
    );
    // What the driver gives the check pod (as its dry run prints it, resolved against the real account).
    let path = write_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]));
    let run = driver(
        As::User,
        &["run", "--plan", path.to_str().unwrap(), "-o", "json"],
    );
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let events = cluster.events(&ns);
    // The pulls are never needed (the image is on the node), so the kubelet warns that the Secrets are missing: a
    // warning that holds nothing back, and proof the pod carried them.
    let missing: Vec<&str> = events
        .iter()
        .filter(|e| e["reason"] == "FailedToRetrieveImagePullSecret")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        missing
            .iter()
            .any(|m| m.contains("jr2-registry") && m.contains("jr2-mirror")),
        "the check pod carried the account's pull secrets: {missing:?}"
    );
    assert_no_non_blocking_reason(&run);
    assert_no_pod_left(&ns);
}
