//! The driver on a real cluster whose NetworkPolicies are enforced (issue 35): the one-node cluster of
//! `real_cluster`, with kube-router's firewall (`tests/kube/kube-router.sh`, `jr2_testkit::cluster`'s
//! `StartOptions::network_policy`) in its `--netpol-default-deny` mode, so that a new pod is policed from its first
//! packet. Beside each run, a Harness-like pod (the Harness labels, dialing the provider on the node's address) shows
//! what a Turn meets; the preflight's verdict and that pod's fate are compared, row by row.
//!
//! Not in `cargo test`'s default set (`test = false`): it needs what `real_cluster` needs, and kube-router.
//! `tests/run.sh`'s `cluster-netpol` step runs it:
//!
//! ```sh
//! cargo test -p jr2-preflight --test real_netpol
//! ```

/// One node.
pub const NODES: usize = 1;
/// kube-router's firewall, in its `--netpol-default-deny` mode.
pub const NETWORK_POLICY: bool = true;

#[path = "../real_cluster/harness.rs"]
#[allow(dead_code)]
mod harness;

mod policies;
