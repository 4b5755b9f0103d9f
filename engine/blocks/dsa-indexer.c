/* The DSA lightning indexer: index keys, index scores and the top-k selection. */
#include "blocks/dsa-indexer.h"

#include <math.h>
#include <string.h>

/* Keys scored per matrix product, and per work item when one row is split across
 * threads. */
#define SCORE_TILE 64
#define SCORE_CHUNK 512

struct BwDsaIndexer {
  BwDsaShape shape;
  int max_batch;
  int n_threads;
  float q_scale;       /* head_dim^-1/2 */
  float w_scale;       /* n_heads^-1/2 */
  float *q;            /* [max_batch][n_heads * head_dim] */
  float *w;            /* [max_batch][n_heads] */
  float *k;            /* [max_batch][head_dim] */
  int64_t ctx_cap;     /* positions the per-thread scratch below can hold */
  float *scores;       /* [n_threads][ctx_cap] */
  int32_t *perm;       /* [n_threads][ctx_cap] */
  float *tiles;        /* [n_threads][SCORE_TILE * head_dim] */
  float *dots;         /* [n_threads][SCORE_TILE * n_heads] */
  int *count;          /* [max_batch] */
  int32_t *keys;       /* [max_batch][topk], allocated with the context scratch */
  BwDsaSelection sel;
};

static inline float
rank_score (const float *scores, int32_t i)
{
  float v = scores[i];
  return isnan (v) ? -INFINITY : v;
}

/* The total order of the selection: higher score first, then lower index. */
static inline gboolean
better (const float *scores, int32_t a, int32_t b)
{
  float sa = rank_score (scores, a), sb = rank_score (scores, b);
  return sa > sb || (sa == sb && a < b);
}

static inline void
swap32 (int32_t *p, int64_t a, int64_t b)
{
  int32_t t = p[a];
  p[a] = p[b];
  p[b] = t;
}

/* Rearranges perm[lo..hi] so that perm[k] is the element of rank k (0 = best). */
static void
quickselect (const float *scores, int32_t *perm, int64_t lo, int64_t hi, int64_t k)
{
  while (lo < hi)
    {
      int64_t mid = lo + (hi - lo) / 2;

      /* Median of three as pivot, moved to hi. */
      if (better (scores, perm[mid], perm[lo]))
        swap32 (perm, mid, lo);
      if (better (scores, perm[hi], perm[lo]))
        swap32 (perm, hi, lo);
      if (better (scores, perm[mid], perm[hi]))
        swap32 (perm, mid, hi);

      int32_t pivot = perm[hi];
      int64_t store = lo;
      for (int64_t i = lo; i < hi; i++)
        if (better (scores, perm[i], pivot))
          swap32 (perm, i, store++);
      swap32 (perm, store, hi);

      if (k == store)
        return;
      if (k < store)
        hi = store - 1;
      else
        lo = store + 1;
    }
}

void
bw_dsa_select_topk (const float *scores, int64_t n, int k, int32_t *perm, int32_t *out)
{
  int64_t kept = 0;

  g_return_if_fail (k > 0 && k <= n);
  if (k == n)
    {
      for (int64_t i = 0; i < n; i++)
        out[i] = (int32_t) i;
      return;
    }
  for (int64_t i = 0; i < n; i++)
    perm[i] = (int32_t) i;
  quickselect (scores, perm, 0, n - 1, k - 1);

  /* The order is total, so exactly k positions are at least as good as the k-th one;
   * collecting them in a forward scan yields them ascending. */
  int32_t last = perm[k - 1];
  for (int64_t i = 0; i < n && kept < k; i++)
    if (i == last || better (scores, (int32_t) i, last))
      out[kept++] = (int32_t) i;
}

/* I_t for t in [t0, t1) of one query row. The row's heads form a small [n_heads, head_dim]
 * matrix; keys are gathered SCORE_TILE at a time into a contiguous tile so one matrix
 * product on the calling thread scores them all. tile: SCORE_TILE * head_dim floats,
 * dots: SCORE_TILE * n_heads floats. */
