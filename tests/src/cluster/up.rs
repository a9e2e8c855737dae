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
//!
//! This file starts, watches and stops the components; the files they read are written from `config`, and what
//! they leave on the host is removed by `teardown`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::config::{cni_config, containerd_config, kubelet_config, service_ip, write_kubeconfig};
use super::pki::{Identity, Pki};
use super::teardown::{
    make_cgroup_root, register, stop, sweep_stale, teardown_node, teardown_node_socket,
    teardown_rest,
};
use super::{ClusterInfo, NODE_IP, NODE_NAME, NetworkPolicyOptions, POD_CIDR, SERVICE_CIDR};

pub(super) mod nodes;
mod other_ca;

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
    /// How many nodes: 1 (the default), or up to 1 + [`nodes::MAX_EXTRA`] (`nodes.rs`).
    pub nodes: usize,
    /// kube-router's NetworkPolicy firewall (one node only).
    pub network_policy: Option<NetworkPolicyOptions>,
}

/// A started component, with what started it (for a restart).
struct Component {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    child: Child,
    /// Stopped on purpose (`stop <component>`): its exit is no failure.
    stopped: bool,
}

/// The running cluster, as the supervisor holds it.
pub struct Supervisor {
    dir: PathBuf,
    bin: PathBuf,
    netns: String,
    components: Vec<Component>,
    keep: bool,
}

