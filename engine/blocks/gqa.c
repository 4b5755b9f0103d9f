#include "blocks/gqa.h"

#include <math.h>
#include <string.h>

#include "blocks/activation.h"
#include "blocks/norm.h"
#include "blocks/scratch.h"
#include "blocks/vec.h"

static int
q_width (const BwGqa *a)
{
  return a->n_heads * a->head_dim * (a->output_gate ? 2 : 1);
}

/* Projections q [n][q_width], k and v [n][kv heads * head_dim]; attention output o
 * [n][heads * head_dim]. */
typedef struct {
  float *q, *k, *v, *o;
} GqaScratch;

static void
carve (const BwGqa *a, int n, BwScratch *cur, GqaScratch *s)
{
  gsize kv = (gsize) n * a->n_kv_heads * a->head_dim * sizeof (float);
  s->q = bw_scratch_take (cur, (gsize) n * q_width (a) * sizeof (float));
  s->k = bw_scratch_take (cur, kv);
  s->v = bw_scratch_take (cur, kv);
  s->o = bw_scratch_take (cur, (gsize) n * a->n_heads * a->head_dim * sizeof (float));
}

gsize
bw_gqa_scratch_bytes (const BwGqa *a, int n)
{
  BwScratch m = bw_scratch_measure ();
  GqaScratch s;
  carve (a, n, &m, &s);
  return bw_scratch_used (&m);
}

static void
add_bias (float *y, const float *b, int n, int width)
{
  if (b == NULL)
    return;
  for (int i = 0; i < n; i++)
    for (int c = 0; c < width; c++)
      y[(gsize) i * width + c] += b[c];
}

typedef struct {
  const BwGqa *a;
  const float *q;      /* [n][q_width] */
  const float *cache;
  int64_t pos0;
  float *o;            /* [n][H hd] */
} AttnCtx;

/* One (token, head): online softmax over the visible keys, the sink (if any) counted in
 * the normaliser only. */
static void
attend_one (void *ctx, int index, int thread_id)
{
  const AttnCtx *c = ctx;
  const BwGqa *a = c->a;
  int H = a->n_heads, hd = a->head_dim, i = index / H, h = index % H;
  int kvh = h / (H / a->n_kv_heads), stride = bw_gqa_cache_floats (a);
  gsize vofs = (gsize) a->n_kv_heads * hd;
  const float *q = c->q + (gsize) i * q_width (a) + (gsize) h * hd * (a->output_gate ? 2 : 1);
  float *acc = c->o + ((gsize) i * H + h) * hd;
  int64_t pos = c->pos0 + i, lo = a->window > 0 ? MAX (pos - a->window + 1, 0) : 0;
  float mx = -INFINITY, l = 0.0f;

  (void) thread_id;
  memset (acc, 0, hd * sizeof (float));
  for (int64_t j = lo; j <= pos; j++)
    {
      const float *row = c->cache + j * stride;
      float s = bw_vec_dot (q, row + (gsize) kvh * hd, hd) * a->scale;
      if (s > mx)
        {
          float f = expf (mx - s);
          bw_vec_scale (acc, f, hd);
          l *= f;
          mx = s;
        }
      float p = expf (s - mx);
      l += p;
      bw_vec_axpy (acc, row + vofs + (gsize) kvh * hd, p, hd);
    }
  if (a->sinks != NULL)
    {
      float sk = a->sinks[h];
      if (sk > mx)
        {
          float f = expf (mx - sk);
          bw_vec_scale (acc, f, hd);
          l *= f;
          mx = sk;
        }
      l += expf (sk - mx);
    }
  bw_vec_scale (acc, 1.0f / l, hd);
}

void
bw_gqa_forward (const BwGqa *a, const float *x, int n, int64_t pos0, float *cache,
                float *out, void *scratch, BwPool *pool)
{
  int H = a->n_heads, hd = a->head_dim, qw = q_width (a), qstep = a->output_gate ? 2 * hd : hd;
  int kvw = a->n_kv_heads * hd, stride = bw_gqa_cache_floats (a);
  BwScratch cursor = bw_scratch_init (scratch, bw_gqa_scratch_bytes (a, n));
  GqaScratch s;
  carve (a, n, &cursor, &s);
  float *q = s.q, *k = s.k, *v = s.v, *o = s.o;

  bw_matmul (&a->q_proj, x, n, q, pool);
  bw_matmul (&a->k_proj, x, n, k, pool);
  bw_matmul (&a->v_proj, x, n, v, pool);
  add_bias (q, a->q_bias, n, qw);
  add_bias (k, a->k_bias, n, kvw);
  add_bias (v, a->v_bias, n, kvw);

  for (int i = 0; i < n; i++)
    {
      float *qi = q + (gsize) i * qw, *row = cache + (pos0 + i) * stride;
      memcpy (row, k + (gsize) i * kvw, kvw * sizeof (float));
      memcpy (row + kvw, v + (gsize) i * kvw, kvw * sizeof (float));
      for (int h = 0; h < H && a->q_norm; h++)
        bw_rmsnorm (qi + (gsize) h * qstep, qi + (gsize) h * qstep, a->q_norm, hd, a->norm_eps);
      for (int h = 0; h < a->n_kv_heads && a->k_norm; h++)
        bw_rmsnorm (row + (gsize) h * hd, row + (gsize) h * hd, a->k_norm, hd, a->norm_eps);
      if (a->rope != NULL)
        {
          bw_rope_apply (a->rope, qi, H, qstep, pos0 + i);
          bw_rope_apply (a->rope, row, a->n_kv_heads, hd, pos0 + i);
        }
    }

  AttnCtx ctx = { .a = a, .q = q, .cache = cache, .pos0 = pos0, .o = o };
  bw_pool_run (pool, attend_one, &ctx, n * H);

  if (a->output_gate)
    for (int i = 0; i < n; i++)
      for (int h = 0; h < H; h++)
        {
          const float *g = q + (gsize) i * qw + (gsize) h * qstep + hd;
          float *oh = o + ((gsize) i * H + h) * hd;
          for (int d = 0; d < hd; d++)
            oh[d] *= bw_sigmoid (g[d]);
        }
  bw_matmul (&a->o_proj, o, n, out, pool);
  add_bias (out, a->o_bias, n, (int) a->o_proj.rows);
}
