#!/usr/bin/env bash
# Broken networks, for real, in network namespaces this script creates: the probe in one namespace, the fake provider
# in another, joined by a veth pair inside a private subnet (10.200.0.0/24). Cases:
#   - no route:            a third namespace with only `lo` (network is unreachable), and an `unreachable` route
#                           inside the client namespace (no route to host)
#   - connection refused:  a closed port on the peer
#   - connect timeout:     an nft rule inside the client namespace drops the SYNs
#   - DNS failure:         the client namespace's own resolv.conf (/etc/netns/<ns>/) names a nameserver inside that
#                           namespace where nothing listens; the base URL has a host name
# Each must give the outcome `unreachable`, the contract's `<error>` words and the four custom-provider hints, within
# its deadline plus 2 s. A control run first checks that the probe does reach the fake through the veth.
#
# HARD RULE: every connection here has BOTH ends inside the namespaces this script made. Nothing runs in the root
# namespace against a namespace's address, no address of the root namespace is touched, and the veth pair is created
# inside the namespaces (never in the root namespace). DNS never leaves the client namespace.
#
# Root only. Skips (exit 0, with a message) where `ip netns add` is not permitted, unless JR2_NETNS_REQUIRED=1
# (tests/run.sh sets it under CI), where that is a failure. Cleans up on every exit (trap).
#
# Usage: tests/netns/run.sh   (builds jr2-probe and jr2-fake-provider with cargo; CARGO_TARGET_DIR is honoured)
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf 'netns: %s\n' "$*" >&2; }
skip() {
  if [ "${JR2_NETNS_REQUIRED:-0}" = 1 ]; then
    say "FAILED: $* (JR2_NETNS_REQUIRED=1)"
    exit 1
  fi
  say "SKIPPED: $*"
  exit 0
}

[ "$(id -u)" = 0 ] || skip "not root: network namespaces need root"
if ! command -v ip >/dev/null || ! command -v nft >/dev/null; then
  if command -v apt-get >/dev/null; then
    say "installing iproute2 and nftables"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 nftables; } >/dev/null 2>&1 || true
  fi
fi
# tests/run.sh installs every step's tools up front (JR2_INSTALL_ONLY=1), beside the peers' builds: stop here then.
if [ "${JR2_INSTALL_ONLY:-}" = 1 ]; then exit 0; fi
command -v ip >/dev/null || skip "no ip command (iproute2)"
command -v nft >/dev/null || skip "no nft command (nftables)"

TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
cargo build -q --locked -p jr2-probe -p jr2-testkit --bins
PROBE="$TARGET_DIR/debug/jr2-probe"
FAKE="$TARGET_DIR/debug/jr2-fake-provider"

# Names unique to this run, so two runs never meet.
ID=$$
SRV="jr2n-srv-$ID"
CLI="jr2n-cli-$ID"
LON="jr2n-lo-$ID"
VS="j2s$ID"
VC="j2c$ID"
SERVER_IP=10.200.0.1
CLIENT_IP=10.200.0.2
PORT=8080
WORK="$(mktemp -d)"
FAKE_PID=""

