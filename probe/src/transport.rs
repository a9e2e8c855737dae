//! The HTTP client a check uses: trust, proxy, timing, and transport failures in plain words.
//!
//! - Trust: Mozilla's roots compiled in (`webpki-root-certs`: a `FROM scratch` image has no system store), plus the
//!   CA files the Harness env names (`NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`) and `--ca-bundle`. rustls with `ring`:
//!   smaller than aws-lc-rs and a much faster first handshake for a process that makes one or two connections.
//!   A CA file must be a regular file of at most [`MAX_CA_FILE_BYTES`]: `/dev/zero` or a FIFO is refused before it
//!   is opened, never read until memory runs out or waited on forever.
//! - Proxy: the proxy variables as the Harness reads them: Node 24's fetch, which is undici 7's `EnvHttpProxyAgent`
//!   (lower case names first, `https_proxy` falling back to the http proxy, undici's `no_proxy` matching; the rules
//!   are [`ProxyEnv`]'s). The Custodian listens at `http://127.0.0.1:15001` and takes CONNECT only. The probe reads
//!   the variables itself rather than letting reqwest do it, whose rules differ (upper case first, CIDR ranges, bare
//!   IPv6 entries) and which would silently go direct on a value it cannot parse: a malformed one is a warning line
//!   and every connection fails with it ([`ProxyUnusable`]), since the Harness fails every request with it.
//!   A proxy's password and its `Basic` token are held values ([`ProxyEnv::held_values`]) for the redactor.
//! - Redirects: followed only to the same origin (scheme, host and port), without userinfo, at most
//!   [`MAX_REDIRECTS`]. reqwest drops `Authorization` on a cross-origin redirect but not the providers' own key
//!   headers (`x-api-key`, `x-goog-api-key`, `api-key`, `cf-aig-authorization`), so any other redirect ends the try
//!   ([`RedirectRefused`]: `HTTP 307: redirected to <host>`) before a byte goes to the other origin.
//! - HTTP/1.1, as pi's Node fetch speaks it.
//! - Timing: a resolver, a connector layer and a certificate-verifier wrapper note when DNS, TLS and the
//!   connection finished, so each try can report where its time went.
//! - Failures: [`describe`] walks a request error's causes to the one a person can act on (`connection refused`,
//!   `cannot resolve <host>`, `certificate not trusted: ...`); [`log_text`] is an error's debug form for the log,
//!   with its URL shown through [`sanitize::display_url`](crate::sanitize::display_url) (no userinfo, no query).

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use thiserror::Error;

use crate::contract::outcome::{Code, Outcome};
use crate::sanitize;

/// The largest CA file the probe reads. Mozilla's whole bundle is about 220 KB; a corporate one with every
/// intermediate is a few MB.
pub const MAX_CA_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The most redirects one request follows (all to the same origin).
pub const MAX_REDIRECTS: usize = 5;

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
    /// The path names something else than a regular file: a device (`/dev/zero`), a FIFO, a directory.
    #[error("the CA file {path} named by {source_name} is not a regular file ({kind})")]
    NotAFile {
        /// The file.
        path: PathBuf,
        /// What named it.
        source_name: String,
        /// What it is: `a character device`, `a FIFO`...
        kind: &'static str,
    },
    /// The file is larger than [`MAX_CA_FILE_BYTES`].
    #[error("the CA file {path} named by {source_name} is larger than 8 MiB")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// What named it.
        source_name: String,
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaFile {
    /// What named it: `--ca-bundle`, `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE`.
    pub source_name: String,
    /// The path.
    pub path: PathBuf,
}

/// The trust anchors of every connection, built once per run.
#[derive(Clone, Debug)]
pub struct Trust {
    /// `None` when no connection of the run uses TLS ([`Trust::plan`] with `tls` false): nothing was parsed, and a
    /// handshake, which never comes, would fail with `unknown issuer`.
    roots: Option<Arc<RootCertStore>>,
    /// How many anchors came from CA files (for the log).
    pub extra: usize,
}

/// Which CA files the Harness trusts, as Node 24 reads its environment: see [`ca_sources_from`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CaSources {
    /// The bundled roots (Mozilla's) are trusted: Node's default, and not under `--use-openssl-ca` with an
    /// `SSL_CERT_FILE`, which takes their place.
    pub bundled: bool,
    /// The files, in order: `SSL_CERT_FILE` (only under `--use-openssl-ca` or `--use-system-ca`), then
    /// `NODE_EXTRA_CA_CERTS`.
    pub files: Vec<CaFile>,
}

impl Trust {
    /// Mozilla's roots plus every certificate of `files`; the first file that cannot be used is the error.
    pub fn load(files: &[CaFile]) -> Result<Self, TrustError> {
        let bundle_only = CaSources {
            bundled: true,
            files: Vec::new(),
        };
        let (trust, mut skipped) = Self::plan(files, &bundle_only, true)?;
        if skipped.is_empty() {
            Ok(trust)
        } else {
            Err(skipped.remove(0))
        }
    }

