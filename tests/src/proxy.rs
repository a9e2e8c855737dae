//! A small http proxy on loopback for the driver's proxy tests: `CONNECT host:port` opens a tunnel, any other request
//! (absolute form, `GET http://host:port/...`) is forwarded on the same connection. Whatever host the client names,
//! the proxy connects to one upstream on loopback that the test gives it, so a kubeconfig can name a host that does
//! not resolve (`kube.test`) and the test still talks only to 127.0.0.1. Each request line it was sent is recorded,
//! with its `Proxy-Authorization` if any, so a test can tell that the driver went through the proxy, and how.
//!
//! With [`ConnectProxy::with_tls`] the upstream end of a tunnel is a TLS terminator (the test CA's leaf), for an
//! `https://` server in front of the plain-HTTP fake API server.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

/// One request line the proxy was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyRequest {
    /// `CONNECT kube.test:443 HTTP/1.1`, `GET http://127.0.0.1:1234/api HTTP/1.1`...
    pub line: String,
    /// The `Proxy-Authorization` header's value, if it had one.
    pub auth: Option<String>,
}

/// The proxy; stops when dropped.
pub struct ConnectProxy {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<ProxyRequest>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ConnectProxy {
    /// A proxy whose tunnels and forwarded requests all go to `upstream` (plain TCP).
    pub async fn start(upstream: SocketAddr) -> Self {
        Self::start_with(upstream, None).await
    }

    /// A proxy whose tunnels end in a TLS server presenting `ca`'s leaf, which passes the plain bytes on to
    /// `upstream`; forwarded (non-CONNECT) requests go to `upstream` as they are.
    pub async fn with_tls(upstream: SocketAddr, ca: &crate::tls::TestCa) -> Self {
        Self::start_with(upstream, Some(ca.acceptor())).await
    }

    async fn start_with(upstream: SocketAddr, tls: Option<tokio_rustls::TlsAcceptor>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recorded = seen.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = recorded.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, upstream, tls, recorded).await;
                });
            }
        });
        Self { addr, seen, task }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request line received so far.
    pub fn requests(&self) -> Vec<ProxyRequest> {
        self.seen.lock().expect("the proxy's record").clone()
    }
}

impl Drop for ConnectProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(
    stream: TcpStream,
    upstream: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
    seen: Arc<Mutex<Vec<ProxyRequest>>>,
) -> std::io::Result<()> {
    let mut client = BufReader::new(stream);
    let mut head = Vec::new();
    let mut line = String::new();
    let mut auth = None;
    let mut first = None;
    loop {
        line.clear();
        if client.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        head.extend_from_slice(line.as_bytes());
        let trimmed = line.trim_end();
        if first.is_none() {
            first = Some(trimmed.to_owned());
        } else if trimmed.is_empty() {
            break;
        } else if let Some((name, value)) = trimmed.split_once(':')
            && name.eq_ignore_ascii_case("proxy-authorization")
        {
            auth = Some(value.trim().to_owned());
        }
    }
    let first = first.unwrap_or_default();
    seen.lock().expect("the proxy's record").push(ProxyRequest {
        line: first.clone(),
        auth,
    });
    let mut up = TcpStream::connect(upstream).await?;
    if first.starts_with("CONNECT ") {
        client
            .get_mut()
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
        match tls {
            Some(acceptor) => {
                let tls = acceptor.accept(client).await?;
                pipe(tls, up).await
            }
            None => pipe(client, up).await,
        }
    } else {
        // Forwarded: the request as it came (absolute form), then the rest of the connection both ways.
        up.write_all(&head).await?;
        pipe(client, up).await
    }
}

async fn pipe(
    a: impl AsyncRead + AsyncWrite + Unpin,
    b: impl AsyncRead + AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let (mut a, mut b) = (a, b);
    tokio::io::copy_bidirectional(&mut a, &mut b)
        .await
        .map(|_| ())
}
