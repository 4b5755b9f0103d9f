/* Gated DeltaNet against gen-moe-blocks-ref.py (the delta rule, grouped projections, short
 * conv, L2 norms, decay and beta, gated RMSNorm), as one prefill, token by token, and in
 * chunks: the state carries across calls. */
#include <glib.h>
#include <math.h>

#include "blocks/gated-deltanet.h"
#include "core/threadpool.h"

#include "moe-blocks-ref.h"

static BwMatrix
f32_matrix (const float *w, int rows, int cols)
{
  return (BwMatrix) { .fmt = BW_FMT_F32, .rows = rows, .cols = cols, .data = w };
}

static double
run (int chunk, BwPool *pool)
{
  BwGatedDeltaNet g = {
    .n_k_heads = GDN_HK, .n_v_heads = GDN_HV, .k_dim = GDN_DK, .v_dim = GDN_DV,
    .conv = GDN_K, .eps = 1e-6f, .l2_eps = 1e-6f,
    .in_qkvz = f32_matrix (gdn_qkvz, 2 * GDN_HK * GDN_DK + 2 * GDN_HV * GDN_DV, GDN_D),
    .in_ba = f32_matrix (gdn_ba, 2 * GDN_HV, GDN_D),
    .conv_w = gdn_conv, .a_log = gdn_alog, .dt_bias = gdn_dt, .norm = gdn_norm,
    .out_proj = f32_matrix (gdn_out, GDN_D, GDN_HV * GDN_DV),
  };
  g_autofree float *state = g_new0 (float, bw_gdn_state_floats (&g));
  g_autofree float *out = g_new (float, GDN_N * GDN_D);
  g_autofree char *scratch = g_malloc (bw_gdn_scratch_bytes (&g, chunk));
  double worst = 0.0;

  g_assert_cmpint (bw_gdn_conv_dim (&g), ==, 2 * GDN_HK * GDN_DK + GDN_HV * GDN_DV);
  for (int p = 0; p < GDN_N; p += chunk)
    bw_gdn_forward (&g, gdn_x + p * GDN_D, MIN (chunk, GDN_N - p), state, out + p * GDN_D,
                    scratch, pool);
  for (int i = 0; i < GDN_N * GDN_D; i++)
    worst = MAX (worst, fabs ((double) out[i] - gdn_out_ref[i]));
  return worst;
}

static void
test_reference (void)
{
  BwPool *pool = bw_pool_new (2);
  for (int chunk = 1; chunk <= GDN_N; chunk++)
    {
      g_assert_cmpfloat (run (chunk, pool), <, 1e-5);
      g_assert_cmpfloat (run (chunk, NULL), <, 1e-5);
    }
  bw_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gated-deltanet/reference", test_reference);
  return g_test_run ();
}
