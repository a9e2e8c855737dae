//! The driver on a real cluster of two nodes (issue 39): the first node as in `real_cluster`, and node B
//! (`jr2-node-b`, a containerd and a kubelet of its own, labelled `jr2.dev/pool=b`, tainted
//! `jr2.dev/dedicated=b:NoSchedule`; `jr2_testkit::cluster`, "Several nodes"). What one node cannot show: a placement
//! per node, the scheduler's reasons over two nodes, a spread over zones the nodes do not label, a node whose kubelet
//! stops mid-check or before it starts the pod, and a check pod that would have to preempt (it never does).
//!
//! Not in `cargo test`'s default set (`test = false`): it needs what `real_cluster` needs. It is not a step of
//! `tests/run.sh` yet (tests/README.md, "Several nodes"); by hand:
//!
//! ```sh
//! cargo test -p jr2-preflight --test real_nodes
//! ```

/// Two nodes.
pub const NODES: usize = 2;
/// No NetworkPolicy enforced: the tests of kube-router's firewall are `real_netpol`'s.
pub const NETWORK_POLICY: bool = false;

#[path = "../real_cluster/harness.rs"]
#[allow(dead_code)]
mod harness;

mod nodes;
