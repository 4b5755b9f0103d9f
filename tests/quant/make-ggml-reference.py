#!/usr/bin/env python3
"""Writes tests/quant/ggml-reference.bin: blocks of every GGML type Burrow reads and their
dequantization by gguf-py's numpy `gguf.quants` (Debian sid's python3-gguf), which
tests/quant/test-ggml-dequant.c compares with Burrow's bit for bit.

    python3 tests/quant/make-ggml-reference.py tests/quant/ggml-reference.bin

Per type: random blocks (random codes, f16 scales of any finite value), an all-zero block,
blocks with extreme scales (f16 max, -max, smallest subnormal, smallest normal, zero) and,
for the grid types, blocks that use every grid index and every sign index in turn.

File: "BWGGREF1", then per type: u32 type id, u32 block count, u32 block bytes, u32 block
elements, the blocks, then the f32 values (all little-endian)."""
import struct
import sys

import numpy as np
from gguf import quants as q
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

RNG = np.random.default_rng(20261207)

# Where each type keeps its f16 scales (byte offsets in the block).
F16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ2_XXS: [0], T.IQ2_XS: [0], T.IQ3_XXS: [0], T.IQ1_S: [0], T.IQ4_NL: [0],
    T.IQ3_S: [0], T.IQ2_S: [0], T.IQ4_XS: [0], T.TQ1_0: [52], T.TQ2_0: [64],
    T.IQ1_M: [], T.MXFP4: [],
}
EXTREME_F16 = [0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x0400, 0x0000, 0x3C00]


def finite_f16(n):
    v = RNG.integers(0, 1 << 16, size=n, dtype=np.uint32)
    bad = (v & 0x7C00) == 0x7C00
    v[bad] &= ~np.uint32(0x4000)  # an Inf/NaN exponent becomes a finite one
    return v.astype(np.uint16)


def set_f16(block, off, value):
    block[off:off + 2] = np.frombuffer(struct.pack("<H", int(value)), dtype=np.uint8)


