#!/bin/sh
# DeepSeek-V3-shaped GGUF (a dynamic low-bit mix) larger than RAM: Burrow vs llama.cpp on the
# same file, in a memory cgroup of 2/3 its size or (LIMIT= ) in none.
#
#   [LIMIT=] [ISA=avx2] [APPEND=1] [PREPARE_MEMORY=1] sh bench/peers/run-ds2.sh OUT.json [ROUNDS] [GGUF]
#
# GGUF (default /work/big/ds2-ud.gguf): burrow-cli synth's GGUF output of the deepseek2 family
# at DeepSeek-V3's widths (--size-gb 28: 1 dense + 6 MoE layers, 27.0 GB). fio reads one
# expert's bytes (its gate, up and down slices) at queue depths 1, 4 and 16 before and after
# each round. The prompt is 8 tokens of its synthetic vocabulary. run-pair.sh does the runs.
set -eu
exec env LIMIT="${LIMIT-2/3}" PROBE_BS="${PROBE_BS:-expert}" TEXT="${TEXT:-abcdefghijklmnop}" \
  sh "$(dirname "$0")/run-pair.sh" "${3:-/work/big/ds2-ud.gguf}" "$1" "${2:-3}"
