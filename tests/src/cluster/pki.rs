//! The cluster's certificates, made fresh for each run: one CA signs every serving and client certificate, as
//! kubeadm's does, and a key pair signs the ServiceAccount tokens. Each identity is a subject the API server's x509
//! authenticator reads (CN is the user, O the groups), so RBAC sees them as it sees a real cluster's.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// A client identity: the user name (CN) and its groups (O).
pub struct Identity<'a> {
    /// The file stem the certificate and key are written under.
    pub file: &'a str,
    /// The user name.
    pub user: &'a str,
    /// The groups.
    pub groups: &'a [&'a str],
}

/// The PKI of one run, written under a folder: `ca.crt`, `<name>.crt`/`<name>.key` and `sa.key`/`sa.pub`.
pub struct Pki {
    dir: PathBuf,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Pki {
    /// A fresh CA, written to `dir/ca.crt`, and the ServiceAccount signing key pair.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        Self::named(dir, "jr2-test-cluster-ca")
    }

    /// [`Pki::new`] with a CA of its own name: a second CA (`up/other_ca.rs`) whose name differs from the first's,
    /// so that a client trusting the first finds no issuer at all (`UnknownIssuer`), as a real CA rotation shows.
    pub fn named(dir: &Path, ca_name: &str) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let key = rcgen::KeyPair::generate().map_err(other)?;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(other)?;
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, ca_name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key).map_err(other)?;
        write_private(&dir.join("ca.crt"), cert.pem().as_bytes())?;
        let sa = rcgen::KeyPair::generate().map_err(other)?;
        write_private(&dir.join("sa.key"), sa.serialize_pem().as_bytes())?;
        write_private(&dir.join("sa.pub"), sa.public_key_pem().as_bytes())?;
        Ok(Self {
            dir: dir.to_owned(),
            issuer: rcgen::Issuer::new(params, key),
        })
    }

    /// The CA's certificate file.
    pub fn ca(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// A serving certificate for `names` (DNS names and IP addresses), as `dir/<file>.crt` and `.key`.
    pub fn server(
        &self,
        file: &str,
        cn: &str,
        names: &[String],
    ) -> std::io::Result<(PathBuf, PathBuf)> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(other)?;
        for name in names {
            params.subject_alt_names.push(match name.parse::<IpAddr>() {
                Ok(ip) => rcgen::SanType::IpAddress(ip),
                Err(_) => rcgen::SanType::DnsName(name.clone().try_into().map_err(other)?),
            });
        }
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(file, params)
    }

    /// A client certificate for `who`, as `dir/<file>.crt` and `.key`.
    pub fn client(&self, who: &Identity<'_>) -> std::io::Result<(PathBuf, PathBuf)> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(other)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, who.user);
        for group in who.groups {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(who.file, params)
    }

    fn sign(
        &self,
        file: &str,
        mut params: rcgen::CertificateParams,
    ) -> std::io::Result<(PathBuf, PathBuf)> {
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::DigitalSignature,
            rcgen::KeyUsagePurpose::KeyEncipherment,
        ];
        let key = rcgen::KeyPair::generate().map_err(other)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(other)?;
        let crt = self.dir.join(format!("{file}.crt"));
        let pem = self.dir.join(format!("{file}.key"));
        write_private(&crt, cert.pem().as_bytes())?;
        write_private(&pem, key.serialize_pem().as_bytes())?;
        Ok((crt, pem))
    }
}

/// Writes a file readable by its owner only (the keys; the certificates too, for simplicity).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

fn other(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}
