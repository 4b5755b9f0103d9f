#!/usr/bin/python3
"""Expected numbers for the blocks of the Qwen3-MoE, DeepSeek-V3, gpt-oss, GLM-4.5 and
Qwen3-Next families (test-rope-yarn.c, test-router.c, test-gqa.c, test-gated-deltanet.c).

Written from transformers' semantics (main, 5.16.0.dev0) as described in
/work/shared/oracles/README.md and ARCHITECTURES.md: `_compute_yarn_parameters` and the
default RoPE in float32, `rotate_half` (split-half) and the interleaved form, the routers of
Qwen3-MoE and gpt-oss, eager GQA attention with q/k norms, biases, sinks, sliding windows
and an output gate, and Qwen3-Next's torch Gated DeltaNet. Plain Python (no torch
on the build machines): float32 rounding is applied where transformers computes in float32
(RoPE frequencies and angles), everything else is float64, well inside the C tests'
tolerances. Writes moe-blocks-ref.h next to this file.
"""
import math
import os

import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = []


def c_array(name, values, ctype="float"):
    vals = [float(v) for v in values] if ctype == "float" else [int(v) for v in values]
    body = ", ".join(("%.9ef" % v) if ctype == "float" else str(v) for v in vals)
    lines, line = [], ""
    for item in body.split(", "):
        if len(line) + len(item) > 92:
            lines.append(line.rstrip())
            line = ""
        line += item + ", "
    lines.append(line.rstrip().rstrip(","))
    OUT.append("static const %s %s[%d] = {\n  %s\n};\n" % (ctype, name, len(vals), "\n  ".join(lines)))


def define(name, value):
    OUT.append("#define %s %s\n" % (name, repr(value) if isinstance(value, float) else value))


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def randn(rng, n, scale=1.0):
    return [rng.gauss(0.0, 1.0) * scale for _ in range(n)]


# ---------------------------------------------------------------- RoPE

