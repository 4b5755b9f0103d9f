#!/usr/bin/python3
"""Expected numbers for test-kimi-blocks.c: RMSNorm, the gated activations (SwiGLU, situ),
the sigmoid noaux_tc router, MLA (reconstructed K/V, full softmax matrix, optional Q-LoRA,
output gate, a RoPE hook and per-query key masks), KDA (both decay gates, both output
gates) and the attention-residual pool.

Written from ARCHITECTURES.md 1.2-1.5 and 3.3 in plain torch float32, in whole-sequence
form (attention as one masked softmax matrix, KDA as fla's naive recurrence) so it shares
no structure with the engine's tiled / absorbed / chunked code. Run with Debian's
/usr/bin/python3; writes kimi-blocks-ref.h next to this file.
"""
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(20240611)
out = []


def emit(name, t, ctype="float"):
    vals = t.flatten().tolist()
    if ctype == "float":
        items = ["%.9ef" % v for v in vals]
    else:
        items = [str(int(v)) for v in vals]
    lines, line = [], ""
    for it in items:
        if len(line) + len(it) + 2 > 92:
            lines.append(line.rstrip())
            line = ""
        line += it + ", "
    lines.append(line.rstrip().rstrip(","))
    out.append("static const %s %s[%d] = {\n  %s\n};\n" % (ctype, name, len(vals), "\n  ".join(lines)))


def define(name, value):
    out.append("#define %s %s\n" % (name, value))


def randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=torch.float32) * scale


