//! The driver's TLS to the API server (`jr2_preflight::cluster`), against a loopback HTTPS server with a throwaway
//! CA: the kubeconfig's `certificate-authority(-data)` is what is trusted, `tls-server-name` names the certificate
//! to expect, `insecure-skip-tls-verify` takes any; a CA neither in the kubeconfig nor among Mozilla's roots is
//! refused (no system store is consulted, on any platform).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine;
use http_body_util::Full;
use hyper::body::Bytes;
use jr2_testkit::tls::TestCa;

/// Serves `GET /version` over TLS with `ca`'s leaf on 127.0.0.1, until the test ends.
async fn serve(ca: &TestCa) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("an address");
    let acceptor = ca.acceptor();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(|_req| async {
                    let body = r#"{"major":"1","minor":"35","gitVersion":"v1.35.0","gitCommit":"0","gitTreeState":"clean","buildDate":"2026-01-01T00:00:00Z","goVersion":"go1.25","compiler":"gc","platform":"linux/amd64"}"#;
                    Ok::<_, std::convert::Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body)))
                            .expect("a response"),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    addr
}

/// A kubeconfig for `server`, with `cluster` lines (indented under `cluster:`) added.
fn kubeconfig(dir: &Path, server: &str, cluster: &[String]) -> PathBuf {
    let extra: String = cluster.iter().map(|l| format!("    {l}\n")).collect();
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n{extra}contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: not-a-secret\n"
    );
    std::fs::create_dir_all(dir).expect("a temp dir");
    let path = dir.join(format!("kubeconfig-{}", cluster.len()));
    std::fs::write(&path, text).expect("write the kubeconfig");
    path
}

fn temp_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("jr2-cluster-tls-{}-{name}", std::process::id()))
}

/// What `GET /version` through the driver's client gave: the git version, or the error (its debug form, which
/// names rustls's reason).
async fn version(kubeconfig: &Path) -> Result<String, String> {
    let client = jr2_preflight::cluster::client(Some(kubeconfig), None)
        .await
        .map_err(|e| format!("{e:?}"))?;
    client
        .apiserver_version()
        .await
        .map(|v| v.git_version)
        .map_err(|e| format!("{e:?}"))
}

#[tokio::test]
async fn the_kubeconfigs_ca_is_trusted_and_nothing_else() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let addr = serve(&ca).await;
    let server = format!("https://{addr}");
    let dir = temp_dir("ca");
    let data = base64::engine::general_purpose::STANDARD.encode(&ca.ca_pem);

    let with_data = kubeconfig(
        &dir,
        &server,
        &[format!("certificate-authority-data: {data}")],
    );
    assert_eq!(version(&with_data).await.as_deref(), Ok("v1.35.0"));

    let dir_file = temp_dir("ca-file");
    let with_file = kubeconfig(
        &dir_file,
        &server,
        &[format!("certificate-authority: {}", ca.ca_file.display())],
    );
    assert_eq!(version(&with_file).await.as_deref(), Ok("v1.35.0"));

    // Without it, the server's CA is among neither the kubeconfig's nor Mozilla's roots.
    let dir_none = temp_dir("none");
    let without = kubeconfig(&dir_none, &server, &[]);
    let e = version(&without).await.expect_err("an unknown CA");
    assert!(e.contains("UnknownIssuer"), "{e}");

    // Another CA in the kubeconfig: refused as well.
    let other = TestCa::new(&["127.0.0.1"]);
    let dir_other = temp_dir("other");
    let other_data = base64::engine::general_purpose::STANDARD.encode(&other.ca_pem);
    let wrong = kubeconfig(
        &dir_other,
        &server,
        &[format!("certificate-authority-data: {other_data}")],
    );
    let e = version(&wrong).await.expect_err("another CA");
    assert!(
        e.contains("UnknownIssuer") || e.contains("BadSignature"),
        "{e}"
    );
}

#[tokio::test]
async fn tls_server_name_names_the_certificate_to_expect() {
    let ca = TestCa::new(&["kube.test"]);
    let addr = serve(&ca).await;
    let server = format!("https://{addr}");
    let data = base64::engine::general_purpose::STANDARD.encode(&ca.ca_pem);
    let ca_line = format!("certificate-authority-data: {data}");

    let dir = temp_dir("sni");
    let named = kubeconfig(
        &dir,
        &server,
        &[ca_line.clone(), "tls-server-name: kube.test".into()],
    );
    assert_eq!(version(&named).await.as_deref(), Ok("v1.35.0"));

    let dir_unnamed = temp_dir("no-sni");
    let unnamed = kubeconfig(&dir_unnamed, &server, &[ca_line]);
    let e = version(&unnamed)
        .await
        .expect_err("a certificate for kube.test, not 127.0.0.1");
    assert!(e.contains("NotValidForName"), "{e}");
}

#[tokio::test]
async fn insecure_skip_tls_verify_takes_any_certificate() {
    let ca = TestCa::new(&["127.0.0.1"]);
    let addr = serve(&ca).await;
    let dir = temp_dir("insecure");
    let insecure = kubeconfig(
        &dir,
        &format!("https://{addr}"),
        &["insecure-skip-tls-verify: true".into()],
    );
    assert_eq!(version(&insecure).await.as_deref(), Ok("v1.35.0"));
}
