//! SIGINT, SIGTERM and SIGHUP (Ctrl-C, Ctrl-Break and the console's close on Windows), listened for from the start of
//! a run, and, with `--cancel-on-stdin`, a `cancel` line or the end of stdin.
//!
//! From [`Signals::listen`] on, a signal is the driver's to handle (nothing created, or the pods deleted, then
//! [`Exit::Interrupted`], [`Exit::Terminated`] or [`Exit::HungUp`], 130, 143 or 129 as shells and fd report them),
//! never the default action, which would end the process between a create and its delete and leave the pod behind.
//! SIGHUP is what a closed terminal or SSH session sends (issue 25, item 6).
//!
//! Stdin is the cancel that works on Windows: Node's `kill()` there ends the child at once, so a caller that wants
//! the pods deleted writes `cancel` (or closes stdin) instead, and the run stops as on SIGINT.

use std::future::Future;
use std::io::{BufRead, Read};

use futures_util::FutureExt;
use jr2_probe::contract::Exit;
use tokio::sync::mpsc;

/// SIGINT and SIGTERM (their console counterparts on Windows), and the stdin cancel once asked for.
#[derive(Debug)]
pub struct Signals {
    os: os::Os,
    stdin: Option<mpsc::UnboundedReceiver<()>>,
}

impl Signals {
    /// Replaces the default action of both (the end of the process) with a notification to this value. Needs a tokio
    /// runtime.
    pub fn listen() -> Self {
        Self {
            os: os::Os::listen(),
            stdin: None,
        }
    }

