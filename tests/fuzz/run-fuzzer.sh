#!/bin/sh
# Runs a libFuzzer binary for a few seconds from its seed corpus and reports in TAP.
# Usage: run-fuzzer.sh FUZZER SEED-DIR ARTIFACT-DIR SECONDS [DICT]
# New inputs go to a scratch corpus; crash inputs are kept in ARTIFACT-DIR.
set -u
fuzzer=$1 seeds=$2 artifacts=$3 seconds=$4 dict=${5:-}
dict_arg=""
[ -n "$dict" ] && [ -f "$dict" ] && dict_arg="-dict=$dict"
name=$(basename "$fuzzer")
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"

echo "1..1"
G_SLICE=always-malloc ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -print_final_stats=1 -artifact_prefix="$artifacts/$name-" $dict_arg "$work/corpus" "$seeds" \
  >"$work/log" 2>&1
status=$?
if [ "$status" -eq 0 ]; then
  grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::new_units_added)' "$work/log" \
    | sed 's/^/# /'
  echo "ok 1 - $name ran ${seconds}s from $(ls "$seeds" | wc -l) seeds without a failure"
else
  tail -n 60 "$work/log" | sed 's/^/# /'
  echo "not ok 1 - $name failed (exit $status); inputs kept in $artifacts"
fi
