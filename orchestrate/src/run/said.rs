//! What the run says once for all its pods: a pending line no other pod's latest line already says, a probe's
//! warning (once, and at most [`MAX_PROBE_WARNINGS`] a run), the Events that cannot be read, the cluster that cannot
//! be reached. The pods' steps (`step.rs`) ask; this decides, from what every pod has said, and keeps the run's
//! warning lines. Pure: the loop (`machine.rs`) sends what it returns.

use jr2_probe::contract::render;
use jr2_probe::sanitize::Redactor;

use super::pod_state::{Phase, PodState};
use super::report::{PodOutcome, RunUpdate};

/// The most warning lines a run writes (the probes' and its own): more are dropped.
pub(super) const MAX_PROBE_WARNINGS: usize = 20;

/// The most pending lines a run writes: an Event storm whose messages all differ cannot flood `jr2 up`'s output or
/// the verdict (issue 40, item 9); the latest reason is still what a pod that does not start in time names.
pub(super) const MAX_PENDING_LINES: usize = 30;

/// Reasons that report one cause in turn: a condition and the Event that reports it (issue 40, item 13).
const ONE_CAUSE: &[&[&str]] = &[&["Unschedulable", "FailedScheduling"]];

/// Two pending lines (reason, message), `a` said before `b`, that say one cause: the same, the same message under
/// two reasons of one family ([`ONE_CAUSE`]), or one image pull that failed ([`pull_of`]). The second is not written.
pub(super) fn one_cause(a: &(String, String), b: &(String, String)) -> bool {
    if a == b {
        return true;
    }
    let family = |r: &str| ONE_CAUSE.iter().position(|f| f.contains(&r));
    if family(&a.0).is_some() && family(&a.0) == family(&b.0) && !a.1.is_empty() && a.1 == b.1 {
        return true;
    }
    match (pull_of(a), pull_of(b)) {
        (Some(x), Some(y)) => x.same_as(&y),
        _ => false,
    }
}

/// A pull that failed, as the real kubelet says it in turn (issue 40, item 13; on the real cluster, four lines for
/// one pull): its Event `Failed` (`Failed to pull image "<image>": <error>`), its Event `Failed` again (`Error:
/// ErrImagePull`), the container's `ErrImagePull` (`<image>: <error>`, the pending line's form) and its back-off
/// `ImagePullBackOff` (`<image>: ErrImagePull: <error>`), or the back-off's Event `BackOff` (`Back-off pulling image
/// "<image>"`).
#[derive(Debug, PartialEq, Eq)]
enum Pull<'a> {
    /// The image and the error (empty when the line gives none); the error may end cut (`…`).
    Of { image: &'a str, error: &'a str },
    /// A line that only names the failure (`Error: ErrImagePull`): whatever pull it follows.
    Restated,
}

impl Pull<'_> {
    /// One pull, `other` said after `self`: the same image, and the same error where both give one (a line cut at
    /// its bound is the same when the other begins with what it kept); a line that only names the failure after any
    /// pull line (but a pull's error after such a line says more).
    fn same_as(&self, other: &Pull<'_>) -> bool {
        match (self, other) {
            (_, Pull::Restated) => true,
            (Pull::Restated, Pull::Of { .. }) => false,
            (Pull::Of { image: i, error: e }, Pull::Of { image: j, error: f }) => {
                let ((e, cut_e), (f, cut_f)) = (kept(e), kept(f));
                i == j
                    && (e.is_empty()
                        || f.is_empty()
                        || e == f
                        || (cut_e && f.starts_with(e))
                        || (cut_f && e.starts_with(f)))
            }
        }
    }
}

/// What a line cut at its bound kept (without its `…`), and whether it was cut.
fn kept(text: &str) -> (&str, bool) {
    text.strip_suffix('…').map_or((text, false), |k| (k, true))
}

/// A back-off's error without the error's name it repeats (`ErrImagePull: <error>`).
fn unwrapped(error: &str) -> &str {
    error.strip_prefix("ErrImagePull: ").unwrap_or(error)
}

/// The pull a pending line (reason, message) says failed, if it says one.
fn pull_of((reason, message): &(String, String)) -> Option<Pull<'_>> {
    // `<prefix><image>": <error>`, as the kubelet's Events say it.
    let quoted = |prefix: &str| -> Option<(&str, &str)> {
        let (image, rest) = message.strip_prefix(prefix)?.split_once('"')?;
        Some((image, rest.trim_start_matches([':', ' '])))
    };
    let (image, error) = match reason.as_str() {
        "ErrImagePull" | "ImagePullBackOff" => message.split_once(": ").unwrap_or((message, "")),
        "Failed"
            if matches!(
                message.as_str(),
                "Error: ErrImagePull" | "Error: ImagePullBackOff"
            ) =>
        {
            return Some(Pull::Restated);
        }
        "Failed" => quoted("Failed to pull image \"")?,
        "BackOff" => quoted("Back-off pulling image \"")?,
        _ => return None,
    };
    Some(Pull::Of {
        image,
        error: unwrapped(error),
    })
}

