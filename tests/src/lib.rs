//! Test peers for jr2-preflight.
//!
//! - [`fake_provider`]: a scriptable OpenAI-compatible server on loopback that answers as vLLM, llama.cpp and the
//!   big providers do, including their failures.
//! - [`peers`]: launchers for the real third-party servers (llama-cpp-python, LiteLLM) that `.ci/run` installs.
//!
//! Everything binds 127.0.0.1: tests connect to loopback only.

pub mod fake_provider;
pub mod peers;
