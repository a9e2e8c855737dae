//! The HTTP client a check uses ([`ClientFactory`]): HTTP/1.1, as pi's Node fetch speaks it, over rustls with `ring`
//! (smaller than aws-lc-rs, and a much faster first handshake for a process that makes one or two connections).
//! Each part is a room of its own:
//!
//! - [`trust`]: the roots (Mozilla's, compiled in, and the CA files the Harness env names);
//! - [`proxy`]: the proxy variables as the Harness's Node fetch reads them;
//! - [`redirect`]: same-origin redirects only, so no key header reaches another origin;
//! - [`timing`]: when DNS, TLS and the connection finished, per try;
//! - [`failure`]: a transport error in the words a person acts on.

pub mod failure;
pub mod proxy;
pub mod redirect;
pub mod timing;
pub mod trust;

pub use failure::*;
pub use proxy::*;
pub use redirect::*;
pub use timing::*;
pub use trust::*;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use redirect::redirect_policy;
use timing::{TimedLayer, TimedResolver, TimedVerifier};

/// Builds one client per model, so its connection timings belong to that model alone.
#[derive(Clone, Debug)]
pub struct ClientFactory {
    connect_timeout: Duration,
    proxy: ProxyEnv,
    provider: Arc<rustls::crypto::CryptoProvider>,
    /// The certificate verifier of the run's anchors, built once (each client wraps it with its own clock); `None`
    /// when nothing of the run uses TLS ([`Trust`]).
    verifier: Option<Arc<rustls::client::WebPkiServerVerifier>>,
}

impl ClientFactory {
    /// A factory with these trust anchors and this limit on connecting (TCP, proxy tunnel and TLS), and the
    /// environment's proxy variables ([`ProxyEnv::from_env`]).
    pub fn new(trust: Trust, connect_timeout: Duration) -> Self {
        Self::with_proxy(trust, connect_timeout, ProxyEnv::from_env())
    }

    /// A factory with these proxy settings instead of the environment's.
    pub fn with_proxy(trust: Trust, connect_timeout: Duration, proxy: ProxyEnv) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = trust.roots.map(|roots| {
            rustls::client::WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .expect("a root store the probe built is never empty")
        });
        Self {
            connect_timeout,
            proxy,
            provider,
            verifier,
        }
    }

    /// The proxy settings.
    pub fn proxy(&self) -> &ProxyEnv {
        &self.proxy
    }

    /// The limit on connecting.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// A new client for a Turn's requests of `api` to `url` (its proxy chosen by the rules that API's client
    /// follows), and the clock its connections write to.
    pub fn client_for(
        &self,
        api: crate::contract::ApiKind,
        url: &url::Url,
    ) -> Result<(reqwest::Client, ClockHandle), reqwest::Error> {
        let clock = ClockHandle(Arc::new(Mutex::new(Clock::new())));
        let verifier = Arc::new(TimedVerifier {
            inner: self.verifier.clone(),
            algorithms: self.provider.signature_verification_algorithms,
            clock: clock.clone(),
        });
        let tls = rustls::ClientConfig::builder_with_provider(self.provider.clone())
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3")
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        let mut builder = reqwest::Client::builder().no_proxy();
        if self.proxy.any() {
            let rules = self.proxy.clone();
            builder = builder.proxy(reqwest::Proxy::custom(move |url| {
                rules.proxy_for_api(api, url).cloned()
            }));
        }
        #[cfg(feature = "https")]
        let builder = builder.tls_backend_preconfigured(tls);
        #[cfg(not(feature = "https"))]
        let _ = tls;
        let client = builder
            .http1_only()
            .user_agent(concat!("jr2-probe/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(TimedResolver {
                clock: clock.clone(),
            }))
            .connector_layer(TimedLayer {
                clock: clock.clone(),
                refuse: self.proxy.refusal_for(api, url).cloned(),
            })
            .connect_timeout(self.connect_timeout)
            .redirect(redirect_policy())
            .pool_max_idle_per_host(1)
            .build()?;
        Ok((client, clock))
    }
}
