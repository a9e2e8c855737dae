//! A slow admission webhook on the real API server (issue 40, item 1): a MutatingWebhookConfiguration
//! (`failurePolicy: Ignore`, `timeoutSeconds: 30`) whose HTTPS server answers each pod's review after a delay, as
//! image-verification webhooks do. The server is a few lines of Python (`http.server` + `ssl`) run inside the
//! cluster's network namespace on the node's address, with a certificate for that address signed by a CA of the
//! test's own (`jr2_testkit::cluster::pki`), whose PEM is the configuration's `caBundle`. Before issue 40 the driver
//! cut each create at 15 s and said the cluster refused the check pod.

use std::io::BufRead;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::json;

use jr2_testkit::cluster::pki::Pki;

use crate::harness::*;

/// The webhook server: answers an `AdmissionReview` v1 with `allowed: true` after `delay` seconds (at once for a pod
/// named `jr2-webhook-ready`, the test's readiness check); prints `listening on <port>` once, then `review <name>`
/// and `answered <name>` for each review. It ends when its stdin closes.
const SERVER: &str = r#"
import http.server, json, os, ssl, sys, threading, time
host, cert, key, delay = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def stop_when_stdin_closes():
    sys.stdin.read()
    os._exit(0)
threading.Thread(target=stop_when_stdin_closes, daemon=True).start()
class Review(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
        request = review["request"]
        meta = request.get("object", {}).get("metadata", {})
        name = meta.get("name") or meta.get("generateName") or "?"
        print("review", name, flush=True)
        if name != "jr2-webhook-ready":
            time.sleep(delay)
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": {"uid": request["uid"], "allowed": True}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("answered", name, flush=True)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer((host, 0), Review)
server.daemon_threads = True
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("listening on", server.server_address[1], flush=True)
server.serve_forever()
"#;

/// A webhook server in the cluster's namespace and its MutatingWebhookConfiguration; dropped, the server is stopped
/// and the configuration deleted, whatever the test did.
struct SlowWebhook {
    name: String,
    server: Child,
    _stdin: ChildStdin,
    /// The server's lines after the first.
    log: Arc<Mutex<Vec<String>>>,
}

impl SlowWebhook {
    /// A webhook `name` for the pods created in namespace `ns`, whose server answers after `delay`; enforced (the
    /// API server calls it) when this returns.
    fn start(name: &str, ns: &str, delay: Duration) -> Self {
        let env = env();
        let cluster = &env.cluster;
        let node_ip = cluster.info().node_ip.clone();
        let dir = std::env::temp_dir().join(format!("jr2-webhook-{}-{name}", std::process::id()));
        let pki = Pki::new(&dir).expect("the webhook's CA");
        let (cert, key) = pki
            .server("webhook", name, std::slice::from_ref(&node_ip))
            .expect("the webhook's certificate");
        let ca_pem = std::fs::read(pki.ca()).expect("the webhook's CA certificate");
        let mut server = cluster
            .command("python3")
            .arg("-c")
            .arg(SERVER)
            .arg(&node_ip)
            .arg(&cert)
            .arg(&key)
            .arg(delay.as_secs().to_string())
            // It ends when its stdin closes: when this guard drops, or when this process exits.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the webhook server in the cluster's namespace");
        let stdin = server.stdin.take().unwrap();
        let mut lines = std::io::BufReader::new(server.stdout.take().unwrap()).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let webhook = Self {
            name: name.to_owned(),
            server,
            _stdin: stdin,
            log: Arc::clone(&log),
        };
        let port = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the webhook server said {first:?}"))
            .to_owned();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                log.lock().unwrap().push(line);
            }
        });
        let config = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": format!("{name}.jr2.test"),
                "clientConfig": {
                    "url": format!("https://{node_ip}:{port}/"),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
                },
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}],
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                "failurePolicy": "Ignore",
                "timeoutSeconds": 30,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }]
        });
        cluster.kubectl_stdin(&["apply", "-f", "-"], &config.to_string());
        // Enforced once the API server calls it: a server-side dry run of a pod the server answers at once.
        let ready = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "jr2-webhook-ready", "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": CUSTODIAN_IMAGE}]}});
        cluster.wait_for(
            "the API server to call the webhook",
            Duration::from_secs(60),
            || {
                cluster.kubectl_stdin(
                    &["create", "--dry-run=server", "-f", "-"],
                    &ready.to_string(),
                );
                webhook.reviewed("jr2-webhook-ready")
            },
        );
        webhook
    }

    /// Whether the server has been asked to review a pod whose name starts with `prefix`.
    fn reviewed(&self, prefix: &str) -> bool {
        let want = format!("review {prefix}");
        self.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with(&want))
    }

    /// Whether the server has answered a review of a pod whose name starts with `prefix`.
    fn answered(&self, prefix: &str) -> bool {
        let want = format!("answered {prefix}");
        self.log
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with(&want))
    }
}

