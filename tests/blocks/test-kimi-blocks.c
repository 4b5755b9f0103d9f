/* The blocks the Kimi families are built from, against plain-torch numbers
 * (gen-kimi-blocks-ref.py): RMSNorm, SwiGLU / situ, the router, MLA (absorbed, reconstruct,
 * token by token; Q-LoRA, output gate, RoPE hook, key selection), KDA (both gate forms, in
 * one call and in chunks) and the attention-residual pool. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "blocks/activation.h"
#include "blocks/attn-res.h"
#include "blocks/kda.h"
#include "blocks/mla.h"
#include "blocks/norm.h"
#include "blocks/router.h"

#include "kimi-blocks-ref.h"

static void
assert_close (const float *got, const float *want, gsize n, double tol)
{
  for (gsize i = 0; i < n; i++)
    if (!(fabs ((double) got[i] - want[i]) <= tol * (1.0 + fabs (want[i]))))
      g_error ("element %" G_GSIZE_FORMAT ": got %.9g, want %.9g", i, got[i], want[i]);
}

static BwMatrix
f32 (const float *data, int64_t rows, int64_t cols)
{
  return (BwMatrix) { .fmt = BW_FMT_F32, .rows = rows, .cols = cols, .data = data };
}

static void
test_rmsnorm (void)
{
  float y[48];
  bw_rmsnorm_rows (y, rms_x, rms_w, 3, 16, 1e-5f);
  assert_close (y, rms_out, 48, 1e-6);
  /* In place gives the same. */
  memcpy (y, rms_x, sizeof y);
  bw_rmsnorm_rows (y, y, rms_w, 3, 16, 1e-5f);
  assert_close (y, rms_out, 48, 1e-6);
}

static void
test_activations (void)
{
  float h[40];
  BwActivation swiglu = { BW_ACT_SWIGLU };
  BwActivation situ = { BW_ACT_SITU, 4.0f, 25.0f };
  BwActivation plain = { BW_ACT_SITU, 0.0f, 0.0f };   /* beta 0 falls back to 1 */
  bw_gated_act (&swiglu, h, act_g, act_u, 40);
  assert_close (h, act_swiglu, 40, 1e-6);
  bw_gated_act (&situ, h, act_g, act_u, 40);
  assert_close (h, act_situ, 40, 1e-6);
  bw_gated_act (&plain, h, act_g, act_u, 40);
  assert_close (h, act_situ_plain, 40, 1e-6);
  /* Saturation: the gate factor tends to beta. */
  g_assert_cmpfloat_with_epsilon (h[0], act_situ_plain[0], 1e-4);
}

/* The chosen set equals the reference's; weights match by expert id. */
static void
check_route (const BwRouterConfig *cfg, const int *want_ids, const float *want_w)
{
  int ids[16];
  float w[16], scratch[64];
  g_assert_cmpuint (bw_router_scratch_floats (cfg), <=, G_N_ELEMENTS (scratch));
  bw_router_select (cfg, router_logits, router_bias, ids, w, scratch);
  for (int j = 0; j < cfg->top_k; j++)
    {
      int found = -1;
      for (int i = 0; i < cfg->top_k; i++)
        if (want_ids[i] == ids[j])
          found = i;
      g_assert_cmpint (found, >=, 0);
      g_assert_cmpfloat_with_epsilon (w[j], want_w[found], 1e-6);
    }
}

static void
test_router (void)
{
  BwRouterConfig grouped = { .n_experts = 16, .top_k = 4, .n_group = 4, .topk_group = 2,
                             .renormalize = TRUE, .scaling = 2.5f };
  BwRouterConfig biased = { .n_experts = 16, .top_k = 3, .n_group = 1, .topk_group = 1,
                            .renormalize = TRUE, .scaling = 2.446f, .biased_weights = TRUE,
                            .group_mask_zero = TRUE };
  BwRouterConfig raw = { .n_experts = 16, .top_k = 2, .n_group = 1, .topk_group = 1,
                         .scaling = 1.0f };
  check_route (&grouped, router_a_ids, router_a_w);
  check_route (&biased, router_b_ids, router_b_w);
  check_route (&raw, router_c_ids, router_c_w);

  /* Equal scores: the lowest expert id wins. */
  float logits[8] = { 0, 1, 1, 0, 1, 0, 0, 0 }, scratch[32], w[2];
  int ids[2];
  BwRouterConfig tie = { .n_experts = 8, .top_k = 2, .n_group = 1, .topk_group = 1,
                         .scaling = 1.0f };
  bw_router_select (&tie, logits, NULL, ids, w, scratch);
  g_assert_cmpint (ids[0], ==, 1);
  g_assert_cmpint (ids[1], ==, 2);
}

