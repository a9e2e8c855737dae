//! What the fake API server does wrong on purpose, as a failing or hostile one does (issue 25): a pod create that is
//! stored and then answered `504` (a real API server's etcd commit that outlived its timeout) or not answered at all
//! (the connection dropped after the write), a delete that fails, and answers that never end (one endless line in a
//! pod watch, an endless list body). Set with [`FakeKube::set_faults`](super::FakeKube::set_faults); each count is
//! how many requests of that kind it spoils from then on.

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use hyper::Response;
use hyper::body::Frame;

use super::status::status;
use crate::http::{Body, channel};

/// The faults to play.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Every pod watch answers 200, then one line that never ends.
    pub endless_pod_watch_line: bool,
    /// Every pod list answers 200, then a body that never ends.
    pub endless_pod_list: bool,
    /// Pod creates stored, then answered `504 Timeout` (the API server's words for an etcd commit it did not see end).
    pub create_504_after_write: u32,
    /// Pod creates stored, then the connection closed with no answer.
    pub create_dropped_after_write: u32,
    /// Pod creates stored, then answered only after this long.
    pub create_answer_delay: Option<Duration>,
    /// Pod creates stored only after this long, and answered then: the write goes on when the client has gone (a
    /// real API server works on a request until its own deadline, whoever still listens).
    pub create_write_delay: Option<Duration>,
    /// Pod creates whose connection is closed at once, with no answer, and which are stored all the same
    /// [`Faults::dropped_create_stored_after`] later (a proxy or load balancer in front of the API server that cut
    /// the connection of a request the API server goes on with).
    pub create_dropped_before_write: u32,
    /// How long after its connection was closed a create of [`Faults::create_dropped_before_write`] is stored.
    pub dropped_create_stored_after: Duration,
    /// Pod creates go through an admission that takes this long (a slow webhook, as an image-verification one is):
    /// a create whose `timeout` is shorter is answered `504 Timeout` when it is over, and not stored (the API
    /// server's own words); another is stored after it (issue 40, item 1).
    pub create_admission: Option<Duration>,
    /// Pod creates are answered with these `Warning:` headers (`299 - "<text>"`), as a ValidatingAdmissionPolicy in
    /// `Warn` mode or Pod Security's `warn` level sends them (issue 40, item 11).
    pub create_warnings: Vec<String>,
    /// Pod creates are refused as in a namespace being deleted (`403`, cause `NamespaceTerminating`).
    pub namespace_terminating: bool,
    /// The API server is lost: every request's connection is closed with no answer ([`FakeKube::lose`](super::FakeKube::lose)
    /// also ends the open watches).
    pub api_lost: bool,
    /// Pod deletes answered `500` and not done.
    pub delete_500: u32,
    /// Pod deletes: the connection closed with no answer, and not done.
    pub delete_dropped: u32,
}

/// The connection was closed with no answer (hyper closes it when the service fails).
#[derive(Debug)]
pub(super) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the fake API server dropped the connection on purpose")
    }
}

impl std::error::Error for Dropped {}

/// How a spoiled request is answered.
pub(super) enum Spoiled {
    /// This answer.
    Answer(Response<Body>),
    /// The connection is closed, with no answer.
    Dropped,
}

/// Takes one from a count: whether there was one.
fn take(n: &mut u32) -> bool {
    let had = *n > 0;
    *n = n.saturating_sub(1);
    had
}

fn lock(faults: &Mutex<Faults>) -> MutexGuard<'_, Faults> {
    faults
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The API server is lost: no request is answered.
pub(super) fn lost(faults: &Mutex<Faults>) -> bool {
    lock(faults).api_lost
}

/// A pod create was stored: how it is answered instead of its 201, if it is spoiled; and how long to wait first.
pub(super) fn after_create(faults: &Mutex<Faults>) -> (Option<Spoiled>, Option<Duration>) {
    let mut f = lock(faults);
    let delay = f.create_answer_delay;
    if take(&mut f.create_504_after_write) {
        let answer = status(
            504,
            "Timeout",
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
            None,
        );
        return (Some(Spoiled::Answer(answer)), delay);
    }
    if take(&mut f.create_dropped_after_write) {
        return (Some(Spoiled::Dropped), delay);
    }
    (None, delay)
}

