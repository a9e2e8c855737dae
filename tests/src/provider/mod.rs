//! The fake providers: one server harness, and one fake per wire the probe speaks (`probe/src/api/*.rs`), each a
//! [`Handler`] whose behaviour the request's model chooses.
//!
//! [`FakeProvider`] serves a handler on 127.0.0.1 (with TLS from a [`TestCa`] when asked), records every request
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

pub mod anthropic_messages;
pub mod bedrock;
pub mod google;
pub mod mistral;
pub mod model_servers;
pub mod openai_completions;
pub mod openai_responses;

use crate::http::accept_until_stopped;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::http::{Body, Recorded, channel, json};
use crate::tls::TestCa;

/// What answers a request: the recorded request and how many times its key (the body's `model`, else the path)
/// was tried so far, the current request included.
pub type Handler = Arc<
    dyn Fn(
            Recorded,
            u32,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>
        + Send
        + Sync,
>;

/// What the fake recorded: every request, and the tries of each key.
#[derive(Default)]
struct State {
    requests: Vec<Recorded>,
    tries: HashMap<String, u32>,
}

/// A running fake provider. Dropping it stops the server.
pub struct FakeProvider {
    addr: SocketAddr,
    scheme: &'static str,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeProvider {
    /// Starts on 127.0.0.1 at `port` (0: any free port), as the OpenAI-compatible fake.
    pub async fn start_on(port: u16) -> std::io::Result<Self> {
        Self::serve(port, None, openai_completions::handler()).await
    }

    /// Starts with another provider's behaviour (an Anthropic, Gemini... fake), with TLS when `tls` is given.
    pub async fn start_with(handler: Handler, tls: Option<&TestCa>) -> Self {
        Self::serve(0, tls.map(TestCa::acceptor), handler)
            .await
            .expect("bind 127.0.0.1")
    }

    /// Starts with TLS, its certificate signed by a fresh test CA for `names` (DNS names or IP addresses).
    pub async fn start_tls(names: &[&str]) -> (Self, TestCa) {
        let ca = TestCa::new(names);
        let fake = Self::serve(0, Some(ca.acceptor()), openai_completions::handler())
            .await
            .expect("bind 127.0.0.1");
        (fake, ca)
    }

    async fn serve(
        port: u16,
        tls: Option<tokio_rustls::TlsAcceptor>,
        handler: Handler,
    ) -> std::io::Result<Self> {
        let scheme = if tls.is_some() { "https" } else { "http" };
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let served = state.clone();
        let stop_tx = accept_until_stopped(listener, move |stream| {
            let state = served.clone();
            let tls = tls.clone();
            let handler = handler.clone();
            async move {
                let service = hyper::service::service_fn(move |req| {
                    handle(req, state.clone(), handler.clone())
                });
                let http = hyper::server::conn::http1::Builder::new();
                match tls {
                    Some(acceptor) => {
                        // A client that refuses the certificate ends the handshake here.
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let _ = http.serve_connection(TokioIo::new(stream), service).await;
                        }
                    }
                    None => {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                }
            }
        });
        Ok(Self {
            addr,
            scheme,
            state,
            stop: Some(stop_tx),
        })
    }

    /// Starts on any free loopback port, as the OpenAI-compatible fake.
    pub async fn start() -> Self {
        Self::start_on(0).await.expect("bind 127.0.0.1")
    }

    /// `http(s)://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        format!("{}://{}/v1", self.scheme, self.addr)
    }

    /// The base URL with `host` in place of the address (for a name the certificate holds, e.g. `localhost`).
    pub fn base_url_for(&self, host: &str) -> String {
        format!("{}://{host}:{}/v1", self.scheme, self.addr.port())
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// The requests whose body named `model`.
    pub fn requests_for(&self, model: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.body["model"] == model)
            .collect()
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A JSON response (an error body, usually).
pub fn json_error(status: StatusCode, body: Value) -> Response<Body> {
    json(status, &body)
}

/// A streamed 200 whose SSE events are sent by a task, with an optional pause before each and a stall at the end.
pub fn stream(events: Vec<String>, pause: Duration, stall_after: bool) -> Response<Body> {
    stream_bytes(
        "text/event-stream",
        events.into_iter().map(Bytes::from).collect(),
        pause,
        stall_after,
    )
}

/// A streamed 200 of any framing (AWS's binary event stream, say): `frames` are sent one by one by a task, with an
/// optional pause before each; with `stall_after` the body stays open until the client goes away.
pub fn stream_bytes(
    content_type: &str,
    frames: Vec<Bytes>,
    pause: Duration,
    stall_after: bool,
) -> Response<Body> {
    let (response, tx) = channel(content_type, "no-cache", 4);
    tokio::spawn(async move {
        for frame in frames {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            if tx.send(Ok(Frame::data(frame))).await.is_err() {
                return; // the client hung up
            }
        }
        if stall_after {
            // Hold the stream open until the client goes away.
            tx.closed().await;
        }
    });
    response
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
    handler: Handler,
) -> Result<Response<Body>, Infallible> {
    let recorded = Recorded::read(req).await;
    let key = recorded.body["model"]
        .as_str()
        .map_or_else(|| recorded.path.clone(), str::to_owned);
    let try_n = {
        let mut s = state.lock().unwrap();
        s.requests.push(recorded.clone());
        let n = s.tries.entry(key).or_default();
        *n += 1;
        *n
    };
    Ok(handler(recorded, try_n).await)
}