    /// The anchors of a run: Mozilla's roots (unless `env` says Node would not trust them), the certificates of
    /// `required` (`--ca-bundle`: the first that cannot be used is the error) and of `env` (the environment's: each
    /// one that cannot be used is skipped and returned, for a warning, and the others are trusted).
    ///
    /// With `tls` false, no connection of the run can use TLS (plain-HTTP endpoints and proxies; redirects stay on
    /// their origin): every file is still read and checked to hold a PEM certificate, so its warning or error is the
    /// same, but no certificate is parsed and Mozilla's roots are not loaded.
    pub fn plan(
        required: &[CaFile],
        env: &CaSources,
        tls: bool,
    ) -> Result<(Self, Vec<TrustError>), TrustError> {
        let mut roots = RootCertStore::empty();
        if tls && env.bundled {
            roots.add_parsable_certificates(
                webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned(),
            );
        }
        let mut extra = 0;
        // `--ca-bundle` is parsed whatever the run needs: a file that cannot be used is bad input on every run, not
        // only on one that reaches a TLS endpoint.
        for file in required {
            extra += add_pem_file(&mut roots, file, true)?;
        }
        let mut skipped = Vec::new();
        for file in &env.files {
            match add_pem_file(&mut roots, file, tls) {
                Ok(n) => extra += n,
                Err(e) => skipped.push(e),
            }
        }
        let roots = tls.then(|| {
            if roots.is_empty() {
                // `--use-openssl-ca` with an SSL_CERT_FILE that cannot be used, and nothing else: Node would trust
                // no root at all; the probe keeps Mozilla's rather than refuse every certificate.
                roots.add_parsable_certificates(
                    webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned(),
                );
            }
            Arc::new(roots)
        });
        Ok((Self { roots, extra }, skipped))
    }
}

/// What a path that is not a regular file names, in words.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a file"
}

