//! What a test cluster leaves on the host and how it goes: the pods' sandboxes (through the CRI), containerd's
//! shims and every process in the kubelet's cgroup root, the mounts under the run's folder, the cgroups (the root is
//! made here too, so one file knows its shape), the network namespace and the folder; and the registry of running
//! supervisors in `/run/jr2-kube`, by which the next start sweeps what a killed one left.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The pods' sandboxes, through the CRI (containerd removes their network namespaces and mounts).
pub(super) fn teardown_node(dir: &Path, bin: &Path, netns: &str) {
    teardown_node_socket(&dir.join("containerd.sock"), bin, netns);
}

/// The pods' sandboxes of the containerd at `sock` (an extra node's, `up/nodes.rs`).
pub(super) fn teardown_node_socket(sock: &Path, bin: &Path, netns: &str) {
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
pub(super) fn teardown_rest(dir: &Path, netns: &str, keep: bool) {
    // Every node's containerd socket and cgroup root: the first node's, then the extra ones' (`up/nodes.rs`).
    let mut nodes = vec![(netns.to_owned(), dir.join("containerd.sock"))];
    nodes.extend(super::up::nodes::extra_nodes_of(dir, netns));
    let sockets: Vec<String> = nodes
        .iter()
        .map(|(_, sock)| sock.display().to_string())
        .collect();
    // containerd's shims outlive it; their `-address` names its socket.
    for (pid, cmdline) in processes() {
        if cmdline
            .first()
            .is_some_and(|c| c.ends_with("containerd-shim-runc-v2"))
            && cmdline.iter().any(|a| sockets.contains(a))
        {
            kill(pid, "KILL");
        }
    }
    for (cgroup_root, _) in &nodes {
        for hierarchy in cgroup_hierarchies() {
            let root = hierarchy.join(cgroup_root);
            if root.exists() {
                for pid in cgroup_pids(&root) {
                    kill(pid, "KILL");
                }
            }
        }
    }
    unmount_under(dir);
    for (cgroup_root, _) in &nodes {
        for hierarchy in cgroup_hierarchies() {
            remove_cgroup(&hierarchy.join(cgroup_root));
        }
    }
    remove_log_links_into(dir);
    let _ = Command::new("ip")
        .args(["netns", "del", netns])
        .stderr(Stdio::null())
        .status();
    let _ = std::fs::remove_file(registry_dir().join(netns));
    if !keep {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The kubelet links each container's log into `/var/log/containers`; a kubelet stopped before its pods were
/// removed leaves links that point into the run's folder, which goes: they are removed.
fn remove_log_links_into(dir: &Path) {
    let Ok(entries) = std::fs::read_dir("/var/log/containers") else {
        return;
    };
    for e in entries.flatten() {
        if std::fs::read_link(e.path()).is_ok_and(|target| target.starts_with(dir)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Stops a component: SIGTERM, then SIGKILL after 10 s.
pub(super) fn stop(mut child: Child) {
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
pub(super) fn make_cgroup_root(netns: &str) -> Result<(), String> {
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

pub(super) fn register(netns: &str, dir: &Path) {
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
