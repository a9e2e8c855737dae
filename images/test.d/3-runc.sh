# images/test, phase 3: the amd64 image under runc.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

phase "fake provider in network namespace $NS"
cargo build --quiet --locked -p jr2-testkit --bin jr2-fake-provider --bin jr2-fake-cluster
FAKE=$CARGO_TARGET_DIR/debug/jr2-fake-provider
ip netns add "$NS"
ip -n "$NS" link set lo up
PORT=18080
ip netns exec "$NS" "$FAKE" "$PORT" >"$TMP/fake.out" 2>&1 &
FAKE_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$TMP/fake.out" && break
  kill -0 "$FAKE_PID" 2>/dev/null || fail "the fake provider died: $(cat "$TMP/fake.out")"
  sleep 0.1
done
grep -qx "listening on http://127.0.0.1:$PORT/v1" "$TMP/fake.out" || fail "the fake provider did not start: $(cat "$TMP/fake.out")"

# The probe reaches the fake on the namespace's loopback: by IP, since a scratch image has no /etc/hosts for musl.
SPEC=$(jq -cn --arg url "http://127.0.0.1:$PORT/v1" \
  '{schema: "jr2.dev/provider-preflight-run/v1", timeoutSeconds: 20, models: [{model: "vllm/ok", source: "custom", baseUrl: $url}]}')

# Both outputs of a run: the JSON lines on stdout end with the summary event; the termination message is compact.
check_run() {
  local what=$1 stdout=$2 tlog=$3
  [[ -s $tlog ]] || fail "$what: no termination message written"
  jq -e '.schema == "jr2.dev/provider-preflight-summary/v1" and .ok == true and .n == 1
         and .models[0].m == "vllm/ok" and .models[0].o == "ok" and .models[0].c == "PROVIDER_OK"' "$tlog" >/dev/null ||
    fail "$what: the termination message does not say ok: $(cat "$tlog")"
  tail -n 1 "$stdout" | jq -e '.event == "summary" and .verdict.ok == true and .verdict.models[0].outcome == "ok"
         and .verdict.models[0].toolName != null' >/dev/null ||
    fail "$what: the last JSON line is not an ok summary: $(tail -n 1 "$stdout")"
  say "$what: ok; termination message: $(cat "$tlog")"
}

phase "amd64 image under runc"
BUNDLE=$TMP/bundle
umoci unpack --image "$TMP/oci-amd64:$VERSION" "$BUNDLE" >/dev/null
[[ -x $BUNDLE/rootfs/jr2-probe && ! -e $BUNDLE/rootfs/bin/sh ]] || fail "the unpacked rootfs is not just /jr2-probe"
cp "$BUNDLE/config.json" "$TMP/config.umoci.json" # section 5 starts from it again
TLOG=$TMP/termination-log-amd64
install -m 0600 -o 65532 -g 65532 /dev/null "$TLOG"
MEM_LIMIT=$((64 * 1024 * 1024))
jq --arg spec "$SPEC" --arg tlog "$TLOG" --arg netns "/var/run/netns/$NS" --argjson mem "$MEM_LIMIT" '
    .process.terminal = false
  | .process.args = ["/jr2-probe", "run", "--spec-json", $spec, "--termination-log", "/dev/termination-log"]
  | .process.env = ["NODE_NAME=runc-test-node"]
  | .process.noNewPrivileges = true
  | .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []}
  | .root.readonly = true
  | .linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "network", path: $netns}])
  | .linux.resources.memory = {limit: $mem}
  | .mounts += [{destination: "/dev/termination-log", type: "bind", source: $tlog, options: ["rbind", "rw"]}]
  ' "$BUNDLE/config.json" >"$TMP/config.json"
mv "$TMP/config.json" "$BUNDLE/config.json"
jq -e '.process.user.uid == 65532 and .process.user.gid == 65532 and .process.args[0] == "/jr2-probe"' "$BUNDLE/config.json" >/dev/null ||
  fail "umoci's bundle does not run /jr2-probe as 65532:65532: $(jq -c .process.user "$BUNDLE/config.json")"

# The restrictions of the bundle's config, read off the created container before it starts (runc init waits before
# exec): uid $1, gid $2, no capabilities, no_new_privs, a read-only root, in the namespace $NS, memory limit $3 bytes.
check_restrictions() {
  local uid=$1 gid=$2 mem=$3 pid status cap mem_cgroup limit
  runc --root "$RUNC_ROOT" create --bundle "$BUNDLE" "$CID" >"$TMP/create.out" 2>&1 </dev/null ||
    fail "runc create failed: $(cat "$TMP/create.out")"
  pid=$(runc --root "$RUNC_ROOT" state "$CID" | jq -r .pid)
  status=/proc/$pid/status
  grep -Eq "^Uid:\s+$uid\s+$uid\s+$uid\s+$uid$" "$status" || fail "runc: not uid $uid: $(grep ^Uid "$status")"
  grep -Eq "^Gid:\s+$gid\s+$gid\s+$gid\s+$gid$" "$status" || fail "runc: not gid $gid: $(grep ^Gid "$status")"
  for cap in CapInh CapPrm CapEff CapBnd CapAmb; do
    grep -Eq "^$cap:\s+0000000000000000$" "$status" || fail "runc: capabilities left: $(grep "^$cap" "$status")"
  done
  grep -Eq '^NoNewPrivs:\s+1$' "$status" || fail "runc: no_new_privs is not set"
  awk '$5 == "/" { print $6 }' "/proc/$pid/mountinfo" | tail -n 1 | grep -Eq '(^|,)ro(,|$)' ||
    fail "runc: the root filesystem is not read-only: $(awk '$5 == "/"' "/proc/$pid/mountinfo")"
  [[ $(readlink "/proc/$pid/ns/net") == "net:[$(stat -L -c %i "/var/run/netns/$NS")]" ]] ||
    fail "runc: the container is not in the network namespace $NS"
  mem_cgroup=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3 }' "/proc/$pid/cgroup")
  if [[ -n $mem_cgroup ]]; then
    limit=$(cat "/sys/fs/cgroup/memory$mem_cgroup/memory.limit_in_bytes")
  else
    limit=$(cat "/sys/fs/cgroup$(awk -F: '$1 == "0" { print $3 }' "/proc/$pid/cgroup")/memory.max")
  fi
  [[ $limit == "$mem" ]] || fail "runc: the memory limit is $limit, not $mem"
  runc --root "$RUNC_ROOT" delete --force "$CID"
  say "runc: uid $uid, gid $gid, no capabilities, no_new_privs, read-only root, memory limit $limit bytes, network namespace $NS"
}
check_restrictions 65532 65532 "$MEM_LIMIT"
: >"$TLOG"

# Then the run itself, in the foreground: its exit code, its stdout and its termination message.
start_ms=$(date +%s%3N)
rc=0
timeout 60 runc --root "$RUNC_ROOT" run --bundle "$BUNDLE" "$CID" >"$TMP/runc.out" 2>"$TMP/runc.err" </dev/null || rc=$?
say "runc: the probe exited $rc in $(($(date +%s%3N) - start_ms)) ms (container start included)"
runc --root "$RUNC_ROOT" delete --force "$CID" >/dev/null 2>&1 || true
((rc == 0)) || fail "runc: exit $rc; stderr: $(cat "$TMP/runc.err"); stdout: $(cat "$TMP/runc.out")"
check_run "amd64 under runc" "$TMP/runc.out" "$TLOG"
