//! SIGINT and SIGTERM, listened for from the start of a run.
//!
//! From [`Signals::listen`] on, a signal is the driver's to handle (nothing created, or the pods deleted, then
//! [`Exit::Interrupted`] or [`Exit::Terminated`], 130 or 143 as shells and fd report them), never the default
//! action, which would end the process between a create and its delete and leave the pod behind.

use std::future::Future;

use futures_util::FutureExt;
use jr2_probe::contract::Exit;
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

    /// The next signal, as the exit it asks for: [`Exit::Interrupted`] (SIGINT), [`Exit::Terminated`] (SIGTERM).
    /// Cancel-safe.
    pub async fn recv(&mut self) -> Exit {
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
            () = next(self.interrupt.as_mut()) => Exit::Interrupted,
            () = next(self.terminate.as_mut()) => Exit::Terminated,
        }
    }

    /// A signal already received, without waiting.
    pub fn received(&mut self) -> Option<Exit> {
        self.recv().now_or_never()
    }

    /// `fut`, unless a signal comes first (`Err` with its exit); one already received wins.
    pub async fn until<T>(&mut self, fut: impl Future<Output = T>) -> Result<T, Exit> {
        tokio::select! {
            biased;
            code = self.recv() => Err(code),
            v = fut => Ok(v),
        }
    }
}
