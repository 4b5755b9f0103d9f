#include "blocks/gated-deltanet.h"

#include <math.h>
#include <string.h>

#include "blocks/activation.h"
#include "blocks/norm.h"
#include "blocks/scratch.h"
#include "blocks/vec.h"

#define F(n) bw_scratch_size ((gsize) (n) * sizeof (float))

static int
qkvz_width (const BwGatedDeltaNet *g)
{
  return 2 * g->n_k_heads * g->k_dim + 2 * g->n_v_heads * g->v_dim;
}

gsize
bw_gdn_state_floats (const BwGatedDeltaNet *g)
{
  return (gsize) g->n_v_heads * g->k_dim * g->v_dim
         + (gsize) bw_gdn_conv_dim (g) * (g->conv - 1);
}

gsize
bw_gdn_scratch_bytes (const BwGatedDeltaNet *g, int n)
{
  int C = bw_gdn_conv_dim (g), V = g->n_v_heads * g->v_dim;
  /* projections, the conv input [q|k|v], z, o, b/a, beta/decay, conv window */
  return F (n * qkvz_width (g)) + F (n * 2 * g->n_v_heads) + F (n * C) + 2 * F (n * V)
         + 2 * F (n * g->n_v_heads) + F (n + g->conv);
}

/* Causal depthwise conv of n new values per channel against the FIFO, in place, then SiLU. */
static void
short_conv (float *y, int n, int C, int Kc, const float *w, float *fifo, float *win)
{
  int h = Kc - 1;
  for (int c = 0; c < C; c++)
    {
      memcpy (win, fifo + (gsize) c * h, h * sizeof (float));
      for (int t = 0; t < n; t++)
        win[h + t] = y[(gsize) t * C + c];
      const float *wc = w + (gsize) c * Kc;
      for (int t = 0; t < n; t++)
        {
          float s = 0.0f;
          for (int j = 0; j < Kc; j++)
            s += wc[j] * win[t + j];
          y[(gsize) t * C + c] = bw_silu (s);
        }
      memcpy (fifo + (gsize) c * h, win + n, h * sizeof (float));
    }
}

/* From the per-key-head groups of the projections to [q | k | v] (conv order), z, b, a. */
static void
ungroup (const BwGatedDeltaNet *g, const float *qkvz, const float *ba, int n, float *mixed,
         float *z, float *b, float *a)
{
  int dk = g->k_dim, Hk = g->n_k_heads, r = g->n_v_heads / Hk, rv = r * g->v_dim;
  int C = bw_gdn_conv_dim (g), W = qkvz_width (g), V = g->n_v_heads * g->v_dim;
  int group = 2 * dk + 2 * rv;
  for (int t = 0; t < n; t++)
    for (int k = 0; k < Hk; k++)
      {
        const float *src = qkvz + (gsize) t * W + (gsize) k * group;
        float *row = mixed + (gsize) t * C;
        memcpy (row + k * dk, src, dk * sizeof (float));
        memcpy (row + Hk * dk + k * dk, src + dk, dk * sizeof (float));
        memcpy (row + 2 * Hk * dk + k * rv, src + 2 * dk, rv * sizeof (float));
        memcpy (z + (gsize) t * V + k * rv, src + 2 * dk + rv, rv * sizeof (float));
        const float *bsrc = ba + (gsize) t * 2 * g->n_v_heads + (gsize) k * 2 * r;
        memcpy (b + (gsize) t * g->n_v_heads + k * r, bsrc, r * sizeof (float));
        memcpy (a + (gsize) t * g->n_v_heads + k * r, bsrc + r, r * sizeof (float));
      }
}

typedef struct {
  const BwGatedDeltaNet *g;
  int n;
  const float *mixed, *beta, *decay;
  float *o, *S;
} RecurCtx;

