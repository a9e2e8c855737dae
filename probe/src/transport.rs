//! The HTTP client a check uses: trust, proxy, timing, and transport failures in plain words.
//!
//! - Trust: Mozilla's roots compiled in (`webpki-root-certs`: a `FROM scratch` image has no system store), plus the
//!   CA files the Harness env names (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`) and `--ca-bundle`. rustls with `ring`:
//!   smaller than aws-lc-rs and a much faster first handshake for a process that makes one or two connections.
//! - Proxy: `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` from the environment, as the Harness honours them (the Custodian
//!   listens at `http://127.0.0.1:15001` and takes CONNECT only).
//! - HTTP/1.1, as pi's Node fetch speaks it.
//! - Timing: a resolver, a connector layer and a certificate-verifier wrapper note when DNS, TLS and the
//!   connection finished, so each try can report where its time went.
//! - Failures: [`describe`] walks a request error's causes to the one a person can act on (`connection refused`,
//!   `cannot resolve <host>`, `certificate not trusted: ...`).

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use thiserror::Error;

use crate::contract::outcome::Outcome;

/// A CA file that cannot be used.
#[derive(Debug, Error)]
pub enum TrustError {
    /// The file cannot be read.
    #[error("cannot read the CA file {path} named by {source_name}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What named it (`--ca-bundle`, `NODE_EXTRA_CA_CERTS`).
        source_name: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no PEM certificate.
    #[error("the CA file {path} named by {source_name} holds no PEM certificate")]
    NoCertificate {
        /// The file.
        path: PathBuf,
        /// What named it.
        source_name: String,
    },
    /// A certificate in the file is not a usable trust anchor.
    #[error(
        "the CA file {path} named by {source_name} holds a certificate that is not a usable CA: {reason}"
    )]
    BadCertificate {
        /// The file.
        path: PathBuf,
        /// What named it.
        source_name: String,
        /// Why.
        reason: String,
    },
}

/// A CA file and what named it.
#[derive(Clone, Debug)]
pub struct CaFile {
    /// What named it: `--ca-bundle`, `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`.
    pub source_name: String,
    /// The path.
    pub path: PathBuf,
}

/// The trust anchors of every connection, built once per run.
#[derive(Clone, Debug)]
pub struct Trust {
    roots: Arc<RootCertStore>,
    /// How many anchors came from CA files (for the log).
    pub extra: usize,
}

impl Trust {
    /// Mozilla's roots plus every certificate of `files`.
    pub fn load(files: &[CaFile]) -> Result<Self, TrustError> {
        let mut roots = RootCertStore::empty();
        roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
        let mut extra = 0;
        for file in files {
            extra += add_pem_file(&mut roots, file)?;
        }
        Ok(Self {
            roots: Arc::new(roots),
            extra,
        })
    }
}

fn add_pem_file(roots: &mut RootCertStore, file: &CaFile) -> Result<usize, TrustError> {
    let bytes = std::fs::read(&file.path).map_err(|source| TrustError::Read {
        path: file.path.clone(),
        source_name: file.source_name.clone(),
        source,
    })?;
    let mut added = 0;
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| TrustError::BadCertificate {
            path: file.path.clone(),
            source_name: file.source_name.clone(),
            reason: e.to_string(),
        })?;
        roots.add(cert).map_err(|e| TrustError::BadCertificate {
            path: file.path.clone(),
            source_name: file.source_name.clone(),
            reason: e.to_string(),
        })?;
        added += 1;
    }
    if added == 0 {
        return Err(TrustError::NoCertificate {
            path: file.path.clone(),
            source_name: file.source_name.clone(),
        });
    }
    Ok(added)
}

/// The CA files the environment names, as the Harness reads them.
pub fn ca_files_from_env() -> Vec<CaFile> {
    ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"]
        .into_iter()
        .filter_map(|name| {
            let value = std::env::var_os(name)?;
            (!value.is_empty()).then(|| CaFile {
                source_name: name.to_owned(),
                path: Path::new(&value).to_path_buf(),
            })
        })
        .collect()
}

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
    fn new() -> Self {
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
pub struct ClockHandle(Arc<Mutex<Clock>>);

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

/// Builds one client per model, so its connection timings belong to that model alone.
#[derive(Clone, Debug)]
pub struct ClientFactory {
    trust: Trust,
    connect_timeout: Duration,
}

impl ClientFactory {
    /// A factory with these trust anchors and this limit on connecting (TCP, proxy tunnel and TLS).
    pub fn new(trust: Trust, connect_timeout: Duration) -> Self {
        Self {
            trust,
            connect_timeout,
        }
    }

    /// The limit on connecting.
    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// A new client and the clock its connections write to.
    pub fn client(&self) -> Result<(reqwest::Client, ClockHandle), reqwest::Error> {
        let clock = ClockHandle(Arc::new(Mutex::new(Clock::new())));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            self.trust.roots.clone(),
            provider.clone(),
        )
        .build()
        .expect("a root store with Mozilla's roots is never empty");
        let verifier = Arc::new(TimedVerifier {
            inner,
            clock: clock.clone(),
        });
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("ring supports TLS 1.2 and 1.3")
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .http1_only()
            .user_agent(concat!("jr2-probe/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(TimedResolver {
                clock: clock.clone(),
            }))
            .connector_layer(TimedLayer {
                clock: clock.clone(),
            })
            .connect_timeout(self.connect_timeout)
            .redirect(reqwest::redirect::Policy::limited(10))
            .pool_max_idle_per_host(1)
            .build()?;
        Ok((client, clock))
    }
}

#[derive(Debug)]
struct TimedVerifier {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    clock: ClockHandle,
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
        let verdict = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        self.clock.mark(|c, at| c.tls = Some(at));
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
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

struct TimedResolver {
    clock: ClockHandle,
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

#[derive(Clone)]
struct TimedLayer {
    clock: ClockHandle,
}

impl<S> tower_layer::Layer<S> for TimedLayer {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timed {
            inner,
            clock: self.clock.clone(),
        }
    }
}

#[derive(Clone)]
struct Timed<S> {
    inner: S,
    clock: ClockHandle,
}

impl<S, R> tower_service::Service<R> for Timed<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
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

/// A transport failure as the lines say it, and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Unreachable, TLS or timeout.
    pub outcome: Outcome,
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
            return Failure {
                outcome: Outcome::Protocol,
                text: format!("the answer is not HTTP/1.1 the probe can read: {text}"),
            };
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
        return Failure {
            outcome: Outcome::Http,
            text: "too many redirects".to_owned(),
        };
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
    unreachable(text)
}

fn unreachable(text: String) -> Failure {
    Failure {
        outcome: Outcome::Unreachable,
        text,
    }
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
    Failure {
        outcome: Outcome::Tls,
        text,
    }
}
