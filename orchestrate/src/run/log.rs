//! The logs a run reads: the probe container's, followed line by line as it comes (its JSON lines are the probe's
//! events), and the tail of the Custodian's when it exits at start (its refusal line is among the first).

use std::pin::Pin;
use std::time::Duration;

use futures_util::io::{AsyncBufRead, AsyncBufReadExt};
use futures_util::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use crate::pod::PROBE_CONTAINER;

/// The longest probe log line kept; a longer one is skipped to its newline.
pub const MAX_LOG_LINE: usize = 8 << 20;
/// How long the read of the Custodian's log may take.
const CUSTODIAN_LOG_TIMEOUT: Duration = Duration::from_secs(10);
/// The Custodian's log lines read (its refusal is among the first).
const CUSTODIAN_LOG_TAIL: i64 = 200;

/// One item of a followed log.
pub(super) enum LogItem {
    /// A line, without its newline.
    Line(String),
    /// The stream ended: cleanly (`None`, the container ended) or broken off (why).
    End(Option<String>),
}

/// Follows the probe container's log (`follow=true`): lines of at most [`MAX_LOG_LINE`] bytes, as they come; a
/// longer one is skipped to its newline. Ends with [`LogItem::End`].
pub(super) fn probe_log(api: Api<Pod>, name: String) -> BoxStream<'static, LogItem> {
    type Reader = Pin<Box<dyn AsyncBufRead + Send>>;
    enum St {
        Opening(Box<Api<Pod>>, String),
        Reading(Reader, Vec<u8>, bool),
        Done,
    }
    stream::unfold(St::Opening(Box::new(api), name), |st| async move {
        let (mut reader, mut buf, mut skipping) = match st {
            St::Done => return None,
            St::Opening(api, name) => {
                let lp = LogParams {
                    container: Some(PROBE_CONTAINER.to_owned()),
                    follow: true,
                    ..LogParams::default()
                };
                match api.log_stream(&name, &lp).await {
                    Ok(r) => (Box::pin(r) as Reader, Vec::new(), false),
                    Err(e) => return Some((LogItem::End(Some(e.to_string())), St::Done)),
                }
            }
            St::Reading(r, b, s) => (r, b, s),
        };
        loop {
            let chunk = match reader.fill_buf().await {
                Ok(c) => c,
                Err(e) => return Some((LogItem::End(Some(e.to_string())), St::Done)),
            };
            if chunk.is_empty() {
                if buf.is_empty() || skipping {
                    return Some((LogItem::End(None), St::Done));
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                return Some((LogItem::Line(line), St::Reading(reader, Vec::new(), false)));
            }
            if let Some(pos) = chunk.iter().position(|b| *b == b'\n') {
                if !skipping {
                    buf.extend_from_slice(&chunk[..pos]);
                }
                reader.as_mut().consume(pos + 1);
                if std::mem::take(&mut skipping) {
                    buf.clear();
                    continue;
                }
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                buf.clear();
                return Some((LogItem::Line(line), St::Reading(reader, buf, false)));
            }
            let n = chunk.len();
            if !skipping {
                buf.extend_from_slice(chunk);
                if buf.len() > MAX_LOG_LINE {
                    buf = Vec::new();
                    skipping = true;
                }
            }
            reader.as_mut().consume(n);
        }
    })
    .boxed()
}

/// The last [`CUSTODIAN_LOG_TAIL`] lines of the Custodian container's log (of its previous instance when it
/// restarted since), bounded in time and size.
pub(super) async fn custodian_log(
    api: Api<Pod>,
    name: String,
    container: String,
    previous: bool,
) -> Result<Vec<String>, String> {
    let lp = LogParams {
        container: Some(container),
        previous,
        tail_lines: Some(CUSTODIAN_LOG_TAIL),
        limit_bytes: Some(64 << 10),
        ..LogParams::default()
    };
    match tokio::time::timeout(CUSTODIAN_LOG_TIMEOUT, api.logs(&name, &lp)).await {
        Ok(Ok(text)) => Ok(text.lines().map(str::to_owned).collect()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("no answer".to_owned()),
    }
}
