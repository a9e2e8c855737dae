//! A fake OpenAI-compatible provider whose behaviour the request's `model` chooses.
//!
//! It answers `POST .../chat/completions` the way real servers do, byte for byte where it matters: vLLM's error
//! bodies (400 tool-choice flags, 404 model, 401 `{"error":"Unauthorized"}`), a streamed tool call, a text answer,
//! a length stop, an error event after a 200, 429 with `retry-after`, 529, 503, an HTML 502, a stall. Every request is
//! recorded so tests can assert what the probe sent. It binds 127.0.0.1 only.
//!
//! Models (the part before an optional `@` suffix picks the behaviour):
//! `ok`, `ok-delay-<ms>`, `text`, `empty-text`, `length`, `error-after-200`, `overloaded-after-200`,
//! `vllm-no-parser`, `missing`, `auth` (401 unless the key matches), `echo-key` (401 that echoes the Authorization
//! header), `rate-limited` (429 always), `rate-limited-<n>` (429 on the first n tries, then ok), `quota`,
//! `overloaded` (529), `unavailable` (503), `unavailable-<n>`, `retry-after-huge`, `retry-after-date`, `stall`,
//! `stall-mid-stream`, `html-502`, `json-200`, `garbage`, `truncated`, `finish-error`, `no-newline-<bytes>`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A response body.
pub type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

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

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The JSON body (Null when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

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

/// The key the `auth` model accepts.
pub const GOOD_KEY: &str = "sk-fake-good-key-0123456789";

impl FakeProvider {
    /// Starts on 127.0.0.1 at `port` (0: any free port).
    pub async fn start_on(port: u16) -> std::io::Result<Self> {
        Self::serve(port, None, openai_handler()).await
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
        let fake = Self::serve(0, Some(ca.acceptor()), openai_handler())
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
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let served = state.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = &mut stop_rx => return,
                };
                let Ok((stream, _)) = accepted else { continue };
                let state = served.clone();
                let tls = tls.clone();
                let handler = handler.clone();
                tokio::spawn(async move {
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
                });
            }
        });
        Ok(Self {
            addr,
            scheme,
            state,
            stop: Some(stop_tx),
        })
    }

    /// Starts on any free loopback port.
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

/// A whole response.
pub fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).boxed())
        .expect("valid response")
}

/// A JSON response (an error body, usually).
pub fn json_error(status: StatusCode, body: Value) -> Response<Body> {
    full(status, "application/json", body.to_string())
}

fn vllm_error(status: u16, kind: &str, message: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": status}})
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    });
    format!("data: {c}\n\n")
}

fn tool_call_events() -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": "probe", "arguments": ""}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"status\":"}}]}),
            None,
        ),
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ready\"}"}}]}),
            None,
        ),
        chunk(json!({}), Some("tool_calls")),
        "data: [DONE]\n\n".to_owned(),
    ]
}

fn text_events(text: &str, finish: &str) -> Vec<String> {
    vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": text}), None),
        chunk(json!({}), Some(finish)),
        "data: [DONE]\n\n".to_owned(),
    ]
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
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(4);
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
    let mut rx = rx;
    let body = StreamBody::new(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    Response::builder()
        .status(200)
        .header("content-type", content_type)
        .header("cache-control", "no-cache")
        .body(BodyExt::boxed(body))
        .expect("valid response")
}

async fn handle(
    req: Request<Incoming>,
    state: Arc<Mutex<State>>,
    handler: Handler,
) -> Result<Response<Body>, Infallible> {
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    let headers: Vec<(String, String)> = req
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
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let key = body["model"]
        .as_str()
        .map_or_else(|| path.clone(), str::to_owned);
    let recorded = Recorded {
        method,
        path,
        headers,
        body,
    };
    let try_n = {
        let mut s = state.lock().unwrap();
        s.requests.push(recorded.clone());
        let n = s.tries.entry(key).or_default();
        *n += 1;
        *n
    };
    Ok(handler(recorded, try_n).await)
}

/// The OpenAI-compatible behaviour (`POST .../chat/completions`, `GET .../models`).
pub fn openai_handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| {
        Box::pin(async move {
            if req.method == "GET" && req.path.ends_with("/models") {
                return full(
                    StatusCode::OK,
                    "application/json",
                    json!({"object": "list", "data": []}).to_string(),
                );
            }
            if req.method != "POST" || !req.path.ends_with("/chat/completions") {
                return json_error(StatusCode::NOT_FOUND, json!({"detail": "Not Found"}));
            }
            let model = req.body["model"].as_str().unwrap_or("").to_owned();
            let authorization = req.header("authorization").unwrap_or("").to_owned();
            respond(&model, try_n, &authorization).await
        })
    })
}