static void
score_keys (const BwDsaIndexer *ix, BwIsa isa, const float *q, const float *w, const float *keys,
            gsize stride, int64_t t0, int64_t t1, float *tile, float *dots, float *out)
{
  int heads = ix->shape.n_heads, dim = ix->shape.head_dim;
  BwMatrix qm = { .fmt = BW_FMT_F32, .rows = heads, .cols = dim, .data = q, .isa = isa };

  for (int64_t a = t0; a < t1; a += SCORE_TILE)
    {
      int nk = (int) MIN (SCORE_TILE, t1 - a);

      for (int k = 0; k < nk; k++)
        memcpy (tile + (gsize) k * dim, keys + (gsize) (a + k) * stride, dim * sizeof (float));
      bw_matmul (&qm, tile, nk, dots, NULL);
      for (int k = 0; k < nk; k++)
        {
          const float *d = dots + (gsize) k * heads;
          float acc = 0.0f;

          for (int h = 0; h < heads; h++)
            {
              float s = d[h] * ix->q_scale;
              if (s > 0.0f)
                acc += w[h] * s;
            }
          out[a + k] = acc;
        }
    }
}

static void
layer_norm (float *x, int n, const float *weight, const float *bias)
{
  double mean = 0.0, var = 0.0;

  for (int i = 0; i < n; i++)
    mean += x[i];
  mean /= n;
  for (int i = 0; i < n; i++)
    var += (x[i] - mean) * (x[i] - mean);
  var /= n;
  float inv = (float) (1.0 / sqrt (var + (double) BW_DSA_KNORM_EPS));
  for (int i = 0; i < n; i++)
    x[i] = ((x[i] - (float) mean) * inv) * weight[i] + bias[i];
}

BwDsaIndexer *
bw_dsa_indexer_new (const BwDsaShape *shape, int max_batch, int n_threads)
{
  BwDsaIndexer *ix;

  g_return_val_if_fail (shape->n_heads > 0 && shape->head_dim > 0, NULL);
  g_return_val_if_fail (shape->rope_dim >= 0 && shape->rope_dim <= shape->head_dim, NULL);
  g_return_val_if_fail (shape->topk > 0 && max_batch > 0, NULL);

  ix = g_new0 (BwDsaIndexer, 1);
  ix->shape = *shape;
  ix->max_batch = max_batch;
  ix->n_threads = MAX (n_threads, 1);
  ix->q_scale = (float) pow (shape->head_dim, -0.5);
  ix->w_scale = (float) pow (shape->n_heads, -0.5);
  ix->q = g_new (float, (gsize) max_batch * shape->n_heads * shape->head_dim);
  ix->w = g_new (float, (gsize) max_batch * shape->n_heads);
  ix->k = g_new (float, (gsize) max_batch * shape->head_dim);
  ix->count = g_new0 (int, max_batch);
  ix->tiles = g_new (float, (gsize) ix->n_threads * SCORE_TILE * shape->head_dim);
  ix->dots = g_new (float, (gsize) ix->n_threads * SCORE_TILE * shape->n_heads);
  ix->sel.topk = shape->topk;
  ix->sel.count = ix->count;
  return ix;
}

void
bw_dsa_indexer_free (BwDsaIndexer *ix)
{
  if (ix == NULL)
    return;
  g_free (ix->q);
  g_free (ix->w);
  g_free (ix->k);
  g_free (ix->scores);
  g_free (ix->perm);
  g_free (ix->count);
  g_free (ix->tiles);
  g_free (ix->dots);
  g_free (ix->keys);
  g_free (ix);
}

const BwDsaShape *
bw_dsa_indexer_shape (const BwDsaIndexer *ix)
{
  return &ix->shape;
}

