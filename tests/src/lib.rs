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
//! - [`streams`]: standard streams that cannot be written (`/dev/full`, a pipe with no reader).
//! - [`cli`]: the usage errors both binaries end alike.
//!
//! The `jr2-fake-provider` binary (`src/bin/fake_provider.rs`) serves the OpenAI-compatible fake as a process, for
//! the benchmark, a real gateway in front of it and the network-namespace tests.
//!
//! Everything binds 127.0.0.1: tests connect to loopback only.

pub mod chaos;
pub mod check_run;
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
