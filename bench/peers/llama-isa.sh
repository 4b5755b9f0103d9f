#!/bin/sh
# Run a command with the chroot's llama.cpp held to one of ggml's CPU backends.
#
#   sh bench/peers/llama-isa.sh CHROOT VARIANT COMMAND...      (VARIANT: haswell = AVX2 + FMA)
#
# Debian's ggml ships one CPU backend per x86 level and loads the best one the CPU runs (zen4
# on an AVX-512 EPYC); there is no switch for it. So COMMAND runs in a private mount
# namespace where the backends' folder holds VARIANT's library alone: the AVX2 machine's
# llama.cpp on a CPU with AVX-512, as Burrow's --isa avx2 is.
set -eu
C=$1
V=$2
shift 2
B=$C/usr/lib/x86_64-linux-gnu/ggml/backends0
ONLY=$(dirname "$C")/ggml-$V-only
[ -f "$B/libggml-cpu-$V.so" ] || { echo "llama-isa.sh: no $B/libggml-cpu-$V.so" >&2; exit 2; }
mkdir -p "$ONLY"
cp -u "$B/libggml-cpu-$V.so" "$ONLY/"
exec unshare -m --propagation private sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' \
  sh "$ONLY" "$B" "$@"
