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
echo "==> all: done in $(($(date +%s) - total_start)) s" >&2
