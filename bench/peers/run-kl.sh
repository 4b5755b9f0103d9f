#!/bin/sh
# Kimi-Linear-shaped checkpoint at 1.5x a memory cgroup's limit: Burrow vs llama.cpp.
#
#   [PEER=rabbit] sh bench/peers/run-kl.sh OUT.json [ROUNDS] [CHECKPOINT]
#
# CHECKPOINT (default /work/big/kl): burrow-cli synth --family kimi_linear --layers 4,
# and beside it CHECKPOINT.gguf (hf-to-gguf.py of it) for llama.cpp; see README.md. The cgroup's
# limit is 2/3 of the checkpoint's size (LIMIT overrides it). run-pair.sh does the runs.
set -eu
exec env LIMIT="${LIMIT-2/3}" PROBE_BS="${PROBE_BS:-14M}" \
  sh "$(dirname "$0")/run-pair.sh" "${3:-/work/big/kl}" "$1" "${2:-3}"
