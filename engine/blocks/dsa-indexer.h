/* The DSA "lightning indexer" (DeepSeek Sparse Attention, as GLM-5.2 uses it): for every
 * query position s it scores each cached position t <= s with
 *   I_t = sum_h w_h * ReLU(qi_h . ki_t * head_dim^-1/2),  w = weights_proj . h * n_heads^-1/2
 * and keeps the top min(topk, s+1) positions; the MLA softmax then runs over those only.
 * qi = wq_b . c_q (the normalised Q-LoRA latent), ki = LayerNorm(wk . h) with eps 1e-6, and
 * the first rope_dim dims of every qi head and of ki get interleaved RoPE.
 * Ties in I_t go to the lower position, so selections are deterministic. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "blocks/rope.h"
#include "core/threadpool.h"
#include "kernels/matrix.h"

G_BEGIN_DECLS

typedef struct {
  int hidden;        /* D */
  int q_lora_rank;   /* width of c_q */
  int n_heads;       /* index_n_heads */
  int head_dim;      /* index_head_dim */
  int rope_dim;      /* qk_rope_head_dim: rotated leading part of each head, <= head_dim */
  int topk;          /* index_topk */
} BwDsaShape;

/* One "full" layer's indexer tensors. */
typedef struct {
  BwMatrix wq_b;              /* [n_heads * head_dim, q_lora_rank] */
  BwMatrix wk;                /* [head_dim, hidden] */
  const float *k_norm_weight; /* [head_dim] */
  const float *k_norm_bias;   /* [head_dim] */
  BwMatrix weights_proj;      /* [n_heads, hidden] */
} BwDsaWeights;

#define BW_DSA_KNORM_EPS 1e-6f

/* The keys each query row may attend to. Row i is position pos0 + i and keeps count[i]
 * positions: every causal one (count[i] == pos0 + i + 1) while that is at most topk, else
 * exactly topk. When every row keeps everything, `dense` is TRUE and keys[] is not filled
 * (attend to all causal positions); otherwise keys[i * topk ..] lists each row's positions
 * ascending, also for rows that keep everything. */
typedef struct {
  int n_rows;
  int64_t pos0;
  int topk;
  gboolean dense;
  const int *count;
  const int32_t *keys;
} BwDsaSelection;

static inline gboolean
bw_dsa_row_keeps_all (const BwDsaSelection *sel, int row)
{
  return sel->count[row] == sel->pos0 + row + 1;
}

/* Picks the k best of scores[0..n) (higher score first, then lower index; NaN counts as
 * -inf) and writes their indices ascending to out[0..k). perm is n ints of scratch.
 * Requires 0 < k <= n. */
void bw_dsa_select_topk (const float *scores, int64_t n, int k, int32_t *perm, int32_t *out);

/* Scratch and output shared by every full layer of a model (layers run one at a time). */
typedef struct BwDsaIndexer BwDsaIndexer;

/* max_batch: most rows per call; n_threads: the pool size the calls will use. */
BwDsaIndexer *bw_dsa_indexer_new (const BwDsaShape *shape, int max_batch, int n_threads);
void bw_dsa_indexer_free (BwDsaIndexer *ix);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwDsaIndexer, bw_dsa_indexer_free)

const BwDsaShape *bw_dsa_indexer_shape (const BwDsaIndexer *ix);

/* Makes room for contexts of n_ctx positions. Call once per forward, before the layers,
 * with the context length the forward ends at; allocates only when n_ctx exceeds topk and
 * the current capacity (growing geometrically). Returns the bytes held afterwards. */
gsize bw_dsa_indexer_reserve (BwDsaIndexer *ix, int64_t n_ctx);

/* Runs one full layer's indexer for n rows (n <= max_batch) at positions pos0 .. pos0+n-1.
 * h: [n][hidden] normalised hidden states; c_q: [n][q_lora_rank]. The rows' index keys are
 * written to key_cache + p * key_stride (p = pos0 + i); keys of positions < pos0 must be
 * there already. Returns the selection, valid until the next call on ix. While every row
 * keeps all its keys (context <= topk) only the keys are computed. */
const BwDsaSelection *bw_dsa_indexer_run (BwDsaIndexer *ix, const BwDsaWeights *w,
                                          const BwRopeTable *rope, const float *h, const float *c_q,
                                          int n, int64_t pos0, float *key_cache,
                                          gsize key_stride, BwPool *pool);

/* The selection of the last bw_dsa_indexer_run, for "shared" layers. */
const BwDsaSelection *bw_dsa_indexer_last (const BwDsaIndexer *ix);

G_END_DECLS
