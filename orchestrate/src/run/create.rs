//! The create of one check pod: registered with the cleanup before the request leaves, retried where a second try
//! may pass, and a create that may have written the pod before it failed still deleted.
//!
//! Only a create that certainly wrote nothing is forgotten: one the API server refused with a 4xx, or whose
//! connection could not be opened. Any other end (a 5xx, which a real API server sends while etcd commits; a
//! connection closed after the request went; no answer before the deadline) leaves the outcome unknown, and the
//! pod's name, ours and unique to the run, is deleted as a created pod's is (issue 25, item 4). A `409
//! AlreadyExists` after an earlier try of ours is our own pod.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::Instant;

use jr2_probe::contract::render;

use super::cleanup::Cleanup;
use super::report::RunUpdate;

/// The longest deadline the API server is given for a create (its `timeout` query parameter, as kubectl's
/// `--request-timeout` sets it), within the run's: its admission may call webhooks that take up to 30 s each (the
/// most `timeoutSeconds` allows), as image-verification webhooks do, and a Harness pod's create waits for them as
/// long (issue 40, item 1). After it, plus a margin for the clock, a create that got no answer can no longer be
/// written, and a by-name 404 confirms the pod is not there.
pub(super) const CREATE_SERVER_TIMEOUT: Duration = Duration::from_secs(40);
/// How much earlier than its server-side `timeout` a try's connection may close and still be that timeout: the
/// API server starts its clock when the request arrives, after ours.
const CLOSE_AT_TIMEOUT_SLACK: Duration = Duration::from_millis(250);
/// A create not answered after this long says that it waits, and why it may.
const CREATE_SLOW_NOTE: Duration = Duration::from_secs(10);

/// The create's server-side deadline for a try that starts `left` before the run's deadline: [`CREATE_SERVER_TIMEOUT`],
/// or less when the run ends sooner (a second before it, in whole seconds; at least one).
fn server_timeout(left: Duration) -> Duration {
    Duration::from_secs(
        left.as_secs()
            .saturating_sub(1)
            .clamp(1, CREATE_SERVER_TIMEOUT.as_secs()),
    )
}

/// The API server's answer to one create: the pod or why not, and the `Warning:` headers it carried.
struct Answer {
    result: Result<Pod, kube::Error>,
    warnings: Vec<String>,
}

/// POSTs `pod` with `timeout` as its server-side deadline, and reads its answer as kube's client does, keeping the
/// `Warning:` headers (a ValidatingAdmissionPolicy in `Warn` mode, Pod Security's `warn` level: issue 40, item 11).
async fn post(api: &Api<Pod>, pod: &Pod, timeout: Duration) -> Answer {
    let request = match create_request(api, pod, timeout) {
        Ok(r) => r,
        Err(e) => {
            return Answer {
                result: Err(e),
                warnings: Vec::new(),
            };
        }
    };
    let response = match api.clone().into_client().send(request).await {
        Ok(r) => r,
        Err(e) => {
            return Answer {
                result: Err(e),
                warnings: Vec::new(),
            };
        }
    };
    let warnings = response
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .filter_map(|v| warning_text(&String::from_utf8_lossy(v.as_bytes())))
        .collect();
    let status = response.status();
    let result = match response.into_body().collect().await {
        Ok(body) => read_answer(status, &body.to_bytes()),
        Err(e) => Err(e),
    };
    Answer { result, warnings }
}

fn create_request(
    api: &Api<Pod>,
    pod: &Pod,
    timeout: Duration,
) -> Result<http::Request<kube::client::Body>, kube::Error> {
    let body = serde_json::to_vec(pod).map_err(kube::Error::SerdeError)?;
    let request = kube::core::Request::new(api.resource_url())
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    let (mut parts, body) = request.into_parts();
    let uri = format!("{}&timeout={}s", parts.uri, timeout.as_secs());
    parts.uri = uri.parse().map_err(|e: http::uri::InvalidUri| {
        kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e.into()))
    })?;
    Ok(http::Request::from_parts(
        parts,
        kube::client::Body::from(body),
    ))
}

/// The pod, or the API server's `Status` as kube's client reads an error (a body that is no `Status` becomes one,
/// with the HTTP status).
fn read_answer(status: http::StatusCode, body: &[u8]) -> Result<Pod, kube::Error> {
    if status.is_client_error() || status.is_server_error() {
        let text = String::from_utf8_lossy(body);
        let s = serde_json::from_str::<kube::core::Status>(&text).unwrap_or_else(|_| {
            kube::core::Status::failure(text.trim(), "Failed to parse error data")
                .with_code(status.as_u16())
        });
        return Err(kube::Error::Api(s.boxed()));
    }
    serde_json::from_slice(body).map_err(kube::Error::SerdeError)
}

