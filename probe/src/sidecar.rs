//! The Custodian, before the first request of a check pod.
//!
//! In the check pod the Custodian is a plain container before the probe when the probe can ask its readiness itself
//! (the kubelet starts both in one sync: a native sidecar would cost a relist, a second, on every preflight), else a
//! native sidecar, which the kubelet starts the probe after as soon as it sees its process run. Either way the probe
//! starts before Envoy listens or is ready. A Turn comes long after its pod started; the probe comes at once, and its first connection
//! would be refused by a Custodian that is only starting: a check that fails where no Turn would. So in pod mode,
//! before the first request, the probe waits:
//!
//! - until the Custodian's readiness endpoint answers as its readiness probe wants (`JR2_CUSTODIAN_READY`, which
//!   the driver writes from that probe: an HTTP status 200-399, or a TCP connection), asking every
//!   [`READY_EVERY`], where the kubelet asks every second at best;
//! - then until each loopback proxy its models go through accepts a TCP connection, trying every [`RETRY_EVERY`].
//!
//! Both within [`LISTEN_WAIT`] in all. A Custodian still not ready, or a proxy that still refuses, is then left to the
//! check, whose line says what the connection met.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::time::Instant;

use crate::contract::ApiKind;
use crate::target::Target;
use crate::transport::ProxyEnv;

/// The longest the probe waits for the Custodian to be ready and its loopback proxy to listen, in all.
pub const LISTEN_WAIT: Duration = Duration::from_secs(15);
/// How often it tries a proxy.
pub const RETRY_EVERY: Duration = Duration::from_millis(100);
/// How often it asks the Custodian's readiness endpoint.
pub const READY_EVERY: Duration = Duration::from_millis(20);
/// The env var in which the driver names the Custodian's readiness endpoint in the check pod:
/// `http://127.0.0.1:<port><path>` (an `httpGet` readiness probe) or `tcp://127.0.0.1:<port>` (a `tcpSocket` one).
pub const READY_ENV: &str = "JR2_CUSTODIAN_READY";
/// The most of an answer read for its status line.
const STATUS_LINE_MAX: usize = 256;

/// The Custodian's readiness endpoint, on loopback, as [`READY_ENV`] names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Ready when `GET <path>` answers 200-399, as the kubelet's `httpGet` probe judges it.
    Http {
        /// Where it listens.
        addr: SocketAddr,
        /// The path and query, as the request line carries them.
        path: String,
    },
    /// Ready when it accepts a TCP connection, as the kubelet's `tcpSocket` probe judges it.
    Tcp {
        /// Where it listens.
        addr: SocketAddr,
    },
}

impl Readiness {
    /// `http://127.0.0.1:15021/healthz` or `tcp://127.0.0.1:15021`; a loopback address only (`localhost` is
    /// 127.0.0.1), and a port for `tcp`. `None` for anything else.
    pub fn parse(value: &str) -> Option<Readiness> {
        let url = url::Url::parse(value.trim()).ok()?;
        let ip: IpAddr = match url.host()? {
            url::Host::Ipv4(ip) => ip.into(),
            url::Host::Ipv6(ip) => ip.into(),
            url::Host::Domain(d) if d.eq_ignore_ascii_case("localhost") => {
                IpAddr::from([127, 0, 0, 1])
            }
            url::Host::Domain(_) => return None,
        };
        if !ip.is_loopback() || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        match url.scheme() {
            "http" => Some(Readiness::Http {
                addr: SocketAddr::new(ip, url.port_or_known_default()?),
                path: url[url::Position::BeforePath..url::Position::AfterQuery].to_owned(),
            }),
            "tcp" => Some(Readiness::Tcp {
                addr: SocketAddr::new(ip, url.port()?),
            }),
            _ => None,
        }
    }

    /// Asks once, within `within`: ready or not.
    async fn ask(&self, within: Duration) -> bool {
        let ask = async {
            match self {
                Readiness::Tcp { addr } => tokio::net::TcpStream::connect(addr).await.is_ok(),
                Readiness::Http { addr, path } => http_ready(*addr, path).await,
            }
        };
        tokio::time::timeout(within, ask).await.unwrap_or(false)
    }
}

/// One `GET` of the readiness path: its status line says 200-399. The answer's first bytes only are read.
async fn http_ready(addr: SocketAddr, path: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut conn) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: jr2-probe\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    if conn.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = Vec::with_capacity(64);
    let mut buf = [0u8; 64];
    while !head.contains(&b'\n') && head.len() < STATUS_LINE_MAX {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    status_ok(&head)
}

/// `HTTP/1.x NNN ...` with NNN in 200-399.
fn status_ok(head: &[u8]) -> bool {
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let mut parts = line.split(|b| *b == b' ');
    let version = parts.next().unwrap_or_default();
    let code = parts
        .next()
        .and_then(|c| std::str::from_utf8(c).ok())
        .filter(|c| c.len() == 3)
        .and_then(|c| c.parse::<u16>().ok());
    version.starts_with(b"HTTP/1.") && code.is_some_and(|c| (200..400).contains(&c))
}

