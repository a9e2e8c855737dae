//! The process's standard streams, for both binaries: no write to them ever panics.
//!
//! `println!` and `eprintln!` panic when the write fails (a full disk behind `> /dev/full`, a reader that closed the
//! pipe: `jr2-preflight --dry-run | true`), and the release profile aborts on a panic (exit 134, no line, and for
//! the driver possibly a check pod left behind). So the binaries write through here instead:
//!
//! - [`say!`](crate::say) writes one line on stderr and ignores a failure: when stderr itself is gone there is no
//!   one left to tell, and the run (and its clean-up) goes on.
//! - [`out`] writes to stdout and returns the failure as a [`StdoutError`], which the caller reports on one
//!   `error:` line ([`StdoutError::line`]) and ends with exit 1 ([`Exit::Failed`](crate::contract::Exit)): what
//!   the caller asked for (the verdict, the dry-run pods) did not reach it.

use std::fmt;
use std::io::{self, Write};

/// The runtime both binaries run on: two workers (their work is I/O: requests, watches, log streams). `Err`: the
/// `error:` line was written, and the exit to return ([`Exit::Failed`](crate::contract::Exit)).
pub fn runtime() -> Result<tokio::runtime::Runtime, std::process::ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            crate::say!("error: cannot start the async runtime: {e}");
            crate::contract::Exit::Failed.into()
        })
}

/// Writes one line on stderr, like `eprintln!`, without panicking when stderr cannot be written.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::console::say_fmt(::std::format_args!($($arg)*))
    };
}

/// [`say!`](crate::say)'s body: the line and its newline in one locked write; a failure is dropped.
pub fn say_fmt(args: fmt::Arguments<'_>) {
    let mut err = io::stderr().lock();
    let _ = err.write_fmt(args).and_then(|()| err.write_all(b"\n"));
}

/// A write to stdout that failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {what} to stdout: {source}")]
pub struct StdoutError {
    /// What was being written ("the verdict", "the dry-run pods").
    pub what: &'static str,
    /// Why it failed (a broken pipe, no space left on the device).
    #[source]
    pub source: io::Error,
}

impl StdoutError {
    /// The one line that reports it on stderr.
    pub fn line(&self) -> String {
        format!("error: {self}")
    }
}

/// Writes `text` to stdout and flushes it: `what` names it in the error.
pub fn out(what: &'static str, text: &[u8]) -> Result<(), StdoutError> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text)
        .and_then(|()| stdout.flush())
        .map_err(|source| StdoutError { what, source })
}

/// `value` as pretty JSON and a newline on stdout.
pub fn out_json(what: &'static str, value: &impl serde::Serialize) -> Result<(), StdoutError> {
    let mut text = serde_json::to_vec_pretty(value).map_err(|e| StdoutError {
        what,
        source: io::Error::other(e),
    })?;
    text.push(b'\n');
    out(what, &text)
}

/// The log of both binaries: nothing unless `RUST_LOG` asks for it (`jr2 up` reads stderr line by line, and every
/// line there is one of the contract's), on stderr, coloured only when stderr is a terminal.
pub fn init_tracing() {
    use std::io::IsTerminal;
    // Unset or not a filter: no log at all.
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_default_env() else {
        return;
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(io::stderr)
        .with_ansi(io::stderr().is_terminal())
        .with_target(false)
        .init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_line_names_what_and_why() {
        let e = StdoutError {
            what: "the verdict",
            source: io::Error::from(io::ErrorKind::BrokenPipe),
        };
        assert_eq!(
            e.line(),
            "error: cannot write the verdict to stdout: broken pipe"
        );
    }
}