static gsize
indexer_bytes (const BwDsaIndexer *ix)
{
  gsize per_row = (gsize) ix->shape.n_heads * ix->shape.head_dim + ix->shape.n_heads
                  + ix->shape.head_dim + 1;
  gsize per_thread = (gsize) SCORE_TILE * (ix->shape.head_dim + ix->shape.n_heads);
  gsize b = (per_row * ix->max_batch + per_thread * ix->n_threads) * sizeof (float);

  b += (gsize) ix->ctx_cap * ix->n_threads * (sizeof (float) + sizeof (int32_t));
  if (ix->keys != NULL)
    b += (gsize) ix->max_batch * ix->shape.topk * sizeof (int32_t);
  return b;
}

gsize
bw_dsa_indexer_reserve (BwDsaIndexer *ix, int64_t n_ctx)
{
  if (n_ctx > ix->shape.topk && n_ctx > ix->ctx_cap)
    {
      /* Geometric growth: decode asks for one more position every step. */
      int64_t cap = MAX (n_ctx, ix->ctx_cap + ix->ctx_cap / 2);

      cap = MAX (cap, 1024);
      g_free (ix->scores);
      g_free (ix->perm);
      ix->scores = g_new (float, (gsize) cap * ix->n_threads);
      ix->perm = g_new (int32_t, (gsize) cap * ix->n_threads);
      ix->ctx_cap = cap;
      if (ix->keys == NULL)
        ix->keys = g_new (int32_t, (gsize) ix->max_batch * ix->shape.topk);
      ix->sel.keys = ix->keys;
    }
  return indexer_bytes (ix);
}

typedef struct {
  BwDsaIndexer *ix;
  const float *key_cache;
  gsize key_stride;
  int64_t pos0;
  int first_row;       /* per-row mode: rows first_row .. first_row + items - 1 */
  int row;             /* chunked mode: the row being scored */
  BwIsa isa;           /* the weights' kernel level, for the scoring products */
} ScoreJob;

/* Per-row mode: one work item scores and selects a whole row on its thread's scratch. */
static void
row_job (void *ctx, int index, int thread_id)
{
  ScoreJob *job = ctx;
  BwDsaIndexer *ix = job->ix;
  int row = job->first_row + index;
  int64_t n_keys = job->pos0 + row + 1;
  float *scores = ix->scores + (gsize) thread_id * ix->ctx_cap;
  int32_t *perm = ix->perm + (gsize) thread_id * ix->ctx_cap;
  const BwDsaShape *sh = &ix->shape;

  score_keys (ix, job->isa, ix->q + (gsize) row * sh->n_heads * sh->head_dim,
              ix->w + (gsize) row * sh->n_heads, job->key_cache, job->key_stride, 0, n_keys,
              ix->tiles + (gsize) thread_id * SCORE_TILE * sh->head_dim,
              ix->dots + (gsize) thread_id * SCORE_TILE * sh->n_heads, scores);
  bw_dsa_select_topk (scores, n_keys, sh->topk, perm, ix->keys + (gsize) row * sh->topk);
  ix->count[row] = sh->topk;
}

/* Chunked mode: work items split one row's keys. */
static void
chunk_job (void *ctx, int index, int thread_id)
{
  ScoreJob *job = ctx;
  const BwDsaIndexer *ix = job->ix;
  int row = job->row;
  int64_t n_keys = job->pos0 + row + 1;
  int64_t t0 = (int64_t) index * SCORE_CHUNK, t1 = MIN (t0 + SCORE_CHUNK, n_keys);
  const BwDsaShape *sh = &ix->shape;

  score_keys (ix, job->isa, ix->q + (gsize) row * sh->n_heads * sh->head_dim,
              ix->w + (gsize) row * sh->n_heads, job->key_cache, job->key_stride, t0, t1,
              ix->tiles + (gsize) thread_id * SCORE_TILE * sh->head_dim,
              ix->dots + (gsize) thread_id * SCORE_TILE * sh->n_heads, ix->scores);
}

