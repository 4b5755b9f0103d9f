#include "blocks/gated-deltanet.h"

#include <math.h>
#include <string.h>

#include "blocks/activation.h"
#include "blocks/norm.h"
#include "blocks/scratch.h"
#include "blocks/vec.h"

/* Tokens per chunk of the chunked prefill, as the reference's chunk_gated_delta_rule. */
#define CHUNK 64
/* Tokens whose S0 products share one pass over a state row. */
#define TBLOCK 4

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

/* Per value head, for one chunk: u [CHUNK][dv], k.k and q.k [CHUNK][CHUNK], then the
 * cumulative log decay [CHUNK] in doubles, so that the differences of two sums keep the
 * precision of the per-token decays, then the coefficients of the state products: k and q
 * of a block of tokens [dk][TBLOCK] each, the weighted keys of the state update [CHUNK][dk]. */
static gsize
chunk_floats (const BwGatedDeltaNet *g)
{
  return (gsize) CHUNK * g->v_dim + 2 * CHUNK * CHUNK + 2 * CHUNK
         + (gsize) (2 * TBLOCK + CHUNK) * g->k_dim;
}

/* The projections, the conv input [q|k|v], z, o [n][V], b/a, beta/decay, the conv window,
 * and for a prefill (n > 1) each value head's chunk work. */
typedef struct {
  float *qkvz, *ba, *mixed, *z, *o, *beta, *decay, *win, *work;
} GdnScratch;

static void
carve (const BwGatedDeltaNet *g, int n, BwScratch *cur, GdnScratch *s)
{
  gsize f = sizeof (float), Hv = g->n_v_heads, V = Hv * g->v_dim;
  s->qkvz = bw_scratch_take (cur, (gsize) n * qkvz_width (g) * f);
  s->ba = bw_scratch_take (cur, (gsize) n * 2 * Hv * f);
  s->mixed = bw_scratch_take (cur, (gsize) n * bw_gdn_conv_dim (g) * f);
  s->z = bw_scratch_take (cur, (gsize) n * V * f);
  s->o = bw_scratch_take (cur, (gsize) n * V * f);
  s->beta = bw_scratch_take (cur, (gsize) n * Hv * f);
  s->decay = bw_scratch_take (cur, (gsize) n * Hv * f);
  s->win = bw_scratch_take (cur, (gsize) (n + g->conv) * f);
  s->work = n > 1 ? bw_scratch_take (cur, Hv * chunk_floats (g) * f) : NULL;
}

