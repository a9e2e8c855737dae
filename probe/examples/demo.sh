#!/usr/bin/env bash
# The main job, on this machine alone: builds jr2-probe, starts the fake OpenAI-compatible provider on loopback,
# and checks four models the way `jr2 up` would (a tool call, a text answer, a vLLM without its tool parser, a model
# that does not exist), printing the exact lines and the JSON verdict. Point jr2-probe at your own endpoint with:
#   jr2-probe check --base-url http://<host>:8000/v1 --model <id as GET /v1/models lists it> [--api-key-env NAME]
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p jr2-probe -p jr2-testkit
target=${CARGO_TARGET_DIR:-target}/release
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$target/jr2-fake-provider" "$port" >/dev/null &
fake=$!
trap 'kill $fake 2>/dev/null' EXIT
for _ in $(seq 1 50); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break
  sleep 0.1
done
set +e
"$target/jr2-probe" check --base-url "http://127.0.0.1:$port/v1" \
  --model ok --model text --model vllm-no-parser --model missing --output json
echo "exit code: $? (1: a model failed)" >&2
