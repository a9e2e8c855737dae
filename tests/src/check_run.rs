//! A check pod's run as the cluster and the probe write it, for the driver's tests of the run (its pure step's unit
//! tests and `cluster_mock.rs`): container statuses as a 1.35 kubelet writes them, and the probe's JSON lines for
//! three models, written through the probe's own types.

use std::time::{Duration, SystemTime};

use jr2_probe::contract::outcome::Outcome;
use jr2_probe::contract::verdict::{ModelResult, Origin, Route, Verdict};
use jr2_probe::contract::{ApiKind, ProbeEvent};
use serde_json::{Value, json};

/// The three models a check pod of these runs checks, by index.
pub const MODELS: [&str; 3] = [
    "anthropic/claude-haiku-4-5",
    "vllm/Qwen/Qwen3-32B",
    "google/gemini-2.5-flash",
];

/// A container waiting, as a 1.35 kubelet writes its status.
pub fn c_waiting(name: &str, reason: &str, message: Option<&str>) -> Value {
    let mut w = json!({"reason": reason});
    if let Some(m) = message {
        w["message"] = json!(m);
    }
    json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": w}})
}

/// A container running.
pub fn c_running(name: &str) -> Value {
    json!({"name": name, "image": "x", "imageID": "", "ready": true, "started": true, "restartCount": 0,
           "state": {"running": {"startedAt": "2026-12-04T18:36:47Z"}}})
}

/// A container terminated, with its exit code and termination message.
pub fn c_terminated(name: &str, reason: &str, code: i32, message: Option<&str>) -> Value {
    let mut t = json!({"reason": reason, "exitCode": code, "startedAt": "2026-12-04T18:36:47Z",
                       "finishedAt": "2026-12-04T18:36:52Z"});
    if let Some(m) = message {
        t["message"] = json!(m);
    }
    json!({"name": name, "image": "x", "imageID": "", "ready": false, "restartCount": 0, "state": {"terminated": t}})
}

/// The result of model `i` of [`MODELS`] as the probe writes it: a catalog model through the Custodian.
pub fn model_result(i: usize, outcome: Outcome) -> ModelResult {
    let model = MODELS[i];
    let api = ApiKind::AnthropicMessages;
    let code = outcome.default_code();
    ModelResult {
        findings: Default::default(),
        model: model.to_owned(),
        id: model.split_once('/').unwrap().1.to_owned(),
        api,
        base_url: "https://api.anthropic.com".to_owned(),
        host: "api.anthropic.com".to_owned(),
        route: Route::Catalog {
            provider: "anthropic".to_owned(),
            via_custodian: true,
            key_env: "ANTHROPIC_API_KEY".to_owned(),
            key_held: true,
            gateway: false,
        },
        outcome,
        level: outcome.level(api),
        code,
        next_action: code.next_action().to_owned(),
        error: None,
        http_status: Some(200),
        stop_reason: None,
        tool_name: Some("probe".to_owned()),
        answer: None,
        max_tokens: 1024,
        elapsed_ms: 840 + i as u64,
        tries: Vec::new(),
    }
}

/// The probe's verdict on the three models, each ok.
pub fn verdict() -> Verdict {
    Verdict::new(
        Origin::Node {
            name: "worker-2".to_owned(),
        },
        SystemTime::now(),
        Duration::from_millis(900),
        (0..3).map(|i| model_result(i, Outcome::Ok)).collect(),
        Vec::new(),
    )
}

/// The probe's first line: it starts on `worker-2`, three models.
pub fn ev_start() -> ProbeEvent {
    ProbeEvent::start(
        Origin::Node {
            name: "worker-2".to_owned(),
        },
        3,
        Some(290_000),
    )
}

/// The probe starts model `i`.
pub fn ev_started(i: usize) -> ProbeEvent {
    ProbeEvent::ModelStarted {
        index: i,
        model: MODELS[i].to_owned(),
    }
}

/// The result of model `i`, ok.
pub fn ev_result(i: usize) -> ProbeEvent {
    ProbeEvent::Result {
        index: i,
        result: Box::new(model_result(i, Outcome::Ok)),
    }
}

/// The probe's last line: its verdict.
pub fn ev_summary() -> ProbeEvent {
    ProbeEvent::Summary {
        verdict: Box::new(verdict()),
    }
}
