//! The create of one check pod: registered with the cleanup before the request leaves, retried where a second try
//! may pass, and a create that may have written the pod before it failed still deleted.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use super::cleanup::Cleanup;

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
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
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
    cleanup.creating(&name);
    let mut wait = Duration::from_millis(500);
    let mut last: (Option<u16>, String) = (None, String::new());
    let mut unreachable = None;
    for attempt in 0..tries.max(1) {
        if attempt > 0 {
            if Instant::now() + wait >= deadline {
                break;
            }
            tokio::time::sleep(wait).await;
            wait *= 2;
        }
        let r = tokio::time::timeout_at(deadline, api.create(&PostParams::default(), &pod)).await;
        match r {
            Ok(Ok(p)) => {
                cleanup.created(&name, p.metadata.uid.clone());
                return Created::Ok(Box::new(p));
            }
            // An earlier try did create it: the 5xx came after the write.
            Ok(Err(kube::Error::Api(s))) if s.code == 409 && attempt > 0 => {
                cleanup.created(&name, None);
                return Created::Ok(Box::new(pod));
            }
            Ok(Err(kube::Error::Api(s))) => {
                last = (Some(s.code), s.message.clone());
                if !matches!(s.code, 429 | 500 | 502 | 503 | 504) {
                    break;
                }
            }
            Ok(Err(e)) => {
                last = (None, format!("cannot reach the API server: {e}"));
                unreachable = Some(plain_cause(&e));
            }
            Err(_) => {
                last = (
                    None,
                    "no answer from the API server before the deadline".to_owned(),
                );
                break;
            }
        }
    }
    // A 5xx may have come after the write: delete by name in case (gone already is fine).
    if last.0.is_some_and(|c| c >= 500) {
        cleanup.created(&name, None);
    } else {
        cleanup.not_created(&name);
    }
    match unreachable {
        // The last try got no answer at all, so nothing was written.
        Some(why) if last.0.is_none() => Created::Unreachable(why),
        _ => Created::Refused(last.0, last.1),
    }
}
