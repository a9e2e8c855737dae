#!/usr/bin/env bash
# The npm package's check (a step of tests/run.sh): the types in types/ are what the schemas generate (regenerated
# into a temporary folder; any difference, a new or a missing file included, fails), they compile under tsc --strict
# and the consumer project test/consumer/ (jr2 up's code: interface-typed pod specs, a mapped placement list,
# exhaustive switches on the codes) compiles under strict, noUncheckedIndexedAccess and exactOptionalPropertyTypes
# (TypeScript 5.9, and its ordinary.ts under TypeScript 7 with its default `types: []` too),
# the schemas compile under Ajv 2020 strict, and the node:test tests run against the real driver and the fake cluster
# on Node 20, 22 and 24. Installs the pinned tools itself (npm ci from tools/package-lock.json, cached under ~/.cache),
# Node 22 and 24 (and 20 when the machine's node is not 20) from the npm registry's node-<platform>-<arch> packages,
# cached under ~/.cache/jr2-preflight/node, and builds the three binaries the tests run.
#
#   JR2_NODE_VERSIONS   the exact Node versions the tests run on (default: the pins below); for a 20.x the machine's
#                       node serves when it is a 20.19 or later 20
#   JR2_INSTALL_ONLY    1: install the tools and the Nodes, and stop (tests/run.sh, up front)
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/jr2-preflight/target}"

# The Node versions: the machine's for 20 when it is a 20 at the engines floor (20.19) or above, the rest from the
# registry's node-<platform>-<arch>.
NODE_PINS="20.20.2 22.23.5 24.22.3"
node_cache=${JR2_NODE_CACHE:-$HOME/.cache/jr2-preflight/node}
node_for() {
  local version=$1 pkg dir
  local machine minor
  machine=$(node -p 'process.versions.node')
  minor=${machine#*.}
  minor=${minor%%.*}
  if [[ $machine == "$version" ]] || [[ $version == 20.* && $machine == 20.* && $minor -ge 19 ]]; then
    command -v node
    return
  fi
  pkg=node-$(node -p 'process.platform + "-" + process.arch')
  dir=$node_cache/$pkg-$version
  if [[ ! -x $dir/node_modules/$pkg/bin/node ]]; then
    echo "check.sh: installing Node $version ($pkg@$version from the npm registry) into $dir" >&2
    rm -rf "$dir"
    mkdir -p "$dir"
    echo '{ "name": "jr2-node", "private": true }' >"$dir/package.json"
    (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error --cache "$node_cache/npm-cache" "$pkg@$version" >&2) ||
      { echo "error: cannot install Node $version ($pkg@$version from the npm registry; is it reachable?)" >&2; exit 1; }
  fi
  [[ -x $dir/node_modules/$pkg/bin/node ]] || { echo "error: $pkg@$version holds no bin/node" >&2; exit 1; }
  echo "$dir/node_modules/$pkg/bin/node"
}
nodes=()
for v in ${JR2_NODE_VERSIONS:-$NODE_PINS}; do
  n=$(node_for "$v") || exit 1
  nodes+=("$n")
done

if [[ ${JR2_INSTALL_ONLY:-} == 1 ]]; then
  tools/install.sh >/dev/null
  exit 0
fi

./build.sh
tsc=node_modules/.bin/tsc

generated=$(mktemp -d)
trap 'rm -rf "$generated"' EXIT
node tools/generate-types.mjs "$generated"
if ! diff -r types "$generated" >"$generated.diff" 2>&1; then
  cat "$generated.diff" >&2
  rm -f "$generated.diff"
  echo "error: orchestrate/npm/preflight/types/ is not what the schemas generate: run (cd orchestrate/npm/preflight && node tools/generate-types.mjs types) and commit it" >&2
  exit 1
fi
rm -f "$generated.diff"
"$tsc" -p tsconfig.check.json --strict
"$tsc" -p test/consumer/tsconfig.json
# TypeScript 7 (the Go compiler, tools/package.json's typescript7) with its defaults: `types: []`, no @types/node.
node_modules/typescript7/bin/tsc -p test/consumer/tsconfig.ts7.json

# The binaries the tests run, built as the tests step and tests/netns/run.sh build them (so no-ops in tests/run.sh):
# jr2-preflight and jr2-probe for the workspace's tests, jr2-fake-cluster with the testkit's binaries.
(cd ../../.. && cargo test --quiet --workspace --locked --no-run && cargo build --quiet --locked -p jr2-probe -p jr2-testkit --bins)
for n in "${nodes[@]}"; do
  echo "node $("$n" --version): node --test ($n)" >&2
  start=$(date +%s)
  "$n" --test test/*.test.mjs
  echo "node $("$n" --version): passed in $(($(date +%s) - start)) s" >&2
done
