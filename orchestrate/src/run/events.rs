//! A check pod's Events, kept within bounds and counted (issue 40, item 9).
//!
//! A policy engine in audit mode can write thousands of Warning Events about one pod in seconds (`PolicyViolation`,
//! each message different). The run keeps at most [`MAX_EVENTS`] of them for the diagnosis and the evidence (the
//! kubelet's and the scheduler's, which say why a pod waits, before the others), and counts every one by reason and
//! source: the audit Warnings (the Events that do not say why the pod waits, `diagnose::tells_why_it_waits`) are said
//! as one line per reason and source with their count, at most [`MAX_SUMMARY_LINES`] of them, under a failure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Event;

use jr2_probe::contract::render;
use jr2_probe::sanitize::Redactor;

use crate::diagnose::{event_source, tells_why_it_waits};

/// The most Events kept of one pod.
pub(super) const MAX_EVENTS: usize = 200;

/// The most (reason, source) pairs counted apart: more are counted together.
const MAX_PAIRS: usize = 64;

/// The most Event keys remembered with their count.
const MAX_SEEN: usize = MAX_EVENTS * 8;

/// The most summary lines under a failure; the rest are counted in one more line.
pub(super) const MAX_SUMMARY_LINES: usize = 5;

/// The audit Warnings of a pod, counted by (reason, source).
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Each (reason, source) and its count, raw.
    counts: BTreeMap<(String, String), u64>,
    /// The Warnings of pairs past [`MAX_PAIRS`].
    others: u64,
    /// The Event keys counted, with the count seen last: an Event again with a higher count adds the difference.
    seen: BTreeMap<String, u64>,
}

impl Tally {
    /// Counts `e` (new, or again with a higher `count`) when it is a Warning that does not say why the pod waits.
    pub(super) fn add(&mut self, e: &Event) {
        if e.type_.as_deref() != Some("Warning") || tells_why_it_waits(e) {
            return;
        }
        let count = u64::try_from(e.count.unwrap_or(1).max(1)).unwrap_or(1);
        let key = e
            .metadata
            .uid
            .clone()
            .or(e.metadata.name.clone())
            .unwrap_or_default();
        // Bounded: past [`MAX_SEEN`] keys, one is forgotten for the new one (an Event seen again after it was
        // forgotten is counted whole: a bound on memory, at the price of a count too high).
        if self.seen.len() >= MAX_SEEN && !self.seen.contains_key(&key) {
            self.seen.pop_first();
        }
        let before = self.seen.insert(key, count).unwrap_or(0);
        let more = count.saturating_sub(before);
        if more == 0 {
            return;
        }
        let pair = (
            e.reason.clone().unwrap_or_default(),
            event_source(e).unwrap_or("").to_owned(),
        );
        if let Some(n) = self.counts.get_mut(&pair) {
            *n += more;
        } else if self.counts.len() < MAX_PAIRS {
            self.counts.insert(pair, more);
        } else {
            self.others += more;
        }
    }

    /// The summary lines, most frequent first, at most [`MAX_SUMMARY_LINES`] and one for the rest; cleaned.
    pub(super) fn lines(&self, redactor: &Redactor) -> Vec<String> {
        let mut pairs: Vec<(&(String, String), &u64)> = self.counts.iter().collect();
        pairs.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let c = |s: &str| redactor.clean_to(s, 100);
        let mut lines: Vec<String> = pairs
            .iter()
            .take(MAX_SUMMARY_LINES)
            .map(|((reason, source), n)| render::audit_events(&c(reason), &c(source), **n))
            .collect();
        let rest: u64 = pairs
            .iter()
            .skip(MAX_SUMMARY_LINES)
            .map(|(_, n)| **n)
            .sum::<u64>()
            + self.others;
        if rest > 0 {
            lines.push(render::audit_events_more(rest));
        }
        lines
    }
}

/// Keeps `e` among `events` (the same Event again moves to the end, where the latest are), at most [`MAX_EVENTS`]:
/// past it the oldest Event that does not say why the pod waits goes first, else the oldest.
pub(super) fn keep(events: &mut Vec<Event>, e: Event) {
    let key = |x: &Event| x.metadata.uid.clone().or(x.metadata.name.clone());
    let k = key(&e);
    events.retain(|old| key(old) != k);
    events.push(e);
    if events.len() > MAX_EVENTS {
        let at = events
            .iter()
            .position(|x| !tells_why_it_waits(x))
            .unwrap_or(0);
        events.remove(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(i: usize, reason: &str, type_: &str, component: &str, count: i32) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("e{i}"), "uid": format!("u{i}")},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": reason, "type": type_, "message": format!("message {i}"), "count": count,
            "source": {"component": component}
        }))
        .unwrap()
    }

    /// 4,084 audit Warnings, each message different: 200 kept, the kubelet's among them, and one line per reason and
    /// source with the count.
    #[test]
    fn a_storm_is_kept_within_bounds_and_counted() {
        let mut events = Vec::new();
        let mut tally = Tally::default();
        let kubelet = event(0, "FailedMount", "Warning", "kubelet", 1);
        tally.add(&kubelet);
        keep(&mut events, kubelet);
        for i in 1..=4084 {
            let e = event(i, "PolicyViolation", "Warning", "kyverno-admission", 1);
            tally.add(&e);
            keep(&mut events, e);
        }
        for i in 5000..5003 {
            let e = event(i, "Audit", "Warning", "gatekeeper", 2);
            tally.add(&e);
            keep(&mut events, e);
        }
        // The same Event again, its count up by 3: 3 more, not 5.
        let again = event(5000, "Audit", "Warning", "gatekeeper", 5);
        tally.add(&again);
        keep(&mut events, again);
        tally.add(&event(6000, "Scheduled", "Normal", "default-scheduler", 1));
        assert_eq!(events.len(), MAX_EVENTS);
        assert_eq!(
            events[0].reason.as_deref(),
            Some("FailedMount"),
            "the kubelet's is kept"
        );
        insta::assert_snapshot!(tally.lines(&Redactor::default()).join("\n"), @r"
          - 4084 Warning Events PolicyViolation from kyverno-admission (not why the check pod waits)
          - 9 Warning Events Audit from gatekeeper (not why the check pod waits)
        ");
    }

    #[test]
    fn past_the_summary_lines_the_rest_is_one_line() {
        let mut tally = Tally::default();
        for i in 0..8 {
            tally.add(&event(i, &format!("R{i}"), "Warning", "policy", 1));
        }
        let lines = tally.lines(&Redactor::default());
        assert_eq!(lines.len(), MAX_SUMMARY_LINES + 1);
        insta::assert_snapshot!(lines.last().unwrap(), @"  - 3 more Warning Events of other reasons (not why the check pod waits)");
    }
}
