//! A fake Kubernetes API server on 127.0.0.1, with a kubelet stand-in that runs the real `jr2-probe` as a process.
//!
//! There is no real kube-apiserver on these machines (`../shared/research/test-peers.md` §B), and kmock answers
//! its error paths with a 500 and a Python traceback, so this is our own: plain HTTP/1.1 (the real `kube` client
//! reaches it through a kubeconfig that names `http://127.0.0.1:<port>`), in-memory Pods and Events, and the part of
//! the API a check pod's driver uses, with the API server's semantics:
//!
//! - Pods: `POST` (409 `AlreadyExists`, 422 without a name, or a scripted refusal such as a quota's 403; `dryRun=All`
//!   with `generateName`: admitted or refused alike, nothing stored), `GET`, list
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
//! - ServiceAccounts: `GET` by name (404 `serviceaccounts "<name>" not found`), none unless a test adds them.
//! - Nodes (cluster-scoped): `list`/`watch`, none unless a test sets one (`set_node`).
//! - SelfSubjectAccessReviews (`authorization.k8s.io/v1`): answered from what the test denied ([`FakeKube::deny`]),
//!   which the other routes then refuse with the API server's `403 Forbidden` (`authz`).
//! - LimitRanges and ResourceQuotas: list, always empty.
//! - Namespaces: `GET` by name, with the labels a test gave ([`FakeKube::label_namespace`]); every namespace exists.
//! - Secrets: held for the kubelet stand-in only ([`FakeKube::add_secret`]); no route serves them.
//! - `/version`, `/api`, `/api/v1`, `/apis` and `/apis/networking.k8s.io/v1` for discovery.
//!
//! Every request is recorded ([`FakeKube::requests`]), with when it came.
//!
//! **Faults** ([`FakeKube::set_faults`], `faults`): a pod create stored then answered 504 or not at all, a create
//! answered late, a delete that fails or is dropped, an endless line in a pod watch, an endless pod list body.
//!
//! **The kubelet stand-in**: when a pod is created it plays the [`Scenario`] set for the fake: it schedules the pod
//! (`spec.nodeName`, `PodScheduled`), starts the Custodian (a plain container or an `initContainers` sidecar) as running, then runs the
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
//!
//! The rooms: `shared` (the store behind its lock and the change signal, what the routes and the kubelet stand-ins
//! share), `store` (the objects, their versions and history, and the moments of each pod), `request` (a request as
//! recorded), `status` (the `Status` answers), `selector` (label and field selectors), `routes` (the HTTP API
//! surface: discovery and dispatch), `faults` (what it does wrong on purpose), `pods` (create, delete and the
//! container log), `watch` (list and watch), `authz` (the permissions a test denied), `scenario` (what happens to
//! each pod created), `kubelet` (the kubelet stand-in playing it), `pod_ctl` (the [`PodCtl`] it writes a pod's
//! status and Events through), `probe_run` (the probe container: the real `jr2-probe` as a process); this file
//! holds the server and the handle a test holds ([`FakeKube`]).

mod authz;
mod faults;
mod kubelet;
mod pod_ctl;
mod pods;
mod probe_run;
mod request;
mod routes;
mod scenario;
mod selector;
mod shared;
mod status;
mod store;
mod watch;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

pub use authz::{Rule, attributes};
pub use faults::Faults;
pub use pod_ctl::{NODE, PodCtl};
pub use probe_run::{ProbeExit, ProbeRun, TERMINATION_MESSAGE_LIMIT, run_probe};
pub use request::ApiRequest;
pub use scenario::{Scenario, Script, ScriptFn, UNSCHEDULABLE_MEMORY, UNSCHEDULABLE_TAINT_MEMORY};
pub use store::{PodTimes, rfc3339};

use crate::http::accept_until_stopped;
use routes::Api;
use selector::Selector;
pub use shared::Clocks;
use shared::Inner;
use store::{Kind, State, next_uid};

