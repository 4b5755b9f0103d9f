#!/usr/bin/python3
"""Expected output of a whole Gated DeltaNet block (Qwen3-Next's linear attention) over 150
tokens, for test-gdn-chunked.c: more than two chunks of 64, so the chunked prefill's
chunk boundaries, its partial last chunk and the state carried between calls are all
exercised.

Written from the semantics in /work/shared/oracles/README.md (transformers' torch path:
grouped in_proj_qkvz / in_proj_ba, causal depthwise conv + SiLU, L2-normalised q and k with
q scaled by dk^-1/2, beta = sigmoid(b), g = -exp(A_log) softplus(a + dt_bias), the chunked
gated delta rule with chunks of 64, the gated RMSNorm, out_proj). Needs torch (Debian:
python3-torch). The weights are rounded to float32 (what the C test stores); the block runs
in float64, and the chunked rule is checked against the token-by-token recurrence before
anything is written. Writes gdn-chunked-ref.h next to this file.
"""
import os

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
D, HK, HV, DK, DV, KC, N, CHUNK = 24, 2, 4, 16, 12, 4, 150, 64
EPS, L2_EPS = 1e-6, 1e-6
R = HV // HK
C = 2 * HK * DK + HV * DV
W = 2 * HK * DK + 2 * HV * DV


def weights():
    gen = torch.Generator().manual_seed(2323)

    def uni(n, scale):
        return ((torch.rand(n, generator=gen) * 2 - 1) * scale).to(torch.float32)

    return {
        "x": uni(N * D, 1.0),
        "qkvz": uni(W * D, 0.4),
        "ba": uni(2 * HV * D, 0.4),
        "conv": uni(C * KC, 0.5),
        "alog": uni(HV, 0.5),
        "dt": uni(HV, 0.5),
        "norm": 1.0 + uni(DV, 0.2),
        "out": uni(D * HV * DV, 0.4),
    }


def l2norm(x):
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + L2_EPS)


def chunked_rule(q, k, v, g, beta):
    """q, k [H, T, dk]; v [H, T, dv]; g, beta [H, T]. Chunks of CHUNK, zero padded."""
    H, T, _ = k.shape
    pad = (-T) % CHUNK
    q, k, v = (F.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    g, beta = (F.pad(t, (0, pad)) for t in (g, beta))
    n = (T + pad) // CHUNK
    q, k, v = (t.reshape(H, n, CHUNK, -1) for t in (q, k, v))
    g, beta = g.reshape(H, n, CHUNK), beta.reshape(H, n, CHUNK)
    G = g.cumsum(-1)
    lower = torch.tril(torch.ones(CHUNK, CHUNK, dtype=torch.bool))
    decay = (G[..., :, None] - G[..., None, :]).masked_fill(~lower, float("-inf")).exp()
    kb, vb = k * beta[..., None], v * beta[..., None]
    strict = (kb @ k.transpose(-1, -2) * decay).tril(-1)
    eye = torch.eye(CHUNK, dtype=q.dtype)
    system = eye + strict
    u_v = torch.linalg.solve_triangular(system, vb, upper=False, unitriangular=True)
    u_s = torch.linalg.solve_triangular(system, kb * G.exp()[..., None], upper=False,
                                        unitriangular=True)
    S = torch.zeros(H, k.shape[-1], v.shape[-1], dtype=q.dtype)
    out = []
    for c in range(n):
        u = u_v[:, c] - u_s[:, c] @ S
        attn = q[:, c] @ k[:, c].transpose(-1, -2) * decay[:, c]
        out.append((q[:, c] * G[:, c].exp()[..., None]) @ S + attn @ u)
        tail = (G[:, c, -1:] - G[:, c]).exp()
        S = S * G[:, c, -1].exp()[:, None, None] + (k[:, c] * tail[..., None]).transpose(-1, -2) @ u
    return torch.cat(out, dim=1)[:, :T]


def recurrent_rule(q, k, v, g, beta):
    H, T, _ = k.shape
    S = torch.zeros(H, k.shape[-1], v.shape[-1], dtype=q.dtype)
    out = []
    for t in range(T):
        S = S * g[:, t].exp()[:, None, None]
        mem = (S * k[:, t, :, None]).sum(1)
        u = (v[:, t] - mem) * beta[:, t, None]
        S = S + k[:, t, :, None] * u[:, None, :]
        out.append((S * q[:, t, :, None]).sum(1))
    return torch.stack(out, dim=1)


def block(w):
    f64 = {key: t.to(torch.float64) for key, t in w.items()}
    x = f64["x"].reshape(N, D)
    p = (x @ f64["qkvz"].reshape(W, D).T).reshape(N, HK, 2 * DK + 2 * R * DV)
    pba = (x @ f64["ba"].reshape(2 * HV, D).T).reshape(N, HK, 2 * R)
    q = p[..., :DK].reshape(N, HK * DK)
    k = p[..., DK:2 * DK].reshape(N, HK * DK)
    v = p[..., 2 * DK:2 * DK + R * DV].reshape(N, HV * DV)
    z = p[..., 2 * DK + R * DV:].reshape(N, HV, DV)
    b = pba[..., :R].reshape(N, HV)
    a = pba[..., R:].reshape(N, HV)
    mixed = torch.cat([q, k, v], dim=-1).T[None]
    conv = F.conv1d(mixed, f64["conv"].reshape(C, 1, KC), groups=C, padding=KC - 1)[..., :N]
    conv = F.silu(conv[0].T)
    q = l2norm(conv[:, :HK * DK].reshape(N, HK, DK)) * DK ** -0.5
    k = l2norm(conv[:, HK * DK:2 * HK * DK].reshape(N, HK, DK))
    v = conv[:, 2 * HK * DK:].reshape(N, HV, DV)
    q, k = (t.repeat_interleave(R, dim=1).transpose(0, 1) for t in (q, k))
    v = v.transpose(0, 1)
    beta = torch.sigmoid(b).T
    g = (-f64["alog"].exp() * F.softplus(a + f64["dt"])).T
    o = chunked_rule(q, k, v, g, beta)
    ref = recurrent_rule(q, k, v, g, beta)
    gap = (o - ref).abs().max().item()
    assert gap < 1e-10, "chunked and recurrent rules disagree by %g" % gap
    o = o.transpose(0, 1)
    o = o * torch.rsqrt((o * o).mean(-1, keepdim=True) + EPS) * f64["norm"] * F.silu(z)
    return o.reshape(N, HV * DV) @ f64["out"].reshape(D, HV * DV).T


def c_array(name, values):
    items = ["%.9e" % float(v) for v in values]
    lines, line = [], ""
    for item in items:
        if len(line) + len(item) > 92:
            lines.append(line.rstrip())
            line = ""
        line += item + ", "
    lines.append(line.rstrip().rstrip(","))
    return "static const float %s[%d] = {\n  %s\n};\n" % (name, len(items), "\n  ".join(lines))


def main():
    w = weights()
    out = block(w).reshape(-1)
    text = ["/* Generated by gen-gdn-chunked-ref.py; do not edit. */\n"]
    for key, val in (("D", D), ("HK", HK), ("HV", HV), ("DK", DK), ("DV", DV), ("K", KC),
                     ("N", N)):
        text.append("#define GDC_%s %d\n" % (key, val))
    for key, t in w.items():
        text.append(c_array("gdc_%s" % key, t.tolist()))
    text.append(c_array("gdc_out_ref", out.tolist()))
    with open(os.path.join(HERE, "gdn-chunked-ref.h"), "w") as f:
        f.write("".join(text))


if __name__ == "__main__":
    main()
