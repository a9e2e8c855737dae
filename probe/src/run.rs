//! Pod mode: `jr2-probe run` in the check pod.
//!
//! Reads a [`RunSpec`], checks its models, and streams one JSON object per line on stdout as it goes (the run
//! started, a model started, a try, a model's result, then the summary with the whole verdict), so the driver can
//! print progress while the pod runs. It also writes a compact summary to the termination-message path
//! (`/dev/termination-log`, at most 4096 bytes however many models): the verdict survives a lost log stream.
//!
//! The pod has a deadline (`activeDeadlineSeconds`); the driver passes it in `JR2_PROBE_DEADLINE` (Unix seconds), and
//! the probe finishes a margin before it: models still running are `timeout` (after their own time, not the run's),
//! models never reached `not_checked` (the `not checked:` form of the lines, not a failure's hints).
//! Nothing here writes to disk but the termination message, so a read-only root filesystem is fine.

use std::io::Write;
use std::sync::Mutex;
#[cfg(test)]
use std::time::UNIX_EPOCH;
use std::time::{Duration, Instant, SystemTime};

use crate::check::{Checker, Progress};
use crate::contract::events::ProbeEvent;
use crate::contract::outcome::Outcome;
use crate::contract::render;
use crate::contract::verdict::{ModelResult, Origin, Try, Verdict};
use crate::target::Target;

pub use crate::contract::events::EVENTS_SCHEMA;
pub use crate::contract::summary::{SUMMARY_SCHEMA, Summary, SummaryModel, TERMINATION_LIMIT};

/// How long before the pod's deadline the probe stops, to write its results.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(3);

