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
# src/version.ts: the name and version compiled in (nothing reads a package.json at run time: a bundle has none).
node -e '
  const p = require("./package.json");
  process.stdout.write(
    "// Written by build.sh from package.json: this package\x27s name and version, compiled in, so that nothing reads a\n" +
    "// package.json at run time (a bundle of the client has none beside it, and the app\x27s own is not this one).\n" +
    `export const NAME = ${JSON.stringify(p.name)};\nexport const VERSION = ${JSON.stringify(p.version)};\n`);
' >src/version.ts.new
mv src/version.ts.new src/version.ts
"$modules/.bin/tsc" -p tsconfig.json
chmod 0755 dist/cli.js
cp "$repo/LICENSE" LICENSE
mkdir -p schemas
cp "$repo"/orchestrate/schemas/*.schema.json "$repo"/probe/schemas/*.schema.json schemas/
echo "built @jr2/preflight in $(pwd): dist/, schemas/, LICENSE" >&2
