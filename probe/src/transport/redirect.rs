//! Redirects: followed only to the same origin (scheme, host and port), without userinfo, at most
//! [`MAX_REDIRECTS`]. reqwest drops `Authorization` on a cross-origin redirect but not the providers' own key headers
//! (`x-api-key`, `x-goog-api-key`, `api-key`, `cf-aig-authorization`), so any other redirect ends the try
//! ([`RedirectRefused`]: `HTTP 307: redirected to <host>`) before a byte goes to the other origin.

use thiserror::Error;

/// The most redirects one request follows (all to the same origin).
pub const MAX_REDIRECTS: usize = 5;

/// A redirect the probe does not follow: to another origin (scheme, host or port), or to a URL with userinfo.
#[derive(Clone, Debug, Error)]
#[error("HTTP {status}: redirected to {to}")]
pub struct RedirectRefused {
    /// The redirect's status.
    pub status: u16,
    /// Where it pointed: [`redirect_target`].
    pub to: String,
}

/// More than [`MAX_REDIRECTS`] redirects.
#[derive(Clone, Copy, Debug, Error)]
#[error("too many redirects")]
pub struct TooManyRedirects;

/// Same scheme, host and port (the scheme's default port when none is written).
pub fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// Where a redirect points, as its line says it: the host, with the port when the URL names one; no userinfo, no
/// path, no query. A URL without a host (`data:`) says its scheme.
pub fn redirect_target(url: &url::Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => format!("a {}: URL", url.scheme()),
    }
}

/// Follows a redirect only to the same origin, without userinfo, at most [`MAX_REDIRECTS`] times.
pub(super) fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let next = attempt.url();
        let allowed = attempt
            .previous()
            .last()
            .is_some_and(|from| same_origin(from, next))
            && next.username().is_empty()
            && next.password().is_none();
        if !allowed {
            let refused = RedirectRefused {
                status: attempt.status().as_u16(),
                to: redirect_target(next),
            };
            attempt.error(refused)
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(TooManyRedirects)
        } else {
            attempt.follow()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    #[test]
    fn same_origin_is_the_scheme_host_and_port() {
        let a = url("https://api.example.com/v1/messages");
        assert!(same_origin(&a, &url("https://api.example.com:443/v2?x")));
        assert!(same_origin(&a, &url("HTTPS://API.example.com/other")));
        assert!(
            !same_origin(&a, &url("http://api.example.com/v1/messages")),
            "a downgrade"
        );
        assert!(!same_origin(&a, &url("https://api.example.com:8443/v1")));
        assert!(!same_origin(&a, &url("https://evil.example.com/v1")));
        assert!(!same_origin(
            &url("http://127.0.0.1:8000/v1"),
            &url("http://127.0.0.1:8001/v1")
        ));
    }

    #[test]
    fn a_redirect_target_is_its_host_and_port_only() {
        for (target, shown) in [
            (
                "http://u:pw@other.example:8080/p?key=x",
                "other.example:8080",
            ),
            ("https://other.example/p", "other.example"),
            ("https://other.example:443/p", "other.example"),
            ("http://[::1]:9/", "[::1]:9"),
            ("data:text/plain,hi", "a data: URL"),
        ] {
            assert_eq!(redirect_target(&url(target)), shown, "{target}");
        }
    }
}
