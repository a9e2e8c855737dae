//! Every answer the driver reads from the API server is bounded in memory (issue 25, item 3).
//!
//! `--timeout` bounds time, not memory: an API server (or anything that answers in its place) that sends one endless
//! line in a watch, or an endless list body, would have the kube client buffer it whole (its watch reads lines with
//! no limit; a list or a create's answer is collected before it is parsed), gigabytes before the deadline. So one
//! layer, beneath kube's, wraps every response body and fails it once it passes its bound:
//!
//! - a watch (`watch=true`): each line (one `WatchEvent`) at most [`MAX_WATCH_LINE`]: a pod object is at most
//!   about 1.5 MiB (etcd's default request limit; the API server takes at most 3 MiB), as kubectl's client
//!   expects of one object;
//! - a followed log (`follow=true`): not bounded here; its reader (`run/log.rs`) skips a line past its own bound,
//!   and a log may run as long as its pod does;
//! - anything else (a list, a get, a create's or delete's answer): the whole body at most [`MAX_BODY`].
//!
//! A body past its bound ends in an error, which the request that read it reports as it reports a broken
//! connection (a watch is opened again, the deadline still holds).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};

/// The longest line of a watch: one event, one object.
pub const MAX_WATCH_LINE: usize = 4 << 20;
/// The longest body of an answer that is not a stream.
pub const MAX_BODY: usize = 8 << 20;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An answer past its bound.
#[derive(Debug, thiserror::Error)]
pub enum BoundError {
    /// A watch line longer than [`MAX_WATCH_LINE`].
    #[error("the API server sent a watch line longer than {} MiB", MAX_WATCH_LINE >> 20)]
    Line,
    /// A body longer than [`MAX_BODY`].
    #[error("the API server's answer is longer than {} MiB", MAX_BODY >> 20)]
    Body,
}

/// What bounds one body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limit {
    /// Each line (bytes between newlines) at most this.
    Line(usize),
    /// The whole body at most this.
    Total(usize),
    /// Not bounded here.
    Stream,
}

impl Limit {
    /// The bound of the answer to `uri`'s request (its query says whether it is a watch or a followed log).
    fn of(uri: &http::Uri) -> Self {
        let query = uri.query().unwrap_or("");
        let has = |kv: &str| query.split('&').any(|p| p == kv);
        if has("watch=true") || has("watch=1") {
            Limit::Line(MAX_WATCH_LINE)
        } else if has("follow=true") || has("follow=1") {
            Limit::Stream
        } else {
            Limit::Total(MAX_BODY)
        }
    }
}

/// A response body that fails once it passes its bound.
#[derive(Debug)]
pub struct BoundedBody<B> {
    inner: B,
    limit: Limit,
    /// Bytes of the body so far ([`Limit::Total`]), or of the current line ([`Limit::Line`]).
    seen: usize,
    failed: bool,
}

impl<B> BoundedBody<B> {
    fn new(inner: B, limit: Limit) -> Self {
        Self {
            inner,
            limit,
            seen: 0,
            failed: false,
        }
    }

    /// Counts `data`; the error once the bound is passed.
    fn count(&mut self, data: &[u8]) -> Result<(), BoundError> {
        match self.limit {
            Limit::Stream => Ok(()),
            Limit::Total(max) => {
                self.seen = self.seen.saturating_add(data.len());
                if self.seen > max {
                    Err(BoundError::Body)
                } else {
                    Ok(())
                }
            }
            Limit::Line(max) => {
                let mut parts = data.split(|b| *b == b'\n');
                // The first part ends the current line; every later one starts a new line.
                let first = parts.next().map_or(0, <[u8]>::len);
                let mut line = self.seen.saturating_add(first);
                if line > max {
                    return Err(BoundError::Line);
                }
                for part in parts {
                    line = part.len();
                    if line > max {
                        return Err(BoundError::Line);
                    }
                }
                self.seen = line;
                Ok(())
            }
        }
    }
}

impl<B> Body for BoundedBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref()
                    && let Err(e) = this.count(data)
                {
                    this.failed = true;
                    return Poll::Ready(Some(Err(Box::new(e))));
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.failed || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        if self.failed {
            SizeHint::with_exact(0)
        } else {
            self.inner.size_hint()
        }
    }
}

