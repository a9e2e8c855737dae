//! The API server back with a serving certificate of another CA (issue 40, item 8): what a cluster whose CA was
//! rotated, or whose API server was replaced, shows a client that still trusts the old CA: every TLS handshake fails
//! (`UnknownIssuer`: the new CA has another name, so the client finds no issuer at all).
//!
//! `start-other-ca kube-apiserver` starts the stopped API server with a certificate of a second CA (made once per run,
//! under `pki/other-ca/`), everything else as before: the same client CA, so the cluster's client certificates are
//! still accepted. The next `stop` and `start` bring back the original certificate. While it serves the other CA's,
//! the controller manager, the scheduler and the kubelet cannot reach it either: keep it short, and wait for the node
//! to be Ready again after (a caller's job).

use std::path::Path;

use super::super::config::write_kubeconfig;
use super::super::pki::Pki;
use super::{Supervisor, api_server_names, io};

/// The only component this applies to.
const API_SERVER: &str = "kube-apiserver";

impl Supervisor {
    /// Starts the stopped API server with a serving certificate of another CA, and waits until it answers `/readyz`
    /// to a client that trusts that CA (the admin's client certificate, which the API server still accepts).
    pub(in super::super) fn start_api_server_other_ca(&mut self, name: &str) -> Result<(), String> {
        if name != API_SERVER {
            return Err(format!("start-other-ca {name}: only {API_SERVER}"));
        }
        let dir = self.dir.join("pki").join("other-ca");
        let pki = Pki::named(&dir, "jr2-test-other-ca").map_err(io)?;
        let (crt, key) = pki
            .server("apiserver", "kube-apiserver", &api_server_names())
            .map_err(io)?;
        let i = self.component(API_SERVER)?;
        let args = with_serving_cert(&self.components[i].args, &crt, &key);
        let admin = dir.join("admin.kubeconfig");
        let pki_dir = self.dir.join("pki");
        write_kubeconfig(
            &admin,
            &format!("https://{}:6443", super::NODE_IP),
            &pki.ca(),
            &pki_dir.join("admin.crt"),
            &pki_dir.join("admin.key"),
            "jr2-admin",
        )
        .map_err(io)?;
        self.start_component_with(API_SERVER, Some(&args))?;
        self.wait_api_ready(&admin)
    }
}

/// The API server's arguments with its serving certificate and key replaced.
fn with_serving_cert(args: &[String], crt: &Path, key: &Path) -> Vec<String> {
    args.iter()
        .map(|a| {
            if a.starts_with("--tls-cert-file=") {
                format!("--tls-cert-file={}", crt.display())
            } else if a.starts_with("--tls-private-key-file=") {
                format!("--tls-private-key-file={}", key.display())
            } else {
                a.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_serving_certificate_changes() {
        let args: Vec<String> = [
            "--tls-cert-file=/a/apiserver.crt",
            "--client-ca-file=/a/ca.crt",
            "--tls-private-key-file=/a/apiserver.key",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            with_serving_cert(&args, Path::new("/b/x.crt"), Path::new("/b/x.key")),
            [
                "--tls-cert-file=/b/x.crt",
                "--client-ca-file=/a/ca.crt",
                "--tls-private-key-file=/b/x.key"
            ]
        );
    }
}
