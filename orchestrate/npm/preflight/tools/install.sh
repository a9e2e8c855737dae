#!/usr/bin/env bash
# Installs the pinned tools of tools/package-lock.json (TypeScript, json-schema-to-typescript, Ajv, Node's types) with
# `npm ci`, once per lockfile, into ~/.cache, and prints the node_modules folder. No install script runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${JR2_NPM_CACHE:-$HOME/.cache/jr2-preflight/npm}
hash=$(sha256sum "$here/package-lock.json" | cut -c1-16)
dir=$cache/tools-$hash
if [ ! -f "$dir/.installed" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$here/package.json" "$here/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --cache "$cache/npm-cache" >&2)
  touch "$dir/.installed"
fi
echo "$dir/node_modules"
