//! What the fake API server holds: its objects by kind, namespace and name, each write a new `resourceVersion` and a
//! change in the history that watches replay, the container logs, the requests, and the moments of each pod's life;
//! and the uids and times it stamps on what it stores.

use std::collections::{BTreeMap, HashMap};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::authz::Rule;
use super::request::ApiRequest;

/// The moments that matter in one pod's life, as the fake saw them.
#[derive(Clone, Copy, Debug, Default)]
pub struct PodTimes {
    /// The create was answered.
    pub created: Option<Instant>,
    /// The probe process started.
    pub probe_started: Option<Instant>,
    /// The probe's `summary` line (its verdict) was published in its log.
    pub probe_summary_logged: Option<Instant>,
    /// The probe process exited (as `wait` saw it).
    pub probe_exited: Option<Instant>,
    /// The probe container's `terminated` status was recorded (just before the watchers are woken).
    pub probe_terminated: Option<Instant>,
    /// The pod was deleted (or marked for deletion).
    pub deleted: Option<Instant>,
}

/// The kinds of object the fake serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Kind {
    Pod,
    Event,
    NetworkPolicy,
    Deployment,
    ServiceAccount,
    Node,
}

impl Kind {
    pub(super) fn api_version(self) -> &'static str {
        match self {
            Kind::Pod | Kind::Event | Kind::ServiceAccount | Kind::Node => "v1",
            Kind::NetworkPolicy => "networking.k8s.io/v1",
            Kind::Deployment => "apps/v1",
        }
    }

    pub(super) fn kind(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Event => "Event",
            Kind::NetworkPolicy => "NetworkPolicy",
            Kind::Deployment => "Deployment",
            Kind::ServiceAccount => "ServiceAccount",
            Kind::Node => "Node",
        }
    }

    pub(super) fn plural(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::Event => "events",
            Kind::NetworkPolicy => "networkpolicies",
            Kind::Deployment => "deployments",
            Kind::ServiceAccount => "serviceaccounts",
            Kind::Node => "nodes",
        }
    }

    /// As the API server names a resource in its messages: `pods`, `deployments.apps`.
    pub(super) fn qualified(self) -> String {
        match self.api_version().split_once('/') {
            Some((group, _)) => format!("{}.{group}", self.plural()),
            None => self.plural().to_owned(),
        }
    }
}

/// One write, as a watch replays it.
pub(super) struct Change {
    pub(super) rv: u64,
    pub(super) kind: Kind,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub(super) type_: &'static str,
    pub(super) object: Value,
}

/// A container's log: its lines so far, and whether it ended.
#[derive(Default)]
pub(super) struct LogBuf {
    pub(super) lines: Vec<String>,
    pub(super) closed: bool,
}

/// An object's kind, namespace and name.
pub(super) type Key = (Kind, String, String);
/// A log's namespace, pod, container, and whether it is the previous one.
pub(super) type LogKey = (String, String, String, bool);

/// Everything the fake holds, behind one lock.
#[derive(Default)]
pub(super) struct State {
    pub(super) rv: u64,
    pub(super) seq: u64,
    pub(super) compacted: u64,
    pub(super) objects: BTreeMap<Key, Value>,
    pub(super) history: Vec<Change>,
    pub(super) logs: HashMap<LogKey, LogBuf>,
    pub(super) requests: Vec<ApiRequest>,
    pub(super) created: Vec<String>,
    pub(super) deleted: Vec<String>,
    pub(super) times: HashMap<String, PodTimes>,
    pub(super) kubelets: HashMap<(String, String), JoinHandle<()>>,
    pub(super) refusal: Option<(u16, String, String)>,
    /// The refusal applies to check pods only (`app.kubernetes.io/name: jr2-provider-preflight`), as a webhook that
    /// refuses the probe's image would: a Harness pod's dry run passes.
    pub(super) refusal_of_check_pods_only: bool,
    /// A label every created pod gets (key, value), as a mutating admission policy sets one.
    pub(super) label_rewrite: Option<(String, String)>,
    /// Secrets by (namespace, name): key -> value. The kubelet stand-in reads them; no route serves them (the driver
    /// has no business reading a Secret, and a test can assert it never asked).
    pub(super) secrets: HashMap<(String, String), BTreeMap<String, String>>,
    /// The permissions a test denied (`authz`).
    pub(super) denied: Vec<Rule>,
    /// The labels of the namespaces a test labelled.
    pub(super) namespace_labels: HashMap<String, BTreeMap<String, String>>,
    /// The namespaces being deleted ([`FakeKube::delete_namespace`](super::FakeKube::delete_namespace)).
    pub(super) terminating: std::collections::BTreeSet<String>,
    pub(super) closed: bool,
}

impl State {
    pub(super) fn next_rv(&mut self) -> u64 {
        self.rv += 1;
        self.rv
    }

    /// Stores `object` (a new `resourceVersion`), and records the change for the watchers.
    pub(super) fn put(&mut self, kind: Kind, mut object: Value, type_: &'static str) -> Value {
        let rv = self.next_rv();
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind());
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        self.objects.insert((kind, ns, name), object.clone());
        self.history.push(Change {
            rv,
            kind,
            type_,
            object: object.clone(),
        });
        object
    }

    pub(super) fn remove(&mut self, kind: Kind, ns: &str, name: &str) -> Option<Value> {
        let mut object = self
            .objects
            .remove(&(kind, ns.to_owned(), name.to_owned()))?;
        let rv = self.next_rv();
        object["metadata"]["resourceVersion"] = json!(rv.to_string());
        self.history.push(Change {
            rv,
            kind,
            type_: "DELETED",
            object: object.clone(),
        });
        Some(object)
    }

    pub(super) fn get(&self, kind: Kind, ns: &str, name: &str) -> Option<&Value> {
        self.objects.get(&(kind, ns.to_owned(), name.to_owned()))
    }
}

/// A fresh uid, shaped as the API server's (a UUID v4).
pub(super) fn next_uid(st: &mut State, base: u64) -> String {
    st.seq += 1;
    format!(
        "{:08x}-{:04x}-4{:03x}-8000-{:012x}",
        0x6a72_3200_u64 + base,
        st.seq & 0xffff,
        st.seq & 0xfff,
        st.seq
    )
}

/// RFC 3339 in UTC, to the second, as the API server writes it.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
    jiff::Timestamp::from_second(secs)
        .unwrap_or(jiff::Timestamp::MAX)
        .to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rfc3339_of_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(1_796_409_407)),
            "2026-12-04T18:36:47Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
    }
}
