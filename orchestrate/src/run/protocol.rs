//! The probe's protocol, read: its JSON lines (one [`ProbeEvent`] per line on stdout, the type the probe writes
//! them with) and its termination message (the compact [`Summary`]).

use jr2_probe::contract::ProbeEvent;
use jr2_probe::contract::summary::Summary;
use jr2_probe::contract::verdict::Verdict;

/// Reads one line of the probe's log: `None` for a line that is not one of its events.
pub(super) fn event(line: &str) -> Option<ProbeEvent> {
    ProbeEvent::from_line(line)
}

/// What a termination message holds.
#[derive(Debug, PartialEq)]
pub(super) enum Termination {
    /// The probe's compact summary (what it writes there).
    Summary(Summary),
    /// No summary, but the `summary` line of the log tail (`FallbackToLogsOnError`): the whole verdict.
    Verdict(Box<Verdict>),
    /// Neither.
    Nothing,
}

/// Reads a termination message.
pub(super) fn termination(message: &str) -> Termination {
    if let Ok(s) = serde_json::from_str::<Summary>(message.trim()) {
        return Termination::Summary(s);
    }
    let verdict = message.lines().rev().find_map(|l| match event(l) {
        Some(ProbeEvent::Summary { verdict }) => Some(verdict),
        _ => None,
    });
    verdict.map_or(Termination::Nothing, Termination::Verdict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    use jr2_probe::contract::verdict::Origin;

    fn verdict() -> Verdict {
        Verdict::new(
            Origin::Node {
                name: "worker-2".to_owned(),
            },
            UNIX_EPOCH + Duration::from_secs(1_796_409_407),
            Duration::from_millis(900),
            Vec::new(),
            Vec::new(),
        )
    }

    #[test]
    fn a_termination_message_is_a_summary_or_a_log_tail() {
        let summary = Summary {
            schema: jr2_probe::contract::summary::SUMMARY_SCHEMA.to_owned(),
            ok: true,
            n: 0,
            models: Vec::new(),
            truncated: false,
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert_eq!(
            termination(&format!("{text}\n")),
            Termination::Summary(summary)
        );
        let summary_line = ProbeEvent::Summary {
            verdict: Box::new(verdict()),
        }
        .to_line();
        let tail = format!("some log line\n{summary_line}\n{{\"event\":\"later\"}}\n");
        assert_eq!(
            termination(&tail),
            Termination::Verdict(Box::new(verdict()))
        );
        assert_eq!(termination(""), Termination::Nothing);
        assert_eq!(termination("Error: exit 2"), Termination::Nothing);
    }

    #[test]
    fn lines_that_are_not_events_are_skipped() {
        assert_eq!(event("not json"), None);
        assert_eq!(event(r#"{"event":"result","index":0}"#), None);
        assert_eq!(
            event(r#"{"event":"modelStarted","index":1,"model":"a/b"}"#),
            Some(ProbeEvent::ModelStarted {
                index: 1,
                model: "a/b".to_owned()
            })
        );
    }
}
