#include "blocks/mla.h"

#include <math.h>
#include <string.h>

#include "blocks/activation.h"
#include "blocks/norm.h"
#include "blocks/scratch.h"
#include "blocks/vec.h"

/* Cached positions reconstructed per step of the prefill path. */
#define KV_TILE 32
/* Cached rows scored together by the absorbed path. */
#define KEY_BLOCK 64

/* bw_mla_project's takes: the queries [n][H (nope+rope)], the Q-LoRA latent [n][q_rank]
 * (with one), the KV latent and rope key [n][kv_rank+rope]; the rest goes to attend. */
static float *
carve_project (const BwMla *m, int n, BwScratch *cur, BwMlaWork *work)
{
  gsize f = sizeof (float);
  work->q = bw_scratch_take (cur, (gsize) n * m->n_heads * (m->nope + m->rope) * f);
  work->c_q = m->q_rank ? bw_scratch_take (cur, (gsize) n * m->q_rank * f) : NULL;
  float *a = bw_scratch_take (cur, (gsize) n * (m->kv_rank + m->rope) * f);
  work->cursor = *cur;
  return a;
}

int
bw_mla_absorb_crossover (const BwMla *m)
{
  int per_key_absorbed = 2 * m->kv_rank + m->rope;
  int per_key_dense = m->nope + m->rope + m->v_dim;
  if (per_key_absorbed <= per_key_dense)
    return G_MAXINT;
  return (m->nope + m->v_dim) * m->kv_rank / (per_key_absorbed - per_key_dense);
}

void
bw_mla_project (const BwMla *m, const float *x, int n, int64_t pos0, float *cache, int stride,
                void *scratch, BwMlaWork *work, BwPool *pool)
{
  int H = m->n_heads, dn = m->nope, dr = m->rope, dq = dn + dr, R = m->kv_rank;
  BwScratch cur = bw_scratch_init (scratch, bw_mla_scratch_bytes (m, n, bw_pool_size (pool)));
  float *a = carve_project (m, n, &cur, work);

  if (m->q_rank)
    {
      bw_matmul (&m->q_a, x, n, work->c_q, pool);
      bw_rmsnorm_rows (work->c_q, work->c_q, m->q_a_norm, n, m->q_rank, m->latent_eps);
      bw_matmul (&m->q_b, work->c_q, n, work->q, pool);
    }
  else
    bw_matmul (&m->q_proj, x, n, work->q, pool);
  bw_matmul (&m->kv_a, x, n, a, pool);

  for (int i = 0; i < n; i++)
    {
      float *row = cache + (pos0 + i) * stride;
      const float *ai = a + (gsize) i * (R + dr);
      bw_rmsnorm (row, ai, m->kv_a_norm, R, m->latent_eps);
      memcpy (row + R, ai + R, dr * sizeof (float));
      if (m->rope_hook.apply)
        {
          m->rope_hook.apply (m->rope_hook.ctx, row + R, dr, pos0 + i);
          for (int h = 0; h < H; h++)
            m->rope_hook.apply (m->rope_hook.ctx, work->q + ((gsize) i * H + h) * dq + dn, dr,
                                pos0 + i);
        }
    }
}

/* Running softmax state: max, sum of exponentials, weighted accumulator. */
static inline void
online_add (float *mx, float *l, float *acc, const float *v, int n, float s)
{
  if (s > *mx)
    {
      float f = expf (*mx - s);
      bw_vec_scale (acc, f, n);
      *l *= f;
      *mx = s;
    }
  float p = expf (s - *mx);
  *l += p;
  bw_vec_axpy (acc, v, p, n);
}

