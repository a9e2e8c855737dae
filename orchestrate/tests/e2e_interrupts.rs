//! End to end with a fake cluster, the driver stopped from outside: the real `jr2-preflight` binary against
//! `jr2_testkit::kube` on loopback (the harness is `fake_cluster/mod.rs`).
//!
//! - Interrupted (SIGINT or SIGTERM) at 100 moments from a seeded PRNG (`JR2_E2E_SEED` replays them), in four lanes
//!   at once, each run with its own fake cluster: whatever the moment, the fake holds no check pod afterwards, every
//!   pod created was deleted with its `uid` precondition, and an interrupted run exits 130 (SIGINT) or 143 (SIGTERM)
//!   with the interrupted line last. The outcomes are counted and printed (run with `--nocapture`), so the spread of
//!   the moments shows.
//! - Killed (SIGKILL, which no handler sees) once its pod is created: the pod stays; once its deadline has passed,
//!   the next run of the same Instance sweeps it (a DELETE with its uid, before its own create), and leaves alone a
//!   pod of another Instance and a pod of the same Instance whose deadline is still ahead.

mod fake_cluster;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use fake_cluster::*;
use jr2_testkit::kube::{FakeKube, Scenario, UNSCHEDULABLE_TAINT_MEMORY};

const INTERRUPTED: &str = "error: provider preflight: interrupted; the check pods were deleted";

/// splitmix64: a seeded PRNG, so that a failing run can be replayed.
struct Prng(u64);

impl Prng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

const RUNS: usize = 100;
const LANES: usize = 4;

/// One run's moment and what came of it.
struct Outcome {
    run: usize,
    signal: &'static str,
    delay: Duration,
    kind: &'static str,
    line: String,
}

/// Whether the fake received a pod create (answered or not).
fn create_sent(kube: &FakeKube) -> bool {
    kube.requests()
        .iter()
        .any(|r| r.method == "POST" && r.path.ends_with("/pods"))
}

