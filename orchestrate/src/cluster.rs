//! The connection to the cluster: a kube client from the kubeconfig, kubectl's way, whose TLS is rustls (ring) on
//! every platform.
//!
//! The server is trusted through the kubeconfig's `certificate-authority(-data)` when it has one, else through
//! Mozilla's roots compiled in (`webpki-root-certs`), as the probe trusts providers. Never through the operating
//! system's store: kube's own TLS (`rustls-tls`) verifies through `rustls-platform-verifier` and
//! `rustls-native-certs`, which link Apple's Security framework, and the macOS binaries are linked here without
//! an SDK. One behaviour everywhere, at the price that a cluster whose CA is only in a system keychain needs it in
//! the kubeconfig (README, "TLS to the cluster").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use hyper_util::client::legacy::connect::HttpConnector;
use kube::client::ConfigExt;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use secrecy::ExposeSecret;
use tower::ServiceBuilder;

/// Why no client was made.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The kubeconfig cannot be read, or has no usable context.
    #[error("{0}")]
    Kubeconfig(String),
    /// A certificate or key the kubeconfig names cannot be read or used.
    #[error("kubeconfig: {what}: {why}")]
    Tls {
        /// What (`certificate-authority`, `client-certificate`, ...).
        what: &'static str,
        /// Why.
        why: String,
    },
    /// The proxy (the kubeconfig's `proxy-url`, else `HTTPS_PROXY`...) cannot be used.
    #[error("{0}")]
    Proxy(#[from] crate::kube_proxy::ProxyError),
    /// The auth (token, exec plugin) or the headers of the kubeconfig.
    #[error("{0}")]
    Auth(String),
    /// The kubeconfig's credentials could not be used (an exec credential plugin that failed, a token file that
    /// cannot be read): in the words of `credentials.rs`, never what a plugin printed.
    #[error("{0}")]
    Credentials(String),
}

/// A client from the kubeconfig: `kubeconfig` (else `KUBECONFIG`, else `~/.kube/config`), its `context` (else the
/// current one).
pub async fn client(
    kubeconfig: Option<&Path>,
    context: Option<String>,
) -> Result<kube::Client, ClusterError> {
    let kube_error = |e: kube::config::KubeconfigError| ClusterError::Kubeconfig(e.to_string());
    let options = kube::config::KubeConfigOptions {
        context,
        ..Default::default()
    };
    let mut file = read_kubeconfig(kubeconfig)?;
    crate::credentials::not_interactive(&mut file);
    let files = |e: crate::kubeconfig_files::FileError| ClusterError::Kubeconfig(e.to_string());
    crate::kubeconfig_files::check_referenced(&file).map_err(files)?;
    let kubeconfig_proxy = cluster_proxy_url(&file, options.context.as_deref());
    let mut config = kube::Config::from_custom_kubeconfig(file, &options)
        .await
        .map_err(kube_error)?;
    // kube fills `proxy_url` from the kubeconfig, else from `HTTPS_PROXY` whatever the server and `NO_PROXY`;
    // the choice is made again here as kubectl makes it (src/kube_proxy.rs).
    config.proxy_url =
        crate::kube_proxy::choose(&config.cluster_url, kubeconfig_proxy.as_deref(), &|name| {
            std::env::var(name).ok()
        })?
        .map(|p| p.url);
    client_of(config)
}

/// The kubeconfig (`kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`), each file checked first: a regular file
/// of bounded size (`kubeconfig_files.rs`). The one reader of the kubeconfig: the client, the envelope and the
/// context's namespace all go through it, so `/dev/zero` or a FIFO is never read, whichever asks first.
fn read_kubeconfig(kubeconfig: Option<&Path>) -> Result<kube::config::Kubeconfig, ClusterError> {
    crate::kubeconfig_files::check_kubeconfigs(kubeconfig)
        .map_err(|e| ClusterError::Kubeconfig(e.to_string()))?;
    match kubeconfig {
        Some(path) => kube::config::Kubeconfig::read_from(path),
        None => kube::config::Kubeconfig::read(),
    }
    .map_err(|e| ClusterError::Kubeconfig(e.to_string()))
}

/// The context `context` (else the current one) and its cluster, as the file names them.
fn context_cluster<'a>(
    file: &'a kube::config::Kubeconfig,
    context: Option<&str>,
) -> Option<(&'a kube::config::Context, Option<&'a kube::config::Cluster>)> {
    let name = context.or(file.current_context.as_deref())?;
    let ctx = file
        .contexts
        .iter()
        .find(|c| c.name == name)?
        .context
        .as_ref()?;
    let cluster = file
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.as_ref());
    Some((ctx, cluster))
}

