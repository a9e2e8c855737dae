//! The create of one check pod: registered with the cleanup before the request leaves, retried where a second try
//! may pass, and a create that may have written the pod before it failed still deleted.
//!
//! Only a create that certainly wrote nothing is forgotten: one the API server refused with a 4xx, or whose
//! connection could not be opened. Any other end (a 5xx, which a real API server sends while etcd commits; a
//! connection closed after the request went; no answer before the deadline) leaves the outcome unknown, and the
//! pod's name, ours and unique to the run, is deleted as a created pod's is (issue 25, item 4). A `409
//! AlreadyExists` after an earlier try of ours is our own pod.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use super::cleanup::Cleanup;

/// The deadline the API server is given for each create (its `timeout` query parameter, as kubectl's
/// `--request-timeout` sets it; the API server's own bound is 34 s): after it, plus a margin for the clock, a create
/// that got no answer can no longer be written, and a by-name 404 confirms the pod is not there. Admission webhooks
/// take 10 s at most by default.
pub(super) const CREATE_SERVER_TIMEOUT: Duration = Duration::from_secs(15);
const CREATE_SETTLED_AFTER: Duration = Duration::from_secs(16);

/// POSTs `pod` with [`CREATE_SERVER_TIMEOUT`] as its server-side deadline.
async fn post(api: &Api<Pod>, pod: &Pod) -> Result<Pod, kube::Error> {
    let body = serde_json::to_vec(pod).map_err(kube::Error::SerdeError)?;
    let request = kube::core::Request::new(api.resource_url())
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    let (mut parts, body) = request.into_parts();
    let uri = format!("{}&timeout={}s", parts.uri, CREATE_SERVER_TIMEOUT.as_secs());
    parts.uri = uri.parse().map_err(|e: http::uri::InvalidUri| {
        kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e.into()))
    })?;
    api.clone()
        .into_client()
        .request::<Pod>(http::Request::from_parts(parts, body))
        .await
}

/// How a create ended.
pub(super) enum Created {
    /// Created: the pod as the API server answered.
    Ok(Box<Pod>),
    /// Refused (or not answered in time): the HTTP status when one came, and the message.
    Refused(Option<u16>, String),
    /// The API server could not be reached at all: why, in plain words.
    Unreachable(String),
}

/// Why a request got no answer, in plain words: the innermost cause (`Connection refused (os error 111)`), which
/// is what a person acts on, rather than the layers above it (`ServiceError: client error (Connect)`).
pub(super) fn plain_cause(e: &kube::Error) -> String {
    // Credentials that could not be refreshed: words of ours, never what a plugin printed (issue 40, item 5).
    if let Some(auth) = crate::credentials::auth_error(e) {
        return crate::credentials::words(auth);
    }
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
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

/// Creates one pod; retries what may pass on a second try (429, 5xx but 501, no answer).
pub(super) async fn create_pod(
    api: Api<Pod>,
    cleanup: Cleanup,
    pod: Pod,
    tries: u32,
    deadline: Instant,
) -> Created {
    let name = pod.name_any();
    let mut wait = Duration::from_millis(500);
    let mut last: (Option<u16>, String) = (None, String::new());
    let mut unreachable = None;
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
        let settled_by = Instant::now() + CREATE_SETTLED_AFTER;
        cleanup.creating(&name, settled_by);
        let r = tokio::time::timeout_at(deadline, post(&api, &pod)).await;
        if let Ok(Ok(_) | Err(kube::Error::Api(_))) = &r {
            cleanup.answered(&name, settled_by);
        }
        match r {
            Ok(Ok(p)) => {
                cleanup.created(&name, p.metadata.uid.clone());
                return Created::Ok(Box::new(p));
            }
            // An earlier try did create it (the 5xx, or the broken connection, came after the write): our pod, if
            // it carries this run's label; read back for its uid, so that its delete is as careful as any.
            Ok(Err(kube::Error::Api(s))) if s.code == 409 && attempt > 0 => {
                return ours_after_conflict(&api, &cleanup, pod, deadline).await;
            }
            Ok(Err(kube::Error::Api(s))) => {
                last = (Some(s.code), s.message.clone());
                unreachable = None;
                maybe_written |= s.code >= 500;
                if !matches!(s.code, 429 | 500 | 502 | 503 | 504) {
                    break;
                }
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
    match unreachable {
        // The last try got no answer at all.
        Some(why) if last.0.is_none() => Created::Unreachable(why),
        _ => Created::Refused(last.0, last.1),
    }
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
        let api: Api<Pod> = Api::namespaced(client.clone(), "demo");
        let cleanup = Cleanup::new(client, "demo");
        let mut pod = Pod::default();
        pod.metadata.name = Some("jr2-preflight-demo-harness-run0001".to_owned());
        let created = create_pod(
            api,
            cleanup.clone(),
            pod,
            1,
            Instant::now() + Duration::from_secs(10),
        )
        .await;
        let Created::Unreachable(why) = created else {
            panic!("unreachable");
        };
        assert!(why.contains("refused") && !why.contains("broke"), "{why}");
        let report = cleanup.wait(Duration::from_secs(1)).await;
        assert_eq!(report, CleanupReport::default(), "nothing to delete");
    }
}
