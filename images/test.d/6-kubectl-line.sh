# images/test, phase 6: the README's kubectl line, client-side.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

# kubernetes-validate in the peers cache's venv, as orchestrate/tests/pod_schema.rs makes it when missing.
KV_VENV=${JR2_PEERS_CACHE:-$HOME/.cache/jr2-preflight/peers}/kv-venv
if [[ ! -x $KV_VENV/bin/kubernetes-validate ]]; then
  say "installing kubernetes-validate in $KV_VENV"
  rm -rf "$KV_VENV"
  mkdir -p "$(dirname "$KV_VENV")"
  { python3 -m venv "$KV_VENV" && "$KV_VENV/bin/pip" install -q 'kubernetes-validate==1.37.*'; } >&2 ||
    fail "cannot make the kubernetes-validate venv $KV_VENV"
fi

# The restricted Pod Security Standard (baseline included), as orchestrate/tests/pod_security.rs restricted_violations()
# checks it: what a namespace enforcing `restricted` refuses, one line each; none means admitted.
# shellcheck disable=SC2016 # jq's variables
RESTRICTED='
  def either($c; $p; f): if ($c | f) != null then ($c | f) else ($p | f) end; # the container setting, else the pod one
  .spec as $s | ($s.securityContext // {}) as $psc
  | [ (if $s.hostNetwork == true then "hostNetwork" else empty end),
      (if $s.hostPID == true then "hostPID" else empty end),
      (if $s.hostIPC == true then "hostIPC" else empty end),
      (if $psc.runAsUser == 0 then "pod runAsUser 0" else empty end),
      ($psc.sysctls // [] | .[] | select(.name | IN("kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
          "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
          "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
          "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes") | not) | "sysctl \(.name)"),
      ($s.volumes // [] | .[] | select(del(.name) | keys | all(IN("configMap", "csi", "downwardAPI", "emptyDir",
          "ephemeral", "persistentVolumeClaim", "projected", "secret")) | not) | "volume \(.name)"),
      (($s.containers // []) + ($s.initContainers // []) + ($s.ephemeralContainers // []) | .[]
        | .name as $n | (.securityContext // {}) as $sc
        | (if $sc.privileged == true then "\($n): privileged" else empty end),
          (if $sc.allowPrivilegeEscalation != false then "\($n): allowPrivilegeEscalation is not false" else empty end),
          (if either($sc; $psc; .runAsNonRoot) != true then "\($n): runAsNonRoot is not true" else empty end),
          (if $sc.runAsUser == 0 then "\($n): runAsUser 0" else empty end),
          (if either($sc; $psc; .seccompProfile.type) | IN("RuntimeDefault", "Localhost") | not
           then "\($n): seccomp is not RuntimeDefault or Localhost" else empty end),
          (if $sc.capabilities.drop // [] | any(. == "ALL") | not then "\($n): does not drop ALL" else empty end),
          (if $sc.capabilities.add // [] | all(. == "NET_BIND_SERVICE") | not then "\($n): adds a capability" else empty end),
          (if ($sc.procMount // "Default") != "Default" then "\($n): procMount" else empty end),
          (if .ports // [] | any((.hostPort // 0) != 0) then "\($n): hostPort" else empty end),
          (if $sc.seLinuxOptions.user != null or $sc.seLinuxOptions.role != null then "\($n): SELinux user or role" else empty end),
          (if either($sc; $psc; .appArmorProfile.type) == "Unconfined" then "\($n): AppArmor Unconfined" else empty end),
          (if either($sc; $psc; .windowsOptions.hostProcess) == true then "\($n): hostProcess" else empty end))
    ]'

# The pod of README $1's kubectl line, as kubectl generates it: with --dry-run=client -o yaml in place of its --rm -i
# (which a dry run refuses), everything else as written, kubectl talking to the fake API server in the test's
# namespace (an override needs discovery to map its kind; nothing is created). Written to $TMP/pod.yaml.
kubectl_pod() {
  local words out=() w rm='' i=''
  readme_command "$1" kubectl >"$TMP/kubectl.words" || fail "the README's kubectl line: none to read"
  mapfile -d '' -t words <"$TMP/kubectl.words"
  for w in "${words[@]:1}"; do
    case $w in
      --rm) rm=1 ;;
      -i) i=1 ;;
      *) out+=("$w") ;;
    esac
  done
  [[ -n $rm && -n $i ]] || fail "the README's kubectl line: no --rm -i (a one-off pod, attached)"
  ip netns exec "$NS" env HOME="$TMP/kube-home" KUBECONFIG="$TMP/kube/kubeconfig" \
    kubectl "${out[@]}" --dry-run=client -o yaml >"$TMP/pod.yaml" 2>"$TMP/kubectl.err" ||
    fail "the README's kubectl line, dry run: $(cat "$TMP/kubectl.err")"
}

# The pod YAML $1, checked: valid for Kubernetes 1.35 (--strict: no field 1.35 does not have), admitted as
# restricted, as restricted as the docker line (its uid, gid, memory), the key from a Secret by the name
# --api-key-env reads and nowhere else, the docker line's image and args (the README's two lines check the same
# thing). kubectl drops an override's field it does not know: the jq checks catch what is lost.
check_pod() {
  local kv kv_rc=0 json=${1%.yaml}.json
  kv=$("$KV_VENV/bin/kubernetes-validate" --strict -k 1.35.0 "$1" 2>&1) || kv_rc=$?
  [[ $kv_rc == 0 && $kv == *"INFO $1 passed"* && $kv != *ERROR* ]] ||
    fail "the README's kubectl line: kubernetes-validate --strict -k 1.35.0: $kv"
  "$KV_VENV/bin/python" -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' \
    "$1" >"$json" || fail "the README's kubectl line: its YAML does not read"
  jq -e "$RESTRICTED | length == 0" "$json" >/dev/null ||
    fail "the README's kubectl line: the restricted level refuses it: $(jq -c "$RESTRICTED" "$json")"
  jq -e --argjson uid "$D_UID" --argjson gid "$D_GID" --arg mem "$((D_MEM / 1048576))Mi" '
      .kind == "Pod" and .spec.restartPolicy == "Never" and .spec.automountServiceAccountToken == false
      and (.spec.containers | length) == 1
      and .spec.containers[0].securityContext == {runAsNonRoot: true, runAsUser: $uid, runAsGroup: $gid,
            readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]},
            seccompProfile: {type: "RuntimeDefault"}}
      and .spec.containers[0].resources.limits.memory == $mem' "$json" >/dev/null ||
    fail "the README's kubectl line: not the check pod's restrictions: $(jq -c '.spec | del(.containers[].args)' "$json")"
  jq -e --arg key "$D_KEY" '.spec.containers[0] | (.envFrom // []) == []
      and ([.env // [] | .[] | select(.name == $key)] | length == 1 and (.[0] | has("value") | not)
           and (.[0].valueFrom.secretKeyRef | (.name | length > 0) and (.key | length > 0)))' "$json" >/dev/null ||
    fail "the README's kubectl line: $D_KEY is not from a secretKeyRef alone: $(jq -c '.spec.containers[0] | {env, envFrom}' "$json")"
  jq -e --arg image "ghcr.io/jr2/jr2-probe:$VERSION" --argjson args "$(json_words "${D_ARGS[@]}")" \
    '.spec.containers[0] | .image == $image and .args == $args' "$json" >/dev/null ||
    fail "the README's kubectl line: not the docker line's image and args: $(jq -c '.spec.containers[0] | {image, args}' "$json")"
}
kubectl_line() { kubectl_pod "$1" && check_pod "$TMP/pod.yaml"; }

phase "the README's kubectl line, client-side, against Kubernetes 1.35"
mkdir -p "$TMP/kube" "$TMP/kube-home"
# The fake API server on the namespace's loopback, for kubectl's discovery only: a dry run creates nothing. It serves
# until its stdin closes.
mkfifo "$TMP/kube.in"
ip netns exec "$NS" "$CARGO_TARGET_DIR/debug/jr2-fake-cluster" --probe "$TMP/amd64/jr2-probe" --dir "$TMP/kube" \
  <"$TMP/kube.in" >"$TMP/kube.out" 2>&1 &
CLUSTER_PID=$!
# shellcheck disable=SC2034 # held open, never written: the fake serves until its stdin closes
exec {KUBE_IN}>"$TMP/kube.in"
for _ in $(seq 100); do
  [[ -s $TMP/kube/kubeconfig ]] && grep -q '"server"' "$TMP/kube.out" && break
  kill -0 "$CLUSTER_PID" 2>/dev/null || fail "the fake API server died: $(cat "$TMP/kube.out")"
  sleep 0.1
done
grep -q '"server":"http://127.0.0.1:' "$TMP/kube.out" || fail "the fake API server did not start: $(cat "$TMP/kube.out")"
say "kubectl $(kubectl version --client -o json 2>/dev/null | jq -r .clientVersion.gitVersion) ($(command -v kubectl)); fake API server $(grep '"server"' "$TMP/kube.out" | jq -r .server)"
start_ms=$(date +%s%3N)
kubectl_line "$README"
cp "$TMP/pod.yaml" "$TMP/pod-readme.yaml" # for section 7
pod=$(jq -c '.spec.containers[0] | {limits: .resources.limits, secretKeyRef: .env[0].valueFrom.secretKeyRef}' "$TMP/pod.json")
say "the README's kubectl line: valid for 1.35 (--strict), restricted, uid $D_UID gid $D_GID, $pod, the docker line's image and args ($(($(date +%s%3N) - start_ms)) ms)"