/// The `proxy-url` of the cluster of the context `context` (else the current one), if it has one.
fn cluster_proxy_url(file: &kube::config::Kubeconfig, context: Option<&str>) -> Option<String> {
    context_cluster(file, context)?
        .1?
        .proxy_url
        .clone()
        .filter(|p| !p.is_empty())
}

/// The kubeconfig's context (`context`, else the current one) and its cluster's server as `host[:port]`, read from
/// the file alone (nothing contacted): the troubleshooting envelope of the verdict. `None` for what cannot be read.
pub fn describe(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> (Option<String>, Option<String>) {
    let Ok(file) = read_kubeconfig(kubeconfig) else {
        return (context.map(str::to_owned), None);
    };
    let name = context.map(str::to_owned).or(file.current_context.clone());
    let server = context_cluster(&file, context)
        .and_then(|(_, cluster)| cluster?.server.as_deref()?.parse::<http::Uri>().ok())
        .and_then(|uri| {
            let host = uri.host()?.to_owned();
            Some(match uri.port_u16() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        });
    (name, server)
}

/// The namespace of the kubeconfig's context (`context`, else the current one), read from the file alone (no exec
/// plugin runs, nothing is contacted): kubectl's default namespace. `None` when the file, the context or its
/// namespace is missing.
pub fn context_namespace(kubeconfig: Option<&Path>, context: Option<&str>) -> Option<String> {
    let file = read_kubeconfig(kubeconfig).ok()?;
    context_cluster(&file, context)?
        .0
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
}

/// A client for `config`: kube's layers (base URI, auth, extra headers, its retry of server errors) over hyper, with
/// the TLS of [`tls_config`] and the kubeconfig's timeouts; through `config.proxy_url` when it is set (an http
/// proxy: `CONNECT` for an https server, absolute-form requests for an http one).
pub fn client_of(config: kube::Config) -> Result<kube::Client, ClusterError> {
    let proxy = match &config.proxy_url {
        Some(url) => Some(crate::kube_proxy::choose(
            &config.cluster_url,
            Some(&url.to_string()),
            &|_| None,
        )?)
        .flatten(),
        None => None,
    };
    let server_https = config.cluster_url.scheme_str() == Some("https");
    // The credentials of a forwarding proxy go on every request; a tunnel's go on its CONNECT.
    let forward_auth = proxy
        .as_ref()
        .filter(|_| !server_https)
        .and_then(|p| crate::kube_proxy::basic_auth(&p.url));
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let http = crate::kube_proxy::Hop::new(http, proxy.as_ref(), server_https);
    let mut https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(&config)?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = ServerName::try_from(name.clone()).map_err(|e| ClusterError::Tls {
            what: "tls-server-name",
            why: e.to_string(),
        })?;
        https = https.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let mut connector =
        hyper_timeout::TimeoutConnector::new(https.enable_http1().wrap_connector(http));
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let hyper: hyper_util::client::legacy::Client<_, kube::client::Body> =
        hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new())
            .build(connector);
    // kube's own text of an auth error holds what an exec plugin printed (a token): words of ours instead.
    let auth = config
        .auth_layer()
        .map_err(|e| match crate::credentials::auth_error(&e) {
            Some(auth) => ClusterError::Credentials(crate::credentials::words(auth)),
            None => ClusterError::Auth(e.to_string()),
        })?;
    let headers = config
        .extra_headers_layer()
        .map_err(|e| ClusterError::Auth(e.to_string()))?;
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .map_request(move |mut req: http::Request<kube::client::Body>| {
            if let Some(auth) = &forward_auth {
                req.headers_mut()
                    .insert(http::header::PROXY_AUTHORIZATION, auth.clone());
            }
            req
        })
        .option_layer(config.default_retry.then(|| {
            tower::retry::RetryLayer::new(IdempotentOnly(
                kube::client::retry::RetryPolicy::server_retry(),
            ))
        }))
        .option_layer(auth)
        .layer(headers)
        .map_err(tower::BoxError::from)
        // Every answer bounded in memory (`bounded.rs`).
        .layer(crate::bounded::BoundedLayer)
        .service(hyper);
    Ok(kube::Client::new(service, config.default_namespace))
}

/// kube's retry of a 429, 503 or 504, for the requests that may be sent twice (GET, HEAD) only: a create retried
/// under the driver's feet after a 504 that came after the write meets its own pod (`409 AlreadyExists`) on what
/// the driver takes for its first try, and would leave it (issue 25, item 4). The driver retries its creates and
/// deletes itself (`run/create.rs`, `run/cleanup.rs`), knowing what a try may have written.
#[derive(Clone)]
struct IdempotentOnly(kube::client::retry::RetryPolicy);

impl<Res>
    tower::retry::Policy<http::Request<kube::client::Body>, http::Response<Res>, tower::BoxError>
    for IdempotentOnly
{
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut http::Request<kube::client::Body>,
        result: &mut Result<http::Response<Res>, tower::BoxError>,
    ) -> Option<Self::Future> {
        if matches!(*req.method(), http::Method::GET | http::Method::HEAD) {
            self.0.retry(req, result)
        } else {
            None
        }
    }

    fn clone_request(
        &mut self,
        req: &http::Request<kube::client::Body>,
    ) -> Option<http::Request<kube::client::Body>> {
        if matches!(*req.method(), http::Method::GET | http::Method::HEAD) {
            <kube::client::retry::RetryPolicy as tower::retry::Policy<
                http::Request<kube::client::Body>,
                http::Response<Res>,
                tower::BoxError,
            >>::clone_request(&mut self.0, req)
        } else {
            None
        }
    }
}

