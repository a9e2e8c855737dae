//! Timing: a resolver, a connector layer and a certificate-verifier wrapper note when DNS, TLS and the connection
//! finished, so each try can report where its time went ([`Clock`]).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use thiserror::Error;

use super::ProxyUnusable;

/// When the parts of one try's connection finished. Reset at the start of each try.
#[derive(Debug)]
pub struct Clock {
    start: Instant,
    dns: Option<Duration>,
    tls: Option<Duration>,
    connect: Option<Duration>,
    /// A new connection was started (TCP, proxy tunnel, TLS), finished or not.
    connect_started: bool,
}

impl Clock {
    pub(super) fn new() -> Self {
        Self {
            start: Instant::now(),
            dns: None,
            tls: None,
            connect: None,
            connect_started: false,
        }
    }
}

/// A handle on a client's clock.
#[derive(Clone, Debug)]
pub struct ClockHandle(pub(super) Arc<Mutex<Clock>>);

impl ClockHandle {
    /// Starts a new try now.
    pub fn restart(&self) -> Instant {
        let mut c = self.lock();
        *c = Clock::new();
        c.start
    }

    /// The marks so far, in milliseconds from the try's start: (dns, tls, connect).
    pub fn marks(&self) -> (Option<u64>, Option<u64>, Option<u64>) {
        let c = self.lock();
        let ms = |d: Option<Duration>| d.map(|d| d.as_millis() as u64);
        (ms(c.dns), ms(c.tls), ms(c.connect))
    }

    /// A new connection of this try was started and has not come up (nor failed): the try is still connecting. A
    /// try on a pooled connection never is.
    pub fn connecting(&self) -> bool {
        let c = self.lock();
        c.connect_started && c.connect.is_none()
    }

    fn mark(&self, f: impl FnOnce(&mut Clock, Duration)) {
        let mut c = self.lock();
        let at = c.start.elapsed();
        f(&mut c, at);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Clock> {
        // A poisoned clock only holds timestamps; keep using it.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Debug)]
pub(super) struct TimedVerifier {
    /// `None` when the run was planned without TLS ([`Trust::plan`]): every certificate is refused.
    pub(super) inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    pub(super) algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
    pub(super) clock: ClockHandle,
}

impl ServerCertVerifier for TimedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = match &self.inner {
            Some(inner) => {
                inner.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            }
            None => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            )),
        };
        self.clock.mark(|c, at| c.tls = Some(at));
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// A name that did not resolve; its own type so [`describe`] can tell DNS from the rest.
#[derive(Debug, Error)]
#[error("cannot resolve {host}")]
pub struct DnsError {
    /// The name.
    pub host: String,
    /// The resolver's error.
    #[source]
    pub source: std::io::Error,
}

pub(super) struct TimedResolver {
    pub(super) clock: ClockHandle,
}

impl reqwest::dns::Resolve for TimedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let clock = self.clock.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let result = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map(|a| a.collect::<Vec<SocketAddr>>());
            clock.mark(|c, at| c.dns = Some(at));
            match result {
                Ok(addrs) => {
                    if addrs.is_empty() {
                        let source =
                            std::io::Error::new(std::io::ErrorKind::NotFound, "no address");
                        return Err(Box::new(DnsError { host, source }) as _);
                    }
                    Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
                }
                Err(source) => Err(Box::new(DnsError { host, source }) as _),
            }
        })
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Notes when connections start and finish; with `refuse`, fails every one with that error instead (an unusable
/// proxy variable: nothing goes direct).
#[derive(Clone)]
pub(super) struct TimedLayer {
    pub(super) clock: ClockHandle,
    pub(super) refuse: Option<ProxyUnusable>,
}

impl<S> tower_layer::Layer<S> for TimedLayer {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timed {
            inner,
            clock: self.clock.clone(),
            refuse: self.refuse.clone(),
        }
    }
}

#[derive(Clone)]
pub(super) struct Timed<S> {
    inner: S,
    clock: ClockHandle,
    refuse: Option<ProxyUnusable>,
}

impl<S, R> tower_service::Service<R> for Timed<S>
where
    S: tower_service::Service<R, Error = BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        if let Some(refuse) = self.refuse.clone() {
            return Box::pin(async move { Err(Box::new(refuse) as BoxError) });
        }
        let clock = self.clock.clone();
        clock.mark(|c, _| c.connect_started = true);
        let fut = self.inner.call(req);
        Box::pin(async move {
            let out = fut.await;
            match out {
                Ok(_) => clock.mark(|c, at| c.connect = Some(at)),
                // Failed, not connecting any more.
                Err(_) => clock.mark(|c, _| c.connect_started = false),
            }
            out
        })
    }
}
