//! Pod mode: `jr2-probe run` in the check pod.
//!
//! Reads a [`RunSpec`], checks its models, and streams one JSON object per line on stdout as it goes (the run
//! started, a model started, a try, a model's result, then the summary with the whole verdict), so the driver can
//! print progress while the pod runs. It also writes a compact summary to the termination-message path
//! (`/dev/termination-log`, at most 4096 bytes however many models): the verdict survives a lost log stream.
//!
//! The pod has a deadline (`activeDeadlineSeconds`); the driver passes it in `JR2_PROBE_DEADLINE` (Unix seconds), and
//! the probe finishes a margin before it: models still running are `timeout`, models never reached `not_checked`.
//! Nothing here writes to disk but the termination message, so a read-only root filesystem is fine.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::check::{Checker, Progress};
use crate::outcome::{Code, Outcome};
use crate::render;
use crate::target::Target;
use crate::verdict::{ModelResult, Origin, Verdict};

/// The schema of the JSON lines.
pub const EVENTS_SCHEMA: &str = "jr2.dev/provider-preflight-events/v1";
/// The schema of the termination message.
pub const SUMMARY_SCHEMA: &str = "jr2.dev/provider-preflight-summary/v1";
/// The most the kubelet keeps of a termination message.
pub const TERMINATION_LIMIT: usize = 4096;
/// How long before the pod's deadline the probe stops, to write its results.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

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
}

impl Summary {
    /// The most detail of `verdict` that fits in `limit` bytes of JSON.
    pub fn fitting(verdict: &Verdict, limit: usize) -> String {
        let build = |error_chars: Option<usize>, names: bool, truncated: bool| Summary {
            schema: SUMMARY_SCHEMA.to_owned(),
            ok: verdict.ok,
            n: verdict.models.len(),
            models: verdict
                .models
                .iter()
                .map(|m| SummaryModel {
                    model: names.then(|| m.model.clone()),
                    outcome: m.outcome,
                    code: m.code,
                    status: m.http_status,
                    tries: m.tries.len(),
                    elapsed_ms: m.elapsed_ms,
                    error: error_chars.and_then(|n| {
                        m.error
                            .as_ref()
                            .map(|e| crate::sanitize::escape_truncate(e, n))
                    }),
                })
                .collect(),
            truncated,
        };
        let attempts = [
            (Some(300), true, false),
            (Some(120), true, true),
            (Some(40), true, true),
            (None, true, true),
            (None, false, true),
        ];
        for (errors, names, truncated) in attempts {
            let text = serde_json::to_string(&build(errors, names, truncated)).unwrap_or_default();
            if text.len() <= limit {
                return text;
            }
        }
        let mut bare = build(None, false, true);
        bare.models.clear();
        serde_json::to_string(&bare).unwrap_or_default()
    }
}

/// Where pod mode writes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The node's name (`NODE_NAME` from the downward API); `None` by hand.
    pub node: Option<String>,
    /// The pod's deadline, when one is set.
    pub deadline: Option<SystemTime>,
    /// The termination-message path; `None` to skip it.
    pub termination_log: Option<std::path::PathBuf>,
}

