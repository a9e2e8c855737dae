//! A real one-node Kubernetes for the driver's end-to-end tests: etcd, the API server, the controller manager, the
//! scheduler, and a node of containerd and the kubelet, all built from source by `tests/kube/build.sh` and run as
//! processes inside a network namespace of the run's own, the way Kubernetes' `hack/local-up-cluster.sh` runs them.
//!
//! - [`up`]: the supervisor (`jr2-kube-cluster up`), which starts it, waits until a pod can run, and tears it down
//!   when its caller goes away, even when the caller panicked or was killed (its stdin closes).
//! - `config`: the configuration files the components read (kubeconfigs, CNI, containerd, the kubelet).
//! - [`teardown`]: what a cluster leaves on the host and how it goes, and the sweep of a killed supervisor's.
//! - [`pki`]: the run's CA and the certificates of every component and user.
//! - [`Cluster`] (here): a test's handle on a running cluster: commands inside the namespace (the driver, kubectl, the
//!   fake provider), the admin's and the least-privilege user's kubeconfigs, a fresh Kubernetes namespace per test.
//!
//! The network rule: every process that connects to the cluster or that a pod connects to runs inside the namespace
//! (`nsenter --net=`), so nothing in the root namespace ever dials one of its addresses. The namespace has no route
//! out; the node's address sits on a bridge with no ports.

mod config;
pub mod pki;
pub mod teardown;
pub mod up;

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The node's name.
pub const NODE_NAME: &str = "jr2-node";
/// The node's address, inside the cluster's network namespace only.
pub const NODE_IP: &str = "10.77.0.1";
/// The pods' addresses (CNI bridge + host-local), inside the namespace only.
pub const POD_CIDR: &str = "10.78.0.0/24";
/// The pods' gateway (the CNI bridge's address).
pub const POD_GATEWAY: &str = "10.78.0.1";
/// The Services' range.
pub const SERVICE_CIDR: &str = "10.79.0.0/24";
/// Where the pause image is imported as.
pub const REGISTRY: &str = "registry.k8s.io";

/// What a running cluster is, as the supervisor writes it to `cluster.json` (and `cluster.env` for scripts).
#[derive(Clone, Debug)]
pub struct ClusterInfo {
    /// The run's folder.
    pub dir: PathBuf,
    /// The network namespace's name (`ip netns`).
    pub netns: String,
    /// Its path, for `nsenter --net=`.
    pub netns_path: PathBuf,
    /// The components' folder.
    pub bin: PathBuf,
    /// The node's name.
    pub node_name: String,
    /// The node's address.
    pub node_ip: String,
    /// The API server's URL.
    pub server: String,
    /// A kubeconfig of `system:masters`.
    pub admin_kubeconfig: PathBuf,
    /// A kubeconfig of the user `jr2-user` in the group `jr2-preflight`, which the shipped RoleBinding binds.
    pub user_kubeconfig: PathBuf,
    /// containerd's socket.
    pub containerd_socket: PathBuf,
    /// The API server's version.
    pub server_version: String,
    /// The nodes beyond the first (`StartOptions::nodes`), each labelled `jr2.dev/pool=<letter>` and tainted
    /// `jr2.dev/dedicated=<letter>:NoSchedule`.
    pub extra_nodes: Vec<ExtraNode>,
}

/// A node beyond the first: a containerd and a kubelet of its own (`up/nodes.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExtraNode {
    /// Its name (`jr2-node-b`).
    pub name: String,
    /// Its letter: its label `jr2.dev/pool=<letter>`, its taint, its components (`kubelet-<letter>`).
    pub letter: char,
    /// Its address, on the node bridge.
    pub ip: String,
    /// Its pods' range.
    pub pod_cidr: String,
    /// Its folder.
    pub dir: PathBuf,
    /// Its containerd's socket.
    pub containerd_socket: PathBuf,
}

impl ExtraNode {
    /// Its kubelet's component name, for [`Cluster::stop`] and [`Cluster::start_component`].
    pub fn kubelet(&self) -> String {
        format!("kubelet-{}", self.letter)
    }

    fn to_json(&self) -> Value {
        json!({"name": self.name, "letter": self.letter.to_string(), "ip": self.ip, "podCidr": self.pod_cidr,
               "dir": self.dir, "containerdSocket": self.containerd_socket})
    }

    fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            name: v["name"].as_str()?.to_owned(),
            letter: v["letter"].as_str()?.chars().next()?,
            ip: v["ip"].as_str()?.to_owned(),
            pod_cidr: v["podCidr"].as_str()?.to_owned(),
            dir: PathBuf::from(v["dir"].as_str()?),
            containerd_socket: PathBuf::from(v["containerdSocket"].as_str()?),
        })
    }
}

impl ClusterInfo {
    /// As JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "dir": self.dir, "netns": self.netns, "netnsPath": self.netns_path, "bin": self.bin,
            "nodeName": self.node_name, "nodeIp": self.node_ip, "server": self.server,
            "adminKubeconfig": self.admin_kubeconfig, "userKubeconfig": self.user_kubeconfig,
            "containerdSocket": self.containerd_socket, "serverVersion": self.server_version,
            "extraNodes": self.extra_nodes.iter().map(ExtraNode::to_json).collect::<Vec<_>>(),
        })
    }

    /// Read back from JSON.
    pub fn from_json(v: &Value) -> Option<Self> {
        let p = |k: &str| v[k].as_str().map(PathBuf::from);
        let s = |k: &str| v[k].as_str().map(str::to_owned);
        Some(Self {
            dir: p("dir")?,
            netns: s("netns")?,
            netns_path: p("netnsPath")?,
            bin: p("bin")?,
            node_name: s("nodeName")?,
            node_ip: s("nodeIp")?,
            server: s("server")?,
            admin_kubeconfig: p("adminKubeconfig")?,
            user_kubeconfig: p("userKubeconfig")?,
            containerd_socket: p("containerdSocket")?,
            server_version: s("serverVersion")?,
            // Absent from a one-node cluster's file of an older testkit: none.
            extra_nodes: v["extraNodes"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(ExtraNode::from_json)
                        .collect::<Option<Vec<_>>>()
                })
                .unwrap_or(Some(Vec::new()))?,
        })
    }

    /// As shell assignments, for scripts (`. cluster.env`).
    pub fn to_env(&self) -> String {
        format!(
            "JR2_KUBE_NETNS={}\nJR2_KUBE_NETNS_PATH={}\nJR2_KUBE_BIN={}\nJR2_KUBE_NODE={}\nJR2_KUBE_NODE_IP={}\n\
JR2_KUBE_SERVER={}\nJR2_KUBE_ADMIN={}\nJR2_KUBE_USER={}\nJR2_KUBE_CONTAINERD={}\n",
            self.netns,
            self.netns_path.display(),
            self.bin.display(),
            self.node_name,
            self.node_ip,
            self.server,
            self.admin_kubeconfig.display(),
            self.user_kubeconfig.display(),
            self.containerd_socket.display()
        )
    }
}

/// What the test harness gives the supervisor.
pub struct StartOptions {
    /// The `jr2-kube-cluster` binary.
    pub supervisor: PathBuf,
    /// The components' folder.
    pub bin: PathBuf,
    /// Image archives to import (the pause image among them, `registry.k8s.io/pause:3.10`).
    pub images: Vec<PathBuf>,
    /// How many nodes (1: the first only; at most 4). Each one beyond the first is labelled
    /// `jr2.dev/pool=<letter>` and tainted `jr2.dev/dedicated=<letter>:NoSchedule`, so a pod goes there only when it
    /// asks to.
    pub nodes: usize,
    /// kube-router's NetworkPolicy firewall in the cluster (issue 35); `None`: no policy is enforced.
    pub network_policy: Option<NetworkPolicyOptions>,
}

/// kube-router's firewall (`tests/kube/kube-router.sh`), run as a host process in the cluster's network namespace.
#[derive(Clone, Debug)]
pub struct NetworkPolicyOptions {
    /// The `kube-router` binary.
    pub binary: PathBuf,
    /// `--netpol-default-deny` (with the node's pod range in its annotation `kube-router.io/pod-cidrs`): a new pod's
    /// packets are dropped until its chains are programmed, so it is policed from its first packet. Without it (the
    /// dataplane's default mode) a pod's first packets, before kube-router has its address, are not policed.
    pub default_deny: bool,
}

/// A running cluster, owned by a test binary: torn down when the handle drops, or when the test process dies (the
/// supervisor sees its stdin close).
pub struct Cluster {
    info: ClusterInfo,
    supervisor: Child,
    control: std::sync::Mutex<Control>,
}

