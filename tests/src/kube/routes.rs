//! The HTTP API surface of the fake API server: each request recorded, then routed by method and path to the
//! discovery documents, the pod verbs (`pods`), list and watch (`watch`) or a Deployment's `GET`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::authz;
use super::faults::{self, Dropped, Faults, Spoiled};
use super::pods::{create_pod, delete_pod, pod_log};
use super::request::ApiRequest;
use super::scenario::Scenario;
use super::shared::Inner;
use super::status::{not_found, status};
use super::store::Kind;
use super::watch::collection;
use crate::http::{Body, json, json_body, parse_query};

/// What the routes hold: the store they share with the kubelet stand-ins, and what only a request decides by (the
/// scenario a pod created plays, the faults to play).
pub(super) struct Api {
    pub(super) inner: Arc<Inner>,
    /// What pods created from now on play.
    pub(super) scenario: Mutex<Scenario>,
    /// What it does wrong on purpose.
    pub(super) faults: Mutex<Faults>,
}

/// Records a request, then answers it; or closes the connection with no answer (a fault the test set).
pub(super) async fn handle(
    req: Request<Incoming>,
    api: Arc<Api>,
) -> Result<Response<Body>, Dropped> {
    if faults::lost(&api.faults) {
        return Err(Dropped);
    }
    let inner = &api.inner;
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = parse_query(req.uri().query().unwrap_or(""));
    let body = json_body(req.into_body()).await;
    let recorded = ApiRequest {
        method: method.to_string(),
        path: path.clone(),
        query,
        body,
        at: Instant::now(),
    };
    inner.lock().requests.push(recorded.clone());
    // The authorizer first, as the API server's filter chain has it.
    if let Some((rule, ns)) =
        authz::attributes(method.as_str(), &recorded.path, recorded.is_watch())
        && inner.lock().denied.contains(&rule)
    {
        let (kind, name) = match rule.resource.split_once('/') {
            Some((r, _)) => (
                r.to_owned(),
                recorded
                    .path
                    .rsplit('/')
                    .nth(1)
                    .unwrap_or_default()
                    .to_owned(),
            ),
            None => (rule.resource.clone(), String::new()),
        };
        let mut details = json!({"kind": kind});
        if !name.is_empty() {
            details["name"] = json!(name);
        }
        if !rule.group.is_empty() {
            details["group"] = json!(rule.group);
        }
        return Ok(status(
            403,
            "Forbidden",
            &authz::forbidden_message(&rule, &ns),
            Some(details),
        ));
    }
    let segs: Vec<&str> = recorded.path.trim_matches('/').split('/').collect();
    let spoil = |s: Spoiled| match s {
        Spoiled::Answer(a) => Ok(a),
        Spoiled::Dropped => Err(Dropped),
    };
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["api", "v1", "namespaces", _, "pods"]) => {
            if let Some(endless) = faults::pod_collection(&api.faults, recorded.is_watch()) {
                return Ok(endless);
            }
        }
        ("POST", ["api", "v1", "namespaces", ns, "pods"]) => {
            let warnings = faults::create_warnings(&api.faults);
            let warn = |mut r: Response<Body>| {
                for w in &warnings {
                    r.headers_mut().append(hyper::header::WARNING, w.clone());
                }
                r
            };
            let timeout = recorded
                .q("timeout")
                .and_then(|t| t.strip_suffix('s')?.parse().ok())
                .map(Duration::from_secs);
            if let Some(answer) = faults::admission(&api.faults, ns, timeout).await {
                return Ok(warn(answer));
            }
            // Stored by a task of its own, which a client that goes away does not stop.
            let store_after = |delay: Duration| {
                let (api, method, recorded) = (api.clone(), method.clone(), recorded.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    route(&api, &method, &recorded).await
                })
            };
            let answer = match faults::before_create(&api.faults) {
                Some(faults::BeforeCreate::Delayed(delay)) => {
                    store_after(delay).await.map_err(|_| Dropped)?
                }
                Some(faults::BeforeCreate::DroppedThenStored(delay)) => {
                    drop(store_after(delay));
                    return Err(Dropped);
                }
                None => route(&api, &method, &recorded).await,
            };
            if answer.status() != StatusCode::CREATED {
                return Ok(warn(answer));
            }
            let (spoiled, delay) = faults::after_create(&api.faults);
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            return spoiled.map_or(Ok(answer), spoil).map(warn);
        }
        ("DELETE", ["api", "v1", "namespaces", _, "pods", _]) => {
            if let Some(s) = faults::before_delete(&api.faults) {
                return spoil(s);
            }
        }
        _ => {}
    }
    Ok(route(&api, &method, &recorded).await)
}

