//! Test peers for jr2-preflight: the servers the end-to-end tests run the real binaries against. The tests
//! themselves live in each crate's `tests/` folder (`probe/tests/`, `orchestrate/tests/`); this crate holds only the
//! peers they use, one job to a room:
//!
//! - [`provider`]: the fake providers, one per wire the probe speaks (`openai_completions`, `anthropic_messages`,
//!   `openai_responses`, `google`, `mistral`, `bedrock`), and the server that serves them and records each request.
//! - [`kube`]: a fake Kubernetes API server (Pods, Events, watches, logs) with a kubelet stand-in that runs the
//!   real `jr2-probe` as a process, for the driver's end-to-end tests.
//! - [`chaos`]: a raw TCP server whose HTTP framing misbehaves (stalls, slowloris, resets, endless lines, redirect
//!   loops, proxies that refuse or stall CONNECT), for the reliability tests.
//! - [`peers`]: launchers for the real third-party servers (llama-cpp-python, LiteLLM, mitmproxy as the Custodian) that
//!   `.ci/run` installs.
//! - [`http`]: the HTTP pieces the fakes share (the body type, whole and streamed responses, the recorded request).
//! - [`tls`]: a throwaway CA and a server certificate it signed.
//!
//! The `jr2-fake-provider` binary serves the OpenAI-compatible fake as a process (benchmarks, a real gateway in
//! front of it, the network-namespace tests). The modules' old names (`fake_provider`, `fake_kube`,
//! `fake_anthropic`...) are kept as re-exports, so the tests written against them need no change.
//!
//! Everything binds 127.0.0.1: tests connect to loopback only.

pub mod chaos;
pub mod http;
pub mod kube;
pub mod peers;
pub mod provider;
pub mod tls;

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