/// A running fake API server. Dropping it stops it.
pub struct FakeKube {
    addr: SocketAddr,
    api: Arc<Api>,
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
            changed: tokio::sync::watch::channel(0).0,
            probe_bin: probe_bin.into(),
            bookmark_every: Mutex::new(Duration::from_secs(5)),
            uid_base: u64::from(addr.port()),
            clocks: Mutex::new(Clocks::default()),
        });
        let api = Arc::new(Api {
            inner: inner.clone(),
            scenario: Mutex::new(scenario),
            faults: Mutex::new(Faults::default()),
        });
        let served = api.clone();
        let stop_tx = accept_until_stopped(listener, move |stream| {
            // As Go's net package does for the real API server: no Nagle delay on the small watch and log writes.
            let _ = stream.set_nodelay(true);
            let api = served.clone();
            async move {
                let service = hyper::service::service_fn(move |req| {
                    let api = api.clone();
                    async move {
                        let date = httpdate::fmt_http_date(api.inner.api_now());
                        let mut answer = routes::handle(req, api).await?;
                        // The API server's clock, as every answer of its says it.
                        if let Ok(date) = hyper::header::HeaderValue::from_str(&date) {
                            answer.headers_mut().insert(hyper::header::DATE, date);
                        }
                        Ok::<_, faults::Dropped>(answer)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            }
        });
        Self {
            addr,
            api,
            inner,
            stop: Some(stop_tx),
        }
    }

    /// The API server is lost (a process killed, a network cut): the open watches end, and from now on every
    /// request's connection is closed with no answer.
    pub fn lose(&self) {
        self.api
            .faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .api_lost = true;
        self.inner.mutate(|st| st.closed = true);
    }

    /// Sets how far the API server's and the node's clocks are from this machine's.
    pub fn set_clocks(&self, clocks: Clocks) {
        *self
            .inner
            .clocks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = clocks;
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
            .api
            .scenario
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = scenario;
    }

    /// What the fake does wrong on purpose from now on ([`Faults`]).
    pub fn set_faults(&self, faults: Faults) {
        *self
            .api
            .faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = faults;
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
        let mut st = self.inner.lock();
        st.refusal =
            refusal.map(|(code, reason, message)| (code, reason.to_owned(), message.to_owned()));
        st.refusal_of_check_pods_only = false;
    }

    /// As [`FakeKube::refuse_creates`], for check pods only (`app.kubernetes.io/name: jr2-provider-preflight`): any
    /// other pod, a Harness pod's dry run among them, is admitted.
    pub fn refuse_check_pods_only(&self, code: u16, reason: &str, message: &str) {
        let mut st = self.inner.lock();
        st.refusal = Some((code, reason.to_owned(), message.to_owned()));
        st.refusal_of_check_pods_only = true;
    }

    /// Every pod created from now on gets the label `key: value`, whatever it was posted with, as a
    /// MutatingAdmissionPolicy that sets `app.kubernetes.io/managed-by` on every pod does.
    pub fn rewrite_label_on_create(&self, key: &str, value: &str) {
        self.inner.lock().label_rewrite = Some((key.to_owned(), value.to_owned()));
    }

    /// Forgets the history so far: a watch from an older `resourceVersion` gets `410 Expired`.
    pub fn compact(&self) {
        let mut st = self.inner.lock();
        st.compacted = st.rv;
        st.history.clear();
    }

    /// Denies a permission from now on (verb, API group, resource as RBAC names them: `("get", "", "pods/log")`): a
    /// SelfSubjectAccessReview of it says `allowed: false`, and a request that needs it is answered 403.
    pub fn deny(&self, verb: &str, group: &str, resource: &str) {
        self.inner
            .lock()
            .denied
            .push(Rule::new(verb, group, resource));
    }

    /// Gives `namespace` these labels (`pod-security.kubernetes.io/enforce: restricted`), as its `GET` shows them.
    pub fn label_namespace(&self, namespace: &str, labels: &[(&str, &str)]) {
        let labels = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.inner
            .lock()
            .namespace_labels
            .insert(namespace.to_owned(), labels);
    }

    /// Deletes `namespace`, as `kubectl delete namespace` and the namespace controller do: it is terminating (its
    /// object has a `deletionTimestamp`), and its pods are removed, each a `DELETED` event.
    pub fn delete_namespace(&self, namespace: &str) {
        self.inner.mutate(|st| {
            st.terminating.insert(namespace.to_owned());
            let pods: Vec<String> = st
                .objects
                .keys()
                .filter(|(kind, ns, _)| *kind == Kind::Pod && ns == namespace)
                .map(|(_, _, name)| name.clone())
                .collect();
            for name in pods {
                if let Some(k) = st.kubelets.remove(&(namespace.to_owned(), name.clone())) {
                    k.abort();
                }
                st.remove(Kind::Pod, namespace, &name);
            }
        });
    }

    /// Adds a NetworkPolicy to `namespace`.
    pub fn add_network_policy(&self, namespace: &str, policy: Value) {
        self.add_object(Kind::NetworkPolicy, namespace, policy);
    }

    /// Adds a Deployment to `namespace` (served by `GET /apis/apps/v1/namespaces/<ns>/deployments/<name>`).
    pub fn add_deployment(&self, namespace: &str, deployment: Value) {
        self.add_object(Kind::Deployment, namespace, deployment);
    }

    /// Adds a ServiceAccount to `namespace` (served by `GET /api/v1/namespaces/<ns>/serviceaccounts/<name>`).
    pub fn add_service_account(&self, namespace: &str, account: Value) {
        self.add_object(Kind::ServiceAccount, namespace, account);
    }

    /// Sets the Node `node` (its `metadata.name`) as the node lifecycle controller or a kubelet would write it: added,
    /// or modified (a watch of it shows the change).
    pub fn set_node(&self, node: Value) {
        self.inner.mutate(|st| {
            st.put(Kind::Node, node, "MODIFIED");
        });
    }

    /// Stores an object as the API server would on create: its namespace, a uid, a creation time (and a generation
    /// for a Deployment), then the `ADDED` event.
    fn add_object(&self, kind: Kind, namespace: &str, mut object: Value) {
        object["metadata"]["namespace"] = json!(namespace);
        self.inner.mutate(|st| {
            let uid = next_uid(st, self.inner.uid_base);
            object["metadata"]["uid"] = json!(uid);
            object["metadata"]["creationTimestamp"] = json!(rfc3339(SystemTime::now()));
            if kind == Kind::Deployment {
                object["metadata"]["generation"] = json!(1);
            }
            st.put(kind, object, "ADDED");
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
    pub fn requests(&self) -> Vec<ApiRequest> {
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
