"""An independent PyTorch implementation of Kimi Linear (model_type "kimi_linear").

Written from ARCHITECTURES.md (sections 1.2-1.5 and 2): KDA layers (short causal conv, L2
norm, -exp(A_log)*softplus decay gate, beta, delta-rule recurrence, gated RMSNorm output),
NoPE MLA layers without q-LoRA, a dense SwiGLU first layer and sigmoid-routed MoE layers with a
correction bias and one shared expert. Parameter names equal the published checkpoint's, so a
state dict loads from and saves to the real tensor names unchanged.

Two ways to run it: `forward(ids)` over a whole sequence (used for training and for teacher
forcing), and `step(id, cache)` for one token with a recurrent cache (KDA state and conv FIFOs,
MLA latent cache), used for greedy decoding.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

MLA_LATENT_EPS = 1e-6   # q_a/kv_a_layernorm use the class default, not rms_norm_eps
L2_EPS = 1e-6


def rms_norm(x, weight, eps):
    x32 = x.float()
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps))


def l2_norm(x):
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + L2_EPS)


class Norm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return rms_norm(x, self.weight, self.eps)


def linear(n_in, n_out):
    return nn.Linear(n_in, n_out, bias=False)


class SwiGLU(nn.Module):
    """gate_proj/up_proj/down_proj naming (dense MLP and shared experts)."""

    def __init__(self, dim, width):
        super().__init__()
        self.gate_proj = linear(dim, width)
        self.up_proj = linear(dim, width)
        self.down_proj = linear(width, dim)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Expert(nn.Module):
    """Routed expert: w1 = gate, w3 = up, w2 = down."""

    def __init__(self, dim, width):
        super().__init__()
        self.w1 = linear(dim, width)
        self.w2 = linear(width, dim)
        self.w3 = linear(dim, width)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Router(nn.Module):
    def __init__(self, dim, n_experts):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_experts, dim))
        self.register_buffer("e_score_correction_bias", torch.zeros(n_experts))


class MoE(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        dim = cfg["hidden_size"]
        width = cfg["moe_intermediate_size"]
        self.top_k = cfg["num_experts_per_token"]
        self.scale = cfg["routed_scaling_factor"]
        self.renormalize = cfg["moe_renormalize"]
        self.gate = Router(dim, cfg["num_experts"])
        self.experts = nn.ModuleList(Expert(dim, width) for _ in range(cfg["num_experts"]))
        self.shared_experts = SwiGLU(dim, width * cfg["num_shared_experts"])
        self.biased_weights = True
        self.last_choice = None
        self.last_gaps = None      # per row: k-th minus (k+1)-th choice score
        self.aux_loss = None

    def route(self, x):
        """Top-k expert ids and their weights for rows of x ([N, D])."""
        scores = torch.sigmoid(F.linear(x.float(), self.gate.weight.float()))
        choice = scores + self.gate.e_score_correction_bias
        top = torch.topk(choice.detach(), self.top_k + 1, dim=-1)
        ids = top.indices[:, :self.top_k]
        if self.training:
            # Switch-style balance loss on the unbiased scores (training only).
            n_exp = scores.shape[1]
            frac = torch.bincount(ids.reshape(-1), minlength=n_exp).float() * (
                n_exp / ids.numel())
            prob = (scores / scores.sum(-1, keepdim=True)).mean(0)
            self.aux_loss = (frac * prob).sum()
        self.last_gaps = top.values[:, self.top_k - 1] - top.values[:, self.top_k]
        # The Kimi Linear reference adds the bias in place, so its weights are biased scores.
        weights = torch.gather(choice if self.biased_weights else scores, 1, ids)
        if self.renormalize and self.top_k > 1:
            weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
        return ids, weights * self.scale

    def forward(self, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        ids, weights = self.route(flat)
        self.last_choice = ids
        out = self.shared_experts(flat)
        return (out + self.routed(flat, ids, weights)).reshape(shape)

    def routed(self, flat, ids, weights):
        """Sum over each row's chosen experts of weight * expert(row). The (row, expert) pairs
        are grouped by expert into a zero-padded [E, capacity, D] block, so all experts run as
        three batched matmuls."""
        n_exp = len(self.experts)
        choice = ids.reshape(-1)
        order = torch.argsort(choice, stable=True)
        expert = choice[order]
        rows = torch.div(order, self.top_k, rounding_mode="floor")
        counts = torch.bincount(choice, minlength=n_exp)
        cap = int(counts.max())
        start = torch.cumsum(counts, 0) - counts
        slot = expert * cap + torch.arange(len(order), device=flat.device) - start[expert]
        gather = torch.full((n_exp * cap,), flat.shape[0], dtype=torch.long, device=flat.device)
        gather[slot] = rows
        xs = torch.cat([flat, flat.new_zeros(1, flat.shape[1])])[gather].view(n_exp, cap, -1)
        w1 = torch.stack([e.w1.weight for e in self.experts]).transpose(1, 2)
        w3 = torch.stack([e.w3.weight for e in self.experts]).transpose(1, 2)
        w2 = torch.stack([e.w2.weight for e in self.experts]).transpose(1, 2)
        y = torch.bmm(F.silu(torch.bmm(xs, w1)) * torch.bmm(xs, w3), w2)
        y = y.reshape(n_exp * cap, -1)[slot] * weights.reshape(-1)[order].unsqueeze(-1)
        return torch.zeros_like(flat).index_add(0, rows, y)


def kda_recurrent(q, k, v, g, beta, state):
    """The delta-rule recurrence token by token. q, k, v, g: [B, H, T, d]; beta [B, H, T];
    state [B, H, d, d] (rows: key channel, columns: value channel)."""
    decay = torch.exp(g)
    outs = []
    for i in range(q.shape[2]):
        state = state * decay[:, :, i].unsqueeze(-1)
        ki = k[:, :, i]
        u = v[:, :, i] - torch.matmul(ki.unsqueeze(-2), state).squeeze(-2)
        state = state + (beta[:, :, i, None, None] * ki.unsqueeze(-1)) * u.unsqueeze(-2)
        outs.append(torch.matmul(q[:, :, i].unsqueeze(-2), state).squeeze(-2))
    return torch.stack(outs, dim=2), state


def kda_chunked(q, k, v, g, beta, state, chunk):
    """The same recurrence, C tokens at a time (equal up to rounding; used for training).

    Within a chunk, with G_t = cumulative log-decay, S_t = diag(e^G_t) R_t and
    R_t = S_0 + sum_{s<=t} beta_s (k_s e^-G_s) u_s^T, where the corrected values u solve the unit
    lower-triangular system u_t + sum_{s<t} beta_s (k_t e^G_t . k_s e^-G_s) u_s = v_t - S_0^T (k_t e^G_t).
    So u = A^-1 v - A^-1 (k e^G) S_0 with A the system's matrix: everything but the chunk-to-chunk
    state hand-off is computed for all chunks at once. The pair factors e^(G_t - G_s) are split
    around the chunk's middle, e^(G_t - G_m) e^(G_m - G_s), which stay finite in float32 while
    every half chunk's log-decay is above -80 (training floors g at -160/C)."""
    b, h, t, d = q.shape
    pad = (-t) % chunk
    if pad:     # zero k, v, q, beta and log-decay: padded positions leave the state alone
        q, k, v, g = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v, g))
        beta = F.pad(beta, (0, pad))
    n = (t + pad) // chunk
    q, k, v, g = (x.reshape(b, h, n, chunk, d) for x in (q, k, v, g))
    bs = beta.reshape(b, h, n, 1, chunk)                               # over s
    cum = torch.cumsum(g, dim=3)
    mid = cum[:, :, :, chunk // 2 - 1:chunk // 2]
    k_in = (k * torch.exp(mid - cum)).transpose(-1, -2)
    grow_mid = torch.exp(cum - mid)
    causal = torch.ones(chunk, chunk, dtype=torch.bool, device=q.device).tril()
    strict = causal.tril(-1)
    # Mask before scaling: above the diagonal the split factors may overflow.
    kk = torch.matmul(k * grow_mid, k_in).masked_fill(~strict, 0.0) * bs
    qk = torch.matmul(q * grow_mid, k_in).masked_fill(~causal, 0.0) * bs
    grow = torch.exp(cum)
    k_grow = k * grow
    eye = torch.eye(chunk, dtype=q.dtype, device=q.device)
    u0, w = torch.linalg.solve_triangular(eye + kk, torch.cat([v, k_grow], dim=-1), upper=False,
                                          unitriangular=True).split(d, dim=-1)  # u = u0 - w S_0
    o0 = torch.matmul(qk, u0)                  # o = o0 + q_eff S_0
    q_eff = q * grow - torch.matmul(qk, w)
    last = cum[:, :, :, -1:]                                            # [B,H,N,1,d]
    k_out = (k * torch.exp(last - cum) * bs.transpose(-1, -2)).transpose(-1, -2)
    keep = torch.exp(last).transpose(-1, -2)                            # [B,H,N,d,1]
    outs = []
    for i in range(n):
        outs.append(o0[:, :, i] + torch.matmul(q_eff[:, :, i], state))
        u = u0[:, :, i] - torch.matmul(w[:, :, i], state)
        state = keep[:, :, i] * state + torch.matmul(k_out[:, :, i], u)
    o = torch.stack(outs, dim=2).reshape(b, h, n * chunk, d)
    return o[:, :, :t], state


class KDA(nn.Module):
    """Kimi Delta Attention with the low-rank output gate of Kimi Linear."""

    def __init__(self, cfg):
        super().__init__()
        dim = cfg["hidden_size"]
        lin = cfg["linear_attn_config"]
        self.heads = lin["num_heads"]
        self.d = lin["head_dim"]
        self.kc = lin["short_conv_kernel_size"]
        p = self.heads * self.d
        self.q_proj, self.k_proj, self.v_proj = linear(dim, p), linear(dim, p), linear(dim, p)
        self.q_conv1d = nn.Conv1d(p, p, self.kc, groups=p, bias=False)
        self.k_conv1d = nn.Conv1d(p, p, self.kc, groups=p, bias=False)
        self.v_conv1d = nn.Conv1d(p, p, self.kc, groups=p, bias=False)
        self.f_a_proj, self.f_b_proj = linear(dim, self.d), linear(self.d, p)
        self.dt_bias = nn.Parameter(torch.zeros(p))
        self.A_log = nn.Parameter(torch.zeros(1, 1, self.heads, 1))
        self.b_proj = linear(dim, self.heads)
        self.g_a_proj, self.g_b_proj = linear(dim, self.d), linear(self.d, p)
        self.o_norm = Norm(self.d, cfg["rms_norm_eps"])
        self.o_proj = linear(p, dim)
        # 0: exact token-by-token recurrence. C > 0 (training only): chunks of C tokens, with the
        # per-token log-decay floored at -160/C (a decay factor below e^-5 for C = 32).
        self.chunk = 0

    def conv(self, conv, x, fifo=None):
        """Causal depthwise conv + SiLU over x [B, T, P]; fifo [B, P, Kc-1] holds the past."""
        xt = x.transpose(1, 2)
        past = fifo if fifo is not None else xt.new_zeros(xt.shape[0], xt.shape[1], self.kc - 1)
        full = torch.cat([past, xt], dim=2)
        y = F.conv1d(full, conv.weight, groups=conv.weight.shape[0])
        return F.silu(y.transpose(1, 2)), full[:, :, -(self.kc - 1):]

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        h, d = self.heads, self.d
        fifo = cache.get("conv", (None, None, None)) if cache is not None else (None,) * 3
        q, fq = self.conv(self.q_conv1d, self.q_proj(x), fifo[0])
        k, fk = self.conv(self.k_conv1d, self.k_proj(x), fifo[1])
        v, fv = self.conv(self.v_conv1d, self.v_proj(x), fifo[2])
        q = l2_norm(q.view(b, t, h, d)) * d ** -0.5
        k = l2_norm(k.view(b, t, h, d))
        v = v.view(b, t, h, d)
        z = (self.f_b_proj(self.f_a_proj(x)) + self.dt_bias).view(b, t, h, d)
        g = -torch.exp(self.A_log.view(1, 1, h, 1)) * F.softplus(z)
        if self.chunk and t > 1:
            g = g.clamp(min=-160.0 / self.chunk)
        beta = torch.sigmoid(self.b_proj(x))
        state = cache.get("state") if cache is not None else None
        if state is None:
            state = x.new_zeros(b, h, d, d)
        args = (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), g.transpose(1, 2),
                beta.transpose(1, 2), state)
        if self.chunk and t > 1:
            o, state = kda_chunked(*args, self.chunk)
        else:
            o, state = kda_recurrent(*args)
        o = o.transpose(1, 2)
        if cache is not None:
            cache["conv"] = (fq, fk, fv)
            cache["state"] = state
        gate = torch.sigmoid(self.g_b_proj(self.g_a_proj(x))).view(b, t, h, d)
        o = self.o_norm(o) * gate
        return self.o_proj(o.reshape(b, t, h * d))