/// The text of a `Warning:` header (`299 - "text"`, RFC 7234's form, which the API server sends), unquoted; the
/// header as it is when it has another form. Cleaned and cut where it is said.
fn warning_text(header: &str) -> Option<String> {
    let h = header.trim();
    let quoted = h
        .strip_prefix("299")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('-'))
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix('"'));
    let text = match quoted {
        Some(rest) => {
            let mut out = String::new();
            let mut chars = rest.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => break,
                    c => out.push(c),
                }
            }
            out
        }
        None => h.to_owned(),
    };
    (!text.trim().is_empty()).then_some(text)
}

/// What the creates of a run share: where the slow create's progress line goes, said once for the run.
#[derive(Clone, Default)]
pub(super) struct CreateNotes {
    progress: Option<UnboundedSender<RunUpdate>>,
    slow_said: Arc<AtomicBool>,
}

impl CreateNotes {
    /// Notes sent to `progress`.
    pub(super) fn new(progress: Option<UnboundedSender<RunUpdate>>) -> Self {
        Self {
            progress,
            slow_said: Arc::default(),
        }
    }

    /// Says, once for the run, that a create waits: only when it may still wait (its limit beyond what it waited),
    /// never `after 10 s ... waiting up to 10 s` for a create the run's near deadline cut at 10 s.
    fn slow(&self, waited: Duration, limit: Duration) {
        if limit <= waited || self.slow_said.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(tx) = &self.progress {
            let line = render::create_slow(&render::seconds(waited), &render::seconds(limit));
            let _ = tx.send(RunUpdate::Note { line });
        }
    }
}

/// A create and the `Warning:` headers of its answers.
pub(super) struct CreateOutcome {
    /// How it ended.
    pub(super) created: Created,
    /// The warnings of the API server, raw (each said once for the run, cleaned and cut).
    pub(super) warnings: Vec<String>,
}

/// How a create ended.
pub(super) enum Created {
    /// Created: the pod as the API server answered.
    Ok(Box<Pod>),
    /// Refused: the HTTP status when one came, and the message.
    Refused(Option<u16>, String),
    /// Not finished in time: the API server's own timeout (`504 Timeout`: its admission outlasted the create's
    /// `timeout`), or no answer before the run's deadline. The longest any try was given or waited (not only the
    /// last one's, which a near deadline cuts short), and the message.
    TimedOut(Duration, String),
    /// Refused because the namespace is being deleted (`NamespaceTerminating`): the API server's message.
    NamespaceTerminating(String),
    /// The API server could not be reached at all: why, in plain words.
    Unreachable(String),
}

/// Why a request got no answer, in plain words: the innermost cause (`Connection refused (os error 111)`), which
/// is what a person acts on, rather than the layers above it (`ServiceError: client error (Connect)`); named as the
/// proxy's when it was the proxy that could not be reached (issue 40, item 14).
pub(super) fn plain_cause(e: &kube::Error) -> String {
    // Credentials that could not be refreshed: words of ours, never what a plugin printed (issue 40, item 5).
    if let Some(auth) = crate::credentials::auth_error(e) {
        return crate::credentials::words(auth);
    }
    let mut cause: &(dyn std::error::Error + 'static) = e;
    let mut proxy = None;
    loop {
        if let Some(p) = cause.downcast_ref::<crate::kube_proxy::ProxyUnreachable>() {
            proxy = Some(p);
        }
        match cause.source() {
            Some(next) => cause = next,
            None => break,
        }
    }
    let why = cause.to_string();
    match proxy {
        Some(p) => p.words(&why),
        None => why,
    }
}

/// The request never reached the API server: the connection could not be opened (refused, no route, a TLS
/// failure, a connect timeout), so nothing was written.
fn not_sent(e: &kube::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<hyper_util::client::legacy::Error>() {
            return h.is_connect();
        }
        cause = c.source();
    }
    false
}

