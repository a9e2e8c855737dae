#!/usr/bin/env bash
# orchestrate/npm/node-from-npm.sh VERSION|below-floor: prints the path of a Node of exactly VERSION for this machine,
# from the npm registry's node-<platform>-<arch> package (the official build, as preflight/check.sh installs Node 22
# and 24), installed once into ~/.cache/jr2-preflight/node (JR2_NODE_CACHE) with no install script. `below-floor` is
# the pinned Node below @jr2/preflight's engines floor (20.19) that install-test.sh runs npm and the client under;
# test.sh installs it up front (JR2_INSTALL_ONLY), so the test itself reaches no registry but the loopback one.
set -euo pipefail
version=${1:?usage: node-from-npm.sh VERSION|below-floor}
[[ $version == below-floor ]] && version=20.18.3
cache=${JR2_NODE_CACHE:-$HOME/.cache/jr2-preflight/node}
pkg=node-$(node -p 'process.platform + "-" + process.arch')
dir=$cache/$pkg-$version
if [[ ! -x $dir/node_modules/$pkg/bin/node ]]; then
  echo "node-from-npm.sh: installing Node $version ($pkg@$version from the npm registry) into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{ "name": "jr2-node", "private": true }' >"$dir/package.json"
  (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error --cache "$cache/npm-cache" \
    --registry=https://registry.npmjs.org/ "$pkg@$version" >&2) ||
    { echo "node-from-npm.sh: error: cannot install Node $version ($pkg@$version from the npm registry; is it reachable?)" >&2; exit 1; }
fi
[[ -x $dir/node_modules/$pkg/bin/node ]] || { echo "node-from-npm.sh: error: $pkg@$version holds no bin/node" >&2; exit 1; }
echo "$dir/node_modules/$pkg/bin/node"
