//! The harness of the real-cluster tests: one cluster per test binary (`jr2_testkit::cluster`, started on first
//! use), the probe's and the Custodian stand-in's images imported into its node, a fake OpenAI-compatible provider
//! listening on the node's address, and a fresh Kubernetes namespace per test in which the least-privilege user is
//! bound by the shipped Role (`orchestrate/rbac/jr2-preflight.yaml`).
//!
//! Every process that talks to the cluster or is talked to by a pod runs inside the cluster's network namespace:
//! the driver, kubectl, the provider. The test process itself connects to nothing.

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use jr2_testkit::cluster::{Cluster, NetworkPolicyOptions, StartOptions};

/// The fake provider's key, as the held Secret holds it.
pub const GOOD_KEY: &str = jr2_testkit::provider::openai_completions::GOOD_KEY;
/// The Custodian stand-in's image (tests/kube/images.sh).
pub const CUSTODIAN_IMAGE: &str = "registry.jr2.test/custodian:1";
/// The label every check pod carries.
pub const MANAGED: &str = "app.kubernetes.io/managed-by=jr2-preflight";
/// The shipped Role and RoleBinding (to the group jr2-preflight, the least-privilege user's).
pub const RBAC: &str = include_str!("../../rbac/jr2-preflight.yaml");
/// The pending line's start.
pub const PENDING: &str = "provider: the check pod is not running yet — ";

/// The probe's image as images/build tags it.
pub fn probe_image() -> String {
    format!("ghcr.io/jr2/jr2-probe:{}", env!("CARGO_PKG_VERSION"))
}

/// Most tests share the cluster (a read lock); the few that restart a component take it alone (the write lock).
static DISRUPTION: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A test that does not disturb the others.
pub fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    DISRUPTION.read().unwrap_or_else(|e| e.into_inner())
}

/// A test that restarts a component: alone on the cluster.
pub fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    DISRUPTION.write().unwrap_or_else(|e| e.into_inner())
}

/// What every test shares.
pub struct Env {
    pub cluster: Cluster,
    /// The provider's stdin, held open for as long as this process lives.
    _provider_stdin: std::process::ChildStdin,
    /// The fake provider's base URL, on the node's address.
    pub provider: String,
    provider_proc: Child,
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = self.provider_proc.kill();
        let _ = self.provider_proc.wait();
    }
}

/// The shared cluster, started on first use. Its teardown comes when this process exits (the supervisor sees its
/// stdin close), whatever the tests did.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let root = workspace_root();
        let target = target_dir();
        let kube = script_output(&root.join("tests/kube/build.sh"), &target);
        let kube_dir = PathBuf::from(
            kube.lines()
                .last()
                .expect("tests/kube/build.sh printed its cache folder"),
        );
        let images: Vec<PathBuf> =
            script_output_with(&root.join("tests/kube/images.sh"), &target, &[&kube_dir])
                .lines()
                .map(PathBuf::from)
                .collect();
        assert_eq!(
            images.len(),
            3,
            "tests/kube/images.sh prints the pause image's, the probe's and the Custodian's archives"
        );
        // kube-router's firewall (issue 35), in the binaries that ask for it (`crate::NETWORK_POLICY`), in its
        // `--netpol-default-deny` mode: a new pod is policed from its first packet.
        let network_policy = crate::NETWORK_POLICY.then(|| NetworkPolicyOptions {
            binary: PathBuf::from(
                script_output(&root.join("tests/kube/kube-router.sh"), &target)
                    .lines()
                    .last()
                    .expect("tests/kube/kube-router.sh printed the binary's path"),
            ),
            default_deny: true,
        });
        cargo_build(&[
            "-p",
            "jr2-testkit",
            "--bin",
            "jr2-kube-cluster",
            "--bin",
            "jr2-fake-provider",
        ]);
        let debug = Path::new(env!("CARGO_BIN_EXE_jr2-preflight"))
            .parent()
            .unwrap()
            .to_path_buf();
        let cluster = Cluster::start(StartOptions {
            supervisor: debug.join("jr2-kube-cluster"),
            bin: kube_dir.join("bin"),
            images,
            nodes: crate::NODES,
            network_policy,
        })
        .unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
        let mut provider_proc = cluster
            .command(debug.join("jr2-fake-provider"))
            .args([
                "--bind",
                &format!("{}:0", cluster.info().node_ip),
                "--until-stdin-closes",
            ])
            // It ends when its stdin closes: when this process exits, whatever the tests did.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start jr2-fake-provider in the cluster's namespace");
        let mut line = String::new();
        std::io::BufReader::new(provider_proc.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the provider's first line");
        let provider = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("jr2-fake-provider said {line:?}"))
            .to_owned();
        let _provider_stdin = provider_proc.stdin.take().unwrap();
        Env {
            cluster,
            _provider_stdin,
            provider,
            provider_proc,
        }
    })
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The target dir this test was built in (`<target>/debug/deps/<test>`).
pub fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