/// The bytes of a CA file: a regular file (checked before it is opened, so a FIFO never blocks the open) of at most
/// [`MAX_CA_FILE_BYTES`] (checked before, and while reading, for a file that grows).
fn read_ca_file(file: &CaFile) -> Result<Vec<u8>, TrustError> {
    use std::io::Read;
    let read_error = |source| TrustError::Read {
        path: file.path.clone(),
        source_name: file.source_name.clone(),
        source,
    };
    let too_large = || TrustError::TooLarge {
        path: file.path.clone(),
        source_name: file.source_name.clone(),
    };
    let meta = std::fs::metadata(&file.path).map_err(read_error)?;
    if !meta.is_file() {
        return Err(TrustError::NotAFile {
            path: file.path.clone(),
            source_name: file.source_name.clone(),
            kind: file_kind(&meta),
        });
    }
    if meta.len() > MAX_CA_FILE_BYTES {
        return Err(too_large());
    }
    let opened = std::fs::File::open(&file.path).map_err(read_error)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    opened
        .take(MAX_CA_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > MAX_CA_FILE_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Adds the certificates of `file` to `roots` and says how many; with `parse` false, only checks that the file
/// holds a PEM certificate and says 0.
fn add_pem_file(
    roots: &mut RootCertStore,
    file: &CaFile,
    parse: bool,
) -> Result<usize, TrustError> {
    let bytes = read_ca_file(file)?;
    let no_certificate = || TrustError::NoCertificate {
        path: file.path.clone(),
        source_name: file.source_name.clone(),
    };
    if !parse {
        let marked = bytes
            .split(|b| *b == b'\n')
            .any(|line| line.starts_with(b"-----BEGIN CERTIFICATE-----"));
        return if marked { Ok(0) } else { Err(no_certificate()) };
    }
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
        return Err(no_certificate());
    }
    Ok(added)
}

/// The CA files the Harness trusts, from the process environment: [`ca_sources_from`].
pub fn ca_sources_from_env() -> CaSources {
    ca_sources_from(|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

/// The CA files Node 24 trusts, from the environment `env` gives:
/// - by default, its bundled roots and `NODE_EXTRA_CA_CERTS` (added to them); `SSL_CERT_FILE` is not read;
/// - under `--use-openssl-ca` (in `NODE_OPTIONS`), OpenSSL's store in place of the bundled roots: `SSL_CERT_FILE`,
///   plus `NODE_EXTRA_CA_CERTS`;
/// - under `--use-system-ca` (in `NODE_OPTIONS`) or `NODE_USE_SYSTEM_CA=1`, the system store on top of the bundled
///   roots: on Linux, OpenSSL's, so `SSL_CERT_FILE` too.
///
/// Where the probe differs: `SSL_CERT_DIR` and OpenSSL's default file (used when `SSL_CERT_FILE` is unset) are not
/// read (a `FROM scratch` image has neither), so without `SSL_CERT_FILE` the bundled roots stay.
pub fn ca_sources_from(env: impl Fn(&str) -> Option<String>) -> CaSources {
    let file = |name: &str| {
        env(name).filter(|v| !v.is_empty()).map(|v| CaFile {
            source_name: name.to_owned(),
            path: PathBuf::from(v),
        })
    };
    let options = env("NODE_OPTIONS").unwrap_or_default();
    // Node takes `_` for `-` in a flag's name (`--use_openssl_ca`).
    let flag = |f: &str| {
        options
            .split_ascii_whitespace()
            .any(|o| o.replace('_', "-") == f)
    };
    let openssl = flag("--use-openssl-ca");
    let system = flag("--use-system-ca") || env("NODE_USE_SYSTEM_CA").as_deref() == Some("1");
    let ssl_cert_file = (openssl || system).then(|| file("SSL_CERT_FILE")).flatten();
    CaSources {
        bundled: !(openssl && ssl_cert_file.is_some()),
        files: ssl_cert_file
            .into_iter()
            .chain(file("NODE_EXTRA_CA_CERTS"))
            .collect(),
    }
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

/// A proxy variable that is set but cannot be used: a value that is not a URL, or not an `http`/`https` one.
///
/// The Harness (Node's fetch, undici's `EnvHttpProxyAgent` under `NODE_USE_ENV_PROXY`) builds its proxy agents from
/// both variables with `new URL()`, which throws on such a value: every request of a Turn fails. So the probe does
/// not go direct either: every connection it would make fails with this error, and the warning line says why.
#[derive(Clone, Debug)]
pub struct ProxyUnusable {
    /// The variable: `HTTPS_PROXY`, `http_proxy`...
    pub var: String,
    /// Its value as [`sanitize::display_url`] shows it (no userinfo, no query).
    pub shown: String,
    /// Why it cannot be used: the URL parser's words, or the scheme.
    pub reason: String,
    /// A SOCKS proxy: undici 7 can use it (a Turn goes through it), the probe cannot, so the check is no answer.
    pub socks: bool,
}

impl std::fmt::Display for ProxyUnusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.socks {
            write!(
                f,
                "{} is a SOCKS proxy, which this check cannot use (a Turn can)",
                self.var
            )
        } else {
            write!(
                f,
                "{} is not a proxy URL ({}): the Harness fails every request with it",
                self.var, self.reason
            )
        }
    }
}

impl std::error::Error for ProxyUnusable {}

impl ProxyUnusable {
    /// The warning line a run prints before its checks.
    pub fn warning_line(&self) -> String {
        if self.socks {
            return format!(
                "warning: provider: {} \"{}\" is a SOCKS proxy, which a Turn can use and this check cannot: every \
                 check fails though a Turn may pass; check through an HTTP proxy, or with the variable unset",
                self.var, self.shown
            );
        }
        format!(
            "warning: provider: {} \"{}\" is not a proxy URL ({}): the Harness fails every request with \
             it, so every check fails too instead of going direct; fix the variable or unset it",
            self.var, self.shown, self.reason
        )
    }
}

/// The proxy variables of a run, read once, and the choice of a request's proxy, as the Harness makes it.
///
/// Two sets of rules, by the client a Turn's API uses ([`ProxyRules`]): Bedrock's and Codex's follow pi-ai's own
/// resolver ([`PiProxy`]); every other API's go through Node 24's fetch, which reads the variables only when Node is
/// told to ([`node_reads_proxy_env`]; by hand always), through undici 7's `EnvHttpProxyAgent`, whose rules
/// (undici 7.30.2, the last 7.x) are these, which `probe/tests/fixtures/undici7-proxy-rules.json` lists one per
/// row and `tests/fidelity/proxy-rules.mjs` checks against undici itself:
/// - the http proxy is `http_proxy`, else `HTTP_PROXY`; the https proxy is `https_proxy`, else `HTTPS_PROXY`, else
///   the http proxy. The lower case name wins whenever it is set, even to an empty value, and an empty value is no
///   proxy. `ALL_PROXY` is not read.
/// - `no_proxy`, else `NO_PROXY`, is a list split at commas and white space. Exactly `*` sends everything direct. An
///   entry `host[:port]` (a leading `.` or `*.` dropped, case ignored) matches that host and its subdomains, on any
///   port or on that port (the scheme's default port when the URL names none). An IP address matches only as written
///   (an IPv6 one in brackets, `[::1]`: a bare `::1` reads as host `:` port 1 and matches nothing); a CIDR range is
///   no more than text that never matches a host.
#[derive(Clone, Debug, Default)]
pub struct ProxyEnv {
    /// The proxy of http targets.
    http: Option<url::Url>,
    /// The proxy of https targets.
    https: Option<url::Url>,
    /// The hosts that go direct.
    no_proxy: NoProxy,
    /// The variables that are set but unusable.
    unusable: Vec<ProxyUnusable>,
    /// The proxies' passwords (or user names without one), as given and percent-decoded, and their `Basic` tokens.
    held: Vec<String>,
    /// Node's fetch reads the variables above: by hand always (a command line tool honours its proxy variables); in
    /// a check pod only when the Harness env tells Node to ([`node_reads_proxy_env`]), as without it a Turn goes
    /// direct whatever `HTTPS_PROXY` says.
    fetch_reads_env: bool,
    /// The proxies of pi-ai's own resolver, which Bedrock's and Codex's clients use ([`ProxyRules::Pi`]).
    pi: PiProxy,
}

/// Whose rules choose a request's proxy in a Turn: the client its API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyRules {
    /// Node's fetch (undici 7's `EnvHttpProxyAgent`): every API whose SDK sends through fetch.
    Fetch,
    /// pi-ai 0.82.1's `resolveHttpProxyUrlForTarget` (`utils/node-http-proxy.js`), whatever Node is told: Bedrock's
    /// client (the AWS SDK on `node:http`, given proxy agents) and Codex's.
    Pi,
}

impl ProxyRules {
    /// The rules a Turn of this API follows.
    pub fn of(api: crate::contract::ApiKind) -> Self {
        use crate::contract::ApiKind;
        match api {
            ApiKind::BedrockConverseStream | ApiKind::OpenAiCodexResponses => Self::Pi,
            _ => Self::Fetch,
        }
    }
}

/// Node 24's fetch reads `HTTP(S)_PROXY` and `NO_PROXY` only when told to: `NODE_USE_ENV_PROXY=1`, or
/// `--use-env-proxy` in `NODE_OPTIONS` (Node takes `_` for `-` in a flag's name). The Custodian's env sets the first.
pub fn node_reads_proxy_env(env: impl Fn(&str) -> Option<String>) -> bool {
    env("NODE_USE_ENV_PROXY").is_some_and(|v| v == "1")
        || env("NODE_OPTIONS").is_some_and(|options| {
            options
                .split_ascii_whitespace()
                .any(|flag| flag.replace('_', "-") == "--use-env-proxy")
        })
}

/// One scheme's proxy under pi's rules.
#[derive(Clone, Debug, Default)]
enum PiChoice {
    /// No variable gives one.
    #[default]
    None,
    /// This proxy.
    Proxy(url::Url),
    /// A value pi cannot use: every request it applies to throws.
    Unusable(ProxyUnusable),
}

/// The proxy variables as pi-ai 0.82.1's resolver reads them: for a target of scheme `s`, `s_proxy`, else `S_PROXY`,
/// else `all_proxy`, else `ALL_PROXY` (an empty value counts as unset, so it falls through); a value without `://`
/// gets `s://` in front; it must then be an http or https URL. `no_proxy` (else `NO_PROXY`, lower-cased) is split at
/// commas and white space; exactly `*` sends everything direct; an entry `host[:port]` matches only that host
/// (on that port, when given); one that starts with `.` or `*` matches hosts that end with it (`*` dropped).
#[derive(Clone, Debug, Default)]
struct PiProxy {
    http: PiChoice,
    https: PiChoice,
    no_proxy: String,
}

impl PiProxy {
    fn from_lookup(env: &impl Fn(&str) -> Option<String>, held: &mut Vec<String>) -> Self {
        let get = |key: &str| -> Option<(String, String)> {
            [key.to_lowercase(), key.to_uppercase()]
                .into_iter()
                .find_map(|name| env(&name).filter(|v| !v.is_empty()).map(|v| (name, v)))
        };
        let mut choice = |scheme: &str| -> PiChoice {
            let Some((var, mut value)) =
                get(&format!("{scheme}_proxy")).or_else(|| get("all_proxy"))
            else {
                return PiChoice::None;
            };
            if !value.contains("://") {
                value = format!("{scheme}://{value}");
            }
            let unusable = |reason: String| {
                PiChoice::Unusable(ProxyUnusable {
                    var: var.clone(),
                    shown: sanitize::display_url(&value),
                    reason,
                    socks: false,
                })
            };
            match url::Url::parse(&value) {
                Err(e) => unusable(e.to_string()),
                Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                    unusable("the scheme must be http or https".to_owned())
                }
                Ok(url) if url.host_str().is_none_or(str::is_empty) => {
                    unusable("it names no host".to_owned())
                }
                Ok(url) => {
                    held.extend(credentials(&url));
                    PiChoice::Proxy(url)
                }
            }
        };
        let http = choice("http");
        let https = choice("https");
        Self {
            http,
            https,
            no_proxy: get("no_proxy")
                .map(|(_, v)| v.to_lowercase())
                .unwrap_or_default(),
        }
    }

    fn choice(&self, url: &url::Url) -> &PiChoice {
        let choice = match url.scheme() {
            "https" => &self.https,
            "http" => &self.http,
            _ => return &PiChoice::None,
        };
        if matches!(choice, PiChoice::None) || !self.proxies(url) {
            return &PiChoice::None;
        }
        choice
    }

    /// pi's `shouldProxyHostname`.
    fn proxies(&self, url: &url::Url) -> bool {
        if self.no_proxy.is_empty() {
            return true;
        }
        if self.no_proxy == "*" {
            return false;
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_lowercase(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            None => return true,
        };
        let port = u64::from(url.port_or_known_default().unwrap_or(0));
        self.no_proxy
            .split(|c: char| c == ',' || js_space(c))
            .filter(|e| !e.is_empty())
            .all(|entry| {
                let (name, entry_port) = match entry.rsplit_once(':') {
                    Some((name, digits))
                        if !name.is_empty()
                            && !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        (name, digits.parse::<u64>().unwrap_or(u64::MAX))
                    }
                    _ => (entry, 0),
                };
                if entry_port != 0 && entry_port != port {
                    return true;
                }
                if !name.starts_with(['.', '*']) {
                    return host != name;
                }
                !host.ends_with(name.strip_prefix('*').unwrap_or(name))
            })
    }

    fn unusable(&self) -> impl Iterator<Item = &ProxyUnusable> {
        [&self.http, &self.https]
            .into_iter()
            .filter_map(|c| match c {
                PiChoice::Unusable(u) => Some(u),
                _ => None,
            })
    }
}

