//! `jr2-kube-cluster`: a real one-node Kubernetes in a network namespace of its own, for the driver's tests, the
//! benchmark and the README's first command (`jr2_testkit::cluster`).
//!
//! ```text
//! jr2-kube-cluster up --dir DIR --bin KUBE_BIN [--image ARCHIVE]... [--nodes N] [--keep] [--until-signal]
//!                     [--kube-router BINARY [--netpol-default-deny]]
//!     Starts the cluster, prints `ready DIR/cluster.json` (DIR/cluster.env for shells), and tears it all down when
//!     stdin closes (or, with --until-signal, on SIGINT/SIGTERM/SIGHUP only). --keep leaves DIR (logs) behind.
//!     A stdin line `restart <component>` restarts one (answered `restarted <component>` once it is back);
//!     `stop <component>` stops one and leaves it stopped (`stopped <component>`), `start <component>` starts it
//!     again (`started <component>`), `start-other-ca kube-apiserver` starts the stopped API server with a serving
//!     certificate of another CA (`started-other-ca kube-apiserver`). --nodes N (1 to 4, default 1) starts N-1 extra
//!     nodes, each a containerd and a kubelet of its own (`kubelet-b`, `containerd-b`, ...). --kube-router runs
//!     kube-router's NetworkPolicy firewall (one node only; component `kube-router`), with --netpol-default-deny a new
//!     pod is policed from its first packet.
//! jr2-kube-cluster sweep
//!     Waits (30 s at most) for the supervisors still tearing down, then removes what stopped clusters left (a
//!     supervisor killed with SIGKILL).
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use jr2_testkit::cluster::NetworkPolicyOptions;
use jr2_testkit::cluster::teardown::{sweep_stale, wait_for_supervisors};
use jr2_testkit::cluster::up::{Supervisor, UpOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("sweep") => {
            // A supervisor whose caller just exited is still tearing down: wait for it (30 s at most) first.
            wait_for_supervisors(std::time::Duration::from_secs(30));
            sweep_stale();
            ExitCode::SUCCESS
        }
        Some("up") => up(&args[1..]),
        _ => {
            eprintln!(
                "usage: jr2-kube-cluster up --dir DIR --bin KUBE_BIN [--image ARCHIVE]... [--nodes N] [--keep] [--until-signal] [--kube-router BINARY [--netpol-default-deny]] | sweep"
            );
            ExitCode::from(2)
        }
    }
}

fn up(args: &[String]) -> ExitCode {
    let mut dir = None;
    let mut bin = None;
    let mut images = Vec::new();
    let mut keep = false;
    let mut until_signal = false;
    let mut nodes = 1;
    let mut kube_router = None;
    let mut default_deny = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => dir = it.next().map(PathBuf::from),
            "--bin" => bin = it.next().map(PathBuf::from),
            "--image" => images.extend(it.next().map(PathBuf::from)),
            "--keep" => keep = true,
            "--nodes" => match it.next().and_then(|n| n.parse::<usize>().ok()) {
                Some(n) if n >= 1 => nodes = n,
                _ => {
                    eprintln!("jr2-kube-cluster: --nodes needs a number of at least 1");
                    return ExitCode::from(2);
                }
            },
            "--until-signal" => until_signal = true,
            "--kube-router" => kube_router = it.next().map(PathBuf::from),
            "--netpol-default-deny" => default_deny = true,
            other => {
                eprintln!("jr2-kube-cluster: unknown argument {other:?}");
                return ExitCode::from(2);
            }
        }
    }
    let (Some(dir), Some(bin)) = (dir, bin) else {
        eprintln!("jr2-kube-cluster: up needs --dir and --bin");
        return ExitCode::from(2);
    };
    let started = std::time::Instant::now();
    match Supervisor::up(UpOptions {
        dir: dir.clone(),
        bin,
        images,
        keep,
        nodes,
        network_policy: kube_router.map(|binary| NetworkPolicyOptions {
            binary,
            default_deny,
        }),
    }) {
        Ok((mut sup, info)) => {
            eprintln!(
                "jr2-kube-cluster: Kubernetes {} ready in {:.1} s (namespace {}, node {} at {}{})",
                info.server_version,
                started.elapsed().as_secs_f64(),
                info.netns,
                info.node_name,
                info.node_ip,
                info.extra_nodes
                    .iter()
                    .map(|n| format!(", node {} at {}", n.name, n.ip))
                    .collect::<String>()
            );
            println!("ready {}", dir.join("cluster.json").display());
            sup.serve(until_signal);
            let t = std::time::Instant::now();
            sup.down();
            eprintln!(
                "jr2-kube-cluster: torn down in {:.1} s",
                t.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("jr2-kube-cluster: error: {e}");
            println!("failed");
            ExitCode::FAILURE
        }
    }
}
