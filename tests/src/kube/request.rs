//! One request the fake API server received, as it records and routes it: method, path, decoded query, JSON body,
//! and when it came.

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

/// One request the fake API server received, as it routes it.
#[derive(Clone, Debug)]
pub struct ApiRequest {
    /// The method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, decoded.
    pub query: BTreeMap<String, String>,
    /// The JSON body (Null when empty or not JSON).
    pub body: Value,
    /// When it came.
    pub at: Instant,
}

impl ApiRequest {
    /// A query parameter.
    pub fn q(&self, key: &str) -> Option<&str> {
        self.query.get(key).map(String::as_str)
    }

    /// A watch (`?watch=true`).
    pub fn is_watch(&self) -> bool {
        matches!(self.q("watch"), Some("true" | "1"))
    }
}