/// The lines the run has said.
#[derive(Debug, Default)]
pub(super) struct Said {
    /// Warning lines about the run itself, as sent.
    pub(super) warnings: Vec<String>,
    /// The (reason, message) of the last pending line written by any pod: the same line is never written twice in
    /// a row, whichever pod says it.
    last_pending: Option<(String, String)>,
    /// The pending lines written, at most [`MAX_PENDING_LINES`].
    pending_lines: usize,
    /// The caller already warned that the Events cannot be read ([`RunConfig`](super::RunConfig)'s
    /// `events_forbidden_said`).
    events_forbidden_said: bool,
}

impl Said {
    /// Nothing said yet; `events_forbidden_said` when the caller said the Events cannot be read.
    pub(super) fn new(events_forbidden_said: bool) -> Self {
        Self {
            events_forbidden_said,
            ..Self::default()
        }
    }

    /// Pod `i` has a new pending line (its `pending.written`): the progress to send, unless another pod's latest
    /// line says it, or it was the last one written. The line does not name its pod (the contract's form): two
    /// placements waiting for the same reason would write the same line twice.
    pub(super) fn pending(
        &mut self,
        pods: &[PodState],
        i: usize,
        reason: String,
        message: String,
    ) -> Option<RunUpdate> {
        let written = &pods[i].pending.written;
        let same = |other: &Option<(String, String)>| match (other, written) {
            (Some(a), Some(b)) => one_cause(a, b),
            (a, b) => a == b,
        };
        let shown = pods
            .iter()
            .enumerate()
            .any(|(j, other)| j != i && same(&other.pending.written));
        if shown || same(&self.last_pending) || self.pending_lines >= MAX_PENDING_LINES {
            return None;
        }
        self.pending_lines += 1;
        self.last_pending = written.clone();
        Some(RunUpdate::Pending {
            pod: pods[i].name.clone(),
            reason,
            message,
        })
    }

    /// The probe's warning about its run (a CA file it cannot read), from its log or its termination message: once,
    /// however many pods say it, and only a `warning:` line (a pod cannot make the driver print another kind); at
    /// most [`MAX_PROBE_WARNINGS`] in a run, so a probe (of another release, or broken) cannot flood `jr2 up`'s
    /// output.
    pub(super) fn probe_warning(&mut self, line: String) -> Option<RunUpdate> {
        if line.starts_with("warning: ")
            && self.warnings.len() < MAX_PROBE_WARNINGS
            && !self.warnings.contains(&line)
        {
            self.warnings.push(line.clone());
            return Some(RunUpdate::Warning { line });
        }
        None
    }

    /// Pod `i`'s Events cannot be read (`line` says so): said once for the run, by the first pod whose Events are
    /// forbidden, or before the run (`access.rs`).
    pub(super) fn events_forbidden(
        &mut self,
        pods: &[PodState],
        i: usize,
        line: String,
    ) -> Option<RunUpdate> {
        let said = self.events_forbidden_said
            || pods
                .iter()
                .enumerate()
                .any(|(j, p)| j != i && p.seen.events_forbidden);
        if said {
            return None;
        }
        self.warnings.push(line.clone());
        Some(RunUpdate::Warning { line })
    }
}

