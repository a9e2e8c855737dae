//! Trust: the roots every connection of a check trusts. Mozilla's roots compiled in (`webpki-root-certs`: a `FROM
//! scratch` image has no system store), plus the CA files the Harness env names (`NODE_EXTRA_CA_CERTS`,
//! `SSL_CERT_FILE`, as Node 24 reads them) and `--ca-bundle`. A CA file must be a regular file of at most
//! [`MAX_CA_FILE_BYTES`]: `/dev/zero` or a FIFO is refused before it is opened, never read until memory runs out or
//! waited on forever.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use thiserror::Error;

/// The largest CA file the probe reads. Mozilla's whole bundle is about 220 KB; a corporate one with every
/// intermediate is a few MB.
pub const MAX_CA_FILE_BYTES: u64 = 8 * 1024 * 1024;

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
    pub(super) roots: Option<Arc<RootCertStore>>,
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

/// Mozilla's roots, as compiled in: what the probe trusts for a provider, and the driver for an API server whose
/// kubeconfig names no CA.
pub fn bundled_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(webpki_root_certs::TLS_SERVER_ROOT_CERTS.iter().cloned());
    roots
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use std::time::Duration;

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
}
