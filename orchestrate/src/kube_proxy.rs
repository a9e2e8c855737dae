//! The proxy between the driver and the API server, chosen as kubectl chooses it, so that `jr2 up` works on a laptop
//! behind a corporate proxy exactly where kubectl does.
//!
//! client-go takes the kubeconfig cluster's `proxy-url` when it has one (for every server, loopback included), else
//! Go's `http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy): `HTTPS_PROXY` (else `https_proxy`) for an
//! `https` server, `HTTP_PROXY` (else `http_proxy`) for an `http` one, the first that is set and not empty; never for
//! `localhost` or a loopback address; never for a server `NO_PROXY` (else `no_proxy`) names. `NO_PROXY` is read
//! entry by entry as httpproxy reads it: `*` is every host; a CIDR (`10.0.0.0/8`) holds the IPs in it; an IP (with
//! an optional port) is that IP; a name matches itself and every name below it (`example.com`, `.example.com` and
//! `*.example.com` all match `api.example.com`; only the first also matches `example.com` itself), with an optional
//! port; entries are lower-cased and trimmed, empty ones skipped. A proxy value without a scheme is `http://`.
//!
//! An `https` server is reached through the proxy with `CONNECT` (the TLS is end to end, the proxy sees only the
//! host and port); an `http` server through an http proxy gets its requests in absolute form (`GET http://...`), as
//! Go's transport sends them. An `http` proxy only: an `https://` or `socks5://` proxy is refused with a line that
//! says so, rather than connecting directly behind the user's back.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// Why no proxy could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The proxy (from `source`) is not a URL the driver can use.
    #[error("{from}: {why}")]
    Unusable {
        /// Where the proxy came from: `kubeconfig proxy-url`, `HTTPS_PROXY`...
        from: String,
        /// Why it cannot be used.
        why: String,
    },
}

/// The proxy chosen for the server, and where it came from (for the lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    /// `http://host:port` (userinfo kept for `Proxy-Authorization`).
    pub url: http::Uri,
    /// `kubeconfig proxy-url`, or the variable's name.
    pub source: String,
}

