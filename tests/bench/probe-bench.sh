#!/usr/bin/env bash
# probe-bench.sh: the benchmark of jr2-probe, measured in one run against one local endpoint.
#
# What it measures (every figure comes from this run, against the fake provider on 127.0.0.1; nothing
# else is ever contacted):
#   size  the static musl release binary of jr2-probe, in bytes and MiB     (target: <= 4 MiB)
#   A     process start to verdict of `jr2-probe check --model ok`, against curl sending the same
#         streamed request (same JSON body, same Authorization header)     (target: probe/curl <= 1.5x)
#   B     `jr2-probe check` with 16 `--model ok-delay-500` at the default settings against one
#         `--model ok-delay-500`: 16 slow models of one endpoint cost about one  (target: 16/1 <= 1.2x)
#   B32   the same with 32 models: the per-endpoint bound (16 at once, --per-host) makes it two rounds of
#         16, so about 2x one; printed, not a target (it shows the bound that protects a provider holds)
#   C     instructions (valgrind --tool=callgrind, which the machine's noise does not move) of one
#         `jr2-probe check --model ok` against curl's for the same streamed request, both in this
#         script's environment                                                (target: probe <= curl)
#   D     the cost of waiting for the complete tool call (issue 16): `--model call-paced-20` (a stream with 20 ms
#         before each event, the verdict once the arguments parse) against `--model name-paced-20` (the same
#         stream whose name chunk ends the call: the verdict where the probe used to hang up); a ratio, printed
#   RSS   peak resident memory of the musl probe, 1-model and 16-model runs (/usr/bin/time -f %M)
#
# How to run (from anywhere; as root, or with sudo available for the installs):
#   tests/bench/probe-bench.sh
# Knobs (environment): RUNS_A (default 30), RUNS_B (default 10), RSS_RUNS (default 5), CALLGRIND=0 to skip C,
#   BENCH_STRICT=1 to exit 1 when a target is missed (by default the script exits 0 and prints FAIL).
# It installs what is missing (hyperfine, curl, time, musl-tools, file, valgrind, the rustup musl target), builds
# the probe for x86_64-unknown-linux-musl and the fake provider natively, and ends with a summary that
# is also written to target/bench/probe-bench.txt.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

MUSL_TARGET=x86_64-unknown-linux-musl
RUNS_A="${RUNS_A:-30}"
RUNS_B="${RUNS_B:-10}"
RSS_RUNS="${RSS_RUNS:-5}"
SIZE_TARGET_BYTES=$((4 * 1024 * 1024))
RATIO_TARGET=1.5
B_RATIO_TARGET=1.2
DELAY_MODEL=ok-delay-500
CALLGRIND="${CALLGRIND:-1}"
OUT_DIR="$ROOT/target/bench"
SUMMARY_FILE="$OUT_DIR/probe-bench.txt"

die() { echo "probe-bench: error: $*" >&2; exit 1; }
step() { echo; echo "== $*"; }

# --- 1. Tools --------------------------------------------------------------------------------------

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null 2>&1; then sudo "$@"
    else die "need root (or sudo) to run: $*"
    fi
}

step "tools"
missing_pkgs=()
command -v hyperfine >/dev/null 2>&1 || missing_pkgs+=(hyperfine)
command -v curl >/dev/null 2>&1 || missing_pkgs+=(curl)
[ -x /usr/bin/time ] || missing_pkgs+=(time)
command -v musl-gcc >/dev/null 2>&1 || missing_pkgs+=(musl-tools)
command -v file >/dev/null 2>&1 || missing_pkgs+=(file)
if [ "$CALLGRIND" = 1 ]; then command -v valgrind >/dev/null 2>&1 || missing_pkgs+=(valgrind); fi
if [ "${#missing_pkgs[@]}" -gt 0 ]; then
    command -v apt-get >/dev/null 2>&1 ||
        die "missing ${missing_pkgs[*]} and apt-get is not available; install them by hand"
    echo "installing: ${missing_pkgs[*]}"
    as_root apt-get update -qq || die "apt-get update failed; cannot install ${missing_pkgs[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing_pkgs[@]}" >/dev/null ||
        die "apt-get install ${missing_pkgs[*]} failed; install them by hand"
fi
command -v python3 >/dev/null 2>&1 || die "python3 is needed to read hyperfine's JSON"
command -v rustup >/dev/null 2>&1 || die "rustup is needed to add the $MUSL_TARGET target"
if ! rustup target list --installed | grep -qx "$MUSL_TARGET"; then
    echo "adding rustup target $MUSL_TARGET"
    rustup target add "$MUSL_TARGET" || die "rustup target add $MUSL_TARGET failed"
