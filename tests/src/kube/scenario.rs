//! What the kubelet stand-in (and the scheduler) do with each pod created: the [`Scenario`] a test sets, a
//! [`Script`] of its own among them, and the scheduler's words for a pod no node can take.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::pod_ctl::PodCtl;

/// The scheduler's message for a pod no node can take (1.35's wording, from `FitError`).
pub const UNSCHEDULABLE_TAINT_MEMORY: &str = "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient memory. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.";

/// The same pod a moment later, once an autoscaler added a node that is still too small.
pub const UNSCHEDULABLE_MEMORY: &str = "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient memory. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.";

/// A scripted kubelet: what happens to one pod, given its handle. Return when the pod's containers are done.
pub type Script = Arc<dyn ScriptFn>;

/// What a [`Script`] is: any such closure. A trait of its own only so that `Script`, and so [`Scenario`], is `Debug`.
pub trait ScriptFn: Fn(PodCtl) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync {}

impl<F> ScriptFn for F where F: Fn(PodCtl) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync {}

impl std::fmt::Debug for dyn ScriptFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("..")
    }
}

/// What the kubelet stand-in (and scheduler) do with each pod created.
#[derive(Clone, Debug)]
pub enum Scenario {
    /// Scheduled at once, the Custodian started, the probe run to its end.
    AllOk,
    /// `PodScheduled=False`, `Unschedulable`, with each message in turn for `each` (a `FailedScheduling` Event each
    /// time; a message repeated is the same status written again), then scheduled and run as [`Scenario::AllOk`].
    UnschedulableThenScheduled {
        /// The scheduler's messages, in order.
        messages: Vec<String>,
        /// How long each stands.
        each: Duration,
    },
    /// Scheduled; the Custodian runs; the probe's image never pulls: `ErrImagePull`, then `ImagePullBackOff` (the
    /// kubelet's messages and Events), until the pod is deleted.
    ImagePullBackOff,
    /// Scheduled; the Custodian runs; the probe waits in `CreateContainerConfigError` with this message (the
    /// kubelet's, e.g. `secret "x" not found`), with its `Failed` Event, until the pod is deleted.
    CreateContainerConfigError {
        /// The waiting message.
        message: String,
    },
    /// Scheduled; a volume of the Custodian does not mount: the Custodian stays `ContainerCreating` and the probe
    /// `PodInitializing`, and only a `FailedMount` Event (repeated, counting up) says why.
    FailedMount {
        /// The volume.
        volume: String,
        /// The Secret that is missing.
        secret: String,
    },
    /// Run as [`Scenario::AllOk`], but the probe process is killed (SIGKILL) right after its first `result` line, and
    /// its status is `terminated`, `OOMKilled`, exit code 137.
    OomKilledAfterFirstResult,
    /// Created, then nothing: never scheduled (no status beyond `Pending`).
    Nothing,
    /// A script of the test's own.
    Script(Script),
}
