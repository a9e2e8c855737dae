#!/usr/bin/env bash
# Fidelity: the probe against pi-ai 0.82.1 (the client of a Turn), on loopback only.
#
#   tests/fidelity/run.sh [compare.mjs options]     e.g. --only conformance, --filter anthropic, --jobs 2
#
# 1. Installs the pinned packages (pi-ai 0.82.1, pi-agent-core 0.82.1, undici 7.30.2) with `npm ci` from the committed
#    package-lock.json into tests/fidelity/node_modules (npm's cache in ~/.cache/npm; skipped when node_modules already
#    holds exactly this lock). JR2_FIDELITY_INSTALL_ONLY=1 stops after this step.
# 2. Builds jr2-probe (`cargo build -p jr2-probe`, into $CARGO_TARGET_DIR, default ~/.cache/jr2-preflight/target),
#    unless JR2_PROBE names a binary.
# 3. Runs proxy-rules.mjs: the probe's table of proxy rules against undici 7.30.2 itself; exit 1 on any row it differs.
# 4. Runs compare.mjs: request conformance and outcome agreement; exit 1 on any difference or disagreement the lists
#    in compare.mjs do not name.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/jr2-preflight/target}"
NPM_CACHE="${JR2_NPM_CACHE_DIR:-$HOME/.cache/npm}"

log() { printf 'fidelity: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for tool in node npm cargo sha256sum; do
  command -v "$tool" >/dev/null || die "needs '$tool' on PATH"
done
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
  die "needs Node.js >= 20 (found $(node --version))"

# 1. The pinned packages. pi-ai 0.82.1 says engines node >= 22.19, but its modules load on Node 20: npm only warns.
# Install scripts are not run (pi's dependencies need none: @google/genai's is a no-op, protobufjs's a version note).
lock_sha="$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)"
stamp="$HERE/node_modules/.jr2-lock-sha256"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$lock_sha" ]; then
  log "node_modules matches package-lock.json"
else
  log "npm ci (cache: $NPM_CACHE)"
  mkdir -p "$NPM_CACHE"
  npm ci --prefix "$HERE" --cache "$NPM_CACHE" --prefer-offline --ignore-scripts --no-audit --no-fund \
    --loglevel=error >&2 || die "npm ci failed"
  echo "$lock_sha" >"$stamp"
fi
for pkg in pi-ai pi-agent-core; do
  node -e 'const p=require(process.argv[1]); if (p.version !== "0.82.1") { console.error(`${p.name} ${p.version} installed, not 0.82.1`); process.exit(1) }' \
    "$HERE/node_modules/@earendil-works/$pkg/package.json" || die "the installed $pkg is not the pinned one"
done
# JR2_FIDELITY_INSTALL_ONLY=1: stop here (probe/tests/real_peers.rs installs the packages this way before its Turns,
# which run in the `tests` step, before this script's own step).
if [ -n "${JR2_FIDELITY_INSTALL_ONLY:-}" ]; then exit 0; fi

# 2. The probe.
if [ -n "${JR2_PROBE:-}" ]; then
  probe="$JR2_PROBE"
else
  log "cargo build -p jr2-probe"
  (cd "$ROOT" && cargo build --quiet --locked -p jr2-probe) || die "cargo build -p jr2-probe failed"
  probe="$CARGO_TARGET_DIR/debug/jr2-probe"
fi
[ -x "$probe" ] || die "no probe binary at $probe"

# 3. The proxy rules: each row of the probe's table (probe/tests/fixtures/undici7-proxy-rules.json) through undici 7's
# own EnvHttpProxyAgent, the dispatcher of a Turn's fetch (nothing is connected).
log "proxy rules against undici"
node "$HERE/proxy-rules.mjs" >&2 || die "undici picks another proxy than the probe's table says"

# 4. The comparison.
exec node "$HERE/compare.mjs" --probe "$probe" "$@"
