//! Test peers for jr2-preflight.
//!
//! - [`fake_provider`]: a scriptable OpenAI-compatible server on loopback that answers as vLLM, llama.cpp and the
//!   big providers do, including their failures.
//! - [`fake_anthropic`]: the Anthropic Messages API's streams and errors, for `FakeProvider::start_with`.
//! - [`fake_mistral`], [`fake_bedrock`]: Mistral's chat completions and Bedrock's ConverseStream (AWS event-stream
//!   frames), for `FakeProvider::start_with`.
//! - [`fake_google`]: the Gemini API's (and Vertex express's) streams and errors, for `FakeProvider::start_with`.
//! - [`fake_responses`]: OpenAI's (and Azure OpenAI's) Responses API streams and errors, for
//!   `FakeProvider::start_with`.
//! - [`chaos`]: a raw TCP server whose HTTP framing misbehaves (stalls, slowloris, resets, endless lines, redirect
//!   loops, proxies that refuse or stall CONNECT), for the reliability tests.
//! - [`fake_kube`]: a fake Kubernetes API server (Pods, Events, watches, logs) with a kubelet stand-in that runs the
//!   real `jr2-probe` as a process, for the driver's end-to-end tests.
//! - [`peers`]: launchers for the real third-party servers (llama-cpp-python, LiteLLM) that `.ci/run` installs.
//!
//! Everything binds 127.0.0.1: tests connect to loopback only.

pub mod chaos;
pub mod fake_anthropic;
pub mod fake_bedrock;
pub mod fake_google;
pub mod fake_mistral;
pub mod fake_provider;
pub mod fake_responses;
pub mod http;
pub mod kube;
pub mod peers;

/// The fake API server's old name.
pub use kube as fake_kube;