/// `no_proxy` as undici 7 reads it: see [`ProxyEnv`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NoProxy {
    /// Exactly `*`.
    everything: bool,
    /// (host, port): port 0 for any port.
    entries: Vec<(String, u64)>,
}

/// JavaScript's `\s`, which undici splits `no_proxy` at.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

impl NoProxy {
    fn parse(value: &str) -> Self {
        let entries = value
            .split(|c: char| c == ',' || js_space(c))
            .filter(|e| !e.is_empty())
            .map(|entry| {
                // `host:digits` at the end, the host as long as it can be: `::1` is host `:`, port 1.
                let (host, port) = match entry.rsplit_once(':') {
                    Some((host, digits))
                        if !host.is_empty()
                            && !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        (host, digits.parse::<u64>().unwrap_or(u64::MAX))
                    }
                    _ => (entry, 0),
                };
                let host = host
                    .strip_prefix("*.")
                    .or_else(|| host.strip_prefix('.'))
                    .unwrap_or(host);
                (host.to_lowercase(), port)
            })
            .collect();
        Self {
            everything: value == "*",
            entries,
        }
    }

    /// The request to `host` (lower case, IPv6 in brackets) on `port` goes direct.
    fn direct(&self, host: &str, port: u64) -> bool {
        if self.entries.is_empty() {
            return false;
        }
        if self.everything {
            return true;
        }
        self.entries.iter().any(|(entry, entry_port)| {
            (*entry_port == 0 || *entry_port == port)
                && (host == entry
                    || host
                        .strip_suffix(entry.as_str())
                        .is_some_and(|rest| rest.ends_with('.')))
        })
    }
}

