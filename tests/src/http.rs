//! The HTTP pieces every fake server here shares, so that each is written once: the response body type, a whole
//! response, a streamed one whose frames a task sends, the request as a provider fake records it, and the
//! percent-decoding of paths and queries, and the accept loop every server here stops the same way.

use std::collections::BTreeMap;
use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// A response body.
pub type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Where a streamed response's frames go: the body ends when the sender drops, and `closed()` tells that the
/// client went away.
pub type FrameSender = mpsc::Sender<Result<Frame<Bytes>, Infallible>>;

/// A whole response.
pub fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).boxed())
        .expect("valid response")
}

/// A JSON response.
pub fn json(status: StatusCode, v: &Value) -> Response<Body> {
    full(status, "application/json", v.to_string())
}

/// A streamed 200 with `content_type` and `cache_control`, and the sender its body reads from (`capacity` frames
/// ahead of the client at most).
pub fn channel(
    content_type: &str,
    cache_control: &str,
    capacity: usize,
) -> (Response<Body>, FrameSender) {
    let (tx, mut rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(capacity);
    let body = StreamBody::new(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)));
    let response = Response::builder()
        .status(200)
        .header("content-type", content_type)
        .header("cache-control", cache_control)
        .body(BodyExt::boxed(body))
        .expect("valid response");
    (response, tx)
}

/// A request body read whole, as JSON (Null when empty or not JSON).
pub async fn json_body(body: Incoming) -> Value {
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

/// One request a provider fake received, as it was sent.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The method.
    pub method: String,
    /// The path and query.
    pub path: String,
    /// The headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// The JSON body (Null when it was not JSON).
    pub body: Value,
}

impl Recorded {
    /// Reads a request whole.
    pub async fn read(req: Request<Incoming>) -> Self {
        let method = req.method().to_string();
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let headers: Vec<(String, String)> = req
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = json_body(req.into_body()).await;
        Self {
            method,
            path,
            headers,
            body,
        }
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Percent-decodes a path segment (`%3A` is `:`; a `%` without two hex digits stays as it is).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(Some(h)), Some(Some(l))) =
                (b.get(i + 1).map(|c| hex(*c)), b.get(i + 2).map(|c| hex(*c)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decodes a query string as a form is: `+` is a space, then percent-decoding; a key without `=` has the value `""`.
pub fn parse_query(q: &str) -> BTreeMap<String, String> {
    let decode = |s: &str| percent_decode(&s.replace('+', " "));
    q.split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// Accepts connections on `listener` until the returned sender fires or is dropped, and serves each one on a task of
/// its own (a failed accept is skipped). Every fake server here runs and stops this way.
pub fn accept_until_stopped<F, Fut>(listener: TcpListener, serve: F) -> oneshot::Sender<()>
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (stop_tx, mut stop_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = &mut stop_rx => return,
            };
            let Ok((stream, _)) = accepted else { continue };
            tokio::spawn(serve(stream));
        }
    });
    stop_tx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(
            percent_decode("anthropic.claude-haiku-4-5-20251001-v1%3A0"),
            "anthropic.claude-haiku-4-5-20251001-v1:0"
        );
        assert_eq!(percent_decode("a+b"), "a+b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }

    #[test]
    fn query_decoding() {
        let q = parse_query("fieldSelector=involvedObject.name%3Dp%2Cx+y&watch&a%2Bb=100%");
        assert_eq!(q["fieldSelector"], "involvedObject.name=p,x y");
        assert_eq!(q["watch"], "");
        assert_eq!(q["a+b"], "100%");
    }
}
