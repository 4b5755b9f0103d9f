#!/bin/sh
# Burrow beside a peer engine on one checkpoint, alternating, in a memory cgroup or not.
#
#   [PEER=llama|rabbit] [LIMIT=BYTES|N/D] [ISA=avx2] [APPEND=1] [PROBE_BS=16M] [PREPARE_MEMORY=1]
#     sh bench/peers/run-pair.sh MODEL OUT.json [ROUNDS]
#
# MODEL: what Burrow runs, a checkpoint folder or a .gguf file. llama.cpp (llama-completion,
# mmap) runs the GGUF: MODEL itself, or MODEL.gguf beside a folder (hf-to-gguf.py's copy).
# rabbit runs a safetensors folder through a view (view.sh: symlinks + byte-level tokenizer).
# The peers run in the sid chroot (PEERS/chroot), which sees MODEL's folder at the same path
# (bind-mounted read-only here unless already mounted).
# LIMIT: the memory cgroup's limit in bytes, or N/D of MODEL's size on disk (2/3: the model
# is 1.5x the limit); empty: no cgroup. ISA=avx2: both engines at the AVX2 level (Burrow's
# --isa, llama.cpp's haswell CPU backend; see llama-isa.sh). APPEND=1 adds the rounds to
# OUT.json (one round per quiet command). PROBE_BS: fio's read size (one expert's bytes;
# "expert": a GGUF's own, from gguf-expert-bytes.py). PREPARE_MEMORY=1: compare.py's
# --prepare-memory (free memory written once before each run; for a VM whose host takes
# free memory back).
# Both engines at their defaults, 2 threads, greedy, the same prompt, 16 tokens: TEXT for the
# peers, IDS for Burrow (byte-level vocabularies: "abcdefgh" is ids 97-104; a GGUF's own
# tokenizer makes them of TEXT).
set -eu
[ -e "$1" ] || { echo "run-pair.sh: $1: no such checkpoint" >&2; exit 2; }
MODEL=$(realpath "$1")
OUT=$2
ROUNDS=${3:-3}
PEERS=${PEERS:-/work/peers}
C=$PEERS/chroot
HERE=$(cd "$(dirname "$0")" && pwd)
CLI=${BURROW_CLI:-build/engine/cli/burrow-cli}
TEXT=${TEXT:-abcdefgh}
IDS=${IDS:-97,98,99,100,101,102,103,104}
# A GGUF has its own vocabulary: Burrow gets the ids its tokenizer makes of TEXT.
case $MODEL in *.gguf) IDS=$("$CLI" tokenize --model "$MODEL" "$TEXT") ;; esac
LIMIT=${LIMIT-}

see_in_chroot() {   # the folder holding $1 at the same path inside the chroot
  d=$(dirname "$1")
  case $d in "$C"/*) return ;; esac
  if ! mountpoint -q "$C$d"; then
    mkdir -p "$C$d"
    mount --bind "$d" "$C$d"
    mount -o remount,bind,ro "$C$d"
  fi
}

BURROW_ISA= PEER_PREFIX=
if [ "${ISA:-}" = avx2 ]; then
  BURROW_ISA="--isa avx2"
  PEER_PREFIX="sh $HERE/llama-isa.sh $C haswell"
fi
case ${PEER:-llama} in
  llama)
    GGUF=$MODEL
    [ -d "$MODEL" ] && GGUF=$MODEL.gguf
    see_in_chroot "$GGUF"
    PEER_CMD="llama.cpp::$PEER_PREFIX chroot $C llama-completion -m $GGUF -p $TEXT -n 16 --temp 0 -t 2 -no-cnv" ;;
  rabbit)
    VIEW=/views/$(basename "$MODEL")
    sh "$HERE/view.sh" "$MODEL" "$C$VIEW"
    see_in_chroot "$MODEL/config.json"
    PEER_CMD="rabbit::chroot $C /usr/local/bin/rabbit --model $VIEW --prompt $TEXT --max-tokens 16 --threads 2" ;;
  *) echo "run-pair.sh: PEER is llama or rabbit" >&2; exit 2 ;;
esac

case $LIMIT in
  */*) LIMIT=$(du -sb --apparent-size "$MODEL" | awk -v f="$LIMIT" \
         '{ split(f, q, "/"); printf "%.0f", $1 * q[1] / q[2] }') ;;
esac
PROBE_FILE=$MODEL
[ -d "$MODEL" ] && PROBE_FILE=$(ls -S "$MODEL"/*.safetensors | head -1)
PROBE_BS=${PROBE_BS:-16M}
if [ "$PROBE_BS" = expert ]; then
  see_in_chroot "$MODEL"
  PROBE_BS=$(chroot "$C" python3 - "$MODEL" < "$HERE/gguf-expert-bytes.py")
fi

exec /usr/bin/python3 "$HERE/compare.py" --out "$OUT" --rounds "$ROUNDS" --warm \
  ${APPEND:+--append} ${PREPARE_MEMORY:+--prepare-memory} --cgroup-limit "${LIMIT:-0}" --probe-file "$PROBE_FILE" \
  --probe-bs "$PROBE_BS" --probe-depths "${PROBE_DEPTHS:-1,4,16}" \
  --probe-seconds "${PROBE_SECONDS:-5}" --burrow-cli "$CLI" \
  --engine "burrow::$CLI run --model $MODEL --ids $IDS --max-tokens 16 --threads 2 $BURROW_ISA --stats --print-ids" \
  --engine "$PEER_CMD"
