#!/usr/bin/env bash
# Builds @jr2/preflight in place, ready for `npm pack`: dist/ (the client compiled to ESM with its .d.ts, and cli.js,
# the `jr2-preflight` bin), schemas/ (the JSON Schemas it ships, copied from the crates) and LICENSE (the
# repository's). The types in types/ are generated and committed
# (check.sh keeps them current). Installs the pinned tools first (tools/install.sh, cached under ~/.cache).
set -euo pipefail
cd "$(dirname "$0")"
repo=../../..
modules=$(tools/install.sh)
ln -sfn "$modules" node_modules
rm -rf dist schemas
"$modules/.bin/tsc" -p tsconfig.json
chmod 0755 dist/cli.js
cp "$repo/LICENSE" LICENSE
mkdir -p schemas
cp "$repo"/orchestrate/schemas/*.schema.json "$repo"/probe/schemas/*.schema.json schemas/
echo "built @jr2/preflight in $(pwd): dist/, schemas/, LICENSE" >&2