fi
HYPERFINE_VERSION="$(hyperfine --version | awk '{print $2}')"
# -N (--shell=none, hyperfine >= 1.13) runs commands without a shell, so the shell's start-up is not measured.
if hyperfine --help 2>/dev/null | grep -q -- '--shell=none'; then
    HF_SHELL=(-N); HF_SHELL_DESC="-N (no shell)"
else
    HF_SHELL=(); HF_SHELL_DESC="default shell (no -N in this hyperfine)"
fi
echo "hyperfine $HYPERFINE_VERSION, $HF_SHELL_DESC; $(curl --version | head -n1 | cut -d' ' -f1-2)"

# --- 2. Builds -------------------------------------------------------------------------------------

step "build"
cargo build --release --target "$MUSL_TARGET" -p jr2-probe || die "the musl build of jr2-probe failed"
cargo build --release -p jr2-testkit --bin jr2-fake-provider || die "the build of jr2-fake-provider failed"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
PROBE="$TARGET_DIR/$MUSL_TARGET/release/jr2-probe"
FAKE="$TARGET_DIR/release/jr2-fake-provider"
[ -x "$PROBE" ] || die "no probe binary at $PROBE"
[ -x "$FAKE" ] || die "no fake provider binary at $FAKE"

FILE_DESC="$(file -b "$PROBE")"
case "$FILE_DESC" in
    *"statically linked"*) LINKAGE="statically linked" ;;
    *"static-pie linked"*) LINKAGE="static-pie linked" ;;
    *) die "$PROBE is not static: $FILE_DESC" ;;
esac
SIZE_BYTES="$(stat -c %s "$PROBE")"
SIZE_MIB="$(python3 -c "print(f'{$SIZE_BYTES / 1048576:.2f}')")"
if [ "$SIZE_BYTES" -le "$SIZE_TARGET_BYTES" ]; then SIZE_VERDICT=PASS; else SIZE_VERDICT=FAIL; fi
echo "probe: $PROBE ($LINKAGE), $SIZE_BYTES bytes = $SIZE_MIB MiB, target <= 4 MiB: $SIZE_VERDICT"

# --- 3. The fake provider on a free loopback port --------------------------------------------------

TMP="$(mktemp -d "${TMPDIR:-/tmp}/probe-bench.XXXXXX")"
FAKE_PID=""
CAPTURE_PID=""
cleanup() {
    for pid in "$FAKE_PID" "$CAPTURE_PID"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Polls until FILE holds a line matching REGEX, or DEADLINE_S seconds pass, or PID dies.
wait_for_line() {
    local file="$1" regex="$2" pid="$3" deadline=$((SECONDS + $4))
    while [ "$SECONDS" -lt "$deadline" ]; do
        if grep -Eq "$regex" "$file" 2>/dev/null; then return 0; fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

step "fake provider"
# Port 0: the kernel picks a free port; the provider prints the one it bound.
"$FAKE" 0 >"$TMP/fake.out" 2>"$TMP/fake.err" &
FAKE_PID=$!
wait_for_line "$TMP/fake.out" '^listening on http://127\.0\.0\.1:[0-9]+/v1$' "$FAKE_PID" 10 ||
    die "the fake provider did not start within 10 s: $(cat "$TMP/fake.err")"
BASE_URL="$(sed -n 's/^listening on //p' "$TMP/fake.out" | head -n1)"
case "$BASE_URL" in
    http://127.0.0.1:*/v1) ;;
    *) die "unexpected fake provider address: $BASE_URL" ;;
esac
echo "fake provider (pid $FAKE_PID) at $BASE_URL"

# --- The request body curl sends: the probe's, from probe/src/api/openai_completions.rs ------------

cat >"$TMP/body.json" <<'JSON'
{"model":"ok","messages":[{"role":"developer","content":"You check that this model can call tools."},{"role":"user","content":[{"type":"text","text":"Call the probe tool now with status \"ready\"."}]}],"stream":true,"stream_options":{"include_usage":true},"store":false,"max_completion_tokens":1024,"tools":[{"type":"function","function":{"name":"probe","description":"Report that this model can call tools. Call it once.","parameters":{"type":"object","required":["status"],"properties":{"status":{"type":"string","enum":["ready"],"description":"Always \"ready\"."}}},"strict":false}}]}
JSON

# Check that it is the body the probe sends: a one-shot loopback listener records the probe's request
# (and answers 400, so the probe stops at once), then the two bodies are compared as JSON.
step "request body check"
cat >"$TMP/capture.py" <<'PY'
import http.server, sys
out, port_file = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("content-length", "0"))
        with open(out, "wb") as f:
            f.write(self.rfile.read(n))
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"{}")
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
s.timeout = 15  # handle_request() gives up if the probe never connects
with open(port_file, "w") as f:
    f.write(f"port {s.server_address[1]}\n")
