//! `jr2-probe`: asks each model for one tool call, as a Turn of pi-ai 0.82.1 asks it, and says what came back.
//!
//! The library holds everything but the command line. [`contract`] is what both binaries and callers share (the
//! API-kind vocabulary, outcomes and codes, the verdict, the lines, the JSON lines, the exit codes; serde only).
//! Around it: the request per API kind ([`api`]), the SSE decoder ([`sse`]), the tries and their classification
//! ([`check`], [`retry`]), the transport ([`transport`]) and pod mode ([`run`]). This crate never depends on `kube`.

pub mod api;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod contract;
pub mod prompt;
pub mod retry;
pub mod run;
pub mod sanitize;
pub mod spec;
pub mod sse;
pub mod target;
pub mod transport;

// The contract's modules under the paths they had before it existed, so callers keep compiling.
pub use contract::{outcome, render, verdict};
