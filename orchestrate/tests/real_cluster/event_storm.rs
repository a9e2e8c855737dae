//! An Event storm through the real API server (issue 40, item 9): a policy engine in audit mode writes thousands of
//! Warning Events about the check pod in seconds, each message different. The run counts them (one line per reason
//! and source, the count beside it), keeps its lines and its verdict small, and still names the scheduler's reason.
//!
//! The test cluster has no policy engine: the Events are created through the API as one would (`kubectl create`'s
//! request, from curl in the cluster's network namespace, many at once: kubectl creates one object at a time at its
//! client's 5 a second). Alone on the cluster (`alone()`): 4,000 writes load the etcd every other test shares, and
//! the Events are deleted at the end (one `DELETE` of the collection) so no later test lists them.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::*;

/// The audit Warnings: (source, how many), 4,084 in all, as the issue counted them.
const STORM: &[(&str, usize)] = &[("kyverno-admission", 3084), ("reportingController", 1000)];

/// The most posts in flight at once.
const IN_FLIGHT: &str = "32";

/// Deletes the namespace's Events when dropped, whatever the test did.
struct DeleteEvents(String);

impl Drop for DeleteEvents {
    fn drop(&mut self) {
        let out = env().cluster.kubectl_output(
            &env().cluster.info().admin_kubeconfig,
            &[
                "delete",
                "--raw",
                &format!("/api/v1/namespaces/{}/events", self.0),
            ],
            None,
        );
        if !out.status.success() {
            eprintln!(
                "the storm's Events were not deleted: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The admin's server, CA, certificate and key, from its kubeconfig.
fn admin_credentials() -> (String, PathBuf, PathBuf, PathBuf) {
    let info = env().cluster.info();
    let text = std::fs::read_to_string(&info.admin_kubeconfig).unwrap();
    let k: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
    let path = |v: &serde_yaml::Value| PathBuf::from(v.as_str().expect("a file's path"));
    let cluster = &k["clusters"][0]["cluster"];
    let user = &k["users"][0]["user"];
    (
        cluster["server"].as_str().unwrap().to_owned(),
        path(&cluster["certificate-authority"]),
        path(&user["client-certificate"]),
        path(&user["client-key"]),
    )
}

/// A string as curl's config file quotes it.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Creates `events` in `ns` through the API server, [`IN_FLIGHT`] at a time (curl `--parallel`, in the cluster's
/// network namespace, as the admin); returns how many were created (`201`).
fn post_events(ns: &str, events: &[Value]) -> usize {
    let (server, ca, crt, key) = admin_credentials();
    let url = format!("{server}/api/v1/namespaces/{ns}/events");
    let mut config = String::new();
    for (i, e) in events.iter().enumerate() {
        // A `next` with no transfer after it is an error that aborts the others.
        if i > 0 {
            config.push_str("next\n");
        }
        for (k, v) in [
            ("url", url.as_str()),
            ("cacert", ca.to_str().unwrap()),
            ("cert", crt.to_str().unwrap()),
            ("key", key.to_str().unwrap()),
            ("header", "Content-Type: application/json"),
            ("data-binary", &e.to_string()),
            ("output", "/dev/null"),
            ("write-out", "%{http_code}\\n"),
        ] {
            // write-out's `\n` is curl's own escape: not quoted again.
            let v = if k == "write-out" {
                format!("\"{v}\"")
            } else {
                quoted(v)
            };
            config.push_str(&format!("{k} = {v}\n"));
        }
    }
    let file = std::env::temp_dir().join(format!("jr2-real-storm-{}.curl", std::process::id()));
    std::fs::write(&file, config).unwrap();
    let out = env()
        .cluster
        .command("curl")
        .args([
            "--silent",
            "--show-error",
            "--parallel",
            "--parallel-max",
            IN_FLIGHT,
        ])
        .arg("--config")
        .arg(&file)
        .output()
        .expect("run curl");
    let _ = std::fs::remove_file(&file);
    let codes = String::from_utf8_lossy(&out.stdout);
    let created = codes.lines().filter(|c| *c == "201").count();
    if created != events.len() {
        let mut other: Vec<&str> = codes.lines().filter(|c| *c != "201").collect();
        other.dedup();
        eprintln!(
            "curl: {created} created, other answers {other:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    created
}

/// Item 9: 4,084 audit Warnings about a check pod that waits (`PolicyViolation`, each message different, from two
/// sources), posted within seconds through the real API server while the driver watches. The pod is placed and
/// waits on its Custodian, whose startup probe never passes: its containers' states carry no message, so the latest
/// Warning Event about it is what the driver weighs as why it waits (a pod the scheduler cannot place is said by
/// its `PodScheduled` condition, read before any Event: there a storm never reached the lines, even before). The
/// run says the kubelet's reason, ends at its `--timeout` as a pod that never started, and says the storm as one
/// line per source with its count; stderr stays a handful of lines and the verdict a few KB. Before: each audit
/// Warning a pending line of its own (4,086 stderr lines and a 487 KB verdict in the issue's run).
#[test]
fn an_event_storm_is_counted_not_shown() {
    let _g = alone();
    let test_started = Instant::now();
    let ns = namespace("rc-event-storm", &[]);
    let _delete = DeleteEvents(ns.clone());
    let cluster = &env().cluster;
    let mut spec = harness_spec();
    // The Custodian never ready: the probe container never starts, the kubelet says why (`Unhealthy`) every second.
    spec["containers"][1] = custodian(&["--never-ready"]);
    spec["containers"][1]["startupProbe"] = json!({"httpGet": {"path": "/healthz", "port": 15021},
        "periodSeconds": 1, "failureThreshold": 600});
    let path = write_plan(&plan(&ns, &[("sandbox", spec, &["ok"])]));
    let (child, started) = run_until_check_pod(As::User, &path, "30s", &ns);
    let pod = CheckPodEvents::of(&ns);
    let events: Vec<Value> = STORM
        .iter()
        .flat_map(|(source, n)| (0..*n).map(move |i| (*source, i)))
        .map(|(source, i)| {
            pod.warning(
                &format!("{source}-{i}"),
                "PolicyViolation",
                source,
                &format!("policy require-team/check-{i} fail: validation error: label team is required (rule {source}-{i})"),
            )
        })
        .collect();
    let total: usize = STORM.iter().map(|(_, n)| n).sum();
    let posting = Instant::now();
    let created = post_events(&ns, &events);
    let posted_in = posting.elapsed();
    eprintln!(
        "the storm: {created} Events created in {:.1} s, {:.1} s after the driver started",
        posted_in.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(created, total, "every Event created");
    // The driver's watch has them all well before its deadline (30 s): else the counts below prove nothing.
    assert!(
        started.elapsed() < Duration::from_secs(24),
        "the storm took {posted_in:?}, {:?} after the driver started: too late for a 30 s run",
        started.elapsed()
    );
    let run = finish(child, started, Duration::from_secs(90));
    let verdict_bytes = run.stdout.len();
    eprintln!(
        "the run: {} stderr lines, a {verdict_bytes}-byte verdict, {:.1} s; the test {:.1} s",
        run.lines().len(),
        started.elapsed().as_secs_f64(),
        test_started.elapsed().as_secs_f64()
    );
    // A pod that never started: exit 1 at the timeout, its code, and the kubelet's reason as the last.
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_NOT_STARTED", "{v}");
    let lines = run.lines();
    assert!(lines.len() < 10, "{lines:#?}");
    let pending: Vec<&&str> = lines.iter().filter(|l| l.starts_with(PENDING)).collect();
    assert_eq!(
        pending,
        [&format!(
            "{PENDING}Unhealthy: Startup probe failed: HTTP probe failed with statuscode: 503"
        )],
        "the kubelet's reason, once: {lines:#?}"
    );
    let error = lines
        .iter()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("an error line: {lines:#?}"));
    assert!(
        error.starts_with(
            "error: provider preflight: the check pod did not start in 30 s — last reason Unhealthy: Startup probe failed"
        ),
        "{lines:#?}"
    );
    // The storm, counted: one line per reason and source, under the failure.
    let counted: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains("Warning Events"))
        .collect();
    insta::assert_snapshot!(counted.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n"), @r"
      - 3084 Warning Events PolicyViolation from kyverno-admission (not why the check pod waits)
      - 1000 Warning Events PolicyViolation from reportingController (not why the check pod waits)
    ");
    assert!(
        lines
            .iter()
            .filter(|l| !l.contains("Warning Events"))
            .all(|l| !l.contains("PolicyViolation") && !l.contains("require-team")),
        "{lines:#?}"
    );
    assert_eq!(
        v["pods"][0]["failure"],
        json!(
            lines
                .iter()
                .skip_while(|l| !l.starts_with("error:"))
                .take(1 + counted.len())
                .collect::<Vec<_>>()
        ),
        "the verdict's failure is the lines"
    );
    // The verdict stays small: before, it carried every Event (487 KB).
    assert!(verdict_bytes < 64 << 10, "{verdict_bytes} bytes");
    assert_no_pod_left(&ns);
    eprintln!("the test: {:.1} s", test_started.elapsed().as_secs_f64());
}
