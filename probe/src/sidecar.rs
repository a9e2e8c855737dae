//! The Custodian's listener, before the first request of a check pod.
//!
//! In the check pod the Custodian is a native sidecar: the kubelet starts the probe once the Custodian's startup
//! probe passes or, when the Harness spec gives it none (and no readiness probe to turn into one), as soon as its
//! process runs, which is before Envoy listens. A Turn comes long after its pod started; the probe comes at once, and
//! its first connection would be refused by a Custodian that is only starting: a check that fails where no Turn
//! would. So in pod mode, before the first request, the probe waits until each loopback proxy its models go through
//! accepts a TCP connection: at most [`LISTEN_WAIT`], trying every [`RETRY_EVERY`]. A proxy that still refuses then is
//! left to the check, whose line says what the connection met.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tokio::time::Instant;

use crate::contract::ApiKind;
use crate::target::Target;
use crate::transport::ProxyEnv;

/// The longest the probe waits for a loopback proxy to listen.
pub const LISTEN_WAIT: Duration = Duration::from_secs(15);
/// How often it tries.
pub const RETRY_EVERY: Duration = Duration::from_millis(100);

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

/// Waits until each proxy accepts a connection, or `bound` has passed; returns the ones that did not (a refusal to
/// the end, or another error, which waiting does not mend).
pub async fn until_listening(proxies: &[LoopbackProxy], bound: Duration) -> Vec<LoopbackProxy> {
    let until = Instant::now() + bound;
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
}
