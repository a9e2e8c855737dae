#!/usr/bin/env bash
# orchestrate/npm/test.sh: the "platforms" step of tests/run.sh. Builds the npm tarballs (orchestrate/npm/pack.sh)
# and checks what they carry:
#
#   - each binary's format and linkage: Linux x64/arm64 static ELF of the right machine; macOS x64/arm64 Mach-O
#     loading only libSystem (and libiconv and libcharset: the libc crate links libiconv on Apple targets) with minOS
#     11.0; Windows x64 and arm64 PE32+ console executables of their machine (orchestrate/npm/pe.mjs) importing only
#     DLLs that ship with Windows;
#   - that they run: the Linux x64 one natively, the arm64 one under qemu-user, the Windows x64 one under Wine (with
#     the ProcessPrng shim, orchestrate/npm/wine/), each through `--version` and a `--dry-run` of the example plan
#     (orchestrate/examples/plan.json), whose pods must be the native binary's (run id and deadlines aside).
#     The macOS and Windows arm64 binaries cannot run here (no macOS, no Darwin emulator, a Wine for x64 only):
#     checked for format and linkage only;
#   - each tarball: package.json's name, version, os, cpu, preferUnplugged, publishConfig (public, provenance), no
#     engines (the binary needs no Node), no libc and no scripts, the repository, homepage and bugs of Cargo.toml's
#     `repository`, the binary at bin/ with mode 0755, nothing else but README.md and LICENSE (the repository's, byte
#     for byte); the main one pins the six exactly, has no install script, engines >=20.19, the same metadata and
#     LICENSE, and its `jr2-preflight` bin;
#   - installed (orchestrate/npm/install-test.sh): npm install and npm ci (here, --os darwin --cpu arm64,
#     --omit=optional) from a registry on loopback that serves the tarballs, a tarball install's lockfile, an offline
#     one's repair, the client against the fake cluster and npx jr2-preflight, npm and the client under Node 20.18,
#     an esbuild bundle of a consumer, and the consumer compiled by TypeScript 7.
#
# Every failure is one line `orchestrate/npm/test.sh: FAIL: <binary or tarball>: <what is wrong>`, exit 1. It
# installs what it needs when missing (apt: wine64 gcc-mingw-w64-x86-64 qemu-user file; PyPI: macholib in a venv
# under ~/.cache/jr2-npm; a Wine prefix under ~/.cache/jr2-npm/wine, made once). JR2_NPM_PLATFORMS as pack.sh.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
NPM_DIR=$ROOT/orchestrate/npm

fail() {
  echo "orchestrate/npm/test.sh: FAIL: $*" >&2
  exit 1
}
die() {
  echo "orchestrate/npm/test.sh: error: $*" >&2
  exit 1
}
note() { echo "orchestrate/npm/test.sh: $*" >&2; }
# need, need_file, install_needed, add_rustup_targets: the way every script installs what it lacks.
source "$ROOT/tools/shared.sh"
timed() {
  local what=$1 start
  shift
  start=$(date +%s)
  "$@"
  note "$what: $(($(date +%s) - start)) s"
}

step_start=$(date +%s)
ALL="linux-x64 linux-arm64 darwin-x64 darwin-arm64 win32-x64 win32-arm64"
PLATFORMS=${JR2_NPM_PLATFORMS:-$ALL}
export JR2_NPM_PLATFORMS=$PLATFORMS
has() { [[ " $PLATFORMS " == *" $1 "* ]]; }
CACHE=${JR2_NPM_CACHE:-$HOME/.cache/jr2-npm}
mkdir -p "$CACHE"

# --- what the checks need -----------------------------------------------------------------------------------------

need file file
if has win32-x64; then
  need_file /usr/lib/wine/wine64 wine64
  need x86_64-w64-mingw32-gcc gcc-mingw-w64-x86-64
fi
has linux-arm64 && need qemu-aarch64 qemu-user
install_needed
MACHOLIB_VERSION=1.16.4
VENV=$CACHE/venv
if has darwin-x64 || has darwin-arm64; then
  if ! "$VENV/bin/python" -c "import macholib, sys; sys.exit(macholib.__version__ != '$MACHOLIB_VERSION')" 2>/dev/null; then
    note "installing macholib $MACHOLIB_VERSION (PyPI) into $VENV"
    [[ -x $VENV/bin/pip ]] || python3 -m venv "$VENV" >&2 || die "python3 -m venv $VENV failed (apt: python3-venv)"
    "$VENV/bin/pip" install -q "macholib==$MACHOLIB_VERSION" >&2 || die "pip install macholib failed (is PyPI reachable?)"
  fi
