//! `jr2-preflight`: the host-side driver of the provider preflight.
//!
//! `jr2 up` hands it a plan; it builds one check pod per distinct placement of the Harness pods, runs `jr2-probe run`
//! in each, streams why a pod is pending, reads the probe's verdict (its JSON lines, else the termination message),
//! prints the contract's lines, and deletes the pods on every path.

pub mod access;
pub mod admission;
pub mod bounded;
pub mod cluster;
pub mod credentials;
pub mod diagnose;
pub mod evidence;
pub mod kube_proxy;
pub mod kubeconfig_files;
pub mod network_policy;
pub mod one_off;
pub mod plan;
pub mod pod;
pub mod pod_security;
pub mod pull_secrets;
pub mod redact;
pub mod run;
pub mod scheduling;
pub mod server_clock;
pub mod session;
pub mod signals;
pub mod verdict;
pub mod workload;
pub mod yaml;
