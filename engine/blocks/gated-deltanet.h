/* Gated DeltaNet (Qwen3-Next's linear-attention layers): in_proj_qkvz and in_proj_ba
 * grouped per key head, a causal depthwise short convolution (FIFO state) + SiLU over
 * [q | k | v], per-head L2-normalised q and k (q times dk^-1/2), each key head shared by
 * n_v_heads / n_k_heads value heads, beta = sigmoid(b), a scalar decay per value head
 * g = -exp(A_log) softplus(a + dt_bias), the delta rule S = S exp(g);
 * S += k (beta (v - S^T k))^T; o = S^T q, then per value head w * rmsnorm(o) * silu(z) and
 * out_proj. A single token (decode) runs the recurrence; several (prefill) run it in
 * chunks of 64 as the reference's chunk_gated_delta_rule does, the same recurrence in another
 * schedule that reads each state once per few tokens instead of writing it every token. */
#pragma once

#include "kernels/matrix.h"

typedef struct {
  int n_k_heads, n_v_heads;   /* Hk, Hv; Hv a multiple of Hk */
  int k_dim, v_dim;           /* dk, dv */
  int conv;                   /* kernel width Kc */
  float eps;                  /* gated RMSNorm epsilon */
  float l2_eps;               /* inside the L2 norm's root: 1e-6 */
  BwMatrix in_qkvz;           /* [2 Hk dk + 2 Hv dv, D], per key head [q | k | v | z] */
  BwMatrix in_ba;             /* [2 Hv, D], per key head [b | a] */
  const float *conv_w;        /* [2 Hk dk + Hv dv][Kc], tap 0 oldest */
  const float *a_log;         /* [Hv] */
  const float *dt_bias;       /* [Hv] */
  const float *norm;          /* [dv] */
  BwMatrix out_proj;          /* [D, Hv dv] */
} BwGatedDeltaNet;

/* Channels of the short convolution: all q, all k, all v. */
static inline int
bw_gdn_conv_dim (const BwGatedDeltaNet *g)
{
  return 2 * g->n_k_heads * g->k_dim + g->n_v_heads * g->v_dim;
}

/* Floats of decode state: Hv dk x dv recurrent matrices, then the conv FIFO of
 * conv_dim x (Kc - 1) pre-convolution values. Zero means an empty sequence. */
gsize bw_gdn_state_floats (const BwGatedDeltaNet *g);

gsize bw_gdn_scratch_bytes (const BwGatedDeltaNet *g, int n);

/* x: [n][D] normalised input of n consecutive tokens; out: [n][D]. Advances state. */
void bw_gdn_forward (const BwGatedDeltaNet *g, const float *x, int n, float *state, float *out,
                     void *scratch, BwPool *pool);