/// The proxy for `server`: the kubeconfig's `proxy_url` if it has one, else the environment's (`env` reads a
/// variable; the real one is `std::env::var`), as client-go chooses it. `None`: direct.
pub fn choose(
    server: &http::Uri,
    kubeconfig_proxy: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Proxy>, ProxyError> {
    if let Some(raw) = kubeconfig_proxy.filter(|p| !p.is_empty()) {
        return parse_proxy(raw, "kubeconfig proxy-url").map(Some);
    }
    let any = |names: &[&str]| -> Option<(String, String)> {
        names
            .iter()
            .find_map(|n| env(n).filter(|v| !v.is_empty()).map(|v| (n.to_string(), v)))
    };
    let https = server.scheme_str() == Some("https");
    let chosen = if https {
        any(&["HTTPS_PROXY", "https_proxy"])
    } else {
        any(&["HTTP_PROXY", "http_proxy"])
    };
    let Some((name, raw)) = chosen else {
        return Ok(None);
    };
    let no_proxy = any(&["NO_PROXY", "no_proxy"])
        .map(|(_, v)| v)
        .unwrap_or_default();
    let Some(host) = server.host() else {
        return Ok(None);
    };
    let port = server.port_u16().unwrap_or(if https { 443 } else { 80 });
    if !NoProxy::parse(&no_proxy).use_proxy(host, port) {
        return Ok(None);
    }
    parse_proxy(&raw, &name).map(Some)
}

/// httpproxy's `parseProxy`: a value that is not an `http`, `https` or `socks5` URL is tried with `http://` before
/// it; then only `http` is taken here.
fn parse_proxy(raw: &str, source: &str) -> Result<Proxy, ProxyError> {
    let unusable = |why: String| ProxyError::Unusable {
        from: source.to_owned(),
        why,
    };
    let known = |u: &http::Uri| matches!(u.scheme_str(), Some("http" | "https" | "socks5"));
    let url = match raw.parse::<http::Uri>() {
        Ok(u) if known(&u) => u,
        first => match format!("http://{raw}").parse::<http::Uri>() {
            Ok(u) => u,
            Err(e) => {
                return Err(unusable(match first {
                    Err(first) => format!("not a URL ({first})"),
                    Ok(_) => format!("not a URL ({e})"),
                }));
            }
        },
    };
    match url.scheme_str() {
        Some("http") if url.host().is_some_and(|h| !h.is_empty()) => Ok(Proxy {
            url,
            source: source.to_owned(),
        }),
        Some("http") => Err(unusable("the proxy URL has no host".into())),
        Some(other) => Err(unusable(format!(
            "a {other} proxy is not supported (an http proxy is)"
        ))),
        None => Err(unusable("not a URL".into())),
    }
}

/// `NO_PROXY` as httpproxy reads it.
#[derive(Debug, Default)]
struct NoProxy {
    all: bool,
    ips: Vec<IpMatch>,
    domains: Vec<DomainMatch>,
}

#[derive(Debug)]
enum IpMatch {
    Net(ipnet::IpNet),
    Ip(IpAddr, Option<u16>),
}

#[derive(Debug)]
struct DomainMatch {
    /// With its leading dot.
    suffix: String,
    port: Option<u16>,
    /// The entry had no leading dot (nor `*.`): it also matches the name itself.
    itself: bool,
}

impl NoProxy {
    fn parse(value: &str) -> Self {
        let mut out = NoProxy::default();
        for entry in value.split(',') {
            let p = entry.trim().to_ascii_lowercase();
            if p.is_empty() {
                continue;
            }
            if p == "*" {
                out.all = true;
                return out;
            }
            if p.contains('/') {
                if let Ok(net) = p.parse::<ipnet::IpNet>() {
                    // Go's ParseCIDR gives the network (the address masked), as `trunc` does.
                    out.ips.push(IpMatch::Net(net.trunc()));
                }
                // A CIDR Go cannot parse falls through to the name rules there; a name with a `/` never matches.
                continue;
            }
            let (host, port) = split_host_port(&p);
            let port = match port {
                Some(port) => match port.parse::<u16>() {
                    Ok(n) => Some(n),
                    // Go compares the port as text; a port that is not a number matches no canonical address.
                    Err(_) => continue,
                },
                None => None,
            };
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            if host.is_empty() {
                continue;
            }
            if let Ok(ip) = host.parse::<IpAddr>() {
                out.ips.push(IpMatch::Ip(ip, port));
                continue;
            }
            // `*.example.com` is `.example.com`.
            let host = if host.starts_with("*.") {
                &host[1..]
            } else {
                host
            };
            let (suffix, itself) = match host.strip_prefix('.') {
                Some(_) => (host.to_owned(), false),
                None => (format!(".{host}"), true),
            };
            out.domains.push(DomainMatch {
                suffix,
                port,
                itself,
            });
        }
        out
    }

    /// httpproxy's `useProxy` for `host:port`.
    fn use_proxy(&self, host: &str, port: u16) -> bool {
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if host == "localhost" {
            return false;
        }
        let ip = host.parse::<IpAddr>().ok();
        if ip.is_some_and(|ip| ip.is_loopback()) {
            return false;
        }
        if self.all {
            return false;
        }
        let host = host.trim().to_ascii_lowercase();
        if let Some(ip) = ip {
            for m in &self.ips {
                let hit = match m {
                    IpMatch::Net(net) => net.contains(&ip),
                    IpMatch::Ip(want, want_port) => {
                        *want == ip && want_port.is_none_or(|p| p == port)
                    }
                };
                if hit {
                    return false;
                }
            }
        }
        for m in &self.domains {
            if (host.ends_with(&m.suffix) || (m.itself && host == m.suffix[1..]))
                && m.port.is_none_or(|p| p == port)
            {
                return false;
            }
        }
        true
    }
}

/// Go's `net.SplitHostPort` for a NO_PROXY entry: `host:port`, `[v6]:port`; anything else is a host alone.
fn split_host_port(p: &str) -> (&str, Option<&str>) {
    if let Some(rest) = p.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((h, after)) => match after.strip_prefix(':') {
                Some(port) => (&p[..h.len() + 2], Some(port)),
                None => (p, None),
            },
            None => (p, None),
        };
    }
    match p.rsplit_once(':') {
        // More than one colon without brackets is an IPv6 address, not host:port.
        Some((h, port)) if !h.contains(':') => (h, Some(port)),
        _ => (p, None),
    }
}

/// The `Proxy-Authorization` value of a proxy URL's userinfo (percent-decoded, as Go's url.Parse decodes it).
pub fn basic_auth(proxy: &http::Uri) -> Option<http::HeaderValue> {
    use base64::Engine;
    let authority = proxy.authority()?.as_str();
    let (userinfo, _) = authority.rsplit_once('@')?;
    let decoded = percent_decode(userinfo);
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(decoded)
    );
    let mut header = http::HeaderValue::from_str(&value).ok()?;
    header.set_sensitive(true);
    Some(header)
}

fn percent_decode(s: &str) -> Vec<u8> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
            && let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// The connector under TLS: straight to the server, through a `CONNECT` tunnel, or to an http proxy that forwards
