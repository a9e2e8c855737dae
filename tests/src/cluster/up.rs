//! The supervisor of one test cluster (`jr2-kube-cluster up`): it creates the network namespace, the certificates
//! and the configuration, starts etcd, the API server, the controller manager, the scheduler, containerd and the
//! kubelet inside the namespace, waits until the cluster can run a pod, and tears everything down when its caller
//! goes away (stdin closed, or SIGINT/SIGTERM/SIGHUP).
//!
//! Everything that speaks to the network runs inside the namespace (`nsenter --net=`, which, unlike `ip netns exec`,
//! does not remount `/sys`): the components, and every client the supervisor uses (kubectl for readiness). The
//! supervisor itself only creates files and processes, so nothing in the root namespace ever connects to an address
//! of the cluster's.
//!
//! What this machine kind needs (`../shared/research/real-kubernetes.md`): cgroup v1 and the cgroupfs driver,
//! `restrict_oom_score_adj` (no `CAP_SYS_RESOURCE`), Debian's runc (seccomp), a `cgroupRoot` and a `podLogsDir` of
//! this run's own (two kubelets that share them kill each other's containers), images imported, never pulled.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::pki::{Identity, Pki, write_private};
use super::{ClusterInfo, NODE_IP, NODE_NAME, POD_CIDR, POD_GATEWAY, REGISTRY, SERVICE_CIDR};

/// The options of `up`.
pub struct UpOptions {
    /// The run's folder (created; removed at teardown unless `keep`).
    pub dir: PathBuf,
    /// The folder of the built components (`tests/kube/build.sh`'s `bin/`).
    pub bin: PathBuf,
    /// Image archives to import, the pause image first.
    pub images: Vec<PathBuf>,
    /// The RBAC manifest whose ClusterRole-free Role the least-privilege user is bound by, per namespace.
    pub keep: bool,
}

/// A started component, with what started it (for a restart).
struct Component {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    child: Child,
}

/// The running cluster, as the supervisor holds it.
pub struct Supervisor {
    dir: PathBuf,
    bin: PathBuf,
    netns: String,
    components: Vec<Component>,
    keep: bool,
}

/// Every wait of the start has this deadline.
const START_DEADLINE: Duration = Duration::from_secs(180);

impl Supervisor {
    /// Starts the whole cluster; on any failure, tears down what was started and says why (with the tail of the
    /// component's log).
    pub fn up(opts: UpOptions) -> Result<(Self, ClusterInfo), String> {
        sweep_stale();
        let netns = format!("jr2k-{}", std::process::id());
        std::fs::create_dir_all(opts.dir.join("logs"))
            .map_err(|e| format!("{}: {e}", opts.dir.display()))?;
        let mut sup = Self {
            dir: opts.dir.clone(),
            bin: opts.bin.clone(),
            netns,
            components: Vec::new(),
            keep: opts.keep,
        };
        register(&sup.netns, &sup.dir);
        match sup.start(&opts) {
            Ok(info) => Ok((sup, info)),
            Err(e) => {
                let logs = sup.log_tails();
                sup.down();
                Err(format!("{e}\n{logs}"))
            }
        }
    }

