//! The cancel token: how a signal handler stops a run from outside its future, and still gets its result.
//!
//! Dropping the run's future also stops it (and deletes its pods), but returns nothing; a cancelled run returns
//! with every pod not finished [`FailureKind::Interrupted`](super::FailureKind::Interrupted).

use std::fmt;
use std::sync::Arc;

/// Stops a run from elsewhere (a signal handler); [`run_pods`](super::run_pods) returns with what it has.
#[derive(Clone)]
pub struct Cancel(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Self(Arc::new(tokio::sync::watch::channel(false).0))
    }
}

impl fmt::Debug for Cancel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Cancel").field(&self.is_cancelled()).finish()
    }
}

impl Cancel {
    /// A token not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels every run that holds this token.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    /// Whether [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once cancelled.
    pub async fn cancelled(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }
}

/// Resolves once `cancel` is cancelled; never without one.
pub(super) async fn cancelled(cancel: Option<&Cancel>) {
    match cancel {
        Some(c) => c.cancelled().await,
        None => std::future::pending().await,
    }
}
