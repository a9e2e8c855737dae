//! What the fake providers' handlers are built of: the [`Handler`] type, a JSON error, and streamed answers (SSE
//! events, or frames of any framing) sent by a task with pauses and a stall.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::Response;
use hyper::StatusCode;
use hyper::body::Frame;
use serde_json::Value;

use crate::http::{Body, Recorded, channel, json};

/// What answers a request: the recorded request and how many times its key (the body's `model`, else the path)
/// was tried so far, the current request included.
pub type Handler = Arc<
    dyn Fn(
            Recorded,
            u32,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>
        + Send
        + Sync,
>;

/// A JSON response (an error body, usually).
pub fn json_error(status: StatusCode, body: Value) -> Response<Body> {
    json(status, &body)
}

/// A streamed 200 whose SSE events are sent by a task, with an optional pause before each and a stall at the end.
pub fn stream(events: Vec<String>, pause: Duration, stall_after: bool) -> Response<Body> {
    stream_bytes(
        "text/event-stream",
        events.into_iter().map(Bytes::from).collect(),
        pause,
        stall_after,
    )
}

/// A streamed 200 of any framing (AWS's binary event stream, say): `frames` are sent one by one by a task, with an
/// optional pause before each; with `stall_after` the body stays open until the client goes away.
pub fn stream_bytes(
    content_type: &str,
    frames: Vec<Bytes>,
    pause: Duration,
    stall_after: bool,
) -> Response<Body> {
    let (response, tx) = channel(content_type, "no-cache", 4);
    tokio::spawn(async move {
        for frame in frames {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            if tx.send(Ok(Frame::data(frame))).await.is_err() {
                return; // the client hung up
            }
        }
        if stall_after {
            // Hold the stream open until the client goes away.
            tx.closed().await;
        }
    });
    response
}
