#!/bin/sh
# Fails when a front document grows past what a newcomer reads in one sitting: README.md is
# what Burrow is and how to start (12 KiB), PERFORMANCE.md the current figures (20 KiB).
# Detail belongs in HACKING.md, docs/, burrow-cli(1) or bench/peers/results/.
# Usage: doc-sizes.sh SOURCE_ROOT
set -eu
root=$1
status=0
check() {
  file=$root/$1 limit=$2
  if [ ! -f "$file" ]; then
    echo "MISSING $1"
    status=1
    return
  fi
  size=$(wc -c < "$file")
  if [ "$size" -gt "$limit" ]; then
    echo "$1: $size bytes, over its limit of $limit; move detail out of it"
    status=1
  else
    echo "ok   $1: $size of $limit bytes"
  fi
}
check README.md $((12 * 1024))
check PERFORMANCE.md $((20 * 1024))
exit "$status"