/* The delta rule for value head h over the n tokens, in order. */
static void
recur_head (void *ctx, int h, int tid)
{
  const RecurCtx *c = ctx;
  const BwGatedDeltaNet *g = c->g;
  int dk = g->k_dim, dv = g->v_dim, Hv = g->n_v_heads, kh = h / (Hv / g->n_k_heads);
  int C = bw_gdn_conv_dim (g), Hk = g->n_k_heads;
  float *S = c->S + (gsize) h * dk * dv;
  float u[dv];

  (void) tid;
  for (int t = 0; t < c->n; t++)
    {
      const float *row = c->mixed + (gsize) t * C;
      const float *q = row + kh * dk, *k = row + Hk * dk + kh * dk;
      const float *v = row + 2 * Hk * dk + h * dv;
      float decay = expf (c->decay[(gsize) t * Hv + h]), beta = c->beta[(gsize) t * Hv + h];
      float *o = c->o + (gsize) t * Hv * dv + (gsize) h * dv;

      memcpy (u, v, dv * sizeof (float));
      for (int i = 0; i < dk; i++)
        {
          float *s = S + (gsize) i * dv;
          bw_vec_scale (s, decay, dv);
          bw_vec_axpy (u, s, -k[i], dv);
        }
      memset (o, 0, dv * sizeof (float));
      for (int i = 0; i < dk; i++)
        {
          float *s = S + (gsize) i * dv;
          bw_vec_axpy (s, u, beta * k[i], dv);
          bw_vec_axpy (o, s, q[i], dv);
        }
    }
}

void
bw_gdn_forward (const BwGatedDeltaNet *g, const float *x, int n, float *state, float *out,
                void *scratch, BwPool *pool)
{
  int dk = g->k_dim, dv = g->v_dim, Hk = g->n_k_heads, Hv = g->n_v_heads, Kc = g->conv;
  int C = bw_gdn_conv_dim (g), V = Hv * dv;
  BwScratch cur = bw_scratch_init (scratch, bw_gdn_scratch_bytes (g, n));
  float *qkvz = bw_scratch_take (&cur, (gsize) n * qkvz_width (g) * sizeof (float));
  float *ba = bw_scratch_take (&cur, (gsize) n * 2 * Hv * sizeof (float));
  float *mixed = bw_scratch_take (&cur, (gsize) n * C * sizeof (float));
  float *z = bw_scratch_take (&cur, (gsize) n * V * sizeof (float));
  float *o = bw_scratch_take (&cur, (gsize) n * V * sizeof (float));
  float *beta = bw_scratch_take (&cur, (gsize) n * Hv * sizeof (float));
  float *decay = bw_scratch_take (&cur, (gsize) n * Hv * sizeof (float));
  float *win = bw_scratch_take (&cur, (gsize) (n + Kc) * sizeof (float));
  float *S = state, *fifo = state + (gsize) Hv * dk * dv;

  bw_matmul (&g->in_qkvz, x, n, qkvz, pool);
  bw_matmul (&g->in_ba, x, n, ba, pool);
  ungroup (g, qkvz, ba, n, mixed, z, beta, decay);
  short_conv (mixed, n, C, Kc, g->conv_w, fifo, win);

  float qscale = 1.0f / sqrtf ((float) dk);
  for (int t = 0; t < n; t++)
    for (int k = 0; k < 2 * Hk; k++)
      {
        float *v = mixed + (gsize) t * C + (gsize) k * dk;
        bw_l2norm (v, dk, g->l2_eps);
        if (k < Hk)
          bw_vec_scale (v, qscale, dk);
      }
  for (int t = 0; t < n; t++)
    for (int h = 0; h < Hv; h++)
      {
        gsize i = (gsize) t * Hv + h;
        beta[i] = bw_sigmoid (beta[i]);
        decay[i] = -expf (g->a_log[h]) * bw_softplus (decay[i] + g->dt_bias[h]);
      }

  RecurCtx rc = { g, n, mixed, beta, decay, o, S };
  bw_pool_run (pool, recur_head, &rc, Hv);

  for (gsize r = 0; r < (gsize) n * Hv; r++)
    {
      bw_rmsnorm (o + r * dv, o + r * dv, g->norm, dv, g->eps);
      for (int i = 0; i < dv; i++)
        o[r * dv + i] *= bw_silu (z[r * dv + i]);
    }
  bw_matmul (&g->out_proj, o, n, out, pool);
}
