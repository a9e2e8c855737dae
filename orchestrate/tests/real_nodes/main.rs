//! The driver on a real cluster of two nodes (issue 39): the first node as in `real_cluster`, and node B
//! (`jr2-node-b`, a containerd and a kubelet of its own, labelled `jr2.dev/pool=b`, tainted
//! `jr2.dev/dedicated=b:NoSchedule`; `jr2_testkit::cluster`, "Several nodes"). What one node cannot show: a placement
//! per node, the scheduler's reasons over two nodes, a spread over zones the nodes do not label, a node whose kubelet
//! stops mid-check or before it starts the pod, and a check pod that would have to preempt (it never does).
//!
//! A node's kubelet stopped is seen as the driver sees it on a real cluster: the check pod's readiness gate keeps its
//! `Ready` condition `False`, so the pod shows nothing, and the node is named from the Node the driver watches (the
//! shipped ClusterRole `jr2-preflight-nodes`, which every namespace's RBAC here applies). The tests that stop a kubelet,
//! cordon a node or fill one hold the cluster alone (`alone()`), and a stopped kubelet is started again however the
//! test ends (`KubeletBStopped`), so no other test meets node B down.
//!
//! Not in `cargo test`'s default set (`test = false`): it needs what `real_cluster` needs. `tests/run.sh`'s
//! `cluster-nodes` step runs it:
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