fi

# tests/run.sh installs every step's tools up front (JR2_INSTALL_ONLY=1), beside the peers' builds: then pack.sh
# installs its own and both stop.
if [[ ${JR2_INSTALL_ONLY:-} == 1 ]]; then
  # The Node below the engines floor that install-test.sh runs npm under.
  if has linux-x64; then "$NPM_DIR/node-from-npm.sh" below-floor >/dev/null; fi
  exec "$NPM_DIR/pack.sh"
fi

# --- the tarballs -------------------------------------------------------------------------------------------------

packed=$(timed "pack.sh (builds and tarballs)" "$NPM_DIR/pack.sh") || fail "orchestrate/npm/pack.sh: failed (see above)"
tarball() {
  local name=$1
  grep -E "/jr2-preflight-${name}[0-9]" <<<"$packed" || true
}
main_tarball() { grep -E "/jr2-preflight-${VERSION//./\\.}\.tgz$" <<<"$packed" || true; }
VERSION=$(node -e 'process.stdout.write(require(process.argv[1]).version)' "$NPM_DIR/platforms/linux-x64/package.json")
# The one repository URL (a placeholder until the project's home is decided): [workspace.package] of Cargo.toml.
REPOSITORY=$(awk '/^\[/ { p = ($0 == "[workspace.package]") } p && $1 == "repository" { sub(/^[^=]*=[ \t]*"/, ""); sub(/".*$/, ""); print; exit }' Cargo.toml)
[[ -n $REPOSITORY ]] || die "cannot read repository from [workspace.package] in Cargo.toml"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/jr2-npm-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

triple_of() {
  case $1 in
    linux-x64) echo x86_64-unknown-linux-musl ;;
    linux-arm64) echo aarch64-unknown-linux-musl ;;
    darwin-x64) echo x86_64-apple-darwin ;;
    darwin-arm64) echo aarch64-apple-darwin ;;
    win32-x64) echo x86_64-pc-windows-gnu ;;
    win32-arm64) echo aarch64-pc-windows-gnullvm ;;
  esac
}
exe_of() { if [[ $1 == win32-* ]]; then echo jr2-preflight.exe; else echo jr2-preflight; fi; }

