/* Grouped-query softmax attention (Qwen3-MoE, GLM-4.5, gpt-oss, Qwen3-Next's full layers):
 * q/k/v projections with optional biases, optional per-head q/k RMSNorm before RoPE, RoPE on
 * the first bw_rope_dim floats of every head, a K/V cache per position, causal attention
 * where query head h reads KV head h / (H / Hkv), optionally restricted to a sliding window
 * and with a learned per-head sink logit in the softmax, an optional sigmoid output gate
 * (q_proj then yields [query | gate] per head), and o_proj with an optional bias. */
#pragma once

#include "blocks/rope.h"
#include "kernels/matrix.h"

typedef struct {
  int n_heads, n_kv_heads, head_dim;
  float scale;                 /* softmax scale, usually head_dim^-1/2 */
  float norm_eps;              /* q_norm / k_norm epsilon */
  BwMatrix q_proj;             /* [H hd] or, with output_gate, [H 2hd] rows, [D] cols */
  BwMatrix k_proj, v_proj;     /* [Hkv hd, D] */
  BwMatrix o_proj;             /* [D, H hd] */
  const float *q_bias;         /* each NULL = none; sizes as the projections' rows */
  const float *k_bias, *v_bias, *o_bias;
  const float *q_norm, *k_norm;  /* [hd] per-head RMSNorm weights; NULL = no norm */
  const float *sinks;          /* [H] sink logits (gpt-oss); NULL = none */
  int window;                  /* > 0: query at i sees keys i - window < j <= i */
  gboolean output_gate;        /* Qwen3-Next: out *= sigmoid(gate) before o_proj */
  const BwRopeTable *rope;     /* NULL = no positional rotation */
} BwGqa;

/* Floats per cached position: the keys then the values of every KV head. */
static inline int
bw_gqa_cache_floats (const BwGqa *a)
{
  return 2 * a->n_kv_heads * a->head_dim;
}

gsize bw_gqa_scratch_bytes (const BwGqa *a, int n);

/* x: [n][D] normalised input at positions pos0 .. pos0 + n - 1; cache: the layer's rows
 * (row p at cache + p * bw_gqa_cache_floats), rows pos0.. are written. out: [n][D]. */
void bw_gqa_forward (const BwGqa *a, const float *x, int n, int64_t pos0, float *cache,
                     float *out, void *scratch, BwPool *pool);