/// Waits until the Custodian is ready, or `until` has passed: whether it was.
pub async fn until_ready(readiness: &Readiness, until: Instant) -> bool {
    let mut said = false;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if readiness.ask(left.min(Duration::from_secs(1))).await {
            return true;
        }
        if Instant::now() + READY_EVERY > until {
            tracing::debug!(?readiness, "the Custodian is not ready");
            return false;
        }
        if !said {
            said = true;
            tracing::info!(?readiness, "the Custodian is not ready yet; waiting for it");
        }
        tokio::time::sleep(READY_EVERY).await;
    }
}

/// A loopback proxy: where it listens, as its URL names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopbackProxy {
    /// `127.0.0.1`, `::1` or `localhost`.
    pub host: String,
    /// Its port (the scheme's default when the URL names none).
    pub port: u16,
}

/// The loopback proxies the targets' requests go through, once each, in the targets' order.
pub fn loopback_proxies(proxy: &ProxyEnv, targets: &[Target]) -> Vec<LoopbackProxy> {
    loopback_proxies_of(proxy, targets.iter().map(|t| (t.api, &t.base_url)))
}

fn loopback_proxies_of<'a>(
    proxy: &ProxyEnv,
    base_urls: impl IntoIterator<Item = (ApiKind, &'a url::Url)>,
) -> Vec<LoopbackProxy> {
    let mut found: Vec<LoopbackProxy> = Vec::new();
    for (api, base_url) in base_urls {
        let Some(url) = proxy.proxy_for_api(api, base_url) else {
            continue;
        };
        let Some(port) = url.port_or_known_default() else {
            continue;
        };
        let host = match url.host() {
            Some(url::Host::Ipv4(ip)) if ip.is_loopback() => ip.to_string(),
            Some(url::Host::Ipv6(ip)) if ip.is_loopback() => ip.to_string(),
            Some(url::Host::Domain(d))
                if d.eq_ignore_ascii_case("localhost")
                    || d.to_ascii_lowercase().ends_with(".localhost") =>
            {
                d.to_ascii_lowercase()
            }
            _ => continue,
        };
        let p = LoopbackProxy { host, port };
        if !found.contains(&p) {
            found.push(p);
        }
    }
    found
}

/// Waits until each proxy accepts a connection, or `until` has passed; returns the ones that did not (a refusal to
/// the end, or another error, which waiting does not mend).
pub async fn until_listening(proxies: &[LoopbackProxy], until: Instant) -> Vec<LoopbackProxy> {
    let mut not_listening = Vec::new();
    for p in proxies {
        if !listens(p, until).await {
            tracing::debug!(host = %p.host, port = p.port, "the loopback proxy does not listen");
            not_listening.push(p.clone());
        }
    }
    not_listening
}