# A platform tarball: its files, modes and package.json. Unpacks it into $WORK/<platform>/package.
check_tarball() {
  local p=$1 tgz exe listing os cpu
  tgz=$(tarball "$p-")
  [[ -n $tgz && -f $tgz ]] || fail "@jr2/preflight-$p: no tarball among pack.sh's output"
  exe=$(exe_of "$p")
  listing=$(tar -tvzf "$tgz") || fail "$tgz: not a gzip tar"
  local files
  files=$(tar -tzf "$tgz" | sort | tr '\n' ' ')
  [[ $files == "package/LICENSE package/README.md package/bin/$exe package/package.json " ]] ||
    fail "$tgz: holds '$files', not exactly package.json, README.md, LICENSE and bin/$exe"
  grep -Eq "^-rwxr-xr-x .* package/bin/$exe\$" <<<"$listing" ||
    fail "$tgz: bin/$exe is not mode 0755: $(grep "bin/$exe" <<<"$listing")"
  mkdir -p "$WORK/$p"
  tar -xzf "$tgz" -C "$WORK/$p"
  cmp -s "$WORK/$p/package/LICENSE" "$ROOT/LICENSE" || fail "$tgz: LICENSE is not the repository's"
  case $p in
    linux-*) os=linux ;;
    darwin-*) os=darwin ;;
    win32-*) os=win32 ;;
  esac
  cpu=${p#*-}
  local why
  why=$(node -e '
    const [file, name, version, os, cpu, repo, platform] = process.argv.slice(1);
    const p = require(file);
    const wrong = [];
    const one = (k, v) => { if (JSON.stringify(p[k]) !== JSON.stringify(v)) wrong.push(`${k} is ${JSON.stringify(p[k])}, not ${JSON.stringify(v)}`); };
    one("name", name); one("version", version); one("os", [os]); one("cpu", [cpu]); one("preferUnplugged", true);
    one("license", "Apache-2.0"); one("homepage", `${repo}#readme`); one("bugs", { url: `${repo}/issues` });
    one("repository", { type: "git", url: `git+${repo}.git`, directory: `orchestrate/npm/platforms/${platform}` });
    one("publishConfig", { access: "public", provenance: true });
    // The binary needs no Node; npm leaves out an optional package whose engines this Node fails, silently.
    if ("engines" in p) wrong.push(`it sets engines (${JSON.stringify(p.engines)}): npm drops it on an older Node`);
    if ("libc" in p) wrong.push("it sets libc (the Linux binaries are static: for glibc and musl alike)");
    if ("scripts" in p) wrong.push(`it has scripts: ${JSON.stringify(p.scripts)}`);
    for (const k of ["bin", "dependencies", "optionalDependencies"]) if (k in p) wrong.push(`it has ${k}`);
    process.stdout.write(wrong.join("; "));
  ' "$WORK/$p/package/package.json" "@jr2/preflight-$p" "$VERSION" "$os" "$cpu" "$REPOSITORY" "$p")
  [[ -z $why ]] || fail "$tgz: package.json: $why"
}

check_main_tarball() {
  local tgz why
  tgz=$(main_tarball)
  [[ -n $tgz && -f $tgz ]] || fail "@jr2/preflight: no tarball among pack.sh's output"
  mkdir -p "$WORK/main"
  tar -xzf "$tgz" -C "$WORK/main" || fail "$tgz: not a gzip tar"
  cmp -s "$WORK/main/package/LICENSE" "$ROOT/LICENSE" || fail "$tgz: no LICENSE, or not the repository's"
  [[ -f $WORK/main/package/dist/cli.js ]] || fail "$tgz: no dist/cli.js (the jr2-preflight bin)"
  why=$(node -e '
    const [file, version, all, repo] = process.argv.slice(1);
    const p = require(file);
    const wrong = [];
    const one = (k, v) => { if (JSON.stringify(p[k]) !== JSON.stringify(v)) wrong.push(`${k} is ${JSON.stringify(p[k])}, not ${JSON.stringify(v)}`); };
    one("license", "Apache-2.0"); one("engines", { node: ">=20.19" }); one("homepage", `${repo}#readme`); one("bugs", { url: `${repo}/issues` });
    one("repository", { type: "git", url: `git+${repo}.git`, directory: "orchestrate/npm/preflight" });
    one("publishConfig", { access: "public", provenance: true });
    one("bin", { "jr2-preflight": "dist/cli.js" });
    if (p.name !== "@jr2/preflight") wrong.push(`name is ${p.name}`);
    if (p.version !== version) wrong.push(`version is ${p.version}, not ${version}`);
    const deps = p.optionalDependencies || {};
    for (const plat of all.split(" ")) {
      const v = deps[`@jr2/preflight-${plat}`];
      if (v !== version) wrong.push(`optionalDependencies["@jr2/preflight-${plat}"] is ${JSON.stringify(v)}, not exactly ${version}`);
    }
    for (const s of ["preinstall", "install", "postinstall", "prepare"]) if (p.scripts && s in p.scripts) wrong.push(`it has an install script (${s})`);
    process.stdout.write(wrong.join("; "));
  ' "$WORK/main/package/package.json" "$VERSION" "$ALL" "$REPOSITORY")
  [[ -z $why ]] || fail "$tgz: package.json: $why"
  if tar -tzf "$tgz" | grep -Eq '(^|/)jr2-preflight(\.exe)?$'; then
    fail "$tgz: the main package holds a driver binary (they belong in the platform packages)"
  fi
}

# --- formats and linkage ------------------------------------------------------------------------------------------

check_elf() {
  local p=$1 bin=$2 machine=$3 desc
  desc=$(file -b "$bin")
  [[ $desc == ELF\ 64-bit* ]] || fail "$p $bin: not a 64-bit ELF: $desc"
  [[ $desc == *"$machine"* ]] || fail "$p $bin: not $machine: $desc"
  case $desc in
    *"statically linked"* | *"static-pie linked"*) ;;
    *) fail "$p $bin: not static: $desc" ;;
  esac
}