/// The layer: each answer's body bounded by what its request was.
#[derive(Clone, Copy, Debug, Default)]
pub struct BoundedLayer;

impl<S> tower::Layer<S> for BoundedLayer {
    type Service = Bounded<S>;

    fn layer(&self, inner: S) -> Bounded<S> {
        Bounded(inner)
    }
}

/// A service whose answers' bodies are bounded ([`BoundedLayer`]).
#[derive(Clone, Debug)]
pub struct Bounded<S>(S);

impl<S, ReqB, ResB> tower::Service<Request<ReqB>> for Bounded<S>
where
    S: tower::Service<Request<ReqB>, Response = Response<ResB>>,
    S::Future: Send + 'static,
    ResB: 'static,
{
    type Response = Response<BoundedBody<ResB>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let limit = Limit::of(req.uri());
        let answer = self.0.call(req);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| BoundedBody::new(body, limit)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;
    use http_body_util::{BodyExt, StreamBody};

    fn body(
        chunks: Vec<Vec<u8>>,
        limit: Limit,
    ) -> BoundedBody<StreamBody<impl futures_util::Stream<Item = Result<Frame<Bytes>, BoxError>>>>
    {
        let frames = stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, BoxError>(Frame::data(Bytes::from(c)))),
        );
        BoundedBody::new(StreamBody::new(frames), limit)
    }

    async fn read<B>(b: B) -> Result<Vec<u8>, String>
    where
        B: Body<Data = Bytes, Error = BoxError>,
    {
        b.collect()
            .await
            .map(|c| c.to_bytes().to_vec())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_request_says_the_bound() {
        let of = |uri: &str| Limit::of(&uri.parse().unwrap());
        assert_eq!(
            of("/api/v1/namespaces/d/pods?&watch=true&labelSelector=a"),
            Limit::Line(MAX_WATCH_LINE)
        );
        assert_eq!(
            of("/api/v1/namespaces/d/pods/p/log?&container=probe&follow=true"),
            Limit::Stream
        );
        assert_eq!(
            of("/api/v1/namespaces/d/pods?&labelSelector=a&limit=500"),
            Limit::Total(MAX_BODY)
        );
        assert_eq!(of("/api/v1/namespaces/d/pods"), Limit::Total(MAX_BODY));
    }

    #[tokio::test]
    async fn a_watch_line_past_its_bound_fails_and_lines_within_pass() {
        let ok = body(
            vec![b"{\"a\":1}\n{\"b\"".to_vec(), b":2}\n".to_vec()],
            Limit::Line(8),
        );
        assert_eq!(read(ok).await.unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
        // Many short lines: far more than the bound in all.
        let many = body(vec![b"1234567\n".repeat(1000)], Limit::Line(8));
        assert_eq!(read(many).await.unwrap().len(), 8000);
        // A line that never ends, in small chunks.
        let endless = body(vec![b"x".repeat(3); 10], Limit::Line(8));
        assert_eq!(
            read(endless).await.unwrap_err(),
            format!(
                "the API server sent a watch line longer than {} MiB",
                MAX_WATCH_LINE >> 20
            )
        );
        // A long line between two short ones in one chunk.
        let middle = body(vec![b"a\nbbbbbbbbbbbb\nc\n".to_vec()], Limit::Line(8));
        assert!(read(middle).await.is_err());
    }

    #[tokio::test]
    async fn a_body_past_its_bound_fails() {
        let ok = body(vec![b"x".repeat(5), b"\n".repeat(5)], Limit::Total(10));
        assert_eq!(read(ok).await.unwrap().len(), 10);
        let long = body(vec![b"\n".repeat(6); 2], Limit::Total(10));
        assert_eq!(
            read(long).await.unwrap_err(),
            format!(
                "the API server's answer is longer than {} MiB",
                MAX_BODY >> 20
            )
        );
        let stream = body(vec![b"x".repeat(100); 100], Limit::Stream);
        assert_eq!(read(stream).await.unwrap().len(), 10_000);
    }
}