/* First index in the ascending list at or after t. */
static int
lower_bound (const int32_t *list, int n, int64_t t)
{
  int lo = 0, hi = n;
  while (lo < hi)
    {
      int mid = (lo + hi) / 2;
      if (list[mid] < t)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

typedef struct {
  const BwMla *m;
  const BwMlaWork *w;
  int n;
  int64_t pos0;
  const float *cache;
  int stride;
  const BwKeySelect *sel;
  float *qt, *part, *rowbuf, *ybuf;   /* absorbed */
  float *blk, *sc;                    /* absorbed: per-thread key block and its scores */
  int splits;                         /* absorbed: key ranges per query row */
  float *kvt, *st;                    /* reconstruct */
  int64_t t0, nt;
  float *o;
  BwIsa isa;                          /* the weights' kernel level, for products of the cache */
} AttnCtx;

/* bw_mla_attend's first takes: the attention output and the gate's product [n][H v]. */
static void
carve_out (const BwMla *m, int n, BwScratch *cur, float **o, float **g)
{
  gsize hv = (gsize) n * m->n_heads * m->v_dim * sizeof (float);
  *o = bw_scratch_take (cur, hv);
  *g = bw_scratch_take (cur, hv);
}

/* Each thread's row in the absorbed path: a decoded kv_b row or the merged state. */
static gsize
row_floats (const BwMla *m)
{
  return (gsize) m->kv_rank;
}

/* The absorbed path: the absorbed queries, each (row, key range) job's running states,
 * rows per thread, the rows before o_proj's value product, each thread's key block and
 * scores. */
static void
carve_absorbed (const BwMla *m, int n, int threads, BwScratch *cur, AttnCtx *c)
{
  gsize H = m->n_heads, R = m->kv_rank, w = R + m->rope, f = sizeof (float);
  gsize nt = MAX (threads, 1), hw = H * (m->nope + m->v_dim);
  c->splits = MAX ((int) nt / MAX (n, 1), 1);
  c->qt = bw_scratch_take (cur, n * H * w * f);
  c->part = bw_scratch_take (cur, (gsize) n * c->splits * H * (R + 2) * f);
  c->rowbuf = bw_scratch_take (cur, nt * row_floats (m) * f);
  c->ybuf = bw_scratch_take (cur, n * hw * f);
  c->blk = bw_scratch_take (cur, nt * KEY_BLOCK * w * f);
  c->sc = bw_scratch_take (cur, nt * KEY_BLOCK * H * f);
}

/* The reconstructing path: a tile of cached latents, their K/V, each (row, head)'s running
 * softmax state. */
static float *
carve_reconstruct (const BwMla *m, int n, BwScratch *cur, AttnCtx *c)
{
  gsize H = m->n_heads, f = sizeof (float), hw = H * (m->nope + m->v_dim);
  float *ctile = bw_scratch_take (cur, (gsize) KV_TILE * m->kv_rank * f);
  c->kvt = bw_scratch_take (cur, KV_TILE * hw * f);
  c->st = bw_scratch_take (cur, (gsize) n * H * (m->v_dim + 2) * f);
  return ctile;
}

gsize
bw_mla_scratch_bytes (const BwMla *m, int n, int n_threads)
{
  BwScratch s = bw_scratch_measure ();
  BwMlaWork work;
  AttnCtx c = { 0 };
  float *o, *g;

  carve_project (m, n, &s, &work);
  carve_out (m, n, &s, &o, &g);
  BwScratch absorbed = s, reconstruct = s;
  carve_absorbed (m, n, n_threads, &absorbed, &c);
  carve_reconstruct (m, n, &reconstruct, &c);
  return MAX (bw_scratch_used (&absorbed), bw_scratch_used (&reconstruct));
}

/* q~ = [W_UK,h^T q_nope, q_rope] * scale for every query row of head h, so that one dot
 * with a cached row [c_kv, k_rope] is the score. */
static void
absorb_queries (const AttnCtx *c, int h, float *row)
{
  const BwMla *m = c->m;
  int H = m->n_heads, dn = m->nope, dr = m->rope, dq = dn + dr, R = m->kv_rank, w = R + dr;
  for (int i = 0; i < c->n; i++)
    {
      float *qt = c->qt + ((gsize) i * H + h) * w;
      const float *q = c->w->q + ((gsize) i * H + h) * dq;
      memset (qt, 0, R * sizeof (float));
      for (int j = 0; j < dr; j++)
        qt[R + j] = q[dn + j] * m->scale;
    }
  for (int i = 0; i < c->n && m->k_b.data != NULL; i++)
    {
      /* k_b's row h R + r is W_UK,h's column r, and lands at qt[r] */
      float *qt = c->qt + ((gsize) i * H + h) * w;
      bw_matvec_rows (&m->k_b, c->w->q + ((gsize) i * H + h) * dq, qt - (gsize) h * R,
                      (int64_t) h * R, (int64_t) (h + 1) * R);
      for (int r = 0; r < R; r++)
        qt[r] *= m->scale;
    }
  for (int j = 0; j < dn && m->k_b.data == NULL; j++)
    {
      bw_matrix_dequant_row (&m->kv_b, (int64_t) h * (dn + m->v_dim) + j, row);
      for (int i = 0; i < c->n; i++)
        bw_vec_axpy (c->qt + ((gsize) i * H + h) * w, row,
              c->w->q[((gsize) i * H + h) * dq + j] * m->scale, R);
    }
}

static void
absorb_head (void *ctx, int h, int tid)
{
  const AttnCtx *c = ctx;
  absorb_queries (c, h, c->rowbuf + (gsize) tid * row_floats (c->m));
}

/* Folds a block of nb keys (rows of blk, scores sc[h][0..nb)) into every head's state. */
static void
absorbed_fold (const AttnCtx *c, float *part, const float *blk, const float *sc, int nb)
{
  int H = c->m->n_heads, R = c->m->kv_rank, w = R + c->m->rope;
  for (int h = 0; h < H; h++)
    {
      float *st = part + (gsize) h * (R + 2);
      const float *sh = sc + (gsize) h * nb;
      float bmax = -INFINITY;
      for (int t = 0; t < nb; t++)
        bmax = fmaxf (bmax, sh[t]);
      if (bmax > st[0])
        {
          float f = expf (st[0] - bmax);
          st[1] *= f;
          bw_vec_scale (st + 2, f, R);
          st[0] = bmax;
        }
      for (int t = 0; t < nb; t++)
        {
          float p = expf (sh[t] - st[0]);
          st[1] += p;
          bw_vec_axpy (st + 2, blk + (gsize) t * w, p, R);
        }
    }
}

/* Keys [lo, hi) of query row i's key list against every head, KEY_BLOCK at a time: the
 * rows are gathered once, scored for all heads with one matrix product, and folded into a
 * partial softmax state (max, sum, R-wide accumulator) per head. */
static void
absorbed_split (void *ctx, int job, int tid)
{
  const AttnCtx *c = ctx;
  const BwMla *m = c->m;
  int H = m->n_heads, R = m->kv_rank, w = R + m->rope;
  int i = job / c->splits, sp = job % c->splits;
  int64_t qpos = c->pos0 + i;
  int n_keys = c->sel ? c->sel->count[i] : (int) (qpos + 1);
  const int32_t *keys = c->sel ? c->sel->idx + (gsize) i * c->sel->stride : NULL;
  int lo = (int) ((int64_t) n_keys * sp / c->splits);
  int hi = (int) ((int64_t) n_keys * (sp + 1) / c->splits);
  float *part = c->part + (gsize) job * H * (R + 2);
  float *blk = c->blk + (gsize) tid * KEY_BLOCK * w;
  float *sc = c->sc + (gsize) tid * KEY_BLOCK * H;

  for (int h = 0; h < H; h++)
    {
      float *st = part + (gsize) h * (R + 2);
      st[0] = -INFINITY;
      memset (st + 1, 0, (R + 1) * sizeof (float));
    }
  for (int j0 = lo; j0 < hi; j0 += KEY_BLOCK)
    {
      int nb = MIN (KEY_BLOCK, hi - j0);
      for (int t = 0; t < nb; t++)
        {
          int64_t key = keys ? keys[j0 + t] : j0 + t;
          memcpy (blk + (gsize) t * w, c->cache + key * c->stride, w * sizeof (float));
        }
      BwMatrix kb = { .fmt = BW_FMT_F32, .rows = nb, .cols = w, .data = blk, .isa = c->isa };
      bw_matmul (&kb, c->qt + (gsize) i * H * w, H, sc, NULL);
      absorbed_fold (c, part, blk, sc, nb);
    }
}

/* Merges the partial states of (row i, head h) and applies W_UV,h. */
static void
absorbed_merge (void *ctx, int job, int tid)
{
  const AttnCtx *c = ctx;
  const BwMla *m = c->m;
  int H = m->n_heads, dn = m->nope, dv = m->v_dim, R = m->kv_rank, hw = H * (dn + dv);
  int i = job / H, h = job % H;
  float *acc = c->rowbuf + (gsize) tid * row_floats (m);
  float mx = -INFINITY, l = 0.0f;

  for (int sp = 0; sp < c->splits; sp++)
    mx = fmaxf (mx, c->part[((gsize) (i * c->splits + sp) * H + h) * (R + 2)]);
  memset (acc, 0, R * sizeof (float));
  for (int sp = 0; sp < c->splits && mx > -INFINITY; sp++)
    {
      const float *st = c->part + ((gsize) (i * c->splits + sp) * H + h) * (R + 2);
      if (st[1] == 0.0f)
        continue;
      float f = expf (st[0] - mx);
      l += st[1] * f;
      bw_vec_axpy (acc, st + 2, f, R);
    }
  float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int r = 0; r < R; r++)
    acc[r] *= inv;
  float *o = c->o + ((gsize) i * H + h) * dv;
  if (m->v_b.data != NULL)
    {
      /* v_b's row h dv + v lands at o[v] */
      bw_matvec_rows (&m->v_b, acc, o - (gsize) h * dv, (int64_t) h * dv, (int64_t) (h + 1) * dv);
      return;
    }
  float *y = c->ybuf + (gsize) i * hw;
  int64_t r0 = (int64_t) h * (dn + dv) + dn;
  bw_matvec_rows (&m->kv_b, acc, y, r0, r0 + dv);
  memcpy (o, y + r0, dv * sizeof (float));
}

/* One tile of reconstructed keys/values [t0, t0+nt) against every query row of head h. */
static void
dense_head_tile (void *ctx, int h, int tid)
{
  const AttnCtx *c = ctx;
  const BwMla *m = c->m;
  int H = m->n_heads, dn = m->nope, dr = m->rope, dq = dn + dr, dv = m->v_dim, R = m->kv_rank;
  int hw = H * (dn + dv);

  for (int i = 0; i < c->n; i++)
    {
      int64_t qpos = c->pos0 + i, last = MIN (c->t0 + c->nt - 1, qpos);
      if (last < c->t0)
        continue;
      const float *qn = c->w->q + ((gsize) i * H + h) * dq;
      float *st = c->st + ((gsize) i * H + h) * (dv + 2);
      int j = 0, n_keys = (int) (last - c->t0 + 1);
      const int32_t *keys = NULL;
      if (c->sel)
        {
          const int32_t *list = c->sel->idx + (gsize) i * c->sel->stride;
          j = lower_bound (list, c->sel->count[i], c->t0);
          n_keys = lower_bound (list, c->sel->count[i], last + 1);
          keys = list;
        }
      for (; j < n_keys; j++)
        {
          int64_t t = keys ? keys[j] : c->t0 + j;
          const float *kn = c->kvt + (t - c->t0) * hw + (gsize) h * (dn + dv);
          const float *kr = c->cache + t * c->stride + R;
          float s = (bw_vec_dot (qn, kn, dn) + bw_vec_dot (qn + dn, kr, dr)) * m->scale;
          online_add (&st[0], &st[1], st + 2, kn + dn, dv, s);
        }
    }
}

static void
attend_reconstruct (AttnCtx *c, BwScratch cur, BwPool *pool)
{
  const BwMla *m = c->m;
  int H = m->n_heads, dv = m->v_dim, R = m->kv_rank;
  float *ctile = carve_reconstruct (m, c->n, &cur, c);

  for (gsize k = 0; k < (gsize) c->n * H; k++)
    {
      float *st = c->st + k * (dv + 2);
      st[0] = -INFINITY;
      memset (st + 1, 0, (dv + 1) * sizeof (float));
    }
  int64_t total = c->pos0 + c->n;
  for (c->t0 = 0; c->t0 < total; c->t0 += KV_TILE)
    {
      c->nt = MIN (KV_TILE, total - c->t0);
      for (int64_t t = 0; t < c->nt; t++)
        memcpy (ctile + t * R, c->cache + (c->t0 + t) * c->stride, R * sizeof (float));
      bw_matmul (&m->kv_b, ctile, (int) c->nt, c->kvt, pool);
      bw_pool_run (pool, dense_head_tile, c, H);
    }
  for (gsize k = 0; k < (gsize) c->n * H; k++)
    {
      const float *st = c->st + k * (dv + 2);
      float inv = st[1] > 0.0f ? 1.0f / st[1] : 0.0f;
      for (int v = 0; v < dv; v++)
        c->o[k * dv + v] = st[2 + v] * inv;
    }
}

void
bw_mla_attend (const BwMla *m, const BwMlaWork *work, const float *x, int n, int64_t pos0,
               const float *cache, int stride, const BwKeySelect *select, int force_path,
               float *out, BwPool *pool)
{
  int H = m->n_heads, dv = m->v_dim;
  BwScratch cur = work->cursor;
  float *o, *g;
  carve_out (m, n, &cur, &o, &g);
  AttnCtx c = { .m = m, .w = work, .n = n, .pos0 = pos0, .cache = cache, .stride = stride,
                .sel = select, .o = o,
                .isa = m->k_b.data != NULL ? m->k_b.isa : m->kv_b.isa };
  gboolean absorbed = force_path == 1 || m->k_b.data != NULL
                      || (force_path == 0 && n <= m->absorb_max_tokens);

  if (absorbed)
    {
      carve_absorbed (m, n, bw_pool_size (pool), &cur, &c);
      bw_pool_run (pool, absorb_head, &c, H);
      bw_pool_run (pool, absorbed_split, &c, n * c.splits);
      bw_pool_run (pool, absorbed_merge, &c, n * H);
    }
  else
    attend_reconstruct (&c, cur, pool);

  if (m->has_gate)
    {
      bw_matmul (&m->g_proj, x, n, g, pool);
      for (gsize i = 0; i < (gsize) n * H * dv; i++)
        o[i] *= bw_sigmoid (g[i]);
    }
  bw_matmul (&m->o_proj, o, n, out, pool);
}

void
bw_mla_forward (const BwMla *m, const float *x, int n, int64_t pos0, float *cache, int stride,
                float *out, void *scratch, BwPool *pool)
{
  BwMlaWork work;
  bw_mla_project (m, x, n, pos0, cache, stride, scratch, &work, pool);
  bw_mla_attend (m, &work, x, n, pos0, cache, stride, NULL, 0, out, pool);
}
