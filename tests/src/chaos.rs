//! A raw TCP chaos server on 127.0.0.1: an endpoint whose HTTP framing itself misbehaves, which hyper (the fake
//! provider's server) cannot be made to do. Each connection reads the request's head (and its body, by
//! `content-length`), then plays one [`Chaos`] script on the socket, byte for byte: a stall before the status line,
//! a status line sent a byte every half second, a reset in the middle of a body, a line of 64 MiB, a redirect to
//! itself, a proxy that refuses or never answers CONNECT, a TLS port that never answers the ClientHello...
//!
//! The scripts that send text echo the request's `Authorization` value into it (an error body, a garbage event, a
//! redirect's `Location`), so a test can assert that the client never repeats a key a server sends back.
//!
//! It binds 127.0.0.1 only. Dropping the server stops it and ends every connection it holds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// What the server does on each connection, once the request has been read.
#[derive(Clone, Debug)]
pub enum Chaos {
    /// Read the request, never answer (the status line never comes).
    StallBeforeHeaders,
    /// A 200 `text/event-stream` head and one chunk of a streamed answer, then nothing, the connection open.
    StallMidStream,
    /// A whole, valid streamed answer (a tool call), sent one byte every `every`, status line included.
    SlowlorisHead {
        /// The pause before each byte.
        every: Duration,
    },
    /// A 200 head at once, then an endless text answer, one byte every `every`.
    SlowlorisBody {
        /// The pause before each byte.
        every: Duration,
    },
    /// A 200 head and a chunk of the answer, then a TCP reset (`SO_LINGER` 0) in the middle of the body.
    ResetMidStream,
    /// A 200 head, then a chunked body that stops (FIN) in the middle of a chunk.
    CloseMidChunk,
    /// A 200 head, then `data: ` and `bytes` bytes of `x` with no line ending, then the connection held open.
    EndlessLine {
        /// How many bytes the line has.
        bytes: usize,
    },
    /// A 200 stream whose event is not UTF-8 (the echoed key sits in it).
    InvalidUtf8,
    /// A 200 stream of events that are not the API's JSON (the echoed key sits in them).
    GarbageSse,
    /// A 200 stream of text deltas without end and without a tool call, as fast as the client reads.
    EndlessText,
    /// A 200 stream that sends only SSE comments (`: keep-alive`), as fast as the client reads.
    EndlessComments,
    /// A 429 with this `retry-after` value (the body echoes the key).
    RateLimited {
        /// The raw header value: `99999`, `-5`, `soon`...
        retry_after: String,
    },
    /// A 429 (`retry-after: 1`, time enough for the client to pool the connection) to the first request, then, on
    /// the same kept-alive connection, nothing: the retry stalls on a pooled connection.
    RateLimitedThenStall,
    /// A 4xx/5xx whose body is this many bytes of JSON-ish text that never ends (an error page of 64 MiB).
    HugeErrorBody {
        /// The body's size.
        bytes: usize,
    },
    /// A response head with one header line this long (no end of the head in sight).
    HugeHeader {
        /// The header line's length.
        bytes: usize,
    },
    /// Something that is not HTTP answers (an SSH server's banner).
    NotHttp,
    /// A 307 to the same path (with the echoed key in the query): a redirect loop.
    RedirectLoop,
    /// Accept, read nothing, answer nothing: a TLS port that never answers the ClientHello.
    Silent,
    /// A proxy that answers every CONNECT with `403 Forbidden`.
    ProxyRefuse,
    /// A proxy that reads the CONNECT and never answers.
    ProxyStall,
}

/// A running chaos server. Dropping it stops it.
pub struct ChaosServer {
    addr: std::net::SocketAddr,
    connections: Arc<AtomicUsize>,
    sent: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl ChaosServer {
    /// Starts on a free port of 127.0.0.1.
    pub async fn start(chaos: Chaos) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("a local address");
        let connections = Arc::new(AtomicUsize::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let (count, bytes) = (connections.clone(), sent.clone());
        let task = tokio::spawn(async move {
            // The connections live in the set: aborting this task drops it, which aborts them all.
            let mut running = JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        count.fetch_add(1, Ordering::SeqCst);
                        let chaos = chaos.clone();
                        let bytes = bytes.clone();
                        running.spawn(async move {
                            let _ = serve(stream, &chaos, &bytes).await;
                        });
                    }
                    Some(_) = running.join_next(), if !running.is_empty() => {}
                }
            }
        });
        Self {
            addr,
            connections,
            sent,
            task,
        }
    }

    /// The bound address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `https://127.0.0.1:<port>/v1`: for [`Chaos::Silent`], a TLS endpoint whose handshake never ends.
    pub fn https_base_url(&self) -> String {
        format!("https://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:<port>`: for the proxy scripts, as `HTTPS_PROXY`.
    pub fn proxy_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Bytes written to clients so far, all connections together.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::SeqCst)
    }
}

