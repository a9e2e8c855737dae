#!/usr/bin/env bash
# The whole test suite, on a fresh machine too: installs what the tests need (the real third-party peers, cached
# under ~/.cache), then formatting, lints and every test of the workspace. Prints the time of each step.
set -euo pipefail
cd "$(dirname "$0")/.."

# Builds are cached across runs and checkouts (CI clones afresh each time).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/jr2-preflight/target}"
export CARGO_TERM_COLOR=never

total_start=$(date +%s)
step() {
  local name=$1
  shift
  local start
  start=$(date +%s)
  echo "==> $name: $*" >&2
  "$@"
  echo "==> $name: done in $(($(date +%s) - start)) s" >&2
}

step "peers" tests/peers/install.sh
step "catalog" probe/catalog/check.sh
step "format" cargo fmt --all --check
step "lints" cargo clippy --workspace --all-targets --locked -- -D warnings
step "tests" cargo test --workspace --locked --no-fail-fast
# Reliability (tests/README.md, "Reliability"): the hostile-endpoint table the tests wrote (probe/tests/chaos.rs), broken
# networks in network namespaces (root; required under CI), every fuzz target for a fixed number of runs.
export JR2_RELIABILITY_DIR="$CARGO_TARGET_DIR/tmp/reliability"
if [ "${CI:-}" = true ]; then export JR2_NETNS_REQUIRED=1; fi
step "chaos" cat "$JR2_RELIABILITY_DIR/chaos.md"
step "netns" tests/netns/run.sh
# The npm package @jr2/preflight (orchestrate/npm/preflight): generated types current, tsc --strict, Ajv 2020 strict,
# its node:test tests against the real driver and the fake cluster (jr2-fake-cluster).
step "client" orchestrate/npm/preflight/check.sh
# The driver for the five npm platforms and the six tarballs (orchestrate/npm/pack.sh), the binaries' format and
# linkage, the Windows one run under Wine and the arm64 one under qemu, the client installed from the tarballs offline.
step "platforms" orchestrate/npm/test.sh
step "fuzz" fuzz/run.sh --runs 20000
step "fidelity" tests/fidelity/run.sh
step "image" images/test
echo "==> all: done in $(($(date +%s) - total_start)) s" >&2
