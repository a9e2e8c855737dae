//! Scenario tests of the exact API conversation of a run: the real `kube::Client` over a `tower_test` mock, and a
//! scripted API server that asserts every request (method, path, query, body) and answers as a 1.35 API server does
//! (the controller-rs `ApiServerVerifier` pattern: one `Scenario` per conversation, each a readable script).
//!
//! The driver talks on several streams at once (the pod watch, the Events watch, the probe's log), so the verifier
//! takes requests by kind: one that arrives before the script asks for it waits in a backlog. What the script never
//! asks for may only be a GET (a list or watch the driver opened, then dropped when it was done); an unexpected POST
//! or DELETE fails the test, and so does an expected request that never comes.
//!
//! Only what exercises the wiring is here: the requests and their order, creates refused or retried, the watches
//! (two pods, a closed stream, a 403, a DELETED event), the logs (a stream that breaks off, a read answered 500, the
//! Custodian's `previous` log), the deletes (404, `--keep-pod`, cancel, drop) and the sweep. What a pod's phase does
//! on what arrives (pending lines, image pulls, missing Secrets, the Custodian's volume, OOMs, the deadline, a lost
//! log) is a unit test of its step, in `src/run/step.rs` (issue 26).

use std::collections::BTreeMap;
use std::io;
use std::time::{Duration, SystemTime};

use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::timeout;
use tower_test::mock::{self, SendResponse};

use jr2_preflight::plan::{PLAN_SCHEMA, RawPlan, ValidPlan};
use jr2_preflight::pod;
use jr2_preflight::run::{
    Cancel, Cleanup, FailureKind, PodOutcome, PodToRun, RunConfig, RunResult, RunUpdate, run_pods,
    sweep_stale,
};
use jr2_probe::contract::ProbeEvent;
use jr2_probe::contract::outcome::Outcome;
use jr2_probe::contract::summary::Summary;
use jr2_probe::contract::verdict::{ModelResult, Route};
use jr2_testkit::check_run::{
    MODELS, c_running, c_terminated, c_waiting, ev_result, ev_start, ev_started, ev_summary,
    model_result,
};

type Body = UnsyncBoxBody<Bytes, io::Error>;
type Handle = mock::Handle<Request<kube::client::Body>, Response<Body>>;
type Responder = SendResponse<Response<Body>>;

const NS: &str = "demo";
const POD: &str = "jr2-preflight-demo-harness-run0001";
const POD_B: &str = "jr2-preflight-demo-sandbox-run0001";
const RUN: &str = "run0001";
const PROBE_IMAGE: &str = "ghcr.io/jr2/probe:0.1.0";

// ---------------------------------------------------------------------------------------------------------------
// Fixtures: the check pod as `pod::check_pod` builds it, its states as a 1.35 kubelet writes them, the probe's lines
// (written through the probe's own `ProbeEvent`).

/// When the run starts: 2026-12-04T18:36:47Z.
fn now() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_409_407)
}

/// The plan the check pods come from: the Instance Harness and a Sandbox placement, each with its Custodian, each
/// checking the three models.
fn plan() -> ValidPlan {
    let placement = |name: &str| {
        json!({"name": name, "custodianContainer": "custodian", "podSpec": {
            "containers": [
                {"name": "harness", "image": "ghcr.io/jr2/harness:0.1.0",
                 "envFrom": [{"secretRef": {"name": "harness-env"}}],
                 "env": [
                     {"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"},
                     {"name": "EXTRA_TOKEN", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "token"}}}
                 ]},
                {"name": "custodian", "image": "envoyproxy/envoy:distroless-v1.39.1",
                 "resources": {"limits": {"memory": "64Mi"}},
                 "volumeMounts": [{"name": "custodian-values", "mountPath": "/etc/jr2/custodian/values"}]}
            ],
            "volumes": [{"name": "custodian-values", "projected": {"sources": [
                {"secret": {"name": "anthropic", "items": [{"key": "api-key", "path": "ANTHROPIC_API_KEY"}]}}
            ]}}]
        }})
    };
    let models = |on: &str| {
        [
            json!({"model": MODELS[0], "placement": on, "source": "catalog", "keyEnv": "ANTHROPIC_API_KEY", "keyHeld": true}),
            json!({"model": MODELS[1], "placement": on, "source": "custom", "baseUrl": "http://vllm.lan.example:8000/v1", "keyHeld": false}),
            json!({"model": MODELS[2], "placement": on, "source": "catalog", "keyEnv": "GEMINI_API_KEY", "keyHeld": true}),
        ]
    };
    RawPlan::from_value(json!({
        "schema": PLAN_SCHEMA, "namespace": NS, "instance": "demo", "probeImage": PROBE_IMAGE,
        "placements": [placement("harness"), placement("sandbox")],
        "models": models("harness").into_iter().chain(models("sandbox")).collect::<Vec<_>>()
    }))
    .and_then(RawPlan::validate)
    .expect("a valid plan")
}

/// The check pod of run `run` on `placement`, as `pod::check_pod` builds it.
fn check_pod_of(placement: &str, run: &str) -> Pod {
    let plan = plan();
    pod::check_pod(&plan, plan.placement(placement).unwrap(), run, now())
}

/// A check pod of this run ([`POD`] or [`POD_B`]), with its models, as the driver hands it to `run_pods`.
fn check_pod(name: &str) -> PodToRun {
    let plan = plan();
    let check = pod::check_pods(&plan, RUN, now())
        .into_iter()
        .find(|c| c.pod.metadata.name.as_deref() == Some(name))
        .expect("a check pod of the plan");
    PodToRun::of(&check, &plan)
}

/// Where the pod is: `None` not scheduled yet; otherwise scheduled on `worker-2`, with these container statuses.
enum Stage {
    Created,
    Scheduled {
        phase: &'static str,
        custodian: Value,
        probe: Value,
    },
}

fn scheduled(custodian: Value, probe: Value) -> Stage {
    Stage::Scheduled {
        phase: "Pending",
        custodian,
        probe,
    }
}

fn running() -> Stage {
    Stage::Scheduled {
        phase: "Running",
        custodian: c_running("custodian"),
        probe: c_running("probe"),
    }
}

/// A model name a hostile probe claims: an escape, a newline and a forged `error:` line.
const HOSTILE_MODEL: &str = "m\u{1b}[31m\nerror: forged model";
/// A key the driver holds (its redactor knows it), echoed by the hostile probe.
const HELD_KEY: &str = "sk-ant-api03-HELDHELDHELDHELD";

/// An `<error>` as a hostile probe writes it: ESC, OSC 52 (write the clipboard), U+202E, invisible characters, a
/// forged second `error:` line, a held key, and 1000 characters.
fn hostile_error() -> String {
    format!(
        "HTTP 500: \u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}\u{202e}dlrow\u{200b} {HELD_KEY}\nerror: provider preflight failed for model \"forged\"\r\n{}",
        "x".repeat(1000)
    )
}