/// The names the API server's serving certificate carries.
fn api_server_names() -> Vec<String> {
    vec![
        "kubernetes".into(),
        "kubernetes.default".into(),
        "kubernetes.default.svc".into(),
        "kubernetes.default.svc.cluster.local".into(),
        "localhost".into(),
        "127.0.0.1".into(),
        NODE_IP.into(),
        service_ip(1),
    ]
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
        let extra = opts.nodes.saturating_sub(1);
        if extra > nodes::MAX_EXTRA {
            return Err(format!(
                "--nodes {}: at most {}",
                opts.nodes,
                nodes::MAX_EXTRA + 1
            ));
        }
        if opts.network_policy.is_some() && extra > 0 {
            return Err("--kube-router: one node only".to_owned());
        }
        let dir = self.dir.clone();
        std::fs::write(dir.join("supervisor.pid"), std::process::id().to_string()).map_err(io)?;
        self.network()?;
        let pki_dir = dir.join("pki");
        let pki = Pki::new(&pki_dir).map_err(io)?;
        let ca = pki.ca();
        let (api_crt, api_key) = pki
            .server("apiserver", "kube-apiserver", &api_server_names())
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
                // Mutating admission without a webhook server (MutatingAdmissionPolicy, CEL, beta and off by
                // default in 1.35): what a platform's policy does to the check pod (issue 40, items 2, 4 and 7).
                "--enable-admission-plugins=NodeRestriction,MutatingAdmissionPolicy".into(),
                "--feature-gates=MutatingAdmissionPolicy=true".into(),
                "--runtime-config=admissionregistration.k8s.io/v1beta1=true".into(),
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
        import_images(&sock, &opts.images)?;
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
        // The extra nodes, while the first one registers.
        let shared = nodes::Shared {
            pki: &pki,
            ca: &ca,
            server: &server,
            images: &opts.images,
            resolv: &resolv,
        };
        let mut extra_nodes = Vec::new();
        for n in 0..extra {
            extra_nodes.push(self.start_extra_node(n, &shared)?);
        }
        let names =
            std::iter::once(NODE_NAME.to_owned()).chain(extra_nodes.iter().map(|n| n.name.clone()));
        for name in names {
            self.wait(&format!("the Ready condition of node {name}"), |s| {
                s.kubectl(
                    &admin,
                    &[
                        "get",
                        "node",
                        &name,
                        "-o",
                        r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}"#,
                    ],
                )
                .is_ok_and(|o| o.trim() == "True")
            })?;
        }
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
        if let Some(np) = &opts.network_policy {
            self.network_policy(np, &admin)?;
        }
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
            extra_nodes,
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

    /// kube-router's firewall only (`--run-router=false --run-service-proxy=false`), a host process in the namespace
    /// with the admin's kubeconfig: its iptables chains and ipsets are the namespace's, and go with it at teardown.
    /// Ready once it has programmed its top chain. With `default_deny`, the node's pod range goes in the annotation
    /// kube-router reads it from (the controller manager allocates no `spec.podCIDR` here) first.
    fn network_policy(&mut self, np: &NetworkPolicyOptions, admin: &Path) -> Result<(), String> {
        if np.default_deny {
            self.kubectl(
                admin,
                &[
                    "annotate",
                    "--overwrite",
                    "node",
                    NODE_NAME,
                    &format!("kube-router.io/pod-cidrs={POD_CIDR}"),
                ],
            )?;
        }
        // The kubeconfig as an argument of its own: the sweep of a killed supervisor finds its processes by an
        // argument under the run's folder.
        let mut args = vec![
            "--kubeconfig".to_owned(),
            admin.display().to_string(),
            format!("--hostname-override={NODE_NAME}"),
            "--run-firewall=true".to_owned(),
            "--run-router=false".to_owned(),
            "--run-service-proxy=false".to_owned(),
            "--metrics-port=0".to_owned(),
            "--v=0".to_owned(),
        ];
        if np.default_deny {
            // The dataplane's default mode beside it, stopped: `kube-router-default-mode`, for a test that measures
            // the start race (it stops `kube-router` and starts this one, alone on the cluster).
            let child = Command::new("true").spawn().map_err(io)?;
            self.components.push(Component {
                name: "kube-router-default-mode",
                program: np.binary.clone(),
                args: args.clone(),
                child,
                stopped: true,
            });
            std::fs::write(self.dir.join("logs/kube-router-default-mode.log"), b"").map_err(io)?;
            args.push("--netpol-default-deny".to_owned());
        }
        self.spawn_path("kube-router", &np.binary.clone(), &args)?;
        let netns = self.netns.clone();
        self.wait("kube-router's chains", |_| {
            Command::new("nsenter")
                .arg(format!("--net=/run/netns/{netns}"))
                .args(["--", "iptables", "-w", "5", "-S", "KUBE-ROUTER-FORWARD"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
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
            stopped: false,
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
            for c in self.components.iter_mut().filter(|c| !c.stopped) {
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
        self.stop_component(name)?;
        self.start_component(name)
    }

    /// Stops a component (SIGTERM, then SIGKILL after 10 s) and leaves it stopped: a node whose kubelet is down.
    pub fn stop_component(&mut self, name: &str) -> Result<(), String> {
        let i = self.component(name)?;
        let c = self.components.remove(i);
        let program = c.program.clone();
        let args = c.args.clone();
        stop(c.child);
        // A stand-in that has exited, so the component keeps its place and its arguments for `start`.
        let child = Command::new("true").spawn().map_err(io)?;
        self.components.insert(
            i,
            Component {
                name: c.name,
                program,
                args,
                child,
                stopped: true,
            },
        );
        Ok(())
    }

    /// Starts a stopped component again with the same arguments (its log goes on); for the API server, waits until
    /// it is ready again.
    pub fn start_component(&mut self, name: &str) -> Result<(), String> {
        self.start_component_with(name, None)?;
        if name == "kube-apiserver" {
            let admin = self.dir.join("admin.kubeconfig");
            self.wait_api_ready(&admin)?;
        }
        Ok(())
    }

    /// Starts a stopped component, with `args` for this start only when given (it keeps its own for the next
    /// start); waits for nothing.
    fn start_component_with(&mut self, name: &str, args: Option<&[String]>) -> Result<(), String> {
        let i = self.component(name)?;
        if !self.components[i].stopped {
            return Err(format!("{name} runs"));
        }
        let mut c = self.components.remove(i);
        // The stand-in `stop_component` left.
        let _ = c.child.wait();
        let log = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("logs").join(format!("{}.log", c.name)))
            .map_err(io)?;
        let child = Command::new("nsenter")
            .arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(&c.program)
            .args(args.unwrap_or(&c.args))
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(io)?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("start {name}: {e}"))?;
        self.components.insert(
            i,
            Component {
                child,
                stopped: false,
                ..c
            },
        );
        Ok(())
    }

    /// Waits until the API server answers `/readyz` to a client of `kubeconfig`.
    fn wait_api_ready(&mut self, kubeconfig: &Path) -> Result<(), String> {
        self.wait("the API server's /readyz", |s| {
            s.kubectl(kubeconfig, &["get", "--raw", "/readyz"])
                .is_ok_and(|o| o.trim() == "ok")
        })
    }

    fn component(&self, name: &str) -> Result<usize, String> {
        self.components
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| format!("no component {name}"))
    }

    /// Serves its caller until it goes away: each stdin line is a command (`restart <component>`, answered on
    /// stdout by `restarted <component>` or `error <why>`; `stop`, `start`, and `start-other-ca kube-apiserver`,
    /// `other_ca.rs`); stdin's end, or SIGINT/SIGTERM/SIGHUP, ends it. With
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
                Some(("stop", name)) => match self.stop_component(name) {
                    Ok(()) => format!("stopped {name}"),
                    Err(e) => format!("error {}", e.replace('\n', " ")),
                },
                Some(("start", name)) => match self.start_component(name) {
                    Ok(()) => format!("started {name}"),
                    Err(e) => format!("error {}", e.replace('\n', " ")),
                },
                Some(("start-other-ca", name)) => match self.start_api_server_other_ca(name) {
                    Ok(()) => format!("started-other-ca {name}"),
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
        // The kubelets first, so nothing restarts what is being removed.
        while let Some(i) = by_name.iter().position(|(n, _)| n.starts_with("kubelet")) {
            let (_, child) = by_name.remove(i);
            stop(child);
        }
        teardown_node(&self.dir, &self.bin, &self.netns);
        for (_, sock) in nodes::extra_nodes_of(&self.dir, &self.netns) {
            teardown_node_socket(&sock, &self.bin, &self.netns);
        }
        while let Some(i) = by_name
            .iter()
            .position(|(n, _)| n.starts_with("containerd-"))
        {
            let (_, child) = by_name.remove(i);
            stop(child);
        }
        for name in [
            "kube-router",
            "kube-router-default-mode",
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

/// Imports image archives into the containerd of `sock` (never pulled: the namespace has no route out).
fn import_images(sock: &Path, images: &[PathBuf]) -> Result<(), String> {
    for image in images {
        let out = Command::new("ctr")
            .arg("--address")
            .arg(sock)
            .args(["-n", "k8s.io", "images", "import", "--no-unpack"])
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
    Ok(())
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