def get_mscale(scale, m=1.0):
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def yarn_inv(dim, base, factor, orig, beta_fast=32.0, beta_slow=1.0, truncate=True,
             mscale=None, mscale_all_dim=None):
    if mscale and mscale_all_dim:
        att = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
    else:
        att = get_mscale(factor)

    def corr_dim(rot):
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    inv = []
    for j in range(dim // 2):
        pf = f32(f32(base) ** f32(2 * j / dim))
        extrap = f32(1.0 / pf)
        interp = f32(1.0 / f32(f32(factor) * pf))
        ramp = min(max(f32((j - low) / (high - low)), 0.0), 1.0)
        keep = f32(1.0 - ramp)
        inv.append(f32(f32(interp * f32(1.0 - keep)) + f32(extrap * keep)))
    return inv, att


def default_inv(dim, base):
    return [f32(1.0 / f32(f32(base) ** f32(2 * j / dim))) for j in range(dim // 2)]


def rotate(x, inv, att, pos, rot, neox):
    """One head x (list), rotated in place over its first rot dims."""
    y = list(x)
    half = rot // 2
    for j in range(half):
        ang = f32(f32(pos) * inv[j])
        c, s = math.cos(ang) * att, math.sin(ang) * att
        i0, i1 = (j, j + half) if neox else (2 * j, 2 * j + 1)
        a, b = x[i0], x[i1]
        y[i0] = a * c - b * s
        y[i1] = b * c + a * s
    return y


def gen_rope():
    positions = [0, 1, 5, 31, 100, 4095, 4096, 70000]
    define("RY_N_POS", len(positions))
    c_array("ry_positions", positions, "int")
    rng = random.Random(5)
    # name, head_dim, rot, theta, neox, yarn kwargs or None
    cases = [
        ("neox_partial", 32, 8, 1e7, True, None),
        ("ds_yarn", 8, 8, 10000.0, False,
         dict(factor=40.0, orig=4096, mscale=1.0, mscale_all_dim=1.0)),
        ("ds_yarn_m", 16, 16, 10000.0, False,
         dict(factor=40.0, orig=4096, mscale=0.707, mscale_all_dim=1.0)),
        ("oss_yarn", 32, 32, 150000.0, True, dict(factor=32.0, orig=4096, truncate=False)),
    ]
    for name, hd, rot, theta, neox, yarn in cases:
        if yarn:
            kw = dict(yarn)
            inv, att = yarn_inv(rot, theta, kw.pop("factor"), kw.pop("orig"), **kw)
        else:
            inv, att = default_inv(rot, theta), 1.0
        xs, ys = [], []
        for p in positions:
            for h in range(3):
                x = randn(rng, hd)
                xs += x
                ys += rotate(x, inv, att, p, rot, neox)
        up = "RY_" + name.upper()
        define(up + "_HEAD", hd)
        define(up + "_ROT", rot)
        define(up + "_ATT", float(att))
        c_array("ry_%s_in" % name, xs)
        c_array("ry_%s_out" % name, ys)


# ---------------------------------------------------------------- routers

def softmax(v):
    m = max(v)
    e = [math.exp(x - m) for x in v]
    s = sum(e)
    return [x / s for x in e]


def topk(v, k):
    ids = sorted(range(len(v)), key=lambda i: (-v[i], i))[:k]
    return ids, [v[i] for i in ids]


def gen_router():
    rng = random.Random(9)
    E, K, T = 16, 4, 6
    define("RT_E", E)
    define("RT_K", K)
    define("RT_T", T)
    logits = [randn(rng, E, 2.0) for _ in range(T)]
    bias = randn(rng, E)
    sm_ids, sm_w, sm_wn, tk_ids, tk_w = [], [], [], [], []
    for row in logits:
        ids, w = topk(softmax(row), K)
        sm_ids += ids
        sm_w += w
        sm_wn += [x / sum(w) for x in w]
        ids, v = topk([a + b for a, b in zip(row, bias)], K)
        tk_ids += ids
        tk_w += softmax(v)
    c_array("rt_logits", [x for row in logits for x in row])
    c_array("rt_bias", bias)
    c_array("rt_softmax_ids", sm_ids, "int")
    c_array("rt_softmax_w", sm_w)
    c_array("rt_softmax_w_norm", sm_wn)
    c_array("rt_topk_ids", tk_ids, "int")
    c_array("rt_topk_w", tk_w)


# ---------------------------------------------------------------- GQA attention

def frand(rng, n, scale):
    return [f32(rng.gauss(0.0, 1.0) * scale) for _ in range(n)]


def matvec(w, x, rows, cols):
    return [sum(w[r * cols + c] * x[c] for c in range(cols)) for r in range(rows)]


def rmsnorm(x, w, eps):
    inv = 1.0 / math.sqrt(sum(v * v for v in x) / len(x) + eps)
    return [a * inv * b for a, b in zip(x, w)]


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


GQA_D, GQA_H, GQA_HKV, GQA_HD, GQA_N = 24, 4, 2, 16, 7


def gqa_case(name, rng, bias_qkv=False, bias_o=False, norm=False, sinks=False, window=0,
             gate=False, rot=GQA_HD, theta=1e6, yarn=None):
    D, H, Hkv, hd, N = GQA_D, GQA_H, GQA_HKV, GQA_HD, GQA_N
    qrows = H * hd * (2 if gate else 1)
    w = {
        "x": frand(rng, N * D, 1.0),
        "q": frand(rng, qrows * D, 0.3), "k": frand(rng, Hkv * hd * D, 0.3),
        "v": frand(rng, Hkv * hd * D, 0.3), "o": frand(rng, D * H * hd, 0.3),
    }
    if bias_qkv:
        w["qb"] = frand(rng, qrows, 0.5)
        w["kb"] = frand(rng, Hkv * hd, 0.5)
        w["vb"] = frand(rng, Hkv * hd, 0.5)
    if bias_o:
        w["ob"] = frand(rng, D, 0.5)
    if norm:
        w["qn"] = frand(rng, hd, 0.2)
        w["qn"] = [f32(1.0 + a) for a in w["qn"]]
        w["kn"] = [f32(1.0 + a) for a in frand(rng, hd, 0.2)]
    if sinks:
        w["sk"] = frand(rng, H, 1.0)
    if yarn:
        inv, att = yarn_inv(rot, theta, yarn, 4096, truncate=False)
    else:
        inv, att = default_inv(rot, theta), 1.0
    eps = 1e-6
    qs, ks, vs, gs = [], [], [], []
    for t in range(N):
        x = w["x"][t * D:(t + 1) * D]
        q = matvec(w["q"], x, qrows, D)
        k = matvec(w["k"], x, Hkv * hd, D)
        v = matvec(w["v"], x, Hkv * hd, D)
        if bias_qkv:
            q = [a + b for a, b in zip(q, w["qb"])]
            k = [a + b for a, b in zip(k, w["kb"])]
            v = [a + b for a, b in zip(v, w["vb"])]
        qh, gh = [], []
        for h in range(H):
            step = 2 * hd if gate else hd
            qq = q[h * step:h * step + hd]
            gh.append(q[h * step + hd:h * step + 2 * hd] if gate else None)
            if norm:
                qq = rmsnorm(qq, w["qn"], eps)
            qh.append(rotate(qq, inv, att, t, rot, True))
        kh = []
        for h in range(Hkv):
            kk = k[h * hd:(h + 1) * hd]
            if norm:
                kk = rmsnorm(kk, w["kn"], eps)
            kh.append(rotate(kk, inv, att, t, rot, True))
        qs.append(qh)
        ks.append(kh)
        vs.append([v[h * hd:(h + 1) * hd] for h in range(Hkv)])
        gs.append(gh)
    outs = []
    scale = hd ** -0.5
    for t in range(N):
        o = []
        for h in range(H):
            g = h // (H // Hkv)
            lo = max(t - window + 1, 0) if window else 0
            sc = [sum(a * b for a, b in zip(qs[t][h], ks[j][g])) * scale for j in range(lo, t + 1)]
            allv = sc + ([w["sk"][h]] if sinks else [])
            m = max(allv)
            e = [math.exp(s - m) for s in allv]
            tot = sum(e)
            oh = [sum(e[j - lo] / tot * vs[j][g][d] for j in range(lo, t + 1)) for d in range(hd)]
            if gate:
                oh = [a * sigmoid(b) for a, b in zip(oh, gs[t][h])]
            o += oh
        y = matvec(w["o"], o, D, H * hd)
        if bias_o:
            y = [a + b for a, b in zip(y, w["ob"])]
        outs += y
    up = "GQA_" + name.upper()
    define(up + "_ROT", rot)
    define(up + "_THETA", float(theta))
    define(up + "_WINDOW", window)
    define(up + "_YARN", float(yarn or 0))
    for key, arr in w.items():
        c_array("gqa_%s_%s" % (name, key), arr)
    c_array("gqa_%s_out" % name, outs)


def gen_gqa():
    rng = random.Random(23)
    define("GQA_D", GQA_D)
    define("GQA_H", GQA_H)
    define("GQA_HKV", GQA_HKV)
    define("GQA_HD", GQA_HD)
    define("GQA_N", GQA_N)
    gqa_case("qwen", rng, norm=True)
    gqa_case("oss", rng, bias_qkv=True, bias_o=True, sinks=True, window=3, theta=150000.0,
             yarn=32.0)
    gqa_case("next", rng, norm=True, gate=True, rot=4, theta=1e7)
    gqa_case("glm", rng, bias_qkv=True, norm=True, rot=8)


# ---------------------------------------------------------------- Gated DeltaNet

def softplus(z):
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def silu(z):
    return z / (1.0 + math.exp(-z))


def l2n(x, eps=1e-6):
    inv = 1.0 / math.sqrt(sum(v * v for v in x) + eps)
    return [v * inv for v in x]


def gen_gdn():
    rng = random.Random(31)
    D, Hk, Hv, dk, dv, K, N = 16, 2, 4, 4, 3, 4, 9
    r = Hv // Hk
    C = 2 * Hk * dk + Hv * dv
    W = 2 * Hk * dk + 2 * Hv * dv
    w = {
        "x": frand(rng, N * D, 1.0),
        "qkvz": frand(rng, W * D, 0.4),
        "ba": frand(rng, 2 * Hv * D, 0.4),
        "conv": frand(rng, C * K, 0.5),
        "alog": frand(rng, Hv, 0.5),
        "dt": frand(rng, Hv, 0.5),
        "norm": [f32(1.0 + a) for a in frand(rng, dv, 0.2)],
        "out": frand(rng, D * Hv * dv, 0.4),
    }
    eps = 1e-6
    hist = [[0.0] * C for _ in range(K - 1)]
    S = [[[0.0] * dv for _ in range(dk)] for _ in range(Hv)]
    outs = []
    for t in range(N):
        x = w["x"][t * D:(t + 1) * D]
        p = matvec(w["qkvz"], x, W, D)
        pb = matvec(w["ba"], x, 2 * Hv, D)
        q, k, v, z, b, a = [], [], [], [], [], []
        grp = 2 * dk + 2 * r * dv
        for g in range(Hk):
            src = p[g * grp:(g + 1) * grp]
            q += src[:dk]
            k += src[dk:2 * dk]
            v += src[2 * dk:2 * dk + r * dv]
            z += src[2 * dk + r * dv:]
            b += pb[g * 2 * r:g * 2 * r + r]
            a += pb[g * 2 * r + r:(g + 1) * 2 * r]
        mixed = q + k + v
        hist.append(mixed)
        conv = [silu(sum(w["conv"][c * K + j] * hist[len(hist) - K + j][c] for j in range(K)))
                for c in range(C)]
        qa, ka, va = conv[:Hk * dk], conv[Hk * dk:2 * Hk * dk], conv[2 * Hk * dk:]
        o = []
        for h in range(Hv):
            kh = h // r
            qq = [e * dk ** -0.5 for e in l2n(qa[kh * dk:(kh + 1) * dk])]
            kk = l2n(ka[kh * dk:(kh + 1) * dk])
            vv = va[h * dv:(h + 1) * dv]
            beta = sigmoid(b[h])
            g_ = -math.exp(w["alog"][h]) * softplus(a[h] + w["dt"][h])
            Sh = [[e * math.exp(g_) for e in row] for row in S[h]]
            mem = [sum(Sh[i][j] * kk[i] for i in range(dk)) for j in range(dv)]
            delta = [(vv[j] - mem[j]) * beta for j in range(dv)]
            Sh = [[Sh[i][j] + kk[i] * delta[j] for j in range(dv)] for i in range(dk)]
            S[h] = Sh
            oh = [sum(Sh[i][j] * qq[i] for i in range(dk)) for j in range(dv)]
            oh = rmsnorm(oh, w["norm"], eps)
            o += [e * silu(zz) for e, zz in zip(oh, z[h * dv:(h + 1) * dv])]
        outs += matvec(w["out"], o, D, Hv * dv)
    for key, val in (("D", D), ("HK", Hk), ("HV", Hv), ("DK", dk), ("DV", dv), ("K", K),
                     ("N", N)):
        define("GDN_" + key, val)
    for key, arr in w.items():
        c_array("gdn_%s" % key, arr)
    c_array("gdn_out_ref", outs)


# ---------------------------------------------------------------- gpt-oss expert activation

def gen_clamped():
    rng = random.Random(41)
    n = 24
    gu = frand(rng, 2 * n, 5.0)          # large enough that the limit 7 is hit
    alpha, limit = 1.702, 7.0
    out = []
    for i in range(n):
        g = min(gu[2 * i], limit)
        u = min(max(gu[2 * i + 1], -limit), limit)
        out.append((u + 1) * g * sigmoid(g * alpha))
    define("CL_N", n)
    c_array("cl_gate_up", gu)
    c_array("cl_out", out)


GENERATORS = [gen_rope, gen_router, gen_gqa, gen_gdn, gen_clamped]


def main():
    for g in GENERATORS:
        g()
    with open(os.path.join(HERE, "moe-blocks-ref.h"), "w") as f:
        f.write("/* Generated by gen-moe-blocks-ref.py: do not edit. */\n#pragma once\n\n")
        f.write("\n".join(OUT))


if __name__ == "__main__":
    main()
