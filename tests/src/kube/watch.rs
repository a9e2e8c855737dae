//! List and watch, as the API server answers them: a list at the current `resourceVersion`; a watch as
//! newline-delimited `WatchEvent`s from a version (the current objects as `ADDED` first for `""`/`"0"`), with
//! bookmarks, `sendInitialEvents`'s end marker, `timeoutSeconds`, and `410 Expired` for a compacted version.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::request::ApiRequest;
use super::selector::Filter;
use super::shared::Inner;
use super::status::status;
use super::store::Kind;
use crate::http::{Body, channel, json};

/// A list or, with `?watch=true`, a watch of `kind` (in `ns`, or every namespace).
pub(super) fn collection(
    inner: &Arc<Inner>,
    kind: Kind,
    ns: Option<&str>,
    req: &ApiRequest,
) -> Response<Body> {
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
    json(
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

fn watch_response(inner: &Arc<Inner>, filter: Filter, req: &ApiRequest) -> Response<Body> {
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
    let (response, tx) = channel("application/json", "no-cache, private", 64);
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
