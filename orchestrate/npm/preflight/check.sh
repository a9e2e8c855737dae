#!/usr/bin/env bash
# The npm package's check (a step of tests/run.sh): the types in types/ are what the schemas generate (regenerated
# into a temporary folder; any difference, a new or a missing file included, fails), they compile under tsc --strict
# and the consumer project test/consumer/ (jr2 up's code: interface-typed pod specs, a mapped placement list,
# exhaustive switches on the codes) compiles under strict, noUncheckedIndexedAccess and exactOptionalPropertyTypes,
# the schemas compile under Ajv 2020 strict, and the node:test tests run against the real driver
# and the fake cluster. Installs the pinned tools itself (npm ci from tools/package-lock.json, cached under ~/.cache)
# and builds the three binaries the tests run.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/jr2-preflight/target}"

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

# The binaries the tests run, built as the tests step and tests/netns/run.sh build them (so no-ops in tests/run.sh):
# jr2-preflight and jr2-probe for the workspace's tests, jr2-fake-cluster with the testkit's binaries.
(cd ../../.. && cargo test --quiet --workspace --locked --no-run && cargo build --quiet --locked -p jr2-probe -p jr2-testkit --bins)
echo "node $(node --version): node --test" >&2
node --test test/*.test.mjs