s.handle_request()
PY
python3 "$TMP/capture.py" "$TMP/probe-body.json" "$TMP/capture.port" &
CAPTURE_PID=$!
wait_for_line "$TMP/capture.port" '^port [0-9]+$' "$CAPTURE_PID" 10 || die "the body capture listener did not start"
CAPTURE_PORT="$(awk '{print $2}' "$TMP/capture.port")"
"$PROBE" check --base-url "http://127.0.0.1:$CAPTURE_PORT/v1" --model ok --max-tries 1 --timeout 10s \
    >/dev/null 2>&1 || true
wait "$CAPTURE_PID" 2>/dev/null || true
CAPTURE_PID=""
python3 - "$TMP/body.json" "$TMP/probe-body.json" <<'PY' || die "curl's body differs from the probe's (see above); update body.json in this script"
import json, sys
ours, probes = (json.load(open(p)) for p in sys.argv[1:3])
if ours != probes:
    print("curl would send: " + json.dumps(ours, sort_keys=True), file=sys.stderr)
    print("probe sends:     " + json.dumps(probes, sort_keys=True), file=sys.stderr)
    sys.exit(1)
PY
echo "curl's body equals the probe's (compared as JSON)"

# Sanity: both commands reach a verdict against the fake provider before anything is timed.
CURL_CMD=(curl -N -s -o /dev/null --fail -H 'authorization: Bearer unused' -H 'content-type: application/json'
          --data-binary "@$TMP/body.json" "$BASE_URL/chat/completions")
"${CURL_CMD[@]}" || die "curl's request to the fake provider failed"
curl -N -s --fail -H 'authorization: Bearer unused' -H 'content-type: application/json' \
    --data-binary "@$TMP/body.json" "$BASE_URL/chat/completions" | grep -q '"tool_calls"' ||
    die "the fake provider's stream for curl has no tool call"
"$PROBE" check --base-url "$BASE_URL" --model ok >/dev/null 2>&1 || die "jr2-probe check --model ok failed"
echo "both reach a verdict"

# Reads hyperfine's JSON: prints "mean_s stddev_s" of result INDEX.
hf_stats() {
    python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][int(sys.argv[2])]
print(f"{r['mean']:.6f} {r['stddev'] or 0:.6f} {len(r['times'])}")
PY
}
ms() { python3 -c "print(f'{$1 * 1000:.1f}')"; }
ratio() { python3 -c "print(f'{$1 / $2:.2f}')"; }
verdict() { python3 -c "print('PASS' if $1 <= ${2:-$RATIO_TARGET} else 'FAIL')"; }

# --- 4. Benchmark A: probe vs curl, one streamed request -------------------------------------------

step "benchmark A: jr2-probe check --model ok vs curl (warmup 3, $RUNS_A runs)"
# The curl command as one string, as hyperfine takes it (the body file path has no spaces).
CURL_STR="curl -N -s -o /dev/null --fail -H 'authorization: Bearer unused' -H 'content-type: application/json' --data-binary @$TMP/body.json $BASE_URL/chat/completions"
PROBE_A_STR="$PROBE check --base-url $BASE_URL --model ok"
hyperfine "${HF_SHELL[@]}" --warmup 3 --runs "$RUNS_A" --export-json "$TMP/a.json" \
    -n "jr2-probe check --model ok" "$PROBE_A_STR" \
    -n "curl (same streamed request)" "$CURL_STR"
read -r A_PROBE_MEAN A_PROBE_SD A_PROBE_N < <(hf_stats "$TMP/a.json" 0)
read -r A_CURL_MEAN A_CURL_SD _ < <(hf_stats "$TMP/a.json" 1)
A_RATIO="$(ratio "$A_PROBE_MEAN" "$A_CURL_MEAN")"
A_VERDICT="$(verdict "$A_RATIO")"
echo "A: probe $(ms "$A_PROBE_MEAN") ms, curl $(ms "$A_CURL_MEAN") ms, probe/curl = ${A_RATIO}x (target <= ${RATIO_TARGET}x): $A_VERDICT"

# --- 5. Benchmark B: 16 slow models vs 1, at the defaults; then 32 (the per-endpoint bound) ------------