/// absolute-form requests.
#[derive(Clone)]
pub enum Hop {
    /// Straight to the server.
    Direct(HttpConnector),
    /// A `CONNECT` tunnel through the proxy (an `https` server).
    Tunnel(Tunnel<HttpConnector>, Arc<Named>),
    /// To the proxy, which forwards each request (an `http` server).
    Forward(HttpConnector, http::Uri, Arc<Named>),
}

/// A proxy as the lines name it: `host:port` (never its credentials) and where it came from.
#[derive(Debug)]
pub struct Named {
    proxy: String,
    from: String,
}

/// The proxy could not be reached, or would not open the tunnel: what failed was the proxy, not the API server
/// (issue 40, item 14). Its `source` is the cause.
#[derive(Debug, thiserror::Error)]
#[error("cannot reach the proxy {} ({})", .named.proxy, .named.from)]
pub struct ProxyUnreachable {
    named: Arc<Named>,
    #[source]
    source: BoxError,
}

impl ProxyUnreachable {
    /// The line's words: the proxy, where it came from, and `why` (the innermost cause).
    pub fn words(&self, why: &str) -> String {
        jr2_probe::contract::render::proxy_unreachable(&self.named.proxy, &self.named.from, why)
    }
}

impl Named {
    fn of(p: &Proxy) -> Arc<Self> {
        let host = p.url.host().unwrap_or_default();
        let proxy = match p.url.port_u16() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Arc::new(Named {
            proxy,
            from: p.source.clone(),
        })
    }
}

impl Hop {
    /// The hop for `proxy` and a server of `scheme`.
    pub fn new(http: HttpConnector, proxy: Option<&Proxy>, https: bool) -> Self {
        match proxy {
            None => Hop::Direct(http),
            Some(p) if https => {
                let tunnel = Tunnel::new(p.url.clone(), http);
                let tunnel = match basic_auth(&p.url) {
                    Some(auth) => tunnel.with_auth(auth),
                    None => tunnel,
                };
                Hop::Tunnel(tunnel, Named::of(p))
            }
            Some(p) => Hop::Forward(http, p.url.clone(), Named::of(p)),
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<http::Uri> for Hop {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Each call below drives a clone of its connector through `oneshot`, which waits for its readiness.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: http::Uri) -> Self::Future {
        use tower::ServiceExt;
        match self.clone() {
            Hop::Direct(http) => Box::pin(async move {
                let io = http.oneshot(dst).await.map_err(BoxError::from)?;
                Ok(Stream { io, proxied: false })
            }),
            Hop::Tunnel(tunnel, named) => Box::pin(async move {
                let io = tunnel.oneshot(dst).await.map_err(|e| ProxyUnreachable {
                    named,
                    source: BoxError::from(e),
                })?;
                Ok(Stream { io, proxied: false })
            }),
            Hop::Forward(http, proxy, named) => Box::pin(async move {
                let io = http.oneshot(proxy).await.map_err(|e| ProxyUnreachable {
                    named,
                    source: BoxError::from(e),
                })?;
                Ok(Stream { io, proxied: true })
            }),
        }
    }
}

/// A TCP stream that tells hyper whether it goes to a forwarding proxy (absolute-form requests) or not.
pub struct Stream {
    io: TokioIo<TcpStream>,
    proxied: bool,
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.proxied)
    }
}

