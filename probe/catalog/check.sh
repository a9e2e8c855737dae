#!/usr/bin/env bash
# Checks that the committed catalog (pi-ai-0.82.1.json) is what generate.mjs makes of the pinned pi-ai package.
#
#   probe/catalog/check.sh           diff the committed file with a fresh generation; exit 1 on a difference
#   probe/catalog/check.sh --write   rewrite the committed file instead (what regenerate.sh runs)
#
# The package comes from `npm pack`, cached under ~/.cache/jr2-preflight/npm (reused when its SHA-512 is the pinned
# one, the registry's dist.integrity for this version). Needs node and npm; the catalog modules load on Node >= 20.
set -euo pipefail

PACKAGE="@earendil-works/pi-ai"
VERSION="0.82.1"
TARBALL="earendil-works-pi-ai-$VERSION.tgz"
# sha512 of the tarball = dist.integrity "sha512-3WFYRhEp3lQB…E7jI/A==" from `npm view $PACKAGE@$VERSION`.
SHA512="dd6158461129de5401df8e381213cc05c33bcd2684504dde2601ce47bb38d3cd4d2ea6f0fc5b168a520a5974ae6b41afdec46bee6f71322751de93c313b8c8fc"

HERE="$(cd "$(dirname "$0")" && pwd)"
COMMITTED="$HERE/pi-ai-$VERSION.json"
CACHE="${JR2_NPM_CACHE:-$HOME/.cache/jr2-preflight/npm}"

log() { printf 'catalog: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

write=false
case "${1:-}" in
  "") ;;
  --write) write=true ;;
  *) die "usage: $0 [--write]" ;;
esac

for tool in node npm tar sha512sum diff; do
  command -v "$tool" >/dev/null || die "needs '$tool' on PATH"
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

sha_ok() { [ -f "$1" ] && [ "$(sha512sum "$1" | cut -d' ' -f1)" = "$SHA512" ]; }

mkdir -p "$CACHE"
if sha_ok "$CACHE/$TARBALL"; then
  log "using the cached $CACHE/$TARBALL"
else
  log "fetching $PACKAGE@$VERSION with npm pack"
  mkdir "$work/pack"
  (cd "$work/pack" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null) ||
    die "npm pack $PACKAGE@$VERSION failed"
  sha_ok "$work/pack/$TARBALL" ||
    die "$TARBALL from npm does not have the pinned SHA-512: refusing to check against it"
  mv "$work/pack/$TARBALL" "$CACHE/$TARBALL.part"
  mv "$CACHE/$TARBALL.part" "$CACHE/$TARBALL"
fi

tar xzf "$CACHE/$TARBALL" -C "$work" # unpacks to package/
node "$HERE/generate.mjs" "$work/package" >"$work/generated.json" ||
  die "generate.mjs failed on $PACKAGE@$VERSION"

if $write; then
  cp "$work/generated.json" "$COMMITTED"
  log "wrote $COMMITTED"
  exit 0
fi

[ -f "$COMMITTED" ] || die "$COMMITTED is missing: run probe/catalog/regenerate.sh"
if ! diff -u --label "probe/catalog/pi-ai-$VERSION.json (committed)" --label "generated from $PACKAGE@$VERSION" \
  "$COMMITTED" "$work/generated.json" >"$work/diff"; then
  head -n 60 "$work/diff" >&2
  n=$(grep -c '^[-+][^-+]' "$work/diff" || true)
  die "FAIL: the committed catalog differs from $PACKAGE@$VERSION ($n changed lines, first shown above); run probe/catalog/regenerate.sh if the change to generate.mjs is meant"
fi
log "ok: the committed catalog matches $PACKAGE@$VERSION"
