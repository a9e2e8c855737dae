//! A throwaway certificate authority for the TLS tests: a CA, a server certificate it signed for the names a test
//! asks for, the CA's PEM in a file (as an operator's `--ca-bundle` names one) and an acceptor that presents the
//! leaf. [`crate::provider::FakeProvider`] serves TLS with it.

/// A throwaway CA and a server certificate it signed. The CA's PEM is written to a file, as an operator's
/// `--ca-bundle` or a pod's `NODE_EXTRA_CA_CERTS` would name it.
pub struct TestCa {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// A file holding `ca_pem`.
    pub ca_file: std::path::PathBuf,
    cert_der: Vec<u8>,
    key_der: Vec<u8>,
}

impl TestCa {
    /// A CA, and a leaf for `names` signed by it.
    pub fn new(names: &[&str]) -> Self {
        let ca_key = rcgen::KeyPair::generate().expect("a CA key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "jr2 test CA");
        ca_params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign the CA");
        let issuer = rcgen::Issuer::new(ca_params, ca_key);
        let leaf_key = rcgen::KeyPair::generate().expect("a leaf key");
        let leaf_params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("leaf params");
        let leaf = leaf_params
            .signed_by(&leaf_key, &issuer)
            .expect("sign the leaf");
        let ca_pem = ca_cert.pem();
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ca_file =
            std::env::temp_dir().join(format!("jr2-test-ca-{}-{n}.pem", std::process::id()));
        std::fs::write(&ca_file, &ca_pem).expect("write the CA file");
        Self {
            ca_pem,
            ca_file,
            cert_der: leaf.der().to_vec(),
            key_der: leaf_key.serialize_der(),
        }
    }

    /// A TLS acceptor that presents the leaf.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        use tokio_rustls::rustls;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let cert = rustls::pki_types::CertificateDer::from(self.cert_der.clone());
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(self.key_der.clone().into());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .expect("a server certificate");
        tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config))
    }
}
