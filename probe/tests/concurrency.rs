//! How many models the probe checks at once, by default: every model of one endpoint up to 16 (so 16 slow models
//! take about as long as one: `tests/bench/probe-bench.sh` times it), never more than 16 against one endpoint (what
//! protects a provider), and an endpoint's queue never holds back another endpoint's models.
//!
//! Nothing here is timed. The fake endpoint holds every request until `gate` of them have arrived, then answers
//! each (a tool call) and notes the most it ever held at once: a probe that sends fewer at once than the gate never
//! gets an answer and ends by its own timeout (a deadline, not a pass).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::probe;
use jr2_testkit::provider::openai_completions::handler as openai_handler;
use jr2_testkit::provider::{FakeProvider, Handler};

/// The fake's counters: requests arrived, now in flight, and the most in flight at once.
#[derive(Default)]
struct Gate {
    arrived: AtomicUsize,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
    opened: tokio::sync::Notify,
}

/// An OpenAI-compatible fake that answers no request before `gate` requests have arrived.
async fn gated(gate: usize) -> (FakeProvider, Arc<Gate>) {
    let state = Arc::new(Gate::default());
    let inner = openai_handler();
    let counters = state.clone();
    let handler: Handler = Arc::new(move |req, try_n| {
        let state = counters.clone();
        let inner = inner.clone();
        Box::pin(async move {
            let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            state.peak.fetch_max(now, Ordering::SeqCst);
            let opened = state.opened.notified();
            if state.arrived.fetch_add(1, Ordering::SeqCst) + 1 >= gate {
                state.opened.notify_waiters();
            } else {
                opened.await;
            }
            let answer = inner(req, try_n).await;
            state.in_flight.fetch_sub(1, Ordering::SeqCst);
            answer
        })
    });
    (FakeProvider::start_with(handler, None).await, state)
}

/// The check's own requests (the context check's `GET /v1/models` after each pass aside).
fn posts(fake: &FakeProvider) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
}

fn check_args(base: &str, models: usize) -> Vec<String> {
    let mut args: Vec<String> = ["check", "--base-url", base, "--timeout", "20s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for _ in 0..models {
        args.extend(["--model".to_owned(), "ok".to_owned()]);
    }
    args
}

async fn run(args: &[String]) -> common::Run {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    probe(&args, &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn sixteen_models_of_one_endpoint_go_at_once_by_default() {
    let (fake, gate) = gated(16).await;
    let out = run(&check_args(&fake.base_url(), 16)).await;
    assert_eq!(
        out.code, 0,
        "all 16 at once, or none answers: {}",
        out.stderr
    );
    assert_eq!(gate.peak.load(Ordering::SeqCst), 16);
}

#[tokio::test(flavor = "multi_thread")]
async fn one_endpoint_never_gets_more_than_sixteen_at_once() {
    let (fake, gate) = gated(16).await;
    let out = run(&check_args(&fake.base_url(), 24)).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(posts(&fake), 24);
    assert_eq!(
        gate.peak.load(Ordering::SeqCst),
        16,
        "the per-endpoint bound holds the other 8 back"
    );
    // --per-host moves the bound.
    let (fake, gate) = gated(4).await;
    let mut args = check_args(&fake.base_url(), 12);
    args.extend(["--per-host".to_owned(), "4".to_owned()]);
    let out = run(&args).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(gate.peak.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endpoint_s_queue_does_not_hold_back_another_endpoint() {
    // Pod mode, one run of two endpoints: 20 models of A (16 go, 4 wait for A) and 16 of B. The 4 waiting for A hold
    // none of the 32 places in all, so B's 16 go at once too; else B's gate never opens.
    let (a, gate_a) = gated(16).await;
    let (b, gate_b) = gated(16).await;
    let model = |base: String| serde_json::json!({"model": "vllm/ok", "source": "custom", "baseUrl": base, "api": "openai-completions"});
    let models: Vec<_> = std::iter::repeat_n(a.base_url(), 20)
        .chain(std::iter::repeat_n(b.base_url(), 16))
        .map(model)
        .collect();
    let spec = serde_json::json!({
        "schema": jr2_probe::spec::RUN_SPEC_SCHEMA, "timeoutSeconds": 20, "models": models
    });
    let term = std::env::temp_dir().join(format!("jr2-concurrency-{}", std::process::id()));
    let out = probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    let _ = std::fs::remove_file(&term);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(gate_a.peak.load(Ordering::SeqCst), 16);
    assert_eq!(gate_b.peak.load(Ordering::SeqCst), 16);
}
