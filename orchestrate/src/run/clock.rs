//! A node's clock that disagrees with the API server's (issue 40, item 3). The check pod's deadline is written on
//! the API server's clock (`server_clock.rs`); the probe measures it on the node's. Its first line says how long it
//! gives itself (`budget_ms`), which the run compares with the time it has left on its own deadline: a budget
//! shorter by more than [`TOLERANCE`] is a node whose clock is ahead, which the verdict names with a code and a
//! next action rather than leaving the models "not checked" to be run again.

use std::time::Duration;

use jr2_probe::run::DEADLINE_MARGIN;

/// How much shorter than the run's time left the probe's budget may be without a word: the time from its start to
/// its first line being read, and the second of the API server's `Date`.
pub(super) const TOLERANCE: Duration = Duration::from_secs(10);

/// How far ahead of the API server's the node's clock is, in whole seconds (at least: a budget of 0 is a deadline
/// passed by any amount), when the probe's `budget` is shorter than the run's time `left` (less the probe's
/// margin) by more than [`TOLERANCE`]; `None` when they agree.
pub(super) fn node_ahead(left: Duration, budget: Duration) -> Option<u64> {
    let short = left.saturating_sub(DEADLINE_MARGIN).checked_sub(budget)?;
    (short > TOLERANCE).then_some(short.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_budget_is_a_node_ahead() {
        let s = Duration::from_secs;
        // 57 s left on the run, the probe found its deadline passed: at least 54 s ahead.
        assert_eq!(node_ahead(s(57), s(0)), Some(54));
        // A budget as long as the time left (less the margin), or a few seconds shorter: in agreement.
        assert_eq!(node_ahead(s(57), s(54)), None);
        assert_eq!(node_ahead(s(57), s(46)), None);
        // A node behind: its budget is longer; the kubelet's activeDeadlineSeconds still bounds the pod.
        assert_eq!(node_ahead(s(57), s(120)), None);
    }
}