fn emit(out: &Mutex<Box<dyn Write + Send>>, value: serde_json::Value) {
    let mut out = out
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _ = serde_json::to_writer(&mut *out, &value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Checks `targets` as pod mode does, writing JSON lines to `out`. Returns the verdict.
pub async fn run(
    checker: &Checker,
    targets: &[Target],
    options: &RunOptions,
    out: Box<dyn Write + Send>,
) -> Verdict {
    let started_at = SystemTime::now();
    let start = Instant::now();
    let out = Mutex::new(out);
    let origin = match &options.node {
        Some(name) => Origin::Node { name: name.clone() },
        None => Origin::ThisMachine,
    };
    let budget = options.deadline.map(|d| {
        d.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO)
            .saturating_sub(DEADLINE_MARGIN)
    });
    emit(
        &out,
        json!({"event": "start", "schema": EVENTS_SCHEMA, "probeVersion": env!("CARGO_PKG_VERSION"),
               "origin": origin, "models": targets.len(), "budgetMs": budget.map(|b| b.as_millis() as u64)}),
    );
    let results: Mutex<Vec<Option<ModelResult>>> = Mutex::new(vec![None; targets.len()]);
    let started: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let work = async {
        checker
            .check_all_observed(targets, Some(tx), |i, result| {
                emit(
                    &out,
                    json!({"event": "result", "index": i, "result": result}),
                );
                results
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(result.clone());
            })
            .await
    };
    let watch = async {
        while let Some(p) = rx.recv().await {
            match p {
                Progress::Started { index } => {
                    started
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert(index);
                    emit(
                        &out,
                        json!({"event": "modelStarted", "index": index, "model": targets[index].model}),
                    );
                }
                Progress::Try { index, attempt } => {
                    emit(
                        &out,
                        json!({"event": "try", "index": index, "model": targets[index].model, "try": attempt}),
                    );
                }
            }
        }
    };
    let both = async { tokio::join!(work, watch) };
    let finished = match budget {
        Some(b) => tokio::time::timeout(b, both).await.is_ok(),
        None => {
            both.await;
            true
        }
    };
    let mut results = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let started = started
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !finished {
        // The pod's deadline: what did not finish is a timeout (it was on its way) or not checked.
        let waited = start.elapsed();
        for (i, slot) in results.iter_mut().enumerate().filter(|(_, r)| r.is_none()) {
            let target = &targets[i];
            let (outcome, error) = if started.contains(&i) {
                (
                    Outcome::Timeout,
                    render::timeout_error(
                        &render::seconds(Duration::from_secs(waited.as_secs())),
                        matches!(
                            target.route,
                            crate::verdict::Route::Custom { .. }
                                | crate::verdict::Route::Catalog { gateway: true, .. }
                        ),
                    ),
                )
            } else {
                (
                    Outcome::NotChecked,
                    "not checked: the check pod's deadline came first".to_owned(),
                )
            };
            let result = checker.unfinished(target, outcome, error, waited);
            emit(
                &out,
                json!({"event": "result", "index": i, "result": &result}),
            );
            *slot = Some(result);
        }
    }
    let models: Vec<ModelResult> = results
        .into_iter()
        .map(|r| r.expect("every model has a result"))
        .collect();
    let lines = models
        .iter()
        .flat_map(|m| render::model_lines(m, &origin))
        .collect();
    let verdict = Verdict::new(origin, started_at, start.elapsed(), models, lines);
    emit(&out, json!({"event": "summary", "verdict": &verdict}));
    if let Some(path) = &options.termination_log {
        let summary = Summary::fitting(&verdict, TERMINATION_LIMIT);
        if let Err(e) = std::fs::write(path, summary) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the termination message");
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ApiKind;
    use crate::outcome::Level;
    use crate::verdict::Route;

    fn model(i: usize, error_len: usize) -> ModelResult {
        ModelResult {
            model: format!("anthropic/claude-model-number-{i}"),
            id: format!("claude-model-number-{i}"),
            api: ApiKind::AnthropicMessages,
            base_url: "https://api.anthropic.com".into(),
            host: "api.anthropic.com".into(),
            route: Route::Custom { api_key_set: false },
            outcome: Outcome::Http,
            level: Level::Error,
            code: Code::HttpError,
            next_action: String::new(),
            error: Some("x".repeat(error_len)),
            http_status: Some(500),
            stop_reason: None,
            tool_name: None,
            answer: None,
            max_tokens: 1,
            elapsed_ms: 12,
            tries: Vec::new(),
        }
    }

    fn verdict(n: usize, error_len: usize) -> Verdict {
        Verdict::new(
            Origin::ThisMachine,
            SystemTime::now(),
            Duration::ZERO,
            (0..n).map(|i| model(i, error_len)).collect(),
            Vec::new(),
        )
    }

    #[test]
    fn the_summary_always_fits() {
        for n in [0, 1, 5, 50, 200, 2000] {
            let text = Summary::fitting(&verdict(n, 300), TERMINATION_LIMIT);
            assert!(
                text.len() <= TERMINATION_LIMIT,
                "{n} models: {} bytes",
                text.len()
            );
            let s: Summary = serde_json::from_str(&text).unwrap();
            assert_eq!(s.n, n);
            assert!(!s.ok || n == 0);
        }
    }

    #[test]
    fn few_models_keep_everything() {
        let s: Summary =
            serde_json::from_str(&Summary::fitting(&verdict(3, 100), TERMINATION_LIMIT)).unwrap();
        assert!(!s.truncated);
        assert_eq!(
            s.models[2].model.as_deref(),
            Some("anthropic/claude-model-number-2")
        );
        assert_eq!(s.models[0].error.as_deref().map(str::len), Some(100));
    }

    #[test]
    fn fifty_models_keep_their_codes() {
        let s: Summary =
            serde_json::from_str(&Summary::fitting(&verdict(50, 300), TERMINATION_LIMIT)).unwrap();
        assert_eq!(s.models.len(), 50);
        assert!(s.truncated);
        assert!(s.models.iter().all(|m| m.code == Code::HttpError));
    }
}
