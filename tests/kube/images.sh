#!/usr/bin/env bash
# tests/kube/images.sh: the images the real-cluster tests import into the node (never pulled), as docker archives.
#
#   tests/kube/images.sh KUBE_CACHE    # prints one archive path a line (KUBE_CACHE: what tests/kube/build.sh printed)
#
# - the pause image: tests/kube/build.sh's static pause binary, FROM scratch, tagged registry.k8s.io/pause:3.10;
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
KUBE_CACHE=${1:?usage: tests/kube/images.sh KUBE_CACHE}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TARGET_DIR/kube-images
mkdir -p "$OUT"
arch=$(uname -m)
[[ $arch == x86_64 ]] || die "the test cluster runs linux/amd64 images only (this machine is $arch)"

# The probe, as images/build makes it.
JR2_IMAGE_ARCHES=amd64 JR2_IMAGE_OUT="$OUT" images/build >&2 || die "images/build failed (see above)"
probe=$(ls -t "$OUT"/jr2-probe-*-amd64.docker.tar 2>/dev/null | head -1)
[[ -n $probe ]] || die "images/build left no docker archive in $OUT"

# One binary FROM scratch as an image: image ARCHIVE BINARY NAME:TAG USER.
image() {
  local archive=$1 bin=$2 ref=$3 user=$4 work
  [[ -f $archive && ! $bin -nt $archive ]] && return 0
  work=$(mktemp -d)
  umoci init --layout "$work/oci" >/dev/null
  umoci new --image "$work/oci:1" >/dev/null
  umoci unpack --rootless --image "$work/oci:1" "$work/bundle" >/dev/null
  install -m 0755 "$bin" "$work/bundle/rootfs/$(basename "$bin")"
  umoci repack --image "$work/oci:1" "$work/bundle" >/dev/null
  umoci config --image "$work/oci:1" --config.entrypoint "/$(basename "$bin")" --config.user "$user" \
    --architecture amd64 --os linux >/dev/null
  rm -f "$archive"
  skopeo copy --quiet "oci:$work/oci:1" "docker-archive:$archive:$ref" >&2
  rm -rf "$work"
}

pause=$OUT/pause.docker.tar
image "$pause" "$KUBE_CACHE/bin/pause" registry.k8s.io/pause:3.10 65535:65535

# The Custodian stand-in.
triple=x86_64-unknown-linux-musl
cargo build --release --locked -p jr2-test-custodian --target "$triple" >&2 || die "cargo build of jr2-test-custodian failed"
bin=$TARGET_DIR/$triple/release/jr2-test-custodian
custodian=$OUT/custodian.docker.tar
image "$custodian" "$bin" registry.jr2.test/custodian:1 65532:65532
echo "$pause"
echo "$probe"
echo "$custodian"
