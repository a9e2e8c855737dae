#!/usr/bin/env bash
# tests/kube/images.sh: the images the real-cluster tests import into the node (never pulled), as docker archives.
#
#   tests/kube/images.sh    # prints one archive path a line
#
# - the probe's image, as images/build makes it (linux/amd64 only; its cargo build is a no-op when fresh);
# - the Custodian stand-in (tests/custodian: a static binary with no dependencies), FROM scratch, non-root, tagged
#   registry.jr2.test/custodian:1.
#
# Builds go to $CARGO_TARGET_DIR (default target/); the archives to $CARGO_TARGET_DIR/kube-images.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
die() {
  echo "tests/kube/images.sh: error: $*" >&2
  exit 1
}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TARGET_DIR/kube-images
mkdir -p "$OUT"
arch=$(uname -m)
[[ $arch == x86_64 ]] || die "the test cluster runs linux/amd64 images only (this machine is $arch)"

# The probe, as images/build makes it.
JR2_IMAGE_ARCHES=amd64 JR2_IMAGE_OUT="$OUT" images/build >&2 || die "images/build failed (see above)"
probe=$(ls -t "$OUT"/jr2-probe-*-amd64.docker.tar 2>/dev/null | head -1)
[[ -n $probe ]] || die "images/build left no docker archive in $OUT"

# The Custodian stand-in.
triple=x86_64-unknown-linux-musl
cargo build --release --locked -p jr2-test-custodian --target "$triple" >&2 || die "cargo build of jr2-test-custodian failed"
bin=$TARGET_DIR/$triple/release/jr2-test-custodian
custodian=$OUT/custodian.docker.tar
if [[ ! -f $custodian || $bin -nt $custodian ]]; then
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  umoci init --layout "$work/oci" >/dev/null
  umoci new --image "$work/oci:1" >/dev/null
  umoci unpack --rootless --image "$work/oci:1" "$work/bundle" >/dev/null
  install -m 0755 "$bin" "$work/bundle/rootfs/jr2-test-custodian"
  umoci repack --image "$work/oci:1" "$work/bundle" >/dev/null
  umoci config --image "$work/oci:1" --config.entrypoint /jr2-test-custodian --config.user 65532:65532 \
    --architecture amd64 --os linux >/dev/null
  rm -f "$custodian"
  skopeo copy --quiet "oci:$work/oci:1" "docker-archive:$custodian:registry.jr2.test/custodian:1" >&2
fi
echo "$probe"
echo "$custodian"