    /// From now on, a line `cancel` read from the input that `open` gives, or its end (or a read error), counts as
    /// SIGINT. Other lines are ignored. The input is opened and read on a thread of its own (stdin cannot be read
    /// without blocking everywhere), which ends with the first cancel; the process does not wait for it.
    pub fn cancel_on<R: BufRead>(&mut self, open: impl FnOnce() -> R + Send + 'static) {
        let (tx, rx) = mpsc::unbounded_channel();
        let spawned = std::thread::Builder::new()
            .name("cancel-on-stdin".into())
            .spawn(move || {
                let why = read_until_cancel(open());
                tracing::debug!(?why, "cancel on stdin");
                let _ = tx.send(());
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot read stdin for a cancel");
            return;
        }
        self.stdin = Some(rx);
    }

    /// The next signal, as the exit it asks for: [`Exit::Interrupted`] (SIGINT, Ctrl-C, a stdin cancel),
    /// [`Exit::Terminated`] (SIGTERM, the console closed), [`Exit::HungUp`] (SIGHUP). Cancel-safe.
    pub async fn recv(&mut self) -> Exit {
        async fn cancelled(rx: Option<&mut mpsc::UnboundedReceiver<()>>) {
            if let Some(rx) = rx
                && rx.recv().await.is_some()
            {
                return;
            }
            std::future::pending().await
        }
        tokio::select! {
            exit = self.os.recv() => exit,
            () = cancelled(self.stdin.as_mut()) => Exit::Interrupted,
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

/// What ended the read of the cancel input.
#[derive(Debug, PartialEq, Eq)]
enum StdinCancel {
    /// A line `cancel`.
    Line,
    /// The end of the input, or a read error.
    End,
}

/// A piece of a stdin line the cancel reader holds at most: a longer line is not `cancel`, and a parent that writes
/// megabytes without a newline must not grow the driver's memory with them.
const CANCEL_LINE_LIMIT: u64 = 64;

/// Reads `input` until a line `cancel` (spaces and `\r` around it allowed) or its end, and says which. Holds at most
/// [`CANCEL_LINE_LIMIT`] bytes: a longer line is read in pieces and skipped whole.
fn read_until_cancel(mut input: impl BufRead) -> StdinCancel {
    let mut piece = Vec::new();
    // The piece before did not end its line: this one goes on with it.
    let mut within_line = false;
    loop {
        piece.clear();
        match (&mut input)
            .take(CANCEL_LINE_LIMIT)
            .read_until(b'\n', &mut piece)
        {
            Ok(0) | Err(_) => return StdinCancel::End,
            Ok(_) => {
                let ends_line = piece.last() == Some(&b'\n');
                if !within_line && ends_line && piece.trim_ascii() == b"cancel" {
                    return StdinCancel::Line;
                }
                within_line = !ends_line;
            }
        }
    }
}

#[cfg(unix)]
mod os {
    use jr2_probe::contract::Exit;
    use tokio::signal::unix::{Signal, SignalKind, signal};

    #[derive(Debug)]
    pub(super) struct Os {
        interrupt: Option<Signal>,
        terminate: Option<Signal>,
        hangup: Option<Signal>,
    }

    impl Os {
        pub(super) fn listen() -> Self {
            Self {
                interrupt: signal(SignalKind::interrupt()).ok(),
                terminate: signal(SignalKind::terminate()).ok(),
                hangup: signal(SignalKind::hangup()).ok(),
            }
        }

        pub(super) async fn recv(&mut self) -> Exit {
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
                () = next(self.hangup.as_mut()) => Exit::HungUp,
            }
        }
    }
}

#[cfg(windows)]
mod os {
    use jr2_probe::contract::Exit;
    use tokio::signal::windows::{CtrlBreak, CtrlC, CtrlClose, ctrl_break, ctrl_c, ctrl_close};

    /// Ctrl-C and Ctrl-Break stand for SIGINT, the console's close for SIGTERM (Windows then gives the process a few
    /// seconds, enough for the deletes to be sent).
    #[derive(Debug)]
    pub(super) struct Os {
        interrupt: Option<CtrlC>,
        brk: Option<CtrlBreak>,
        close: Option<CtrlClose>,
    }

    impl Os {
        pub(super) fn listen() -> Self {
            Self {
                interrupt: ctrl_c().ok(),
                brk: ctrl_break().ok(),
                close: ctrl_close().ok(),
            }
        }

        pub(super) async fn recv(&mut self) -> Exit {
            // A branch whose stream could not be set up, or ended, is disabled; with none left, never resolves.
            let Self {
                interrupt,
                brk,
                close,
            } = self;
            tokio::select! {
                Some(()) = async { interrupt.as_mut()?.recv().await } => Exit::Interrupted,
                Some(()) = async { brk.as_mut()?.recv().await } => Exit::Interrupted,
                Some(()) = async { close.as_mut()?.recv().await } => Exit::Terminated,
                else => std::future::pending().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::time::Duration;

    use super::*;

    async fn within(signals: &mut Signals) -> Option<Exit> {
        tokio::time::timeout(Duration::from_secs(10), signals.recv())
            .await
            .ok()
    }

    #[tokio::test]
    async fn a_cancel_line_is_an_interrupt() {
        let mut signals = Signals::listen();
        signals.cancel_on(|| Cursor::new(b"\n  \r\nnoise\n cancel\r\n".to_vec()));
        assert_eq!(within(&mut signals).await, Some(Exit::Interrupted));
    }

    #[tokio::test]
    async fn the_end_of_stdin_is_an_interrupt() {
        let mut signals = Signals::listen();
        signals.cancel_on(|| Cursor::new(b"".to_vec()));
        assert_eq!(within(&mut signals).await, Some(Exit::Interrupted));
    }

    #[test]
    fn only_the_word_on_its_own_line_is_a_cancel() {
        let mut input = Cursor::new(b"cancelled\ncancel me\n# cancel\n".to_vec());
        assert_eq!(read_until_cancel(&mut input), StdinCancel::End);
        // What follows the cancel line stays unread.
        let mut input = Cursor::new(b"{}\n\t cancel \r\nafter\n".to_vec());
        assert_eq!(read_until_cancel(&mut input), StdinCancel::Line);
        let mut rest = String::new();
        input.read_line(&mut rest).expect("a cursor");
        assert_eq!(rest, "after\n");
    }

    #[test]
    fn a_long_line_is_skipped_in_pieces_and_its_tail_is_not_a_cancel() {
        // `cancel` at the end of a 1 MiB line is part of that line; the next line is the cancel.
        let mut text = vec![b'x'; 1 << 20];
        text.extend_from_slice(b"cancel\ncancel\nafter\n");
        let mut input = Cursor::new(text);
        assert_eq!(read_until_cancel(&mut input), StdinCancel::Line);
        let mut rest = String::new();
        input.read_line(&mut rest).expect("a cursor");
        assert_eq!(rest, "after\n");
        // A line of exactly the limit, then one that ends the input without a newline: no cancel line, the end.
        let mut text = vec![b' '; usize::try_from(CANCEL_LINE_LIMIT).unwrap()];
        text.extend_from_slice(b"cancel\ncancel");
        assert_eq!(read_until_cancel(Cursor::new(text)), StdinCancel::End);
    }

    #[tokio::test]
    async fn without_cancel_on_nothing_comes() {
        let mut signals = Signals::listen();
        assert_eq!(signals.received(), None);
    }
}