# A Windows PE32+ console executable of `machine` (x64, arm64) importing only DLLs that ship with Windows, read by
# orchestrate/npm/pe.mjs (Debian's mingw objdump reads x86 PEs only; for x64 what it lists is checked too).
check_pe() {
  local p=$1 bin=$2 machine=$3 desc info dlls bad=()
  desc=$(file -b "$bin")
  [[ $desc == "PE32+ executable (console) "* ]] || fail "$p $bin: not a PE32+ console executable: $desc"
  info=$(node "$NPM_DIR/pe.mjs" "$bin") || fail "$p $bin: pe.mjs cannot read it"
  [[ $(node -p 'const i = JSON.parse(process.argv[1]); `${i.machine} ${i.pe32plus} ${i.console}`' "$info") == "$machine true true" ]] ||
    fail "$p $bin: not a PE32+ $machine console executable: $info"
  dlls=$(node -p 'JSON.parse(process.argv[1]).dlls.join("\n")' "$info")
  [[ -n $dlls ]] || fail "$p $bin: it imports no DLL"
  if [[ $machine == x64 ]]; then
    # objdump also lists delay-loaded DLLs, which pe.mjs does not read: every DLL either names is checked.
    dlls=$({ echo "$dlls"; x86_64-w64-mingw32-objdump -p "$bin" | sed -n 's/^\s*DLL Name: //p' | tr 'A-Z' 'a-z'; } | LC_ALL=C sort -u)
  fi
  # What every Windows 10 and later has; a mingw runtime (libgcc_s_seh-1.dll, libwinpthread-1.dll, libunwind.dll,
  # libc++.dll) would not be.
  for d in $dlls; do
    case $d in
      kernel32.dll | ntdll.dll | advapi32.dll | ws2_32.dll | userenv.dll | bcrypt.dll | bcryptprimitives.dll | \
        msvcrt.dll | ucrtbase.dll | api-ms-win-crt-*.dll | api-ms-win-core-*.dll | secur32.dll | crypt32.dll | \
        shell32.dll | ole32.dll | user32.dll | iphlpapi.dll | mswsock.dll) ;;
      *) bad+=("$d") ;;
    esac
  done
  ((${#bad[@]} == 0)) || fail "$p $bin: imports DLLs that are not Windows's own: ${bad[*]}"
  note "$p: PE32+ $machine console, imports $(tr '\n' ' ' <<<"$dlls")"
}

check_macho() {
  local p=$1 bin=$2 arch=$3 why
  why=$("$VENV/bin/python" - "$bin" "$arch" <<'EOF'
import sys
from macholib.MachO import MachO
from macholib import mach_o

path, arch = sys.argv[1], sys.argv[2]
cpu = {"arm64": 0x0100000C, "x86_64": 0x01000007}[arch]
wrong = []
m = MachO(path)
if len(m.headers) != 1:
    wrong.append(f"{len(m.headers)} architectures, not one")
h = m.headers[0]
if h.header.cputype != cpu:
    wrong.append(f"CPU type {h.header.cputype:#x}, not {arch}")
if h.header.filetype != mach_o.MH_EXECUTE:
    wrong.append(f"file type {h.header.filetype}, not an executable")
# libSystem is the C library and the kernel interface of every Mac; libiconv comes with the libc crate (its iconv
# declarations carry `#[link(name = "iconv")]` on Apple targets), and zig's libiconv stub brings libcharset, its
# companion: both are in /usr/lib of every macOS. Nothing else: no framework.
allowed = {"/usr/lib/libSystem.B.dylib", "/usr/lib/libiconv.2.dylib", "/usr/lib/libcharset.1.dylib"}
loads = {mach_o.LC_LOAD_DYLIB, mach_o.LC_LOAD_WEAK_DYLIB, mach_o.LC_REEXPORT_DYLIB, mach_o.LC_LAZY_LOAD_DYLIB,
         mach_o.LC_LOAD_UPWARD_DYLIB}
minos = None
dylibs = []
for lc, cmd, data in h.commands:
    if lc.cmd in loads:
        name = data.split(b"\0", 1)[0].decode()
        dylibs.append(name)
        if name not in allowed:
            wrong.append(f"loads {name}")
    elif lc.cmd == mach_o.LC_BUILD_VERSION:
        minos = cmd.minos
    elif lc.cmd == mach_o.LC_VERSION_MIN_MACOSX:
        minos = cmd.version
if "/usr/lib/libSystem.B.dylib" not in dylibs:
    wrong.append("does not load libSystem")
if minos is None:
    wrong.append("has no minimum macOS version")
elif minos != (11 << 16):
    wrong.append(f"minimum macOS {minos >> 16}.{(minos >> 8) & 0xff}, not 11.0")
print("; ".join(wrong) if wrong else "ok " + " ".join(dylibs))
EOF
  ) || fail "$p $bin: macholib cannot read it"
  [[ $why == ok* ]] || fail "$p $bin: $why"
  note "$p: Mach-O $arch, minOS 11.0, loads ${why#ok }"
}

# No path of the machine that built it (tools/shared.sh).
check_paths() {
  local p=$1 bin=$2 found
  if found=$(build_path_in "$bin"); then fail "$p $bin: holds the build machine's path $found"; fi
}

# --- running them -------------------------------------------------------------------------------------------------

# The dry-run pods with what changes from run to run (the run id, its 8-character prefix in the pod names, the
# deadlines) replaced.
normalize() {
  local file=$1 run
  # YAML quotes an id that starts with a digit ('1daz7r9y67'): about one run in four.
  run=$(sed -n "s/.*jr2\.dev\/preflight-run: '\{0,1\}\([a-z0-9]\{1,\}\).*/\1/p" "$file" | head -1)
  [[ -n $run ]] || return 1
  sed -e "s/'$run'/RUN/g" -e "s/$run/RUN/g" -e "s/${run:0:8}/RUN8/g" \
    -e "s/\(jr2\.dev\/preflight-deadline: \).*/\1DEADLINE/" \
    -e '/name: JR2_PROBE_DEADLINE/{n;s/value: .*/value: DEADLINE/}' "$file"
}

# Runs `$@ --version` and `$@ run --plan plan.json --dry-run` in $dir (holding the example plan), and compares.
check_runs() {
  local p=$1 dir=$2
  shift 2
  local v
  v=$(cd "$dir" && "$@" --version 2>"$dir/version.err" | tr -d '\r') ||
    fail "$p: --version failed: $(tr '\n' ' ' <"$dir/version.err" | cut -c1-300)"
  [[ $v == "jr2-preflight $VERSION" ]] || fail "$p: --version printed '$v', not 'jr2-preflight $VERSION'"
  (cd "$dir" && "$@" run --plan plan.json --dry-run >"$dir/dry-run.yaml" 2>"$dir/dry-run.err") ||
    fail "$p: --dry-run of the example plan failed: $(tr '\n' ' ' <"$dir/dry-run.err" | cut -c1-300)"
  normalize "$dir/dry-run.yaml" >"$dir/dry-run.norm" || fail "$p: the --dry-run output names no run id"
  if ! cmp -s "$REFERENCE" "$dir/dry-run.norm"; then
    fail "$p: the --dry-run pods differ from the native binary's: $(diff "$REFERENCE" "$dir/dry-run.norm" | head -3 | tr '\n' ' ')"
  fi
  note "$p: --version and --dry-run as the native binary"
}

wine_prefix() {
  WINEPREFIX=$CACHE/wine
  export WINEPREFIX WINEDEBUG=-all
  if [[ ! -f $WINEPREFIX/system.reg ]]; then
    note "making the Wine prefix $WINEPREFIX (once)"
    timed "wineboot" /usr/lib/wine/wine64 wineboot --init >/dev/null 2>&1 || die "wineboot --init failed in $WINEPREFIX"
  fi
}

# --- the checks ---------------------------------------------------------------------------------------------------

# Nothing in the driver's graph links Apple's Security framework (zig has no macOS SDK to link it with), on any target.
for t in aarch64-apple-darwin x86_64-apple-darwin; do
  tree=$(cargo tree --locked -p jr2-preflight -e normal,build --target "$t" --prefix none 2>&1) ||
    die "cargo tree -p jr2-preflight --target $t failed: $(tail -1 <<<"$tree")"
  bad=$(grep -E '^(security-framework|core-foundation|rustls-platform-verifier|rustls-native-certs) ' <<<"$tree" | sort -u | tr '\n' ' ' || true)
  [[ -z $bad ]] || fail "jr2-preflight for $t: its dependencies include $bad(they link Apple's frameworks)"
done

check_main_tarball
for p in $PLATFORMS; do check_tarball "$p"; done

REFERENCE=$WORK/reference.yaml
if [[ $(uname -m) == x86_64 ]] && has linux-x64; then
  native=$WORK/linux-x64/package/bin/jr2-preflight
else
  # Another host: the native binary is the host's own build, made by the tests step.
  native=${CARGO_TARGET_DIR:-$ROOT/target}/debug/jr2-preflight
  [[ -x $native ]] || cargo build -q --locked -p jr2-preflight >&2 || die "cannot build the native driver"
fi
ref_dir=$WORK/native
mkdir -p "$ref_dir"
cp orchestrate/examples/plan.json "$ref_dir/"
(cd "$ref_dir" && "$native" run --plan plan.json --dry-run >"$ref_dir/dry-run.yaml") || fail "$native: --dry-run of the example plan failed"
normalize "$ref_dir/dry-run.yaml" >"$REFERENCE" || fail "$native: the --dry-run output names no run id"

for p in $PLATFORMS; do
  bin=$WORK/$p/package/bin/$(exe_of "$p")
  dir=$WORK/run-$p
  mkdir -p "$dir"
  cp orchestrate/examples/plan.json "$dir/"
  check_paths "$p" "$bin"
  case $p in
    linux-x64)
      check_elf "$p" "$bin" x86-64
      timed "$p runs" check_runs "$p" "$dir" "$bin"
      ;;
    linux-arm64)
      check_elf "$p" "$bin" "ARM aarch64"
      timed "$p runs under qemu-aarch64" check_runs "$p" "$dir" qemu-aarch64 "$bin"
      ;;
    darwin-x64) check_macho "$p" "$bin" x86_64 ;;
    darwin-arm64) check_macho "$p" "$bin" arm64 ;;
    win32-x64)
      check_pe "$p" "$bin" x64
      x86_64-w64-mingw32-gcc -shared -O2 -o "$dir/bcryptprimitives.dll" "$NPM_DIR/wine/bcryptprimitives.c" -ladvapi32 ||
        die "cannot build the ProcessPrng shim with mingw"
      cp "$bin" "$dir/"
      wine_prefix
      timed "$p runs under Wine" check_runs "$p" "$dir" /usr/lib/wine/wine64 "$dir/jr2-preflight.exe"
      ;;
    # Debian's Wine runs x64 only, and no emulator here runs Windows on Arm: format and imports only, as macOS.
    win32-arm64) check_pe "$p" "$bin" arm64 ;;
  esac
