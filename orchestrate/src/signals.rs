//! SIGINT and SIGTERM, listened for from the start of a run.
//!
//! From [`Signals::listen`] on, a signal is the driver's to handle (nothing created, or the pods deleted, then exit
//! 130 or 143, as shells and fd do), never the default action, which would end the process between a create and its
//! delete and leave the pod behind.

use std::future::Future;

use futures_util::FutureExt;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGINT and SIGTERM, listened for.
#[derive(Debug)]
pub struct Signals {
    interrupt: Option<Signal>,
    terminate: Option<Signal>,
}

impl Signals {
    /// Replaces the default action of both (the end of the process) with a notification to this value. Needs a tokio
    /// runtime.
    pub fn listen() -> Self {
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The next signal, as the exit code it asks for: 130 (SIGINT), 143 (SIGTERM). Cancel-safe.
    pub async fn recv(&mut self) -> u8 {
        // A stream that could not be set up, or that ended with the runtime, never resolves.
        async fn next(s: Option<&mut Signal>) {
            if let Some(s) = s
                && s.recv().await.is_some()
            {
                return;
            }
            std::future::pending().await
        }
        tokio::select! {
            () = next(self.interrupt.as_mut()) => 130,
            () = next(self.terminate.as_mut()) => 143,
        }
    }

    /// A signal already received, without waiting.
    pub fn received(&mut self) -> Option<u8> {
        self.recv().now_or_never()
    }

    /// `fut`, unless a signal comes first (`Err` with its exit code); one already received wins.
    pub async fn until<T>(&mut self, fut: impl Future<Output = T>) -> Result<T, u8> {
        tokio::select! {
            biased;
            code = self.recv() => Err(code),
            v = fut => Ok(v),
        }
    }
}
