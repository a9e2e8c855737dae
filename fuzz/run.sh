#!/usr/bin/env bash
# Fuzzes the probe's parsers with cargo fuzz (libFuzzer, no sanitizer: see below), every target in turn:
#   sse                         the SSE decoder (whole vs cut anywhere: same events, same error; bounded lines)
#   aws_event_stream            AWS's binary event stream (Bedrock's framing)
#   reader_openai_completions   a 200 of each API kind through the stream judge check.rs calls
#   reader_anthropic            (mistral-conversations uses the openai-completions reader)
#   reader_openai_responses
#   reader_google
#   reader_bedrock
#   error_body                  every provider's error body, retry-after headers, the classification, the cleaning
#   run_spec                    the run spec (serde_json), spec::resolve, and the request of each resolved target
#   plan                        the driver's plan: parse + validate, the check pods, their dry-run YAML read back
#   url_display                 a URL as the probe shows it: no userinfo, query or held value, escaped, bounded
#   model_id                    a model id: accepted ids need no escape, refused ones are refused by resolve too
#   probe_line                  the driver's reader of a probe's log line: an event of the run spec's models, or a protocol error
#   secret_shape                the secret-shape rule: redacting by shape leaves no key shape nor URL credentials
#
# Usage:
#   fuzz/run.sh [SECONDS]      each target for SECONDS of fuzzing (default 60)
#   fuzz/run.sh --runs N       each target for N inputs (CI: tests/run.sh runs --runs 20000)
#   FUZZ_TARGETS="sse run_spec" fuzz/run.sh 300
#
# The committed seeds are fuzz/seeds/<target>/ (small real samples: the test fakes' streams and error bodies, run
# specs); new inputs go to fuzz/corpus/<target>/ (not committed), crashes to fuzz/artifacts/<target>/. cargo fuzz
# may pass nightly-only flags (-Zsanitizer with a sanitizer): RUSTC_BOOTSTRAP=1 lets the machine's stable toolchain
# take them.
# Reproduce a crash: RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz --codegen-units 16 --sanitizer none <target> fuzz/artifacts/<target>/crash-...
# then keep it as a unit test in the module it hit.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=(-max_total_time=60)
case "${1:-}" in
  --runs) limit=(-runs="${2:?--runs takes a number}") ;;
  "") ;;
  *) limit=(-max_total_time="$1") ;;
esac

export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR=never
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz from crates.io" >&2
  # In the dev profile without debuginfo: half the CPU of a release build (26 s against 50 s), for a wrapper that only
  # runs cargo.
  CARGO_PROFILE_DEV_DEBUG=0 cargo install --locked --debug cargo-fuzz@0.13.2
fi
# tests/run.sh installs cargo-fuzz early, beside the test runs (JR2_INSTALL_ONLY=1): stop here then.
if [ "${JR2_INSTALL_ONLY:-}" = 1 ]; then exit 0; fi

all=$(cargo fuzz list --fuzz-dir fuzz)
targets=${FUZZ_TARGETS:-$all}

# 16 codegen units instead of cargo-fuzz's 1: the build (the driver's kube and k8s-openapi among the deps, each
# instrumented) dominated the step, and a fixed number of runs barely feels the slower code. `run` takes the same
# flags, or it would build again.
#
# No sanitizer (cargo-fuzz's default is AddressSanitizer): the code under test is safe Rust (`unsafe_code = "forbid"`
# in both crates), where a memory error cannot happen without unsafe code; what the fuzzer finds here are panics,
# overflows and debug assertions (all on), and broken invariants the targets assert, which need no sanitizer. ASan
# instrumented every dependency too (tokio, hyper, rustls, kube, k8s-openapi): a fresh build of the twelve targets on
# 2 idle cores took 720 s with it (the cold run of 10ba3e2), 447 s without (868 s of CPU; with ASan and the
# dependencies at opt-level 1, 778 s and 1,465). FUZZ_SANITIZER=address brings it back, for the unsafe code of the
# dependencies (unsafe-libyaml under the plan target's YAML reader among them).
build=(--fuzz-dir fuzz --codegen-units 16 --sanitizer "${FUZZ_SANITIZER:-none}")
start=$(date +%s)
cargo fuzz build "${build[@]}" >&2
echo "fuzz: built in $(($(date +%s) - start)) s" >&2

report="${JR2_RELIABILITY_DIR:-fuzz/artifacts}/fuzz.md"
mkdir -p "$(dirname "$report")"
{
  echo "| target | seeds | runs | seconds | corpus after | result |"
  echo "|---|---|---|---|---|---|"
} >"$report"
failed=()
for t in $targets; do
  mkdir -p "fuzz/corpus/$t"
  log="$(mktemp)"
  t0=$(date +%s)
  rc=0
  cargo fuzz run "${build[@]}" "$t" "fuzz/corpus/$t" "fuzz/seeds/$t" -- \
    "${limit[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - t0))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  seeds=$(find "fuzz/seeds/$t" -type f | wc -l)
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  if [ "$rc" = 0 ]; then
    result=ok
  else
    result="FAILED (exit $rc)"
    failed+=("$t")
    tail -40 "$log" >&2
  fi
  echo "| $t | $seeds | ${runs:-?} | $secs | $corpus | $result |" >>"$report"
  echo "fuzz: $t: ${runs:-?} runs in $secs s: $result" >&2
  rm -f "$log"
done
cat "$report" >&2
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in fuzz/artifacts/<target>/)" >&2
  exit 1
fi