class MLA(nn.Module):
    """Multi-head latent attention, NoPE, direct q_proj (q_lora_rank null)."""

    def __init__(self, cfg):
        super().__init__()
        dim = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.dn = cfg["qk_nope_head_dim"]
        self.dr = cfg["qk_rope_head_dim"]
        self.dv = cfg["v_head_dim"]
        self.rank = cfg["kv_lora_rank"]
        self.q_proj = linear(dim, self.heads * (self.dn + self.dr))
        self.kv_a_proj_with_mqa = linear(dim, self.rank + self.dr)
        self.kv_a_layernorm = Norm(self.rank, MLA_LATENT_EPS)
        self.kv_b_proj = linear(self.rank, self.heads * (self.dn + self.dv))
        self.o_proj = linear(self.heads * self.dv, dim)

    def forward(self, x, cache=None):
        b, t, _ = x.shape
        h, dn, dr, dv = self.heads, self.dn, self.dr, self.dv
        q = self.q_proj(x).view(b, t, h, dn + dr).transpose(1, 2)
        a = self.kv_a_proj_with_mqa(x)
        c_kv = self.kv_a_layernorm(a[..., :self.rank])
        k_rope = a[..., self.rank:]
        if cache is not None:
            if "c_kv" in cache:
                c_kv = torch.cat([cache["c_kv"], c_kv], dim=1)
                k_rope = torch.cat([cache["k_rope"], k_rope], dim=1)
            cache["c_kv"], cache["k_rope"] = c_kv, k_rope
        n = c_kv.shape[1]
        kv = self.kv_b_proj(c_kv).view(b, n, h, dn + dv).transpose(1, 2)
        k = torch.cat([kv[..., :dn], k_rope.unsqueeze(1).expand(b, h, n, dr)], dim=-1)
        v = kv[..., dn:]
        scores = torch.matmul(q, k.transpose(-1, -2)) * (dn + dr) ** -0.5
        past = n - t
        mask = torch.ones(t, n, dtype=torch.bool, device=x.device).tril(diagonal=past)
        scores = scores.masked_fill(~mask, float("-inf"))
        o = torch.matmul(torch.softmax(scores.float(), dim=-1), v)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, h * dv))


