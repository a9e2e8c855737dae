//! `jr2-probe`: asks each model for one tool call, as a Turn of pi-ai 0.82.1 asks it, and says what came back.
//!
//! The library holds everything but the command line: the request per API kind ([`api`]), the SSE decoder
//! ([`sse`]), the tries and their classification ([`check`], [`retry`]), the transport ([`transport`]), the result
//! types ([`verdict`], [`outcome`]) and the human lines ([`render`]). The driver (`jr2-preflight`) reuses the result
//! types and the lines, which is why they live here and not in the binary. This crate never depends on `kube`.

pub mod api;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod outcome;
pub mod prompt;
pub mod render;
pub mod retry;
pub mod run;
pub mod sanitize;
pub mod spec;
pub mod sse;
pub mod target;
pub mod transport;
pub mod verdict;
