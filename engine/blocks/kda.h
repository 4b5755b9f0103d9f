/* Kimi Delta Attention (ARCHITECTURES 1.5): q/k/v projections through a causal depthwise
 * short convolution (FIFO state) and SiLU, per-head L2 norm, a per-channel decay gate
 * (Kimi Linear's softplus form or K3's bounded form), beta, the delta-rule recurrence, and
 * the per-head output RMSNorm times a sigmoid gate (low-rank or full-rank). */
#pragma once

#include "kernels/matrix.h"

typedef struct {
  int n_heads;             /* Hk */
  int head_dim;            /* d; P = Hk d */
  int conv;                /* short conv kernel Kc */
  float eps;               /* o_norm epsilon (rms_norm_eps) */
  float l2_eps;            /* inside the L2 norm's root: 1e-6 */
  gboolean bounded;        /* K3: a = lb sigmoid(exp(A_log) z); else -exp(A_log) softplus(z) */
  float lower_bound;
  gboolean full_rank_gate; /* output gate g_proj [P, D] instead of g_b (g_a x) */
  BwMatrix q_proj, k_proj, v_proj;       /* [P, D] */
  const float *q_conv, *k_conv, *v_conv; /* [P][Kc], tap 0 oldest */
  BwMatrix f_a;            /* [d, D] */
  BwMatrix f_b;            /* [P, d] */
  const float *dt_bias;    /* [P] */
  const float *a_log;      /* [Hk] */
  BwMatrix b_proj;         /* [Hk, D] */
  BwMatrix g_a, g_b;       /* [d, D], [P, d] (low-rank gate) */
  BwMatrix g_proj;         /* [P, D] (full-rank gate) */
  const float *o_norm;     /* [d], shared by the heads */
  BwMatrix o_proj;         /* [D, P] */
} BwKda;

/* Floats of decode state: Hk d x d recurrent matrices, then q, k, v conv FIFOs of
 * P x (Kc - 1) pre-convolution values. Zero means an empty sequence. */
gsize bw_kda_state_floats (const BwKda *k);

gsize bw_kda_scratch_bytes (const BwKda *k, int n);

/* x: [n][D] normalised input of n consecutive tokens; out: [n][D]. Advances state. */
void bw_kda_forward (const BwKda *k, const float *x, int n, float *state, float *out,
                     void *scratch, BwPool *pool);
