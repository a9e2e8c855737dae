//! A fake Kubernetes API server on 127.0.0.1, with a kubelet stand-in that runs the real `jr2-probe` as a process.
//!
//! There is no real kube-apiserver on these machines (`../shared/research/test-peers.md` §B), and kmock answers
//! its error paths with a 500 and a Python traceback, so this is our own: plain HTTP/1.1 (the real `kube` client
//! reaches it through a kubeconfig that names `http://127.0.0.1:<port>`), in-memory Pods and Events, and the part of
//! the API a check pod's driver uses, with the API server's semantics:
//!
//! - Pods: `POST` (409 `AlreadyExists`, 422 without a name, or a scripted refusal such as a quota's 403), `GET`, list
//!   and watch by `labelSelector` / `fieldSelector`, `DELETE` (the `uid` and `resourceVersion` preconditions are
//!   honoured: 409 `Conflict`; 404 `NotFound` when missing; `gracePeriodSeconds: 0` removes at once, a grace period
//!   marks it `deletionTimestamp` first).
//! - Events (`core/v1`): list and watch by `fieldSelector` (`involvedObject.name=<pod>`...); the kubelet stand-in
//!   writes them as a 1.35 kubelet and scheduler do, a repeated one counting up.
//! - Watches: newline-delimited `WatchEvent` JSON from a `resourceVersion` (`""`/`"0"`: the current objects as
//!   `ADDED` first), `allowWatchBookmarks` (a `BOOKMARK` every [`FakeKube::set_bookmark_interval`]),
//!   `sendInitialEvents` with its `k8s.io/initial-events-end` bookmark, `timeoutSeconds` (the stream ends), and a
//!   `410 Expired` `ERROR` event for a version older than [`FakeKube::compact`]'s.
//! - The log of a container: `GET .../pods/<pod>/log?container=<c>` with `follow` (lines as the kubelet stand-in
//!   writes them; the stream ends when the container terminates or the pod goes), `previous`, `tailLines`,
//!   `limitBytes`, and the API server's 400 for a container that has not started.
//! - NetworkPolicies (`networking.k8s.io/v1`): list and watch, none unless a test adds them.
//! - Deployments (`apps/v1`): `GET` by name (404 `deployments.apps "<name>" not found`), none unless a test adds them.
//! - Secrets: held for the kubelet stand-in only ([`FakeKube::add_secret`]); no route serves them.
//! - `/version`, `/api`, `/api/v1`, `/apis` and `/apis/networking.k8s.io/v1` for discovery.
//!
//! Every request is recorded ([`FakeKube::requests`]), with when it came.
//!
//! **The kubelet stand-in**: when a pod is created it plays the [`Scenario`] set for the fake: it schedules the pod
//! (`spec.nodeName`, `PodScheduled`), starts the Custodian (the `initContainers` sidecar) as running, then runs the
//! real `jr2-probe` binary as a child process with the probe container's `args` (its `--termination-log` pointed
//! at a temporary file) and `env` (`envFrom` Secrets, then `env`: a `fieldRef` to `spec.nodeName` resolved to the
//! node, literal values as given, `secretKeyRef` from the Secrets a test added and skipped when there is none,
//! ConfigMap references skipped), publishes its stdout and stderr lines
//! as the container's log as they come, and on exit sets the container `terminated` with its exit code and the
//! termination message (the file's content, at most 4096 bytes). Deleting the pod kills the process. The moments
//! that matter are kept per pod ([`FakeKube::pod_times`]): created, the probe started, exited, its `terminated`
//! status recorded, deleted.
//!
//! Not emulated: `activeDeadlineSeconds`, restarts, admission defaults (the stored pod is the posted one plus
//! metadata and status), pagination (`limit` is ignored: one page), `PATCH`/`PUT`.
//!
//! Dropping the fake stops the server, ends its streams and kills the probe processes.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// A response body.
pub type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// The node the kubelet stand-in schedules every pod on.
pub const NODE: &str = "kind-worker2";

/// The scheduler's message for a pod no node can take (1.35's wording, from `FitError`).
pub const UNSCHEDULABLE_TAINT_MEMORY: &str = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient memory. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";

/// The same pod a moment later, once an autoscaler added a node that is still too small.
pub const UNSCHEDULABLE_MEMORY: &str = "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient memory. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";

/// The most of a termination message the kubelet keeps.
pub const TERMINATION_MESSAGE_LIMIT: usize = 4096;

/// A scripted kubelet: what happens to one pod, given its handle. Return when the pod's containers are done.
pub type Script = Arc<dyn Fn(PodCtl) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// What the kubelet stand-in (and scheduler) do with each pod created.
#[derive(Clone)]
pub enum Scenario {
    /// Scheduled at once, the Custodian started, the probe run to its end.
    AllOk,
    /// `PodScheduled=False`, `Unschedulable`, with each message in turn for `each` (a `FailedScheduling` Event each
    /// time; a message repeated is the same status written again), then scheduled and run as [`Scenario::AllOk`].
    UnschedulableThenScheduled {
        /// The scheduler's messages, in order.
        messages: Vec<String>,
        /// How long each stands.
        each: Duration,
    },
    /// Scheduled; the Custodian runs; the probe's image never pulls: `ErrImagePull`, then `ImagePullBackOff` (the
    /// kubelet's messages and Events), until the pod is deleted.
    ImagePullBackOff,
    /// Scheduled; the Custodian runs; the probe waits in `CreateContainerConfigError` with this message (the
    /// kubelet's, e.g. `secret "x" not found`), with its `Failed` Event, until the pod is deleted.
    CreateContainerConfigError {
        /// The waiting message.
        message: String,
    },
    /// Scheduled; a volume of the Custodian does not mount: the Custodian stays `ContainerCreating` and the probe
    /// `PodInitializing`, and only a `FailedMount` Event (repeated, counting up) says why.
    FailedMount {
        /// The volume.
        volume: String,
        /// The Secret that is missing.
        secret: String,
    },
    /// Run as [`Scenario::AllOk`], but the probe process is killed (SIGKILL) right after its first `result` line, and
    /// its status is `terminated`, `OOMKilled`, exit code 137.
    OomKilledAfterFirstResult,
    /// Created, then nothing: never scheduled (no status beyond `Pending`).
    Nothing,
    /// A script of the test's own.
    Script(Script),
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scenario::AllOk => f.write_str("AllOk"),
            Scenario::UnschedulableThenScheduled { messages, each } => f
                .debug_struct("UnschedulableThenScheduled")
                .field("messages", messages)
                .field("each", each)
                .finish(),
            Scenario::ImagePullBackOff => f.write_str("ImagePullBackOff"),
            Scenario::CreateContainerConfigError { message } => f
                .debug_struct("CreateContainerConfigError")
                .field("message", message)
                .finish(),
            Scenario::FailedMount { volume, secret } => f
                .debug_struct("FailedMount")
                .field("volume", volume)
                .field("secret", secret)
                .finish(),
            Scenario::OomKilledAfterFirstResult => f.write_str("OomKilledAfterFirstResult"),
            Scenario::Nothing => f.write_str("Nothing"),
            Scenario::Script(_) => f.write_str("Script(..)"),
        }
    }
}

/// One request the fake received.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, decoded.
    pub query: BTreeMap<String, String>,
    /// The JSON body (Null when empty or not JSON).
    pub body: Value,
    /// When it came.
    pub at: Instant,
}

impl Recorded {
    /// A query parameter.
    pub fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A watch (`?watch=true`).
    pub fn is_watch(&self) -> bool {
        matches!(self.q("watch"), Some("true" | "1"))
    }
}

/// The moments that matter in one pod's life, as the fake saw them.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodTimes {
    /// The create was answered.
    pub created: Option<Instant>,
    /// The probe process started.
    pub probe_started: Option<Instant>,
    /// The probe's `summary` line (its verdict) was published in its log.
    pub probe_summary_logged: Option<Instant>,
    /// The probe process exited (as `wait` saw it).
    pub probe_exited: Option<Instant>,
    /// The probe container's `terminated` status was recorded (just before the watchers are woken).
    pub probe_terminated: Option<Instant>,
    /// The pod was deleted (or marked for deletion).
    pub deleted: Option<Instant>,
}

/// How the kubelet stand-in runs the probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeRun {
    /// Kill the process (SIGKILL) right after its first `result` line: `OOMKilled`, exit code 137.
    pub oom_after_first_result: bool,
    /// Publish only this many of its output lines as the log (the rest is lost, as a rotated or broken log is): the
    /// driver must read the verdict from the termination message.
    pub log_lines: Option<usize>,
}

