//! The driver against a real Kubernetes: a one-node cluster of the real components (etcd, the API server, the
//! controller manager, the scheduler, containerd and the kubelet), built by `tests/kube/build.sh` and started in a
//! network namespace of its own by `jr2_testkit::cluster`. What the fake API server cannot show: the real admission,
//! scheduler, kubelet and RBAC answers, the real watch and log streams.
//!
//! Not in `cargo test`'s default set (`test = false` in `orchestrate/Cargo.toml`): the cluster needs root, the Go
//! build and the images. `tests/run.sh`'s `cluster` step runs it:
//!
//! ```sh
//! cargo test -p jr2-preflight --test real_cluster
//! ```

/// One node: the tests of several nodes are `real_nodes` (`tests/real_nodes/main.rs`), on a cluster of their own.
pub const NODES: usize = 1;
/// No NetworkPolicy enforced: the tests of kube-router's firewall are `real_netpol`'s.
pub const NETWORK_POLICY: bool = false;

mod admission;
mod api_server_ca;
mod client;
mod cluster_ways;
mod control_plane;
mod event_storm;
mod harness;
mod kubelet;
mod mutation;
mod pod_security;
mod rbac;
mod runs;
mod scheduling;
mod signals;
mod webhook;
