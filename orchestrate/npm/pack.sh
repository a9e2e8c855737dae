#!/usr/bin/env bash
# orchestrate/npm/pack.sh: the driver for every platform, and the npm tarballs that carry it. Nothing is published.
#
#   orchestrate/npm/pack.sh                                   # all six platforms and the main package
#   JR2_NPM_PLATFORMS="linux-x64 win32-x64" orchestrate/npm/pack.sh
#
# Builds jr2-preflight with the `npm-bin` profile (Cargo.toml says why not `release`) for each platform asked for:
#
#   linux-x64     x86_64-unknown-linux-musl    static musl (Debian's musl-gcc), as images/build builds the probe
#   linux-arm64   aarch64-unknown-linux-musl   static musl (Debian's gcc-aarch64-linux-gnu), as images/build
#   darwin-x64    x86_64-apple-darwin          cargo-zigbuild (zig has no macOS SDK: nothing but libSystem is linked)
#   darwin-arm64  aarch64-apple-darwin         cargo-zigbuild; MACOSX_DEPLOYMENT_TARGET=11.0
#   win32-x64     x86_64-pc-windows-gnu        Debian's mingw-w64
#   win32-arm64   aarch64-pc-windows-gnullvm   cargo-zigbuild (Debian has no arm64 mingw; zig has its mingw-w64 and
#                                              libunwind, which the gnullvm target links)
#
# then stages each platform package (orchestrate/npm/platforms/<platform>, the binary at bin/jr2-preflight[.exe],
# 0755, the repository's LICENSE), the main package (orchestrate/npm/preflight, after its build.sh when there is one), and writes the
# tarballs with `npm pack` into $CARGO_TARGET_DIR/npm/, printing one path a line on stdout. Each build's time goes
# to stderr.
#
# It installs what it needs when missing (rustup targets; apt: musl-tools gcc-aarch64-linux-gnu
# libc6-dev-arm64-cross gcc-mingw-w64-x86-64; PyPI: cargo-zigbuild and ziglang in a venv under ~/.cache/jr2-npm)
# and stops with one `orchestrate/npm/pack.sh: error:` line when it cannot.
#
# Environment:
#   CARGO_TARGET_DIR    where cargo builds (default: target/); the tarballs go to its npm/
#   JR2_NPM_PLATFORMS   the platforms (default: all six)
#   JR2_NPM_CACHE       the tools' cache (default: ~/.cache/jr2-npm)
#   JR2_INSTALL_ONLY    1: install what the builds need and stop
#   SOURCE_DATE_EPOCH   the tarballs' and binaries' one timestamp (default: the HEAD commit's time)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
NPM_DIR=$ROOT/orchestrate/npm

die() {
  echo "orchestrate/npm/pack.sh: error: $*" >&2
  exit 1
}
note() { echo "orchestrate/npm/pack.sh: $*" >&2; }
# need, need_file, install_needed, add_rustup_targets: the way every script installs what it lacks.
source "$ROOT/tools/shared.sh"

ALL="linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64"
PLATFORMS=${JR2_NPM_PLATFORMS:-$ALL}
triple_of() {
  case $1 in
    linux-x64) echo x86_64-unknown-linux-musl ;;
    linux-arm64) echo aarch64-unknown-linux-musl ;;
    darwin-x64) echo x86_64-apple-darwin ;;
    darwin-arm64) echo aarch64-apple-darwin ;;
    win32-x64) echo x86_64-pc-windows-gnu ;;
    win32-arm64) echo aarch64-pc-windows-gnullvm ;;
    *) return 1 ;;
  esac
}
exe_of() { if [[ $1 == win32-* ]]; then echo jr2-preflight.exe; else echo jr2-preflight; fi; }
for p in $PLATFORMS; do
  triple_of "$p" >/dev/null || die "JR2_NPM_PLATFORMS: unknown platform '$p' ($ALL)"
done
has() { [[ " $PLATFORMS " == *" $1 "* ]]; }
has_darwin() { has darwin-x64 || has darwin-arm64; }
has_zig() { has_darwin || has win32-arm64; }

CACHE=${JR2_NPM_CACHE:-$HOME/.cache/jr2-npm}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
mkdir -p "$TARGET_DIR" "$CACHE"
TARGET_DIR=$(cd "$TARGET_DIR" && pwd)
OUT=$TARGET_DIR/npm
CARGO_HOME_DIR=${CARGO_HOME:-$HOME/.cargo}

