#!/bin/sh
# K3-shaped checkpoint at 1.5x RAM: Burrow vs rabbit.
#
#   sh bench/peers/run-k3.sh CHECKPOINT OUT.json [ROUNDS] [--warm]
#
# CHECKPOINT: burrow-cli synth --family kimi_k3 --layers 6 (36 GB here). rabbit reads a view
# of it (view.sh: symlinks + byte-level tokenizer) inside the sid chroot, which must see the
# checkpoint at the same path (bind mount, see README.md). Both at their defaults, 2 threads,
# greedy, the same 8 prompt ids ("abcdefgh"), 16 tokens.
set -eu
CK=$(cd "$1" && pwd)
OUT=$2
ROUNDS=${3:-3}
WARM=${4:-}
PEERS=${PEERS:-/work/peers}
C=$PEERS/chroot
CLI=${BURROW_CLI:-build/engine/cli/burrow-cli}
VIEW=/views/$(basename "$CK")
sh "$(dirname "$0")/view.sh" "$CK" "$C$VIEW"
SHARD=$(ls "$CK"/*.safetensors | head -1)
exec /usr/bin/python3 "$(dirname "$0")/compare.py" --out "$OUT" --rounds "$ROUNDS" $WARM \
  --probe-file "$SHARD" --probe-bs 16M --burrow-cli "$CLI" \
  --engine "burrow::$CLI run --model $CK --ids 97,98,99,100,101,102,103,104 --max-tokens 16 --threads 2 --stats --print-ids" \
  --engine "rabbit::chroot $C /usr/local/bin/rabbit --model $VIEW --prompt abcdefgh --max-tokens 16 --threads 2"
