#include "blocks/kda.h"

#include <math.h>
#include <string.h>

#include "blocks/activation.h"
#include "blocks/norm.h"
#include "blocks/scratch.h"
#include "blocks/vec.h"

gsize
bw_kda_state_floats (const BwKda *k)
{
  gsize P = (gsize) k->n_heads * k->head_dim;
  return (gsize) k->n_heads * k->head_dim * k->head_dim + 3 * P * (k->conv - 1);
}

/* q k v, decay, gate, o: [n][P]; the two low-rank products [n][d]; beta [n][heads]; the
 * conv window. */
typedef struct {
  float *q, *k, *v, *decay, *gate, *o, *low, *low2, *beta, *win;
} KdaScratch;

static void
carve (const BwKda *k, int n, BwScratch *cur, KdaScratch *s)
{
  gsize P = (gsize) n * k->n_heads * k->head_dim * sizeof (float);
  gsize low = (gsize) n * k->head_dim * sizeof (float);
  s->q = bw_scratch_take (cur, P);
  s->k = bw_scratch_take (cur, P);
  s->v = bw_scratch_take (cur, P);
  s->decay = bw_scratch_take (cur, P);
  s->gate = bw_scratch_take (cur, P);
  s->o = bw_scratch_take (cur, P);
  s->low = bw_scratch_take (cur, low);
  s->low2 = bw_scratch_take (cur, low);
  s->beta = bw_scratch_take (cur, (gsize) n * k->n_heads * sizeof (float));
  s->win = bw_scratch_take (cur, (gsize) (n + k->conv) * sizeof (float));
}

gsize
bw_kda_scratch_bytes (const BwKda *k, int n)
{
  BwScratch m = bw_scratch_measure ();
  KdaScratch s;
  carve (k, n, &m, &s);
  return bw_scratch_used (&m);
}

/* Causal depthwise conv of n new values per channel against the FIFO, in place, then SiLU. */
static void
short_conv (float *y, int n, int P, int Kc, const float *w, float *fifo, float *win)
{
  int h = Kc - 1;
  for (int c = 0; c < P; c++)
    {
      memcpy (win, fifo + (gsize) c * h, h * sizeof (float));
      for (int t = 0; t < n; t++)
        win[h + t] = y[(gsize) t * P + c];
      const float *wc = w + (gsize) c * Kc;
      for (int t = 0; t < n; t++)
        {
          float s = 0.0f;
          for (int j = 0; j < Kc; j++)
            s += wc[j] * win[t + j];
          y[(gsize) t * P + c] = bw_silu (s);
        }
      memcpy (fifo + (gsize) c * h, win + n, h * sizeof (float));
    }
}

typedef struct {
  const BwKda *k;
  int n;
  float *q, *kk, *v, *decay, *beta, *o, *S;
} RecurCtx;

/* The delta rule for head h over the n tokens, in order. */
static void
recur_head (void *ctx, int h, int tid)
{
  const RecurCtx *c = ctx;
  int d = c->k->head_dim, P = c->k->n_heads * d;
  float *S = c->S + (gsize) h * d * d;
  float u[d];

  for (int t = 0; t < c->n; t++)
    {
      gsize off = (gsize) t * P + (gsize) h * d;
      const float *q = c->q + off, *kv = c->kk + off, *v = c->v + off, *a = c->decay + off;
      float beta = c->beta[(gsize) t * c->k->n_heads + h];
      float *o = c->o + off;

      /* Pass 1: decay each row and take its share of S^T k. Pass 2: the rank-one update
       * and the read-out, each row touched once. */
      memcpy (u, v, d * sizeof (float));
      for (int i = 0; i < d; i++)
        {
          float *row = S + (gsize) i * d;
          bw_vec_scale (row, expf (a[i]), d);
          bw_vec_axpy (u, row, -kv[i], d);
        }
      memset (o, 0, d * sizeof (float));
      for (int i = 0; i < d; i++)
        {
          float *row = S + (gsize) i * d;
          bw_vec_axpy (row, u, beta * kv[i], d);
          bw_vec_axpy (o, row, q[i], d);
        }
    }
}

static void
decay_gate (const BwKda *k, float *z, int n)
{
  int d = k->head_dim, P = k->n_heads * d;
  for (int t = 0; t < n; t++)
    for (int h = 0; h < k->n_heads; h++)
      {
        float A = expf (k->a_log[h]);
        float *zh = z + (gsize) t * P + (gsize) h * d;
        for (int i = 0; i < d; i++)
          {
            float zi = zh[i] + k->dt_bias[h * d + i];
            zh[i] = k->bounded ? k->lower_bound * bw_sigmoid (A * zi) : -A * bw_softplus (zi);
          }
      }
}

void
bw_kda_forward (const BwKda *k, const float *x, int n, float *state, float *out, void *scratch,
                BwPool *pool)
{
  int d = k->head_dim, Hk = k->n_heads, P = Hk * d, Kc = k->conv;
  BwScratch cur = bw_scratch_init (scratch, bw_kda_scratch_bytes (k, n));
  KdaScratch s;
  carve (k, n, &cur, &s);
  float *q = s.q, *kk = s.k, *v = s.v, *decay = s.decay, *gate = s.gate, *o = s.o;
  float *low = s.low, *low2 = s.low2, *beta = s.beta, *win = s.win;
  float *S = state;
  float *fifo = state + (gsize) Hk * d * d;
  gsize fifo_len = (gsize) P * (Kc - 1);

  bw_matmul (&k->q_proj, x, n, q, pool);
  bw_matmul (&k->k_proj, x, n, kk, pool);
  bw_matmul (&k->v_proj, x, n, v, pool);
  short_conv (q, n, P, Kc, k->q_conv, fifo, win);
  short_conv (kk, n, P, Kc, k->k_conv, fifo + fifo_len, win);
  short_conv (v, n, P, Kc, k->v_conv, fifo + 2 * fifo_len, win);
  float qscale = 1.0f / sqrtf ((float) d);
  for (gsize r = 0; r < (gsize) n * Hk; r++)
    {
      bw_l2norm (q + r * d, d, k->l2_eps);
      bw_l2norm (kk + r * d, d, k->l2_eps);
      for (int i = 0; i < d; i++)
        q[r * d + i] *= qscale;
    }

  bw_matmul (&k->f_a, x, n, low, pool);
  bw_matmul (&k->f_b, low, n, decay, pool);
  decay_gate (k, decay, n);
  bw_matmul (&k->b_proj, x, n, beta, pool);
  for (gsize i = 0; i < (gsize) n * Hk; i++)
    beta[i] = bw_sigmoid (beta[i]);

  RecurCtx rc = { k, n, q, kk, v, decay, beta, o, S };
  bw_pool_run (pool, recur_head, &rc, Hk);

  if (k->full_rank_gate)
    bw_matmul (&k->g_proj, x, n, gate, pool);
  else
    {
      bw_matmul (&k->g_a, x, n, low2, pool);
      bw_matmul (&k->g_b, low2, n, gate, pool);
    }
  for (gsize r = 0; r < (gsize) n * Hk; r++)
    {
      bw_rmsnorm (o + r * d, o + r * d, k->o_norm, d, k->eps);
      for (int i = 0; i < d; i++)
        o[r * d + i] *= bw_sigmoid (gate[r * d + i]);
    }
  bw_matmul (&k->o_proj, o, n, out, pool);
}