/* ---- MLA ---- */

static void
test_rope_fn (const void *ctx, float *v, int dim, int64_t pos)
{
  for (int j = 0; j < dim / 2; j++)
    {
      float a = (float) pos * 0.3f / (float) (j + 1);
      float c = cosf (a), s = sinf (a), x0 = v[2 * j], x1 = v[2 * j + 1];
      v[2 * j] = x0 * c - x1 * s;
      v[2 * j + 1] = x0 * s + x1 * c;
    }
}

static BwMla
mla_weights (gboolean qlora, gboolean gate, gboolean rope)
{
  int dq = MLA_DN + MLA_DR;
  BwMla m = { .n_heads = MLA_H, .nope = MLA_DN, .rope = MLA_DR, .v_dim = MLA_DV,
              .kv_rank = MLA_R, .q_rank = qlora ? MLA_Q : 0, .latent_eps = 1e-6f,
              .scale = 1.0f / sqrtf ((float) dq), .absorb_max_tokens = 4 };
  m.q_proj = f32 (mla_q_proj, MLA_H * dq, MLA_D);
  m.q_a = f32 (mla_q_a, MLA_Q, MLA_D);
  m.q_a_norm = mla_q_a_norm;
  m.q_b = f32 (mla_q_b, MLA_H * dq, MLA_Q);
  m.kv_a = f32 (mla_kv_a, MLA_R + MLA_DR, MLA_D);
  m.kv_a_norm = mla_kv_a_norm;
  m.kv_b = f32 (mla_kv_b, MLA_H * (MLA_DN + MLA_DV), MLA_R);
  m.o_proj = f32 (mla_o_proj, MLA_D, MLA_H * MLA_DV);
  m.has_gate = gate;
  m.g_proj = f32 (mla_g_proj, MLA_H * MLA_DV, MLA_D);
  if (rope)
    m.rope_hook.apply = test_rope_fn;
  return m;
}

typedef struct {
  int32_t idx[MLA_T * MLA_T];
  int count[MLA_T];
} Selection;

/* Rows [row0, row0 + n) of the reference mask as a key selection for one call. */
static void
selection_rows (Selection *s, int row0, int n)
{
  for (int i = 0; i < n; i++)
    {
      s->count[i] = 0;
      for (int t = 0; t < MLA_T; t++)
        if (mla_allowed[(row0 + i) * MLA_T + t])
          s->idx[i * MLA_T + s->count[i]++] = t;
    }
}

/* Runs the sequence in calls of `chunk` tokens with the given path; out [T][D]. */
static void
run_mla (const BwMla *m, int chunk, int path, gboolean select, BwPool *pool, float *out)
{
  int stride = bw_mla_cache_floats (m) + 3;   /* room a family may use for more per position */
  g_autofree float *cache = g_new0 (float, MLA_T * stride);
  g_autofree void *scratch = g_malloc0 (bw_mla_scratch_bytes (m, MLA_T, bw_pool_size (pool)));
  for (int p = 0; p < MLA_T; p += chunk)
    {
      int n = MIN (chunk, MLA_T - p);
      Selection sel;
      BwKeySelect ks = { sel.idx, sel.count, MLA_T };
      BwMlaWork work;
      selection_rows (&sel, p, n);
      bw_mla_project (m, mla_x + p * MLA_D, n, p, cache, stride, scratch, &work, pool);
      if (m->q_rank)
        g_assert_nonnull (work.c_q);
      bw_mla_attend (m, &work, mla_x + p * MLA_D, n, p, cache, stride, select ? &ks : NULL, path,
                     out + p * MLA_D, pool);
    }
}

