#!/bin/sh
# The fuzzing campaign: every libFuzzer target (ASan + UBSan, coverage) from its seed corpus
# and dictionary, one target at a time, until it has run RUNS inputs or SECONDS seconds.
# Prints, per target: executions, seconds, coverage (libFuzzer's cov = edges, ft =
# features), corpus size and crash inputs, and appends the same to build-fuzz/campaign.tsv.
#
# Usage: tests/fuzz/campaign.sh [SECONDS [TARGET...]]     (defaults: 600, every target)
# Environment: RUNS (default 1000000), MAX_LEN (longest input tried, default 4096; longer
# seeds are cut), BUILD (default build-fuzz), NICE (default 19: the machine is shared),
# TIMEOUT (seconds one input may take before it counts as a hang, default 10; raise it on
# a loaded machine, where a starved process can stall that long on an ordinary input).
#
# The corpus grows in BUILD/campaign/TARGET/corpus across runs, so a second run continues
# where the first stopped; crash inputs land in BUILD/campaign/TARGET/ (crash-*, leak-*,
# timeout-*, oom-*). Copy each one into tests/fixtures/fuzz/TARGET/ once it is fixed: the
# replay tests in `meson test` then run it forever. Not part of CI.
set -u
cd "$(dirname "$0")/../.."
seconds=${1:-600}
[ $# -gt 0 ] && shift
runs=${RUNS:-1000000}
max_len=${MAX_LEN:-4096}
build=${BUILD:-build-fuzz}
niceness=${NICE:-19}
timeout=${TIMEOUT:-10}
all=$(for f in tests/fuzz/fuzz-*.c; do basename "$f" .c | sed 's/^fuzz-//'; done)
targets=${*:-$all}

if [ ! -f "$build/build.ninja" ]; then
  CC=clang meson setup "$build" -Dfuzzers=true -Dapp=false || exit 1
fi
# shellcheck disable=SC2046
nice -n "$niceness" meson compile -C "$build" $(for t in $targets; do echo "tests/fuzz/fuzz-$t"; done) \
  >"$build/campaign-build.log" 2>&1 || { tail -n 40 "$build/campaign-build.log"; exit 1; }

summary="$build/campaign.tsv"
[ -f "$summary" ] || printf 'date\ttarget\texecs\tseconds\texecs_per_s\tcov\tft\tcorpus\tcrashes\n' >"$summary"
printf '%-20s %10s %8s %9s %7s %7s %7s %8s\n' target execs seconds exec/s cov ft corpus crashes
failed=0
for t in $targets; do
  dir="$build/campaign/$t"
  mkdir -p "$dir/corpus"
  before=$(ls "$dir" | grep -cE '^(crash|leak|timeout|oom)-')
  dict_arg=""
  [ -f tests/fuzz/dict/"$t".dict ] && dict_arg="-dict=tests/fuzz/dict/$t.dict"
  start=$(date +%s)
  G_SLICE=always-malloc ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    nice -n "$niceness" "$build/tests/fuzz/fuzz-$t" -runs="$runs" -max_total_time="$seconds" \
    -timeout="$timeout" -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$dir/" \
    $dict_arg "$dir/corpus" tests/fixtures/fuzz/"$t" >"$dir/last.log" 2>&1
  status=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/last.log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$dir/last.log" | tail -n 1)
  cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
  ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
  corpus=$(ls "$dir/corpus" | wc -l)
  crashes=$(( $(ls "$dir" | grep -cE '^(crash|leak|timeout|oom)-') - before ))
  [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes="exit $status"
  [ "$status" -ne 0 ] && failed=1
  rate=$(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))
  printf '%-20s %10s %8s %9s %7s %7s %7s %8s\n' "$t" "${execs:-?}" "$elapsed" "$rate" \
    "${cov:-?}" "${ft:-?}" "$corpus" "$crashes"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${execs:-?}" \
    "$elapsed" "$rate" "${cov:-?}" "${ft:-?}" "$corpus" "$crashes" >>"$summary"
  if [ "$status" -ne 0 ]; then
    grep -E 'ERROR|SUMMARY|^    #[0-9] ' "$dir/last.log" | head -n 20 | sed 's/^/    /'
  fi
done
exit "$failed"
