/* Multi-head Latent Attention (ARCHITECTURES 1.3): optional Q-LoRA, the compressed latent
 * cache (c_kv + k_rope per position), a reconstruct-K/V path for prefill and the
 * weight-absorbed path for decode (same numbers), causal softmax, an optional output gate,
 * and two hooks for families that need them: RoPE on the rope slices and a per-query key
 * selection (DSA). The call is split in two phases so an indexer can run in between:
 * bw_mla_project (queries, latent cache rows, c_q) then bw_mla_attend. */
#pragma once

#include "blocks/scratch.h"
#include "kernels/matrix.h"

/* Rotates v (dim floats, one head's rope slice or the shared k_rope) in place for the
 * absolute position pos. */
typedef void (*BwRopeFn) (const void *ctx, float *v, int dim, int64_t pos);

typedef struct {
  BwRopeFn apply;          /* NULL: no positional encoding (Kimi NoPE) */
  const void *ctx;
} BwRope;

/* Per query row i of a call: the cached positions it may attend to are
 * idx[i * stride .. i * stride + count[i]), ascending, each <= the row's own position. */
typedef struct {
  const int32_t *idx;
  const int *count;
  int stride;
} BwKeySelect;

typedef struct {
  int n_heads, nope, rope, v_dim, kv_rank;
  int q_rank;              /* Q-LoRA rank; 0 = direct q_proj */
  float latent_eps;        /* q_a_layernorm / kv_a_layernorm epsilon (1e-6 in the references) */
  float scale;             /* softmax scale, (nope + rope)^-1/2 */
  BwMatrix q_proj;         /* [H (nope+rope), D] when q_rank == 0 */
  BwMatrix q_a;            /* [q_rank, D] */
  const float *q_a_norm;   /* [q_rank] */
  BwMatrix q_b;            /* [H (nope+rope), q_rank] */
  BwMatrix kv_a;           /* kv_a_proj_with_mqa [kv_rank + rope, D] */
  const float *kv_a_norm;  /* [kv_rank] */
  BwMatrix kv_b;           /* [H (nope+v), kv_rank] */
  /* Or W_UK and W_UV apart, as GGUF stores them (data set): k_b [H kv_rank, nope], each
   * head's keys transposed, and v_b [H v, kv_rank]. Every call then takes the absorbed
   * path, with one-token products of their rows (act_bits 32 keeps GGML blocks' products
   * in f32, kernels/ggml-f32act.h). */
  BwMatrix k_b, v_b;
  BwMatrix o_proj;         /* [D, H v] */
  gboolean has_gate;       /* K3: o *= sigmoid(g_proj x) */
  BwMatrix g_proj;         /* [H v, D] */
  BwRope rope_hook;
  int absorb_max_tokens;   /* calls with n <= this use the absorbed path */
} BwMla;

/* Floats per cached position: kv_rank (normalised c_kv) then rope (k_rope). */
static inline int
bw_mla_cache_floats (const BwMla *m)
{
  return m->kv_rank + m->rope;
}

/* The call size above which reconstructing K/V (once per cached position per call) costs
 * fewer multiply-adds than the absorbed path (per query, key and head): a good
 * absorb_max_tokens. */
int bw_mla_absorb_crossover (const BwMla *m);

/* What bw_mla_project leaves for bw_mla_attend (pointers into the scratch). */
typedef struct {
  float *q;                /* [n][H (nope+rope)], rope part rotated */
  float *c_q;              /* [n][q_rank] normalised Q-LoRA latent, NULL without Q-LoRA */
  BwScratch cursor;        /* rest of the scratch */
} BwMlaWork;

gsize bw_mla_scratch_bytes (const BwMla *m, int n, int n_threads);

/* x: [n][D] normalised input at positions pos0 .. pos0+n-1. Writes cache rows pos0.. (row
 * p at cache + p * stride). */
void bw_mla_project (const BwMla *m, const float *x, int n, int64_t pos0, float *cache,
                     int stride, void *scratch, BwMlaWork *work, BwPool *pool);

/* out: [n][D]. select NULL = every causal position. force_path: 0 = by absorb_max_tokens,
 * 1 = absorbed, 2 = reconstruct (tests). */
void bw_mla_attend (const BwMla *m, const BwMlaWork *work, const float *x, int n, int64_t pos0,
                    const float *cache, int stride, const BwKeySelect *select, int force_path,
                    float *out, BwPool *pool);

/* Both phases, no key selection. */
void bw_mla_forward (const BwMla *m, const float *x, int n, int64_t pos0, float *cache,
                     int stride, float *out, void *scratch, BwPool *pool);
