//! `jr2-probe`: asks each model for one tool call, as a Turn of pi-ai 0.82.1 asks it, and says what came back.
//!
//! The library holds everything but the command line. [`contract`] is what both binaries and callers share (the
//! API-kind vocabulary, outcomes and codes, the verdict, the lines, the JSON lines, the exit codes; serde only).
//! Around it: the frame decoders ([`framing`]: SSE, AWS's event stream), the request and the reader per API kind
//! ([`api`]), the tries and their classification ([`check`], its pure stream judge [`check::stream`], [`retry`]),
//! the transport ([`transport`]) and pod mode ([`run`]). This crate never depends on `kube`.

pub mod api;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod console;
pub mod contract;
pub mod framing;
pub mod prompt;
pub mod retry;
pub mod run;
pub mod sanitize;
pub mod sidecar;
pub mod spec;
pub mod target;
#[cfg(any(test, feature = "test-builders"))]
pub mod test_builders;
pub mod transport;

// The contract's modules and the SSE decoder under the paths they had before their rooms existed, so callers keep
// compiling.
pub use contract::{outcome, render, verdict};
pub use framing::sse;
