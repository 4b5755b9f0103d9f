/* Gated DeltaNet's chunked prefill against gen-gdn-chunked-ref.py (torch, float64): 150
 * tokens, more than two chunks of 64, fed whole and in pieces that cut the chunks at other
 * places, token by token (the recurrent decode) and mixed, so chunks start from states the
 * recurrence or an earlier chunk left. */
#include <glib.h>
#include <math.h>

#include "blocks/gated-deltanet.h"
#include "core/threadpool.h"

#include "gdn-chunked-ref.h"

static BwMatrix
f32_matrix (const float *w, int rows, int cols)
{
  return (BwMatrix) { .fmt = BW_FMT_F32, .rows = rows, .cols = cols, .data = w };
}

/* Runs the block over the reference tokens in pieces of the given lengths (0 ends the
 * list, the last repeats to the end); returns the largest gap to the reference. */
static double
run (const int *pieces, BwPool *pool)
{
  BwGatedDeltaNet g = {
    .n_k_heads = GDC_HK, .n_v_heads = GDC_HV, .k_dim = GDC_DK, .v_dim = GDC_DV,
    .conv = GDC_K, .eps = 1e-6f, .l2_eps = 1e-6f,
    .in_qkvz = f32_matrix (gdc_qkvz, 2 * GDC_HK * GDC_DK + 2 * GDC_HV * GDC_DV, GDC_D),
    .in_ba = f32_matrix (gdc_ba, 2 * GDC_HV, GDC_D),
    .conv_w = gdc_conv, .a_log = gdc_alog, .dt_bias = gdc_dt, .norm = gdc_norm,
    .out_proj = f32_matrix (gdc_out, GDC_D, GDC_HV * GDC_DV),
  };
  g_autofree float *state = g_new0 (float, bw_gdn_state_floats (&g));
  g_autofree float *out = g_new (float, GDC_N * GDC_D);
  g_autofree char *scratch = g_malloc (bw_gdn_scratch_bytes (&g, GDC_N));
  double worst = 0.0;
  int p = 0, i = 0;

  while (p < GDC_N)
    {
      int len = MIN (pieces[i], GDC_N - p);
      bw_gdn_forward (&g, gdc_x + p * GDC_D, len, state, out + p * GDC_D, scratch, pool);
      p += len;
      if (pieces[i + 1] != 0)
        i++;
    }
  for (int j = 0; j < GDC_N * GDC_D; j++)
    worst = MAX (worst, fabs ((double) out[j] - gdc_out_ref[j]));
  return worst;
}

static void
test_reference (void)
{
  static const int splits[][5] = {
    { GDC_N, 0 }, { 1, 0 }, { 64, 86, 0 }, { 63, 1, 86, 0 }, { 70, 80, 0 },
    { 5, 145, 0 }, { 128, 22, 0 }, { 2, 0 }, { 1, 1, 100, 1, 0 },
  };
  BwPool *pool = bw_pool_new (2);
  double scale = 0.0;

  for (int j = 0; j < GDC_N * GDC_D; j++)
    scale = MAX (scale, fabs (gdc_out_ref[j]));
  g_assert_cmpfloat (scale, >, 0.05);     /* the reference is not vanishing */
  for (gsize s = 0; s < G_N_ELEMENTS (splits); s++)
    {
      double with_pool = run (splits[s], pool), alone = run (splits[s], NULL);
      if (g_test_verbose ())
        g_printerr ("split %zu: %.3g %.3g (scale %.3g)\n", s, with_pool, alone, scale);
      g_assert_cmpfloat (with_pool, <, 1e-5 * MAX (scale, 1.0));
      g_assert_cmpfloat (alone, <, 1e-5 * MAX (scale, 1.0));
    }
  bw_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gated-deltanet/chunked", test_reference);
  return g_test_run ();
}
