#!/usr/bin/env bash
# Run every libFuzzer target of a fuzz build for SECONDS each, from its seed corpus, two at a time.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS]      (default 30; tools/run-tests.sh runs it)
#
# New inputs go to a temporary folder, never into tests/fuzz/corpus/. A crash, a sanitizer report,
# a broken invariant (fuzz::fail), an input that takes over 10 s or a process over 2 GB fails the
# run; libFuzzer then leaves the input as BUILD_DIR/fuzz-artifacts/crash-... (reproduce with
# BUILD_DIR/fuzz_NAME FILE). Prints one line per target: executions, coverage, corpus size.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]}
seconds=${2:-30}
targets=(safetensors config tokenizer_load encode decode stop_strings regex json_schema)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OPENBLAS_NUM_THREADS=1
# One target: its report line into $work/NAME.report, and FAILED into $work/NAME.failed on a finding.
run_target() {
  local name=$1 log="$work/$1.log"
  mkdir -p "$work/$name"
  local dict=()
  [[ -f "tests/fuzz/$name.dict" ]] && dict=(-dict="tests/fuzz/$name.dict")
  if "$build/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 "${dict[@]}" \
       -artifact_prefix="$artifacts/$name-" "$work/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    local runs cov
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
    echo "fuzz: $name: ${runs} executions in ${seconds} s, ${cov:-cov: ?}, corpus $(ls "$work/$name" | wc -l) new inputs, no findings" >"$work/$name.report"
  else
    { echo "fuzz: $name: FAILED; the end of its log:"; tail -40 "$log" | sed 's/^/    | /'; } >"$work/$name.report"
    touch "$work/$name.failed"
  fi
}
# Two targets at a time, one per core (each fuzzer is one process on one thread): the eight take
# four rounds of SECONDS instead of eight. Reports are printed in the targets' order.
for name in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge 2 ]]; do wait -n || true; done
  run_target "$name" &
done
wait
failed=()
for name in "${targets[@]}"; do
  cat "$work/$name.report"
  if [[ -e "$work/$name.failed" ]]; then failed+=("$name"); fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in $artifacts)"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ran ${seconds} s each with no findings"
