# images/test, phase 1: build, twice.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

# What the binary is built from. Two builds are compared only if these did not change in between (in a shared
# working tree, someone may edit the probe while this runs).
sources_hash() {
  git ls-files -co --exclude-standard -- Cargo.toml Cargo.lock probe/Cargo.toml ':(glob)probe/src/**/*.rs' \
    ':(glob)probe/catalog/*.json' |
    LC_ALL=C sort | while IFS= read -r f; do if [[ -f $f ]]; then printf '%s\0' "$f"; fi; done |
    xargs -0 sha256sum | sha256sum | cut -c1-64
}

phase "images/build"
sources_before=$(sources_hash)
images/build | tee "$TMP/build.out"
VERSION=$(sed -n 's/^linux\/amd64  .*jr2-probe-\(.*\)-amd64\.oci\.tar$/\1/p' "$TMP/build.out")
[[ -n $VERSION ]] || fail "images/build printed no amd64 oci-archive path"
OUT=$ROOT/target/images
[[ -n ${JR2_IMAGE_OUT:-} ]] && OUT=$JR2_IMAGE_OUT
ARCHES=(amd64 arm64)

phase "images/build again (other folder, umask 077, TZ Pacific/Chatham): reproducible?"
(umask 077 && TZ=Pacific/Chatham JR2_IMAGE_OUT="$TMP/again" images/build >"$TMP/build2.out")
[[ $(sources_hash) == "$sources_before" ]] ||
  fail "the probe's sources (Cargo.toml, Cargo.lock, probe/src/**/*.rs, probe/catalog/*.json) changed while the two builds ran, so they cannot be compared: run images/test again"

# The digests of an oci-archive: "<manifest> <config> <layer>".
digests() {
  tar -xOf "$1" index.json >"$TMP/index.json"
  local manifest
  manifest=$(jq -r '.manifests[0].digest' "$TMP/index.json")
  tar -xOf "$1" "blobs/sha256/${manifest#sha256:}" | jq -r --arg m "$manifest" '"\($m) \(.config.digest) \(.layers[0].digest)"'
}
for arch in "${ARCHES[@]}"; do
  a=$OUT/jr2-probe-$VERSION-$arch.oci.tar
  b=$TMP/again/jr2-probe-$VERSION-$arch.oci.tar
  da=$(digests "$a")
  db=$(digests "$b")
  [[ $da == "$db" ]] || fail "$arch: two builds of the same sources differ: $da vs $db"
  cmp -s "$a" "$b" || fail "$arch: the two oci-archives differ in bytes though their digests are equal"
  read -r m c l <<<"$da"
  say "$arch: reproducible: layer $l, config $c, manifest $m, oci-archive sha256 $(sha256sum "$a" | cut -c1-64)"
  if cmp -s "$OUT/jr2-probe-$VERSION-$arch.docker.tar" "$TMP/again/jr2-probe-$VERSION-$arch.docker.tar"; then
    say "$arch: the docker-archives are the same bytes too"
  else
    say "$arch: note: the docker-archives differ in bytes (skopeo's tar); their layer is checked below"
  fi
done
