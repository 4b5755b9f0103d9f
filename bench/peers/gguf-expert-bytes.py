#!/usr/bin/python3
"""Print one routed expert's bytes in a GGUF file: its gate, up and down slices together.

    chroot PEERS/chroot python3 - FILE.gguf < gguf-expert-bytes.py

Runs in the sid chroot (python3-gguf). Takes the first layer with stacked experts
(blk.N.ffn_{gate,up,down}_exps.weight, experts on the last axis of the GGUF shape), so that
fio can read the same size Burrow reads for one expert (rounded up to 4 KiB: O_DIRECT reads
whole blocks).
"""
import re
import sys

import gguf


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gguf-expert-bytes.py FILE.gguf")
    layers = {}
    for t in gguf.GGUFReader(sys.argv[1]).tensors:
        m = re.fullmatch(r"blk\.(\d+)\.ffn_(gate|up|down)_exps\.weight", t.name)
        if m:
            layers.setdefault(int(m.group(1)), []).append(t)
    if not layers:
        sys.exit(f"{sys.argv[1]}: no stacked expert tensors (blk.N.ffn_*_exps.weight)")
    first = layers[min(layers)]
    size = sum(int(t.n_bytes) // int(t.shape[-1]) for t in first)
    print(-(-size // 4096) * 4096)


if __name__ == "__main__":
    main()