class Layer(nn.Module):
    def __init__(self, cfg, index):
        super().__init__()
        eps = cfg["rms_norm_eps"]
        dim = cfg["hidden_size"]
        self.is_kda = (index + 1) in cfg["linear_attn_config"]["kda_layers"]
        self.input_layernorm = Norm(dim, eps)
        self.post_attention_layernorm = Norm(dim, eps)
        self.self_attn = KDA(cfg) if self.is_kda else MLA(cfg)
        self.is_moe = index >= cfg["first_k_dense_replace"] and index % cfg["moe_layer_freq"] == 0
        if self.is_moe:
            self.block_sparse_moe = MoE(cfg)
        else:
            self.mlp = SwiGLU(dim, cfg["intermediate_size"])

    def forward(self, x, cache=None):
        x = x + self.self_attn(self.input_layernorm(x), cache)
        h = self.post_attention_layernorm(x)
        return x + (self.block_sparse_moe(h) if self.is_moe else self.mlp(h))


class Backbone(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList(Layer(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.norm = Norm(cfg["hidden_size"], cfg["rms_norm_eps"])


class KimiLinear(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        lin = cfg["linear_attn_config"]
        for i in range(cfg["num_hidden_layers"]):
            if ((i + 1) in lin["kda_layers"]) == ((i + 1) in lin["full_attn_layers"]):
                raise ValueError("layer %d must be in exactly one of kda/full_attn_layers" % i)
        if cfg.get("q_lora_rank") is not None or not cfg.get("mla_use_nope", False):
            raise ValueError("only NoPE MLA without q-LoRA is implemented")
        self.cfg = cfg
        self.model = Backbone(cfg)
        self.lm_head = linear(cfg["hidden_size"], cfg["vocab_size"])

    def hidden(self, ids, caches=None):
        x = self.model.embed_tokens(ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, caches[i] if caches is not None else None)
        return self.model.norm(x)

    def forward(self, ids, caches=None):
        """ids [B, T] -> logits [B, T, V] (float32)."""
        return self.lm_head(self.hidden(ids, caches)).float()

    def new_cache(self):
        return [dict() for _ in self.model.layers]

    def moe_layers(self):
        return [l.block_sparse_moe for l in self.model.layers if l.is_moe]


@torch.no_grad()
def greedy(model, prompt_ids, n_new, use_cache=True):
    """Greedy continuation (first index on ties). With the cache: prefill, then one token a
    step. Without: recompute the whole prefix every step."""
    ids = list(prompt_ids)
    cache = model.new_cache() if use_cache else None
    feed = ids
    for _ in range(n_new):
        if use_cache:
            logits = model(torch.tensor([feed]), cache)[0, -1]
        else:
            logits = model(torch.tensor([ids]))[0, -1]
        nxt = int(torch.argmax(logits).item())
        ids.append(nxt)
        feed = [nxt]
    return ids


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def init_weights(model, seed):
    """Training initialisation (not used when loading a checkpoint)."""
    gen = torch.Generator().manual_seed(seed)
    cfg = model.cfg
    depth_scale = 1.0 / math.sqrt(2 * cfg["num_hidden_layers"])
    for name, p in model.named_parameters():
        if name.endswith("A_log"):
            with torch.no_grad():
                p.copy_(torch.log(torch.empty(p.shape).uniform_(1, 16, generator=gen)))
        elif name.endswith("dt_bias"):
            dt = torch.exp(torch.empty(p.shape).uniform_(math.log(1e-3), math.log(1e-1),
                                                          generator=gen)).clamp(min=1e-4)
            with torch.no_grad():
                p.copy_(dt + torch.log(-torch.expm1(-dt)))   # inverse softplus
        elif "conv1d" in name:
            bound = 1.0 / math.sqrt(p.shape[-1])
            with torch.no_grad():
                p.copy_(torch.empty(p.shape).uniform_(-bound, bound, generator=gen))
        elif p.dim() >= 2:
            std = 0.02
            if name.endswith(("o_proj.weight", "down_proj.weight", "w2.weight")):
                std *= depth_scale
            with torch.no_grad():
                p.copy_(torch.randn(p.shape, generator=gen) * std)
