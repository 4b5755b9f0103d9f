/* Elementwise activations and the gated products of the MLPs (ARCHITECTURES 1.2). */
#pragma once

#include <math.h>

typedef enum {
  BW_ACT_SWIGLU = 0,   /* silu(g) * u */
  BW_ACT_SITU,         /* beta tanh(g/beta) sigmoid(g) * u', u' = lambda tanh(u/lambda) */
  BW_ACT_CLAMPED,      /* gpt-oss: g' = min(g, limit), u' = clamp(u, +-limit),
                        * (u' + 1) * g' * sigmoid(alpha g') */
} BwActKind;

typedef struct {
  BwActKind kind;
  float beta;          /* SITU: activation_situ_beta (1 when absent or zero) */
  float linear_beta;   /* SITU: activation_situ_linear_beta; 0 = u used as is */
  float alpha, limit;  /* CLAMPED: 1.702 and swiglu_limit (7) in gpt-oss */
} BwActivation;

static inline float
bw_sigmoid (float z)
{
  return 1.0f / (1.0f + expf (-z));
}

static inline float
bw_silu (float z)
{
  return z / (1.0f + expf (-z));
}

/* ln(1 + e^z), stable for large |z|. */
static inline float
bw_softplus (float z)
{
  return fmaxf (z, 0.0f) + log1pf (expf (-fabsf (z)));
}

/* h[i] = act(g[i], u[i]); h may alias g. With u NULL, g holds interleaved pairs
 * (g[2i], u[2i + 1]), as gpt-oss's fused gate_up_proj yields them. */
void bw_gated_act (const BwActivation *act, float *h, const float *g, const float *u, int n);