pub fn script_output(script: &Path, target: &Path) -> String {
    script_output_with(script, target, &[])
}

fn script_output_with(script: &Path, target: &Path, args: &[&Path]) -> String {
    let out = Command::new(script)
        .args(args)
        .env("CARGO_TARGET_DIR", target)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed (see above)",
        script.display()
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `cargo build` of more of the workspace, without the variables cargo set for this test process (a build script
/// that reads one would see it change and rebuild).
pub fn cargo_build(args: &[&str]) {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("build")
        .arg("--quiet")
        .args(args)
        .current_dir(workspace_root());
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        if k == "OUT_DIR"
            || (k.starts_with("CARGO_") && k != "CARGO_HOME" && k != "CARGO_TARGET_DIR")
        {
            cmd.env_remove(&key);
        }
    }
    cmd.env("CARGO_TARGET_DIR", target_dir());
    assert!(
        cmd.status().is_ok_and(|s| s.success()),
        "cargo build {} failed",
        args.join(" ")
    );
}

/// A test's own Kubernetes namespace, with the shipped Role bound to the least-privilege user, the held Secret of
/// the Custodian, and `labels`.
pub fn namespace(name: &str, labels: &[(&str, &str)]) -> String {
    namespace_with_rbac(name, labels, RBAC)
}

/// [`namespace`] with another RBAC manifest than the shipped one (a Role with a rule removed).
pub fn namespace_with_rbac(name: &str, labels: &[(&str, &str)], rbac: &str) -> String {
    let env = env();
    env.cluster.namespace(name, labels, Some(rbac));
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "jr2-held-secrets", "namespace": name},
        "stringData": {"JR2_PROVIDER_API_KEY": GOOD_KEY}
    });
    env.cluster
        .kubectl_stdin(&["apply", "-f", "-"], &secret.to_string());
    name.to_owned()
}

/// A Harness pod spec as `jr2 up` renders it, with the Custodian stand-in as its Custodian: the key a Stand-in,
/// the proxy variables pointing at the Custodian, the held values from the Secret `jr2-held-secrets`.
pub fn harness_spec() -> Value {
    json!({
        "automountServiceAccountToken": false,
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 2000},
        "containers": [
            {
                "name": "harness",
                "image": "registry.jr2.test/harness:1",
                "env": [
                    {"name": "JR2_PROVIDER_API_KEY", "value": "jr2-held-JR2_PROVIDER_API_KEY"},
                    {"name": "HTTP_PROXY", "value": "http://127.0.0.1:15001"},
                    {"name": "HTTPS_PROXY", "value": "http://127.0.0.1:15001"},
                    {"name": "NO_PROXY", "value": "localhost,127.0.0.1,::1"},
                    {"name": "NODE_USE_ENV_PROXY", "value": "1"}
                ]
            },
            custodian(&[]),
        ],
        "volumes": [{"name": "custodian-values", "projected": {"defaultMode": 288, "sources": [
            {"secret": {"name": "jr2-held-secrets", "items": [{"key": "JR2_PROVIDER_API_KEY", "path": "JR2_PROVIDER_API_KEY"}]}}
        ]}}]
    })
}

/// The Custodian container, with extra arguments (`--never-ready`).
pub fn custodian(extra: &[&str]) -> Value {
    let mut args = vec!["--values", "/etc/jr2/custodian/values"];
    args.extend_from_slice(extra);
    json!({
        "name": "custodian",
        "image": CUSTODIAN_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "ports": [{"name": "health", "containerPort": 15021}],
        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 15021}, "periodSeconds": 1, "failureThreshold": 3},
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        "securityContext": {
            "runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}
        },
        "volumeMounts": [{"name": "custodian-values", "mountPath": "/etc/jr2/custodian/values", "readOnly": true}]
    })
}