/// The cluster could not be reached for `why`: another pod's failure says so already (one cluster: said once).
pub(super) fn unreachable_said(pods: &[PodState], redactor: &Redactor, why: &str) -> bool {
    let line = render::cannot_reach_cluster(&redactor.clean(why));
    pods.iter()
        .any(|p| matches!(&p.phase, Phase::Done(PodOutcome::Failed(f)) if f.lines.contains(&line)))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::run::PodToRun;
    use crate::run::report::{FailureKind, PodFailure};

    fn pods(names: &[&str]) -> Vec<PodState> {
        names
            .iter()
            .map(|name| {
                let mut pod = Pod::default();
                pod.metadata.name = Some((*name).to_owned());
                PodState::new(&PodToRun {
                    pod,
                    models: vec!["a/b".to_owned()],
                    resolved: Vec::new(),
                })
            })
            .collect()
    }

    fn written(p: &mut PodState, reason: &str) -> (String, String) {
        let line = (reason.to_owned(), "m".to_owned());
        p.pending.written = Some(line.clone());
        line
    }

    #[test]
    fn a_pending_line_another_pod_says_or_just_said_is_not_written_again() {
        let mut said = Said::default();
        let mut pods = pods(&["a", "b"]);
        let (reason, message) = written(&mut pods[0], "Unschedulable");
        let sent = said.pending(&pods, 0, reason.clone(), message.clone());
        assert_eq!(
            sent,
            Some(RunUpdate::Pending {
                pod: "a".to_owned(),
                reason: reason.clone(),
                message: message.clone()
            })
        );
        // The other placement waits for the same reason: its line is the same, not written twice.
        written(&mut pods[1], "Unschedulable");
        assert_eq!(
            said.pending(&pods, 1, reason.clone(), message.clone()),
            None
        );
        // A new reason of the second pod is written, once.
        let (r2, m2) = written(&mut pods[1], "FailedMount");
        assert!(said.pending(&pods, 1, r2.clone(), m2.clone()).is_some());
        assert_eq!(said.pending(&pods, 1, r2, m2), None, "the last written");
    }

    /// Issue 40, item 13: a condition and the Event that reports it, a pull error and its back-off, are one cause.
    #[test]
    fn one_cause_under_two_reasons() {
        let p = |r: &str, m: &str| (r.to_owned(), m.to_owned());
        let m = "0/1 nodes are available: 1 node(s) had untolerated taint(s).";
        assert!(one_cause(&p("Unschedulable", m), &p("FailedScheduling", m)));
        assert!(one_cause(&p("FailedScheduling", m), &p("Unschedulable", m)));
        assert!(!one_cause(
            &p("Unschedulable", m),
            &p("FailedScheduling", "0/1 nodes: Insufficient memory")
        ));
        assert!(one_cause(
            &p("ErrImagePull", "x:1: rpc error: not found"),
            &p(
                "ImagePullBackOff",
                "x:1: ErrImagePull: rpc error: not found"
            )
        ));
        assert!(!one_cause(&p("ErrImagePull", m), &p("FailedMount", m)));
    }

    /// Issue 40, item 13, as the real kubelet (1.35) says one pull that failed: its `Failed` Event, its `Failed`
    /// Event again, the container's `ErrImagePull`, its `ImagePullBackOff` (each cut at the line's bound, the
    /// back-off's 14 characters sooner in the error) are one cause; another image, or another error, is not.
    #[test]
    fn one_pull_as_the_real_kubelet_says_it_in_turn() {
        let p = |r: &str, m: &str| (r.to_owned(), m.to_owned());
        let image = "registry.jr2.test/jr2/jr2-probe:does-not-exist";
        let error = format!(
            "failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": failed to do request"
        );
        let lines = [
            p(
                "Failed",
                &format!("Failed to pull image \"{image}\": {error}: Head …"),
            ),
            p("Failed", "Error: ErrImagePull"),
            p("ErrImagePull", &format!("{image}: {error}: He…")),
            p(
                "ImagePullBackOff",
                &format!("{image}: ErrImagePull: {error}…"),
            ),
            p("BackOff", &format!("Back-off pulling image \"{image}\"")),
            p("Failed", "Error: ImagePullBackOff"),
        ];
        for (i, a) in lines.iter().enumerate() {
            for (j, b) in lines.iter().enumerate() {
                // A line that only names the failure, said first, is followed by the error.
                let restated_first = matches!(i, 1 | 5) && !matches!(j, 1 | 5);
                assert_eq!(one_cause(a, b), !restated_first, "{a:?} then {b:?}");
            }
        }
        let other_image = p("ErrImagePull", &format!("{image}2: {error}"));
        let other_error = p("ErrImagePull", &format!("{image}: connection refused"));
        for other in [&other_image, &other_error] {
            assert!(!one_cause(&lines[0], other), "{other:?}");
            assert!(!one_cause(&lines[2], other), "{other:?}");
        }
        // A kubelet `Failed` Event of another cause is not a pull.
        assert!(!one_cause(
            &p("Failed", "Error: container create failed"),
            &lines[2]
        ));
    }

    #[test]
    fn a_probe_warning_is_said_once_and_at_most_twenty_a_run() {
        let mut said = Said::default();
        assert_eq!(said.probe_warning("error: forged".to_owned()), None);
        let line = "warning: the CA file cannot be read".to_owned();
        assert_eq!(
            said.probe_warning(line.clone()),
            Some(RunUpdate::Warning { line: line.clone() })
        );
        assert_eq!(said.probe_warning(line), None);
        for n in 0..30 {
            said.probe_warning(format!("warning: {n}"));
        }
        assert_eq!(said.warnings.len(), MAX_PROBE_WARNINGS);
    }

    #[test]
    fn the_events_that_cannot_be_read_are_said_once() {
        let line = "warning: the Events cannot be read".to_owned();
        let mut pods = pods(&["a", "b"]);
        let mut said = Said::new(true);
        pods[0].seen.events_forbidden = true;
        assert_eq!(
            said.events_forbidden(&pods, 0, line.clone()),
            None,
            "said before the run"
        );
        let mut said = Said::new(false);
        assert!(said.events_forbidden(&pods, 0, line.clone()).is_some());
        pods[1].seen.events_forbidden = true;
        assert_eq!(said.events_forbidden(&pods, 1, line.clone()), None);
        assert_eq!(said.warnings, [line]);
    }

    #[test]
    fn the_unreachable_cluster_is_said_by_one_pod() {
        let redactor = Redactor::default();
        let mut pods = pods(&["a", "b"]);
        assert!(!unreachable_said(&pods, &redactor, "connection refused"));
        pods[0].phase = Phase::Done(PodOutcome::Failed(PodFailure {
            kind: FailureKind::Unreachable {
                why: "connection refused".to_owned(),
            },
            lines: vec![render::cannot_reach_cluster("connection refused")],
        }));
        assert!(unreachable_said(&pods, &redactor, "connection refused"));
        assert!(!unreachable_said(&pods, &redactor, "no route to host"));
    }
}
