//! The termination message: the compact summary the probe leaves in `/dev/termination-log`.
//!
//! The kubelet keeps at most [`TERMINATION_LIMIT`] bytes of it whatever the number of models, so its keys are
//! short; it is what the driver falls back on when the log stream was lost. Its schema is
//! `probe/schemas/summary.v1.schema.json`. How much detail of a verdict fits is the probe's business
//! (`jr2_probe::run`); the shape is here, for both sides.

use serde::{Deserialize, Serialize};

use super::outcome::{Code, Outcome};

/// The schema of the termination message.
pub const SUMMARY_SCHEMA: &str = "jr2.dev/provider-preflight-summary/v1";
/// The most the kubelet keeps of a termination message.
pub const TERMINATION_LIMIT: usize = 4096;

/// A model's entry in the termination message. Short keys: the message has 4096 bytes for every model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryModel {
    /// The model (dropped when room runs out; the driver knows the order).
    #[serde(rename = "m", default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The outcome.
    #[serde(rename = "o")]
    pub outcome: Outcome,
    /// The code.
    #[serde(rename = "c")]
    pub code: Code,
    /// The last HTTP status.
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Tries.
    #[serde(rename = "t")]
    pub tries: usize,
    /// Milliseconds.
    #[serde(rename = "ms")]
    pub elapsed_ms: u64,
    /// The `<error>`, cut to fit.
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The termination message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// [`SUMMARY_SCHEMA`].
    pub schema: String,
    /// No model failed.
    pub ok: bool,
    /// Models in the run.
    pub n: usize,
    /// Per model, in plan order; empty when even the shortest form did not fit (then `truncated`).
    pub models: Vec<SummaryModel>,
    /// Some detail was left out to fit.
    #[serde(default)]
    pub truncated: bool,
    /// The probe's warning lines about its run (a CA file it cannot read), so that a lost log does not lose them
    /// (issue 27, item 18); left out first when room runs out.
    #[serde(rename = "w", default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}
