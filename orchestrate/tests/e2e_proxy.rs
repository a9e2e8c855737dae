//! The driver behind a proxy, as kubectl goes (issue 27, item 4): the kubeconfig cluster's `proxy-url`, else
//! `HTTPS_PROXY` for an https server (`HTTP_PROXY` for an http one) unless `NO_PROXY` or loopback says direct.
//! The real `jr2-preflight` against the fake cluster, through `jr2_testkit::proxy::ConnectProxy` on loopback: the
//! kubeconfig names `kube.test`, which does not resolve, so only the proxy can have reached the API server.
//! The choice itself (every `NO_PROXY` form) is unit-tested in `src/kube_proxy.rs`.

mod fake_cluster;

use base64::Engine;

use fake_cluster::*;
use jr2_testkit::kube::Scenario;
use jr2_testkit::proxy::ConnectProxy;
use jr2_testkit::tls::TestCa;

fn kubeconfig(server: &str, extra_cluster: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\n{extra_cluster}contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: fake-token-not-a-secret\npreferences: {{}}\n"
    )
}

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `HTTPS_PROXY` set, an https server by name: every connection is a `CONNECT kube.test:443` through the proxy, TLS
/// end to end (the proxy's far end presents the test CA's leaf for `kube.test`). Before: `cannot reach the cluster:
/// kubeconfig: proxy-url is not supported`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_proxy_tunnels_to_an_https_server() {
    let s = Setup::new(Scenario::AllOk).await;
    let ca = TestCa::new(&["kube.test"]);
    let proxy = ConnectProxy::with_tls(s.kube.addr(), &ca).await;
    let ca_data = base64::engine::general_purpose::STANDARD.encode(&ca.ca_pem);
    std::fs::write(
        s.dir.join("kubeconfig"),
        kubeconfig(
            "https://kube.test",
            &format!("    certificate-authority-data: {ca_data}\n"),
        ),
    )
    .unwrap();
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s
        .run_with(
            s.args(&plan, &[]),
            env(&[
                ("HTTPS_PROXY", &proxy.url()),
                ("NO_PROXY", "127.0.0.1,localhost"),
            ]),
            None,
        )
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run.lines(), &["ok"]);
    // The troubleshooting envelope (issue 27, item 15): the context, the server as the kubeconfig names it, and the
    // Kubernetes version the API server gave through the proxy.
    let v = run.verdict();
    assert_eq!(v["kubeContext"], "fake");
    assert_eq!(
        v["cluster"],
        serde_json::json!({"server": "kube.test", "kubernetesVersion": "v1.35.0"})
    );
    assert_eq!(v["release"]["driver"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["release"]["probe"], env!("CARGO_PKG_VERSION"));
    let seen = proxy.requests();
    assert!(!seen.is_empty(), "the proxy saw nothing: {}", run.stderr);
    for r in &seen {
        assert_eq!(r.line, "CONNECT kube.test:443 HTTP/1.1", "{seen:?}");
        assert_eq!(r.auth, None);
    }
    s.assert_cleaned_up();
}

/// The case: `HTTPS_PROXY` set, `NO_PROXY=127.0.0.1`, a server on 127.0.0.1 and no `proxy-url`: direct,
/// and the run goes as without a proxy. Loopback is direct even when `NO_PROXY` does not name it (Go's httpproxy
/// never proxies localhost or a loopback IP).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_proxy_leaves_loopback_and_no_proxy_direct() {
    let s = Setup::new(Scenario::AllOk).await;
    let proxy = ConnectProxy::start(s.kube.addr()).await;
    let plan = s.plan(&[("sandbox", &["ok"])]);
    for vars in [
        vec![
            ("HTTPS_PROXY", proxy.url()),
            ("NO_PROXY", "127.0.0.1".into()),
        ],
        vec![
            ("https_proxy", proxy.url()),
            ("HTTP_PROXY", "http://127.0.0.1:9".into()),
        ],
    ] {
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let run = s.run_with(s.args(&plan, &[]), env(&vars), None).await;
        assert_eq!(run.code(), Some(0), "{vars:?}: {}", run.stderr);
        assert_passes(&run.lines(), &["ok"]);
    }
    assert_eq!(proxy.requests(), vec![]);
    s.assert_cleaned_up();
}

/// The kubeconfig's `proxy-url` holds for every server, loopback included, and wins over the environment; an http
/// server gets absolute-form requests, with the URL's credentials (percent-decoded) as `Proxy-Authorization`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_proxy_url_forwards_to_an_http_server() {
    let s = Setup::new(Scenario::AllOk).await;
    let proxy = ConnectProxy::start(s.kube.addr()).await;
    let with_creds = proxy.url().replace("http://", "http://jr2:p%40ss@");
    std::fs::write(
        s.dir.join("kubeconfig"),
        kubeconfig(
            &s.kube.server_url(),
            &format!("    proxy-url: {with_creds}\n"),
        ),
    )
    .unwrap();
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s
        .run_with(
            s.args(&plan, &[]),
            env(&[("HTTP_PROXY", "http://127.0.0.1:9"), ("NO_PROXY", "*")]),
            None,
        )
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let seen = proxy.requests();
    assert!(!seen.is_empty(), "the proxy saw nothing: {}", run.stderr);
    let prefix = format!("{}/", s.kube.server_url());
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("jr2:p@ss")
    );
    for r in &seen {
        let target = r.line.split(' ').nth(1).unwrap_or_default();
        assert!(target.starts_with(&prefix), "{seen:?}");
        assert_eq!(r.auth.as_deref(), Some(basic.as_str()), "{seen:?}");
    }
    s.assert_cleaned_up();
}

/// A proxy the driver cannot use is named with where it came from, and nothing is contacted behind the user's back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_proxy_is_named() {
    let s = Setup::new(Scenario::AllOk).await;
    std::fs::write(
        s.dir.join("kubeconfig"),
        kubeconfig("https://kube.test", ""),
    )
    .unwrap();
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s
        .run_with(
            s.args(&plan, &[]),
            env(&[("HTTPS_PROXY", "socks5://127.0.0.1:9")]),
            None,
        )
        .await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("HTTPS_PROXY: a socks5 proxy is not supported (an http proxy is)"),
        "{}",
        run.stderr
    );
    assert!(s.kube.requests().is_empty());
}

/// A kubeconfig `proxy-url` that refuses is named as the proxy, not as the API server refusing (issue 40, item 14).
/// Before: `cannot reach the cluster: Connection refused (os error 111)`, as if the API server were down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_proxy_is_named_as_the_proxy() {
    let s = Setup::new(Scenario::AllOk).await;
    // A loopback port nothing listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        s.dir.join("kubeconfig"),
        kubeconfig(
            &s.kube.server_url(),
            &format!("    proxy-url: http://jr2:secret@127.0.0.1:{port}\n"),
        ),
    )
    .unwrap();
    let plan = s.plan(&[("sandbox", &["ok"])]);
    let run = s.run_with(s.args(&plan, &[]), env(&[]), None).await;
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    let line = format!(
        "error: provider preflight: cannot reach the cluster: its proxy 127.0.0.1:{port} (kubeconfig proxy-url) cannot be reached: Connection refused (os error 111)"
    );
    assert!(
        run.stderr.lines().any(|l| l == line),
        "{line}\n{}",
        run.stderr
    );
    assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    assert!(s.kube.requests().is_empty());
}
