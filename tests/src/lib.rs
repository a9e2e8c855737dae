//! Test peers for jr2-preflight: the servers the end-to-end tests run the real binaries against. The tests
//! themselves live in each crate's `tests/` folder (`probe/tests/`, `orchestrate/tests/`); this crate holds only the
//! peers they use, each job in a room of its own:
//!
//! - [`provider`]: the fake providers, one per wire of the probe, and the server that serves and records them.
//! - [`cluster`]: a real one-node Kubernetes (built by `tests/kube/build.sh`) in a network namespace of its own.
//! - [`kube`]: a fake Kubernetes API server whose kubelet stand-in runs the real `jr2-probe`, for the driver.
//! - [`chaos`]: a raw TCP server whose HTTP framing misbehaves (stalls, resets, endless lines), for reliability.
//! - [`peers`]: launchers for the real third-party servers (llama.cpp's llama-server, LiteLLM, mitmproxy) `.ci/run` installs.
//! - [`http`]: what the fakes share of HTTP: the body type, whole and streamed answers, the recorded request.
//! - [`tls`]: a throwaway CA and a server certificate it signed, for the TLS tests.
//! - [`proxy`]: an http proxy (CONNECT and forwarding) on loopback, for the driver behind a proxy.
//! - [`redirect`]: one port that speaks TLS and plain HTTP both and records each request's scheme, for the
//!   redirect tests (a key sent in clear after an https → http downgrade is seen, not lost in a handshake).
//!
//! The `jr2-fake-provider` binary (`src/bin/fake_provider.rs`) serves the OpenAI-compatible fake as a process, for
//! the benchmark, a real gateway in front of it and the network-namespace tests. The old module names
//! (`fake_provider`, `fake_kube`, `fake_anthropic`...) stay as re-exports, so the tests that use them need no change.
//!
//! Everything binds 127.0.0.1: tests connect to loopback only.

pub mod chaos;
pub mod cli;
pub mod cluster;
pub mod http;
pub mod kube;
pub mod peers;
pub mod provider;
pub mod proxy;
pub mod redirect;
pub mod streams;
pub mod tls;

// The old names.
pub use kube as fake_kube;
pub use provider::anthropic_messages as fake_anthropic;
pub use provider::bedrock as fake_bedrock;
pub use provider::google as fake_google;
pub use provider::mistral as fake_mistral;
pub use provider::openai_responses as fake_responses;

/// The old home of the provider harness, the OpenAI-compatible fake and the test CA: now [`provider`],
/// [`provider::openai_completions`], [`http`] and [`tls`].
pub mod fake_provider {
    pub use crate::http::{Body, Recorded, full};
    pub use crate::provider::openai_completions::{GOOD_KEY, handler as openai_handler};
    pub use crate::provider::{FakeProvider, Handler, json_error, stream, stream_bytes};
    pub use crate::tls::TestCa;
}
