//! Failures in plain words: [`describe`] walks a request error's causes to the one a person can act on (`connection
//! refused`, `cannot resolve <host>`, `certificate not trusted: ...`); [`log_text`] is an error's debug form for the
//! log, with its URL shown through [`sanitize::display_url`](crate::sanitize::display_url) (no userinfo, no query).

use std::time::Duration;

use super::{DnsError, ProxyUnusable, RedirectRefused, TooManyRedirects};
use crate::contract::outcome::{Code, Outcome};
use crate::sanitize;

/// A transport failure as the lines say it, and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Unreachable, TLS, protocol, or http (a redirect the probe does not follow).
    pub outcome: Outcome,
    /// The code: the outcome's default, or [`Code::CrossOriginRedirect`].
    pub code: Code,
    /// The HTTP status that ended the try, if one did (a refused redirect's).
    pub status: Option<u16>,
    /// The plain words.
    pub text: String,
}

/// hyper's words for a response it cannot parse: the server answered, but not in HTTP/1.1 (an SSH banner, a head
/// without end, a bad status line). A protocol failure, not an unreachable server.
const NOT_HTTP: [&str; 8] = [
    "invalid HTTP version parsed",
    "invalid HTTP version parsed (found HTTP2 preface)",
    "invalid HTTP status-code parsed",
    "invalid HTTP header parsed",
    "invalid content-length parsed",
    "unexpected transfer-encoding parsed",
    "message head is too large",
    "received unexpected message from connection",
];

/// Reads a request error's chain of causes into a [`Failure`]. `host` is the base URL's host, for DNS failures.
pub fn describe(err: &reqwest::Error, connect_timeout: Duration) -> Failure {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err);
    let mut fallback = None;
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
            return Failure {
                outcome: Outcome::Http,
                code: Code::CrossOriginRedirect,
                status: Some(refused.status),
                text: refused.to_string(),
            };
        }
        if let Some(too_many) = e.downcast_ref::<TooManyRedirects>() {
            return failure(Outcome::Http, too_many.to_string());
        }
        if let Some(proxy) = e.downcast_ref::<ProxyUnusable>() {
            return unreachable(proxy.to_string());
        }
        if let Some(dns) = e.downcast_ref::<DnsError>() {
            return unreachable(format!("cannot resolve {}", dns.host));
        }
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return tls_failure(tls);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            let words = match io.kind() {
                K::ConnectionRefused => Some("connection refused"),
                K::HostUnreachable => Some("no route to host"),
                K::NetworkUnreachable => Some("network is unreachable"),
                K::ConnectionReset => Some("connection reset by the server"),
                K::ConnectionAborted => Some("connection aborted"),
                K::TimedOut => Some("connection timed out"),
                K::PermissionDenied => {
                    Some("connection not permitted (a firewall or route forbids it)")
                }
                K::UnexpectedEof => Some("the server closed the connection"),
                _ => None,
            };
            if io.kind() == K::TimedOut && err.is_connect() {
                // The connector's own timer (a SYN never answered): the same words as the client's connect timeout.
                return unreachable(format!(
                    "connection timed out after {} s",
                    crate::contract::render::seconds(connect_timeout)
                ));
            }
            if let Some(words) = words {
                return unreachable(words.to_owned());
            }
            if io.raw_os_error() == Some(22) {
                // EINVAL from connect(2): a blackhole route.
                return unreachable("no route to host (blackhole route)".to_owned());
            }
            // An io::Error's `source()` skips the error it wraps (rustls wraps its own in two of them): go inside.
            if let Some(inner) = io.get_ref() {
                cause = Some(inner as &(dyn std::error::Error + 'static));
                continue;
            }
        }
        let text = e.to_string();
        if NOT_HTTP.contains(&text.as_str()) {
            return failure(
                Outcome::Protocol,
                format!("the answer is not HTTP/1.1 the probe can read: {text}"),
            );
        }
        if text.contains("tunnel") || text.contains("proxy") {
            fallback.get_or_insert_with(|| format!("the proxy refused the tunnel: {text}"));
        }
        cause = e.source();
    }
    if err.is_timeout() && err.is_connect() {
        return unreachable(format!(
            "connection timed out after {} s",
            crate::contract::render::seconds(connect_timeout)
        ));
    }
    if err.is_redirect() {
        return failure(Outcome::Http, "too many redirects".to_owned());
    }
    if let Some(text) = fallback {
        return unreachable(text);
    }
    let mut text = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    unreachable(mask_url_in(err, text))
}

/// An error's debug form for the log (`RUST_LOG=debug`), its URL (a redirect's target, which a server chose) shown
/// through [`sanitize::display_url`]: no userinfo, no query. The caller still redacts held values.
pub fn log_text(err: &reqwest::Error) -> String {
    mask_url_in(err, format!("{err:?}"))
}

/// `text` with `err`'s URL, wherever it appears, shown as [`sanitize::display_url`] shows it.
fn mask_url_in(err: &reqwest::Error, text: String) -> String {
    match err.url() {
        Some(url) if !url.as_str().is_empty() => {
            text.replace(url.as_str(), &sanitize::display_url(url.as_str()))
        }
        _ => text,
    }
}

fn failure(outcome: Outcome, text: String) -> Failure {
    Failure {
        outcome,
        code: outcome.default_code(),
        status: None,
        text,
    }
}

fn unreachable(text: String) -> Failure {
    failure(Outcome::Unreachable, text)
}

fn tls_failure(err: &rustls::Error) -> Failure {
    use rustls::CertificateError as C;
    let text = match err {
        rustls::Error::InvalidCertificate(C::UnknownIssuer) => {
            "certificate not trusted: unknown issuer".to_owned()
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => "certificate name mismatch: the certificate is not valid for this host".to_owned(),
        rustls::Error::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "certificate not trusted: it has expired".to_owned()
        }
        rustls::Error::InvalidCertificate(C::BadSignature) => {
            "certificate not trusted: bad signature".to_owned()
        }
        rustls::Error::InvalidCertificate(other) => format!("certificate not trusted: {other:?}"),
        other => format!("TLS handshake failed: {other}"),
    };
    failure(Outcome::Tls, text)
}