done

# --- installed from the tarballs ---------------------------------------------------------------------------------

# jr2 up's side (orchestrate/npm/install-test.sh): the tarballs served by a registry on loopback, installed with
# npm install and npm ci (for this platform, for darwin-arm64 with --os/--cpu, with --omit=optional), a tarball
# install's lockfile and an offline one's repair, and the client run from each project against the fake cluster.
# Only where linux-x64 runs; the platforms not built here are stood in for (install-test.sh says which).
if [[ $(uname -sm) == "Linux x86_64" ]] && has linux-x64; then
  cargo build --quiet --locked -p jr2-probe -p jr2-testkit --bins >&2 || die "cannot build jr2-probe and jr2-fake-cluster"
  platform_tgzs=()
  for p in $PLATFORMS; do platform_tgzs+=("$(tarball "$p-")"); done
  install_start=$(date +%s)
  JR2_TEST_BIN_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/debug" "$NPM_DIR/install-test.sh" "$(main_tarball)" "${platform_tgzs[@]}" ||
    fail "orchestrate/npm/install-test.sh: see above"
  note "install-test.sh: $(($(date +%s) - install_start)) s"
fi

note "checked $PLATFORMS: $(tr '\n' ' ' <<<"$packed")"
note "step done in $(($(date +%s) - step_start)) s"