static void
compute_keys (BwDsaIndexer *ix, const BwDsaWeights *w, const BwRopeTable *rope, const float *h,
              int n, int64_t pos0, float *key_cache, gsize key_stride, BwPool *pool)
{
  const BwDsaShape *sh = &ix->shape;

  bw_matmul (&w->wk, h, n, ix->k, pool);
  for (int i = 0; i < n; i++)
    {
      float *k = ix->k + (gsize) i * sh->head_dim;

      layer_norm (k, sh->head_dim, w->k_norm_weight, w->k_norm_bias);
      if (sh->rope_dim > 0)
        bw_rope_apply (rope, k, 1, 0, pos0 + i);
      memcpy (key_cache + (gsize) (pos0 + i) * key_stride, k, sizeof (float) * sh->head_dim);
    }
}

static void
compute_queries (BwDsaIndexer *ix, const BwDsaWeights *w, const BwRopeTable *rope, const float *h,
                 const float *c_q, int n, int64_t pos0, BwPool *pool)
{
  const BwDsaShape *sh = &ix->shape;
  gsize qw = (gsize) sh->n_heads * sh->head_dim;

  bw_matmul (&w->wq_b, c_q, n, ix->q, pool);
  bw_matmul (&w->weights_proj, h, n, ix->w, pool);
  for (int i = 0; i < n; i++)
    {
      if (sh->rope_dim > 0)
        bw_rope_apply (rope, ix->q + i * qw, sh->n_heads, sh->head_dim, pos0 + i);
      for (int hd = 0; hd < sh->n_heads; hd++)
        ix->w[(gsize) i * sh->n_heads + hd] *= ix->w_scale;
    }
}

const BwDsaSelection *
bw_dsa_indexer_run (BwDsaIndexer *ix, const BwDsaWeights *w, const BwRopeTable *rope,
                    const float *h, const float *c_q, int n, int64_t pos0, float *key_cache,
                    gsize key_stride, BwPool *pool)
{
  const BwDsaShape *sh = &ix->shape;
  int n_threads = pool != NULL ? bw_pool_size (pool) : 1;
  int first_sel;

  g_return_val_if_fail (n > 0 && n <= ix->max_batch, NULL);
  g_return_val_if_fail (n_threads <= ix->n_threads, NULL);
  g_return_val_if_fail (pos0 + n <= sh->topk || pos0 + n <= ix->ctx_cap, NULL);

  compute_keys (ix, w, rope, h, n, pos0, key_cache, key_stride, pool);

  ix->sel.n_rows = n;
  ix->sel.pos0 = pos0;
  for (int i = 0; i < n; i++)
    ix->count[i] = (int) (pos0 + i + 1);
  /* Rows before first_sel have at most topk causal keys and keep them all. */
  first_sel = (int) CLAMP (sh->topk - pos0, 0, n);
  ix->sel.dense = first_sel == n;
  if (ix->sel.dense)
    return &ix->sel;
  for (int i = 0; i < first_sel; i++)
    for (int t = 0; t < ix->count[i]; t++)
      ix->keys[(gsize) i * sh->topk + t] = t;

  compute_queries (ix, w, rope, h, c_q, n, pos0, pool);

  ScoreJob job = { ix, key_cache, key_stride, pos0, first_sel, 0, w->wk.isa };
  if (n - first_sel >= n_threads && n_threads > 1)
    bw_pool_run (pool, row_job, &job, n - first_sel);
  else
    for (int row = first_sel; row < n; row++)
      {
        int64_t n_keys = pos0 + row + 1;

        job.row = row;
        bw_pool_run (pool, chunk_job, &job, (int) ((n_keys + SCORE_CHUNK - 1) / SCORE_CHUNK));
        bw_dsa_select_topk (ix->scores, n_keys, sh->topk, ix->perm,
                            ix->keys + (gsize) row * sh->topk);
        ix->count[row] = sh->topk;
      }
  return &ix->sel;
}

const BwDsaSelection *
bw_dsa_indexer_last (const BwDsaIndexer *ix)
{
  return &ix->sel;
}