    fn start(&mut self, opts: &UpOptions) -> Result<ClusterInfo, String> {
        let dir = self.dir.clone();
        std::fs::write(dir.join("supervisor.pid"), std::process::id().to_string()).map_err(io)?;
        self.network()?;
        let pki_dir = dir.join("pki");
        let pki = Pki::new(&pki_dir).map_err(io)?;
        let ca = pki.ca();
        let (api_crt, api_key) = pki
            .server(
                "apiserver",
                "kube-apiserver",
                &[
                    "kubernetes".into(),
                    "kubernetes.default".into(),
                    "kubernetes.default.svc".into(),
                    "kubernetes.default.svc.cluster.local".into(),
                    "localhost".into(),
                    "127.0.0.1".into(),
                    NODE_IP.into(),
                    service_ip(1),
                ],
            )
            .map_err(io)?;
        let (kubelet_crt, kubelet_key) = pki
            .server("kubelet", NODE_NAME, &[NODE_NAME.into(), NODE_IP.into()])
            .map_err(io)?;
        let (akc_crt, akc_key) = pki
            .client(&Identity {
                file: "apiserver-kubelet-client",
                user: "kube-apiserver-kubelet-client",
                groups: &["system:masters"],
            })
            .map_err(io)?;
        let server = format!("https://{NODE_IP}:6443");
        let kubeconfig = |file: &str, user: &str, groups: &[&str]| -> Result<PathBuf, String> {
            let (crt, key) = pki.client(&Identity { file, user, groups }).map_err(io)?;
            let path = dir.join(format!("{file}.kubeconfig"));
            write_kubeconfig(&path, &server, &ca, &crt, &key, user).map_err(io)?;
            Ok(path)
        };
        let admin = kubeconfig("admin", "jr2-admin", &["system:masters"])?;
        let user = kubeconfig("user", "jr2-user", &["jr2-preflight"])?;
        let cm = kubeconfig("controller-manager", "system:kube-controller-manager", &[])?;
        let scheduler = kubeconfig("scheduler", "system:kube-scheduler", &[])?;
        let kubelet_kc = kubeconfig(
            "kubelet-client",
            &format!("system:node:{NODE_NAME}"),
            &["system:nodes"],
        )?;

        // etcd, on the namespace's loopback.
        let etcd_dir = dir.join("etcd");
        self.spawn(
            "etcd",
            "etcd",
            &[
                format!("--data-dir={}", etcd_dir.display()),
                "--listen-client-urls=http://127.0.0.1:2379".into(),
                "--advertise-client-urls=http://127.0.0.1:2379".into(),
                "--listen-peer-urls=http://127.0.0.1:2380".into(),
                "--initial-advertise-peer-urls=http://127.0.0.1:2380".into(),
                "--initial-cluster=default=http://127.0.0.1:2380".into(),
                "--log-level=warn".into(),
                "--quota-backend-bytes=1073741824".into(),
            ],
        )?;
        let p = |p: &Path| p.display().to_string();
        self.spawn(
            "kube-apiserver",
            "kube-apiserver",
            &[
                "--etcd-servers=http://127.0.0.1:2379".into(),
                "--bind-address=0.0.0.0".into(),
                "--secure-port=6443".into(),
                format!("--advertise-address={NODE_IP}"),
                format!("--tls-cert-file={}", p(&api_crt)),
                format!("--tls-private-key-file={}", p(&api_key)),
                format!("--client-ca-file={}", p(&ca)),
                format!("--kubelet-client-certificate={}", p(&akc_crt)),
                format!("--kubelet-client-key={}", p(&akc_key)),
                format!("--kubelet-certificate-authority={}", p(&ca)),
                "--kubelet-preferred-address-types=InternalIP".into(),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!("--service-account-key-file={}", p(&pki_dir.join("sa.pub"))),
                format!(
                    "--service-account-signing-key-file={}",
                    p(&pki_dir.join("sa.key"))
                ),
                format!("--service-cluster-ip-range={SERVICE_CIDR}"),
                "--authorization-mode=Node,RBAC".into(),
                "--enable-admission-plugins=NodeRestriction".into(),
                "--profiling=false".into(),
                "--v=0".into(),
            ],
        )?;
        self.wait("the API server's /readyz", |s| {
            s.kubectl(&admin, &["get", "--raw", "/readyz"])
                .is_ok_and(|o| o.trim() == "ok")
        })?;
        self.spawn(
            "kube-controller-manager",
            "kube-controller-manager",
            &[
                format!("--kubeconfig={}", p(&cm)),
                format!("--authentication-kubeconfig={}", p(&cm)),
                format!("--authorization-kubeconfig={}", p(&cm)),
                format!(
                    "--service-account-private-key-file={}",
                    p(&pki_dir.join("sa.key"))
                ),
                format!("--root-ca-file={}", p(&ca)),
                "--use-service-account-credentials=true".into(),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                "--v=0".into(),
            ],
        )?;
        self.spawn(
            "kube-scheduler",
            "kube-scheduler",
            &[
                format!("--kubeconfig={}", p(&scheduler)),
                format!("--authentication-kubeconfig={}", p(&scheduler)),
                format!("--authorization-kubeconfig={}", p(&scheduler)),
                "--leader-elect=false".into(),
                "--bind-address=127.0.0.1".into(),
                "--v=0".into(),
            ],
        )?;

        // The node: containerd, its images, the kubelet.
        let sock = dir.join("containerd.sock");
        let cni_conf = dir.join("cni/net.d");
        std::fs::create_dir_all(&cni_conf).map_err(io)?;
        std::fs::write(cni_conf.join("10-jr2.conflist"), cni_config(&dir)).map_err(io)?;
        let containerd_toml = dir.join("containerd.toml");
        std::fs::write(&containerd_toml, containerd_config(&dir, &sock, &cni_conf)).map_err(io)?;
        self.spawn_system(
            "containerd",
            "containerd",
            &["--config".into(), p(&containerd_toml)],
        )?;
        self.wait("containerd's socket", |_| {
            Command::new("ctr")
                .args(["--address", &p(&sock), "version"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })?;
        for image in &opts.images {
            let out = Command::new("ctr")
                .args([
                    "--address",
                    &p(&sock),
                    "-n",
                    "k8s.io",
                    "images",
                    "import",
                    "--no-unpack",
                ])
                .arg(image)
                .output()
                .map_err(io)?;
            if !out.status.success() {
                return Err(format!(
                    "ctr images import {}: {}",
                    image.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        let resolv = dir.join("resolv.conf");
        // A resolver the pods' lookups never reach (there is no DNS in the namespace; the tests use addresses).
        std::fs::write(&resolv, format!("nameserver {NODE_IP}\n")).map_err(io)?;
        let kubelet_yaml = dir.join("kubelet.yaml");
        std::fs::write(
            &kubelet_yaml,
            kubelet_config(
                &self.netns,
                &dir,
                &ca,
                &kubelet_crt,
                &kubelet_key,
                &sock,
                &resolv,
            ),
        )
        .map_err(io)?;
        make_cgroup_root(&self.netns)?;
        self.spawn(
            "kubelet",
            "kubelet",
            &[
                format!("--config={}", p(&kubelet_yaml)),
                format!("--kubeconfig={}", p(&kubelet_kc)),
                format!("--root-dir={}", p(&dir.join("kubelet"))),
                format!("--hostname-override={NODE_NAME}"),
                format!("--node-ip={NODE_IP}"),
                "--v=0".into(),
            ],
        )?;
        self.wait("the node's Ready condition", |s| {
            s.kubectl(
                &admin,
                &[
                    "get",
                    "node",
                    NODE_NAME,
                    "-o",
                    r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#,
                ],
            )
            .is_ok_and(|o| o.trim() == "True")
        })?;
        self.wait("the default ServiceAccount", |s| {
            s.kubectl(
                &admin,
                &[
                    "-n",
                    "default",
                    "get",
                    "serviceaccount",
                    "default",
                    "-o",
                    "name",
                ],
            )
            .is_ok()
        })?;
        let version = self
            .kubectl(&admin, &["version", "-o", "json"])
            .ok()
            .and_then(|o| serde_json::from_str::<serde_json::Value>(&o).ok())
            .and_then(|v| v["serverVersion"]["gitVersion"].as_str().map(str::to_owned))
            .unwrap_or_default();
        let info = ClusterInfo {
            dir: dir.clone(),
            netns: self.netns.clone(),
            netns_path: PathBuf::from(format!("/run/netns/{}", self.netns)),
            bin: self.bin.clone(),
            node_name: NODE_NAME.into(),
            node_ip: NODE_IP.into(),
            server: server.clone(),
            admin_kubeconfig: admin,
            user_kubeconfig: user,
            containerd_socket: sock,
            server_version: version,
        };
        std::fs::write(
            dir.join("cluster.json"),
            serde_json::to_vec_pretty(&info.to_json()).unwrap(),
        )
        .map_err(io)?;
        std::fs::write(dir.join("cluster.env"), info.to_env()).map_err(io)?;
        Ok(info)
    }

    /// The namespace and its node: a bridge with no ports carrying the node's address (nothing can leave: no route
    /// out, no device to another namespace), loopback up.
    fn network(&self) -> Result<(), String> {
        run("ip", &["netns", "add", &self.netns])?;
        let n = &self.netns;
        run("ip", &["-n", n, "link", "set", "lo", "up"])?;
        run(
            "ip",
            &["-n", n, "link", "add", "jr2-node", "type", "bridge"],
        )?;
        run(
            "ip",
            &[
                "-n",
                n,
                "addr",
                "add",
                &format!("{NODE_IP}/24"),
                "dev",
                "jr2-node",
            ],
        )?;
        run("ip", &["-n", n, "link", "set", "jr2-node", "up"])?;
        Ok(())
    }

    fn spawn(&mut self, name: &'static str, binary: &str, args: &[String]) -> Result<(), String> {
        let program = self.bin.join(binary);
        self.spawn_path(name, &program, args)
    }

    fn spawn_system(
        &mut self,
        name: &'static str,
        binary: &str,
        args: &[String],
    ) -> Result<(), String> {
        self.spawn_path(name, Path::new(binary), args)
    }

    fn spawn_path(
        &mut self,
        name: &'static str,
        program: &Path,
        args: &[String],
    ) -> Result<(), String> {
        let log =
            std::fs::File::create(self.dir.join("logs").join(format!("{name}.log"))).map_err(io)?;
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io)?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("start {name} ({}): {e}", program.display()))?;
        std::fs::write(
            self.dir.join("logs").join(format!("{name}.pid")),
            child.id().to_string(),
        )
        .map_err(io)?;
        self.components.push(Component {
            name,
            program: program.to_owned(),
            args: args.to_vec(),
            child,
        });
        Ok(())
    }

    /// Waits for `ready`, polling, within [`START_DEADLINE`]; fails early when a component has exited.
    fn wait(&mut self, what: &str, ready: impl Fn(&Self) -> bool) -> Result<(), String> {
        let start = Instant::now();
        loop {
            if ready(self) {
                return Ok(());
            }
            for c in &mut self.components {
                if let Ok(Some(status)) = c.child.try_wait() {
                    return Err(format!("waiting for {what}: {} exited ({status})", c.name));
                }
            }
            if start.elapsed() > START_DEADLINE {
                return Err(format!(
                    "waiting for {what}: not within {} s",
                    START_DEADLINE.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// kubectl inside the namespace; its stdout when it succeeds.
    fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> Result<String, String> {
        let out = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(self.bin.join("kubectl"))
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg("--request-timeout=10s")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(io)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Stops a component and starts it again with the same arguments (its log goes on); for the API server, waits
    /// until it is ready again.
    pub fn restart(&mut self, name: &str) -> Result<(), String> {
        let i = self
            .components
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| format!("no component {name}"))?;
        let c = self.components.remove(i);
        stop(c.child);
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("logs").join(format!("{}.log", c.name)))
            .map_err(io)?;
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(&c.program)
            .args(&c.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io)?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("restart {name}: {e}"))?;
        self.components.insert(i, Component { child, ..c });
        if name == "kube-apiserver" {
            let admin = self.dir.join("admin.kubeconfig");
            self.wait("the API server's /readyz", |s| {
                s.kubectl(&admin, &["get", "--raw", "/readyz"])
                    .is_ok_and(|o| o.trim() == "ok")
            })?;
        }
        Ok(())
    }

    /// Serves its caller until it goes away: each stdin line is a command (`restart <component>`, answered on
    /// stdout by `restarted <component>` or `error <why>`); stdin's end, or SIGINT/SIGTERM/SIGHUP, ends it. With
    /// `until_signal`, stdin is not read (a shell that started it in the background gave it /dev/null).
    pub fn serve(&mut self, until_signal: bool) {
        let (tx, rx) = std::sync::mpsc::channel::<Option<String>>();
        if !until_signal {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let stdin = std::io::stdin();
                let mut line = String::new();
                loop {
                    line.clear();
                    match std::io::BufRead::read_line(&mut stdin.lock(), &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if tx.send(Some(line.trim().to_owned())).is_err() {
                                return;
                            }
                        }
                    }
                }
                let _ = tx.send(None);
            });
        }
        std::thread::spawn(move || {
            wait_for_signal();
            let _ = tx.send(None);
        });
        while let Ok(Some(command)) = rx.recv() {
            let answer = match command.split_once(' ') {
                Some(("restart", name)) => match self.restart(name) {
                    Ok(()) => format!("restarted {name}"),
                    Err(e) => format!("error {}", e.replace('\n', " ")),
                },
                _ => format!("error unknown command {command:?}"),
            };
            println!("{answer}");
            let _ = std::io::stdout().flush();
        }
    }

    fn log_tails(&self) -> String {
        let mut s = String::new();
        for c in &self.components {
            let log =
                std::fs::read_to_string(self.dir.join("logs").join(format!("{}.log", c.name)))
                    .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(15).collect();
            s.push_str(&format!("--- {} (last lines)\n", c.name));
            for l in tail.iter().rev() {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }

    /// Tears everything down: the pods' sandboxes (through the CRI, so containerd removes their network namespaces),
    /// the components by PID, the shims of this containerd, what the kubelet and containerd mounted, the cgroup
    /// root, the network namespace, the folder.
    pub fn down(mut self) {
        let comps = std::mem::take(&mut self.components);
        let mut by_name: Vec<(&'static str, Child)> =
            comps.into_iter().map(|c| (c.name, c.child)).collect();
        // The kubelet first, so nothing restarts what is being removed.
        if let Some(i) = by_name.iter().position(|(n, _)| *n == "kubelet") {
            let (_, child) = by_name.remove(i);
            stop(child);
        }
        teardown_node(&self.dir, &self.bin, &self.netns);
        for name in [
            "containerd",
            "kube-scheduler",
            "kube-controller-manager",
            "kube-apiserver",
            "etcd",
        ] {
            if let Some(i) = by_name.iter().position(|(n, _)| *n == name) {
                let (_, child) = by_name.remove(i);
                stop(child);
            }
        }
        for (_, child) in by_name {
            stop(child);
        }
        teardown_rest(&self.dir, &self.netns, self.keep);
    }
}

/// The pods' sandboxes, through the CRI (containerd removes their network namespaces and mounts).
fn teardown_node(dir: &Path, bin: &Path, netns: &str) {
    let sock = dir.join("containerd.sock");
    if sock.exists() {
        let _ = Command::new("timeout")
            .arg("60")
            .arg("nsenter")
            .arg(format!("--net=/run/netns/{netns}"))
            .arg("--")
            .arg(bin.join("crictl"))
            .arg(format!("--runtime-endpoint=unix://{}", sock.display()))
            .args(["--timeout=20s", "rmp", "-fa"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// What a dead supervisor may have left: the shims, every process in the cgroup root, mounts, cgroups, the
/// namespace, the folder.
fn teardown_rest(dir: &Path, netns: &str, keep: bool) {
    let sock = dir.join("containerd.sock");
    let sock_s = sock.display().to_string();
    // containerd's shims outlive it; their `-address` names its socket.
    for (pid, cmdline) in processes() {
        if cmdline
            .first()
            .is_some_and(|c| c.ends_with("containerd-shim-runc-v2"))
            && cmdline.iter().any(|a| a == &sock_s)
        {
            kill(pid, "KILL");
        }
    }
    let cgroup_root = format!("/{netns}");
    for hierarchy in cgroup_hierarchies() {
        let root = hierarchy.join(cgroup_root.trim_start_matches('/'));
        if root.exists() {
            for pid in cgroup_pids(&root) {
                kill(pid, "KILL");
            }
        }
    }
    unmount_under(dir);
    for hierarchy in cgroup_hierarchies() {
        let root = hierarchy.join(cgroup_root.trim_start_matches('/'));
        remove_cgroup(&root);
    }
    let _ = Command::new("ip")
        .args(["netns", "del", netns])
        .stderr(Stdio::null())
        .status();
    let _ = std::fs::remove_file(registry_dir().join(netns));
    if !keep {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Stops a component: SIGTERM, then SIGKILL after 10 s.
fn stop(mut child: Child) {
    kill(child.id(), "TERM");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn kill(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

fn processes() -> Vec<(u32, Vec<String>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let args = raw
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        out.push((pid, args));
    }
    out
}

fn cgroup_hierarchies() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/sys/fs/cgroup") {
        for e in entries.flatten() {
            if e.path().is_dir() {
                out.push(e.path());
            }
        }
    }
    out
}

fn cgroup_pids(root: &Path) -> Vec<u32> {
    let mut pids = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(s) = std::fs::read_to_string(d.join("cgroup.procs")) {
            pids.extend(s.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(e.path());
                }
            }
        }
    }
    pids
}

/// The kubelet's `cgroupRoot`, made in every hierarchy (it refuses a root with missing paths); a v1 cpuset starts
/// empty and takes its parent's CPUs and memory nodes.
fn make_cgroup_root(netns: &str) -> Result<(), String> {
    for hierarchy in cgroup_hierarchies() {
        let root = hierarchy.join(netns);
        if std::fs::create_dir_all(&root).is_err() {
            continue;
        }
        for file in ["cpuset.cpus", "cpuset.mems"] {
            if let Ok(v) = std::fs::read_to_string(hierarchy.join(file)) {
                std::fs::write(root.join(file), v.trim())
                    .map_err(|e| format!("{}: {e}", root.join(file).display()))?;
            }
        }
    }
    Ok(())
}

/// Removes a cgroup and its children, deepest first (a cgroup's files are not removed, only its folders).
fn remove_cgroup(root: &Path) {
    if !root.exists() {
        return;
    }
    if let Ok(entries) = std::fs::read_dir(root) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_cgroup(&e.path());
            }
        }
    }
    for _ in 0..50 {
        if std::fs::remove_dir(root).is_ok() || !root.exists() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Unmounts every mount point under `dir`, deepest first, lazily (a mount still busy goes when its last user does).
fn unmount_under(dir: &Path) {
    let prefix = dir.display().to_string();
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return;
    };
    let mut points: Vec<String> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(unescape_mount)
        .filter(|p| p == &prefix || p.starts_with(&format!("{prefix}/")))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    points.dedup();
    for point in points {
        let _ = Command::new("umount")
            .args(["-l", &point])
            .stderr(Stdio::null())
            .status();
    }
}

fn unescape_mount(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

/// Where each running supervisor registers its namespace and folder, so the next start can clean up after one that
/// was killed.
fn registry_dir() -> PathBuf {
    PathBuf::from("/run/jr2-kube")
}

fn register(netns: &str, dir: &Path) {
    let reg = registry_dir();
    let _ = std::fs::create_dir_all(&reg);
    let _ = std::fs::write(reg.join(netns), dir.display().to_string());
}

/// Waits, `within` at most, until no registered supervisor is alive: one whose caller just exited is still tearing
/// its cluster down (about 2 s).
pub fn wait_for_supervisors(within: Duration) {
    let start = Instant::now();
    while start.elapsed() < within {
        let Ok(entries) = std::fs::read_dir(registry_dir()) else {
            return;
        };
        let alive = entries.flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("jr2k-")
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| {
                    pid != std::process::id()
                        && std::fs::read(format!("/proc/{pid}/cmdline"))
                            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("jr2-kube-cluster"))
                })
        });
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Tears down the leftovers of every supervisor that is gone (killed with SIGKILL, or its machine's test run
/// stopped): its namespace's name carries its PID.
pub fn sweep_stale() {
    let Ok(entries) = std::fs::read_dir(registry_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("jr2k-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("jr2-kube-cluster"));
        if alive {
            continue;
        }
        let dir = PathBuf::from(std::fs::read_to_string(e.path()).unwrap_or_default());
        eprintln!(
            "jr2-kube-cluster: removing the leftovers of a stopped cluster ({name}, {})",
            dir.display()
        );
        for (pid, cmdline) in processes() {
            let ours = cmdline.iter().any(|a| {
                a.starts_with(&dir.display().to_string())
                    || a.contains(&format!("/run/netns/{name}"))
            });
            if ours && pid != std::process::id() {
                kill(pid, "KILL");
            }
        }
        let bin = PathBuf::from("/nonexistent");
        teardown_node(&dir, &bin, &name);
        teardown_rest(&dir, &name, false);
    }
}

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program).args(args).output().map_err(io)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn io(e: impl std::fmt::Display) -> String {
    e.to_string()
}

fn service_ip(n: u8) -> String {
    let base = SERVICE_CIDR.split('/').next().unwrap_or_default();
    let mut parts: Vec<&str> = base.split('.').collect();
    let last = n.to_string();
    parts.pop();
    let mut s = parts.join(".");
    s.push('.');
    s.push_str(&last);
    s
}

fn write_kubeconfig(
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

fn cni_config(dir: &Path) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "jr2",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "jr2-cni0",
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "dataDir": dir.join("cni/ipam"),
                    "ranges": [[{"subnet": POD_CIDR, "gateway": POD_GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}]
                }
            }
        ]
    }))
    .unwrap()
}

fn containerd_config(dir: &Path, sock: &Path, cni_conf: &Path) -> String {
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
fn kubelet_config(
    netns: &str,
    dir: &Path,
    ca: &Path,
    crt: &Path,
    key: &Path,
    sock: &Path,
    resolv: &Path,
) -> String {
    // No clusterDNS, as a cluster without a DNS add-on: every pod then gets the kubelet's `MissingClusterDNS`
    // warning, which must never become the driver's pending reason.
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /{netns}
podLogsDir: {logs}
containerRuntimeEndpoint: unix://{sock}
address: {NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
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

/// Returns when SIGINT, SIGTERM or SIGHUP comes.
fn wait_for_signal() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM");
        let mut int = signal(SignalKind::interrupt()).expect("SIGINT");
        let mut hup = signal(SignalKind::hangup()).expect("SIGHUP");
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
    });
}