step "benchmark B: 16 and 32 x --model $DELAY_MODEL vs 1, default settings (warmup 1, $RUNS_B runs)"
PROBE_B1_STR="$PROBE check --base-url $BASE_URL --model $DELAY_MODEL"
PROBE_B16_STR="$PROBE check --base-url $BASE_URL"
PROBE_B16_ARGS=(check --base-url "$BASE_URL")
for _ in $(seq 16); do
    PROBE_B16_STR+=" --model $DELAY_MODEL"
    PROBE_B16_ARGS+=(--model "$DELAY_MODEL")
done
PROBE_B32_STR="$PROBE_B16_STR"
for _ in $(seq 16); do PROBE_B32_STR+=" --model $DELAY_MODEL"; done
"$PROBE" "${PROBE_B16_ARGS[@]}" >/dev/null 2>&1 || die "the 16-model check failed"
hyperfine "${HF_SHELL[@]}" --warmup 1 --runs "$RUNS_B" --export-json "$TMP/b.json" \
    -n "1 model" "$PROBE_B1_STR" \
    -n "16 models, default settings" "$PROBE_B16_STR" \
    -n "32 models, default settings" "$PROBE_B32_STR"
read -r B_ONE_MEAN B_ONE_SD B_ONE_N < <(hf_stats "$TMP/b.json" 0)
read -r B_16_MEAN B_16_SD _ < <(hf_stats "$TMP/b.json" 1)
read -r B_32_MEAN B_32_SD _ < <(hf_stats "$TMP/b.json" 2)
B_RATIO="$(ratio "$B_16_MEAN" "$B_ONE_MEAN")"
B_VERDICT="$(verdict "$B_RATIO" "$B_RATIO_TARGET")"
B32_RATIO="$(ratio "$B_32_MEAN" "$B_ONE_MEAN")"
echo "B: 1 model $(ms "$B_ONE_MEAN") ms, 16 models $(ms "$B_16_MEAN") ms, 16/1 = ${B_RATIO}x (target <= ${B_RATIO_TARGET}x): $B_VERDICT"
echo "B32: 32 models $(ms "$B_32_MEAN") ms, 32/1 = ${B32_RATIO}x (two rounds of 16 against one endpoint: about 2x)"

# --- 5a. Benchmark D: waiting for the complete call vs the old hang-up at the name chunk -------------------

step "benchmark D: --model call-paced-20 (complete call) vs --model name-paced-20 (the old hang-up point) (warmup 1, $RUNS_B runs)"
hyperfine "${HF_SHELL[@]}" --warmup 1 --runs "$RUNS_B" --export-json "$TMP/d.json" \
    -n "complete call" "$PROBE check --base-url $BASE_URL --model call-paced-20" \
    -n "hang-up at the name" "$PROBE check --base-url $BASE_URL --model name-paced-20"
read -r D_FULL_MEAN D_FULL_SD D_N < <(hf_stats "$TMP/d.json" 0)
read -r D_NAME_MEAN D_NAME_SD _ < <(hf_stats "$TMP/d.json" 1)
D_RATIO="$(ratio "$D_FULL_MEAN" "$D_NAME_MEAN")"
echo "D: complete call $(ms "$D_FULL_MEAN") ms, hang-up at the name $(ms "$D_NAME_MEAN") ms, complete/name = ${D_RATIO}x (two argument chunks at 20 ms each)"

# --- 5b. Benchmark C: instructions, probe vs curl -----------------------------------------------------

C_LINE="C        skipped (CALLGRIND=0)"
C_VERDICT=PASS
if [ "$CALLGRIND" = 1 ]; then
    step "benchmark C: instructions of one check, jr2-probe vs curl (valgrind --tool=callgrind)"
    # Prints the instructions valgrind counted for one run of the command.
    instructions() {
        local log="$TMP/callgrind.log"
        valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file="$log" "$@" >/dev/null 2>&1 ||
            die "valgrind failed on: $*"
        sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p' "$log" | tail -n1
    }
    C_PROBE="$(instructions "$PROBE" check --base-url "$BASE_URL" --model ok)"
    C_CURL="$(instructions "${CURL_CMD[@]}")"
    [ -n "$C_PROBE" ] && [ -n "$C_CURL" ] || die "no instruction count from valgrind"
    C_RATIO="$(ratio "$C_PROBE" "$C_CURL")"
    C_VERDICT="$(python3 -c "print('PASS' if $C_PROBE <= $C_CURL else 'FAIL')")"
    mi() { python3 -c "print(f'{$1 / 1e6:.1f}')"; }
    C_LINE="C        instructions of one check --model ok: probe $(mi "$C_PROBE") M ($C_PROBE), curl $(mi "$C_CURL") M ($C_CURL)
         probe/curl = ${C_RATIO}x (target: probe <= curl)  $C_VERDICT"
    printf 'D        complete call %s ms ± %s vs hang-up at the name chunk %s ms ± %s (20 ms an event, %s runs each)\n' \
        "$(ms "$D_FULL_MEAN")" "$(ms "$D_FULL_SD")" "$(ms "$D_NAME_MEAN")" "$(ms "$D_NAME_SD")" "$D_N"
    echo "         complete/name = ${D_RATIO}x (the time the model takes to write the arguments; printed, no target)"
    echo "$C_LINE"
