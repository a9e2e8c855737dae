//! The probe's protocol, read: its JSON lines (`jr2-probe run` writes one event per line on stdout) and its
//! termination message (its compact summary), as far as the driver cares.

use serde_json::Value;

use jr2_probe::run::Summary;
use jr2_probe::verdict::{ModelResult, Verdict};

/// One probe log line, as far as the driver cares.
pub(super) enum ProbeLine {
    /// `modelStarted`: the model of this index.
    ModelStarted(usize),
    /// `result`: the model of this index, and its result.
    Result(usize, Box<ModelResult>),
    /// `summary`: the probe's whole verdict.
    Summary(Box<Verdict>),
    /// Anything else (`start`, `try`, a line that is not the probe's).
    Other,
}

/// Reads one line of the probe's log.
pub(super) fn parse_probe_line(line: &str) -> ProbeLine {
    let Ok(mut v) = serde_json::from_str::<Value>(line) else {
        return ProbeLine::Other;
    };
    let index = v
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok());
    match (v.get("event").and_then(Value::as_str), index) {
        (Some("modelStarted"), Some(i)) => ProbeLine::ModelStarted(i),
        (Some("result"), Some(i)) => serde_json::from_value(v["result"].take())
            .map_or(ProbeLine::Other, |r| ProbeLine::Result(i, Box::new(r))),
        (Some("summary"), _) => serde_json::from_value(v["verdict"].take())
            .map_or(ProbeLine::Other, |s| ProbeLine::Summary(Box::new(s))),
        _ => ProbeLine::Other,
    }
}

/// The compact summary in a termination message; with `FallbackToLogsOnError`, the `summary` line of the log tail.
pub(super) fn parse_termination(message: &str) -> (Option<Summary>, Option<Box<Verdict>>) {
    if let Ok(s) = serde_json::from_str::<Summary>(message.trim()) {
        return (Some(s), None);
    }
    let verdict = message
        .lines()
        .rev()
        .find_map(|l| match parse_probe_line(l) {
            ProbeLine::Summary(v) => Some(v),
            _ => None,
        });
    (None, verdict)
}