impl Drop for ChaosServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The request as far as the scripts need it.
struct Request {
    method: String,
    path: String,
    authorization: String,
}

/// Reads the head (at most 64 KiB) and a `content-length` body (at most 1 MiB, the rest is left unread).
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Request> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > 64 * 1024 {
            return Err(std::io::Error::other("request head too long"));
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    let mut authorization = String::new();
    let mut length = 0usize;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("authorization") {
                value.clone_into(&mut authorization);
            } else if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
        }
    }
    let mut have = buf.len() - head_end;
    let want = length.min(1024 * 1024);
    let mut chunk = [0u8; 4096];
    while have < want {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        have += n;
    }
    Ok(Request {
        method,
        path,
        authorization,
    })
}

/// Writes and counts.
async fn send(stream: &mut TcpStream, bytes: &[u8], sent: &AtomicU64) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    sent.fetch_add(bytes.len() as u64, Ordering::Relaxed);
    Ok(())
}

/// Holds the connection until the client goes away (reads until EOF or an error).
async fn hold(stream: &mut TcpStream) {
    let mut sink = [0u8; 1024];
    while let Ok(n) = stream.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";

fn chunk_event(delta: &str, finish: Option<&str>) -> String {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"id\":\"chatcmpl-chaos\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"chaos\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
    )
}

/// A whole streamed tool call, with its head (close-delimited).
fn tool_call_response() -> String {
    let mut s = SSE_HEAD.to_owned();
    s.push_str(&chunk_event(r#"{"role":"assistant","content":null}"#, None));
    s.push_str(&chunk_event(
        r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"probe","arguments":"{}"}}]}"#,
        None,
    ));
    s.push_str(&chunk_event("{}", Some("tool_calls")));
    s.push_str("data: [DONE]\n\n");
    s
}

/// The key as a server would echo it: the Authorization value without its scheme.
fn echoed(req: &Request) -> String {
    let v = req.authorization.as_str();
    v.strip_prefix("Bearer ").unwrap_or(v).to_owned()
}

