# images/test, phase 4: the arm64 binary under qemu.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

phase "arm64 binary under qemu-aarch64-static"
TLOG_ARM=$TMP/termination-log-arm64
install -m 0600 -o 65532 -g 65532 /dev/null "$TLOG_ARM"
start_ms=$(date +%s%3N)
rc=0
timeout 60 ip netns exec "$NS" setpriv --reuid 65532 --regid 65532 --clear-groups --no-new-privs \
  --inh-caps=-all --bounding-set=-all \
  env -i NODE_NAME=qemu-test-node qemu-aarch64-static "$TMP/arm64/jr2-probe" run --spec-json "$SPEC" --termination-log "$TLOG_ARM" \
  >"$TMP/qemu.out" 2>"$TMP/qemu.err" </dev/null || rc=$?
say "qemu: the probe exited $rc in $(($(date +%s%3N) - start_ms)) ms"
((rc == 0)) || fail "qemu: exit $rc; stderr: $(cat "$TMP/qemu.err"); stdout: $(cat "$TMP/qemu.out")"
check_run "arm64 under qemu-aarch64-static" "$TMP/qemu.out" "$TLOG_ARM"