# --- what the builds need -----------------------------------------------------------------------------------------

has linux-x64 && need musl-gcc musl-tools
if has linux-arm64; then
  need aarch64-linux-gnu-gcc gcc-aarch64-linux-gnu
  need_file /usr/aarch64-linux-gnu/include/string.h libc6-dev-arm64-cross
fi
has win32-x64 && need x86_64-w64-mingw32-gcc gcc-mingw-w64-x86-64
command -v npm >/dev/null 2>&1 || die "npm is not installed (Node 20 or later)"
install_needed

triples=()
for p in $PLATFORMS; do triples+=("$(triple_of "$p")"); done
add_rustup_targets "${triples[@]}"

# cargo-zigbuild and zig, pinned, from PyPI.
ZIGBUILD_VERSION=0.24.0
ZIG_VERSION=0.17.0
VENV=$CACHE/venv
if has_zig; then
  pinned=$("$VENV/bin/pip" show cargo-zigbuild ziglang 2>/dev/null | sed -n 's/^Version: //p' | tr '\n' ' ' || true)
  if [[ ! -x $VENV/bin/cargo-zigbuild ]] || [[ $pinned != "$ZIGBUILD_VERSION $ZIG_VERSION " ]]; then
    note "installing cargo-zigbuild $ZIGBUILD_VERSION and ziglang $ZIG_VERSION (PyPI) into $VENV"
    python3 -m venv "$VENV" >&2 || die "python3 -m venv $VENV failed (apt: python3-venv)"
    "$VENV/bin/pip" install -q "cargo-zigbuild==$ZIGBUILD_VERSION" "ziglang==$ZIG_VERSION" >&2 ||
      die "pip install cargo-zigbuild ziglang failed (is PyPI reachable?)"
  fi
fi

# JR2_INSTALL_ONLY=1 (tests/run.sh, up front): the tools are in place, nothing is built.
if [[ ${JR2_INSTALL_ONLY:-} == 1 ]]; then exit 0; fi

# --- the version --------------------------------------------------------------------------------------------------

workspace_field() {
  awk -v key="$1" '
    /^\[/ { in_pkg = ($0 == "[workspace.package]") }
    in_pkg && $1 == key { sub(/^[^=]*=[ \t]*"/, ""); sub(/".*$/, ""); print; exit }
  ' Cargo.toml
}
VERSION=$(workspace_field version)
[[ -n $VERSION ]] || die "cannot read the version from [workspace.package] in Cargo.toml"
if [[ -z ${SOURCE_DATE_EPOCH:-} ]]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null) || SOURCE_DATE_EPOCH=0
fi
export SOURCE_DATE_EPOCH

# The packages' versions and the main package's exact pins, against the crate's.
json_field() { node -e 'const p = require(process.argv[1]); const v = process.argv[2].split(".").reduce((o, k) => o == null ? o : o[k], p); process.stdout.write(v == null ? "" : String(v))' "$1" "$2"; }
for p in $ALL; do
  pj=$NPM_DIR/platforms/$p/package.json
  [[ -f $pj ]] || die "$pj is missing"
  v=$(json_field "$pj" version)
  [[ $v == "$VERSION" ]] || die "$pj: version $v, the crate's is $VERSION"
done
MAIN=$NPM_DIR/preflight
[[ -f $MAIN/package.json ]] || die "$MAIN/package.json is missing"
v=$(json_field "$MAIN/package.json" version)
[[ $v == "$VERSION" ]] || die "$MAIN/package.json: version $v, the crate's is $VERSION"
for p in $ALL; do
  pin=$(node -e 'const d = require(process.argv[1]).optionalDependencies || {}; process.stdout.write(d[process.argv[2]] || "")' "$MAIN/package.json" "@jr2/preflight-$p")
  [[ $pin == "$VERSION" ]] || die "$MAIN/package.json: optionalDependencies[\"@jr2/preflight-$p\"] is '$pin', not exactly $VERSION"
done

# --- the binaries -------------------------------------------------------------------------------------------------

