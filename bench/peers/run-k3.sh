#!/bin/sh
# K3-shaped checkpoint at 1.5x RAM: Burrow vs rabbit, no cgroup.
#
#   sh bench/peers/run-k3.sh CHECKPOINT OUT.json [ROUNDS]
#
# CHECKPOINT: burrow-cli synth --family kimi_k3 --layers 6 (36 GB here); rabbit reads a view of
# it (view.sh) inside the sid chroot. run-pair.sh does the runs (cold and warm).
set -eu
exec env PEER=rabbit LIMIT= sh "$(dirname "$0")/run-pair.sh" "$1" "$2" "${3:-3}"
