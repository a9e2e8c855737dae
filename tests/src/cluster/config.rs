//! The configuration files the cluster's components read, as text: a kubeconfig per identity, the CNI bridge's
//! conflist, containerd's `config.toml` and the kubelet's `KubeletConfiguration`; and the service addresses they
//! name.

use std::path::Path;

use super::pki::write_private;
use super::{NODE_IP, POD_CIDR, POD_GATEWAY, REGISTRY, SERVICE_CIDR};

pub(super) fn service_ip(n: u8) -> String {
    let base = SERVICE_CIDR.split('/').next().unwrap_or_default();
    let mut parts: Vec<&str> = base.split('.').collect();
    let last = n.to_string();
    parts.pop();
    let mut s = parts.join(".");
    s.push('.');
    s.push_str(&last);
    s
}

pub(super) fn write_kubeconfig(
    path: &Path,
    server: &str,
    ca: &Path,
    crt: &Path,
    key: &Path,
    user: &str,
) -> std::io::Result<()> {
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: jr2-test\n  cluster:\n    server: {server}\n    certificate-authority: {}\n\
users:\n- name: {user}\n  user:\n    client-certificate: {}\n    client-key: {}\n\
contexts:\n- name: jr2-test\n  context:\n    cluster: jr2-test\n    user: {user}\n    namespace: default\ncurrent-context: jr2-test\n",
        ca.display(),
        crt.display(),
        key.display()
    );
    write_private(path, yaml.as_bytes())
}

pub(super) fn cni_config(dir: &Path) -> String {
    cni_config_of(dir, "jr2-cni0", POD_CIDR, POD_GATEWAY)
}

/// The CNI conflist of a node: its own bridge, pod range and gateway, its own `host-local` data folder.
pub(super) fn cni_config_of(dir: &Path, bridge: &str, subnet: &str, gateway: &str) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "jr2",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "dataDir": dir.join("cni/ipam"),
                    "ranges": [[{"subnet": subnet, "gateway": gateway}]],
                    "routes": [{"dst": "0.0.0.0/0"}]
                }
            }
        ]
    }))
    .unwrap()
}

pub(super) fn containerd_config(dir: &Path, sock: &Path, cni_conf: &Path) -> String {
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "{sock}"

[debug]
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{REGISTRY}/pause:3.10"
  restrict_oom_score_adj = true
  # The pods' network namespaces under this run's state folder (not /run/netns), so the teardown's unmount of the
  # run's folder removes any that a sandbox removal missed.
  netns_mounts_under_state_dir = true
  enable_selinux = false
  max_container_log_line_size = 16384

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
"#,
        root = dir.join("containerd/root").display(),
        state = dir.join("containerd/state").display(),
        sock = sock.display(),
        opt = dir.join("containerd/opt").display(),
        cni = cni_conf.display(),
    )
}

#[allow(clippy::too_many_arguments)]
pub(super) fn kubelet_config(
    netns: &str,
    dir: &Path,
    ca: &Path,
    crt: &Path,
    key: &Path,
    sock: &Path,
    resolv: &Path,
) -> String {
    let node = KubeletNode {
        cgroup_root: netns,
        address: NODE_IP,
        healthz_address: "127.0.0.1",
    };
    kubelet_config_of(&node, dir, ca, crt, key, sock, resolv)
}

/// What differs between the kubelets of one cluster (`nodes.rs`): their cgroup roots, and the addresses they
/// listen on (two kubelets cannot share the healthz port of one address).
pub(super) struct KubeletNode<'a> {
    /// The `cgroupRoot`, without its leading `/`.
    pub cgroup_root: &'a str,
    /// The node's address (`address`, the API server's way in).
    pub address: &'a str,
    /// Where the healthz port listens.
    pub healthz_address: &'a str,
}

pub(super) fn kubelet_config_of(
    node: &KubeletNode<'_>,
    dir: &Path,
    ca: &Path,
    crt: &Path,
    key: &Path,
    sock: &Path,
    resolv: &Path,
) -> String {
    let KubeletNode {
        cgroup_root,
        address,
        healthz_address,
    } = node;
    // No clusterDNS, as a cluster without a DNS add-on: every pod then gets the kubelet's `MissingClusterDNS`
    // warning, which must never become the driver's pending reason.
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /{cgroup_root}
podLogsDir: {logs}
containerRuntimeEndpoint: unix://{sock}
address: {address}
port: 10250
readOnlyPort: 0
healthzBindAddress: {healthz_address}
healthzPort: 10248
tlsCertFile: {crt}
tlsPrivateKeyFile: {key}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: {ca}
authorization:
  mode: Webhook
failSwapOn: false
resolvConf: {resolv}
makeIPTablesUtilChains: false
serializeImagePulls: false
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%"
  nodefs.inodesFree: "1%"
  imagefs.available: "1%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusReportFrequency: 10s
"#,
        logs = dir.join("pod-logs").display(),
        sock = sock.display(),
        crt = crt.display(),
        key = key.display(),
        ca = ca.display(),
        resolv = resolv.display(),
    )
}
