//! What the routes and the kubelet stand-ins share: the store behind its lock, the signal that wakes every watch
//! and log stream on a change, and the settings of the server they need (the probe binary, the bookmark interval,
//! the uid base).

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::store::State;

/// What the server, its routes and the kubelet stand-ins share.
pub(super) struct Inner {
    pub(super) state: Mutex<State>,
    /// Bumped on every change: wakes the watches, the log streams and [`FakeKube::wait_for`](super::FakeKube::wait_for).
    pub(super) changed: tokio::sync::watch::Sender<u64>,
    pub(super) probe_bin: PathBuf,
    pub(super) bookmark_every: Mutex<Duration>,
    /// Makes the uids of two fakes in one test process differ (their port).
    pub(super) uid_base: u64,
    /// How far its clocks are from the test machine's ([`FakeKube::set_clocks`](super::FakeKube::set_clocks)).
    pub(super) clocks: Mutex<Clocks>,
}

/// How far ahead of the test machine's clock (behind when negative), in seconds, the API server's clock is (its
/// `Date` headers, the `creationTimestamp` it writes) and the node's (the deadline the probe finds): a cluster on
/// another machine, whose clocks disagree with the driver's or with each other (issue 40, items 3 and 6).
#[derive(Clone, Copy, Debug, Default)]
pub struct Clocks {
    /// The API server's.
    pub api_ahead_secs: i64,
    /// The node's.
    pub node_ahead_secs: i64,
}

/// `t` moved by `secs` (back when negative).
pub(super) fn shifted(t: std::time::SystemTime, secs: i64) -> std::time::SystemTime {
    let by = Duration::from_secs(secs.unsigned_abs());
    if secs >= 0 { t + by } else { t - by }
}

impl Inner {
    /// Its clocks.
    pub(super) fn clocks(&self) -> Clocks {
        *self
            .clocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The API server's time now.
    pub(super) fn api_now(&self) -> std::time::SystemTime {
        shifted(std::time::SystemTime::now(), self.clocks().api_ahead_secs)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Changes the state, then wakes every watch and log stream.
    pub(super) fn mutate<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let r = f(&mut self.lock());
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
        r
    }
}
