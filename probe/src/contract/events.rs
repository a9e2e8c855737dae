//! The probe's JSON lines: what `jr2-probe run` writes on stdout while it checks, and the driver reads back.
//!
//! One object per line, tagged by `event`: the run started, warnings about the run, a model started, a try ended, a
//! model's result, then the summary with the whole verdict. [`ProbeEvent`] is the one type both sides use: the probe serializes it
//! ([`ProbeEvent::to_line`]), the driver and the tests deserialize it ([`ProbeEvent::from_line`]). Its schema is
//! `probe/schemas/events.v1.schema.json`.

use serde::{Deserialize, Serialize};

use super::verdict::{ModelResult, Origin, Try, Verdict};

/// The schema of the JSON lines (the `schema` of the `start` line).
pub const EVENTS_SCHEMA: &str = "jr2.dev/provider-preflight-events/v1";

/// One line of the probe's stdout in pod mode.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "event",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ProbeEvent {
    /// The run started: the first line.
    Start {
        /// [`EVENTS_SCHEMA`].
        schema: String,
        /// The probe's version.
        probe_version: String,
        /// Where the check runs.
        origin: Origin,
        /// Models in the run.
        models: usize,
        /// Milliseconds the probe gives itself before the pod's deadline (its margin taken off); `null` without
        /// a deadline.
        budget_ms: Option<u64>,
    },
    /// A warning about the run itself, before any model's events: a CA file of the environment that cannot be
    /// used (the others are trusted), a proxy variable that is not a URL, a deadline that is not a time.
    Warning {
        /// The line, as the probe prints it (`warning: ...`).
        line: String,
    },
    /// A model's check started.
    ModelStarted {
        /// The model's index in the run spec.
        index: usize,
        /// The model, as the run spec names it.
        model: String,
    },
    /// One HTTP try of a model ended.
    Try {
        /// The model's index.
        index: usize,
        /// The model.
        model: String,
        /// The try.
        #[serde(rename = "try")]
        attempt: Try,
    },
    /// A model has waited this long for its verdict (at the run spec's `waitingNoteSeconds`, then at that pace):
    /// the driver prints [`crate::contract::render::waiting`] for it.
    Waiting {
        /// The model's index.
        index: usize,
        /// The model.
        model: String,
        /// Milliseconds the model has waited.
        waited_ms: u64,
        /// The model's deadline, in milliseconds.
        timeout_ms: u64,
        /// How far its try has come (issue 38, item 4); absent from an older probe: `noAnswer`.
        #[serde(default)]
        stage: WaitStage,
    },
    /// A model's result (once per model, in completion order).
    Result {
        /// The model's index.
        index: usize,
        /// The result.
        result: Box<ModelResult>,
    },
    /// The whole verdict: the last line.
    Summary {
        /// The verdict.
        verdict: Box<Verdict>,
    },
}

impl ProbeEvent {
    /// The `start` line of a run of this probe.
    pub fn start(origin: Origin, models: usize, budget_ms: Option<u64>) -> Self {
        ProbeEvent::Start {
            schema: EVENTS_SCHEMA.to_owned(),
            probe_version: env!("CARGO_PKG_VERSION").to_owned(),
            origin,
            models,
            budget_ms,
        }
    }

    /// The event as one line of JSON, without the newline. Keys come in the order of a `serde_json` map (sorted,
    /// the default build), which is how these lines have always been written.
    pub fn to_line(&self) -> String {
        serde_json::to_value(self)
            .and_then(|v| serde_json::to_string(&v))
            .unwrap_or_default()
    }

    /// Reads one line; `None` when it is not one of these events (a log line of another kind).
    pub fn from_line(line: &str) -> Option<Self> {
        serde_json::from_str(line).ok()
    }