async fn serve(mut stream: TcpStream, chaos: &Chaos, sent: &AtomicU64) -> std::io::Result<()> {
    let _ = stream.set_nodelay(true);
    if matches!(chaos, Chaos::Silent) {
        hold(&mut stream).await;
        return Ok(());
    }
    let req = read_request(&mut stream).await?;
    match chaos {
        Chaos::Silent => unreachable!("handled above"),
        Chaos::StallBeforeHeaders | Chaos::ProxyStall => hold(&mut stream).await,
        Chaos::StallMidStream => {
            let mut s = SSE_HEAD.to_owned();
            s.push_str(&chunk_event(r#"{"role":"assistant","content":""}"#, None));
            send(&mut stream, s.as_bytes(), sent).await?;
            hold(&mut stream).await;
        }
        Chaos::SlowlorisHead { every } => {
            for b in tool_call_response().bytes() {
                tokio::time::sleep(*every).await;
                send(&mut stream, &[b], sent).await?;
            }
            hold(&mut stream).await;
        }
        Chaos::SlowlorisBody { every } => {
            send(&mut stream, SSE_HEAD.as_bytes(), sent).await?;
            loop {
                for b in chunk_event(r#"{"content":"slow "}"#, None).bytes() {
                    tokio::time::sleep(*every).await;
                    send(&mut stream, &[b], sent).await?;
                }
            }
        }
        Chaos::ResetMidStream => {
            let mut s = SSE_HEAD.to_owned();
            s.push_str(&chunk_event(
                r#"{"role":"assistant","content":"Let me"}"#,
                None,
            ));
            s.push_str("data: {\"id\":\"chatcmpl-chaos\",\"choi");
            send(&mut stream, s.as_bytes(), sent).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
            // A zero linger turns the close into a RST.
            stream.set_zero_linger()?;
            drop(stream);
        }
        Chaos::CloseMidChunk => {
            let event = chunk_event(r#"{"role":"assistant","content":"Let me"}"#, None);
            let s = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n400\r\ndata: {{\"id\"",
                event.len()
            );
            send(&mut stream, s.as_bytes(), sent).await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
            stream.shutdown().await?;
        }
        Chaos::EndlessLine { bytes } => {
            send(&mut stream, SSE_HEAD.as_bytes(), sent).await?;
            send(&mut stream, b"data: ", sent).await?;
            let block = vec![b'x'; 64 * 1024];
            let mut left = *bytes;
            while left > 0 {
                let n = left.min(block.len());
                send(&mut stream, &block[..n], sent).await?;
                left -= n;
            }
            hold(&mut stream).await;
        }
        Chaos::InvalidUtf8 => {
            let mut s = SSE_HEAD.as_bytes().to_vec();
            s.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
            s.extend_from_slice(echoed(&req).as_bytes());
            s.extend_from_slice(b" \xff\xfe\xc0\x80 \xed\xa0\x80\"}}]}\n\n");
            send(&mut stream, &s, sent).await?;
            hold(&mut stream).await;
        }
        Chaos::GarbageSse => {
            let s = format!(
                "{SSE_HEAD}event: \u{1b}[31mred\ndata: {{this is not json, key={key}\n\nretry: soon\n\x00\x01\x02\n\n",
                key = echoed(&req)
            );
            send(&mut stream, s.as_bytes(), sent).await?;
            hold(&mut stream).await;
        }
        Chaos::EndlessText => {
            send(&mut stream, SSE_HEAD.as_bytes(), sent).await?;
            let mut batch = String::new();
            for _ in 0..64 {
                batch.push_str(&chunk_event(
                    r#"{"content":"I will not call a tool, I will only talk. "}"#,
                    None,
                ));
            }
            loop {
                send(&mut stream, batch.as_bytes(), sent).await?;
            }
        }
        Chaos::EndlessComments => {
            send(&mut stream, SSE_HEAD.as_bytes(), sent).await?;
            let batch = ": keep-alive\n".repeat(1024);
            loop {
                send(&mut stream, batch.as_bytes(), sent).await?;
            }
        }
        Chaos::RateLimited { retry_after } => {
            // Every request on the connection (a retry reuses it) gets the same 429.
            let mut req = req;
            loop {
                let body = format!(
                    "{{\"error\":{{\"message\":\"Rate limit reached for key {}\",\"type\":\"rate_limit_error\",\"code\":\"rate_limit_exceeded\"}}}}",
                    echoed(&req)
                );
                let s = format!(
                    "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: {retry_after}\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                send(&mut stream, s.as_bytes(), sent).await?;
                req = read_request(&mut stream).await?;
            }
        }
        Chaos::RateLimitedThenStall => {
            let body =
                "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"rate_limit_error\"}}";
            let s = format!(
                "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            send(&mut stream, s.as_bytes(), sent).await?;
            let _next = read_request(&mut stream).await?;
            hold(&mut stream).await;
        }
        Chaos::NotHttp => {
            send(&mut stream, b"SSH-2.0-OpenSSH_9.6p1 Debian-4\r\n", sent).await?;
            hold(&mut stream).await;
        }
        Chaos::HugeErrorBody { bytes } => {
            let start = format!(
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{{\"error\":{{\"message\":\"key {} ",
                echoed(&req)
            );
            send(&mut stream, start.as_bytes(), sent).await?;
            let block = vec![b'y'; 64 * 1024];
            let mut left = *bytes;
            while left > 0 {
                let n = left.min(block.len());
                send(&mut stream, &block[..n], sent).await?;
                left -= n;
            }
            hold(&mut stream).await;
        }
        Chaos::HugeHeader { bytes } => {
            send(
                &mut stream,
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-padding: ",
                sent,
            )
            .await?;
            let block = vec![b'z'; 64 * 1024];
            let mut left = *bytes;
            while left > 0 {
                let n = left.min(block.len());
                send(&mut stream, &block[..n], sent).await?;
                left -= n;
            }
            hold(&mut stream).await;
        }
        Chaos::RedirectLoop => {
            // Every request on the connection (the client reuses it for the next hop) gets the same redirect.
            let mut req = req;
            loop {
                let path = req.path.split('?').next().unwrap_or("/").to_owned();
                let s = format!(
                    "HTTP/1.1 307 Temporary Redirect\r\nlocation: {path}?k={}\r\ncontent-length: 0\r\n\r\n",
                    echoed(&req).replace(' ', "%20")
                );
                send(&mut stream, s.as_bytes(), sent).await?;
                req = read_request(&mut stream).await?;
            }
        }
        Chaos::ProxyRefuse => {
            let status = if req.method == "CONNECT" {
                "403 Forbidden"
            } else {
                "405 Method Not Allowed"
            };
            let s = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            send(&mut stream, s.as_bytes(), sent).await?;
        }
    }
    Ok(())
}