async fn respond(model: &str, try_n: u32, authorization: &str) -> Response<Body> {
    let behaviour = model.split('@').next().unwrap_or("");
    let numbered = |prefix: &str| {
        behaviour
            .strip_prefix(prefix)
            .and_then(|n| n.parse::<u64>().ok())
    };
    if let Some(ms) = numbered("ok-delay-") {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        return stream(tool_call_events(), Duration::ZERO, false);
    }
    if let Some(n) = numbered("rate-limited-") {
        if u64::from(try_n) <= n {
            return rate_limited("0");
        }
        return stream(tool_call_events(), Duration::ZERO, false);
    }
    if let Some(n) = numbered("unavailable-") {
        if u64::from(try_n) <= n {
            return unavailable();
        }
        return stream(tool_call_events(), Duration::ZERO, false);
    }
    if let Some(bytes) = numbered("no-newline-") {
        let line = format!("data: {}", "x".repeat(bytes as usize));
        return stream(vec![line], Duration::ZERO, true);
    }
    match behaviour {
        "ok" => stream(tool_call_events(), Duration::ZERO, false),
        "text" => stream(text_events("I would call the probe tool, but here is some text instead.", "stop"), Duration::ZERO, false),
        "empty-text" => stream(text_events("", "stop"), Duration::ZERO, false),
        "length" => stream(text_events("Let me think about which tool", "length"), Duration::ZERO, false),
        "finish-error" => stream(text_events("", "network_error"), Duration::ZERO, false),
        "error-after-200" => stream(
            vec![
                chunk(json!({"role": "assistant", "content": ""}), None),
                format!("data: {}\n\n", json!({"error": {"message": "the backend dropped the request", "type": "internal_error", "code": 500}})),
            ],
            Duration::ZERO,
            false,
        ),
        "overloaded-after-200" => stream(
            vec![format!("data: {}\n\n", json!({"error": {"message": "Overloaded", "type": "overloaded_error"}}))],
            Duration::ZERO,
            false,
        ),
        "vllm-no-parser" => json_error(
            StatusCode::BAD_REQUEST,
            vllm_error(400, "BadRequestError", "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"),
        ),
        "missing" => json_error(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": format!("The model `{model}` does not exist."), "type": "NotFoundError", "param": "model", "code": 404}}),
        ),
        "auth" if authorization != format!("Bearer {GOOD_KEY}") => {
            json_error(StatusCode::UNAUTHORIZED, json!({"error": "Unauthorized"}))
        }
        "auth" => stream(tool_call_events(), Duration::ZERO, false),
        "echo-key" => json_error(
            StatusCode::UNAUTHORIZED,
            json!({"error": {"message": format!("Incorrect API key provided: {}. You can find your API key at https://example.invalid/keys.", authorization.trim_start_matches("Bearer ")), "type": "invalid_request_error", "code": "invalid_api_key"}}),
        ),
        "rate-limited" => rate_limited("0"),
        "retry-after-huge" => rate_limited("99999"),
        "retry-after-date" => {
            let at = std::time::SystemTime::now() + Duration::from_secs(1);
            rate_limited(&httpdate::fmt_http_date(at))
        }
        "quota" => Response::builder()
            .status(429)
            .header("content-type", "application/json")
            .header("retry-after", "0")
            .body(
                Full::new(Bytes::from(
                    json!({"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}).to_string(),
                ))
                .boxed(),
            )
            .expect("valid response"),
        "overloaded" => Response::builder()
            .status(529)
            .header("content-type", "application/json")
            .header("retry-after", "0")
            .body(Full::new(Bytes::from(json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).to_string())).boxed())
            .expect("valid response"),
        "unavailable" => unavailable(),
        "stall" => {
            // Never answer: the client's deadline must end this.
            std::future::pending::<()>().await;
            unreachable!()
        }
        "stall-mid-stream" => stream(vec![chunk(json!({"role": "assistant", "content": ""}), None)], Duration::ZERO, true),
        "html-502" => full(
            StatusCode::BAD_GATEWAY,
            "text/html",
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
        ),
        "json-200" => full(
            StatusCode::OK,
            "application/json",
            json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}).to_string(),
        ),
        "garbage" => stream(vec!["data: {this is not json\n\n".to_owned()], Duration::ZERO, false),
        "truncated" => stream(vec![chunk(json!({"content": "Sure, I"}), None)], Duration::ZERO, false),
        _ => json_error(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": format!("The model `{model}` does not exist."), "type": "NotFoundError", "param": "model", "code": 404}}),
        ),
    }
}

fn rate_limited(retry_after: &str) -> Response<Body> {
    Response::builder()
        .status(429)
        .header("content-type", "application/json")
        .header("retry-after", retry_after)
        .body(Full::new(Bytes::from(json!({"error": {"message": "Rate limit reached for requests", "type": "rate_limit_error", "param": null, "code": "rate_limit_exceeded"}}).to_string())).boxed())
        .expect("valid response")
}

fn unavailable() -> Response<Body> {
    json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}),
    )
}

/// A throwaway CA and a server certificate it signed. The CA's PEM is written to a file, as an operator's
/// `--ca-bundle` or a pod's `NODE_EXTRA_CA_CERTS` would name it.
pub struct TestCa {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// A file holding `ca_pem`.
    pub ca_file: std::path::PathBuf,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl TestCa {
    /// A CA, and a leaf for `names` signed by it.
    pub fn new(names: &[&str]) -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("a CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "jr2 test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign the CA");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().expect("a leaf key");
        let leaf_params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("leaf params");
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .expect("sign the leaf");
        let ca_pem = ca_cert.pem();
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ca_file =
            std::env::temp_dir().join(format!("jr2-test-ca-{}-{n}.pem", std::process::id()));
        std::fs::write(&ca_file, &ca_pem).expect("write the CA file");
        Self {
            ca_pem,
            ca_file,
            cert_der: leaf.der().to_vec(),
            key_der: leaf_key.serialize_der(),
        }
    }

    /// A TLS acceptor that presents the leaf.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        use tokio_rustls::rustls;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let cert = rustls::pki_types::CertificateDer::from(self.cert_der.clone());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key_der.clone().into());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("a server certificate");
        tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config))
    }
}