gsize
bw_gdn_scratch_bytes (const BwGatedDeltaNet *g, int n)
{
  BwScratch m = bw_scratch_measure ();
  GdnScratch s;
  carve (g, n, &m, &s);
  return bw_scratch_used (&m);
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
  float *work;             /* chunk_floats per value head */
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

/* Token t's q, k and v for value head h. */
static inline const float *
tok_q (const RecurCtx *c, int t, int kh)
{
  return c->mixed + (gsize) t * bw_gdn_conv_dim (c->g) + (gsize) kh * c->g->k_dim;
}

static inline const float *
tok_k (const RecurCtx *c, int t, int kh)
{
  return tok_q (c, t, kh) + (gsize) c->g->n_k_heads * c->g->k_dim;
}

static inline const float *
tok_v (const RecurCtx *c, int t, int h)
{
  return tok_q (c, t, 0) + 2 * (gsize) c->g->n_k_heads * c->g->k_dim + (gsize) h * c->g->v_dim;
}

static inline BwV4
bcast (float x)
{
  return (BwV4) { x, x, x, x };
}

/* For TBLOCK (4) tokens: u_j -= sum_i kc[i][j] S[i] and o_j += sum_i qc[i][j] S[i], four
 * columns at a time with the eight sums in registers (dv a multiple of 4). Rows of u and o
 * past nb are computed into a spare row and dropped. */
static void
state_products (const float *S, int dk, int dv, const float *kc, const float *qc, float *u,
                float *const o[TBLOCK], int nb)
{
  G_STATIC_ASSERT (TBLOCK == 4);
  for (int c = 0; c < dv; c += 4)
    {
      BwV4 z = bcast (0.0f);
      BwV4 u0 = bw_v4_load (u + c), u1 = nb > 1 ? bw_v4_load (u + dv + c) : z;
      BwV4 u2 = nb > 2 ? bw_v4_load (u + 2 * dv + c) : z;
      BwV4 u3 = nb > 3 ? bw_v4_load (u + 3 * dv + c) : z;
      BwV4 o0 = z, o1 = z, o2 = z, o3 = z;
      for (int i = 0; i < dk; i++)
        {
          BwV4 sv = bw_v4_load (S + (gsize) i * dv + c);
          const float *k = kc + i * 4, *q = qc + i * 4;
          u0 += sv * bcast (k[0]);
          u1 += sv * bcast (k[1]);
          u2 += sv * bcast (k[2]);
          u3 += sv * bcast (k[3]);
          o0 += sv * bcast (q[0]);
          o1 += sv * bcast (q[1]);
          o2 += sv * bcast (q[2]);
          o3 += sv * bcast (q[3]);
        }
      BwV4 us[4] = { u0, u1, u2, u3 }, os[4] = { o0, o1, o2, o3 };
      for (int j = 0; j < nb; j++)
        {
          bw_v4_store (u + (gsize) j * dv + c, us[j]);
          bw_v4_store (o[j] + c, os[j]);
        }
    }
}

/* The part of the L tokens from t0 that comes from the state S0 entering the chunk:
 * u_i = v_i - exp(G_i) S0^T k_i and o_i = exp(G_i) S0^T q_i, TBLOCK tokens per pass over S0
 * so that each state row is read L / TBLOCK times rather than written every token. */
static void
chunk_from_state (const RecurCtx *c, int h, int t0, int L, const double *G, float *u,
                  float *kc, float *qc)
{
  const BwGatedDeltaNet *g = c->g;
  int dk = g->k_dim, dv = g->v_dim, Hv = g->n_v_heads, kh = h / (Hv / g->n_k_heads);
  const float *S = c->S + (gsize) h * dk * dv;

  for (int b = 0; b < L; b += TBLOCK)
    {
      int nb = MIN (TBLOCK, L - b);
      float *o[TBLOCK];
      for (int j = 0; j < TBLOCK; j++)
        {
          int t = t0 + b + MIN (j, nb - 1);
          const float *q = tok_q (c, t, kh), *k = tok_k (c, t, kh);
          float e = j < nb ? (float) exp (G[b + j]) : 0.0f;
          o[j] = c->o + (gsize) t * Hv * dv + (gsize) h * dv;
          if (j < nb)
            {
              memcpy (u + (gsize) (b + j) * dv, tok_v (c, t, h), dv * sizeof (float));
              memset (o[j], 0, dv * sizeof (float));
            }
          for (int i = 0; i < dk; i++)
            {
              kc[i * TBLOCK + j] = -e * k[i];
              qc[i * TBLOCK + j] = e * q[i];
            }
        }
      if (dv % 4 == 0)
        {
          state_products (S, dk, dv, kc, qc, u + (gsize) b * dv, o, nb);
          continue;
        }
      for (int i = 0; i < dk; i++)
        {
          const float *s = S + (gsize) i * dv;
          for (int j = 0; j < nb; j++)
            {
              bw_vec_axpy (u + (gsize) (b + j) * dv, s, kc[i * TBLOCK + j], dv);
              bw_vec_axpy (o[j], s, qc[i * TBLOCK + j], dv);
            }
        }
    }
}

/* S = carry S + sum_j kw[j] u_j^T (kw [L][dk]); four rows by four columns at a time with the
 * sums in registers where dk and dv are multiples of 4. */
static void
state_update (float *S, int dk, int dv, float carry, const float *kw, const float *u, int L)
{
  if (dk % 4 != 0 || dv % 4 != 0)
    {
      for (int i = 0; i < dk; i++)
        {
          float *s = S + (gsize) i * dv;
          bw_vec_scale (s, carry, dv);
          for (int j = 0; j < L; j++)
            bw_vec_axpy (s, u + (gsize) j * dv, kw[(gsize) j * dk + i], dv);
        }
      return;
    }
  for (int i = 0; i < dk; i += 4)
    for (int c = 0; c < dv; c += 4)
      {
        float *s = S + (gsize) i * dv + c;
        BwV4 k = bcast (carry);
        BwV4 a0 = bw_v4_load (s) * k, a1 = bw_v4_load (s + dv) * k;
        BwV4 a2 = bw_v4_load (s + 2 * dv) * k, a3 = bw_v4_load (s + 3 * dv) * k;
        for (int j = 0; j < L; j++)
          {
            BwV4 uv = bw_v4_load (u + (gsize) j * dv + c);
            const float *w = kw + (gsize) j * dk + i;
            a0 += uv * bcast (w[0]);
            a1 += uv * bcast (w[1]);
            a2 += uv * bcast (w[2]);
            a3 += uv * bcast (w[3]);
          }
        bw_v4_store (s, a0);
        bw_v4_store (s + dv, a1);
        bw_v4_store (s + 2 * dv, a2);
        bw_v4_store (s + 3 * dv, a3);
      }
}

/* The delta rule for value head h over its tokens in chunks of CHUNK, the schedule of the
 * reference's chunked prefill. In a chunk with cumulative log decay G and entering state
 * S0, the updates u_i = beta_i (v_i - exp(G_i) S0^T k_i
 * - sum_{j<i} exp(G_i - G_j) (k_i.k_j) u_j) solve a unit lower-triangular system (forward
 * substitution here); o_i = exp(G_i) S0^T q_i + sum_{j<=i} exp(G_i - G_j) (q_i.k_j) u_j and
 * the state leaves as exp(G_L) S0 + sum_j exp(G_L - G_j) k_j u_j^T. */
static void
chunk_head (void *ctx, int h, int tid)
{
  const RecurCtx *c = ctx;
  const BwGatedDeltaNet *g = c->g;
  int dk = g->k_dim, dv = g->v_dim, Hv = g->n_v_heads, kh = h / (Hv / g->n_k_heads);
  float *S = c->S + (gsize) h * dk * dv;
  float *u = c->work + (gsize) h * chunk_floats (g);
  float *kk = u + (gsize) CHUNK * dv, *qk = kk + CHUNK * CHUNK;
  double *G = (double *) (qk + CHUNK * CHUNK);
  float *kc = (float *) (G + CHUNK), *qc = kc + TBLOCK * dk, *kw = qc + TBLOCK * dk;

  (void) tid;
  for (int t0 = 0; t0 < c->n; t0 += CHUNK)
    {
      int L = MIN (CHUNK, c->n - t0);
      double acc = 0.0;
      for (int i = 0; i < L; i++)
        G[i] = acc += c->decay[(gsize) (t0 + i) * Hv + h];
      for (int i = 0; i < L; i++)
        for (int j = 0; j <= i; j++)
          {
            const float *kj = tok_k (c, t0 + j, kh);
            kk[i * CHUNK + j] = bw_vec_dot (tok_k (c, t0 + i, kh), kj, dk);
            qk[i * CHUNK + j] = bw_vec_dot (tok_q (c, t0 + i, kh), kj, dk);
          }
      chunk_from_state (c, h, t0, L, G, u, kc, qc);
      for (int i = 0; i < L; i++)
        {
          float *ui = u + (gsize) i * dv;
          float *oi = c->o + (gsize) (t0 + i) * Hv * dv + (gsize) h * dv;
          for (int j = 0; j < i; j++)
            bw_vec_axpy (ui, u + (gsize) j * dv, -expf ((float) (G[i] - G[j])) * kk[i * CHUNK + j],
                         dv);
          bw_vec_scale (ui, c->beta[(gsize) (t0 + i) * Hv + h], dv);
          for (int j = 0; j <= i; j++)
            bw_vec_axpy (oi, u + (gsize) j * dv, expf ((float) (G[i] - G[j])) * qk[i * CHUNK + j],
                         dv);
        }
      double last = G[L - 1];
      for (int j = 0; j < L; j++)
        {
          float w = (float) exp (last - G[j]);
          const float *kj = tok_k (c, t0 + j, kh);
          for (int i = 0; i < dk; i++)
            kw[(gsize) j * dk + i] = w * kj[i];
        }
      state_update (S, dk, dv, (float) exp (last), kw, u, L);
    }
}

void
bw_gdn_forward (const BwGatedDeltaNet *g, const float *x, int n, float *state, float *out,
                void *scratch, BwPool *pool)
{
  int dk = g->k_dim, dv = g->v_dim, Hk = g->n_k_heads, Hv = g->n_v_heads, Kc = g->conv;
  int C = bw_gdn_conv_dim (g);
  BwScratch cur = bw_scratch_init (scratch, bw_gdn_scratch_bytes (g, n));
  GdnScratch s;
  carve (g, n, &cur, &s);
  float *qkvz = s.qkvz, *ba = s.ba, *mixed = s.mixed, *z = s.z, *o = s.o, *beta = s.beta;
  float *decay = s.decay, *win = s.win, *work = s.work;
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

  RecurCtx rc = { g, n, mixed, beta, decay, o, S, work };
  bw_pool_run (pool, n > 1 ? chunk_head : recur_head, &rc, Hv);

  for (gsize r = 0; r < (gsize) n * Hv; r++)
    {
      bw_rmsnorm (o + r * dv, o + r * dv, g->norm, dv, g->eps);
      for (int i = 0; i < dv; i++)
        o[r * dv + i] *= bw_silu (z[r * dv + i]);
    }
  bw_matmul (&g->out_proj, o, n, out, pool);
}
