#!/bin/sh
# Kimi-Linear-shaped checkpoint at 1.5x a memory cgroup's limit: Burrow vs llama.cpp.
#
#   [PEER=rabbit] sh bench/peers/run-kl.sh OUT.json [ROUNDS] [LIMIT_BYTES]
#
# PEER: llama (default: llama-completion on kl.gguf, mmap) or rabbit (the safetensors
# themselves, with the byte-level tokenizer written beside them).
# Expects (README.md, "Rebuild"): PEERS/chroot/models/kl (burrow-cli synth --family kimi_linear
# --layers 4 --size-gb 5.8), PEERS/chroot/models/kl.gguf (hf-to-gguf.py of it), llama.cpp
# installed in the chroot, burrow-cli built in build/. Both engines at their defaults, 2
# threads, greedy, the same 8 prompt ids ("abcdefgh"), 16 tokens.
set -eu
OUT=$1
ROUNDS=${2:-3}
LIMIT=${3:-3865470566}          # 3.6 GiB: the 5.8 GB checkpoint is 1.5x of it
PEERS=${PEERS:-/work/peers}
C=$PEERS/chroot
CLI=${BURROW_CLI:-build/engine/cli/burrow-cli}
IDS=97,98,99,100,101,102,103,104
case ${PEER:-llama} in
  llama) PEER_CMD="llama.cpp::chroot $C llama-completion -m /models/kl.gguf -p abcdefgh -n 16 --temp 0 -t 2 -no-cnv" ;;
  rabbit)
    /usr/bin/python3 "$(dirname "$0")/write-tokenizer.py" "$C/models/kl"
    PEER_CMD="rabbit::chroot $C /usr/local/bin/rabbit --model /models/kl --prompt abcdefgh --max-tokens 16 --threads 2" ;;
  *) echo "run-kl.sh: PEER is llama or rabbit" >&2; exit 2 ;;
esac
exec /usr/bin/python3 "$(dirname "$0")/compare.py" --out "$OUT" --rounds "$ROUNDS" --warm \
  --cgroup-limit "$LIMIT" --probe-file "$C/models/kl/model-00001-of-00002.safetensors" \
  --probe-bs 14M --burrow-cli "$CLI" \
  --engine "burrow::$CLI run --model $C/models/kl --ids $IDS --max-tokens 16 --threads 2 --stats --print-ids" \
  --engine "$PEER_CMD"