/// What a pod's probe process did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeExit {
    /// The container's exit code (137 when killed).
    pub exit_code: i32,
    /// The termination message.
    pub message: String,
    /// It was OOM-killed by the stand-in.
    pub oom_killed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Pod,
    Event,
    NetworkPolicy,
    Deployment,
}

impl Kind {
    fn api_version(self) -> &'static str {
        match self {
            Kind::Pod | Kind::Event => "v1",
            Kind::NetworkPolicy => "networking.k8s.io/v1",
            Kind::Deployment => "apps/v1",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Event => "Event",
            Kind::NetworkPolicy => "NetworkPolicy",
            Kind::Deployment => "Deployment",
        }
    }

    fn plural(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::Event => "events",
            Kind::NetworkPolicy => "networkpolicies",
            Kind::Deployment => "deployments",
        }
    }

    /// As the API server names a resource in its messages: `pods`, `deployments.apps`.
    fn qualified(self) -> String {
        match self.api_version().split_once('/') {
            Some((group, _)) => format!("{}.{group}", self.plural()),
            None => self.plural().to_owned(),
        }
    }
}

struct Change {
    rv: u64,
    kind: Kind,
    type_: &'static str,
    object: Value,
}

#[derive(Default)]
struct LogBuf {
    lines: Vec<String>,
    closed: bool,
}

type Key = (Kind, String, String);
type LogKey = (String, String, String, bool);

#[derive(Default)]
struct State {
    rv: u64,
    seq: u64,
    compacted: u64,
    objects: BTreeMap<Key, Value>,
    history: Vec<Change>,
    logs: HashMap<LogKey, LogBuf>,
    requests: Vec<Recorded>,
    created: Vec<String>,
    deleted: Vec<String>,
    times: HashMap<String, PodTimes>,
    kubelets: HashMap<(String, String), JoinHandle<()>>,
    refusal: Option<(u16, String, String)>,
    /// Secrets by (namespace, name): key -> value. The kubelet stand-in reads them; no route serves them (the driver
    /// has no business reading a Secret, and a test can assert it never asked).
    secrets: HashMap<(String, String), BTreeMap<String, String>>,
    closed: bool,
}

impl State {
    fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    /// Stores `object` (a new `resourceVersion`), and records the change for the watchers.
    fn put(&mut self, kind: Kind, mut object: Value, type_: &'static str) -> Value {
        let rv = self.next_rv();
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind());
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.objects.insert((kind, ns, name), object.clone());
        self.history.push(Change {
            rv,
            kind,
            type_,
            object: object.clone(),
        });
        object
    }

    fn remove(&mut self, kind: Kind, ns: &str, name: &str) -> Option<Value> {
        let mut object = self
            .objects
            .remove(&(kind, ns.to_owned(), name.to_owned()))?;
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.history.push(Change {
            rv,
            kind,
            type_: "DELETED",
            object: object.clone(),
        });
        Some(object)
    }

    fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<&Value> {
        self.objects.get(&(kind, ns.to_owned(), name.to_owned()))
    }
}

struct Inner {
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    scenario: Mutex<Scenario>,
    probe_bin: PathBuf,
    bookmark_every: Mutex<Duration>,
    uid_base: u64,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Changes the state, then wakes every watch and log stream.
    fn mutate<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let r = f(&mut self.lock());
        self.changed.send_modify(|g| *g = g.wrapping_add(1));
        r
    }
}

