//! The pod verbs, with the API server's semantics: create (its refusals: a name missing, a namespace that differs,
//! one that exists, a scripted quota or webhook), delete (the `uid` and `resourceVersion` preconditions, the grace
//! period), and the log of a container (`follow`, `previous`, `tailLines`, `limitBytes`, a container not started).
//! A pod created is handed to the kubelet stand-in.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use serde_json::json;

use super::kubelet::kubelet;
use super::pod_ctl::{PodCtl, container_status};
use super::request::ApiRequest;
use super::scenario::Scenario;
use super::shared::Inner;
use super::status::{not_found, status};
use super::store::{Kind, next_uid, rfc3339};
use crate::http::{Body, channel, full, json};

/// `POST .../namespaces/<ns>/pods`.
pub(super) fn create_pod(
    inner: &Arc<Inner>,
    scenario: &Mutex<Scenario>,
    ns: &str,
    req: &ApiRequest,
) -> Response<Body> {
    let mut pod = req.body.clone();
    if !pod.is_object() {
        return status(
            400,
            "BadRequest",
            "the object provided is unrecognized (must be of type Pod)",
            None,
        );
    }
    let dry_run = req.q("dryRun") == Some("All");
    if dry_run
        && pod["metadata"]["name"].is_null()
        && let Some(prefix) = pod["metadata"]["generateName"].as_str()
    {
        pod["metadata"]["name"] = json!(format!("{prefix}dry7x"));
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
    let is_check_pod =
        pod["metadata"]["labels"]["app.kubernetes.io/name"] == "jr2-provider-preflight";
    if dry_run {
        // Every admission step, nothing stored.
        let st = inner.lock();
        if let Some((code, reason, message)) = st.refusal.clone()
            && (is_check_pod || !st.refusal_of_check_pods_only)
        {
            return status(
                code,
                &reason,
                &message,
                Some(json!({"name": name, "kind": "pods"})),
            );
        }
        drop(st);
        pod["metadata"]["namespace"] = json!(ns);
        return json(StatusCode::CREATED, &pod);
    }
    let created = inner.mutate(|st| {
        if let Some((code, reason, message)) = st.refusal.clone()
            && (is_check_pod || !st.refusal_of_check_pods_only)
        {
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
        // A mutating admission policy's rewrite of a label, on every pod.
        if let Some((key, value)) = st.label_rewrite.clone() {
            meta["labels"][key] = json!(value);
        }
        meta["namespace"] = json!(ns);
        meta["uid"] = json!(uid);
        meta["creationTimestamp"] = json!(rfc3339(inner.api_now()));
        meta["generation"] = json!(1);
        pod["status"] = json!({"phase": "Pending", "qosClass": "Burstable"});
        let stored = st.put(Kind::Pod, pod, "ADDED");
        st.created.push(name.clone());
        st.times.entry(name.clone()).or_default().created = Some(Instant::now());
        Ok(stored)
    });
    match created {
        Ok(stored) => {
            let scenario = scenario
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
            json(StatusCode::CREATED, &stored)
        }
        Err(response) => *response,
    }
}

/// `DELETE .../namespaces/<ns>/pods/<name>`.
pub(super) fn delete_pod(
    inner: &Arc<Inner>,
    ns: &str,
    name: &str,
    req: &ApiRequest,
) -> Response<Body> {
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
            json(StatusCode::OK, &object)
        }
        Err(response) => *response,
    }
}

/// `GET .../namespaces/<ns>/pods/<name>/log`.
pub(super) fn pod_log(
    inner: &Arc<Inner>,
    ns: &str,
    name: &str,
    req: &ApiRequest,
) -> Response<Body> {
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
    let (response, tx) = channel("text/plain", "no-cache, private", 64);
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
