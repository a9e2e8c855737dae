//! The contract: what both binaries and any caller of the probe share, and nothing else.
//!
//! `jr2-probe` writes these types, `jr2-preflight` reads them, `jr2 up` parses their JSON and compares their
//! lines: the API-kind vocabulary ([`api_kind`]), outcomes and stable codes ([`outcome`]), the verdict
//! ([`verdict`]), the human lines ([`render`]), the probe's JSON lines ([`events`]) and its termination message
//! ([`summary`]), and the exit codes ([`exit`]). It depends on serde and serde_json only (no HTTP, TLS or async
//! type), in the manner of kube-core and nextest-metadata, so a caller can take it without the rest.

pub mod api_kind;
pub mod endpoint;
pub mod events;
pub mod exit;
pub mod outcome;
pub mod render;
pub mod summary;
pub mod verdict;

pub use api_kind::{ApiKind, ToolChoice};
pub use events::ProbeEvent;
pub use exit::Exit;