/* m's kv_b as GGUF stores it: k_b [H R, DN] (each head's keys transposed) and v_b
 * [H DV, R], into kb and vb; kv_b then left out. */
static void
split_kv_b (BwMla *m, float *kb, float *vb)
{
  for (int h = 0; h < MLA_H; h++)
    {
      const float *head = mla_kv_b + (gsize) h * (MLA_DN + MLA_DV) * MLA_R;
      for (int c = 0; c < MLA_R; c++)
        for (int i = 0; i < MLA_DN; i++)
          kb[((gsize) h * MLA_R + c) * MLA_DN + i] = head[(gsize) i * MLA_R + c];
      memcpy (vb + (gsize) h * MLA_DV * MLA_R, head + (gsize) MLA_DN * MLA_R,
              sizeof (float) * MLA_DV * MLA_R);
    }
  m->k_b = f32 (kb, MLA_H * MLA_R, MLA_DN);
  m->v_b = f32 (vb, MLA_H * MLA_DV, MLA_R);
  memset (&m->kv_b, 0, sizeof m->kv_b);
}

static void
check_mla_case (gboolean qlora, gboolean gate, gboolean rope, gboolean select,
                const float *want)
{
  BwMla m = mla_weights (qlora, gate, rope);
  BwPool *pool = bw_pool_new (2);
  float out[MLA_T * MLA_D];
  const int chunks[] = { MLA_T, 3, 1 };
  for (gsize c = 0; c < G_N_ELEMENTS (chunks); c++)
    for (int path = 1; path <= 2; path++)
      {
        memset (out, 0, sizeof out);
        run_mla (&m, chunks[c], path, select, pool, out);
        assert_close (out, want, MLA_T * MLA_D, 2e-5);
      }
  /* W_UK and W_UV apart, as GGUF stores them: the absorbed path whatever is asked */
  static float kb[MLA_H * MLA_R * MLA_DN], vb[MLA_H * MLA_DV * MLA_R];
  BwMla apart = m;
  split_kv_b (&apart, kb, vb);
  for (gsize c = 0; c < G_N_ELEMENTS (chunks); c++)
    for (int path = 0; path <= 2; path++)
      {
        memset (out, 0, sizeof out);
        run_mla (&apart, chunks[c], path, select, pool, out);
        assert_close (out, want, MLA_T * MLA_D, 2e-5);
      }
  /* bw_mla_forward picks the path by absorb_max_tokens. */
  if (!select)
    {
      int stride = bw_mla_cache_floats (&m);
      g_autofree float *cache = g_new0 (float, MLA_T * stride);
      g_autofree void *scratch = g_malloc0 (bw_mla_scratch_bytes (&m, MLA_T, 2));
      bw_mla_forward (&m, mla_x, MLA_T, 0, cache, stride, out, scratch, pool);
      assert_close (out, want, MLA_T * MLA_D, 2e-5);
    }
  bw_pool_free (pool);
}

static void
test_mla_plain (void)
{
  check_mla_case (FALSE, FALSE, FALSE, FALSE, mla_out_plain);
}

static void
test_mla_qlora_gate (void)
{
  check_mla_case (TRUE, TRUE, FALSE, FALSE, mla_out_k3);
}

static void
test_mla_rope_hook (void)
{
  check_mla_case (TRUE, FALSE, TRUE, FALSE, mla_out_rope);
}

static void
test_mla_key_selection (void)
{
  check_mla_case (FALSE, FALSE, TRUE, TRUE, mla_out_select);
}

/* ---- KDA ---- */

