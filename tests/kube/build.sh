#!/usr/bin/env bash
# tests/kube/build.sh: the one-node Kubernetes the driver's end-to-end tests run on, built from the Go module proxy.
#
#   tests/kube/build.sh            # build (or find cached) and print the cache folder (bin/ holds the binaries)
#   JR2_INSTALL_ONLY=1 ...         # only the system packages (apt)
#   JR2_KUBE_NO_APT=1 ...          # only the Go builds (tests/run.sh runs them beside other steps, which own apt)
#
# Nothing of Kubernetes is committed: a small Go module of ours under the cache requires k8s.io/kubernetes at
# $KUBE_VERSION, with each of its `./staging/src/k8s.io/X` replace lines pointed at the published k8s.io/X module,
# and builds the five components the way hack/lib/golang.sh does (version stamped with -ldflags, stripped). etcd and
# crictl come from modules of their own (their dependencies do not agree with Kubernetes'). The pause image is the
# module's own build/pause/linux/pause.c, compiled statically (tests/kube/images.sh wraps it as
# registry.k8s.io/pause:3.10).
#
# The node's runtime is Debian's: containerd 1.6, runc 1.1 (built with seccomp, which RuntimeDefault pods need) and
# the CNI plugins (bridge, host-local, loopback).
#
# Cache: ~/.cache/jr2-preflight/kube/<version>/ holds bin/ and `inputs` (the versions and this script's hash). A cache whose `inputs` match is used as it is; any other is rebuilt (Go's own build cache makes a rebuild that
# changes only flags a link).
set -euo pipefail

KUBE_VERSION=v1.35.4
STAGING_VERSION=v0.35.4
ETCD_VERSION=v3.6.16
CRICTL_VERSION=v1.37.0
PAUSE_TAG=3.10

die() {
  echo "tests/kube/build.sh: error: $*" >&2
  exit 1
}
note() { echo "tests/kube/build.sh: $*" >&2; }

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${JR2_KUBE_CACHE:-$HOME/.cache/jr2-preflight/kube/$KUBE_VERSION}
BIN=$CACHE/bin

# --- system packages --------------------------------------------------------------------------------------------

need_pkgs=()
[[ ${JR2_KUBE_NO_APT:-} == 1 ]] || {
command -v containerd >/dev/null 2>&1 || need_pkgs+=(containerd)
command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
[[ -x /usr/lib/cni/bridge || -x /opt/cni/bin/bridge ]] || need_pkgs+=(containernetworking-plugins)
command -v nsenter >/dev/null 2>&1 || need_pkgs+=(util-linux)
command -v ip >/dev/null 2>&1 || need_pkgs+=(iproute2)
command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
command -v umoci >/dev/null 2>&1 || need_pkgs+=(umoci)
command -v skopeo >/dev/null 2>&1 || need_pkgs+=(skopeo)
[[ -e /usr/lib/x86_64-linux-gnu/libc.a || -e /usr/lib/aarch64-linux-gnu/libc.a ]] || need_pkgs+=(libc6-dev)
}
if ((${#need_pkgs[@]})); then
  note "installing ${need_pkgs[*]} (apt)"
  [[ $(id -u) == 0 ]] || die "missing ${need_pkgs[*]}, and not root to apt-get install them"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}"; } >&2 ||
    die "apt-get install ${need_pkgs[*]} failed (see above)"
fi
# Debian's containerd package starts its own daemon on /run/containerd; the tests run their own, in their own
# namespace, with their own root. The system one is not needed and would only hold a core's worth of memory.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet containerd 2>/dev/null; then
  systemctl stop containerd >/dev/null 2>&1 || true
fi
[[ ${JR2_INSTALL_ONLY:-} == 1 ]] && exit 0

command -v go >/dev/null 2>&1 || die "Go is needed to build the Kubernetes components (go 1.26 or later)"

# --- the cache --------------------------------------------------------------------------------------------------

inputs="kube=$KUBE_VERSION staging=$STAGING_VERSION etcd=$ETCD_VERSION crictl=$CRICTL_VERSION pause=$PAUSE_TAG go=$(go env GOVERSION) script=$(sha256sum "$0" | cut -c1-16)"
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd crictl pause)
cached=1
for c in "${components[@]}"; do [[ -x $BIN/$c ]] || cached=0; done
[[ -f $CACHE/inputs && $(cat "$CACHE/inputs") == "$inputs" ]] || cached=0
if [[ $cached == 1 ]]; then
  note "cached: $BIN ($inputs)"
  echo "$CACHE"
  exit 0
fi

export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
mkdir -p "$BIN" "$CACHE/src"

# --- Kubernetes -------------------------------------------------------------------------------------------------

kmod=$CACHE/src/kubernetes
mkdir -p "$kmod"
if [[ ! -f $kmod/go.mod ]]; then
  (cd "$kmod" && go mod init jr2.invalid/kube-build >/dev/null 2>&1)
fi
kdir=$(cd "$kmod" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $kdir && -f $kdir/go.mod ]] || die "go mod download k8s.io/kubernetes@$KUBE_VERSION gave no module directory"
replaces=()
while read -r mod; do
  replaces+=("-replace=$mod=$mod@$STAGING_VERSION")
done < <(sed -n 's#^[[:space:]]*\(k8s\.io/[A-Za-z0-9._-]*\) => \./staging/src/k8s\.io/.*#\1#p' "$kdir/go.mod")
((${#replaces[@]} > 10)) || die "k8s.io/kubernetes@$KUBE_VERSION's go.mod has no staging replace lines (found ${#replaces[@]})"
(cd "$kmod" && go mod edit "${replaces[@]}" "-require=k8s.io/kubernetes@$KUBE_VERSION")

cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
pkgs=()
for c in "${cmds[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
note "building ${cmds[*]} $KUBE_VERSION (a cold build takes about 17 minutes of CPU)"
(cd "$kmod" && go get "${pkgs[@]/%/@$KUBE_VERSION}") >&2
vpkg=k8s.io/component-base/version
minor=${KUBE_VERSION#v1.}
minor=${minor%%.*}
ldflags="-s -w -X $vpkg.gitVersion=$KUBE_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=$minor -X $vpkg.gitTreeState=clean"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
(cd "$kmod" && go build -trimpath -ldflags "$ldflags" -o "$BIN/" "${pkgs[@]}") >&2

# --- etcd and crictl ---------------------------------------------------------------------------------------------

emod=$CACHE/src/etcd
mkdir -p "$emod"
[[ -f $emod/go.mod ]] || (cd "$emod" && go mod init jr2.invalid/etcd-build >/dev/null 2>&1)
(cd "$emod" && go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3) >&2
GOBIN=$BIN go install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL_VERSION" >&2

# --- the pause binary -------------------------------------------------------------------------------------------

gcc -Os -static -DVERSION="v$PAUSE_TAG-jr2" -o "$BIN/pause" "$kdir/build/pause/linux/pause.c" >&2
strip "$BIN/pause"

echo "$inputs" >"$CACHE/inputs"
note "built: $BIN ($inputs)"
echo "$CACHE"
