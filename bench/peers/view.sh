#!/bin/sh
# Make a writable view of a read-only checkpoint for the peers: symlinks to its files plus
# the byte-level tokenizer (write-tokenizer.py). rabbit writes its learned expert usage
# (.rabbit_usage) into the model folder and needs tiktoken.model there; the original stays
# untouched.
#
#   sh bench/peers/view.sh CHECKPOINT VIEW
set -eu
SRC=$(cd "$1" && pwd)
VIEW=$2
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$VIEW"
for f in "$SRC"/*; do
  ln -sfn "$f" "$VIEW/$(basename "$f")"
done
/usr/bin/python3 "$HERE/write-tokenizer.py" "$VIEW"