cleanup() {
  set +e
  if [ -n "$FAKE_PID" ]; then
    kill -INT "$FAKE_PID" 2>/dev/null
    sleep 0.2
    kill -KILL "$FAKE_PID" 2>/dev/null
    wait "$FAKE_PID" 2>/dev/null
  fi
  for ns in "$SRV" "$CLI" "$LON"; do
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  rmdir /etc/netns 2>/dev/null # only when empty
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

if ! ip netns add "$SRV" 2>"$WORK/err"; then
  skip "ip netns add is not permitted here: $(cat "$WORK/err")"
fi
ip netns add "$CLI"
ip netns add "$LON"
# The veth pair is born inside the server namespace, its peer placed straight into the client namespace.
ip -n "$SRV" link add "$VS" type veth peer name "$VC" netns "$CLI"
ip -n "$SRV" addr add "$SERVER_IP/24" dev "$VS"
ip -n "$CLI" addr add "$CLIENT_IP/24" dev "$VC"
for ns in "$SRV" "$CLI" "$LON"; do ip -n "$ns" link set lo up; done
ip -n "$SRV" link set "$VS" up
ip -n "$CLI" link set "$VC" up

# The client namespace's own name service: files, then a nameserver inside the namespace (its own address) where
# nothing listens, so every DNS query is refused inside the namespace. `ip netns exec` bind-mounts these over /etc.
mkdir -p "/etc/netns/$CLI"
printf 'nameserver %s\noptions timeout:1 attempts:1\n' "$CLIENT_IP" >"/etc/netns/$CLI/resolv.conf"
printf 'hosts: files dns\n' >"/etc/netns/$CLI/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"/etc/netns/$CLI/hosts"

# The fake provider inside the server namespace, on the veth's address.
ip netns exec "$SRV" "$FAKE" --bind "$SERVER_IP:$PORT" >"$WORK/fake.out" 2>&1 &
FAKE_PID=$!
for _ in $(seq 1 100); do
  grep -q listening "$WORK/fake.out" 2>/dev/null && break
  sleep 0.05
done
grep -q listening "$WORK/fake.out" || { say "the fake provider did not start: $(cat "$WORK/fake.out")"; exit 1; }

# Connect timeout: SYNs to port 8082 of the server are dropped inside the client namespace.
ip netns exec "$CLI" nft add table inet jr2
ip netns exec "$CLI" nft add chain inet jr2 out '{ type filter hook output priority 0; policy accept; }'
ip netns exec "$CLI" nft add rule inet jr2 out ip daddr "$SERVER_IP" tcp dport 8082 drop
# A silent neighbour: a permanent ARP entry with a MAC nobody has, so frames to 10.200.0.50 go nowhere.
ip -n "$CLI" neigh add 10.200.0.50 lladdr 02:00:00:00:00:50 dev "$VC" nud permanent
# No route to host: an unreachable route inside the client's own subnet.
ip -n "$CLI" route add unreachable 10.200.0.201/32

FAILED=0
ROWS=()

# check NAME NS BASE_URL TIMEOUT_S OUTCOME ERROR_PREFIX
check() {
  local name=$1 ns=$2 base=$3 timeout=$4 want_outcome=$5 want_error=$6
  local out="$WORK/out.json" err="$WORK/err.txt"
  local start end ms rc=0
  start=$(date +%s%N)
  ip netns exec "$ns" env -i PATH="$PATH" JR2_NETNS_KEY=netns-held-key-93c1d7e2 \
    "$PROBE" check --base-url "$base" --model ok --api-key-env JR2_NETNS_KEY \
    --timeout "${timeout}s" --max-tries 1 -o json >"$out" 2>"$err" || rc=$?
  end=$(date +%s%N)
  ms=$(((end - start) / 1000000))
  local verdict
  verdict=$(python3 - "$out" "$err" "$name" "$want_outcome" "$want_error" "$rc" "$ms" "$timeout" <<'PY'
import json, sys
out, err, name, want_outcome, want_error, rc, ms, timeout = sys.argv[1:]
rc, ms, timeout = int(rc), int(ms), int(timeout)
lines = open(err).read().splitlines()
try:
    m = json.load(open(out))["models"][0]
except Exception as e:
    print(json.dumps({"outcome": "?", "error": "", "problems": [f"no verdict on stdout ({e}): {lines[:3]!r}"]}))
    sys.exit(0)
problems = []
if m["outcome"] != want_outcome:
    problems.append(f"outcome {m['outcome']} (want {want_outcome}): {m.get('error')}")
if ms > (timeout + 2) * 1000:
    problems.append(f"took {ms} ms, past {timeout} s + 2 s")
if "netns-held-key-93c1d7e2" in open(out).read() + open(err).read():
    problems.append("the key is in the output")
if want_outcome == "ok":
    if rc != 0:
        problems.append(f"exit {rc}")
else:
    host = m["host"]
    first = (f'error: provider preflight failed for model "ok" against {host} '
             f'(from this machine, as a Turn calls it): ')
    # The localhost hint only where the base URL is local (issue 40, item 13).
    local_host = host.startswith(("127.", "[::1]", "localhost"))
    hints = [
        "  - localhost never works from a pod; use a LAN address",
    ] if local_host else []
    hints += [
        "  - the model id must be exactly what the endpoint serves (vLLM: GET /v1/models)",
        "  - vLLM needs --enable-auto-tool-choice and a matching --tool-call-parser",
        '  - stop reason "length" means the model ran out of tokens before the call (a thinking model reasons first)',
        "  - the held secret JR2_PROVIDER_API_KEY may be wrong (harness.provider.apiKey)",
    ]
    if rc != 1:
        problems.append(f"exit {rc} (want 1)")
    if not lines or not lines[0].startswith(first + want_error):
        problems.append(f"line 1 is {lines[:1]!r}, want it to start {first + want_error!r}")
    if lines[1:] != hints:
        problems.append(f"the hint lines are {lines[1:]!r}")
    if m["code"] != "PROVIDER_UNREACHABLE":
        problems.append(f"code {m['code']}")
print(json.dumps({"outcome": m["outcome"], "error": m.get("error") or "", "problems": problems}))
PY
  )
  local outcome error problems
  outcome=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["outcome"])' "$verdict")
  error=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["error"])' "$verdict")
  problems=$(python3 -c 'import json,sys; print("; ".join(json.loads(sys.argv[1])["problems"]))' "$verdict")
  local status=ok
  if [ -n "$problems" ]; then
    status="FAILED: $problems"
    FAILED=1
  fi
  ROWS+=("| $name | $outcome | ${error:-—} | $(printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10))) s / ${timeout} s | $status |")
}

check "control: the fake through the veth" "$CLI" "http://$SERVER_IP:$PORT/v1" 10 ok ""
check "no route (a namespace with only lo)" "$LON" "http://$SERVER_IP:$PORT/v1" 5 unreachable "network is unreachable"
check "no route to host (unreachable route)" "$CLI" "http://10.200.0.201:$PORT/v1" 5 unreachable "no route to host"
check "connection refused (closed port)" "$CLI" "http://$SERVER_IP:8081/v1" 5 unreachable "connection refused"
check "connect timeout (nft drop)" "$CLI" "http://$SERVER_IP:8082/v1" 3 unreachable "connection timed out after 3 s"
check "connect timeout (silent neighbour)" "$CLI" "http://10.200.0.50:$PORT/v1" 3 unreachable "connection timed out after 3 s"
check "connect timeout at its 10 s limit (--timeout 12s)" "$CLI" "http://$SERVER_IP:8082/v1" 12 unreachable "connection timed out after 10 s"
check "DNS failure (nameserver refuses)" "$CLI" "http://provider.jr2-netns.test:$PORT/v1" 5 unreachable "cannot resolve provider.jr2-netns.test"

{
  echo "| case | outcome | <error> | elapsed / deadline | |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${ROWS[@]}"
} | tee "$WORK/table.md" >&2
if [ -n "${JR2_RELIABILITY_DIR:-}" ]; then
  mkdir -p "$JR2_RELIABILITY_DIR"
  cp "$WORK/table.md" "$JR2_RELIABILITY_DIR/netns.md"
fi
if [ "$FAILED" != 0 ]; then
  say "FAILED"
  exit 1
fi
say "all cases passed"