# Cargo's and the target dir's paths are remapped out of the binaries, as images/build does. The checkout's needs no
# remap: cargo names a workspace's sources by relative paths (orchestrate/npm/test.sh checks no binary holds the
# checkout's path). Keeping it out of RUSTFLAGS and CFLAGS is what lets a checkout at another path (CI clones afresh)
# reuse the cached builds: a change to either rebuilds every crate.
remap="--remap-path-prefix=$CARGO_HOME_DIR=/cargo --remap-path-prefix=$TARGET_DIR=/target"
cmap="-ffile-prefix-map=$CARGO_HOME_DIR=/cargo -ffile-prefix-map=$TARGET_DIR=/target"

build() {
  local p=$1 t
  t=$(triple_of "$p")
  local cmd=(cargo build)
  local envs=(RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }$remap" CARGO_TARGET_DIR="$TARGET_DIR")
  case $p in
    linux-x64) envs+=(CFLAGS_x86_64_unknown_linux_musl="$cmap") ;;
    linux-arm64)
      envs+=(CFLAGS_aarch64_unknown_linux_musl="$cmap" CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc
        AR_aarch64_unknown_linux_musl=aarch64-linux-gnu-ar
        CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc)
      ;;
    darwin-*)
      # Without it zig stamps the SDK's newest minOS (15.0): the binaries would refuse older Macs.
      envs+=(MACOSX_DEPLOYMENT_TARGET=11.0 PATH="$VENV/bin:$PATH")
      cmd=("$VENV/bin/cargo-zigbuild" zigbuild)
      ;;
    win32-x64) envs+=(CFLAGS_x86_64_pc_windows_gnu="$cmap") ;;
    win32-arm64)
      envs+=(CFLAGS_aarch64_pc_windows_gnullvm="$cmap" PATH="$VENV/bin:$PATH")
      cmd=("$VENV/bin/cargo-zigbuild" zigbuild)
      ;;
  esac
  local start
  start=$(date +%s)
  note "building jr2-preflight $VERSION for $p ($t, profile npm-bin)"
  # Without SOURCE_DATE_EPOCH (the tarballs' timestamp, the HEAD commit's time): cc-rs reruns a build script when it
  # changes (gcc reads it for __DATE__), so ring's C and everything above it were rebuilt for all five targets after
  # every commit. Nothing in these binaries holds a build date.
  env -u SOURCE_DATE_EPOCH "${envs[@]}" "${cmd[@]}" --profile npm-bin --locked -p jr2-preflight --bin jr2-preflight --target "$t" >&2 ||
    die "the build of jr2-preflight for $p ($t) failed (see above)"
  note "built $p in $(($(date +%s) - start)) s"
}

# One target at a time: each build keeps both cores busy. Measured: the three Debian-toolchain targets in one cargo
# invocation beside cargo-zigbuild's two, which had seemed to promise filled idle cores, took 1,180 s against 1,161
# s one after another (2,330 s of CPU either way).
all_start=$(date +%s)
for p in $PLATFORMS; do build "$p"; done
note "all binaries built in $(($(date +%s) - all_start)) s"

# --- the tarballs -------------------------------------------------------------------------------------------------

STAGE=$OUT/stage
rm -rf "$STAGE"
mkdir -p "$STAGE" "$OUT"

pack() {
  local dir=$1 json
  json=$(cd "$dir" && npm pack --json --pack-destination "$OUT" 2>/dev/null) || die "npm pack in $dir failed: $(cd "$dir" && npm pack --dry-run 2>&1 | tail -1)"
  node -e 'process.stdout.write(JSON.parse(process.argv[1])[0].filename)' "$json"
}

for p in $PLATFORMS; do
  t=$(triple_of "$p")
  exe=$(exe_of "$p")
  bin=$TARGET_DIR/$t/npm-bin/$exe
  [[ -f $bin ]] || die "$bin is missing after the build"
  dir=$STAGE/$p
  mkdir -p "$dir/bin"
  cp "$NPM_DIR/platforms/$p/package.json" "$NPM_DIR/platforms/$p/README.md" "$ROOT/LICENSE" "$dir/"
  cp "$bin" "$dir/bin/$exe"
  chmod 0755 "$dir/bin/$exe"
  touch -d "@$SOURCE_DATE_EPOCH" "$dir/bin/$exe"
  echo "$OUT/$(pack "$dir")"
done

if [[ -x $MAIN/build.sh ]]; then
  note "building the main package ($MAIN/build.sh)"
  "$MAIN/build.sh" >&2 || die "$MAIN/build.sh failed (see above)"
fi
echo "$OUT/$(pack "$MAIN")"
