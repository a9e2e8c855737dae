//! The server every fake provider runs in: [`FakeProvider`] serves a [`Handler`] on 127.0.0.1 (with TLS from a
//! [`TestCa`] when asked), records every request and counts the tries of each model, so that a handler can fail
//! the first n and then answer.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::answer::Handler;
use super::openai_completions;
use crate::http::{Body, Recorded, accept_until_stopped};
use crate::tls::TestCa;

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