/// A plan of `placements` (name, pod spec, models of the fake provider, each `vllm/<model>`), in `namespace`.
pub fn plan(namespace: &str, placements: &[(&str, Value, &[&str])]) -> Value {
    let provider = &env().provider;
    let models: Vec<Value> = placements
        .iter()
        .flat_map(|(placement, _, models)| {
            models.iter().map(move |m| {
                json!({"model": format!("vllm/{m}"), "placement": placement, "source": "custom",
                       "baseUrl": provider, "api": "openai-completions",
                       "keyEnv": "JR2_PROVIDER_API_KEY", "keyHeld": true})
            })
        })
        .collect();
    json!({
        "schema": "jr2.dev/provider-preflight-plan/v1",
        "namespace": namespace,
        "instance": namespace,
        "probeImage": probe_image(),
        "deadlineSeconds": 120,
        "timeoutSeconds": 30,
        "placements": placements.iter().map(|(name, spec, _)| json!({
            "name": name, "harnessContainer": "harness", "custodianContainer": "custodian", "podSpec": spec
        })).collect::<Vec<_>>(),
        "models": models,
    })
}

/// A plan written to a file the driver reads.
pub fn write_plan(plan: &Value) -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("jr2-real-plan-{}-{n}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec_pretty(plan).unwrap()).unwrap();
    path
}

/// The driver's run, as a process.
pub struct DriverRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl DriverRun {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }
    pub fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
    /// The JSON verdict on stdout.
    pub fn verdict(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Who the driver runs as.
#[derive(Clone, Copy)]
pub enum As {
    /// The least-privilege user, bound by the shipped Role only.
    User,
    /// The cluster's admin (`system:masters`): a namespace deleted under the run takes the user's RoleBinding with
    /// it, and the admin's rights stay.
    Admin,
}

/// A driver process in the cluster's namespace, started (for the signal tests).
pub fn spawn_driver(who: As, args: &[&str]) -> Child {
    let env = env();
    let kubeconfig = match who {
        As::User => &env.cluster.info().user_kubeconfig,
        As::Admin => &env.cluster.info().admin_kubeconfig,
    };
    env.cluster
        .command(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run jr2-preflight")
}

/// The check pod of `ns` (the driver's one), as another component writing Events about it sees it.
pub struct CheckPodEvents {
    ns: String,
    /// The pod's name.
    pub name: String,
    /// The pod's uid: what an Event's `involvedObject` names.
    pub uid: String,
    now: String,
}

impl CheckPodEvents {
    /// The check pod the driver has created in `ns` (there must be one).
    pub fn of(ns: &str) -> Self {
        let pod = env().cluster.pods(ns, MANAGED).remove(0);
        let field = |f: &str| pod["metadata"][f].as_str().unwrap().to_owned();
        let now = k8s_openapi::jiff::Timestamp::now()
            .round(k8s_openapi::jiff::Unit::Second)
            .unwrap()
            .to_string();
        Self {
            ns: ns.to_owned(),
            name: field("name"),
            uid: field("uid"),
            now,
        }
    }

    /// A Warning Event about the pod, `<pod>.<suffix>` (lowercased), of `reason` from `component`, stamped now.
    pub fn warning(&self, suffix: &str, reason: &str, component: &str, message: &str) -> Value {
        let (ns, name, uid, now) = (&self.ns, &self.name, &self.uid, &self.now);
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{name}.{suffix}").to_lowercase(), "namespace": ns},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": ns, "name": name, "uid": uid},
            "reason": reason, "type": "Warning", "message": message,
            "source": {"component": component}, "reportingComponent": component,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1
        })
    }
}

/// Starts the driver on the plan at `path` as `who`: `run --plan <path> -o json --timeout <timeout>`, its output
/// piped for [`finish`].
pub fn spawn_run(who: As, path: &Path, timeout: &str) -> Child {
    spawn_driver(
        who,
        &[
            "run",
            "--plan",
            path.to_str().unwrap(),
            "-o",
            "json",
            "--timeout",
            timeout,
        ],
    )
}