impl ProxyEnv {
    /// The process environment's proxy variables, honoured as a command line tool honours them (by hand).
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The process environment's proxy variables as a Turn in this env reads them (a check pod): fetch's only when
    /// Node is told to read them ([`node_reads_proxy_env`]).
    pub fn from_env_as_node() -> Self {
        Self::from_lookup_as_node(|name| std::env::var(name).ok())
    }

    /// [`ProxyEnv::from_lookup`], fetch's variables read only when `env` tells Node to read them.
    pub fn from_lookup_as_node(env: impl Fn(&str) -> Option<String>) -> Self {
        let reads = node_reads_proxy_env(&env);
        let mut out = Self::from_lookup(env);
        out.fetch_reads_env = reads;
        out
    }

    /// The proxy variables `env` gives, read as undici 7 reads them ([`ProxyEnv`]). A value that is not an http or
    /// https URL (no scheme, a scheme of another kind, no host, a parse error) is unusable: undici cannot build its
    /// agent with it, so every request of a Turn fails ([`ProxyUnusable`]).
    pub fn from_lookup(env: impl Fn(&str) -> Option<String>) -> Self {
        let mut out = Self::default();
        let first = |names: [&'static str; 2]| {
            names
                .into_iter()
                .find_map(|name| env(name).map(|value| (name, value)))
        };
        let mut parse = |names: [&'static str; 2]| -> Option<url::Url> {
            let (var, value) = first(names)?;
            if value.is_empty() {
                return None;
            }
            let unusable = |reason: String| ProxyUnusable {
                var: var.to_owned(),
                shown: sanitize::display_url(&value),
                socks: value.to_ascii_lowercase().starts_with("socks"),
                reason,
            };
            let problem = match url::Url::parse(&value) {
                Err(e) => Some(e.to_string()),
                Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                    Some(if value.contains("://") {
                        "the scheme must be http or https".to_owned()
                    } else {
                        "it names no scheme: write http://".to_owned()
                    })
                }
                Ok(url) if url.host_str().is_none_or(str::is_empty) => {
                    Some("it names no host".to_owned())
                }
                Ok(url) => {
                    out.held.extend(credentials(&url));
                    return Some(url);
                }
            };
            let reason = match problem.as_deref() {
                Some("relative URL without a base") => {
                    "it names no scheme: write http://".to_owned()
                }
                _ => problem.unwrap_or_default(),
            };
            out.unusable.push(unusable(reason));
            None
        };
        let http = parse(["http_proxy", "HTTP_PROXY"]);
        let https = parse(["https_proxy", "HTTPS_PROXY"]);
        out.https = https.or_else(|| http.clone());
        out.http = http;
        out.no_proxy = NoProxy::parse(
            &first(["no_proxy", "NO_PROXY"])
                .map(|(_, v)| v)
                .unwrap_or_default(),
        );
        out.pi = PiProxy::from_lookup(&env, &mut out.held);
        out.fetch_reads_env = true;
        out
    }

    /// The proxy a Turn's request of `api` to `url` goes through, `None` for direct, by the rules its client
    /// follows ([`ProxyRules`]).
    pub fn proxy_for_api(
        &self,
        api: crate::contract::ApiKind,
        url: &url::Url,
    ) -> Option<&url::Url> {
        match ProxyRules::of(api) {
            ProxyRules::Fetch if self.fetch_reads_env => self.proxy_for(url),
            ProxyRules::Fetch => None,
            ProxyRules::Pi => match self.pi.choice(url) {
                PiChoice::Proxy(p) => Some(p),
                _ => None,
            },
        }
    }

    /// The unusable variable that makes a Turn's request of `api` to `url` fail, if any: for fetch, any unusable
    /// variable it reads (undici cannot build its agent); for pi, the one its resolver picks for `url`.
    pub fn refusal_for(
        &self,
        api: crate::contract::ApiKind,
        url: &url::Url,
    ) -> Option<&ProxyUnusable> {
        match ProxyRules::of(api) {
            ProxyRules::Fetch if self.fetch_reads_env => self.unusable.first(),
            ProxyRules::Fetch => None,
            ProxyRules::Pi => match self.pi.choice(url) {
                PiChoice::Unusable(u) => Some(u),
                _ => None,
            },
        }
    }

    /// The unusable variables that the rules of these APIs read, once each by variable.
    pub fn unusable_for(
        &self,
        apis: impl IntoIterator<Item = crate::contract::ApiKind>,
    ) -> Vec<ProxyUnusable> {
        let rules: Vec<ProxyRules> = apis.into_iter().map(ProxyRules::of).collect();
        let mut out: Vec<ProxyUnusable> = Vec::new();
        let fetch = self.fetch_reads_env && rules.contains(&ProxyRules::Fetch);
        let pi = rules.contains(&ProxyRules::Pi);
        let candidates = fetch
            .then_some(self.unusable.iter())
            .into_iter()
            .flatten()
            .chain(pi.then(|| self.pi.unusable()).into_iter().flatten());
        for u in candidates {
            if !out.iter().any(|o| o.var == u.var) {
                out.push(u.clone());
            }
        }
        out
    }

    /// The proxy a request to `url` goes through, `None` for direct, as undici 7 picks it.
    pub fn proxy_for(&self, url: &url::Url) -> Option<&url::Url> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            _ => self.http.as_ref(),
        }?;
        let host = match url.host()? {
            url::Host::Domain(d) => d.to_lowercase(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => format!("[{ip}]"),
        };
        let port = match url.port() {
            Some(p) if p != 0 => u64::from(p),
            _ => match url.scheme() {
                "http" => 80,
                "https" => 443,
                _ => 0,
            },
        };
        (!self.no_proxy.direct(&host, port)).then_some(proxy)
    }

    /// Some request may go through a proxy, by either rules.
    fn any(&self) -> bool {
        self.http.is_some()
            || self.https.is_some()
            || [&self.pi.http, &self.pi.https]
                .into_iter()
                .any(|c| matches!(c, PiChoice::Proxy(_)))
    }

    /// Some request may reach its proxy over TLS (an `https://` proxy URL).
    pub fn tls_to_a_proxy(&self) -> bool {
        let pi = [&self.pi.http, &self.pi.https]
            .into_iter()
            .filter_map(|c| match c {
                PiChoice::Proxy(u) => Some(u),
                _ => None,
            });
        [&self.http, &self.https]
            .into_iter()
            .flatten()
            .chain(pi)
            .any(|u| u.scheme() == "https")
    }

    /// The proxies' secrets, for the redactor: each password as given and percent-decoded (the user name instead
    /// when there is no password), and the base64 token of `Proxy-Authorization: Basic <token>`.
    pub fn held_values(&self) -> &[String] {
        &self.held
    }

    /// The variables that are set but unusable.
    pub fn unusable(&self) -> &[ProxyUnusable] {
        &self.unusable
    }
}