async fn listens(p: &LoopbackProxy, until: Instant) -> bool {
    let addrs: Vec<SocketAddr> = match p.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, p.port)],
        // `localhost` (and `*.localhost`) is loopback by definition: both families, as a resolver gives them.
        Err(_) => vec![
            SocketAddr::from(([127, 0, 0, 1], p.port)),
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, p.port)),
        ],
    };
    let mut said = false;
    loop {
        let mut refused = false;
        for addr in &addrs {
            let left = until.saturating_duration_since(Instant::now());
            match tokio::time::timeout(
                left.min(Duration::from_secs(1)),
                tokio::net::TcpStream::connect(addr),
            )
            .await
            {
                Ok(Ok(_)) => return true,
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => refused = true,
                // No answer yet (a listener whose backlog is full): try again.
                Err(_) => refused = true,
                Ok(Err(_)) => {}
            }
        }
        if !refused || Instant::now() + RETRY_EVERY > until {
            return false;
        }
        if !said {
            said = true;
            tracing::info!(host = %p.host, port = p.port, "the loopback proxy does not listen yet; waiting for it");
        }
        tokio::time::sleep(RETRY_EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(bases: &[&str]) -> Vec<(ApiKind, url::Url)> {
        bases
            .iter()
            .map(|b| (ApiKind::OpenAiCompletions, b.parse().unwrap()))
            .collect()
    }

    #[test]
    fn only_loopback_proxies_are_waited_for_each_once() {
        let env = ProxyEnv::from_lookup(|name| match name {
            "HTTPS_PROXY" => Some("http://127.0.0.1:15001".to_owned()),
            "HTTP_PROXY" => Some("http://proxy.corp.example:3128".to_owned()),
            _ => None,
        });
        let targets = urls(&[
            "https://api.anthropic.com/v1",
            "https://generativelanguage.googleapis.com/v1beta",
            "http://vllm.lan.example:8000/v1",
        ]);
        assert_eq!(
            loopback_proxies_of(&env, targets.iter().map(|(a, u)| (*a, u))),
            [LoopbackProxy {
                host: "127.0.0.1".to_owned(),
                port: 15001
            }]
        );
        let env = ProxyEnv::from_lookup(|name| {
            (name == "HTTPS_PROXY").then(|| "http://localhost".to_owned())
        });
        assert_eq!(
            loopback_proxies_of(&env, targets[..1].iter().map(|(a, u)| (*a, u))),
            [LoopbackProxy {
                host: "localhost".to_owned(),
                port: 80
            }]
        );
        let env = ProxyEnv::from_lookup(|_| None);
        assert!(loopback_proxies_of(&env, targets.iter().map(|(a, u)| (*a, u))).is_empty());
    }

    #[test]
    fn readiness_is_a_loopback_http_or_tcp_endpoint() {
        assert_eq!(
            Readiness::parse("http://127.0.0.1:15021/healthz"),
            Some(Readiness::Http {
                addr: SocketAddr::from(([127, 0, 0, 1], 15021)),
                path: "/healthz".to_owned()
            })
        );
        assert_eq!(
            Readiness::parse("http://localhost/ready?full=1"),
            Some(Readiness::Http {
                addr: SocketAddr::from(([127, 0, 0, 1], 80)),
                path: "/ready?full=1".to_owned()
            })
        );
        assert_eq!(
            Readiness::parse("tcp://[::1]:15001"),
            Some(Readiness::Tcp {
                addr: SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 15001))
            })
        );
        for not in [
            "http://10.0.0.5:15021/healthz",
            "http://custodian.example:15021/healthz",
            "https://127.0.0.1:15021/healthz",
            "http://u:p@127.0.0.1:15021/healthz",
            "tcp://127.0.0.1",
            "exec://127.0.0.1:1",
            "",
            "127.0.0.1:15021",
        ] {
            assert_eq!(Readiness::parse(not), None, "{not}");
        }
    }

    #[test]
    fn a_status_line_of_200_to_399_is_ready() {
        assert!(status_ok(b"HTTP/1.1 200 OK\r\n"));
        assert!(status_ok(b"HTTP/1.0 302 Found\r\n"));
        assert!(status_ok(b"HTTP/1.1 204"));
        assert!(!status_ok(b"HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(!status_ok(b"HTTP/1.1 199 x\r\n"));
        assert!(!status_ok(b"HTTP/1.1 400 Bad Request\r\n"));
        assert!(!status_ok(b"SSH-2.0-OpenSSH_9.6\r\n"));
        assert!(!status_ok(b"HTTP/1.1 2000 OK\r\n"));
        assert!(!status_ok(b""));
    }

    /// A health endpoint on loopback that answers 503 to its first `not_ready` requests, then 200; counts them.
    async fn health(
        not_ready: usize,
    ) -> (SocketAddr, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = asked.clone();
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 1024];
                let _ = conn.read(&mut buf).await;
                assert!(buf.starts_with(b"GET /healthz HTTP/1.1\r\n"));
                let status = if n < not_ready {
                    "503 Service Unavailable"
                } else {
                    "200 OK"
                };
                let _ = conn
                    .write_all(format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n").as_bytes())
                    .await;
            }
        });
        (addr, asked)
    }

    #[tokio::test]
    async fn the_probe_asks_until_the_custodian_is_ready() {
        let (addr, asked) = health(5).await;
        let ready = Readiness::Http {
            addr,
            path: "/healthz".to_owned(),
        };
        let began = Instant::now();
        assert!(until_ready(&ready, began + Duration::from_secs(10)).await);
        assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 6);
        // Five refusals, one READY_EVERY apart: far less than one kubelet period.
        assert!(
            began.elapsed() < Duration::from_millis(900),
            "{:?}",
            began.elapsed()
        );
    }

    #[tokio::test]
    async fn a_custodian_never_ready_is_waited_for_only_until_the_bound() {
        let (addr, asked) = health(usize::MAX).await;
        let ready = Readiness::Http {
            addr,
            path: "/healthz".to_owned(),
        };
        let began = Instant::now();
        assert!(!until_ready(&ready, began + Duration::from_millis(300)).await);
        let waited = began.elapsed();
        assert!(
            waited >= Duration::from_millis(280) && waited < Duration::from_secs(2),
            "{waited:?}"
        );
        assert!(asked.load(std::sync::atomic::Ordering::SeqCst) >= 5);
        // Nothing listening: a TCP endpoint refuses until the bound.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = closed.local_addr().unwrap();
        drop(closed);
        let began = Instant::now();
        assert!(!until_ready(&Readiness::Tcp { addr }, began + Duration::from_millis(200)).await);
        assert!(began.elapsed() < Duration::from_secs(2));
        let open = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = open.local_addr().unwrap();
        assert!(
            until_ready(
                &Readiness::Tcp { addr },
                Instant::now() + Duration::from_secs(5)
            )
            .await
        );
    }
}