/// Starts the driver on the plan at `path` (`run -o json --timeout <timeout>`) as `who`, and waits (30 s at most)
/// until its check pod is in `ns`: the tests that then do something to the cluster while the check waits.
pub fn run_until_check_pod(who: As, path: &Path, timeout: &str, ns: &str) -> (Child, Instant) {
    let started = Instant::now();
    let child = spawn_run(who, path, timeout);
    let cluster = &env().cluster;
    cluster.wait_for("the check pod", Duration::from_secs(30), || {
        !cluster.pods(ns, MANAGED).is_empty()
    });
    (child, started)
}

/// Waits for a started driver within `deadline` (killed past it, and the test fails).
pub fn finish(mut child: Child, started: Instant, deadline: Duration) -> DriverRun {
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the driver did not end within {deadline:?}:\n{}",
                err_t.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out_t.join().unwrap();
    let stderr = err_t.join().unwrap();
    eprintln!("--- jr2-preflight {status}:\n{stderr}");
    DriverRun {
        status,
        stdout,
        stderr,
    }
}

/// Runs the driver to its end (within 180 s).
pub fn driver(who: As, args: &[&str]) -> DriverRun {
    let started = Instant::now();
    finish(spawn_driver(who, args), started, Duration::from_secs(180))
}

/// `run` of a plan as the least-privilege user, with a JSON verdict.
pub fn run_plan(plan: &Value, extra: &[&str]) -> DriverRun {
    let path = write_plan(plan);
    let mut args = vec!["run", "--plan", path.to_str().unwrap(), "-o", "json"];
    args.extend_from_slice(extra);
    driver(As::User, &args)
}

/// Waits (60 s at most) until a check pod's probe container runs in `namespace`: its request is in flight.
pub fn wait_for_probe_running(namespace: &str) {
    let cluster = &env().cluster;
    cluster.wait_for(
        "the probe container to run",
        Duration::from_secs(90),
        || {
            cluster.pods(namespace, MANAGED).iter().any(|p| {
                p["status"]["containerStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["name"] == "probe" && !c["state"]["running"].is_null())
            })
        },
    );
}

/// No check pod is left in `namespace` (none at all, or only terminating ones already gone from the API within 60 s:
/// the driver deletes with a grace period, the kubelet then stops the containers).
pub fn assert_no_pod_left(namespace: &str) {
    let cluster = &env().cluster;
    let left = cluster.pods(namespace, MANAGED);
    let live: Vec<&Value> = left
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect();
    assert!(
        live.is_empty(),
        "check pods left, not even deleting: {:#?}",
        names(&left)
    );
    cluster.wait_for("the check pods to be gone", Duration::from_secs(60), || {
        cluster.pods(namespace, MANAGED).is_empty()
    });
}

fn names(pods: &[Value]) -> Vec<String> {
    pods.iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// No pending line quotes a warning the kubelet writes while it goes on starting the pod.
pub fn assert_no_non_blocking_reason(run: &DriverRun) {
    for line in run.lines().iter().filter(|l| l.starts_with(PENDING)) {
        for words in ["ClusterDNS", "Nameserver limits", "image pull secrets"] {
            assert!(
                !line.contains(words),
                "a warning that holds nothing back became the pending line: {line}"
            );
        }
    }
}

/// The lines a verdict of one passing model per entry has: each `completed a tool call`, and every other line pending.
pub fn assert_passes(run: &DriverRun, models: &[&str]) {
    for m in models {
        let prefix = format!("provider: vllm/{m} completed a tool call (");
        assert_eq!(
            run.lines()
                .iter()
                .filter(|l| l.starts_with(&prefix))
                .count(),
            1,
            "one completed line for vllm/{m}:\n{}",
            run.stderr
        );
    }
}

/// No two progress lines say one message (issue 40, item 13): each pending line's message (after its prefix and its
/// reason) is said once, whichever reason it came under (the scheduler's condition `Unschedulable` and its Event
/// `FailedScheduling` say the same words).
pub fn assert_each_message_once(run: &DriverRun) {
    let mut said: Vec<&str> = Vec::new();
    for line in run.lines() {
        let Some(rest) = line.strip_prefix(PENDING) else {
            continue;
        };
        let message = rest.split_once(": ").map_or(rest, |(_, m)| m);
        assert!(
            !said.contains(&message),
            "said twice: {message:?}\n{}",
            run.stderr
        );
        said.push(message);
    }
}
