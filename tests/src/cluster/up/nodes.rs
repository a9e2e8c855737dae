//! The cluster's extra nodes (issue 39; `../shared/research/real-kubernetes.md`, "Several nodes"): each a containerd
//! and a kubelet of its own, in the cluster's one network namespace, on a further address of the node bridge
//! (10.77.0.2, ...). Each has its own folder under `nodes/<letter>/` (containerd's root, state and socket, the CNI
//! conflist with its own bridge, `host-local` data and pod range, the kubelet's root, certificates and pod logs), its
//! own client certificate (`system:node:<name>`) and serving certificate naming its address, its own cgroup root
//! (`/<netns>-<letter>`), and every image imported into its containerd.
//!
//! Every extra node is labelled `jr2.dev/pool=<letter>` and tainted `jr2.dev/dedicated=<letter>:NoSchedule` when it
//! registers: a pod lands there only when it asks to, so a test that does not know of it is placed as on a one-node
//! cluster.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::super::config::{
    KubeletNode, cni_config_of, containerd_config, kubelet_config_of, write_kubeconfig,
};
use super::super::pki::{Identity, Pki};
use super::super::teardown::make_cgroup_root;
use super::super::{ExtraNode, NODE_NAME};
use super::{Supervisor, io, run};

/// At most this many extra nodes (their components' names are static).
pub const MAX_EXTRA: usize = 3;
/// The extra nodes' letters, and the names of their components (`stop kubelet-b`).
const EXTRA: [(char, &str, &str); MAX_EXTRA] = [
    ('b', "containerd-b", "kubelet-b"),
    ('c', "containerd-c", "kubelet-c"),
    ('d', "containerd-d", "kubelet-d"),
];

/// The label every extra node carries (`jr2.dev/pool=<letter>`).
pub const POOL_LABEL: &str = "jr2.dev/pool";
/// The taint every extra node carries (`jr2.dev/dedicated=<letter>:NoSchedule`).
pub const DEDICATED_TAINT: &str = "jr2.dev/dedicated";

/// What an extra node needs of the cluster's start.
pub(in super::super) struct Shared<'a> {
    pub pki: &'a Pki,
    pub ca: &'a Path,
    pub server: &'a str,
    pub images: &'a [PathBuf],
    pub resolv: &'a Path,
}

/// The `n`-th extra node (0-based): its name, address, pod range and folder.
pub(in super::super) fn extra_node(dir: &Path, n: usize) -> ExtraNode {
    let (letter, _, _) = EXTRA[n];
    let index = n + 1;
    let node_dir = dir.join("nodes").join(letter.to_string());
    ExtraNode {
        name: format!("{NODE_NAME}-{letter}"),
        ip: format!("10.77.0.{}", index + 1),
        pod_cidr: format!("10.78.{index}.0/24"),
        containerd_socket: node_dir.join("containerd.sock"),
        dir: node_dir,
        letter,
    }
}

impl Supervisor {
    /// Starts the `n`-th extra node's containerd (its images imported) and kubelet; the caller waits for it to be
    /// Ready.
    pub(in super::super) fn start_extra_node(
        &mut self,
        n: usize,
        shared: &Shared<'_>,
    ) -> Result<ExtraNode, String> {
        let node = extra_node(&self.dir, n);
        let (letter, containerd_name, kubelet_name) = EXTRA[n];
        let index = n + 1;
        let dir = node.dir.clone();
        std::fs::create_dir_all(&dir).map_err(io)?;
        let p = |p: &Path| p.display().to_string();
        run(
            "ip",
            &[
                "-n",
                &self.netns,
                "addr",
                "add",
                &format!("{}/24", node.ip),
                "dev",
                "jr2-node",
            ],
        )?;

        // Its certificates and kubeconfig.
        let (crt, key) = shared
            .pki
            .server(
                &format!("kubelet-{letter}"),
                &node.name,
                &[node.name.clone(), node.ip.clone()],
            )
            .map_err(io)?;
        let user = format!("system:node:{}", node.name);
        let client_file = format!("kubelet-client-{letter}");
        let (client_crt, client_key) = shared
            .pki
            .client(&Identity {
                file: &client_file,
                user: &user,
                groups: &["system:nodes"],
            })
            .map_err(io)?;
        let kubeconfig = dir.join("kubelet.kubeconfig");
        write_kubeconfig(
            &kubeconfig,
            shared.server,
            shared.ca,
            &client_crt,
            &client_key,
            &user,
        )
        .map_err(io)?;

        // containerd, and the images.
        let sock = node.containerd_socket.clone();
        let cni_conf = dir.join("cni/net.d");
        std::fs::create_dir_all(&cni_conf).map_err(io)?;
        std::fs::write(
            cni_conf.join("10-jr2.conflist"),
            cni_config_of(
                &dir,
                &format!("jr2-cni{index}"),
                &node.pod_cidr,
                &format!("10.78.{index}.1"),
            ),
        )
        .map_err(io)?;
        let toml = dir.join("containerd.toml");
        std::fs::write(&toml, containerd_config(&dir, &sock, &cni_conf)).map_err(io)?;
        self.spawn_system(
            containerd_name,
            "containerd",
            &["--config".into(), p(&toml)],
        )?;
        self.wait(&format!("{containerd_name}'s socket"), |_| {
            Command::new("ctr")
                .args(["--address", &p(&sock), "version"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })?;
        super::import_images(&sock, shared.images)?;

        // The kubelet.
        let cgroup_root = format!("{}-{letter}", self.netns);
        let yaml = dir.join("kubelet.yaml");
        let kubelet = KubeletNode {
            cgroup_root: &cgroup_root,
            address: &node.ip,
            healthz_address: &node.ip,
        };
        std::fs::write(
            &yaml,
            kubelet_config_of(&kubelet, &dir, shared.ca, &crt, &key, &sock, shared.resolv),
        )
        .map_err(io)?;
        make_cgroup_root(&cgroup_root)?;
        self.spawn(
            kubelet_name,
            "kubelet",
            &[
                format!("--config={}", p(&yaml)),
                format!("--kubeconfig={}", p(&kubeconfig)),
                format!("--root-dir={}", p(&dir.join("kubelet"))),
                format!("--cert-dir={}", p(&dir.join("kubelet-pki"))),
                format!("--hostname-override={}", node.name),
                format!("--node-ip={}", node.ip),
                format!("--node-labels={POOL_LABEL}={letter}"),
                format!("--register-with-taints={DEDICATED_TAINT}={letter}:NoSchedule"),
                "--v=0".into(),
            ],
        )?;
        Ok(node)
    }
}

/// The cgroup roots and containerd sockets of the extra nodes a run's folder holds (for the teardown, also of a
/// supervisor that was killed): `(cgroup root without its /, socket)`.
pub(in super::super) fn extra_nodes_of(dir: &Path, netns: &str) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir.join("nodes")) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if EXTRA.iter().any(|(l, _, _)| l.to_string() == name) {
            out.push((format!("{netns}-{name}"), e.path().join("containerd.sock")));
        }
    }
    out
}
