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
}

impl Inner {
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