impl Drop for SlowWebhook {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let cluster = &env().cluster;
        // Whatever its outcome: a panic here would abort a test already failing.
        let _ = cluster.kubectl_output(
            &cluster.info().admin_kubeconfig,
            &[
                "delete",
                "mutatingwebhookconfiguration",
                &self.name,
                "--ignore-not-found",
            ],
            None,
        );
    }
}

/// The line that says the create waits on admission (a run of the default deadline, so the create's 40 s).
const WAITING: &str = "provider: the API server has not answered the create of the check pod after 10 s — an admission webhook may be slow; waiting up to 40 s";

/// Item 1: a webhook that answers after 25 s (of its 30 s) is waited for, as a Harness pod's create waits: the line
/// says the create waits on admission, the check passes, no pod is left. Before: each create cut at 15 s, three
/// tries, then `the cluster refused the check pod: Timeout: ...`.
#[test]
fn a_slow_webhook_is_waited_for() {
    let _g = shared();
    let ns = namespace("rc-webhook-slow", &[]);
    let webhook = SlowWebhook::start("jr2-rc-webhook-slow", &ns, Duration::from_secs(25));
    let started = Instant::now();
    let run = run_plan(&plan(&ns, &[("sandbox", harness_spec(), &["ok"])]), &[]);
    let took = started.elapsed();
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_passes(&run, &["ok"]);
    assert_eq!(
        run.lines().iter().filter(|l| **l == WAITING).count(),
        1,
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("refused"), "{}", run.stderr);
    // The check pod's create went through the webhook, which held it 25 s.
    assert!(
        webhook.answered("jr2-preflight-"),
        "{:?}",
        webhook.log.lock().unwrap()
    );
    assert!(took >= Duration::from_secs(25), "{took:?}");
    drop(webhook);
    assert_no_pod_left(&ns);
}

/// Item 1: a webhook slower than the run's deadline leaves the create unfinished: said as a create that timed out
/// (`PROVIDER_POD_CREATE_TIMEOUT`), not as a refusal about quota and room; no pod is left.
#[test]
fn a_webhook_slower_than_the_run_is_a_create_timeout() {
    let _g = shared();
    let ns = namespace("rc-webhook-timeout", &[]);
    let webhook = SlowWebhook::start("jr2-rc-webhook-timeout", &ns, Duration::from_secs(25));
    let started = Instant::now();
    let run = run_plan(
        &plan(&ns, &[("sandbox", harness_spec(), &["ok"])]),
        &["--timeout", "12s"],
    );
    let took = started.elapsed();
    assert_eq!(run.code(), Some(1), "{}", run.stderr);
    assert!(
        webhook.reviewed("jr2-preflight-"),
        "{:?}",
        webhook.log.lock().unwrap()
    );
    let error = run
        .lines()
        .into_iter()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{}", run.stderr))
        .to_owned();
    assert!(
        error.starts_with(
            "error: provider preflight: the API server did not finish the create of the check pod in "
        ) && error.contains(" s — its admission (a webhook) was too slow: "),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("refused"), "{}", run.stderr);
    // Cut at 10 s by the run's deadline, the create has nothing more to wait: no `waiting up to 10 s` line.
    assert!(
        !run.lines()
            .iter()
            .any(|l| l.starts_with("provider: the API server has not answered")),
        "{}",
        run.stderr
    );
    let v = run.verdict();
    assert_eq!(v["pods"][0]["code"], "PROVIDER_POD_CREATE_TIMEOUT", "{v}");
    assert!(
        v["pods"][0]["nextAction"]
            .as_str()
            .is_some_and(|a| a.contains("webhook") && !a.contains("room")),
        "{v}"
    );
    assert_eq!(v["models"][0]["outcome"], "not_checked", "{v}");
    // Ended by its deadline, not by the webhook's answer.
    assert!(took < Duration::from_secs(25), "{took:?}\n{}", run.stderr);
    drop(webhook);
    assert_no_pod_left(&ns);
}