/// A running fake API server. Dropping it stops it.
pub struct FakeKube {
    addr: SocketAddr,
    inner: Arc<Inner>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeKube {
    /// Starts on a free loopback port; each pod created plays `scenario`, running `probe_bin` (the `jr2-probe`
    /// binary) where it runs the probe.
    pub async fn start(probe_bin: impl Into<PathBuf>, scenario: Scenario) -> Self {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("a local address");
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                rv: 1000,
                ..State::default()
            }),
            changed: watch::channel(0).0,
            scenario: Mutex::new(scenario),
            probe_bin: probe_bin.into(),
            bookmark_every: Mutex::new(Duration::from_secs(5)),
            uid_base: u64::from(addr.port()),
        });
        let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
        let served = inner.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = &mut stop_rx => return,
                };
                let Ok((stream, _)) = accepted else { continue };
                // As Go's net package does for the real API server: no Nagle delay on the small watch and log writes.
                let _ = stream.set_nodelay(true);
                let inner = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| handle(req, inner.clone()));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            inner,
            stop: Some(stop_tx),
        }
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`
    pub fn server_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes a kubeconfig whose current context (`fake`, namespace `default`) reaches this server.
    pub fn kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        self.kubeconfig_in(path, "default")
    }

    /// Writes a kubeconfig whose current context (`fake`) reaches this server, in `namespace`.
    pub fn kubeconfig_in(&self, path: &Path, namespace: &str) -> std::io::Result<()> {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: {namespace}\ncurrent-context: fake\nusers:\n- name: fake\n  user:\n    token: fake-token-not-a-secret\npreferences: {{}}\n",
            server = self.server_url()
        );
        std::fs::write(path, text)
    }

    /// What pods created from now on play.
    pub fn set_scenario(&self, scenario: Scenario) {
        *self
            .inner
            .scenario
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = scenario;
    }

    /// How often a watch that allows bookmarks gets one (5 s by default).
    pub fn set_bookmark_interval(&self, every: Duration) {
        *self
            .inner
            .bookmark_every
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = every;
    }

    /// Every pod create from now on is refused with this status (`None`: created again), as a quota, Pod Security
    /// or a webhook refuses one.
    pub fn refuse_creates(&self, refusal: Option<(u16, &str, &str)>) {
        self.inner.lock().refusal =
            refusal.map(|(code, reason, message)| (code, reason.to_owned(), message.to_owned()));
    }

    /// Forgets the history so far: a watch from an older `resourceVersion` gets `410 Expired`.
    pub fn compact(&self) {
        let mut st = self.inner.lock();
        st.compacted = st.rv;
        st.history.clear();
    }

    /// Adds a NetworkPolicy to `namespace`.
    pub fn add_network_policy(&self, namespace: &str, mut policy: Value) {
        policy["metadata"]["namespace"] = json!(namespace);
        self.inner.mutate(|st| {
            let uid = next_uid(st, self.inner.uid_base);
            policy["metadata"]["uid"] = json!(uid);
            policy["metadata"]["creationTimestamp"] = json!(rfc3339(SystemTime::now()));
            st.put(Kind::NetworkPolicy, policy, "ADDED");
        });
    }

    /// Adds a Deployment to `namespace` (served by `GET /apis/apps/v1/namespaces/<ns>/deployments/<name>`).
    pub fn add_deployment(&self, namespace: &str, mut deployment: Value) {
        deployment["metadata"]["namespace"] = json!(namespace);
        self.inner.mutate(|st| {
            let uid = next_uid(st, self.inner.uid_base);
            deployment["metadata"]["uid"] = json!(uid);
            deployment["metadata"]["creationTimestamp"] = json!(rfc3339(SystemTime::now()));
            deployment["metadata"]["generation"] = json!(1);
            st.put(Kind::Deployment, deployment, "ADDED");
        });
    }

    /// Adds a Secret to `namespace`: the kubelet stand-in resolves the probe container's `secretKeyRef` and
    /// `envFrom.secretRef` from it, as a kubelet does, so the probe process holds its values.
    pub fn add_secret(&self, namespace: &str, name: &str, data: &[(&str, &str)]) {
        let data = data
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.inner.mutate(|st| {
            st.secrets
                .insert((namespace.to_owned(), name.to_owned()), data);
        });
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.inner.lock().requests.clone()
    }

    /// The pods it holds now.
    pub fn pods(&self) -> Vec<Value> {
        self.inner
            .lock()
            .objects
            .iter()
            .filter(|((k, _, _), _)| *k == Kind::Pod)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The pods it holds now that match a label selector (`a=b,c!=d,e in (f,g)`).
    pub fn pods_matching(&self, label_selector: &str) -> Vec<Value> {
        let sel = Selector::parse(label_selector).expect("a valid label selector");
        self.pods()
            .into_iter()
            .filter(|p| sel.matches_labels(p))
            .collect()
    }

    /// One pod as it is now.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        self.inner.lock().get(Kind::Pod, namespace, name).cloned()
    }

    /// Every version of every object it stored since the last [`FakeKube::compact`], in order: each pod's statuses
    /// (termination messages included) and Events, also of those deleted since.
    pub fn history(&self) -> Vec<Value> {
        self.inner
            .lock()
            .history
            .iter()
            .map(|ch| ch.object.clone())
            .collect()
    }

    /// The Events it holds now.
    pub fn events(&self) -> Vec<Value> {
        self.inner
            .lock()
            .objects
            .iter()
            .filter(|((k, _, _), _)| *k == Kind::Event)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// The names of the pods created (answered 201), in order.
    pub fn created(&self) -> Vec<String> {
        self.inner.lock().created.clone()
    }

    /// The names of the pods deleted by a `DELETE` that succeeded, in order.
    pub fn deleted(&self) -> Vec<String> {
        self.inner.lock().deleted.clone()
    }

    /// The moments of one pod's life.
    pub fn pod_times(&self, name: &str) -> PodTimes {
        self.inner
            .lock()
            .times
            .get(name)
            .copied()
            .unwrap_or_default()
    }

    /// The log lines of a container so far.
    pub fn log(&self, namespace: &str, pod: &str, container: &str) -> Vec<String> {
        self.inner
            .lock()
            .logs
            .get(&(
                namespace.to_owned(),
                pod.to_owned(),
                container.to_owned(),
                false,
            ))
            .map(|b| b.lines.clone())
            .unwrap_or_default()
    }

    /// A handle on a pod for a test's own scripting (as the kubelet stand-in has), while it exists.
    pub fn pod_ctl(&self, namespace: &str, name: &str) -> Option<PodCtl> {
        let pod = self.pod(namespace, name)?;
        Some(PodCtl::new(self.inner.clone(), &pod))
    }

    /// Waits until `pred` holds of the fake (checked on every change), at most `within`; whether it held.
    pub async fn wait_for(&self, within: Duration, pred: impl Fn(&FakeKube) -> bool) -> bool {
        let mut rx = self.inner.changed.subscribe();
        let until = tokio::time::Instant::now() + within;
        loop {
            rx.borrow_and_update();
            if pred(self) {
                return true;
            }
            if tokio::time::timeout_at(until, rx.changed()).await.is_err() {
                return pred(self);
            }
        }
    }
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.inner.mutate(|st| {
            st.closed = true;
            for (_, k) in st.kubelets.drain() {
                k.abort();
            }
        });
    }
}

fn next_uid(st: &mut State, base: u64) -> String {
    st.seq += 1;
    format!(
        "{:08x}-{:04x}-4{:03x}-8000-{:012x}",
        0x6a72_3200_u64 + base,
        st.seq & 0xffff,
        st.seq & 0xfff,
        st.seq
    )
}

// ---------------------------------------------------------------------------------------------------------------
// HTTP.

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).boxed())
        .expect("valid response")
}

fn json_response(status: StatusCode, v: &Value) -> Response<Body> {
    full(status, "application/json", v.to_string())
}

/// The API server's `Status` answer.
fn status(code: u16, reason: &str, message: &str, details: Option<Value>) -> Response<Body> {
    let mut v = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code});
    if let Some(d) = details {
        v["details"] = d;
    }
    json_response(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &v,
    )
}

fn not_found(kind: Kind, name: &str) -> Response<Body> {
    status(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", kind.qualified()),
        Some(match kind.api_version().split_once('/') {
            Some((group, _)) => json!({"name": name, "group": group, "kind": kind.plural()}),
            None => json!({"name": name, "kind": kind.plural()}),
        }),
    )
}

fn streaming(
    content_type: &str,
) -> (
    Response<Body>,
    mpsc::Sender<Result<Frame<Bytes>, Infallible>>,
) {
    let (tx, mut rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(64);
    let body = StreamBody::new(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let response = Response::builder()
        .status(200)
        .header("content-type", content_type)
        .header("cache-control", "no-cache, private")
        .body(BodyExt::boxed(body))
        .expect("valid response");
    (response, tx)
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

async fn handle(req: Request<Incoming>, inner: Arc<Inner>) -> Result<Response<Body>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = parse_query(req.uri().query().unwrap_or(""));
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let recorded = Recorded {
        method: method.to_string(),
        path: path.clone(),
        query,
        body,
        at: Instant::now(),
    };
    inner.lock().requests.push(recorded.clone());
    Ok(route(&inner, &method, &recorded).await)
}

async fn route(inner: &Arc<Inner>, method: &Method, req: &Recorded) -> Response<Body> {
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["version"]) => json_response(
            StatusCode::OK,
            &json!({"major": "1", "minor": "35", "gitVersion": "v1.35.0", "gitCommit": "fake",
                    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0",
                    "compiler": "gc", "platform": "linux/amd64"}),
        ),
        ("GET", ["api"]) => json_response(
            StatusCode::OK,
            &json!({"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}),
        ),
        ("GET", ["api", "v1"]) => json_response(StatusCode::OK, &core_resources()),
        ("GET", ["apis"]) => json_response(
            StatusCode::OK,
            &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
                "name": "networking.k8s.io",
                "versions": [{"groupVersion": "networking.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "networking.k8s.io/v1", "version": "v1"}}, {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]}),
        ),
        ("GET", ["apis", "apps", "v1"]) => json_response(
            StatusCode::OK,
            &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                    "resources": [{"name": "deployments", "singularName": "deployment", "namespaced": true,
                                   "kind": "Deployment", "shortNames": ["deploy"], "categories": ["all"],
                                   "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}]}),
        ),
        ("GET", ["apis", "apps", "v1", "namespaces", ns, "deployments", name]) => {
            match inner.lock().get(Kind::Deployment, ns, name) {
                Some(d) => json_response(StatusCode::OK, d),
                None => not_found(Kind::Deployment, name),
            }
        }
        ("GET", ["apis", "networking.k8s.io", "v1"]) => json_response(
            StatusCode::OK,
            &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "networking.k8s.io/v1",
                    "resources": [{"name": "networkpolicies", "singularName": "networkpolicy", "namespaced": true,
                                   "kind": "NetworkPolicy", "shortNames": ["netpol"],
                                   "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}]}),
        ),
        ("GET", ["api", "v1", "pods"]) => collection(inner, Kind::Pod, None, req),
        ("GET", ["api", "v1", "events"]) => collection(inner, Kind::Event, None, req),
        ("GET", ["apis", "networking.k8s.io", "v1", "networkpolicies"]) => {
            collection(inner, Kind::NetworkPolicy, None, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods"]) => {
            collection(inner, Kind::Pod, Some(ns), req)
        }
        ("POST", ["api", "v1", "namespaces", ns, "pods"]) => create_pod(inner, ns, req),
        ("GET", ["api", "v1", "namespaces", ns, "pods", name])
        | ("GET", ["api", "v1", "namespaces", ns, "pods", name, "status"]) => {
            match inner.lock().get(Kind::Pod, ns, name) {
                Some(p) => json_response(StatusCode::OK, p),
                None => not_found(Kind::Pod, name),
            }
        }
        ("DELETE", ["api", "v1", "namespaces", ns, "pods", name]) => {
            delete_pod(inner, ns, name, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods", name, "log"]) => {
            pod_log(inner, ns, name, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "events"]) => {
            collection(inner, Kind::Event, Some(ns), req)
        }
        (
            "GET",
            [
                "apis",
                "networking.k8s.io",
                "v1",
                "namespaces",
                ns,
                "networkpolicies",
            ],
        ) => collection(inner, Kind::NetworkPolicy, Some(ns), req),
        _ => status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(
                json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}),
            ),
        ),
    }
}

fn core_resources() -> Value {
    let r = |name: &str, kind: &str, verbs: &[&str]| json!({"name": name, "singularName": "", "namespaced": true, "kind": kind, "verbs": verbs});
    json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        r("pods", "Pod", &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
        r("pods/log", "Pod", &["get"]),
        r("pods/status", "Pod", &["get", "patch", "update"]),
        r("events", "Event", &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
    ]})
}

// ---------------------------------------------------------------------------------------------------------------
// Selectors.

#[derive(Clone, Debug)]
enum Requirement {
    Eq(String, String),
    Ne(String, String),
    Exists(String),
    NotExists(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

/// A label or field selector.
#[derive(Clone, Debug, Default)]
struct Selector(Vec<Requirement>);

impl Selector {
    fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in text.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    parts.push(&text[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(&text[start..]);
        let mut reqs = Vec::new();
        for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
            let set = |op: &str| -> Option<(String, Vec<String>)> {
                let (k, rest) = part.split_once(op)?;
                let values = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
                Some((
                    k.trim().to_owned(),
                    values
                        .split(',')
                        .map(|v| v.trim().to_owned())
                        .filter(|v| !v.is_empty())
                        .collect(),
                ))
            };
            let req = if let Some((k, v)) = set(" notin ") {
                Requirement::NotIn(k, v)
            } else if let Some((k, v)) = set(" in ") {
                Requirement::In(k, v)
            } else if let Some((k, v)) = part.split_once("!=") {
                Requirement::Ne(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once("==") {
                Requirement::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some((k, v)) = part.split_once('=') {
                Requirement::Eq(k.trim().to_owned(), v.trim().to_owned())
            } else if let Some(k) = part.strip_prefix('!') {
                Requirement::NotExists(k.trim().to_owned())
            } else if part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
            {
                Requirement::Exists(part.to_owned())
            } else {
                return Err(format!("unable to parse requirement: {part:?}"));
            };
            reqs.push(req);
        }
        Ok(Self(reqs))
    }

    fn matches_with(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Eq(k, v) => get(k).as_deref() == Some(v.as_str()),
            Requirement::Ne(k, v) => get(k).as_deref() != Some(v.as_str()),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
        })
    }

    fn matches_labels(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.matches_with(|k| labels.get(k).and_then(Value::as_str).map(str::to_owned))
    }

    /// A field selector: a dotted path into the object; a missing field reads as `""`, as the API server's does.
    fn matches_fields(&self, object: &Value) -> bool {
        self.matches_with(|path| {
            let v = path
                .split('.')
                .try_fold(object, |v, seg| v.get(seg))
                .unwrap_or(&Value::Null);
            Some(match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            })
        })
    }
}

struct Filter {
    kind: Kind,
    ns: Option<String>,
    labels: Selector,
    fields: Selector,
}

impl Filter {
    fn from_request(kind: Kind, ns: Option<&str>, req: &Recorded) -> Result<Self, String> {
        Ok(Self {
            kind,
            ns: ns.map(str::to_owned),
            labels: Selector::parse(req.q("labelSelector").unwrap_or(""))?,
            fields: Selector::parse(req.q("fieldSelector").unwrap_or(""))?,
        })
    }

    fn matches(&self, kind: Kind, object: &Value) -> bool {
        kind == self.kind
            && self
                .ns
                .as_deref()
                .is_none_or(|ns| object["metadata"]["namespace"] == ns)
            && self.labels.matches_labels(object)
            && self.fields.matches_fields(object)
    }
}

// ---------------------------------------------------------------------------------------------------------------
// List and watch.

fn collection(inner: &Arc<Inner>, kind: Kind, ns: Option<&str>, req: &Recorded) -> Response<Body> {
    let filter = match Filter::from_request(kind, ns, req) {
        Ok(f) => f,
        Err(e) => return status(400, "BadRequest", &e, None),
    };
    if req.is_watch() {
        return watch_response(inner, filter, req);
    }
    let st = inner.lock();
    let items: Vec<Value> = st
        .objects
        .iter()
        .filter(|((k, _, _), v)| filter.matches(*k, v))
        .map(|(_, v)| v.clone())
        .collect();
    json_response(
        StatusCode::OK,
        &json!({"apiVersion": kind.api_version(), "kind": format!("{}List", kind.kind()),
                "metadata": {"resourceVersion": st.rv.to_string()}, "items": items}),
    )
}

fn watch_line(type_: &str, object: &Value) -> Bytes {
    Bytes::from(format!("{}\n", json!({"type": type_, "object": object})))
}

fn bookmark(kind: Kind, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    watch_line(
        "BOOKMARK",
        &json!({"kind": kind.kind(), "apiVersion": kind.api_version(), "metadata": meta}),
    )
}

fn watch_response(inner: &Arc<Inner>, filter: Filter, req: &Recorded) -> Response<Body> {
    let from = req.q("resourceVersion").unwrap_or("");
    let from: Option<u64> = match from {
        "" | "0" => None,
        v => match v.parse() {
            Ok(n) => Some(n),
            Err(_) => {
                return status(
                    400,
                    "BadRequest",
                    &format!("invalid resource version: {v}"),
                    None,
                );
            }
        },
    };
    let initial_events = req.q("sendInitialEvents") == Some("true");
    let bookmarks = req.q("allowWatchBookmarks") == Some("true");
    let timeout = req
        .q("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);
    let (response, tx) = streaming("application/json");
    let inner = inner.clone();
    tokio::spawn(async move {
        let send = |b: Bytes| {
            let tx = tx.clone();
            async move { tx.send(Ok(Frame::data(b))).await.is_ok() }
        };
        let mut rx = inner.changed.subscribe();
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let every = (*inner
            .bookmark_every
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
        .max(Duration::from_millis(10));
        // Where the stream starts: the current objects as ADDED, or after a version; or 410 for a version compacted.
        let start: Result<(u64, Vec<Bytes>), Bytes> = {
            let st = inner.lock();
            match from {
                Some(rv) if rv < st.compacted => {
                    let message = format!("too old resource version: {rv} ({})", st.compacted);
                    Err(watch_line(
                        "ERROR",
                        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                "message": message, "reason": "Expired", "code": 410}),
                    ))
                }
                Some(rv) if !initial_events => Ok((rv, Vec::new())),
                _ => {
                    let mut out: Vec<Bytes> = st
                        .objects
                        .iter()
                        .filter(|((k, _, _), v)| filter.matches(*k, v))
                        .map(|(_, v)| watch_line("ADDED", v))
                        .collect();
                    if initial_events {
                        out.push(bookmark(filter.kind, st.rv, true));
                    }
                    Ok((st.rv, out))
                }
            }
        };
        let mut cursor = match start {
            Ok((cursor, out)) => {
                for b in out {
                    if !send(b).await {
                        return;
                    }
                }
                cursor
            }
            Err(expired) => {
                send(expired).await;
                return;
            }
        };
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            rx.borrow_and_update();
            let (lines, closed) = {
                let st = inner.lock();
                let from_at = st.history.partition_point(|c| c.rv <= cursor);
                let lines: Vec<Bytes> = st.history[from_at..]
                    .iter()
                    .filter(|c| filter.matches(c.kind, &c.object))
                    .map(|c| watch_line(c.type_, &c.object))
                    .collect();
                cursor = cursor.max(st.rv);
                (lines, st.closed)
            };
            for b in lines {
                if !send(b).await {
                    return;
                }
            }
            if closed {
                return;
            }
            let until = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = rx.changed() => {}
                () = until => return,
                _ = tick.tick() => {
                    if bookmarks {
                        // Every change up to `cursor` was sent; deliver the rest first, then mark.
                        let pending = {
                            let st = inner.lock();
                            st.history.last().is_some_and(|c| c.rv > cursor)
                        };
                        if !pending && !send(bookmark(filter.kind, cursor, false)).await {
                            return;
                        }
                    }
                }
                () = tx.closed() => return,
            }
        }
    });
    response
}

// ---------------------------------------------------------------------------------------------------------------
// Pods.

fn create_pod(inner: &Arc<Inner>, ns: &str, req: &Recorded) -> Response<Body> {
    let mut pod = req.body.clone();
    if !pod.is_object() {
        return status(
            400,
            "BadRequest",
            "the object provided is unrecognized (must be of type Pod)",
            None,
        );
    }
    let Some(name) = pod["metadata"]["name"].as_str().map(str::to_owned) else {
        return status(
            422,
            "Invalid",
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required",
            Some(
                json!({"kind": "Pod", "causes": [{"reason": "FieldValueRequired",
                    "message": "Required value: name or generateName is required", "field": "metadata.name"}]}),
            ),
        );
    };
    if let Some(other) = pod["metadata"]["namespace"].as_str()
        && other != ns
    {
        return status(
            400,
            "BadRequest",
            "the namespace of the provided object does not match the namespace sent on the request",
            None,
        );
    }
    let base = inner.uid_base;
    let created = inner.mutate(|st| {
        if let Some((code, reason, message)) = st.refusal.clone() {
            return Err(Box::new(status(
                code,
                &reason,
                &message,
                Some(json!({"name": name, "kind": "pods"})),
            )));
        }
        if st.get(Kind::Pod, ns, &name).is_some() {
            return Err(Box::new(status(
                409,
                "AlreadyExists",
                &format!("pods \"{name}\" already exists"),
                Some(json!({"name": name, "kind": "pods"})),
            )));
        }
        let uid = next_uid(st, base);
        let meta = &mut pod["metadata"];
        meta["namespace"] = json!(ns);
        meta["uid"] = json!(uid);
        meta["creationTimestamp"] = json!(rfc3339(SystemTime::now()));
        meta["generation"] = json!(1);
        pod["status"] = json!({"phase": "Pending", "qosClass": "Burstable"});
        let stored = st.put(Kind::Pod, pod, "ADDED");
        st.created.push(name.clone());
        st.times.entry(name.clone()).or_default().created = Some(Instant::now());
        Ok(stored)
    });
    match created {
        Ok(stored) => {
            let scenario = inner
                .scenario
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            let ctl = PodCtl::new(inner.clone(), &stored);
            let task = tokio::spawn(kubelet(ctl, scenario));
            let mut st = inner.lock();
            if st.closed {
                task.abort();
            } else {
                st.kubelets.insert((ns.to_owned(), name), task);
            }
            json_response(StatusCode::CREATED, &stored)
        }
        Err(response) => *response,
    }
}

fn delete_pod(inner: &Arc<Inner>, ns: &str, name: &str, req: &Recorded) -> Response<Body> {
    let grace = req.body["gracePeriodSeconds"]
        .as_i64()
        .or_else(|| req.q("gracePeriodSeconds").and_then(|g| g.parse().ok()))
        .unwrap_or(30);
    let pre_uid = req.body["preconditions"]["uid"].as_str().map(str::to_owned);
    let pre_rv = req.body["preconditions"]["resourceVersion"]
        .as_str()
        .map(str::to_owned);
    let result = inner.mutate(|st| {
        let Some(pod) = st.get(Kind::Pod, ns, name).cloned() else {
            return Err(Box::new(not_found(Kind::Pod, name)));
        };
        let conflict = |what: &str, want: &str, have: &str| {
            status(
                409,
                "Conflict",
                &format!(
                    "Operation cannot be fulfilled on pods \"{name}\": Precondition failed: {what} in precondition: {want}, {what} in object meta: {have}"
                ),
                Some(json!({"name": name, "kind": "pods"})),
            )
        };
        let uid = pod["metadata"]["uid"].as_str().unwrap_or("").to_owned();
        if let Some(want) = &pre_uid
            && *want != uid
        {
            return Err(Box::new(conflict("UID", want, &uid)));
        }
        let rv = pod["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if let Some(want) = &pre_rv
            && *want != rv
        {
            return Err(Box::new(conflict("ResourceVersion", want, &rv)));
        }
        if let Some(k) = st.kubelets.remove(&(ns.to_owned(), name.to_owned())) {
            k.abort();
        }
        for (key, buf) in st.logs.iter_mut() {
            if key.0 == ns && key.1 == name {
                buf.closed = true;
            }
        }
        st.times.entry(name.to_owned()).or_default().deleted = Some(Instant::now());
        st.deleted.push(name.to_owned());
        let mut marked = pod;
        if marked["metadata"]["deletionTimestamp"].is_null() {
            marked["metadata"]["deletionTimestamp"] = json!(rfc3339(SystemTime::now()));
        }
        marked["metadata"]["deletionGracePeriodSeconds"] = json!(grace);
        if grace == 0 {
            st.objects
                .insert((Kind::Pod, ns.to_owned(), name.to_owned()), marked);
            Ok((st.remove(Kind::Pod, ns, name).unwrap_or_default(), false))
        } else {
            Ok((st.put(Kind::Pod, marked, "MODIFIED"), true))
        }
    });
    match result {
        Ok((object, later)) => {
            if later {
                // The kubelet stopped the containers at once; the pod goes a moment later.
                let inner = inner.clone();
                let (ns, name) = (ns.to_owned(), name.to_owned());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    inner.mutate(|st| st.remove(Kind::Pod, &ns, &name));
                });
            }
            json_response(StatusCode::OK, &object)
        }
        Err(response) => *response,
    }
}

fn pod_log(inner: &Arc<Inner>, ns: &str, name: &str, req: &Recorded) -> Response<Body> {
    let previous = matches!(req.q("previous"), Some("true" | "1"));
    let follow = matches!(req.q("follow"), Some("true" | "1"));
    let tail: Option<usize> = req.q("tailLines").and_then(|t| t.parse().ok());
    let limit: Option<usize> = req.q("limitBytes").and_then(|t| t.parse().ok());
    let (container, lines, closed) = {
        let st = inner.lock();
        let Some(pod) = st.get(Kind::Pod, ns, name) else {
            return not_found(Kind::Pod, name);
        };
        let spec_names = |list: &str| -> Vec<String> {
            pod["spec"][list]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["name"].as_str().map(str::to_owned))
                .collect()
        };
        let (containers, inits) = (spec_names("containers"), spec_names("initContainers"));
        let container = match req.q("container") {
            Some(c) => c.to_owned(),
            None if containers.len() == 1 && inits.is_empty() => containers[0].clone(),
            None => {
                return status(
                    400,
                    "BadRequest",
                    &format!(
                        "a container name must be specified for pod {name}, choose one of: [{}] or one of the init containers: [{}]",
                        containers.join(" "),
                        inits.join(" ")
                    ),
                    None,
                );
            }
        };
        if !containers.contains(&container) && !inits.contains(&container) {
            return status(
                400,
                "BadRequest",
                &format!("container {container} is not valid for pod {name}"),
                None,
            );
        }
        let key = (ns.to_owned(), name.to_owned(), container.clone(), previous);
        let Some(buf) = st.logs.get(&key) else {
            let message = if previous {
                format!("previous terminated container \"{container}\" in pod \"{name}\" not found")
            } else {
                let reason = container_status(pod, &container)
                    .and_then(|s| s["state"]["waiting"]["reason"].as_str().map(str::to_owned))
                    .unwrap_or_else(|| "ContainerCreating".to_owned());
                format!("container \"{container}\" in pod \"{name}\" is waiting to start: {reason}")
            };
            return status(400, "BadRequest", &message, None);
        };
        (container, buf.lines.clone(), buf.closed)
    };
    let mut start = 0;
    if let Some(t) = tail {
        start = lines.len().saturating_sub(t);
    }
    if !follow || closed {
        let mut text: String = lines[start..].iter().map(|l| format!("{l}\n")).collect();
        if let Some(l) = limit {
            let mut cut = l.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        return full(StatusCode::OK, "text/plain", text);
    }
    let (response, tx) = streaming("text/plain");
    let inner = inner.clone();
    let key = (ns.to_owned(), name.to_owned(), container, false);
    tokio::spawn(async move {
        let mut rx = inner.changed.subscribe();
        let mut sent = start;
        loop {
            rx.borrow_and_update();
            let (new, closed) = {
                let st = inner.lock();
                match st.logs.get(&key) {
                    Some(buf) => (
                        buf.lines.get(sent..).unwrap_or_default().to_vec(),
                        buf.closed || st.closed,
                    ),
                    None => (Vec::new(), true),
                }
            };
            sent += new.len();
            if !new.is_empty() {
                let chunk: String = new.iter().map(|l| format!("{l}\n")).collect();
                if tx.send(Ok(Frame::data(Bytes::from(chunk)))).await.is_err() {
                    return;
                }
            }
            if closed {
                return;
            }
            tokio::select! {
                _ = rx.changed() => {}
                () = tx.closed() => return,
            }
        }
    });
    response
}

fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|list| pod["status"][*list].as_array())
        .flatten()
        .find(|s| s["name"] == container)
}

// ---------------------------------------------------------------------------------------------------------------
// The kubelet stand-in.

/// A handle on one pod, as the kubelet stand-in (or a test's [`Script`]) drives it: every method writes the pod's
/// status or an Event as a 1.35 kubelet would, and wakes the watchers.
#[derive(Clone)]
pub struct PodCtl {
    inner: Arc<Inner>,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The pod's uid.
    pub uid: String,
    /// The pod as created.
    pub pod: Value,
}

impl PodCtl {
    fn new(inner: Arc<Inner>, pod: &Value) -> Self {
        let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        Self {
            namespace: s(&pod["metadata"]["namespace"]),
            name: s(&pod["metadata"]["name"]),
            uid: s(&pod["metadata"]["uid"]),
            pod: pod.clone(),
            inner,
        }
    }

    /// The probe binary the stand-in runs.
    pub fn probe_bin(&self) -> &Path {
        &self.inner.probe_bin
    }

    /// A container of the pod's spec (`containers` or `initContainers`).
    pub fn container_spec(&self, name: &str) -> Option<&Value> {
        ["containers", "initContainers"]
            .iter()
            .filter_map(|list| self.pod["spec"][*list].as_array())
            .flatten()
            .find(|c| c["name"] == name)
    }

    /// The sidecars (`initContainers` with `restartPolicy: Always`): the Custodian.
    pub fn sidecars(&self) -> Vec<String> {
        self.pod["spec"]["initContainers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["restartPolicy"] == "Always")
            .filter_map(|c| c["name"].as_str().map(str::to_owned))
            .collect()
    }

    fn image(&self, container: &str) -> String {
        self.container_spec(container)
            .and_then(|c| c["image"].as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// Changes the pod as it is now (`false`: it is gone).
    pub fn update(&self, f: impl FnOnce(&mut Value)) -> bool {
        let key = (Kind::Pod, self.namespace.clone(), self.name.clone());
        self.inner.mutate(|st| {
            let Some(mut pod) = st.objects.get(&key).cloned() else {
                return false;
            };
            if pod["metadata"]["uid"] != self.uid.as_str() {
                return false;
            }
            f(&mut pod);
            st.put(Kind::Pod, pod, "MODIFIED");
            true
        })
    }

    /// Sets a pod condition (replacing one of that type).
    pub fn condition(
        &self,
        type_: &str,
        status: &str,
        reason: Option<&str>,
        message: Option<&str>,
    ) {
        let now = rfc3339(SystemTime::now());
        self.update(|pod| set_condition(pod, type_, status, reason, message, &now));
    }

    /// Sets the pod's phase.
    pub fn phase(&self, phase: &str) {
        self.update(|pod| pod["status"]["phase"] = json!(phase));
    }

    /// Sets a container's status: `state` is `{"waiting": ...}`, `{"running": ...}` or `{"terminated": ...}`.
    pub fn container(&self, name: &str, state: Value, ready: bool) {
        let image = self.image(name);
        let list = if self.pod["spec"]["initContainers"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["name"] == name))
        {
            "initContainerStatuses"
        } else {
            "containerStatuses"
        };
        let started = state.get("running").is_some();
        let id = state
            .get("waiting")
            .is_none()
            .then(|| container_id(&self.uid, name));
        self.update(|pod| {
            let mut s = json!({"name": name, "image": image, "imageID": "", "ready": ready, "started": started,
                               "restartCount": 0, "state": state});
            if let Some(id) = id {
                s["containerID"] = json!(id);
                s["imageID"] = json!(image_id(&image));
            }
            let statuses = pod["status"][list].as_array_mut();
            match statuses {
                Some(arr) => match arr.iter_mut().find(|c| c["name"] == name) {
                    Some(c) => *c = s,
                    None => arr.push(s),
                },
                None => pod["status"][list] = json!([s]),
            }
        });
    }

    /// Records an Event about this pod (a repeated one, same reason and message, counts up), from `component`
    /// (`kubelet`, `default-scheduler`).
    pub fn event(&self, type_: &str, reason: &str, message: &str, component: &str) {
        let base = self.inner.uid_base;
        let now = rfc3339(SystemTime::now());
        let pod_rv = self
            .inner
            .lock()
            .get(Kind::Pod, &self.namespace, &self.name)
            .map(|p| p["metadata"]["resourceVersion"].clone())
            .unwrap_or(Value::Null);
        self.inner.mutate(|st| {
            let existing = st
                .objects
                .iter()
                .find(|((k, ns, _), e)| {
                    *k == Kind::Event
                        && *ns == self.namespace
                        && e["involvedObject"]["uid"] == self.uid.as_str()
                        && e["reason"] == reason
                        && e["message"] == message
                })
                .map(|(_, e)| e.clone());
            match existing {
                Some(mut e) => {
                    e["count"] = json!(e["count"].as_u64().unwrap_or(1) + 1);
                    e["lastTimestamp"] = json!(now);
                    st.put(Kind::Event, e, "MODIFIED");
                }
                None => {
                    let uid = next_uid(st, base);
                    st.seq += 1;
                    let e = json!({
                        "metadata": {"name": format!("{}.{:016x}", self.name, 0x1880_0000_0000_0000_u64 + st.seq),
                                     "namespace": self.namespace, "uid": uid, "creationTimestamp": now},
                        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": self.name,
                                           "namespace": self.namespace, "uid": self.uid, "resourceVersion": pod_rv},
                        "reason": reason, "message": message, "type": type_, "count": 1,
                        "firstTimestamp": now, "lastTimestamp": now,
                        "source": {"component": component, "host": if component == "kubelet" { NODE } else { "" }},
                        "reportingComponent": component,
                        "reportingInstance": if component == "kubelet" { NODE } else { "" }
                    });
                    st.put(Kind::Event, e, "ADDED");
                }
            }
        });
    }

    /// Opens a container's log (the container started): a log request is answered from now on.
    pub fn open_log(&self, container: &str) {
        let key = self.log_key(container);
        self.inner.mutate(|st| {
            st.logs.entry(key).or_default();
        });
    }

    /// Appends a line to a container's log.
    pub fn log_line(&self, container: &str, line: &str) {
        let key = self.log_key(container);
        self.inner.mutate(|st| {
            let buf = st.logs.entry(key).or_default();
            if !buf.closed {
                buf.lines.push(line.to_owned());
            }
        });
    }

    /// Ends a container's log: a followed stream ends.
    pub fn close_log(&self, container: &str) {
        let key = self.log_key(container);
        self.inner
            .mutate(|st| st.logs.entry(key).or_default().closed = true);
    }

    /// Sets a container's previous log (what `previous=true` reads), as after a restart.
    pub fn previous_log(&self, container: &str, lines: &[&str]) {
        let mut key = self.log_key(container);
        key.3 = true;
        self.inner.mutate(|st| {
            st.logs.insert(
                key,
                LogBuf {
                    lines: lines.iter().map(|l| (*l).to_owned()).collect(),
                    closed: true,
                },
            );
        });
    }

    fn log_key(&self, container: &str) -> LogKey {
        (
            self.namespace.clone(),
            self.name.clone(),
            container.to_owned(),
            false,
        )
    }

    fn times(&self, f: impl FnOnce(&mut PodTimes)) {
        f(self
            .inner
            .lock()
            .times
            .entry(self.name.clone())
            .or_default());
    }

    /// The scheduler places the pod: `spec.nodeName`, `PodScheduled=True`, its `Scheduled` Event; the kubelet
    /// accepts it (`startTime`, the containers waiting).
    pub fn schedule(&self) {
        let now = rfc3339(SystemTime::now());
        let sidecars = self.sidecars();
        self.update(|pod| {
            pod["spec"]["nodeName"] = json!(NODE);
            set_condition(pod, "PodScheduled", "True", None, None, &now);
        });
        self.event(
            "Normal",
            "Scheduled",
            &format!(
                "Successfully assigned {}/{} to {NODE}",
                self.namespace, self.name
            ),
            "default-scheduler",
        );
        self.update(|pod| {
            let st = &mut pod["status"];
            st["hostIP"] = json!("172.18.0.3");
            st["hostIPs"] = json!([{"ip": "172.18.0.3"}]);
            st["startTime"] = json!(now);
            set_condition(pod, "PodReadyToStartContainers", "False", None, None, &now);
            set_condition(
                pod,
                "Initialized",
                if sidecars.is_empty() { "True" } else { "False" },
                (!sidecars.is_empty()).then_some("ContainersNotInitialized"),
                (!sidecars.is_empty())
                    .then(|| {
                        format!(
                            "containers with incomplete status: [{}]",
                            sidecars.join(" ")
                        )
                    })
                    .as_deref(),
                &now,
            );
            set_condition(
                pod,
                "Ready",
                "False",
                Some("ContainersNotReady"),
                Some("containers with unready status: [probe]"),
                &now,
            );
            set_condition(
                pod,
                "ContainersReady",
                "False",
                Some("ContainersNotReady"),
                Some("containers with unready status: [probe]"),
                &now,
            );
        });
        for s in &sidecars {
            self.container(
                s,
                json!({"waiting": {"reason": "ContainerCreating"}}),
                false,
            );
        }
        let waiting = if sidecars.is_empty() {
            "ContainerCreating"
        } else {
            "PodInitializing"
        };
        self.container("probe", json!({"waiting": {"reason": waiting}}), false);
    }

    /// The scheduler cannot place the pod: `PodScheduled=False`, `Unschedulable`, and its `FailedScheduling` Event.
    pub fn unschedulable(&self, message: &str) {
        self.condition(
            "PodScheduled",
            "False",
            Some("Unschedulable"),
            Some(message),
        );
        self.event("Warning", "FailedScheduling", message, "default-scheduler");
    }

    /// The sidecars' volumes mount and they start (`Pulled`, `Created`, `Started`), running and ready; the pod is
    /// initialized.
    pub fn start_sidecars(&self) {
        let now = rfc3339(SystemTime::now());
        self.update(|pod| {
            set_condition(pod, "PodReadyToStartContainers", "True", None, None, &now);
        });
        for s in self.sidecars() {
            self.started_events(&s);
            self.open_log(&s);
            self.container(&s, json!({"running": {"startedAt": now}}), true);
        }
        self.update(|pod| set_condition(pod, "Initialized", "True", None, None, &now));
        self.container(
            "probe",
            json!({"waiting": {"reason": "ContainerCreating"}}),
            false,
        );
    }

    fn started_events(&self, container: &str) {
        let image = self.image(container);
        self.event(
            "Normal",
            "Pulled",
            &format!("Container image \"{image}\" already present on machine"),
            "kubelet",
        );
        self.event(
            "Normal",
            "Created",
            &format!("Created container: {container}"),
            "kubelet",
        );
        self.event(
            "Normal",
            "Started",
            &format!("Started container {container}"),
            "kubelet",
        );
    }

    /// Runs the real probe as the probe container: the pod's args (the termination log in a temporary file) and
    /// env (the node's name for a `spec.nodeName` fieldRef), its stdout and stderr lines as the log as they come;
    /// then the container's `terminated` status, the pod's phase, and the sidecars stopped. See [`ProbeRun`] for an
    /// OOM kill and a lost log.
    pub async fn run_probe(&self, how: ProbeRun) -> ProbeExit {
        let spec = self.container_spec("probe").cloned().unwrap_or(Value::Null);
        let term = std::env::temp_dir().join(format!(
            "jr2-fake-kube-{}-{}-{}.termination-log",
            std::process::id(),
            self.name,
            self.uid
        ));
        let _ = std::fs::remove_file(&term);
        let args = probe_args(&spec, &term);
        let env = self.probe_env(&spec);
        let mut cmd = tokio::process::Command::new(&self.inner.probe_bin);
        cmd.args(&args)
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let started_at = rfc3339(SystemTime::now());
        self.started_events("probe");
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                let message = format!(
                    "failed to create containerd task: failed to start {}: {e}",
                    self.inner.probe_bin.display()
                );
                self.terminated("probe", "StartError", 128, &message, &started_at);
                self.finish();
                return ProbeExit {
                    exit_code: 128,
                    message,
                    oom_killed: false,
                };
            }
        };
        self.open_log("probe");
        self.times(|t| t.probe_started = Some(Instant::now()));
        let now = rfc3339(SystemTime::now());
        self.container("probe", json!({"running": {"startedAt": started_at}}), true);
        self.update(|pod| {
            pod["status"]["phase"] = json!("Running");
            pod["status"]["podIP"] = json!("10.244.1.23");
            pod["status"]["podIPs"] = json!([{"ip": "10.244.1.23"}]);
            set_condition(pod, "Ready", "True", None, None, &now);
            set_condition(pod, "ContainersReady", "True", None, None, &now);
        });

        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let published = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let publish = {
            let ctl = self.clone();
            let published = published.clone();
            move |line: &str| {
                let n = published.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if how.log_lines.is_none_or(|max| n < max) {
                    ctl.log_line("probe", line);
                    if line.contains("\"event\":\"summary\"") {
                        ctl.times(|t| t.probe_summary_logged = Some(Instant::now()));
                    }
                }
            }
        };
        let err_publish = publish.clone();
        let err_pump = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                err_publish(&line);
            }
        });
        let mut lines = BufReader::new(stdout).lines();
        let mut killed = false;
        while let Ok(Some(line)) = lines.next_line().await {
            let is_result = line.contains("\"event\":\"result\"");
            publish(&line);
            if how.oom_after_first_result && is_result && !killed {
                killed = true;
                let _ = child.start_kill();
            }
        }
        let status = child.wait().await;
        let _ = err_pump.await;
        self.times(|t| t.probe_exited = Some(Instant::now()));
        let message = std::fs::read(&term)
            .map(|mut b| {
                b.truncate(TERMINATION_MESSAGE_LIMIT);
                String::from_utf8_lossy(&b).into_owned()
            })
            .unwrap_or_default();
        let _ = std::fs::remove_file(&term);
        let exit_code = if killed {
            137
        } else {
            match status {
                Ok(s) => s.code().unwrap_or(137),
                Err(_) => 137,
            }
        };
        let reason = match (killed, exit_code) {
            (true, _) => "OOMKilled",
            (false, 0) => "Completed",
            _ => "Error",
        };
        // The container's output ends with it; the kubelet's status update follows.
        self.close_log("probe");
        self.terminated("probe", reason, exit_code, &message, &started_at);
        self.finish();
        ProbeExit {
            exit_code,
            message,
            oom_killed: killed,
        }
    }

    /// Sets a container `terminated`.
    pub fn terminated(
        &self,
        container: &str,
        reason: &str,
        exit_code: i32,
        message: &str,
        started_at: &str,
    ) {
        let mut t = json!({"exitCode": exit_code, "reason": reason, "startedAt": started_at,
                           "finishedAt": rfc3339(SystemTime::now())});
        if !message.is_empty() {
            t["message"] = json!(message);
        }
        let phase = if exit_code == 0 {
            "Succeeded"
        } else {
            "Failed"
        };
        let now = rfc3339(SystemTime::now());
        let image = self.image(container);
        let key = (Kind::Pod, self.namespace.clone(), self.name.clone());
        // One status write: the container terminated, and the pod's phase with it (restartPolicy Never; the sidecars
        // do not count).
        self.inner.mutate(|st| {
            let Some(mut pod) = st.objects.get(&key).cloned() else {
                return;
            };
            if pod["metadata"]["uid"] != self.uid.as_str() {
                return;
            }
            let s = json!({"name": container, "image": image, "imageID": image_id(&image),
                           "containerID": container_id(&self.uid, container), "ready": false, "started": false,
                           "restartCount": 0, "state": {"terminated": t}});
            match pod["status"]["containerStatuses"].as_array_mut() {
                Some(arr) => match arr.iter_mut().find(|c| c["name"] == container) {
                    Some(c) => *c = s,
                    None => arr.push(s),
                },
                None => pod["status"]["containerStatuses"] = json!([s]),
            }
            if container == "probe" {
                // Recorded before the watchers are woken.
                st.times.entry(self.name.clone()).or_default().probe_terminated = Some(Instant::now());
                pod["status"]["phase"] = json!(phase);
                set_condition(&mut pod, "Ready", "False", Some("PodCompleted"), None, &now);
                set_condition(&mut pod, "ContainersReady", "False", Some("PodCompleted"), None, &now);
            }
            st.put(Kind::Pod, pod, "MODIFIED");
        });
    }

    /// The regular containers are done: the kubelet stops the sidecars (`Killing`), and they end.
    fn finish(&self) {
        for s in self.sidecars() {
            self.event(
                "Normal",
                "Killing",
                &format!("Stopping container {s}"),
                "kubelet",
            );
            self.close_log(&s);
            let started = self
                .inner
                .lock()
                .get(Kind::Pod, &self.namespace, &self.name)
                .and_then(|p| container_status(p, &s).cloned())
                .and_then(|c| {
                    c["state"]["running"]["startedAt"]
                        .as_str()
                        .map(str::to_owned)
                })
                .unwrap_or_default();
            let now = rfc3339(SystemTime::now());
            self.container(
                &s,
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now}}),
                false,
            );
        }
        let now = rfc3339(SystemTime::now());
        self.update(|pod| {
            set_condition(pod, "PodReadyToStartContainers", "False", None, None, &now);
        });
    }

    /// The probe container's env as the kubelet resolves it, for this test process: literal values, the downward
    /// API's pod fields; Secret, ConfigMap and resource references are left out (`envFrom` too).
    fn probe_env(&self, spec: &Value) -> Vec<(String, String)> {
        let secrets = self.inner.lock().secrets.clone();
        let secret =
            |name: &Value| secrets.get(&(self.namespace.clone(), name.as_str()?.to_owned()));
        // As a kubelet: `envFrom` first (each key of the Secret, with its prefix), then `env`, which wins.
        let mut env = Vec::new();
        for from in spec["envFrom"].as_array().into_iter().flatten() {
            let prefix = from["prefix"].as_str().unwrap_or_default();
            for (k, v) in secret(&from["secretRef"]["name"]).into_iter().flatten() {
                env.push((format!("{prefix}{k}"), v.clone()));
            }
        }
        for e in spec["env"].as_array().into_iter().flatten() {
            let Some(name) = e["name"].as_str() else {
                continue;
            };
            if let Some(v) = e["value"].as_str() {
                env.push((name.to_owned(), v.to_owned()));
                continue;
            }
            if let Some(path) = e["valueFrom"]["fieldRef"]["fieldPath"].as_str() {
                let v = match path {
                    "spec.nodeName" => NODE.to_owned(),
                    "metadata.name" => self.name.clone(),
                    "metadata.namespace" => self.namespace.clone(),
                    "metadata.uid" => self.uid.clone(),
                    "status.podIP" => "10.244.1.23".to_owned(),
                    "status.hostIP" => "172.18.0.3".to_owned(),
                    _ => continue,
                };
                env.push((name.to_owned(), v));
            } else if let Some(r) = e["valueFrom"].get("secretKeyRef") {
                if let Some(v) = secret(&r["name"]).and_then(|s| s.get(r["key"].as_str()?)) {
                    env.push((name.to_owned(), v.clone()));
                }
            } else if e.get("valueFrom").is_none() {
                // No value at all: the empty string. (`valueFrom` a ConfigMap or a resource: left out.)
                env.push((name.to_owned(), String::new()));
            }
        }
        env
    }
}

/// FNV-1a, for ids that look like the runtime's and stay the same for the same input.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in parts.iter().flat_map(|p| p.bytes().chain([0])) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn container_id(uid: &str, container: &str) -> String {
    let h = fnv(&[uid, container]);
    format!(
        "containerd://{h:016x}{:016x}{h:016x}{:016x}",
        !h,
        h.rotate_left(17)
    )
}

fn image_id(image: &str) -> String {
    let h = fnv(&[image]);
    format!(
        "{image}@sha256:{h:016x}{:016x}{h:016x}{:016x}",
        !h,
        h.rotate_left(29)
    )
}

fn set_condition(
    pod: &mut Value,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    message: Option<&str>,
    now: &str,
) {
    let mut c =
        json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": now});
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    match pod["status"]["conditions"].as_array_mut() {
        Some(arr) => match arr.iter_mut().find(|x| x["type"] == type_) {
            Some(x) => {
                if x["status"] == status {
                    c["lastTransitionTime"] = x["lastTransitionTime"].clone();
                }
                *x = c;
            }
            None => arr.push(c),
        },
        None => pod["status"]["conditions"] = json!([c]),
    }
}

/// The probe container's args, with `--termination-log` pointed at `term` (added when absent).
fn probe_args(spec: &Value, term: &Path) -> Vec<String> {
    let mut args: Vec<String> = spec["args"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    let term = term.to_string_lossy().into_owned();
    if let Some(i) = args.iter().position(|a| a == "--termination-log") {
        if i + 1 < args.len() {
            args[i + 1] = term;
        } else {
            args.push(term);
        }
    } else if let Some(a) = args
        .iter_mut()
        .find(|a| a.starts_with("--termination-log="))
    {
        *a = format!("--termination-log={term}");
    } else {
        args.push("--termination-log".to_owned());
        args.push(term);
    }
    args
}

async fn kubelet(ctl: PodCtl, scenario: Scenario) {
    tokio::time::sleep(Duration::from_millis(5)).await;
    match scenario {
        Scenario::Nothing => {}
        Scenario::AllOk => {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun::default()).await;
        }
        Scenario::OomKilledAfterFirstResult => {
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun {
                oom_after_first_result: true,
                log_lines: None,
            })
            .await;
        }
        Scenario::UnschedulableThenScheduled { messages, each } => {
            for m in &messages {
                ctl.unschedulable(m);
                tokio::time::sleep(each).await;
            }
            ctl.schedule();
            ctl.start_sidecars();
            ctl.run_probe(ProbeRun::default()).await;
        }
        Scenario::ImagePullBackOff => {
            ctl.schedule();
            ctl.start_sidecars();
            let image = ctl.image("probe");
            let error = format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"
            );
            ctl.event(
                "Normal",
                "Pulling",
                &format!("Pulling image \"{image}\""),
                "kubelet",
            );
            // The kubelet's words (pkg/kubelet/images/image_manager.go, 1.32+): the Event says "Failed to pull
            // image", the status carries the runtime's error; the back-off's status appends the last pull error.
            let failed = format!("Failed to pull image \"{image}\": {error}");
            ctl.event("Warning", "Failed", &failed, "kubelet");
            ctl.event("Warning", "Failed", "Error: ErrImagePull", "kubelet");
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ErrImagePull", "message": error}}),
                false,
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            let back_off = format!("Back-off pulling image \"{image}\": ErrImagePull: {error}");
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ImagePullBackOff", "message": back_off}}),
                false,
            );
            loop {
                ctl.event(
                    "Normal",
                    "BackOff",
                    &format!("Back-off pulling image \"{image}\""),
                    "kubelet",
                );
                ctl.event("Warning", "Failed", "Error: ImagePullBackOff", "kubelet");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        Scenario::CreateContainerConfigError { message } => {
            ctl.schedule();
            ctl.start_sidecars();
            let image = ctl.image("probe");
            loop {
                ctl.event(
                    "Normal",
                    "Pulled",
                    &format!("Container image \"{image}\" already present on machine"),
                    "kubelet",
                );
                ctl.event("Warning", "Failed", &format!("Error: {message}"), "kubelet");
                ctl.container(
                    "probe",
                    json!({"waiting": {"reason": "CreateContainerConfigError", "message": message}}),
                    false,
                );
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        Scenario::FailedMount { volume, secret } => {
            ctl.schedule();
            let message = format!(
                "MountVolume.SetUp failed for volume \"{volume}\" : secret \"{secret}\" not found"
            );
            loop {
                ctl.event("Warning", "FailedMount", &message, "kubelet");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Scenario::Script(script) => script(ctl).await,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Time.

/// RFC 3339 in UTC, to the second, as the API server writes it.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    jiff::Timestamp::from_second(secs)
        .unwrap_or(jiff::Timestamp::MAX)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_409_407)),
            "2026-12-04T18:36:47Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }

    #[test]
    fn selectors() {
        let pod = json!({"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}, "spec": {"nodeName": "n"}});
        let m = |s: &str| Selector::parse(s).unwrap().matches_labels(&pod);
        assert!(m("a=1,b==2"));
        assert!(m("a,!c"));
        assert!(m("a in (1,3),b notin (3)"));
        assert!(!m("a!=1"));
        assert!(!m("c"));
        assert!(m(""));
        let f = |s: &str| Selector::parse(s).unwrap().matches_fields(&pod);
        assert!(f("metadata.name=p,spec.nodeName=n"));
        assert!(f("status.phase="));
        assert!(!f("metadata.name=q"));
    }

    #[test]
    fn termination_log_is_repointed() {
        let spec = json!({"args": ["run", "--termination-log", "/dev/termination-log", "--spec-json", "{}"]});
        assert_eq!(
            probe_args(&spec, Path::new("/tmp/t")),
            ["run", "--termination-log", "/tmp/t", "--spec-json", "{}"]
        );
        let spec = json!({"args": ["run", "--spec-json", "{}"]});
        assert_eq!(
            probe_args(&spec, Path::new("/tmp/t")),
            ["run", "--spec-json", "{}", "--termination-log", "/tmp/t"]
        );
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(
            percent_decode("involvedObject.name%3Dp%2Cx+y"),
            "involvedObject.name=p,x y"
        );
        assert_eq!(percent_decode("100%"), "100%");
    }
}