/// One run: a pod unschedulable for 300 ms, then two models (one answering after 1.5 s), `signal` sent `delay`
/// after the driver was started.
async fn interrupted_run(i: usize, seed: u64, delay: Duration, signal: &'static str) -> Outcome {
    let s = Setup::new(Scenario::UnschedulableThenScheduled {
        messages: vec![UNSCHEDULABLE_TAINT_MEMORY.to_owned()],
        each: Duration::from_millis(300),
    })
    .await;
    let plan = s.plan(&[("harness", &["ok-delay-1500", "ok"])]);
    let run = s
        .run_with(s.args(&plan, &[]), Vec::new(), Some((delay, signal)))
        .await;
    let at = format!(
        "run {i} (JR2_E2E_SEED={seed}), SIG{signal} at {} ms",
        delay.as_millis()
    );
    // Afterwards the fake holds no check pod, whatever the moment; each was deleted with its uid.
    s.assert_cleaned_up();
    let lines = run.lines();
    let created = s.kube.created();
    let probe_started = created
        .iter()
        .filter_map(|p| s.kube.pod_times(p).probe_started)
        .min();
    let kind = match (run.code(), run.signalled_at) {
        // Done before the signal came, or the signal came once the run's pods were done (the handler swallows it).
        (Some(0), _) => "finished first",
        (Some(130), Some(_)) if signal == "INT" => "interrupted",
        (Some(143), Some(_)) if signal == "TERM" => "interrupted",
        (None, Some(_)) => {
            // Killed by the signal's default action before the driver listened for it: the very first
            // milliseconds (exec, the arguments, the runtime), before anything reached the cluster.
            assert!(
                s.kube.requests().is_empty(),
                "{at}: killed before its handler, yet the cluster was contacted: {:#?}",
                s.kube.requests()
            );
            "killed before its handler"
        }
        other => panic!("{at}: unexpected exit {other:?}:\n{}", run.stderr),
    };
    let kind = if kind == "interrupted" {
        assert_eq!(lines.last(), Some(&INTERRUPTED), "{at}: {lines:#?}");
        let v = run.verdict();
        assert_eq!(v["ok"], false, "{at}: {v}");
        assert_eq!(
            v["exitCode"],
            run.code().unwrap(),
            "{at}: the process's code: {v}"
        );
        let signalled = run.signalled_at.expect("signalled");
        if created.is_empty() {
            // Stopped before the create: none was even sent.
            assert!(
                !create_sent(&s.kube),
                "{at}: a create was sent, none answered"
            );
            "interrupted before create"
        } else if probe_started.is_none_or(|t| t > signalled) {
            "interrupted while pending"
        } else {
            "interrupted while running"
        }
    } else {
        kind
    };
    let to_exit = run
        .signalled_at
        .map(|at| format!("{} ms", (run.ended - at).as_millis()))
        .unwrap_or_else(|| "-".to_owned());
    let create_at = created
        .first()
        .and_then(|p| s.kube.pod_times(p).created)
        .map(|t| format!("{} ms", (t - run.started).as_millis()))
        .unwrap_or_else(|| "-".to_owned());
    Outcome {
        run: i,
        signal,
        delay,
        kind,
        line: format!(
            "{kind}; pods created {} (at {create_at}), deleted {}; signal to exit {to_exit}",
            created.len(),
            s.kube.deleted().len()
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_at_random_moments_the_pods_are_always_deleted() {
    let seed: u64 = std::env::var("JR2_E2E_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x6a72_3270_7265);
    println!("interrupt seed {seed} (JR2_E2E_SEED replays it)");
    // Every moment drawn up front, in run order, so that a seed names the same moments whatever the lanes do.
    let mut rng = Prng(seed);
    let moments: Vec<(Duration, &'static str)> = (0..RUNS)
        .map(|_| {
            // On loopback the driver starts, listens, sweeps, lists the NetworkPolicies and creates within about
            // 10 ms (and `kill` itself takes a few to start): a quarter of the moments in the first 12 ms, a quarter
            // in the first 60 ms (the create, the pod pending), a quarter in the first 600 ms (pending, the probe
            // starting), a quarter over the whole run (running, done).
            let span = match rng.next() % 4 {
                0 => 12,
                1 => 60,
                2 => 600,
                _ => 3000,
            };
            let delay = Duration::from_millis(rng.next() % span);
            let signal = if rng.next().is_multiple_of(2) {
                "INT"
            } else {
                "TERM"
            };
            (delay, signal)
        })
        .collect();
    let began = Instant::now();
    let lanes: Vec<_> = (0..LANES)
        .map(|lane| {
            let mine: Vec<(usize, Duration, &'static str)> = moments
                .iter()
                .enumerate()
                .filter(|(i, _)| i % LANES == lane)
                .map(|(i, (d, s))| (i, *d, *s))
                .collect();
            tokio::spawn(async move {
                let mut out = Vec::new();
                for (i, delay, signal) in mine {
                    out.push(interrupted_run(i, seed, delay, signal).await);
                }
                out
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for lane in lanes {
        match lane.await {
            Ok(out) => outcomes.extend(out),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => panic!("a lane did not finish: {e}"),
        }
    }
    let wall = began.elapsed();
    outcomes.sort_by_key(|o| o.run);
    assert_eq!(outcomes.len(), RUNS);
    for o in &outcomes {
        println!(
            "run {}: SIG{} at {} ms: {}",
            o.run,
            o.signal,
            o.delay.as_millis(),
            o.line
        );
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &outcomes {
        *counts.entry(o.kind).or_default() += 1;
    }
    println!(
        "figure: {RUNS} interrupted runs in {LANES} lanes, wall {:.1} s: {counts:?}",
        wall.as_secs_f64()
    );
    // The handlers are installed before anything else: the default action can only have ended a run in its very
    // first milliseconds (checked per run: nothing reached the cluster).
    for o in outcomes
        .iter()
        .filter(|o| o.kind == "killed before its handler")
    {
        assert!(
            o.delay < Duration::from_millis(60),
            "run {} killed before its handler at {} ms",
            o.run,
            o.delay.as_millis()
        );
    }
}

// ---------------------------------------------------------------------------------------------------------------
// SIGKILL, then the sweep.

/// Writes a plan for `instance` with its own deadline and timeout, as `name` in the setup's folder.
fn plan_for(s: &Setup, name: &str, instance: &str, deadline: u64, timeout: u64) -> String {
    let mut plan = plan(&s.provider.base_url(), &[("harness", &["ok"])]);
    plan["instance"] = instance.into();
    plan["deadlineSeconds"] = deadline.into();
    plan["timeoutSeconds"] = timeout.into();
    let path = s.dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(&plan).unwrap()).unwrap();
    path.display().to_string()
}

/// Runs the driver until the fake holds the pod it creates, then kills it (SIGKILL: no handler runs, nothing is
/// deleted). The pod's name.
async fn killed_once_created(s: &Setup, plan: &str) -> String {
    let before = s.kube.created().len();
    let log = std::fs::File::create(s.dir.join(format!("driver-{before}.stderr"))).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(s.args(plan, &[]))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("run jr2-preflight");
    let created = s
        .kube
        .wait_for(Duration::from_secs(30), |k| k.created().len() > before)
        .await;
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait for jr2-preflight");
    assert!(
        created,
        "no pod created in 30 s; the driver said:\n{}",
        std::fs::read_to_string(s.dir.join(format!("driver-{before}.stderr"))).unwrap_or_default()
    );
    assert_eq!(status.code(), None, "killed, not exited: {status:?}");
    let name = s.kube.created()[before].clone();
    assert!(
        s.kube.pod(NS, &name).is_some(),
        "the pod of a killed driver stays"
    );
    name
}

fn uid_of(s: &Setup, name: &str) -> String {
    s.kube.pod(NS, name).expect("the pod")["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_owned()
}

/// When the sweep takes the pod for stale: its `creationTimestamp` plus its `activeDeadlineSeconds`, both the API
/// server's (issue 40, item 6).
fn stale_after(pod: &Value) -> SystemTime {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod.clone()).unwrap();
    let created = pod
        .metadata
        .creation_timestamp
        .expect("a creationTimestamp")
        .0;
    let active = pod
        .spec
        .and_then(|s| s.active_deadline_seconds)
        .expect("activeDeadlineSeconds");
    SystemTime::UNIX_EPOCH + Duration::from_secs((created.as_second() + active) as u64)
}

fn deadline_of(pod: &Value) -> SystemTime {
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod.clone()).unwrap();
    jr2_preflight::pod::deadline_of(&pod).expect("the deadline annotation")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_hard_its_pod_stays_until_the_next_run_sweeps_it() {
    // Pods that are never scheduled: they stay as created, whatever the time.
    let s = Setup::new(Scenario::Nothing).await;
    // Left alone by the sweep: a pod of another Instance, and one of the same Instance whose deadline (90 s) is
    // ahead. Created before the stale one, so that no sweep of theirs can see it past its deadline.
    let other = killed_once_created(&s, &plan_for(&s, "other.json", "e2e-other", 90, 20)).await;
    let fresh = killed_once_created(&s, &plan_for(&s, "fresh.json", "e2e", 90, 20)).await;
    // The stale one: a deadline 3 s on.
    let stale = killed_once_created(&s, &plan_for(&s, "stale.json", "e2e", 3, 1)).await;
    let stale_uid = uid_of(&s, &stale);
    let deadline = deadline_of(&s.kube.pod(NS, &stale).unwrap());
    assert!(deadline_of(&s.kube.pod(NS, &fresh).unwrap()) > deadline + Duration::from_secs(60));
    // The sweep measures on the API server's clock, from the pod's creation (here within the same second or the next).
    let deadline = deadline.max(stale_after(&s.kube.pod(NS, &stale).unwrap()));
    assert_eq!(s.kube.pods_matching(MANAGED).len(), 3);
    assert!(s.kube.deleted().is_empty(), "{:?}", s.kube.deleted());

    // The clock past the stale pod's deadline (whole seconds: at most 3 s on), bounded.
    let bound = Instant::now() + Duration::from_secs(10);
    while SystemTime::now() <= deadline {
        assert!(
            Instant::now() < bound,
            "the deadline {deadline:?} is not past in 10 s"
        );
        let left = deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default();
        tokio::time::sleep(left.min(Duration::from_millis(100)) + Duration::from_millis(1)).await;
    }

    // The next run of the same Instance, which runs to its end.
    s.kube.set_scenario(Scenario::AllOk);
    let plan = plan_for(&s, "next.json", "e2e", 90, 20);
    let run = s.run(s.args(&plan, &[])).await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_eq!(run.verdict()["ok"], true);
    let created = s.kube.created();
    assert_eq!(created.len(), 4, "{created:?}");
    let new = created[3].clone();

    // The sweep deleted the stale pod, by its uid, with no grace period, before the new run's create.
    assert!(s.kube.pod(NS, &stale).is_none(), "the stale pod is swept");
    let requests = s.kube.requests();
    let sweep = requests
        .iter()
        .find(|r| r.method == "DELETE" && r.path.ends_with(&format!("/pods/{stale}")))
        .expect("a DELETE of the stale pod");
    assert_eq!(
        sweep.body["preconditions"]["uid"],
        stale_uid.as_str(),
        "{sweep:?}"
    );
    assert_eq!(sweep.body["gracePeriodSeconds"], 0, "{sweep:?}");
    let create = requests
        .iter()
        .find(|r| r.method == "POST" && r.body["metadata"]["name"] == new.as_str())
        .expect("the new run's create");
    assert!(sweep.at < create.at, "swept before the new create");

    // The other Instance's pod and the fresh one are left; the new run's own pod is deleted; nothing else is.
    for kept in [&other, &fresh] {
        assert!(
            !requests
                .iter()
                .any(|r| r.method == "DELETE" && r.path.ends_with(&format!("/pods/{kept}"))),
            "{kept} is left alone"
        );
    }
    let mut left: Vec<String> = s
        .kube
        .pods_matching(MANAGED)
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    left.sort();
    let mut expected = vec![other.clone(), fresh.clone()];
    expected.sort();
    assert_eq!(left, expected, "only the pods left on purpose remain");
    let mut deleted = s.kube.deleted();
    deleted.sort();
    let mut expected = vec![stale.clone(), new.clone()];
    expected.sort();
    assert_eq!(deleted, expected);
}