/// The supervisor's command channel: its stdin, and its stdout for the answers.
struct Control {
    stdin: Option<ChildStdin>,
    answers: Option<std::io::BufReader<std::process::ChildStdout>>,
}

impl Cluster {
    /// Starts a cluster (about 20 to 40 s on 2 cores) and waits until a pod can run on it.
    pub fn start(opts: StartOptions) -> Result<Self, String> {
        let dir =
            std::env::temp_dir().join(format!("jr2-kube-{}-{}", std::process::id(), unique()));
        let mut cmd = Command::new(&opts.supervisor);
        cmd.arg("up")
            .arg("--dir")
            .arg(&dir)
            .arg("--bin")
            .arg(&opts.bin);
        for image in &opts.images {
            cmd.arg("--image").arg(image);
        }
        if opts.nodes > 1 {
            cmd.arg("--nodes").arg(opts.nodes.to_string());
        }
        if let Some(np) = &opts.network_policy {
            cmd.arg("--kube-router").arg(&np.binary);
            if np.default_deny {
                cmd.arg("--netpol-default-deny");
            }
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("start {}: {e}", opts.supervisor.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        use std::io::BufRead;
        let mut line = String::new();
        let mut answers = std::io::BufReader::new(stdout);
        answers.read_line(&mut line).map_err(|e| e.to_string())?;
        let Some(path) = line.trim().strip_prefix("ready ") else {
            let _ = child.wait();
            return Err(format!(
                "the cluster did not start (supervisor said {:?}); its reasons are above",
                line.trim()
            ));
        };
        let v: Value = serde_json::from_slice(&std::fs::read(path).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let info = ClusterInfo::from_json(&v).ok_or("cluster.json lacks a field")?;
        Ok(Self {
            info,
            supervisor: child,
            control: std::sync::Mutex::new(Control {
                stdin,
                answers: Some(answers),
            }),
        })
    }

    /// Restarts a component (`kube-apiserver`, `kubelet`, ...) and waits until it is back (the API server: ready).
    pub fn restart(&self, component: &str) -> Result<(), String> {
        self.control("restart", "restarted", component)
    }

    /// Stops a component and leaves it stopped (`kubelet-b`: a node that stops answering).
    pub fn stop(&self, component: &str) -> Result<(), String> {
        self.control("stop", "stopped", component)
    }

    /// Starts a component [`Cluster::stop`] stopped, with its arguments.
    pub fn start_component(&self, component: &str) -> Result<(), String> {
        self.control("start", "started", component)
    }

    /// Starts the API server [`Cluster::stop`] stopped with a serving certificate of another CA (`up/other_ca.rs`),
    /// and waits until it is ready: every client of the cluster's kubeconfigs then fails TLS (`UnknownIssuer`), the
    /// cluster's own components too, until [`Cluster::stop`] and [`Cluster::start_component`] bring back the
    /// original certificate.
    pub fn start_api_server_other_ca(&self) -> Result<(), String> {
        self.control("start-other-ca", "started-other-ca", "kube-apiserver")
    }

    /// One command to the supervisor, and its answer.
    fn control(&self, verb: &str, done: &str, component: &str) -> Result<(), String> {
        use std::io::{BufRead, Write};
        let mut c = self.control.lock().map_err(|e| e.to_string())?;
        let Control { stdin, answers } = &mut *c;
        let stdin = stdin.as_mut().ok_or("the supervisor's stdin is closed")?;
        writeln!(stdin, "{verb} {component}").map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        answers
            .as_mut()
            .ok_or("no answers")?
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        if line.trim() == format!("{done} {component}") {
            Ok(())
        } else {
            Err(line.trim().to_owned())
        }
    }

    /// What it is.
    pub fn info(&self) -> &ClusterInfo {
        &self.info
    }

    /// A command that runs `program` inside the cluster's network namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.info.netns_path.display()))
            .arg("--")
            .arg(program);
        cmd
    }

    /// kubectl as the admin, inside the namespace; panics when it fails.
    pub fn kubectl(&self, args: &[&str]) -> String {
        self.admin(args, None)
    }

    /// kubectl as the admin with `stdin` as its input (`apply -f -`); panics when it fails.
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> String {
        self.admin(args, Some(stdin))
    }

    fn admin(&self, args: &[&str], stdin: Option<&str>) -> String {
        let out = self.kubectl_output(&self.info.admin_kubeconfig, args, stdin);
        assert!(
            out.status.success(),
            "kubectl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Node `name` is `Ready` and carries none of the node lifecycle controller's taints (`node.kubernetes.io/
    /// not-ready`, `unreachable`): a new pod may land on it. False when the API server does not answer.
    pub fn node_ready(&self, name: &str) -> bool {
        let out = self.kubectl_output(
            &self.info.admin_kubeconfig,
            &["get", "node", name, "-o", "json"],
            None,
        );
        let Ok(node) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
            return false;
        };
        let ready = node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let tainted = node["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| {
                t["key"]
                    .as_str()
                    .is_some_and(|k| k.starts_with("node.kubernetes.io/"))
            });
        ready && !tainted
    }

    /// A server-side dry run (`create --dry-run=server`) of `object` (JSON or YAML) in namespace `ns`, as the admin:
    /// what the API server's admission says of it, without writing it: `Ok` with the objects' names (`pod/<name>`,
    /// a line each), `Err` with its words (trimmed) when refused.
    pub fn server_dry_run(&self, ns: &str, object: &str) -> Result<String, String> {
        let out = self.kubectl_output(
            &self.info.admin_kubeconfig,
            &[
                "-n",
                ns,
                "create",
                "--dry-run=server",
                "-o",
                "name",
                "-f",
                "-",
            ],
            Some(object),
        );
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    /// kubectl with any kubeconfig, whatever its outcome.
    pub fn kubectl_output(&self, kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
        let mut cmd = self.command(self.info.bin.join("kubectl"));
        cmd.arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg("--request-timeout=30s")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd.spawn().expect("run kubectl");
        if let Some(input) = stdin {
            use std::io::Write;
            let mut pipe = child.stdin.take().expect("kubectl's stdin");
            pipe.write_all(input.as_bytes())
                .expect("write kubectl's stdin");
        }
        child.wait_with_output().expect("kubectl's output")
    }

    /// A fresh Kubernetes namespace with `labels`, in which the least-privilege user is bound by the shipped Role
    /// (`rbac`: the manifest's text, applied as it is).
    pub fn namespace(&self, name: &str, labels: &[(&str, &str)], rbac: Option<&str>) {
        let ns = json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()}
        });
        self.kubectl_stdin(&["apply", "-f", "-"], &ns.to_string());
        if let Some(manifest) = rbac {
            // The manifest's cluster-scoped documents (the nodes' ClusterRole and its binding) are the same for every
            // namespace: two tests applying them at once both try to create them, and one meets `AlreadyExists`
            // (`kubectl apply` reads, then creates). One apply at a time in this process.
            static APPLY: std::sync::Mutex<()> = std::sync::Mutex::new(());
            let _one = APPLY
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            self.kubectl_stdin(&["-n", name, "apply", "-f", "-"], manifest);
        }
        // Pods are refused until the controller manager has made the namespace's ServiceAccount.
        self.wait_for(
            &format!("the ServiceAccount default in {name}"),
            Duration::from_secs(60),
            || {
                self.kubectl_output(
                    &self.info.admin_kubeconfig,
                    &["-n", name, "get", "serviceaccount", "default", "-o", "name"],
                    None,
                )
                .status
                .success()
            },
        );
    }

    /// The pods of a namespace that match `selector`, as `kubectl get -o json` lists them.
    pub fn pods(&self, namespace: &str, selector: &str) -> Vec<Value> {
        let out = self.kubectl(&["-n", namespace, "get", "pods", "-l", selector, "-o", "json"]);
        let v: Value = serde_json::from_str(&out).expect("kubectl's JSON");
        v["items"].as_array().cloned().unwrap_or_default()
    }

    /// The Events of a namespace.
    pub fn events(&self, namespace: &str) -> Vec<Value> {
        let out = self.kubectl(&["-n", namespace, "get", "events", "-o", "json"]);
        let v: Value = serde_json::from_str(&out).expect("kubectl's JSON");
        v["items"].as_array().cloned().unwrap_or_default()
    }

    /// Polls `ready` until it holds, within `deadline`; panics naming `what` past it.
    pub fn wait_for(&self, what: &str, deadline: Duration, mut ready: impl FnMut() -> bool) {
        let start = Instant::now();
        while !ready() {
            assert!(
                start.elapsed() < deadline,
                "waiting for {what}: not within {deadline:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Ok(mut c) = self.control.lock() {
            drop(c.stdin.take());
        }
        let _ = self.supervisor.wait();
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
