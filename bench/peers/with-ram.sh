#!/bin/sh
# Run a command on a machine with less memory: hold all but RAM_GB of MemAvailable in
# touched anonymous memory (no swap here, so it stays resident) while the command runs.
# Both engines size their caches from MemAvailable, and rabbit ignores memory cgroups, so
# this is how a checkpoint at 1.5x "RAM" fits a disk too small for one at 1.5x the real RAM.
#
#   RAM_GB=14 sh bench/peers/with-ram.sh CMD [ARGS...]
set -eu
RAM_GB=${RAM_GB:?RAM_GB: the memory to leave}
sync; echo 3 > /proc/sys/vm/drop_caches
avail=$(awk '/^MemAvailable:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
hold=$(awk -v a="$avail" -v r="$RAM_GB" 'BEGIN { h = a - r * 1e9; printf "%.0f", (h > 0 ? h : 0) }')
ready=$(mktemp)
/usr/bin/python3 -c '
import mmap, os, signal, sys, time
n = int(sys.argv[1])
m = mmap.mmap(-1, max(n, 4096))
for i in range(0, n, 4096):
    m[i] = 1
open(sys.argv[2], "w").write("ok")
signal.pause()
' "$hold" "$ready" &
ballast=$!
trap 'kill $ballast 2>/dev/null; rm -f "$ready"' EXIT INT TERM
while [ ! -s "$ready" ]; do
  kill -0 $ballast 2>/dev/null || { echo "with-ram.sh: the ballast failed" >&2; exit 1; }
  sleep 1
done
echo "with-ram.sh: holding $((hold / 1000000)) MB; MemAvailable now $(awk '/^MemAvailable:/ { printf "%.1f GB", $2 * 1024 / 1e9 }' /proc/meminfo)" >&2
"$@"
