# tools/shared.sh: what the build, packaging and image scripts do alike, written once. Sourced, not run (images/build,
# images/test, orchestrate/npm/pack.sh, orchestrate/npm/test.sh): a fresh machine has only the toolchains, so each
# installs what it lacks the same way; and each checks its binaries hold no path of the machine that built them.
#
# The sourcing script defines `die MESSAGE` (prints its error and exits) and `note MESSAGE` (prints a progress line);
# the lines then carry its own name. Debian 12's package names throughout.

# need COMMAND PACKAGE: PACKAGE goes on the list to install when COMMAND is not on the PATH.
need_pkgs=()
need() {
  command -v "$1" >/dev/null 2>&1 || need_pkgs+=("$2")
}

# need_file PATH PACKAGE: PACKAGE goes on the list when PATH does not exist (a header, a binary off the PATH).
need_file() {
  [[ -e $1 ]] || need_pkgs+=("$2")
}

# install_needed: apt-get installs the list (as root, else with sudo -n), without recommends. A machine without
# apt-get, or without root or sudo, is told what to install by hand.
install_needed() {
  ((${#need_pkgs[@]})) || return 0
  note "installing ${need_pkgs[*]} (apt)"
  local sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "missing ${need_pkgs[*]}, and not root (no sudo) to apt-get install them"
    sudo=(sudo -n)
  fi
  command -v apt-get >/dev/null 2>&1 || die "missing ${need_pkgs[*]}, and no apt-get to install them (Debian 12 names)"
  { "${sudo[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}"; } >&2 ||
    die "apt-get install ${need_pkgs[*]} failed (see above)"
  need_pkgs=()
}

# add_rustup_targets TRIPLE...: each target the toolchain lacks, added by rustup (none: the toolchain is assumed to
# have them, as a distribution's Rust may).
add_rustup_targets() {
  command -v cargo >/dev/null 2>&1 || die "cargo is not installed (https://rustup.rs)"
  if ! command -v rustup >/dev/null 2>&1; then
    note "no rustup: assuming the toolchain has $*"
    return 0
  fi
  local installed t
  installed=$(rustup target list --installed)
  for t in "$@"; do
    if ! grep -qx "$t" <<<"$installed"; then
      note "adding the rustup target $t"
      rustup target add "$t" >&2 ||
        die "cannot add the rustup target $t (is static.rust-lang.org reachable?); add it by hand: rustup target add $t"
    fi
  done
}

# build_path_in BINARY: the first path of the machine that built BINARY found in it (the checkout's: cargo names a
# workspace's sources by relative paths; cargo's home's and the target dir's: the builds remap both), and the string
# holding it. Status 1, nothing printed, when there is none: a user's binary should not show where CI keeps its caches.
build_path_in() {
  local path
  for path in "$ROOT/" "${CARGO_HOME:-$HOME/.cargo}/" "$(cd "${CARGO_TARGET_DIR:-$ROOT/target}" && pwd)/"; do
    if grep -qaF -- "$path" "$1"; then
      echo "$path: $(strings -n 8 "$1" | grep -F -- "$path" | head -1 | cut -c1-200)"
      return 0
    fi
  done
  return 1
}