    /// The model's index, for the events about one model.
    pub fn index(&self) -> Option<usize> {
        match self {
            ProbeEvent::ModelStarted { index, .. }
            | ProbeEvent::Try { index, .. }
            | ProbeEvent::Waiting { index, .. }
            | ProbeEvent::Result { index, .. } => Some(*index),
            ProbeEvent::Start { .. } | ProbeEvent::Warning { .. } | ProbeEvent::Summary { .. } => {
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::api_kind::ApiKind;
    use crate::contract::outcome::Outcome;
    use crate::contract::verdict::{Route, Timings};
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    fn result() -> ModelResult {
        ModelResult {
            base_url: "http://10.0.0.5:8000/v1".into(),
            host: "10.0.0.5:8000".into(),
            route: Route::Custom {
                api_key_set: true,
                max_tokens_set: true,
            },
            http_status: Some(200),
            tool_name: Some("probe".into()),
            max_tokens: 1024,
            elapsed_ms: 812,
            tries: vec![attempt()],
            ..ModelResult::test(
                "vllm/Qwen/Qwen3-32B",
                ApiKind::OpenAiCompletions,
                Outcome::Ok,
            )
        }
    }

    fn attempt() -> Try {
        Try {
            n: 1,
            status: Some(200),
            outcome: Outcome::Ok,
            wait_asked_ms: None,
            wait_taken_ms: 0,
            timings: Timings {
                dns_ms: Some(1),
                tls_ms: None,
                connect_ms: Some(2),
                first_byte_ms: Some(300),
                tool_call_ms: Some(800),
                total_ms: 812,
            },
        }
    }

    /// The lines as `run.rs` wrote them with `json!` literals before this type existed: byte for byte the same.
    #[test]
    fn lines_are_byte_identical_to_the_json_literals_they_replace() {
        let origin = Origin::Node {
            name: "worker-2".into(),
        };
        let r = result();
        let verdict = Verdict::new(
            origin.clone(),
            UNIX_EPOCH + Duration::from_secs(1_796_409_407),
            Duration::from_millis(900),
            vec![r.clone()],
            vec!["provider: vllm/Qwen/Qwen3-32B completed a tool call (812 ms)".into()],
        );
        let old = |v: serde_json::Value| serde_json::to_string(&v).unwrap();
        let cases = [
            (
                ProbeEvent::start(origin.clone(), 3, Some(290_000)),
                old(
                    json!({"event": "start", "schema": EVENTS_SCHEMA, "probeVersion": env!("CARGO_PKG_VERSION"),
                           "origin": origin, "models": 3, "budgetMs": Some(290_000u64)}),
                ),
            ),
            (
                ProbeEvent::start(Origin::ThisMachine, 0, None),
                old(
                    json!({"event": "start", "schema": EVENTS_SCHEMA, "probeVersion": env!("CARGO_PKG_VERSION"),
                           "origin": Origin::ThisMachine, "models": 0, "budgetMs": None::<u64>}),
                ),
            ),
            (
                ProbeEvent::ModelStarted {
                    index: 1,
                    model: r.model.clone(),
                },
                old(json!({"event": "modelStarted", "index": 1, "model": r.model})),
            ),
            (
                ProbeEvent::Try {
                    index: 1,
                    model: r.model.clone(),
                    attempt: attempt(),
                },
                old(json!({"event": "try", "index": 1, "model": r.model, "try": attempt()})),
            ),
            (
                ProbeEvent::Result {
                    index: 2,
                    result: Box::new(r.clone()),
                },
                old(json!({"event": "result", "index": 2, "result": &r})),
            ),
            (
                ProbeEvent::Summary {
                    verdict: Box::new(verdict.clone()),
                },
                old(json!({"event": "summary", "verdict": &verdict})),
            ),
        ];
        for (event, line) in cases {
            assert_eq!(event.to_line(), line);
            assert_eq!(ProbeEvent::from_line(&line), Some(event));
        }
    }

    #[test]
    fn other_lines_are_not_events() {
        for line in [
            "",
            "not json",
            "{}",
            r#"{"event":"later"}"#,
            r#"{"event":"result","index":0}"#,
        ] {
            assert_eq!(ProbeEvent::from_line(line), None, "{line}");
        }
    }
}

/// How far a model's try has come when its waiting note is written (issue 38, item 4): the note says what the probe
/// knows, not a guess that the model loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WaitStage {
    /// No byte of an answer yet, not even its headers: a model that loads, or a request queued behind others.
    #[default]
    NoAnswer,
    /// The answer's headers came, and nothing of the model's yet.
    Headers,
    /// The model streams text, and no tool call has begun.
    Text,
    /// A tool call began, and the answer has not ended.
    ToolCall,
    /// No byte of an answer yet, and Ollama's `GET /api/ps`, asked when the note came, lists the model: it is loaded,
    /// so the request waits behind others for a slot (`OLLAMA_NUM_PARALLEL`), not for a load.
    OllamaLoaded,
    /// No byte of an answer yet, and Ollama's `GET /api/ps`, asked when the note came, does not list the model: Ollama
    /// loads it first (on its first request, or once a model it must unload has left).
    OllamaNotLoaded,
}