impl Read for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    //! Addresses are from 198.18.0.0/15 (RFC 2544's benchmarking range): the rules are data here, nothing is dialed.

    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn via(
        server: &str,
        kubeconfig: Option<&str>,
        vars: &'static [(&'static str, &'static str)],
    ) -> Option<String> {
        choose(&server.parse().unwrap(), kubeconfig, &env(vars))
            .unwrap()
            .map(|p| format!("{} ({})", p.url, p.source))
    }

    #[test]
    fn the_kubeconfig_proxy_wins_and_holds_for_loopback() {
        assert_eq!(
            via(
                "https://127.0.0.1:6443",
                Some("http://198.18.1.1:3128"),
                &[("HTTPS_PROXY", "http://198.18.2.2:3128"), ("NO_PROXY", "*")]
            )
            .as_deref(),
            Some("http://198.18.1.1:3128/ (kubeconfig proxy-url)")
        );
    }

    #[test]
    fn the_variable_follows_the_server_scheme() {
        const VARS: &[(&str, &str)] = &[
            ("HTTPS_PROXY", "http://s.proxy:1"),
            ("http_proxy", "p.proxy:2"),
        ];
        assert_eq!(
            via("https://kube.example.com", None, VARS).as_deref(),
            Some("http://s.proxy:1/ (HTTPS_PROXY)")
        );
        assert_eq!(
            via("http://kube.example.com", None, VARS).as_deref(),
            Some("http://p.proxy:2/ (http_proxy)")
        );
        // Upper case first, an empty value skipped.
        assert_eq!(
            via(
                "https://kube.example.com",
                None,
                &[("HTTPS_PROXY", ""), ("https_proxy", "http://l:3")]
            )
            .as_deref(),
            Some("http://l:3/ (https_proxy)")
        );
        assert_eq!(
            via(
                "https://kube.example.com",
                None,
                &[("HTTP_PROXY", "http://p:1")]
            ),
            None
        );
    }

    #[test]
    fn loopback_and_localhost_are_never_proxied_from_the_environment() {
        const VARS: &[(&str, &str)] = &[("HTTPS_PROXY", "http://p:1")];
        for server in [
            "https://127.0.0.1:6443",
            "https://127.9.9.9",
            "https://[::1]:6443",
            "https://localhost:6443",
        ] {
            assert_eq!(via(server, None, VARS), None, "{server}");
        }
        // localhost.example is a name like any other.
        assert!(via("https://localhost.example", None, VARS).is_some());
    }

    #[test]
    fn no_proxy_as_go_reads_it() {
        let cases: &[(&str, &str, bool)] = &[
            // (NO_PROXY, server, proxied)
            ("198.18.0.0/15", "https://198.18.4.5:6443", false),
            ("198.18.0.0/15", "https://198.20.4.5:6443", true),
            ("198.18.2.3/15", "https://198.19.9.9", false),
            ("fd00::/8", "https://[fd00::1]:6443", false),
            ("198.18.4.5", "https://198.18.4.5:6443", false),
            ("198.18.4.5:6443", "https://198.18.4.5:6443", false),
            ("198.18.4.5:443", "https://198.18.4.5:6443", true),
            ("198.18.4.5:443", "https://198.18.4.5", false),
            ("[fd00::1]:6443", "https://[fd00::1]:6443", false),
            ("example.com", "https://example.com", false),
            ("example.com", "https://api.example.com", false),
            ("example.com", "https://notexample.com", true),
            (".example.com", "https://example.com", true),
            (".example.com", "https://api.example.com", false),
            ("*.example.com", "https://example.com", true),
            ("*.example.com", "https://a.b.example.com", false),
            ("example.com:6443", "https://api.example.com:6443", false),
            ("example.com:6443", "https://api.example.com", true),
            (" Example.COM , other", "https://API.example.com", false),
            ("*", "https://anything.example", false),
            ("a,*", "https://anything.example", false),
            ("", "https://anything.example", true),
            (",,", "https://anything.example", true),
            // A name never matches an IP, a CIDR never a name.
            ("198.18.0.0/15", "https://ten.example", true),
            ("example.com", "https://198.18.0.1", true),
        ];
        for (no_proxy, server, proxied) in cases {
            let uri: http::Uri = server.parse().unwrap();
            let https = uri.scheme_str() == Some("https");
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            assert_eq!(
                NoProxy::parse(no_proxy).use_proxy(uri.host().unwrap(), port),
                *proxied,
                "NO_PROXY={no_proxy:?} server {server}"
            );
        }
    }

    #[test]
    fn no_proxy_is_read_upper_case_first() {
        assert_eq!(
            via(
                "https://kube.example.com",
                None,
                &[
                    ("HTTPS_PROXY", "http://p:1"),
                    ("NO_PROXY", "other.example"),
                    ("no_proxy", "example.com")
                ]
            )
            .as_deref(),
            Some("http://p:1/ (HTTPS_PROXY)")
        );
        assert_eq!(
            via(
                "https://kube.example.com",
                None,
                &[("HTTPS_PROXY", "http://p:1"), ("no_proxy", "example.com")]
            ),
            None
        );
    }

    #[test]
    fn proxies_the_driver_cannot_use_are_refused_by_name() {
        let e = choose(
            &"https://kube.example.com".parse().unwrap(),
            None,
            &env(&[("HTTPS_PROXY", "socks5://127.0.0.1:1080")]),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "HTTPS_PROXY: a socks5 proxy is not supported (an http proxy is)"
        );
        let e = choose(
            &"https://k".parse().unwrap(),
            Some("https://p:1"),
            &env(&[]),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "kubeconfig proxy-url: a https proxy is not supported (an http proxy is)"
        );
    }

    #[test]
    fn proxy_credentials_are_decoded_into_basic_auth() {
        let h = basic_auth(&"http://u%40x:p%3Aw@p:1".parse().unwrap()).unwrap();
        assert!(h.is_sensitive());
        use base64::Engine;
        let want = base64::engine::general_purpose::STANDARD.encode("u@x:p:w");
        assert_eq!(h.to_str().unwrap(), format!("Basic {want}"));
        assert!(basic_auth(&"http://p:1".parse().unwrap()).is_none());
    }
}
