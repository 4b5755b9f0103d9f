#!/bin/sh
# Install llama.cpp (CPU) and its HF->GGUF converter in the sid chroot, from Debian's archive.
#
#   sh bench/peers/build-llama.sh [PEERS]          (PEERS: /work/peers)
#
# Debian sid packages llama.cpp 0.7.0 (upstream build 11669), which has the kimi_linear and
# kimi_k3 architectures, and ggml 0.27 with one CPU backend per x86 level chosen at run time
# (haswell = AVX2+FMA on this EPYC): the same CPU build `cmake -B build && cmake --build build`
# makes from upstream's source, without fetching that source. llama-completion is then
# PEERS/chroot/usr/bin/llama-completion (run it through chroot), and bench/peers/hf-to-gguf.py
# wraps Debian's convert_hf_to_gguf.py (python3-torch; transformers stubbed, byte vocabulary).
set -eu
PEERS=${1:-/work/peers}
C=$PEERS/chroot
HERE=$(cd "$(dirname "$0")" && pwd)

sh "$HERE/chroot.sh" "$PEERS"
# sid later folded libggml0-backend-cpu into libggml0 (same ggml 0.27, same CPU backends).
CPU=libggml0-backend-cpu
chroot "$C" apt-cache policy "$CPU" | grep -q "Candidate: [0-9]" || CPU=libggml0
chroot "$C" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  llama.cpp-tools "$CPU" python3-gguf python3-torch
install -m 755 "$HERE/hf-to-gguf.py" "$C/usr/local/bin/hf-to-gguf.py"
chroot "$C" llama-completion --version
