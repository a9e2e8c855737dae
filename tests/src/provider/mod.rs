//! The fake providers: one server harness, and one fake per wire the probe speaks (`probe/src/api/*.rs`), each a
//! [`Handler`] whose behaviour the request's model chooses.
//!
//! [`FakeProvider`] serves a handler on 127.0.0.1 (with TLS from a [`TestCa`](crate::tls::TestCa) when asked), records every request
//! ([`FakeProvider::requests`]) and counts the tries of each model, so that a handler can fail the first n and then
//! answer. [`stream`], [`stream_bytes`] and [`json_error`] are the answers the handlers are built of.
//!
//! - [`openai_completions`]: OpenAI-compatible Chat Completions as vLLM, llama.cpp and the big providers answer,
//!   including their failures; what [`FakeProvider::start`] serves.
//! - [`anthropic_messages`]: the Anthropic Messages API's streams and errors.
//! - [`openai_responses`]: OpenAI's (and Azure OpenAI's) Responses API streams and errors.
//! - [`google`]: the Gemini API's (and Vertex express's) streams and errors.
//! - [`mistral`]: Mistral's chat completions.
//! - [`model_servers`]: llama-server, vLLM and LiteLLM shapes (their `server:` headers, metadata and error bodies).
//! - [`bedrock`]: Bedrock's ConverseStream (AWS event-stream frames).
//!
//! The rooms: `server` (the [`FakeProvider`] harness), `answer` (the [`Handler`] type and the answers handlers are
//! built of), and one file per wire above.

mod answer;
mod server;

pub mod anthropic_messages;
pub mod bedrock;
pub mod google;
pub mod mistral;
pub mod model_servers;
pub mod openai_completions;
pub mod openai_responses;

pub use answer::{Handler, json_error, stream, stream_bytes};
pub use server::FakeProvider;
