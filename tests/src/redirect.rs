//! A server for the redirect tests: one loopback port that speaks TLS and plain HTTP both (told apart by the first
//! byte, as a TLS record starts with 0x16), and records every request with the scheme it came in on.
//!
//! A key that reaches a server in clear text after an https → http downgrade to the same host and port arrives at the
//! same port as the TLS requests do; a server that only speaks TLS would drop it in a failed handshake, unseen. This
//! one keeps it, so a test can assert that it never came.
//!
//! It binds 127.0.0.1 only. Dropping the server stops it.

use crate::http::accept_until_stopped;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::BodyExt;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::http::Recorded;
use crate::provider::Handler;
use crate::tls::TestCa;

/// One request the server received, and the scheme it came in on.
#[derive(Clone, Debug)]
pub struct Arrival {
    /// `https` or `http`.
    pub scheme: &'static str,
    /// The request.
    pub request: Recorded,
}

/// A running server. Dropping it stops it.
pub struct RedirectServer {
    addr: SocketAddr,
    arrivals: Arc<Mutex<Vec<Arrival>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RedirectServer {
    /// Starts on a free port of 127.0.0.1, answering with `handler` (its try count is always 1). With `tls`, a
    /// connection whose first byte opens a TLS record is served over TLS with the CA's certificate, any other in
    /// plain HTTP; without, every connection is plain HTTP.
    pub async fn start(tls: Option<&TestCa>, handler: Handler) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("a local address");
        let acceptor = tls.map(TestCa::acceptor);
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let seen = arrivals.clone();
        let stop_tx = accept_until_stopped(listener, move |stream| {
            let (acceptor, handler, seen) = (acceptor.clone(), handler.clone(), seen.clone());
            async move {
                let mut first = [0u8; 1];
                let tls = match stream.peek(&mut first).await {
                    Ok(1) => first[0] == 0x16 && acceptor.is_some(),
                    _ => return,
                };
                let scheme = if tls { "https" } else { "http" };
                let service = hyper::service::service_fn(move |req| {
                    answer(req, scheme, handler.clone(), seen.clone())
                });
                let http = hyper::server::conn::http1::Builder::new();
                match acceptor.filter(|_| tls) {
                    Some(acceptor) => {
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
        Self {
            addr,
            arrivals,
            stop: Some(stop_tx),
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in the order they came.
    pub fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals.lock().unwrap().clone()
    }
}

impl Drop for RedirectServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

async fn answer(
    req: Request<Incoming>,
    scheme: &'static str,
    handler: Handler,
    seen: Arc<Mutex<Vec<Arrival>>>,
) -> Result<hyper::Response<crate::http::Body>, std::convert::Infallible> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request = Recorded {
        method,
        path,
        headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    };
    seen.lock().unwrap().push(Arrival {
        scheme,
        request: request.clone(),
    });
    Ok(handler(request, 1).await)
}
