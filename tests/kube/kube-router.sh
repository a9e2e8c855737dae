#!/usr/bin/env bash
# tests/kube/kube-router.sh: kube-router's NetworkPolicy firewall for the test cluster (issue 35), built from the Go
# module proxy and cached beside the Kubernetes components.
#
#   tests/kube/kube-router.sh      # build (or find cached) and print the binary's path
#   JR2_INSTALL_ONLY=1 ...         # only the system packages (apt: iptables, ipset)
#   JR2_KUBE_NO_APT=1 ...          # only the Go build (tests/run.sh's `kube` job, beside tests/kube/build.sh)
#
# A script of its own, not a part of tests/kube/build.sh: that script's hash is in its cache's `inputs`, so a change
# there rebuilds every Kubernetes component; this one has a cache of its own.
#
# Recipe (../shared/research/real-kubernetes.md, "NetworkPolicy that is enforced"): v2.10.0 by its module path (the
# path of its command, `.../cmd/kube-router`, answers 403 as a module and stops `go get`); v2.10.0 requires a
# netlink pseudo-version the proxy refuses (403), and v1.3.2-0.20251022194116-03b8f90390d9 stands in, with every name
# kube-router uses. About 4.5 minutes of CPU cold, a no-op when cached. Only the firewall runs (the tests start it
# with --run-firewall=true --run-router=false --run-service-proxy=false, `jr2_testkit::cluster`), which needs
# iptables (nf_tables backend) and ipset from Debian.
set -euo pipefail

KUBE_ROUTER_VERSION=v2.10.0
NETLINK_STANDIN=v1.3.2-0.20251022194116-03b8f90390d9

die() {
  echo "tests/kube/kube-router.sh: error: $*" >&2
  exit 1
}
note() { echo "tests/kube/kube-router.sh: $*" >&2; }

CACHE=${JR2_KUBE_ROUTER_CACHE:-$HOME/.cache/jr2-preflight/kube/kube-router-$KUBE_ROUTER_VERSION}

need_pkgs=()
[[ ${JR2_KUBE_NO_APT:-} == 1 ]] || {
  command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
  command -v ipset >/dev/null 2>&1 || need_pkgs+=(ipset)
}
if ((${#need_pkgs[@]})); then
  note "installing ${need_pkgs[*]} (apt)"
  [[ $(id -u) == 0 ]] || die "missing ${need_pkgs[*]}, and not root to apt-get install them"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}"; } >&2 ||
    die "apt-get install ${need_pkgs[*]} failed (see above)"
fi
[[ ${JR2_INSTALL_ONLY:-} == 1 ]] && exit 0

command -v go >/dev/null 2>&1 || die "Go is needed to build kube-router (go 1.26 or later)"
inputs="kube-router=$KUBE_ROUTER_VERSION netlink=$NETLINK_STANDIN go=$(go env GOVERSION) script=$(sha256sum "$0" | cut -c1-16)"
if [[ -x $CACHE/bin/kube-router && -f $CACHE/inputs && $(cat "$CACHE/inputs") == "$inputs" ]]; then
  note "cached: $CACHE/bin/kube-router ($inputs)"
  echo "$CACHE/bin/kube-router"
  exit 0
fi

export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
mod=$CACHE/src
mkdir -p "$mod" "$CACHE/bin"
[[ -f $mod/go.mod ]] || (cd "$mod" && go mod init jr2.invalid/kube-router-build >/dev/null 2>&1)
note "building kube-router $KUBE_ROUTER_VERSION (a cold build takes about 4.5 minutes of CPU)"
(
  cd "$mod"
  go get "github.com/cloudnativelabs/kube-router/v2@$KUBE_ROUTER_VERSION"
  go mod edit "-replace=github.com/vishvananda/netlink=github.com/vishvananda/netlink@$NETLINK_STANDIN"
  # -mod=mod: the command's package is not a module of its own, so its dependencies are resolved here.
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$CACHE/bin/kube-router" \
    github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
) >&2 || die "the build of kube-router $KUBE_ROUTER_VERSION failed (see above)"
echo "$inputs" >"$CACHE/inputs"
note "built: $CACHE/bin/kube-router ($inputs)"
echo "$CACHE/bin/kube-router"