fi

# --- 6. Peak RSS -------------------------------------------------------------------------------------

step "peak RSS (/usr/bin/time -f %M, max of $RSS_RUNS runs each)"
# Prints the largest peak RSS (KiB) over RSS_RUNS runs of the probe with ARGS.
peak_rss_kib() {
    local max=0 kib
    for _ in $(seq "$RSS_RUNS"); do
        /usr/bin/time -f %M -o "$TMP/rss" "$PROBE" "$@" >/dev/null 2>&1 || die "probe run for RSS failed: $*"
        kib="$(tail -n1 "$TMP/rss")"
        [ "$kib" -gt "$max" ] && max="$kib"
    done
    echo "$max"
}
RSS1_KIB="$(peak_rss_kib check --base-url "$BASE_URL" --model "$DELAY_MODEL")"
RSS16_KIB="$(peak_rss_kib "${PROBE_B16_ARGS[@]}")"
mib() { python3 -c "print(f'{$1 / 1024:.2f}')"; }
echo "1 model: $RSS1_KIB KiB = $(mib "$RSS1_KIB") MiB; 16 models: $RSS16_KIB KiB = $(mib "$RSS16_KIB") MiB"

# --- 7. Summary ----------------------------------------------------------------------------------------

mkdir -p "$OUT_DIR"
{
    echo "jr2-probe benchmark  $(date -u +%Y-%m-%dT%H:%M:%SZ)  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (dirty)')"
    echo "host: $(uname -srm), $(nproc) CPUs; hyperfine $HYPERFINE_VERSION $HF_SHELL_DESC; endpoint: fake provider $BASE_URL"
    echo "binary   $MUSL_TARGET release, $LINKAGE: $SIZE_BYTES bytes = $SIZE_MIB MiB (target <= 4 MiB)  $SIZE_VERDICT"
    printf 'A        start->verdict, --model ok: probe %s ms ± %s, curl %s ms ± %s (%s runs each)\n' \
        "$(ms "$A_PROBE_MEAN")" "$(ms "$A_PROBE_SD")" "$(ms "$A_CURL_MEAN")" "$(ms "$A_CURL_SD")" "$A_PROBE_N"
    echo "         probe/curl = ${A_RATIO}x (target <= ${RATIO_TARGET}x)  $A_VERDICT"
    printf 'B        %s, default settings: 1 model %s ms ± %s, 16 models %s ms ± %s, 32 models %s ms ± %s (%s runs each)\n' \
        "$DELAY_MODEL" "$(ms "$B_ONE_MEAN")" "$(ms "$B_ONE_SD")" "$(ms "$B_16_MEAN")" "$(ms "$B_16_SD")" \
        "$(ms "$B_32_MEAN")" "$(ms "$B_32_SD")" "$B_ONE_N"
    echo "         16/1 = ${B_RATIO}x (target <= ${B_RATIO_TARGET}x)  $B_VERDICT"
    echo "         32/1 = ${B32_RATIO}x (16 at once per endpoint: two rounds, about 2x)"
    echo "$C_LINE"
    echo "RSS      peak, max of $RSS_RUNS runs: 1 model $(mib "$RSS1_KIB") MiB ($RSS1_KIB KiB), 16 models $(mib "$RSS16_KIB") MiB ($RSS16_KIB KiB)"
} >"$SUMMARY_FILE"

step "summary (also in ${SUMMARY_FILE#"$ROOT"/})"
cat "$SUMMARY_FILE"

if [ "${BENCH_STRICT:-0}" = 1 ]; then
    for v in "$SIZE_VERDICT" "$A_VERDICT" "$B_VERDICT" "$C_VERDICT"; do
        [ "$v" = PASS ] || exit 1
    done
fi