static BwKda
kda_weights (gboolean k3)
{
  int P = KDA_HK * KDA_HD;
  BwKda k = { .n_heads = KDA_HK, .head_dim = KDA_HD, .conv = KDA_KC, .eps = 1e-5f,
              .l2_eps = 1e-6f, .bounded = k3, .lower_bound = -5.0f, .full_rank_gate = k3 };
  k.q_proj = f32 (kda_q_proj, P, KDA_D);
  k.k_proj = f32 (kda_k_proj, P, KDA_D);
  k.v_proj = f32 (kda_v_proj, P, KDA_D);
  k.q_conv = kda_q_conv;
  k.k_conv = kda_k_conv;
  k.v_conv = kda_v_conv;
  k.f_a = f32 (kda_f_a, KDA_HD, KDA_D);
  k.f_b = f32 (kda_f_b, P, KDA_HD);
  k.dt_bias = kda_dt_bias;
  k.a_log = kda_a_log;
  k.b_proj = f32 (kda_b_proj, KDA_HK, KDA_D);
  k.g_a = f32 (kda_g_a, KDA_HD, KDA_D);
  k.g_b = f32 (kda_g_b, P, KDA_HD);
  k.g_proj = f32 (kda_g_full, P, KDA_D);
  k.o_norm = kda_o_norm;
  k.o_proj = f32 (kda_o_proj, KDA_D, P);
  return k;
}

static void
check_kda (gboolean k3, const float *want)
{
  BwKda k = kda_weights (k3);
  BwPool *pool = bw_pool_new (2);
  g_autofree float *state = g_new0 (float, bw_kda_state_floats (&k));
  g_autofree void *scratch = g_malloc0 (bw_kda_scratch_bytes (&k, KDA_T));
  float out[KDA_T * KDA_D];
  const int splits[][3] = { { KDA_T, 0, 0 }, { 4, 1, 4 }, { 2, 2, 5 } };

  for (gsize s = 0; s < G_N_ELEMENTS (splits); s++)
    {
      memset (state, 0, bw_kda_state_floats (&k) * sizeof (float));
      int p = 0;
      for (int c = 0; c < 3 && p < KDA_T; c++)
        {
          int n = splits[s][c];
          if (n == 0)
            continue;
          bw_kda_forward (&k, kda_x + p * KDA_D, n, state, out + p * KDA_D, scratch, pool);
          p += n;
        }
      g_assert_cmpint (p, ==, KDA_T);
      assert_close (out, want, KDA_T * KDA_D, 2e-5);
    }
  /* Token by token. */
  memset (state, 0, bw_kda_state_floats (&k) * sizeof (float));
  for (int t = 0; t < KDA_T; t++)
    bw_kda_forward (&k, kda_x + t * KDA_D, 1, state, out + t * KDA_D, scratch, pool);
  assert_close (out, want, KDA_T * KDA_D, 2e-5);
  bw_pool_free (pool);
}

static void
test_kda_linear (void)
{
  check_kda (FALSE, kda_out_linear);
}

static void
test_kda_k3 (void)
{
  check_kda (TRUE, kda_out_k3);
}

static void
test_attn_res_pool (void)
{
  const float *rows[3] = { ares_rows, ares_rows + 16, ares_rows + 32 };
  float out[16];
  bw_attn_res_pool (rows, 3, 16, ares_norm, ares_proj, 1e-5f, out);
  assert_close (out, ares_out, 16, 1e-6);
  /* One candidate passes through unchanged. */
  bw_attn_res_pool (rows + 1, 1, 16, ares_norm, ares_proj, 1e-5f, out);
  g_assert_cmpmem (out, sizeof out, ares_rows + 16, sizeof out);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/blocks/rmsnorm", test_rmsnorm);
  g_test_add_func ("/blocks/activations", test_activations);
  g_test_add_func ("/blocks/router", test_router);
  g_test_add_func ("/blocks/mla/plain", test_mla_plain);
  g_test_add_func ("/blocks/mla/qlora-gate", test_mla_qlora_gate);
  g_test_add_func ("/blocks/mla/rope-hook", test_mla_rope_hook);
  g_test_add_func ("/blocks/mla/key-selection", test_mla_key_selection);
  g_test_add_func ("/blocks/kda/kimi-linear", test_kda_linear);
  g_test_add_func ("/blocks/kda/k3", test_kda_k3);
  g_test_add_func ("/blocks/attn-res-pool", test_attn_res_pool);
  return g_test_run ();
}