/// The producer's half of the termination message: how much of a verdict fits (the shape is the contract's).
impl Summary {
    /// The most detail of `verdict` (and of the run's `warnings` lines) that fits in `limit` bytes of JSON.
    pub fn fitting(verdict: &Verdict, warnings: &[String], limit: usize) -> String {
        let build = |error_chars: Option<usize>, names: bool, truncated: bool| Summary {
            warnings: warnings
                .iter()
                .map(|w| crate::sanitize::escape_truncate(w, 300))
                .collect(),
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
        // The warnings go before the models' outcomes do.
        let mut bare = build(None, false, true);
        bare.warnings.clear();
        let text = serde_json::to_string(&bare).unwrap_or_default();
        if text.len() <= limit {
            return text;
        }
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
    /// Warning lines about the run itself (a CA file or a proxy variable that cannot be used): each a `warning`
    /// event after the `start` line, and the first of the verdict's lines.
    pub warnings: Vec<String>,
    /// The Custodian's readiness endpoint (`JR2_CUSTODIAN_READY`): asked until it is ready (bounded) before the
    /// first request.
    pub custodian_ready: Option<crate::sidecar::Readiness>,
}

/// What one model's future reported so far.
#[derive(Default)]
struct Seen {
    started: Option<Instant>,
    tries: Vec<Try>,
    result: Option<ModelResult>,
}

fn emit(out: &Mutex<Box<dyn Write + Send>>, event: &ProbeEvent) {
    let line = event.to_line();
    let mut out = out
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let _ = out.write_all(line.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// `JR2_PROBE_DEADLINE`'s value as a time: Unix seconds, positive and finite, and a time this machine can hold
/// (`1e300` is none). `None` for anything else.
pub fn parse_deadline(value: &str) -> Option<SystemTime> {
    let seconds = value.trim().parse::<f64>().ok()?;
    if !seconds.is_finite() || seconds <= 0.0 {
        return None;
    }
    let since_epoch = Duration::try_from_secs_f64(seconds).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(since_epoch)
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
    let now = SystemTime::now();
    let budget = options.deadline.map(|d| {
        d.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .saturating_sub(DEADLINE_MARGIN)
    });
    // A deadline already behind us (less than the margin ahead) leaves no time to send anything: every model is
    // not checked, and the line says why rather than blaming the models with "no answer in 0 s".
    let passed_by = options
        .deadline
        .filter(|_| budget == Some(Duration::ZERO))
        .map(|d| now.duration_since(d).unwrap_or(Duration::ZERO));
    emit(
        &out,
        &ProbeEvent::start(
            origin.clone(),
            targets.len(),
            budget.map(|b| b.as_millis() as u64),
        ),
    );
    for line in &options.warnings {
        emit(&out, &ProbeEvent::Warning { line: line.clone() });
    }
    // What each model's own future reported, as it reported it: the observer writes each event the moment it
    // comes, and a model's future reports its start, each try and its result one after the other, so the lines of
    // one model are in that order by construction, however the models interleave.
    let seen: Mutex<Vec<Seen>> = Mutex::new(targets.iter().map(|_| Seen::default()).collect());
    let lock_seen = || {
        seen.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let observer = |p: Progress<'_>| {
        let event = match p {
            Progress::Started { index } => {
                lock_seen()[index].started = Some(Instant::now());
                ProbeEvent::ModelStarted {
                    index,
                    model: targets[index].model.clone(),
                }
            }
            Progress::Try { index, attempt } => {
                lock_seen()[index].tries.push(attempt.clone());
                ProbeEvent::Try {
                    index,
                    model: targets[index].model.clone(),
                    attempt: attempt.clone(),
                }
            }
            Progress::Waiting {
                index,
                waited,
                stage,
            } => ProbeEvent::Waiting {
                index,
                model: targets[index].model.clone(),
                waited_ms: waited.as_millis() as u64,
                timeout_ms: checker.settings().timeout.as_millis() as u64,
                stage,
            },
            Progress::Finished { index, result } => {
                lock_seen()[index].result = Some(result.clone());
                ProbeEvent::Result {
                    index,
                    result: Box::new(result.clone()),
                }
            }
        };
        emit(&out, &event);
    };
    let work = async {
        // A Custodian that is only starting refuses the first connection: wait for it to be ready and to listen
        // (bounded), as a Turn, which comes long after its pod started, never meets it.
        let until = tokio::time::Instant::now() + crate::sidecar::LISTEN_WAIT;
        if let Some(ready) = &options.custodian_ready {
            crate::sidecar::until_ready(ready, until).await;
        }
        let proxies = crate::sidecar::loopback_proxies(checker.factory().proxy(), targets);
        if !proxies.is_empty() {
            crate::sidecar::until_listening(&proxies, until).await;
        }
        checker
            .check_all_observed(targets, &observer, |_, _| {})
            .await
    };
    let finished = match budget {
        _ if passed_by.is_some() => {
            drop(work);
            false
        }
        Some(b) => tokio::time::timeout(b, work).await.is_ok(),
        None => {
            work.await;
            true
        }
    };
    let seen = seen
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut models: Vec<ModelResult> = Vec::with_capacity(seen.len());
    for (i, model) in seen.into_iter().enumerate() {
        if let Some(r) = model.result {
            models.push(r);
            continue;
        }
        debug_assert!(!finished, "a finished run has every result");
        // The pod's deadline: a model on its way is cut (a timeout, after its own time, not the run's); a model
        // never reached is not checked.
        let target = &targets[i];
        let (outcome, error, waited) = match model.started {
            Some(at) => {
                let own = at.elapsed();
                (
                    Outcome::Timeout,
                    render::deadline_cut_error(
                        &render::seconds(render::to_tenths(own)),
                        target.route.may_load_on_first_use(),
                    ),
                    own,
                )
            }
            None => match passed_by {
                Some(ago) => (
                    Outcome::NotChecked,
                    render::deadline_passed_error(&render::seconds(Duration::from_secs(
                        ago.as_secs(),
                    ))),
                    Duration::ZERO,
                ),
                None => (
                    Outcome::NotChecked,
                    render::deadline_came_first_error(),
                    Duration::ZERO,
                ),
            },
        };
        let result = checker.unfinished(target, outcome, error, waited, model.tries);
        emit(
            &out,
            &ProbeEvent::Result {
                index: i,
                result: Box::new(result.clone()),
            },
        );
        models.push(result);
    }
    let lines = options
        .warnings
        .iter()
        .cloned()
        .chain(render::result_lines(&models, &origin))
        .collect();
    let verdict = Verdict::new(origin, started_at, start.elapsed(), models, lines);
    emit(
        &out,
        &ProbeEvent::Summary {
            verdict: Box::new(verdict.clone()),
        },
    );
    // A named pipe with no reader would block the open forever (issue 25, item 11): the kubelet's termination log is a
    // file, so a pipe is not written.
    if let Some(path) = &options.termination_log
        && crate::spec::input::is_fifo(path)
    {
        tracing::warn!(path = %path.display(), "the termination log is a pipe: not written");
    } else if let Some(path) = &options.termination_log {
        let summary = Summary::fitting(&verdict, &options.warnings, TERMINATION_LIMIT);
        if let Err(e) = std::fs::write(path, summary) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the termination message");
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::api_kind::ApiKind;
    use crate::contract::outcome::Code;

    fn model(i: usize, error_len: usize) -> ModelResult {
        ModelResult {
            base_url: "https://api.anthropic.com".into(),
            host: "api.anthropic.com".into(),
            next_action: String::new(),
            error: Some("x".repeat(error_len)),
            http_status: Some(500),
            max_tokens: 1,
            elapsed_ms: 12,
            ..ModelResult::test(
                &format!("anthropic/claude-model-number-{i}"),
                ApiKind::AnthropicMessages,
                Outcome::Http,
            )
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
    fn a_deadline_is_unix_seconds_this_machine_can_hold() {
        assert_eq!(
            parse_deadline(" 1700000000.5 "),
            Some(UNIX_EPOCH + Duration::from_millis(1_700_000_000_500))
        );
        for bad in ["1e300", "1e19", "inf", "-inf", "NaN", "0", "-1", "", "soon"] {
            assert_eq!(parse_deadline(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_summary_always_fits() {
        for n in [0, 1, 5, 50, 200, 2000] {
            let text = Summary::fitting(&verdict(n, 300), &[], TERMINATION_LIMIT);
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
            serde_json::from_str(&Summary::fitting(&verdict(3, 100), &[], TERMINATION_LIMIT))
                .unwrap();
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
            serde_json::from_str(&Summary::fitting(&verdict(50, 300), &[], TERMINATION_LIMIT))
                .unwrap();
        assert_eq!(s.models.len(), 50);
        assert!(s.truncated);
        assert!(s.models.iter().all(|m| m.code == Code::HttpError));
    }
}