/// A result with every string hostile: the model, id, base URL, host and route name another model and host.
fn hostile_result(i: usize) -> ModelResult {
    let mut r = model_result(i, Outcome::Http);
    r.model = HOSTILE_MODEL.to_owned();
    r.id = "id\u{1b}[0m".to_owned();
    r.base_url = "http://user:pw@evil.example\u{1b}[31m/v1?key=x".to_owned();
    r.host = "evil.example\u{202e}".to_owned();
    r.route = Route::Catalog {
        provider: "evil\u{1b}".to_owned(),
        via_custodian: true,
        key_env: "FORGED\nerror: x".to_owned(),
        key_held: true,
        gateway: false,
    };
    r.error = Some(hostile_error());
    r.next_action = "\u{1b}]52;c;ZXZpbA==\u{7}run this".to_owned();
    r.stop_reason = Some("\u{1b}[31mstop".to_owned());
    r.tool_name = Some("\u{1b}[31mtool".to_owned());
    r.answer = Some(format!("{HELD_KEY}\u{1b}[31m{}", "a".repeat(1000)));
    r.http_status = Some(500);
    r
}

/// No control, bidi or invisible character, no line break, at most `max` characters, no held key.
fn assert_clean(text: &str, max: usize) {
    assert!(
        !text.chars().any(jr2_probe::sanitize::needs_escape),
        "{text:?}"
    );
    assert!(!text.contains(HELD_KEY), "{text:?}");
    assert!(
        text.chars().count() <= max,
        "{} chars: {text:?}",
        text.chars().count()
    );
}

fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
}

// ---------------------------------------------------------------------------------------------------------------
// The scripted API server.

/// A streamed response body (a watch, a followed log): the script writes to it while the driver reads.
struct Feed(mpsc::UnboundedSender<Result<Bytes, io::Error>>);

impl Feed {
    fn line(&self, text: &str) {
        let _ = self.0.send(Ok(Bytes::from(format!("{text}\n"))));
    }

    fn json(&self, v: &Value) {
        self.line(&v.to_string());
    }

    /// One of the probe's JSON lines, written as the probe writes it.
    fn event(&self, e: &ProbeEvent) {
        self.line(&e.to_line());
    }

    fn watch(&self, type_: &str, object: Value) {
        self.json(&json!({"type": type_, "object": object}));
    }

    /// The connection breaks (a reset), rather than ends.
    fn break_off(self) {
        let _ = self.0.send(Err(io::Error::new(
            io::ErrorKind::ConnectionReset,
            "connection reset by peer",
        )));
    }
}

fn streamed() -> (Response<Body>, Feed) {
    let (tx, rx) = mpsc::unbounded_channel::<Result<Bytes, io::Error>>();
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item.map(Frame::data), rx))
    });
    let body = StreamBody::new(frames).boxed_unsync();
    (
        Response::builder().status(200).body(body).unwrap(),
        Feed(tx),
    )
}

fn full(status: u16, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap())
        .header("content-type", "application/json")
        .body(
            Full::new(body.into())
                .map_err(|never| match never {})
                .boxed_unsync(),
        )
        .unwrap()
}

fn json_response(status: u16, v: &Value) -> Response<Body> {
    full(status, v.to_string())
}

/// A request as the API server saw it.
struct Req {
    method: Method,
    path: String,
    query: BTreeMap<String, String>,
    body: Value,
}

impl Req {
    fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    fn is_watch(&self) -> bool {
        self.q("watch") == Some("true")
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).unwrap()
}

fn pods_path() -> String {
    format!("/api/v1/namespaces/{NS}/pods")
}

fn pod_path(name: &str) -> String {
    format!("/api/v1/namespaces/{NS}/pods/{name}")
}

struct ApiServerVerifier {
    handle: Handle,
    backlog: Vec<(Req, Responder)>,
    seen: Vec<String>,
    /// The pods as posted, by name, with the uid the server gave them.
    pods: BTreeMap<String, (Value, String)>,
    rv: u64,
}

/// One conversation each.
enum Scenario {
    /// Create, list, watch, Running, the probe's lines, the verdict from the log, delete.
    Success,
    /// Two placements: both creates arrive before either is answered.
    TwoPodsAtOnce,
    /// `CreateContainerConfigError: secret "harness-env" not found` (an `envFrom` Secret), with `--keep-pod`: no
    /// DELETE.
    MissingSecretKept,
    /// The Custodian crash-loops; its previous log has `jr2.custodian refuse ...`.
    CustodianRefused,
    /// The create is refused: the status code, reason and message.
    CreateRefused(u16, &'static str, &'static str),
    /// A 500 on create, then the retry is created.
    Create500ThenCreated,
    /// A 500 on every try: refused, and a DELETE by name in case a write went through.
    Create500Always,
    /// The probe's log and termination message are hostile (escapes, OSC 52, bidi, a forged `error:` line, a long
    /// error, a held key, another model and host): the log breaks off after one result, then the termination message.
    HostileLog,
    /// The Events are forbidden (RBAC): a verdict all the same.
    EventsForbidden,
    /// The watch stream closes mid-way: the driver watches again from the last resource version.
    WatchClosed,
    /// Someone else deletes the pod while the probe is on its first model.
    DeletedBySomeoneElse,
    /// Running, on the first model, until the test cancels or drops the run: the DELETE comes.
    RunningUntilStopped,
    /// The create is held until the test says; the run is cancelled meanwhile: the pod is deleted once created.
    CreateHeld {
        arrived: oneshot::Sender<()>,
        release: oneshot::Receiver<()>,
    },
    /// The stale sweep: one pod past its deadline, one not, one being deleted.
    Sweep,
}

impl ApiServerVerifier {
    fn new(handle: Handle) -> Self {
        Self {
            handle,
            backlog: Vec::new(),
            seen: Vec::new(),
            pods: BTreeMap::new(),
            rv: 1000,
        }
    }

    /// Runs the scenario's script; the conversation it saw comes back.
    fn run(self, scenario: Scenario) -> JoinHandle<Vec<String>> {
        tokio::spawn(async move {
            let mut s = self;
            s.play(scenario).await;
            s.finish().await
        })
    }

