#!/usr/bin/env bash
# The provider preflight as `jr2 up` runs it, on a local cluster: a plan of one placement (a Harness pod spec with its
# Custodian as a native sidecar) and four models of the fake provider, run by jr2-preflight as a least-privilege user.
# The lines show the check pod pending, each model's result, and then that no check pod is left.
#
# The cluster is the real one of the tests (tests/kube/: etcd, the API server, the controller manager, the scheduler,
# containerd and the kubelet, in a network namespace of its own) when it is built (tests/kube/build.sh, cached under
# ~/.cache/jr2-preflight/kube) and this runs as root; else the testkit's fake API server, whose kubelet stand-in runs
# the probe as a process. JR2_DEMO_FAKE_CLUSTER=1 picks the fake.
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${CARGO_TARGET_DIR:-target}
cargo build -q -p jr2-preflight -p jr2-testkit -p jr2-probe
dbg=$target/debug
kube=$HOME/.cache/jr2-preflight/kube/v1.35.4
work=$(mktemp -d)
cleanup=()
trap 'for c in "${cleanup[@]}"; do eval "$c" || true; done; rm -rf "$work"' EXIT

# plan BASE_URL PROBE_IMAGE: the plan, on stdout.
plan() {
  python3 - "$1" "$2" <<'PY'
import json, sys
base, image = sys.argv[1], sys.argv[2]
spec = {
  "automountServiceAccountToken": False,
  "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}, "fsGroup": 2000},
  "containers": [
    {"name": "harness", "image": "registry.jr2.test/harness:1", "env": [
      {"name": "JR2_PROVIDER_API_KEY", "value": "jr2-held-JR2_PROVIDER_API_KEY"},
      {"name": "HTTP_PROXY", "value": "http://127.0.0.1:15001"},
      {"name": "HTTPS_PROXY", "value": "http://127.0.0.1:15001"},
      {"name": "NO_PROXY", "value": "localhost,127.0.0.1,::1"},
      {"name": "NODE_USE_ENV_PROXY", "value": "1"}]},
    {"name": "custodian", "image": "registry.jr2.test/custodian:1", "imagePullPolicy": "IfNotPresent",
     "args": ["--values", "/etc/jr2/custodian/values"],
     "readinessProbe": {"httpGet": {"path": "/healthz", "port": 15021}, "periodSeconds": 1},
     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
     "securityContext": {"runAsNonRoot": True, "readOnlyRootFilesystem": True, "allowPrivilegeEscalation": False,
                         "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}},
     "volumeMounts": [{"name": "custodian-values", "mountPath": "/etc/jr2/custodian/values", "readOnly": True}]}],
  "volumes": [{"name": "custodian-values", "projected": {"defaultMode": 288, "sources": [
    {"secret": {"name": "jr2-held-secrets", "items": [{"key": "JR2_PROVIDER_API_KEY", "path": "JR2_PROVIDER_API_KEY"}]}}]}}],
}
models = [{"model": f"vllm/{m}", "placement": "harness", "source": "custom", "baseUrl": base,
           "api": "openai-completions", "keyEnv": "JR2_PROVIDER_API_KEY", "keyHeld": True}
          for m in ["auth", "ok", "text", "missing"]]
print(json.dumps({"schema": "jr2.dev/provider-preflight-plan/v1", "namespace": "demo", "instance": "demo",
  "probeImage": image, "deadlineSeconds": 120, "timeoutSeconds": 30,
  "placements": [{"name": "harness", "harnessContainer": "harness", "custodianContainer": "custodian", "podSpec": spec}],
  "models": models}, indent=2))
PY
}

if [[ -z ${JR2_DEMO_FAKE_CLUSTER:-} && $(id -u) == 0 && -f $kube/inputs ]]; then
  echo "== the provider preflight on a real one-node Kubernetes (tests/kube)" >&2
  mapfile -t images < <(tests/kube/images.sh "$kube" 2>/dev/null)
  image_args=()
  for i in "${images[@]}"; do image_args+=(--image "$i"); done
  "$dbg/jr2-kube-cluster" up --dir "$work/cluster" --bin "$kube/bin" "${image_args[@]}" --until-signal \
    >"$work/cluster.out" 2>"$work/cluster.err" &
  sup=$!
  cleanup+=("kill $sup 2>/dev/null; wait $sup 2>/dev/null")
  deadline=$((SECONDS + 180))
  until grep -qE '^(ready|failed)' "$work/cluster.out" 2>/dev/null; do
    [[ $SECONDS -lt $deadline ]] || { echo "demo: the cluster did not start in 180 s" >&2; exit 1; }
    sleep 0.2
  done
  grep -q '^ready' "$work/cluster.out" || { cat "$work/cluster.err" >&2; exit 1; }
  grep 'ready in' "$work/cluster.err" >&2 || true
  # shellcheck disable=SC1091
  . "$work/cluster/cluster.env"
  in_ns() { nsenter --net="$JR2_KUBE_NETNS_PATH" -- "$@"; }
  admin() { in_ns "$JR2_KUBE_BIN/kubectl" --kubeconfig "$JR2_KUBE_ADMIN" "$@"; }
  admin create namespace demo >/dev/null
  admin label namespace demo pod-security.kubernetes.io/enforce=restricted >/dev/null
  "$dbg/jr2-preflight" rbac -n demo --group jr2-preflight | admin apply -f - >/dev/null
  printf '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"jr2-held-secrets","namespace":"demo"},"stringData":{"JR2_PROVIDER_API_KEY":"sk-fake-good-key-0123456789"}}' |
    admin apply -f - >/dev/null
  until admin -n demo get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
  nsenter --net="$JR2_KUBE_NETNS_PATH" -- "$dbg/jr2-fake-provider" --bind "$JR2_KUBE_NODE_IP:0" >"$work/provider.out" &
  cleanup+=("kill $! 2>/dev/null")
  until grep -q listening "$work/provider.out" 2>/dev/null; do sleep 0.1; done
  base=$(sed -n 's/^listening on //p' "$work/provider.out")
  plan "$base" "ghcr.io/jr2/jr2-probe:$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)" >"$work/plan.json"
  echo "-- jr2-preflight run (as a user bound by the Role jr2-preflight rbac prints)" >&2
  set +e
  in_ns "$dbg/jr2-preflight" run --plan "$work/plan.json" --kubeconfig "$JR2_KUBE_USER"
  echo "exit code: $? (1: a model failed)" >&2
  set -e
  echo "-- the check pods left in namespace demo:" >&2
  admin -n demo get pods -l app.kubernetes.io/managed-by=jr2-preflight >&2
else
  echo "== the provider preflight on the testkit's fake cluster (tests/kube is not built here, or not root)" >&2
  coproc FAKE { "$dbg/jr2-fake-cluster" --probe "$dbg/jr2-probe" --dir "$work/fake"; }
  cleanup+=("exec ${FAKE[1]}>&-")
  read -r line <&"${FAKE[0]}"
  kubeconfig=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["kubeconfig"])' "$line")
  base=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["providerBaseUrl"])' "$line")
  plan "$base" "ghcr.io/jr2/jr2-probe:0.1.0" >"$work/plan.json"
  set +e
  "$dbg/jr2-preflight" run --plan "$work/plan.json" --kubeconfig "$kubeconfig"
  echo "exit code: $? (1: a model failed)" >&2
  set -e
fi
