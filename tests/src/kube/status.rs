//! The `Status` bodies the API server answers a refusal or a failure with (`NotFound`, `BadRequest`, `Conflict`...),
//! in its words.

use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::store::Kind;
use crate::http::{Body, json};

/// The API server's `Status` answer.
pub(super) fn status(
    code: u16,
    reason: &str,
    message: &str,
    details: Option<Value>,
) -> Response<Body> {
    let mut v = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": reason, "code": code});
    if let Some(d) = details {
        v["details"] = d;
    }
    json(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &v,
    )
}

/// The API server's 404 for an object that is not there (`pods "x" not found`).
pub(super) fn not_found(kind: Kind, name: &str) -> Response<Body> {
    status(
        404,
        "NotFound",
        &format!("{} \"{name}\" not found", kind.qualified()),
        Some(match kind.api_version().split_once('/') {
            Some((group, _)) => json!({"name": name, "group": group, "kind": kind.plural()}),
            None => json!({"name": name, "kind": kind.plural()}),
        }),
    )
}