def iq1m_fix_scale(block, value=None):
    """IQ1_M's f16 scale is the top nibbles of the four u16 at bytes 48..55."""
    s = np.frombuffer(block[48:56].tobytes(), dtype="<u2").copy()
    d = int(value) if value is not None else int(finite_f16(1)[0])
    for i in range(4):
        s[i] = (s[i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12)
    block[48:56] = np.frombuffer(s.astype("<u2").tobytes(), dtype=np.uint8)


def random_block(t, size):
    b = RNG.integers(0, 256, size=size, dtype=np.uint8)
    for off in F16_FIELDS[t]:
        set_f16(b, off, finite_f16(1)[0])
    if t == T.IQ1_M:
        iq1m_fix_scale(b)
    return b


def with_scale(t, b, value):
    b = b.copy()
    for off in F16_FIELDS[t]:
        set_f16(b, off, value)
    if t == T.IQ1_M:
        iq1m_fix_scale(b, value)
    return b


def put_u16(b, off, v):
    b[off:off + 2] = np.frombuffer(struct.pack("<H", v & 0xFFFF), dtype=np.uint8)


def grid_blocks(t, size):
    """Blocks whose grid indices (and sign indices) run through every value."""
    out = []
    if t == T.IQ2_XXS:  # 8 groups' indices in bytes 2 + 8 ib + k; sign indices in the u32
        for n in range(8):
            b = random_block(t, size)
            for ib in range(8):
                for k in range(4):
                    b[2 + 8 * ib + k] = (n * 32 + ib * 4 + k) % 256
                aux = int.from_bytes(b[6 + 8 * ib:10 + 8 * ib].tobytes(), "little") & 0xF0000000
                for k in range(4):
                    aux |= ((n * 32 + ib * 4 + k) % 128) << (7 * k)
                b[6 + 8 * ib:10 + 8 * ib] = np.frombuffer(aux.to_bytes(4, "little"), dtype=np.uint8)
            out.append(b)
    elif t == T.IQ2_XS:
        for n in range(16):
            b = random_block(t, size)
            for g in range(32):
                put_u16(b, 2 + 2 * g, (n * 32 + g) | (((n * 32 + g) % 128) << 9))
            out.append(b)
    elif t == T.IQ2_S:
        for n in range(32):
            b = random_block(t, size)
            b[66:74] = 0
            for g in range(32):
                idx = n * 32 + g
                b[2 + g] = idx & 0xFF
                b[66 + g // 4] |= (idx >> 8) << (2 * (g % 4))
            out.append(b)
    elif t == T.IQ3_XXS:
        for n in range(4):
            b = random_block(t, size)
            b[2:66] = np.arange(n * 64, n * 64 + 64, dtype=np.uint8)
            out.append(b)
    elif t == T.IQ3_S:
        for n in range(8):
            b = random_block(t, size)
            b[66:74] = 0
            for g in range(64):
                idx = n * 64 + g
                b[2 + g] = idx & 0xFF
                b[66 + g // 8] |= (idx >> 8) << (g % 8)
            out.append(b)
    elif t == T.IQ1_S:
        for n in range(64):
            b = random_block(t, size)
            for ib in range(8):
                qh = int.from_bytes(b[34 + 2 * ib:36 + 2 * ib].tobytes(), "little") & 0xF000
                for k in range(4):
                    idx = n * 32 + ib * 4 + k
                    b[2 + 4 * ib + k] = idx & 0xFF
                    qh |= (idx >> 8) << (3 * k)
                put_u16(b, 34 + 2 * ib, qh)
            out.append(b)
    elif t == T.IQ1_M:
        for n in range(64):
            b = random_block(t, size)
            for g in range(32):
                idx = n * 32 + g
                b[g] = idx & 0xFF
                sh = 4 * (g % 2)
                b[32 + g // 2] = (int(b[32 + g // 2]) & (0xFF ^ (7 << sh))) | ((idx >> 8) << sh)
            out.append(b)
    return out


def reference(t, blocks):
    data = np.concatenate(blocks).astype(np.uint8)
    if t == T.MXFP4 and not hasattr(q, "MXFP4"):
        raise SystemExit("this gguf-py has no MXFP4")
    return np.asarray(q.dequantize(data, t), dtype=np.float32).reshape(-1)


def plain_values(t):
    """F32, F16 and BF16 as 1-element blocks: every f16 and bf16 exponent, random bits."""
    if t == T.F32:
        v = RNG.integers(0, 1 << 32, size=512, dtype=np.uint64).astype(np.uint32)
        v[(v & 0x7F800000) == 0x7F800000] &= ~np.uint32(0x40000000)
        return [np.frombuffer(x.tobytes(), dtype=np.uint8) for x in v.astype("<u4")]
    v = finite_f16(512) if t == T.F16 else RNG.integers(0, 1 << 16, size=512, dtype=np.uint32)
    if t == T.BF16:
        v[(v & 0x7F80) == 0x7F80] &= ~np.uint32(0x4000)
    return [np.frombuffer(np.uint16(x).astype("<u2").tobytes(), dtype=np.uint8) for x in v]


TYPES = [T.F32, T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K,
         T.Q4_K, T.Q5_K, T.Q6_K, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S,
         T.IQ1_M, T.IQ4_NL, T.IQ4_XS, T.TQ1_0, T.TQ2_0, T.MXFP4]


def main():
    out = bytearray(b"BWGGREF1")
    for t in TYPES:
        elems, size = GGML_QUANT_SIZES[t]
        if t in (T.F32, T.F16, T.BF16):
            blocks = plain_values(t)
        else:
            blocks = [random_block(t, size) for _ in range(8)]
            blocks.append(np.zeros(size, dtype=np.uint8))
            if t == T.MXFP4:
                for e in (0, 1, 2, 127, 254, 255):
                    b = random_block(t, size)
                    b[0] = e
                    blocks.append(b)
            else:
                blocks += [with_scale(t, random_block(t, size), v) for v in EXTREME_F16]
            blocks += grid_blocks(t, size)
        ref = reference(t, blocks)
        assert ref.size == len(blocks) * elems, t.name
        out += struct.pack("<4I", int(t), len(blocks), size, elems)
        out += np.concatenate(blocks).astype(np.uint8).tobytes()
        out += ref.astype("<f4").tobytes()
        print(f"{t.name}: {len(blocks)} blocks", file=sys.stderr)
    with open(sys.argv[1], "wb") as f:
        f.write(out)


main()