/// The rustls configuration for `config`: its CA (else Mozilla's roots), its client certificate if any, or no
/// verification at all under `insecure-skip-tls-verify`.
pub fn tls_config(config: &kube::Config) -> Result<rustls::ClientConfig, ClusterError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match &config.root_cert {
        Some(ders) => {
            let mut roots = RootCertStore::empty();
            for der in ders {
                roots
                    .add(CertificateDer::from(der.clone()))
                    .map_err(|e| ClusterError::Tls {
                        what: "certificate-authority",
                        why: e.to_string(),
                    })?;
            }
            roots
        }
        // The probe's trust, as it trusts a provider: one root store in the workspace.
        None => jr2_probe::transport::bundled_roots(),
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ClusterError::Tls {
            what: "TLS versions",
            why: e.to_string(),
        })?
        .with_root_certificates(roots);
    let mut tls = match identity(&config.auth_info)? {
        Some((chain, key)) => {
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| ClusterError::Tls {
                    what: "client-key",
                    why: e.to_string(),
                })?
        }
        None => builder.with_no_client_auth(),
    };
    if config.accept_invalid_certs {
        tls.dangerous()
            .set_certificate_verifier(Arc::new(Unverified(
                provider.signature_verification_algorithms,
            )));
    }
    Ok(tls)
}

/// The kubeconfig user's client certificate chain and key (`client-certificate(-data)`, `client-key(-data)`), if
/// it has one. (A client certificate from an exec plugin is not used: kube keeps that reading to itself.)
fn identity(
    user: &kube::config::AuthInfo,
) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, ClusterError> {
    let cert = pem_of(
        "client-certificate",
        user.client_certificate_data.as_deref(),
        user.client_certificate.as_deref(),
    )?;
    let key = pem_of(
        "client-key",
        user.client_key_data.as_ref().map(|k| k.expose_secret()),
        user.client_key.as_deref(),
    )?;
    let (cert, key) = match (cert, key) {
        (None, None) => return Ok(None),
        (Some(c), Some(k)) => (c, k),
        (Some(_), None) => return Err(missing("client-key", "client-certificate")),
        (None, Some(_)) => return Err(missing("client-certificate", "client-key")),
    };
    let chain = CertificateDer::pem_slice_iter(&cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ClusterError::Tls {
            what: "client-certificate",
            why: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(ClusterError::Tls {
            what: "client-certificate",
            why: "no PEM certificate in it".into(),
        });
    }
    let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| ClusterError::Tls {
        what: "client-key",
        why: e.to_string(),
    })?;
    Ok(Some((chain, key)))
}

fn missing(what: &'static str, given: &str) -> ClusterError {
    ClusterError::Tls {
        what,
        why: format!("missing, and {given} is given"),
    }
}

/// The PEM bytes of `<what>-data` (base64) or of the file `<what>`.
fn pem_of(
    what: &'static str,
    data: Option<&str>,
    file: Option<&str>,
) -> Result<Option<Vec<u8>>, ClusterError> {
    let tls = |why: String| ClusterError::Tls { what, why };
    if let Some(data) = data {
        let compact: String = data.split_ascii_whitespace().collect();
        return base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map(Some)
            .map_err(|e| tls(format!("the -data is not base64: {e}")));
    }
    match file {
        Some(path) => std::fs::read(PathBuf::from(path))
            .map(Some)
            .map_err(|e| tls(format!("cannot read {path}: {e}"))),
        None => Ok(None),
    }
}

/// `insecure-skip-tls-verify: true`: any certificate is taken, as kubectl takes it; the handshake's signatures are
/// still checked (they prove the peer holds the key of what it sent, not who it is).
#[derive(Debug)]
struct Unverified(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}
