//! The API server lost during the run (issue 40, item 8): a watch of the check pods that fails for want of an answer
//! (the connection refused or broken, a TLS failure such as a server that came back with a certificate of another
//! CA) is said at once, as a warning, and a run that ends before the API server answers again says so, rather than
//! the last pending reason it had seen before it lost sight of the pod.

use kube::runtime::watcher;

/// Why the watch failed, in plain words, when a list or a watch could not be started for want of an answer (a
/// connection, TLS); `None` when the API server answered (a status: a 410, a 403, which the watcher and the run
/// handle), and for a stream that broke off once started (a load balancer's idle cut), which the watcher starts
/// again: only if that fails too is the API server lost.
pub(super) fn cause(e: &watcher::Error) -> Option<String> {
    let e = match e {
        watcher::Error::InitialListFailed(e) | watcher::Error::WatchStartFailed(e) => e,
        watcher::Error::WatchFailed(_)
        | watcher::Error::WatchError(_)
        | watcher::Error::NoResourceVersion => return None,
    };
    if matches!(e, kube::Error::Api(_)) {
        return None;
    }
    Some(words(e))
}

/// A request that got no answer, in plain words: its innermost cause, said as a TLS failure when it is one (the
/// cleanup's delete of a pod left behind says the same as the watch: `TLS failed: invalid peer certificate:
/// UnknownIssuer`, not `ServiceError: client error (Connect)`).
pub(super) fn words(e: &kube::Error) -> String {
    let why = super::create::plain_cause(e);
    if tls(e) {
        format!("TLS failed: {why}")
    } else {
        why
    }
}

/// A TLS failure somewhere in the error's chain.
fn tls(e: &kube::Error) -> bool {
    tls_in(e)
}

/// hyper-rustls hands rustls's error up inside `io::Error`s (one in another), whose `source` skips it: each is
/// opened.
fn tls_in(e: &(dyn std::error::Error + 'static)) -> bool {
    if e.is::<rustls::Error>() {
        return true;
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(std::io::Error::get_ref)
        && tls_in(inner)
    {
        return true;
    }
    e.source().is_some_and(tls_in)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An answer of the API server is no loss, nor is a started stream that broke off (the watcher starts it
    /// again); a list or watch that could not be started for want of a connection is, in its innermost words.
    #[tokio::test]
    async fn an_answer_is_no_loss_and_a_refused_connection_is() {
        let status = kube::core::Status::failure("gone", "Expired").with_code(410);
        assert_eq!(
            cause(&watcher::Error::InitialListFailed(kube::Error::Api(
                status.boxed()
            ))),
            None
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let client = crate::cluster::client_of(config).unwrap();
        let broken = client.apiserver_version().await.unwrap_err();
        assert_eq!(cause(&watcher::Error::WatchFailed(broken)), None);
        let e = client.apiserver_version().await.unwrap_err();
        let why = cause(&watcher::Error::InitialListFailed(e)).unwrap();
        assert!(why.starts_with("Connection refused"), "{why}");
    }

    /// An API server back with a certificate of another CA (the kubeconfig's CA no longer signs it) is a TLS
    /// failure, said as one.
    #[tokio::test]
    async fn a_certificate_of_another_ca_is_a_tls_failure() {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let served = jr2_testkit::tls::TestCa::new(&["localhost"]);
        let trusted = jr2_testkit::tls::TestCa::new(&["localhost"]);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let acceptor = served.acceptor();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let _ = acceptor.accept(tcp).await;
                });
            }
        });
        let mut config = kube::Config::new(format!("https://localhost:{port}").parse().unwrap());
        let ca = CertificateDer::from_pem_slice(trusted.ca_pem.as_bytes()).unwrap();
        config.root_cert = Some(vec![ca.to_vec()]);
        let client = crate::cluster::client_of(config).unwrap();
        let e = client.apiserver_version().await.unwrap_err();
        assert_eq!(
            words(&e),
            cause(&watcher::Error::InitialListFailed(
                client.apiserver_version().await.unwrap_err()
            ))
            .unwrap()
        );
        let why = cause(&watcher::Error::WatchStartFailed(e)).unwrap();
        // (The two throwaway CAs share their name: rustls finds the issuer and refuses its signature.)
        assert!(
            why == "TLS failed: invalid peer certificate: UnknownIssuer"
                || why == "TLS failed: invalid peer certificate: BadSignature",
            "{why}"
        );
    }
}