def rmsnorm(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


# ---- RMSNorm ----
x = randn(3, 16)
w = randn(16)
emit("rms_x", x)
emit("rms_w", w)
emit("rms_out", rmsnorm(x, w, 1e-5))

# ---- gated activations ----
g = randn(40, scale=3.0)
u = randn(40, scale=3.0)
g[0], u[0] = 60.0, 80.0  # saturation
emit("act_g", g)
emit("act_u", u)
emit("act_swiglu", F.silu(g) * u)
emit("act_situ", 4.0 * torch.tanh(g / 4.0) * torch.sigmoid(g) * (25.0 * torch.tanh(u / 25.0)))
emit("act_situ_plain", torch.tanh(g) * torch.sigmoid(g) * u)


# ---- router ----
def route(logits, bias, k, n_group, topk_group, renorm, scaling, biased, mask_zero):
    s = torch.sigmoid(logits)
    c = s + bias
    if biased:
        s = c.clone()
    E = logits.shape[0]
    if n_group > 1:
        gs = c.view(n_group, -1).topk(2, dim=-1).values.sum(-1)
        keep = torch.zeros(n_group, dtype=torch.bool)
        keep[gs.topk(topk_group).indices] = True
        m = keep[:, None].expand(n_group, E // n_group).reshape(E)
        c = c.masked_fill(~m, 0.0 if mask_zero else float("-inf"))
    idx = c.topk(k).indices
    wts = s[idx]
    if renorm:
        wts = wts / (wts.sum() + 1e-20)
    return idx, wts * scaling


E = 16
rl = randn(E, scale=2.0)
rb = torch.linspace(-0.1, 0.1, E)
emit("router_logits", rl)
emit("router_bias", rb)
ida, wa = route(rl, rb, 4, 4, 2, True, 2.5, False, False)
idb, wb = route(rl, rb, 3, 1, 1, True, 2.446, True, True)
idc, wc = route(rl, rb, 2, 1, 1, False, 1.0, False, False)
emit("router_a_ids", ida, "int")
emit("router_a_w", wa)
emit("router_b_ids", idb, "int")
emit("router_b_w", wb)
emit("router_c_ids", idc, "int")
emit("router_c_w", wc)


# ---- MLA ----
def test_rope(v, pos):
    """The hook used by the test: pair (2j, 2j+1) turned by pos * 0.3 / (j + 1)."""
    v = v.clone()
    for j in range(v.shape[-1] // 2):
        a = torch.tensor(pos * 0.3 / (j + 1), dtype=torch.float32)
        c, s = torch.cos(a), torch.sin(a)
        x0, x1 = v[..., 2 * j].clone(), v[..., 2 * j + 1].clone()
        v[..., 2 * j] = x0 * c - x1 * s
        v[..., 2 * j + 1] = x0 * s + x1 * c
    return v


D, H, dn, dr, dv, R, Q, T = 12, 3, 4, 2, 3, 6, 5, 7
dq = dn + dr
mx = randn(T, D)
q_proj = randn(H * dq, D, scale=0.4)
q_a = randn(Q, D, scale=0.4)
q_a_norm = randn(Q)
q_b = randn(H * dq, Q, scale=0.4)
kv_a = randn(R + dr, D, scale=0.4)
kv_a_norm = randn(R)
kv_b = randn(H * (dn + dv), R, scale=0.4)
o_proj = randn(D, H * dv, scale=0.4)
g_proj = randn(H * dv, D, scale=0.4)
# Per-query allowed keys: causal, always the own position, and a pseudo-random subset.
allowed = torch.zeros(T, T, dtype=torch.bool)
for i in range(T):
    for t in range(i + 1):
        allowed[i, t] = t == i or (t * 5 + i * 3) % 4 != 0


def mla(x, qlora, gate, rope, mask):
    if qlora:
        cq = rmsnorm(x @ q_a.T, q_a_norm, 1e-6)
        q = cq @ q_b.T
    else:
        q = x @ q_proj.T
    q = q.view(T, H, dq)
    a = x @ kv_a.T
    ckv = rmsnorm(a[:, :R], kv_a_norm, 1e-6)
    kr = a[:, R:]
    qn, qr = q[..., :dn], q[..., dn:]
    if rope:
        qr = torch.stack([test_rope(qr[t], t) for t in range(T)])
        kr = torch.stack([test_rope(kr[t], t) for t in range(T)])
    kv = (ckv @ kv_b.T).view(T, H, dn + dv)
    kn, v = kv[..., :dn], kv[..., dn:]
    scores = (torch.einsum("shd,thd->hst", qn, kn) + torch.einsum("shd,td->hst", qr, kr)) * dq ** -0.5
    scores = scores.masked_fill(~mask[None], float("-inf"))
    p = scores.softmax(-1)
    o = torch.einsum("hst,thd->shd", p, v).reshape(T, H * dv)
    if gate:
        o = o * torch.sigmoid(x @ g_proj.T)
    return o @ o_proj.T


causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
define("MLA_D", D)
define("MLA_H", H)
define("MLA_DN", dn)
define("MLA_DR", dr)
define("MLA_DV", dv)
define("MLA_R", R)
define("MLA_Q", Q)
define("MLA_T", T)
for name, t in [("x", mx), ("q_proj", q_proj), ("q_a", q_a), ("q_a_norm", q_a_norm), ("q_b", q_b),
                ("kv_a", kv_a), ("kv_a_norm", kv_a_norm), ("kv_b", kv_b), ("o_proj", o_proj),
                ("g_proj", g_proj)]:
    emit("mla_" + name, t)
emit("mla_allowed", allowed.to(torch.int32), "int")
emit("mla_out_plain", mla(mx, False, False, False, causal))
emit("mla_out_k3", mla(mx, True, True, False, causal))
emit("mla_out_rope", mla(mx, True, False, True, causal))
emit("mla_out_select", mla(mx, False, False, True, allowed))


# ---- KDA ----
D, Hk, d, Kc, T = 12, 2, 4, 4, 9
P = Hk * d
kx = randn(T, D)
kw = {n: randn(P, D, scale=0.4) for n in ("q", "k", "v")}
kconv = {n: randn(P, Kc, scale=0.5) for n in ("q", "k", "v")}
f_a = randn(d, D, scale=0.4)
f_b = randn(P, d, scale=0.4)
dt_bias = randn(P, scale=0.5)
a_log = randn(Hk, scale=0.5)
b_proj = randn(Hk, D, scale=0.4)
g_a = randn(d, D, scale=0.4)
g_b = randn(P, d, scale=0.4)
g_full = randn(P, D, scale=0.4)
o_norm = randn(d)
ko_proj = randn(D, P, scale=0.4)


def conv_silu(y, w):
    pad = torch.cat([torch.zeros(Kc - 1, P), y], 0)  # [T + Kc - 1, P]
    out = torch.stack([(pad[t:t + Kc] * w.T).sum(0) for t in range(T)])
    return F.silu(out)


def kda(x, bounded, full_rank):
    q = conv_silu(x @ kw["q"].T, kconv["q"]).view(T, Hk, d)
    k = conv_silu(x @ kw["k"].T, kconv["k"]).view(T, Hk, d)
    v = conv_silu(x @ kw["v"].T, kconv["v"]).view(T, Hk, d)
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * d ** -0.5
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    z = ((x @ f_a.T) @ f_b.T + dt_bias).view(T, Hk, d)
    A = a_log.exp()[None, :, None]
    g = -5.0 * torch.sigmoid(A * z) if bounded else -A * F.softplus(z)
    beta = torch.sigmoid(x @ b_proj.T)
    S = torch.zeros(Hk, d, d)
    o = torch.zeros(T, Hk, d)
    for t in range(T):
        S = S * g[t].exp()[:, :, None]
        u = v[t] - torch.einsum("hi,hij->hj", k[t], S)
        S = S + beta[t][:, None, None] * torch.einsum("hi,hj->hij", k[t], u)
        o[t] = torch.einsum("hi,hij->hj", q[t], S)
    r = x @ g_full.T if full_rank else (x @ g_a.T) @ g_b.T
    o = rmsnorm(o, o_norm, 1e-5) * torch.sigmoid(r.view(T, Hk, d))
    return o.reshape(T, P) @ ko_proj.T


define("KDA_D", D)
define("KDA_HK", Hk)
define("KDA_HD", d)
define("KDA_KC", Kc)
define("KDA_T", T)
emit("kda_x", kx)
for n in ("q", "k", "v"):
    emit("kda_%s_proj" % n, kw[n])
    emit("kda_%s_conv" % n, kconv[n])
for name, t in [("f_a", f_a), ("f_b", f_b), ("dt_bias", dt_bias), ("a_log", a_log),
                ("b_proj", b_proj), ("g_a", g_a), ("g_b", g_b), ("g_full", g_full),
                ("o_norm", o_norm), ("o_proj", ko_proj)]:
    emit("kda_" + name, t)
emit("kda_out_linear", kda(kx, False, False))
emit("kda_out_k3", kda(kx, True, True))

# ---- attention-residual pool ----
rows = randn(3, 16, scale=2.0)
nw = randn(16)
pw = randn(16)
sc = (rmsnorm(rows, nw, 1e-5) * pw).sum(-1)
emit("ares_rows", rows)
emit("ares_norm", nw)
emit("ares_proj", pw)
emit("ares_out", (sc.softmax(0)[:, None] * rows).sum(0))

with open(os.path.join(HERE, "kimi-blocks-ref.h"), "w") as f:
    f.write("/* Generated by gen-kimi-blocks-ref.py: do not edit. */\n#pragma once\n\n")
    f.write("\n".join(out))