    async fn receive(&mut self, within: Duration) -> Option<(Req, Responder)> {
        let (request, send) = timeout(within, self.handle.next_request()).await.ok()??;
        let (parts, body) = request.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes();
        let uri = parts.uri.to_string();
        self.seen.push(format!("{} {uri}", parts.method));
        let query = parts
            .uri
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|kv| !kv.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::Null)
        };
        Some((
            Req {
                method: parts.method,
                path: parts.uri.path().to_owned(),
                query,
                body,
            },
            send,
        ))
    }

    /// The next request of this kind, from the backlog or as it arrives; the others wait in the backlog.
    async fn take(
        &mut self,
        what: &str,
        within: Duration,
        pred: impl Fn(&Req) -> bool,
    ) -> (Req, Responder) {
        if let Some(at) = self.backlog.iter().position(|(r, _)| pred(r)) {
            return self.backlog.remove(at);
        }
        let until = tokio::time::Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            let Some((req, send)) = self.receive(left).await else {
                panic!("expected {what}; the conversation so far: {:#?}", self.seen);
            };
            if pred(&req) {
                return (req, send);
            }
            self.backlog.push((req, send));
        }
    }

    fn next_rv(&mut self) -> String {
        self.rv += 1;
        self.rv.to_string()
    }

    /// The pod as the server holds it, at this stage.
    fn object(&mut self, name: &str, stage: &Stage) -> Value {
        let rv = self.next_rv();
        let (posted, uid) = self.pods.get(name).cloned().expect("a created pod");
        let mut pod = posted;
        pod["metadata"]["uid"] = json!(uid);
        pod["metadata"]["resourceVersion"] = json!(rv);
        pod["metadata"]["creationTimestamp"] = json!("2026-12-04T18:36:40Z");
        pod["status"] = match stage {
            Stage::Created => json!({"phase": "Pending", "qosClass": "Burstable"}),
            Stage::Scheduled {
                phase,
                custodian,
                probe,
            } => {
                pod["spec"]["nodeName"] = json!("worker-2");
                // The Custodian's status where the kubelet writes it: a plain container's beside the probe's, a
                // native sidecar's in `initContainerStatuses` (issue 36).
                let plain = pod["spec"]["containers"]
                    .as_array()
                    .is_some_and(|cs| cs.iter().any(|c| c["name"] == "custodian"));
                if plain {
                    json!({"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}],
                           "startTime": "2026-12-04T18:36:41Z",
                           "containerStatuses": [custodian, probe]})
                } else {
                    json!({"phase": phase, "conditions": [{"type": "PodScheduled", "status": "True"}],
                           "startTime": "2026-12-04T18:36:41Z",
                           "initContainerStatuses": [custodian], "containerStatuses": [probe]})
                }
            }
        };
        pod
    }

    async fn create(&mut self) -> String {
        let (req, send) = self.create_request().await;
        let name = req.body["metadata"]["name"].as_str().unwrap().to_owned();
        let uid = format!("uid-{}", self.pods.len() + 1);
        self.pods.insert(name.clone(), (req.body.clone(), uid));
        let obj = self.object(&name, &Stage::Created);
        send.send_response(json_response(201, &obj));
        name
    }

    async fn create_request(&mut self) -> (Req, Responder) {
        let (req, send) = self
            .take("POST pods", Duration::from_secs(10), |r| {
                r.method == Method::POST && r.path == pods_path()
            })
            .await;
        // No dry run, no field manager; the API server's deadline for the create, after which a create that got no
        // answer can no longer be written: 40 s (an admission webhook may take 30 s), or a second before the run's
        // deadline when that is nearer.
        let timeout = req
            .query
            .get("timeout")
            .and_then(|t| t.strip_suffix('s')?.parse::<u64>().ok());
        assert!(
            req.query.len() == 1 && timeout.is_some_and(|t| (1..=40).contains(&t)),
            "{:?}",
            req.query
        );
        assert_eq!(req.body["kind"], "Pod");
        assert_eq!(req.body["metadata"]["labels"]["jr2.dev/preflight-run"], RUN);
        assert_eq!(req.body["spec"]["restartPolicy"], "Never");
        (req, send)
    }

    async fn create_fails(&mut self, code: u16, reason: &str, message: &str) {
        let (_, send) = self.create_request().await;
        send.send_response(json_response(code, &status_body(code, reason, message)));
    }

    /// The list of one pod's watch: by its name, which admission cannot rewrite (issue 40, item 2).
    async fn pod_list(&mut self, name: &str) -> String {
        let selector = format!("metadata.name={name}");
        let (req, send) = self
            .take("LIST pods", Duration::from_secs(10), move |r| {
                r.method == Method::GET
                    && r.path == pods_path()
                    && !r.is_watch()
                    && r.q("fieldSelector") == Some(&selector)
            })
            .await;
        assert_eq!(req.q("labelSelector"), None);
        assert_eq!(req.q("limit"), Some("500"));
        let items = vec![self.object(name, &Stage::Created)];
        let rv = self.next_rv();
        send.send_response(json_response(
            200,
            &json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": rv}, "items": items}),
        ));
        rv
    }

    async fn pod_watch(&mut self, name: &str, from: &str) -> Feed {
        let selector = format!("metadata.name={name}");
        let (req, send) = self
            .take("WATCH pods", Duration::from_secs(10), move |r| {
                r.method == Method::GET
                    && r.path == pods_path()
                    && r.is_watch()
                    && r.q("fieldSelector") == Some(&selector)
            })
            .await;
        assert_eq!(req.q("labelSelector"), None);
        assert_eq!(
            req.q("resourceVersion"),
            Some(from),
            "the watch starts where the list (or the last event) was"
        );
        assert_eq!(req.q("allowWatchBookmarks"), Some("true"));
        assert_eq!(req.q("timeoutSeconds"), Some("290"));
        let (response, feed) = streamed();
        send.send_response(response);
        feed
    }

    async fn event_request(&mut self, pod: &str, watch: bool) -> (Req, Responder) {
        let path = format!("/api/v1/namespaces/{NS}/events");
        let selector = format!("involvedObject.name={pod}");
        let what = if watch { "WATCH events" } else { "LIST events" };
        self.take(what, Duration::from_secs(10), move |r| {
            r.method == Method::GET
                && r.path == path
                && r.is_watch() == watch
                && r.q("fieldSelector") == Some(&selector)
        })
        .await
    }

    async fn event_list(&mut self, pod: &str) {
        let (req, send) = self.event_request(pod, false).await;
        assert_eq!(req.q("limit"), Some("500"));
        send.send_response(json_response(
            200,
            &json!({"apiVersion": "v1", "kind": "EventList", "metadata": {"resourceVersion": "100"}, "items": []}),
        ));
    }

    async fn event_watch(&mut self, pod: &str) -> Feed {
        let (req, send) = self.event_request(pod, true).await;
        assert_eq!(req.q("resourceVersion"), Some("100"));
        let (response, feed) = streamed();
        send.send_response(response);
        feed
    }

    async fn probe_log(&mut self, pod: &str) -> Feed {
        let (_, send) = self.log_request(pod, "probe").await;
        let (response, feed) = streamed();
        send.send_response(response);
        feed
    }

    async fn log_request(&mut self, pod: &str, container: &str) -> (Req, Responder) {
        let path = format!("{}/log", pod_path(pod));
        let c = container.to_owned();
        let (req, send) = self
            .take("GET log", Duration::from_secs(10), move |r| {
                r.method == Method::GET && r.path == path && r.q("container") == Some(&c)
            })
            .await;
        if container == "probe" {
            assert_eq!(req.q("follow"), Some("true"));
            assert_eq!(req.query.len(), 2, "{:?}", req.query);
        }
        (req, send)
    }

    async fn delete(&mut self, pod: &str, uid: Option<&str>, code: u16) {
        let path = pod_path(pod);
        let (req, send) = self
            .take(
                &format!("DELETE {pod}"),
                Duration::from_secs(10),
                move |r| r.method == Method::DELETE && r.path == path,
            )
            .await;
        assert_eq!(req.body["gracePeriodSeconds"], 0);
        assert_eq!(req.body["propagationPolicy"], "Background");
        match uid {
            Some(uid) => assert_eq!(
                req.body["preconditions"]["uid"], uid,
                "only the pod this run created"
            ),
            None => assert!(req.body.get("preconditions").is_none()),
        }
        let response = if code == 200 {
            let mut obj = self.object(pod, &running());
            obj["metadata"]["deletionTimestamp"] = json!("2026-12-04T18:37:00Z");
            json_response(200, &obj)
        } else {
            json_response(
                code,
                &status_body(code, "NotFound", &format!("pods \"{pod}\" not found")),
            )
        };
        send.send_response(response);
    }

    /// The usual beginning: the create, the list and watch of the run's pods, the list and watch of its Events.
    async fn begin(&mut self) -> (Feed, Feed) {
        let name = self.create().await;
        assert_eq!(name, POD);
        let rv = self.pod_list(POD).await;
        let pods = self.pod_watch(POD, &rv).await;
        self.event_list(POD).await;
        let events = self.event_watch(POD).await;
        (pods, events)
    }

    /// The usual end: Running, the probe's lines, its summary, the end of its log; the DELETE.
    async fn run_to_verdict(&mut self, pods: &Feed, pod: &str, uid: &str) {
        let obj = self.object(pod, &running());
        pods.watch("MODIFIED", obj);
        let log = self.probe_log(pod).await;
        log.event(&ev_start());
        for i in 0..3 {
            log.event(&ev_started(i));
            log.line("{\"level\":\"debug\",\"msg\":\"not an event\"}");
            log.event(&ev_result(i));
        }
        log.event(&ev_summary());
        drop(log);
        self.delete(pod, Some(uid), 200).await;
    }

    async fn play(&mut self, scenario: Scenario) {
        match scenario {
            Scenario::Success => {
                let (pods, _events) = self.begin().await;
                self.run_to_verdict(&pods, POD, "uid-1").await;
            }
            Scenario::TwoPodsAtOnce => {
                // Both creates arrive before either is answered.
                let (a, send_a) = self.create_request().await;
                let (b, send_b) = self.create_request().await;
                for (req, send) in [(a, send_a), (b, send_b)] {
                    let name = req.body["metadata"]["name"].as_str().unwrap().to_owned();
                    let uid = if name == POD { "uid-1" } else { "uid-2" };
                    self.pods
                        .insert(name.clone(), (req.body.clone(), uid.to_owned()));
                    let obj = self.object(&name, &Stage::Created);
                    send.send_response(json_response(201, &obj));
                }
                // One watch per pod, by its name.
                let rv = self.pod_list(POD).await;
                let pods_a = self.pod_watch(POD, &rv).await;
                let rv = self.pod_list(POD_B).await;
                let pods_b = self.pod_watch(POD_B, &rv).await;
                self.event_list(POD).await;
                self.event_list(POD_B).await;
                let _ea = self.event_watch(POD).await;
                let _eb = self.event_watch(POD_B).await;
                self.run_to_verdict(&pods_b, POD_B, "uid-2").await;
                self.run_to_verdict(&pods_a, POD, "uid-1").await;
            }
            Scenario::MissingSecretKept => {
                let message = "secret \"harness-env\" not found";
                let (pods, _events) = self.begin().await;
                let obj = self.object(
                    POD,
                    &scheduled(
                        c_running("custodian"),
                        c_waiting("probe", "CreateContainerConfigError", Some(message)),
                    ),
                );
                pods.watch("MODIFIED", obj);
            }
            Scenario::CustodianRefused => {
                let (pods, _events) = self.begin().await;
                let crashed = json!({"name": "custodian", "image": "x", "imageID": "", "ready": false, "restartCount": 1,
                    "state": {"waiting": {"reason": "CrashLoopBackOff",
                        "message": "back-off 10s restarting failed container=custodian pod=jr2-preflight-demo-harness-run0001_demo(uid-1)"}},
                    "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}});
                let obj = self.object(
                    POD,
                    &scheduled(crashed, c_waiting("probe", "PodInitializing", None)),
                );
                pods.watch("MODIFIED", obj);
                let (req, send) = self.log_request(POD, "custodian").await;
                assert_eq!(
                    req.q("previous"),
                    Some("true"),
                    "the instance that refused, not the one restarting"
                );
                assert_eq!(req.q("tailLines"), Some("200"));
                assert_eq!(req.q("limitBytes"), Some("65536"));
                assert_eq!(req.q("follow"), None);
                send.send_response(full(
                    200,
                    "[2026-12-04 18:36:47.120][1][info][main] initializing epoch 0\n\
                     [2026-12-04 18:36:47.311][1][critical][lua] script log: jr2.custodian refuse secret=ANTHROPIC_API_KEY reason=empty-value\n",
                ));
                self.delete(POD, Some("uid-1"), 200).await;
            }
            Scenario::CreateRefused(code, reason, message) => {
                self.create_fails(code, reason, message).await
            }
            Scenario::Create500ThenCreated => {
                let (_, send) = self.create_request().await;
                send.send_response(full(500, "etcdserver: request timed out"));
                let (pods, _events) = self.begin().await;
                self.run_to_verdict(&pods, POD, "uid-1").await;
            }
            Scenario::Create500Always => {
                for _ in 0..3 {
                    let (_, send) = self.create_request().await;
                    send.send_response(json_response(
                        500,
                        &status_body(
                            500,
                            "InternalError",
                            "Internal error occurred: etcdserver: request timed out",
                        ),
                    ));
                }
                // A 5xx can come after the write: the driver deletes by name, in case.
                let path = pod_path(POD);
                let (req, send) = self
                    .take("DELETE by name", Duration::from_secs(10), move |r| {
                        r.method == Method::DELETE && r.path == path
                    })
                    .await;
                assert!(req.body.get("preconditions").is_none());
                send.send_response(json_response(
                    404,
                    &status_body(404, "NotFound", "pods \"x\" not found"),
                ));
            }
            Scenario::HostileLog => {
                let (pods, _events) = self.begin().await;
                let obj = self.object(POD, &running());
                pods.watch("MODIFIED", obj);
                let log = self.probe_log(POD).await;
                log.event(&ev_start());
                log.event(&ProbeEvent::ModelStarted {
                    index: 0,
                    model: HOSTILE_MODEL.to_owned(),
                });
                log.event(&ProbeEvent::Result {
                    index: 0,
                    result: Box::new(hostile_result(0)),
                });
                log.break_off();
                let summary = Summary {
                    schema: jr2_probe::contract::summary::SUMMARY_SCHEMA.to_owned(),
                    ok: false,
                    n: 3,
                    models: (0..3)
                        .map(|_| jr2_probe::contract::summary::SummaryModel {
                            model: Some(HOSTILE_MODEL.to_owned()),
                            outcome: Outcome::Http,
                            code: Outcome::Http.default_code(),
                            status: Some(500),
                            tries: 1,
                            elapsed_ms: 5,
                            error: Some(hostile_error()),
                        })
                        .collect(),
                    truncated: false,
                    warnings: Vec::new(),
                };
                let message = serde_json::to_string(&summary).unwrap();
                let obj = self.object(
                    POD,
                    &Stage::Scheduled {
                        phase: "Failed",
                        custodian: c_running("custodian"),
                        probe: c_terminated("probe", "Error", 1, Some(&message)),
                    },
                );
                pods.watch("MODIFIED", obj);
                let (_, send) = self.log_request(POD, "probe").await;
                send.send_response(json_response(
                    500,
                    &status_body(500, "InternalError", "the log is gone"),
                ));
                self.delete(POD, Some("uid-1"), 200).await;
            }
            Scenario::EventsForbidden => {
                self.create().await;
                let rv = self.pod_list(POD).await;
                let pods = self.pod_watch(POD, &rv).await;
                let (_, send) = self.event_request(POD, false).await;
                send.send_response(json_response(
                    403,
                    &status_body(403, "Forbidden", "events is forbidden: User \"system:serviceaccount:demo:jr2\" cannot list resource \"events\" in API group \"\" in the namespace \"demo\""),
                ));
                self.run_to_verdict(&pods, POD, "uid-1").await;
            }
            Scenario::WatchClosed => {
                let (pods, _events) = self.begin().await;
                let obj = self.object(
                    POD,
                    &scheduled(
                        c_running("custodian"),
                        c_waiting("probe", "ContainerCreating", None),
                    ),
                );
                let rv = obj["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                pods.watch("MODIFIED", obj);
                drop(pods); // the API server ends the watch
                let pods = self.pod_watch(POD, &rv).await;
                self.run_to_verdict(&pods, POD, "uid-1").await;
            }
            Scenario::DeletedBySomeoneElse => {
                let (pods, _events) = self.begin().await;
                let obj = self.object(POD, &running());
                pods.watch("MODIFIED", obj);
                let log = self.probe_log(POD).await;
                log.event(&ev_start());
                log.event(&ev_started(0));
                drop(log);
                let mut obj = self.object(POD, &running());
                obj["metadata"]["deletionTimestamp"] = json!("2026-12-04T18:36:50Z");
                pods.watch("DELETED", obj);
                // It is gone already: the driver's DELETE gets a 404, which is fine.
                self.delete(POD, Some("uid-1"), 404).await;
            }
            Scenario::RunningUntilStopped => {
                let (pods, _events) = self.begin().await;
                let obj = self.object(POD, &running());
                pods.watch("MODIFIED", obj);
                let log = self.probe_log(POD).await;
                log.event(&ev_start());
                log.event(&ev_started(0));
                self.delete(POD, Some("uid-1"), 200).await;
                drop(log);
            }
            Scenario::CreateHeld { arrived, release } => {
                let (req, send) = self.create_request().await;
                arrived.send(()).unwrap();
                release.await.unwrap();
                let name = req.body["metadata"]["name"].as_str().unwrap().to_owned();
                self.pods
                    .insert(name.clone(), (req.body.clone(), "uid-1".to_owned()));
                let obj = self.object(&name, &Stage::Created);
                send.send_response(json_response(201, &obj));
                self.delete(POD, Some("uid-1"), 200).await;
            }
            Scenario::Sweep => {
                let (req, send) = self
                    .take("LIST pods of the instance", Duration::from_secs(10), |r| {
                        r.method == Method::GET
                    })
                    .await;
                assert_eq!(req.path, pods_path());
                // By name, not by a label admission may rewrite (issue 40, item 2): every pod, metadata only.
                assert_eq!(req.q("labelSelector"), None);
                let pod = |run: &str, uid: &str, deadline: &str, deleting: bool| {
                    let mut p = serde_json::to_value(check_pod_of("harness", run)).unwrap();
                    p["metadata"]["uid"] = json!(uid);
                    p["metadata"]["resourceVersion"] = json!("7");
                    p["metadata"]["annotations"]["jr2.dev/preflight-deadline"] = json!(deadline);
                    if deleting {
                        p["metadata"]["deletionTimestamp"] = json!("2026-12-04T18:00:00Z");
                    }
                    p
                };
                // A stale one whose labels admission rewrote (managed-by set, the instance label gone): still ours,
                // by its name. A stale pod of another Instance, and one that is no check pod: not ours.
                let mut rewritten = pod("rew00001", "uid-rew", "2026-12-04T17:00:00.000Z", false);
                rewritten["metadata"]["labels"] =
                    json!({"app.kubernetes.io/managed-by": "platform-policy"});
                let mut other = pod("oth00001", "uid-oth", "2026-12-04T17:00:00.000Z", false);
                other["metadata"]["name"] = json!("jr2-preflight-demo-x-harness-oth00001");
                other["metadata"]["labels"]["jr2.dev/instance"] = json!("demo-x");
                let mut web = pod("web00001", "uid-web", "2026-12-04T17:00:00.000Z", false);
                web["metadata"]["name"] = json!("web-7d9f");
                let items = vec![
                    pod("old00001", "uid-old", "2026-12-04T17:00:00.000Z", false),
                    pod("new00001", "uid-new", "2026-12-04T19:00:00.000Z", false),
                    pod("del00001", "uid-del", "2026-12-04T17:00:00.000Z", true),
                    rewritten,
                    other,
                    web,
                ];
                send.send_response(json_response(
                    200,
                    &json!({"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": items}),
                ));
                let path = pod_path("jr2-preflight-demo-harness-old00001");
                let (req, send) = self
                    .take(
                        "DELETE of the stale pod",
                        Duration::from_secs(10),
                        move |r| r.method == Method::DELETE && r.path == path,
                    )
                    .await;
                assert_eq!(req.body["preconditions"]["uid"], "uid-old");
                send.send_response(json_response(
                    200,
                    &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                ));
                let path = pod_path("jr2-preflight-demo-harness-rew00001");
                let (req, send) = self
                    .take(
                        "DELETE of the stale pod whose labels were rewritten",
                        Duration::from_secs(10),
                        move |r| r.method == Method::DELETE && r.path == path,
                    )
                    .await;
                assert_eq!(req.body["preconditions"]["uid"], "uid-rew");
                send.send_response(json_response(
                    200,
                    &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                ));
            }
        }
    }

    /// What else came: only GETs (lists and watches the driver dropped) may be left unanswered.
    async fn finish(mut self) -> Vec<String> {
        while let Some(r) = self.receive(Duration::from_millis(300)).await {
            self.backlog.push(r);
        }
        for (r, _) in &self.backlog {
            assert_eq!(
                r.method,
                Method::GET,
                "an unexpected {} {}; the conversation: {:#?}",
                r.method,
                r.path,
                self.seen
            );
        }
        self.seen
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The runs.

struct Ran {
    result: RunResult,
    progress: Vec<RunUpdate>,
    conversation: Vec<String>,
}

fn client_and_server() -> (kube::Client, ApiServerVerifier) {
    let (service, handle) = mock::pair::<Request<kube::client::Body>, Response<Body>>();
    (
        kube::Client::new(service, "default"),
        ApiServerVerifier::new(handle),
    )
}

fn options() -> RunConfig {
    RunConfig {
        timeout: Duration::from_secs(20),
        image_pull_grace: Duration::ZERO,
        secret_grace: Duration::ZERO,
        log_drain: Duration::from_secs(2),
        ..RunConfig::default()
    }
}

async fn drive(scenario: Scenario, pods: Vec<PodToRun>, mut opts: RunConfig) -> Ran {
    let (client, server) = client_and_server();
    let script = server.run(scenario);
    let cleanup = Cleanup::new(client.clone(), NS);
    let (tx, mut rx) = mpsc::unbounded_channel();
    opts.cleanup = Some(cleanup.clone());
    opts.progress = Some(tx);
    let result = timeout(Duration::from_secs(30), run_pods(client, NS, pods, opts))
        .await
        .expect("run_pods returns within its deadline");
    let report = cleanup.wait(Duration::from_secs(5)).await;
    assert!(
        report.failed.is_empty() && report.unfinished.is_empty(),
        "{report:?}"
    );
    let conversation = timeout(Duration::from_secs(15), script)
        .await
        .expect("the scenario completes")
        .expect("the scenario's assertions hold");
    let mut progress = Vec::new();
    while let Ok(p) = rx.try_recv() {
        progress.push(p);
    }
    Ran {
        result,
        progress,
        conversation,
    }
}

fn deletes(conversation: &[String]) -> usize {
    conversation
        .iter()
        .filter(|r| r.starts_with("DELETE"))
        .count()
}

fn failure_lines(o: &Ran) -> Vec<String> {
    o.result.pods[0].failure_lines().to_vec()
}

fn assert_verdict(o: &Ran, pod: usize) {
    let run = &o.result.pods[pod];
    let PodOutcome::Finished(report) = &run.outcome else {
        panic!("{:?}", run.outcome)
    };
    let v = report.verdict.as_ref().expect("the verdict from the log");
    assert!(v.ok);
    assert_eq!(v.models.len(), 3);
    assert_eq!(run.node.as_deref(), Some("worker-2"));
    assert!(run.results.iter().all(Option::is_some));
}

#[tokio::test]
async fn success_the_verdict_comes_from_the_log() {
    let o = drive(Scenario::Success, vec![check_pod(POD)], options()).await;
    assert_verdict(&o, 0);
    assert!(o.result.ok());
    // Each model's result as it came, once; the pass lines the caller writes.
    let lines: Vec<String> = o.progress.iter().filter_map(RunUpdate::line).collect();
    assert_eq!(
        lines,
        [
            "provider: anthropic/claude-haiku-4-5 completed a tool call (840 ms)",
            "provider: vllm/Qwen/Qwen3-32B completed a tool call (841 ms)",
            "provider: google/gemini-2.5-flash completed a tool call (842 ms)",
        ]
    );
    assert_eq!(o.result.pods[0].evidence.probe_lines.len(), 11);
    // The exact order of what depends on what.
    let c = &o.conversation;
    let at = |prefix: &str| {
        c.iter()
            .position(|r| r.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {c:#?}"))
    };
    assert_eq!(c[0], "POST /api/v1/namespaces/demo/pods?&timeout=18s");
    assert!(
        at("GET /api/v1/namespaces/demo/pods?&fieldSelector=")
            < at("GET /api/v1/namespaces/demo/pods?&watch=true")
    );
    assert!(
        at(
            "GET /api/v1/namespaces/demo/pods/jr2-preflight-demo-harness-run0001/log?&container=probe&follow=true"
        ) < at("DELETE")
    );
    assert_eq!(
        c.last().map(String::as_str),
        Some("DELETE /api/v1/namespaces/demo/pods/jr2-preflight-demo-harness-run0001?")
    );
    assert_eq!(deletes(c), 1);
}

#[tokio::test]
async fn two_pods_are_created_at_once() {
    let o = drive(
        Scenario::TwoPodsAtOnce,
        vec![check_pod(POD), check_pod(POD_B)],
        options(),
    )
    .await;
    assert_verdict(&o, 0);
    assert_verdict(&o, 1);
    assert_eq!(deletes(&o.conversation), 2);
}

#[tokio::test]
async fn the_custodian_refusal_from_its_log() {
    let o = drive(Scenario::CustodianRefused, vec![check_pod(POD)], options()).await;
    assert_eq!(
        failure_lines(&o),
        [
            "error: provider preflight: the check pod cannot start — the Custodian refused the held value ANTHROPIC_API_KEY (empty-value)"
        ]
    );
    assert_eq!(o.result.pods[0].evidence.custodian_log.len(), 2);
}

#[tokio::test]
async fn create_forbidden_by_pod_security_is_refused_with_the_api_servers_message() {
    let message = "pods \"jr2-preflight-demo-harness-run0001\" is forbidden: violates PodSecurity \"restricted:latest\": seccompProfile (pod or container \"custodian\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";
    let o = drive(
        Scenario::CreateRefused(403, "Forbidden", message),
        vec![check_pod(POD)],
        options(),
    )
    .await;
    assert_eq!(
        failure_lines(&o),
        [format!(
            "error: provider preflight: the cluster refused the check pod: {message}"
        )]
    );
    // Nothing else: no watch, no delete.
    assert_eq!(
        o.conversation,
        ["POST /api/v1/namespaces/demo/pods?&timeout=18s"]
    );
}

#[tokio::test]
async fn create_over_quota_is_refused() {
    let message = "pods \"jr2-preflight-demo-harness-run0001\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=10, limited: pods=10";
    let o = drive(
        Scenario::CreateRefused(403, "Forbidden", message),
        vec![check_pod(POD)],
        options(),
    )
    .await;
    let PodOutcome::Failed(f) = &o.result.pods[0].outcome else {
        panic!()
    };
    assert_eq!(
        f.kind,
        FailureKind::Refused {
            code: Some(403),
            message: message.into()
        }
    );
    assert_eq!(o.conversation.len(), 1);
}

#[tokio::test]
async fn create_invalid_is_refused() {
    let message = "Pod \"jr2-preflight-demo-harness-run0001\" is invalid: spec.containers[0].image: Required value";
    let o = drive(
        Scenario::CreateRefused(422, "Invalid", message),
        vec![check_pod(POD)],
        options(),
    )
    .await;
    assert_eq!(
        failure_lines(&o),
        [format!(
            "error: provider preflight: the cluster refused the check pod: {message}"
        )]
    );
    assert_eq!(
        o.conversation,
        ["POST /api/v1/namespaces/demo/pods?&timeout=18s"]
    );
}

#[tokio::test]
async fn a_name_conflict_is_refused_and_the_other_pod_is_left_alone() {
    let message = "pods \"jr2-preflight-demo-harness-run0001\" already exists";
    let o = drive(
        Scenario::CreateRefused(409, "AlreadyExists", message),
        vec![check_pod(POD)],
        options(),
    )
    .await;
    assert_eq!(
        failure_lines(&o),
        [format!(
            "error: provider preflight: the cluster refused the check pod: {message}"
        )]
    );
    assert_eq!(
        deletes(&o.conversation),
        0,
        "someone else's pod is not deleted"
    );
}

#[tokio::test]
async fn a_500_on_create_is_retried() {
    let o = drive(
        Scenario::Create500ThenCreated,
        vec![check_pod(POD)],
        options(),
    )
    .await;
    assert_verdict(&o, 0);
    assert_eq!(
        o.conversation
            .iter()
            .filter(|r| r.starts_with("POST"))
            .count(),
        2
    );
}

#[tokio::test]
async fn a_500_on_every_create_is_refused() {
    let o = drive(Scenario::Create500Always, vec![check_pod(POD)], options()).await;
    assert_eq!(
        failure_lines(&o),
        [
            "error: provider preflight: the cluster refused the check pod: Internal error occurred: etcdserver: request timed out"
        ]
    );
}

#[tokio::test]
async fn the_pods_text_is_cleaned_and_the_plan_names_the_model_and_host() {
    let mut opts = options();
    opts.redactor = jr2_probe::sanitize::Redactor::new([HELD_KEY]);
    let o = drive(Scenario::HostileLog, vec![check_pod(POD)], opts).await;
    let plan = plan();
    let run = &o.result.pods[0];
    // The model the probe started is the plan's, whatever its line says.
    let started: Vec<&str> = o
        .progress
        .iter()
        .filter_map(|p| match p {
            RunUpdate::ModelStarted { model, .. } => Some(model.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, [MODELS[0]]);
    // The result from the log: every string cleaned, the model, id, base URL, host and route the plan's.
    let r = run.results[0].as_ref().expect("the first result came");
    let facts = plan.resolved(0);
    assert_eq!(r.model, MODELS[0]);
    assert_eq!(
        (&r.id, &r.base_url, &r.host, &r.route),
        (&facts.id, &facts.base_url, &facts.host, &facts.route)
    );
    assert_eq!(r.next_action, r.code.next_action());
    assert_clean(
        r.error.as_deref().unwrap(),
        jr2_probe::sanitize::MAX_ERROR_CHARS,
    );
    for s in [&r.stop_reason, &r.tool_name, &r.answer] {
        assert_clean(s.as_deref().unwrap(), 400);
    }
    let result_update = o
        .progress
        .iter()
        .find_map(|p| match p {
            RunUpdate::Result { result, .. } => Some(result),
            _ => None,
        })
        .expect("the result was sent");
    assert_eq!(**result_update, *r);
    // The termination message: the models the plan's (or none), the errors cleaned.
    let PodOutcome::Finished(report) = &run.outcome else {
        panic!("{:?}", run.outcome)
    };
    let summary = report.summary.as_ref().expect("the termination message");
    for (i, m) in summary.models.iter().enumerate() {
        assert!(
            m.model.as_deref().is_none_or(|name| name == MODELS[i]),
            "{m:?}"
        );
        assert_clean(
            m.error.as_deref().unwrap(),
            jr2_probe::sanitize::MAX_ERROR_CHARS,
        );
    }
    // The driver's lines and its JSON verdict: one `error:` line per failed model, each clean, naming the plan's model
    // and host.
    let checks: Vec<_> = pod::check_pods(&plan, RUN, now())
        .into_iter()
        .filter(|c| c.pod.metadata.name.as_deref() == Some(POD))
        .collect();
    let verdict = jr2_preflight::verdict::assemble(
        &plan,
        &checks,
        &o.result,
        RUN,
        now(),
        std::time::Instant::now(),
        Vec::new(),
        0,
    );
    let errors: Vec<&String> = verdict
        .lines
        .iter()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 3, "{:#?}", verdict.lines);
    for (i, line) in errors.iter().enumerate() {
        assert!(
            line.starts_with(&format!(
                "error: provider preflight failed for model \"{}\"",
                MODELS[i]
            )),
            "{line}"
        );
        let host = &plan.resolved(i).host;
        assert!(line.contains(&format!(" {host} (")), "{line}");
        assert!(
            !line.contains("evil.example") && !line.contains("forged model"),
            "{line}"
        );
    }
    for line in &verdict.lines {
        assert_clean(line, 600);
    }
    let json = serde_json::to_string(&verdict).unwrap();
    assert!(!json.contains(HELD_KEY) && !json.contains("evil.example") && !json.contains('\u{1b}'));
}

#[tokio::test]
async fn events_forbidden_still_give_a_verdict_and_say_so() {
    let o = drive(Scenario::EventsForbidden, vec![check_pod(POD)], options()).await;
    assert_verdict(&o, 0);
    assert!(o.result.pods[0].evidence.events_forbidden);
    assert_eq!(
        o.result.warnings,
        [
            "warning: provider: the check pod's Events cannot be read (events is forbidden: User \"system:serviceaccount:demo:jr2\" cannot list resource \"events\" in API group \"\" in the namespace \"demo\") — the verdict rests on the pod's status alone, and a Secret volume that does not mount shows only as a timeout"
        ]
    );
    // The forbidden list is not retried.
    let event_requests = o
        .conversation
        .iter()
        .filter(|r| r.contains("/events"))
        .count();
    assert_eq!(event_requests, 1, "{:#?}", o.conversation);
}

#[tokio::test]
async fn a_closed_watch_is_watched_again_from_its_resource_version() {
    let o = drive(Scenario::WatchClosed, vec![check_pod(POD)], options()).await;
    assert_verdict(&o, 0);
    let watches = o
        .conversation
        .iter()
        .filter(|r| r.starts_with("GET /api/v1/namespaces/demo/pods?&watch=true"))
        .count();
    assert_eq!(watches, 2);
    // No second list: the watch resumed.
    let lists = o
        .conversation
        .iter()
        .filter(|r| r.starts_with("GET /api/v1/namespaces/demo/pods?&fieldSelector="))
        .count();
    assert_eq!(lists, 1);
}

#[tokio::test]
async fn a_pod_deleted_by_someone_else_stops_the_check() {
    let o = drive(
        Scenario::DeletedBySomeoneElse,
        vec![check_pod(POD)],
        options(),
    )
    .await;
    assert_eq!(
        failure_lines(&o),
        [
            "error: provider preflight: the check pod stopped (the pod was deleted) while the check was on model \"anthropic/claude-haiku-4-5\"",
            "  not checked: vllm/Qwen/Qwen3-32B",
            "  not checked: google/gemini-2.5-flash",
        ]
    );
}

/// Waits until the probe has started its first model.
async fn first_model_started(rx: &mut mpsc::UnboundedReceiver<RunUpdate>) {
    while let Some(p) = rx.recv().await {
        if matches!(p, RunUpdate::ModelStarted { .. }) {
            return;
        }
    }
    panic!("the progress channel closed");
}

#[tokio::test]
async fn cancel_deletes_the_pod() {
    let (client, server) = client_and_server();
    let script = server.run(Scenario::RunningUntilStopped);
    let cleanup = Cleanup::new(client.clone(), NS);
    let cancel = Cancel::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let opts = RunConfig {
        cleanup: Some(cleanup.clone()),
        cancel: Some(cancel.clone()),
        progress: Some(tx),
        ..options()
    };
    let run = tokio::spawn(run_pods(client, NS, vec![check_pod(POD)], opts));
    first_model_started(&mut rx).await;
    cancel.cancel();
    let result = timeout(Duration::from_secs(5), run).await.unwrap().unwrap();
    let PodOutcome::Failed(f) = &result.pods[0].outcome else {
        panic!()
    };
    assert_eq!(f.kind, FailureKind::Interrupted);
    let report = cleanup.wait(Duration::from_secs(5)).await;
    assert_eq!(report.deleted, [POD]);
    let conversation = timeout(Duration::from_secs(15), script)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(deletes(&conversation), 1);
}

#[tokio::test]
async fn dropping_the_run_deletes_the_pod() {
    let (client, server) = client_and_server();
    let script = server.run(Scenario::RunningUntilStopped);
    let cleanup = Cleanup::new(client.clone(), NS);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let opts = RunConfig {
        cleanup: Some(cleanup.clone()),
        progress: Some(tx),
        ..options()
    };
    // As a Ctrl-C handler does: the run's future is dropped mid-way.
    tokio::select! {
        _ = run_pods(client, NS, vec![check_pod(POD)], opts) => panic!("the run cannot end by itself here"),
        () = first_model_started(&mut rx) => {}
    }
    let report = cleanup.wait(Duration::from_secs(5)).await;
    assert_eq!(report.deleted, [POD]);
    let conversation = timeout(Duration::from_secs(15), script)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(deletes(&conversation), 1);
}

#[tokio::test]
async fn a_pod_created_after_the_cancel_is_deleted_when_its_create_returns() {
    let (client, server) = client_and_server();
    let (arrived_tx, arrived_rx) = oneshot::channel();
    let (release_tx, release_rx) = oneshot::channel();
    let script = server.run(Scenario::CreateHeld {
        arrived: arrived_tx,
        release: release_rx,
    });
    let cleanup = Cleanup::new(client.clone(), NS);
    let cancel = Cancel::new();
    let opts = RunConfig {
        cleanup: Some(cleanup.clone()),
        cancel: Some(cancel.clone()),
        ..options()
    };
    let run = tokio::spawn(run_pods(client, NS, vec![check_pod(POD)], opts));
    arrived_rx.await.unwrap();
    cancel.cancel();
    let result = timeout(Duration::from_secs(5), run).await.unwrap().unwrap();
    assert!(
        matches!(&result.pods[0].outcome, PodOutcome::Failed(f) if f.kind == FailureKind::Interrupted)
    );
    release_tx.send(()).unwrap();
    let report = cleanup.wait(Duration::from_secs(5)).await;
    assert_eq!(report.deleted, [POD]);
    let conversation = timeout(Duration::from_secs(15), script)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(conversation.len(), 2, "{conversation:#?}");
}

#[tokio::test]
async fn keep_pod_keeps_a_failed_pod() {
    let (client, server) = client_and_server();
    let script = server.run(Scenario::MissingSecretKept);
    let cleanup = Cleanup::new(client.clone(), NS);
    let opts = RunConfig {
        keep_failed: true,
        cleanup: Some(cleanup.clone()),
        ..options()
    };
    let result = run_pods(client, NS, vec![check_pod(POD)], opts).await;
    assert!(result.pods[0].kept);
    let report = cleanup.wait(Duration::from_secs(2)).await;
    assert_eq!(report.kept, [POD]);
    let conversation = timeout(Duration::from_secs(15), script)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(deletes(&conversation), 0);
}

#[tokio::test]
async fn the_sweep_deletes_only_pods_past_their_deadline() {
    let (client, server) = client_and_server();
    let script = server.run(Scenario::Sweep);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_409_000); // 2026-12-04T18:30:00Z
    let sweep = sweep_stale(client, NS, "demo", now).await.unwrap();
    assert_eq!(
        sweep.deleted,
        [
            "jr2-preflight-demo-harness-old00001",
            "jr2-preflight-demo-harness-rew00001"
        ]
    );
    assert!(sweep.failed.is_empty());
    let conversation = timeout(Duration::from_secs(15), script)
        .await
        .unwrap()
        .unwrap();
    // The list (metadata only), each check pod of the Instance read whole (its deadline is its creation plus its
    // `activeDeadlineSeconds`, both the API server's), the two deletes.
    assert_eq!(conversation.len(), 6, "{conversation:#?}");
}