async fn route(api: &Api, method: &Method, req: &ApiRequest) -> Response<Body> {
    let inner = &api.inner;
    let segs: Vec<&str> = req.path.trim_matches('/').split('/').collect();
    match (method.as_str(), segs.as_slice()) {
        ("GET", ["version"]) => json(
            StatusCode::OK,
            &json!({"major": "1", "minor": "35", "gitVersion": "v1.35.0", "gitCommit": "fake",
                    "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0",
                    "compiler": "gc", "platform": "linux/amd64"}),
        ),
        ("GET", ["api"]) => json(
            StatusCode::OK,
            &json!({"kind": "APIVersions", "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]}),
        ),
        ("GET", ["api", "v1"]) => json(StatusCode::OK, &core_resources()),
        ("GET", ["apis"]) => json(
            StatusCode::OK,
            &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
                "name": "networking.k8s.io",
                "versions": [{"groupVersion": "networking.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "networking.k8s.io/v1", "version": "v1"}}, {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]}),
        ),
        ("GET", ["apis", "apps", "v1"]) => json(
            StatusCode::OK,
            &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                    "resources": [{"name": "deployments", "singularName": "deployment", "namespaced": true,
                                   "kind": "Deployment", "shortNames": ["deploy"], "categories": ["all"],
                                   "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}]}),
        ),
        ("GET", ["apis", "apps", "v1", "namespaces", ns, "deployments", name]) => {
            match inner.lock().get(Kind::Deployment, ns, name) {
                Some(d) => json(StatusCode::OK, d),
                None => not_found(Kind::Deployment, name),
            }
        }
        ("GET", ["apis", "networking.k8s.io", "v1"]) => json(
            StatusCode::OK,
            &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "networking.k8s.io/v1",
                    "resources": [{"name": "networkpolicies", "singularName": "networkpolicy", "namespaced": true,
                                   "kind": "NetworkPolicy", "shortNames": ["netpol"],
                                   "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}]}),
        ),
        (
            "POST",
            [
                "apis",
                "authorization.k8s.io",
                "v1",
                "selfsubjectaccessreviews",
            ],
        ) => {
            let answer = authz::review(&req.body, &inner.lock().denied);
            json(StatusCode::CREATED, &answer)
        }
        ("GET", ["api", "v1", "namespaces", ns]) => {
            let labels = inner
                .lock()
                .namespace_labels
                .get(*ns)
                .cloned()
                .unwrap_or_default();
            let mut labels = serde_json::to_value(labels).unwrap_or_default();
            labels["kubernetes.io/metadata.name"] = json!(ns);
            let mut namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": ns, "labels": labels, "uid": "6a723200-0000-4000-8000-000000000005",
                                 "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"},
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
            if inner.lock().terminating.contains(*ns) {
                namespace["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:01Z");
                namespace["status"]["phase"] = json!("Terminating");
            }
            json(StatusCode::OK, &namespace)
        }
        ("GET", ["api", "v1", "pods"]) => collection(inner, Kind::Pod, None, req),
        ("GET", ["api", "v1", "events"]) => collection(inner, Kind::Event, None, req),
        // The cluster's nodes: none unless a test sets one (`FakeKube::set_node`).
        ("GET", ["api", "v1", "nodes"]) => collection(inner, Kind::Node, None, req),
        ("GET", ["apis", "networking.k8s.io", "v1", "networkpolicies"]) => {
            collection(inner, Kind::NetworkPolicy, None, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods"]) => {
            collection(inner, Kind::Pod, Some(ns), req)
        }
        ("POST", ["api", "v1", "namespaces", ns, "pods"]) => {
            create_pod(inner, &api.scenario, ns, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods", name])
        | ("GET", ["api", "v1", "namespaces", ns, "pods", name, "status"]) => {
            match inner.lock().get(Kind::Pod, ns, name) {
                Some(p) => json(StatusCode::OK, p),
                None => not_found(Kind::Pod, name),
            }
        }
        ("DELETE", ["api", "v1", "namespaces", ns, "pods", name]) => {
            delete_pod(inner, ns, name, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods", name, "log"]) => {
            pod_log(inner, ns, name, req)
        }
        ("GET", ["api", "v1", "namespaces", ns, "serviceaccounts", name]) => {
            match inner.lock().get(Kind::ServiceAccount, ns, name) {
                Some(a) => json(StatusCode::OK, a),
                None => not_found(Kind::ServiceAccount, name),
            }
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
        // A namespace without LimitRanges or ResourceQuotas: empty lists.
        ("GET", ["api", "v1", "namespaces", _, "limitranges"]) => json(
            StatusCode::OK,
            &json!({"apiVersion": "v1", "kind": "LimitRangeList", "metadata": {"resourceVersion": "1"}, "items": []}),
        ),
        ("GET", ["api", "v1", "namespaces", _, "resourcequotas"]) => json(
            StatusCode::OK,
            &json!({"apiVersion": "v1", "kind": "ResourceQuotaList", "metadata": {"resourceVersion": "1"}, "items": []}),
        ),
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
        r("serviceaccounts", "ServiceAccount", &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
    ]})
}