/// How a pod create goes before it is stored, if it is spoiled.
pub(super) enum BeforeCreate {
    /// Stored after this long, and answered then.
    Delayed(Duration),
    /// The connection closed at once; stored after this long all the same.
    DroppedThenStored(Duration),
}

/// How a pod create goes before it is stored, if it is spoiled.
pub(super) fn before_create(faults: &Mutex<Faults>) -> Option<BeforeCreate> {
    let mut f = lock(faults);
    if take(&mut f.create_dropped_before_write) {
        return Some(BeforeCreate::DroppedThenStored(
            f.dropped_create_stored_after,
        ));
    }
    f.create_write_delay.map(BeforeCreate::Delayed)
}

/// A pod delete, before it is done: how it is answered instead, if it is spoiled.
pub(super) fn before_delete(faults: &Mutex<Faults>) -> Option<Spoiled> {
    let mut f = lock(faults);
    if take(&mut f.delete_500) {
        return Some(Spoiled::Answer(status(
            500,
            "InternalError",
            "Internal error occurred: etcdserver: leader changed",
            None,
        )));
    }
    take(&mut f.delete_dropped).then_some(Spoiled::Dropped)
}

/// A pod list or watch: an endless answer instead, if one is set.
pub(super) fn pod_collection(faults: &Mutex<Faults>, watch: bool) -> Option<Response<Body>> {
    let f = lock(faults);
    let (start, unit): (&[u8], &[u8]) = if watch && f.endless_pod_watch_line {
        (
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"",
            b"x",
        )
    } else if !watch && f.endless_pod_list {
        (
            b"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[\n",
            b"{\"metadata\":{\"name\":\"x\"}},\n",
        )
    } else {
        return None;
    };
    drop(f);
    let (response, tx) = channel("application/json", "no-cache", 4);
    let chunk = Bytes::from(unit.repeat((64 << 10) / unit.len()));
    let start = Bytes::from_static(start);
    tokio::spawn(async move {
        if tx.send(Ok(Frame::data(start))).await.is_err() {
            return;
        }
        // Until the client goes away.
        while tx.send(Ok(Frame::data(chunk.clone()))).await.is_ok() {}
    });
    Some(response)
}

/// A pod create before anything else: the refusal of a namespace being deleted, or the admission's time (and the
/// `504` of a create whose `timeout` is shorter, answered when that is over).
pub(super) async fn admission(
    faults: &Mutex<Faults>,
    ns: &str,
    timeout: Option<Duration>,
) -> Option<Response<Body>> {
    let (terminating, took) = {
        let f = lock(faults);
        (f.namespace_terminating, f.create_admission)
    };
    if terminating {
        return Some(status(
            403,
            "Forbidden",
            &format!(
                "pods is forbidden: unable to create new content in namespace {ns} because it is being terminated"
            ),
            Some(
                serde_json::json!({"kind": "pods", "causes": [{"reason": "NamespaceTerminating",
                "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]}),
            ),
        ));
    }
    let took = took?;
    match timeout {
        Some(t) if t < took => {
            tokio::time::sleep(t).await;
            Some(status(
                504,
                "Timeout",
                "Timeout: request did not complete within the allotted timeout",
                None,
            ))
        }
        _ => {
            tokio::time::sleep(took).await;
            None
        }
    }
}

/// The `Warning:` headers every pod create is answered with, as the API server writes them.
pub(super) fn create_warnings(faults: &Mutex<Faults>) -> Vec<hyper::header::HeaderValue> {
    lock(faults)
        .create_warnings
        .iter()
        .filter_map(|w| {
            let quoted = w.replace('\\', "\\\\").replace('"', "\\\"");
            // As bytes: a header may carry UTF-8 (obs-text), as the API server's do.
            hyper::header::HeaderValue::from_bytes(format!("299 - \"{quoted}\"").as_bytes()).ok()
        })
        .collect()
}