/// What a proxy URL's userinfo holds that must not be shown: see [`ProxyEnv::held_values`].
fn credentials(url: &url::Url) -> Vec<String> {
    if url.username().is_empty() && url.password().is_none() {
        return Vec::new();
    }
    let user = percent_decode(url.username());
    let mut held = Vec::new();
    match url.password() {
        Some(pass) => {
            held.push(pass.to_owned());
            held.push(percent_decode(pass));
        }
        None => {
            held.push(url.username().to_owned());
            held.push(user.clone());
        }
    }
    // As hyper-util encodes it: `user:` and the password, if any.
    let pair = format!(
        "{user}:{}",
        url.password().map(percent_decode).unwrap_or_default()
    );
    held.push(base64(pair.as_bytes()));
    held
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// RFC 4648 base64 with padding: the form of a `Basic` token.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

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
fn redirect_policy() -> reqwest::redirect::Policy {
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

#[derive(Debug)]
struct TimedVerifier {
    /// `None` when the run was planned without TLS ([`Trust::plan`]): every certificate is refused.
    inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
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

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Notes when connections start and finish; with `refuse`, fails every one with that error instead (an unusable
/// proxy variable: nothing goes direct).
#[derive(Clone)]
struct TimedLayer {
    clock: ClockHandle,
    refuse: Option<ProxyUnusable>,
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
struct Timed<S> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    fn ca(path: &Path) -> CaFile {
        CaFile {
            source_name: "--ca-bundle".to_owned(),
            path: path.to_path_buf(),
        }
    }

    fn temp(name: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("jr2-transport-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        p
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

    #[test]
    fn a_ca_file_over_the_limit_is_refused_unread() {
        let p = temp("big");
        std::fs::File::create(&p)
            .unwrap()
            .set_len(MAX_CA_FILE_BYTES + 1)
            .unwrap();
        let e = Trust::load(&[ca(&p)]).unwrap_err();
        let _ = std::fs::remove_file(&p);
        assert!(matches!(e, TrustError::TooLarge { .. }), "{e}");
        assert!(e.to_string().ends_with("is larger than 8 MiB"), "{e}");
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let p = temp("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let file = ca(&p);
        std::thread::spawn(move || {
            let _ = tx.send(Trust::load(&[file]).map(|_| ()).map_err(|e| e.to_string()));
        });
        let got = rx.recv_timeout(Duration::from_secs(5));
        let _ = std::fs::remove_file(&p);
        let e = got
            .expect("Trust::load returns, not blocked on the FIFO")
            .unwrap_err();
        assert!(e.ends_with("is not a regular file (a FIFO)"), "{e}");
    }

    #[test]
    fn devices_and_directories_are_refused_unread() {
        for (path, kind) in [("/dev/zero", "a character device"), ("/", "a directory")] {
            let e = Trust::load(&[ca(Path::new(path))]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("the CA file {path} named by --ca-bundle is not a regular file ({kind})")
            );
        }
    }

    #[test]
    fn the_ca_files_are_the_ones_node_24_reads() {
        let sources = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let got = ca_sources_from(|name| {
                vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
            });
            let names: Vec<&str> = got.files.iter().map(|f| f.source_name.as_str()).collect();
            (got.bundled, names.join(" "))
        };
        let both = [
            ("NODE_EXTRA_CA_CERTS", "/a.pem"),
            ("SSL_CERT_FILE", "/b.pem"),
        ];
        let with = |extra: (&'static str, &'static str)| {
            let mut v = both.to_vec();
            v.push(extra);
            v
        };
        // Node's default: the bundled roots and NODE_EXTRA_CA_CERTS; SSL_CERT_FILE is not read.
        assert_eq!(sources(&both), (true, "NODE_EXTRA_CA_CERTS".into()));
        // --use-openssl-ca: SSL_CERT_FILE in place of the bundled roots.
        assert_eq!(
            sources(&with(("NODE_OPTIONS", "--use-openssl-ca"))),
            (false, "SSL_CERT_FILE NODE_EXTRA_CA_CERTS".into())
        );
        assert_eq!(
            sources(&[("NODE_OPTIONS", "--use-openssl-ca")]),
            (true, String::new()),
            "no SSL_CERT_FILE: the bundled roots stay"
        );
        // --use-system-ca, NODE_USE_SYSTEM_CA=1: on top of them.
        for extra in [
            ("NODE_OPTIONS", "--inspect --use-system-ca"),
            ("NODE_USE_SYSTEM_CA", "1"),
        ] {
            assert_eq!(
                sources(&with(extra)),
                (true, "SSL_CERT_FILE NODE_EXTRA_CA_CERTS".into()),
                "{extra:?}"
            );
        }
        // Not a flag of its own; empty values name no file.
        assert_eq!(
            sources(&with(("NODE_OPTIONS", "--use-openssl-cafoo"))),
            (true, "NODE_EXTRA_CA_CERTS".into())
        );
        assert_eq!(
            sources(&[("NODE_EXTRA_CA_CERTS", "")]),
            (true, String::new())
        );
    }

    #[test]
    fn without_tls_no_certificate_is_parsed_but_each_file_is_checked() {
        // A PEM marker over bytes that are not a certificate: read and accepted when no connection can use TLS,
        // refused when one can (it is parsed then).
        let p = temp("unparsed");
        std::fs::write(
            &p,
            "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let env = CaSources {
            bundled: true,
            files: vec![CaFile {
                source_name: "NODE_EXTRA_CA_CERTS".into(),
                path: p.clone(),
            }],
        };
        let (trust, skipped) = Trust::plan(&[], &env, false).unwrap();
        assert!(trust.roots.is_none() && skipped.is_empty(), "{skipped:?}");
        let (trust, skipped) = Trust::plan(&[], &env, true).unwrap();
        assert!(
            trust.roots.is_some_and(|r| !r.is_empty()),
            "Mozilla's roots"
        );
        assert!(
            matches!(skipped[..], [TrustError::BadCertificate { .. }]),
            "{skipped:?}"
        );
        // A file with no PEM certificate, or none at all, is the same warning either way.
        std::fs::write(&p, "nothing here\n").unwrap();
        for tls in [false, true] {
            let (_, skipped) = Trust::plan(&[], &env, tls).unwrap();
            assert!(
                matches!(skipped[..], [TrustError::NoCertificate { .. }]),
                "{tls}: {skipped:?}"
            );
        }
        let _ = std::fs::remove_file(&p);
        let (_, skipped) = Trust::plan(&[], &env, false).unwrap();
        assert!(
            matches!(skipped[..], [TrustError::Read { .. }]),
            "{skipped:?}"
        );
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> ProxyEnv {
        ProxyEnv::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn proxy_variables_that_are_not_urls_are_unusable_and_say_why() {
        let e = env(&[
            ("HTTPS_PROXY", "http://u:x@[::1"),
            ("HTTP_PROXY", "proxy.lan:3128"),
        ]);
        assert_eq!(e.unusable().len(), 2);
        let u = &e.unusable()[1];
        assert_eq!(u.var, "HTTPS_PROXY");
        assert_eq!(u.reason, "invalid IPv6 address");
        assert_eq!(u.shown, "http://[redacted]@[::1");
        insta::assert_snapshot!("proxy_unusable_warning", u.warning_line());
        insta::assert_snapshot!("proxy_unusable_error", u.to_string());
        // Without a scheme, as undici 7 takes it (`new URL()` reads `proxy.lan:` as a scheme): unusable.
        assert_eq!(e.unusable()[0].var, "HTTP_PROXY");
        assert_eq!(e.unusable()[0].reason, "it names no scheme: write http://");
        let e = env(&[("HTTPS_PROXY", "127.0.0.1:3128")]);
        assert_eq!(e.unusable()[0].reason, "it names no scheme: write http://");
        let e = env(&[("http_proxy", "socks5://127.0.0.1:1080")]);
        assert_eq!(e.unusable()[0].var, "http_proxy");
        assert_eq!(e.unusable()[0].reason, "the scheme must be http or https");
        // An empty lower case value wins and is no proxy: the upper case one is not even parsed.
        let e = env(&[("https_proxy", ""), ("HTTPS_PROXY", "http://[")]);
        assert!(e.unusable().is_empty() && !e.any());
    }

    /// One row of `probe/tests/fixtures/undici7-proxy-rules.json`.
    #[derive(serde::Deserialize)]
    struct Row {
        rule: String,
        env: std::collections::BTreeMap<String, String>,
        url: String,
        via: String,
    }

    #[test]
    fn the_proxy_of_a_request_is_the_one_undici_7_picks() {
        #[derive(serde::Deserialize)]
        struct Table {
            undici: String,
            rows: Vec<Row>,
        }
        let table: Table =
            serde_json::from_str(include_str!("../tests/fixtures/undici7-proxy-rules.json"))
                .unwrap();
        assert!(table.undici.starts_with("7."), "{}", table.undici);
        assert!(table.rows.len() >= 50, "one row per rule");
        assert_rows(&table.rows, "undici", |row| {
            let e = ProxyEnv::from_lookup(|name| row.env.get(name).cloned());
            if !e.unusable().is_empty() {
                return "unusable".to_owned();
            }
            match e.proxy_for(&url(&row.url)) {
                Some(proxy) => proxy.to_string(),
                None => "direct".to_owned(),
            }
        });
    }

    /// Each row's `via` is what `pick` gives for it; the ones that differ, all of them, in the failure.
    fn assert_rows(rows: &[Row], whose: &str, pick: impl Fn(&Row) -> String) {
        let wrong: Vec<String> = rows
            .iter()
            .filter_map(|row| {
                let got = pick(row);
                (got != row.via).then(|| {
                    format!(
                        "{}: {:?} {} -> {got}, {whose}: {}",
                        row.rule, row.env, row.url, row.via
                    )
                })
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} rows differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    /// Bedrock's and Codex's Turns pick their proxy by pi-ai's own resolver, not undici's: one row per rule of it,
    /// each checked against pi-ai itself by tests/fidelity/proxy-rules.mjs (issue 12 review).
    #[test]
    fn a_bedrock_request_s_proxy_is_the_one_pi_picks() {
        #[derive(serde::Deserialize)]
        struct Table {
            pi: String,
            rows: Vec<Row>,
        }
        let table: Table =
            serde_json::from_str(include_str!("../tests/fixtures/pi-proxy-rules.json")).unwrap();
        assert_eq!(table.pi, "0.82.1");
        assert!(table.rows.len() >= 25, "one row per rule");
        assert_rows(&table.rows, "pi", |row| {
            // In a check pod, without NODE_USE_ENV_PROXY: pi's resolver reads the variables anyway.
            let e = ProxyEnv::from_lookup_as_node(|name| row.env.get(name).cloned());
            let target = url(&row.url);
            let api = crate::contract::ApiKind::BedrockConverseStream;
            match (e.refusal_for(api, &target), e.proxy_for_api(api, &target)) {
                (Some(_), _) => "unusable".to_owned(),
                (None, Some(proxy)) => proxy.to_string(),
                (None, None) => "direct".to_owned(),
            }
        });
    }

    /// Node 24's fetch reads the proxy variables only when told to (NODE_USE_ENV_PROXY=1, --use-env-proxy): in a
    /// check pod without either, a fetch-based Turn goes direct, and so does the probe; by hand they are honoured.
    #[test]
    fn fetch_reads_the_proxy_variables_only_when_node_is_told_to() {
        use crate::contract::ApiKind;
        let target = url("https://api.anthropic.com/v1");
        let with = |extra: &[(&str, &str)]| {
            let mut vars: Vec<(&str, &str)> = vec![("HTTPS_PROXY", "http://127.0.0.1:3128")];
            vars.extend_from_slice(extra);
            let vars: std::collections::HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            ProxyEnv::from_lookup_as_node(move |name| vars.get(name).cloned())
        };
        let proxied = |e: &ProxyEnv, api| e.proxy_for_api(api, &target).map(|u| u.to_string());
        let via = Some("http://127.0.0.1:3128/".to_owned());
        assert_eq!(proxied(&with(&[]), ApiKind::AnthropicMessages), None);
        assert_eq!(
            proxied(
                &with(&[("NODE_USE_ENV_PROXY", "0")]),
                ApiKind::AnthropicMessages
            ),
            None
        );
        assert_eq!(
            proxied(
                &with(&[("NODE_USE_ENV_PROXY", "1")]),
                ApiKind::AnthropicMessages
            ),
            via
        );
        for options in [
            "--use-env-proxy",
            "--max-old-space-size=256 --use_env_proxy",
        ] {
            assert_eq!(
                proxied(
                    &with(&[("NODE_OPTIONS", options)]),
                    ApiKind::AnthropicMessages
                ),
                via,
                "{options}"
            );
        }
        // Bedrock's client asks pi's resolver, whatever Node is told.
        assert_eq!(proxied(&with(&[]), ApiKind::BedrockConverseStream), via);
        // A variable Node does not read is no warning either.
        let bad = ProxyEnv::from_lookup_as_node(|name| {
            (name == "HTTPS_PROXY").then(|| "not a url".to_owned())
        });
        assert!(bad.unusable_for([ApiKind::AnthropicMessages]).is_empty());
        // A SOCKS proxy: a Turn can use it (undici 7 can), the probe cannot, and its line says so.
        let socks = ProxyEnv::from_lookup(|name| {
            (name == "HTTPS_PROXY").then(|| "socks5://127.0.0.1:1080".to_owned())
        });
        let u = &socks.unusable_for([ApiKind::AnthropicMessages])[0];
        assert!(u.socks, "{u:?}");
        assert!(
            u.warning_line()
                .contains("is a SOCKS proxy, which a Turn can use and this check cannot"),
            "{}",
            u.warning_line()
        );
        // By hand the variables are honoured, as a command line tool honours them.
        let by_hand = ProxyEnv::from_lookup(|name| {
            (name == "HTTPS_PROXY").then(|| "http://127.0.0.1:3128".to_owned())
        });
        assert_eq!(proxied(&by_hand, ApiKind::AnthropicMessages), via);
    }

    #[test]
    fn a_proxy_s_password_and_basic_token_are_held() {
        let e = env(&[("HTTPS_PROXY", "http://user:p%40ss-w0rd@127.0.0.1:3128")]);
        assert!(e.unusable().is_empty());
        let held = e.held_values();
        assert!(held.contains(&"p%40ss-w0rd".to_owned()), "{held:?}");
        assert!(held.contains(&"p@ss-w0rd".to_owned()), "{held:?}");
        // base64("user:p@ss-w0rd")
        assert!(
            held.contains(&"dXNlcjpwQHNzLXcwcmQ=".to_owned()),
            "{held:?}"
        );
        // A token as the user name, no password.
        let e = env(&[("HTTP_PROXY", "http://tok-0123456789@127.0.0.1:3128")]);
        assert!(e.held_values().contains(&"tok-0123456789".to_owned()));
        assert!(e.held_values().contains(&base64(b"tok-0123456789:")));
        assert!(
            env(&[("HTTP_PROXY", "http://127.0.0.1:3128")])
                .held_values()
                .is_empty()
        );
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }
}