/// Creates one pod; retries what may pass on a second try (429, 5xx but 501, no answer). A try not answered after
/// [`CREATE_SLOW_NOTE`] says so (once for the run, in `notes`).
pub(super) async fn create_pod(
    api: Api<Pod>,
    cleanup: Cleanup,
    pod: Pod,
    tries: u32,
    deadline: Instant,
    notes: CreateNotes,
) -> CreateOutcome {
    let mut warnings: Vec<String> = Vec::new();
    let created = create_tries(&api, &cleanup, pod, tries, deadline, &notes, &mut warnings).await;
    CreateOutcome { created, warnings }
}

async fn create_tries(
    api: &Api<Pod>,
    cleanup: &Cleanup,
    pod: Pod,
    tries: u32,
    deadline: Instant,
    notes: &CreateNotes,
    warnings: &mut Vec<String>,
) -> Created {
    let name = pod.name_any();
    let mut wait = Duration::from_millis(500);
    let mut last: (Option<u16>, String) = (None, String::new());
    let mut unreachable = None;
    // The last try timed out; the longest a try waited.
    let mut timed_out = false;
    let mut longest = Duration::ZERO;
    // A try may have written the pod: its outcome is unknown.
    let mut maybe_written = false;
    for attempt in 0..tries.max(1) {
        if attempt > 0 {
            if Instant::now() + wait >= deadline {
                break;
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        let started = Instant::now();
        let timeout = server_timeout(deadline.saturating_duration_since(started));
        let settled_by = started + timeout + Duration::from_secs(1);
        cleanup.creating(&name, settled_by);
        let answer = {
            let post = tokio::time::timeout_at(deadline, post(api, &pod, timeout));
            tokio::pin!(post);
            tokio::select! {
                r = &mut post => r,
                () = tokio::time::sleep(CREATE_SLOW_NOTE) => {
                    notes.slow(CREATE_SLOW_NOTE, timeout);
                    post.await
                }
            }
        };
        let r = answer.map(|a| {
            warnings.extend(a.warnings);
            a.result
        });
        // How long the API server had this try: what the timeout line says, the longest of the tries (issue 40: a
        // first try that waited 8 s for a 500, then a last 504 with the 1 s the deadline left, said `in 1 s`).
        longest = longest.max(started.elapsed());
        if let Ok(Ok(_) | Err(kube::Error::Api(_))) = &r {
            cleanup.answered(&name, settled_by);
        }
        timed_out = false;
        match r {
            Ok(Ok(p)) => {
                cleanup.created(&name, p.metadata.uid.clone());
                return Created::Ok(Box::new(p));
            }
            // An earlier try did create it (the 5xx, or the broken connection, came after the write): our pod, if
            // it carries this run's label; read back for its uid, so that its delete is as careful as any.
            Ok(Err(kube::Error::Api(s))) if s.code == 409 && attempt > 0 => {
                return ours_after_conflict(api, cleanup, pod, deadline).await;
            }
            Ok(Err(kube::Error::Api(s))) if terminating(&s) => {
                if maybe_written {
                    cleanup.maybe_created(&name);
                } else {
                    cleanup.not_created(&name);
                }
                return Created::NamespaceTerminating(s.message.clone());
            }
            Ok(Err(kube::Error::Api(s))) => {
                last = (Some(s.code), s.message.clone());
                unreachable = None;
                maybe_written |= s.code >= 500;
                // The API server's own timeout: the one it was given (its `timeout`).
                if s.code == 504 {
                    timed_out = true;
                    longest = longest.max(timeout);
                }
                if !matches!(s.code, 429 | 500 | 502 | 503 | 504) {
                    break;
                }
            }
            // The connection closed with no answer once the try had lasted its server-side `timeout`: the API
            // server's own timeout. Its timeout filter answers `504` when it can; when the handler had begun its
            // answer (an admission that gave up at the same deadline, then the storage's refusal) it can no longer
            // send one, and it kills the connection (the cold CI run: a webhook slower than the run). That is a
            // create that did not finish in time, not a cluster out of reach.
            Ok(Err(e))
                if !not_sent(&e) && started.elapsed() + CLOSE_AT_TIMEOUT_SLACK >= timeout =>
            {
                last = (
                    None,
                    format!(
                        "the API server closed the connection at the create's {} s timeout, with no answer",
                        timeout.as_secs()
                    ),
                );
                unreachable = None;
                timed_out = true;
                longest = longest.max(timeout);
                maybe_written = true;
            }
            Ok(Err(e)) => {
                last = (None, format!("cannot reach the API server: {e}"));
                if not_sent(&e) {
                    unreachable = Some(plain_cause(&e));
                } else {
                    // What is known: the request went, no answer came.
                    maybe_written = true;
                    unreachable = Some(format!(
                        "the connection broke before the create was answered ({}); the check pod may have been \
                         written, so its name is deleted",
                        plain_cause(&e)
                    ));
                }
            }
            Err(_) => {
                last = (
                    None,
                    "no answer to the create before the deadline; the check pod may have been written, so its \
                     name is deleted"
                        .to_owned(),
                );
                timed_out = true;
                maybe_written = true;
                break;
            }
        }
    }
    // Delete by name in case (gone already is fine).
    if maybe_written {
        cleanup.maybe_created(&name);
    } else {
        cleanup.not_created(&name);
    }
    match (unreachable, timed_out) {
        // The last try got no answer at all.
        (Some(why), _) if last.0.is_none() => Created::Unreachable(why),
        (_, true) => Created::TimedOut(longest, last.1),
        _ => Created::Refused(last.0, last.1),
    }
}

/// A refusal because the namespace is being deleted: the cause `NamespaceTerminating` the API server's admission
/// gives it (issue 40, item 12).
fn terminating(s: &kube::core::Status) -> bool {
    s.code == 403
        && s.details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
}

/// A `409 AlreadyExists` after a try of ours that may have written the pod: the pod of that name, read back, is
/// ours when it has the run's label; its uid then goes to the cleanup. Not readable: ours by its name (unique to the
/// run), deleted by name.
async fn ours_after_conflict(
    api: &Api<Pod>,
    cleanup: &Cleanup,
    posted: Pod,
    deadline: Instant,
) -> Created {
    let name = posted.name_any();
    let run = |p: &Pod| p.labels().get(crate::pod::LABEL_RUN).cloned();
    match tokio::time::timeout_at(deadline, api.get(&name)).await {
        Ok(Ok(found)) if run(&found) == run(&posted) => {
            // Written by an earlier try of ours that got no answer: that try is settled.
            cleanup.settled(&name);
            cleanup.created(&name, found.metadata.uid.clone());
            Created::Ok(Box::new(found))
        }
        Ok(Ok(_)) => {
            cleanup.not_created(&name);
            Created::Refused(Some(409), format!("pods \"{name}\" already exists"))
        }
        _ => {
            cleanup.maybe_created(&name);
            Created::Ok(Box::new(posted))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::cleanup::CleanupReport;
    use super::*;

    /// The create of the demo check pod through `client`, in `tries` within `within`: how it ended, and the cleanup
    /// it registered with.
    async fn create_demo(client: kube::Client, tries: u32, within: Duration) -> (Created, Cleanup) {
        let api: Api<Pod> = Api::namespaced(client.clone(), "demo");
        let cleanup = Cleanup::new(client, "demo");
        let mut pod = Pod::default();
        pod.metadata.name = Some("jr2-preflight-demo-harness-run0001".to_owned());
        let outcome = create_pod(
            api,
            cleanup.clone(),
            pod,
            tries,
            Instant::now() + within,
            CreateNotes::default(),
        )
        .await;
        (outcome.created, cleanup)
    }

    /// The waiting line is said once, and only for a create that may wait longer than it has (issue 40, item 1: a
    /// create cut at 10 s by a near deadline said `after 10 s ... waiting up to 10 s` on the real cluster).
    #[test]
    fn the_waiting_line_only_when_the_create_may_wait_longer() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let notes = CreateNotes::new(Some(tx));
        notes.slow(CREATE_SLOW_NOTE, CREATE_SLOW_NOTE);
        assert!(rx.try_recv().is_err());
        notes.slow(CREATE_SLOW_NOTE, CREATE_SERVER_TIMEOUT);
        notes.slow(CREATE_SLOW_NOTE, CREATE_SERVER_TIMEOUT);
        let lines: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|u| match u {
                RunUpdate::Note { line } => line,
                _ => panic!("a note"),
            })
            .collect();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].ends_with("waiting up to 40 s"), "{lines:?}");
    }

    /// The figure of the timeout line is the longest any try waited, not the last try's (issue 40, item 1: a slow
    /// webhook's run said `did not finish the create of the check pod in 1 s`): a first try the API server answers
    /// after 8 s with a `500 ServerTimeout`, then tries cut to the 1 s the run's deadline leaves, each a `504`. Time
    /// is the runtime's, paused: exact.
    #[tokio::test(start_paused = true)]
    async fn the_timeout_is_the_longest_try_not_the_last() {
        use http_body_util::Full;
        use hyper::body::Bytes;
        let (service, mut handle) = tower_test::mock::pair::<
            http::Request<kube::client::Body>,
            http::Response<Full<Bytes>>,
        >();
        let client = kube::Client::new(service, "demo");
        let status = |code: u16, reason: &str, message: &str| {
            let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "code": code, "reason": reason, "message": message});
            http::Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap()
        };
        let server = tokio::spawn(async move {
            let mut timeouts = Vec::new();
            let mut n = 0;
            while let Some((request, send)) = handle.next_request().await {
                if request.method() != http::Method::POST {
                    continue;
                }
                let query = request.uri().query().unwrap_or_default().to_owned();
                timeouts.push(
                    query
                        .rsplit("timeout=")
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                );
                n += 1;
                if n == 1 {
                    tokio::time::sleep(Duration::from_secs(8)).await;
                    send.send_response(status(
                        500,
                        "ServerTimeout",
                        "The server was unable to return a response in the time allotted, but may still be processing the request",
                    ));
                } else {
                    send.send_response(status(
                        504,
                        "Timeout",
                        "Timeout: request did not complete within the allotted timeout",
                    ));
                }
            }
            timeouts
        });
        let (created, _) = create_demo(client, 3, Duration::from_secs(10)).await;
        let Created::TimedOut(waited, message) = created else {
            panic!("a timeout");
        };
        assert_eq!(
            message,
            "Timeout: request did not complete within the allotted timeout"
        );
        // The last tries had 1 s each; the first waited 8 s.
        let seconds = waited.as_secs_f64().round() as u64;
        insta::assert_snapshot!(
            render::create_timed_out(&seconds.to_string(), &message),
            @"error: provider preflight: the API server did not finish the create of the check pod in 8 s — its admission (a webhook) was too slow: Timeout: request did not complete within the allotted timeout"
        );
        // What each try gave the API server: all the 10 s but one, then what the deadline left.
        let timeouts = tokio::time::timeout(Duration::from_secs(60), server)
            .await
            .expect("the client is gone")
            .unwrap();
        assert_eq!(timeouts, ["9s", "1s", "1s"]);
    }

    /// A connection the API server closes, with no answer, once the create has lasted its `timeout` is the API
    /// server's own timeout (its filter kills the connection when the handler had begun its answer), said as a create
    /// that did not finish in time, never as a cluster out of reach (the cold CI run: `cannot reach the cluster: the
    /// connection broke before the create was answered`, for a webhook slower than the run). A server on loopback
    /// that reads the request, waits the `timeout` it names and closes.
    #[tokio::test]
    async fn a_connection_closed_at_the_server_timeout_is_a_timeout() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = socket.read(&mut buf).await.unwrap();
                assert!(n > 0, "the request ended early");
                head.extend_from_slice(&buf[..n]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            let seconds: u64 = head
                .split("timeout=")
                .nth(1)
                .and_then(|t| t.split('s').next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("a timeout in {head}"));
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            socket.shutdown().await.ok();
            seconds
        });
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let client = crate::cluster::client_of(config).unwrap();
        let (created, _) = create_demo(client, 1, Duration::from_millis(3_500)).await;
        let given = server.await.unwrap();
        assert_eq!(given, 2, "the 3.5 s left, in whole seconds, but one");
        let Created::TimedOut(waited, message) = created else {
            panic!("a timeout");
        };
        assert_eq!(waited.as_secs(), 2, "{waited:?}");
        insta::assert_snapshot!(
            render::create_timed_out("2", &message),
            @"error: provider preflight: the API server did not finish the create of the check pod in 2 s — its admission (a webhook) was too slow: the API server closed the connection at the create's 2 s timeout, with no answer"
        );
    }

    /// A connection that could not be opened wrote nothing: the pod is not deleted by name, and the words say the
    /// cluster cannot be reached (issue 25, item 4: only a create whose request went has an unknown outcome).
    #[tokio::test]
    async fn a_refused_connection_wrote_nothing() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let config = kube::Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
        let client = crate::cluster::client_of(config).unwrap();
        let (created, cleanup) = create_demo(client, 1, Duration::from_secs(10)).await;
        let Created::Unreachable(why) = created else {
            panic!("unreachable");
        };
        assert!(why.contains("refused") && !why.contains("broke"), "{why}");
        let report = cleanup.wait(Duration::from_secs(1)).await;
        assert_eq!(report, CleanupReport::default(), "nothing to delete");
    }
}
