/* gpt-oss's expert activation (clamped SwiGLU over interleaved gate/up columns) against
 * gen-moe-blocks-ref.py; the clamp is hit on both sides. */
#include <glib.h>
#include <math.h>

#include "blocks/activation.h"

#include "moe-blocks-ref.h"

static void
test_interleaved (void)
{
  BwActivation act = { .kind = BW_ACT_CLAMPED, .alpha = 1.702f, .limit = 7.0f };
  float buf[2 * CL_N], g[CL_N], u[CL_N], split[CL_N];
  int clamped = 0;

  for (int i = 0; i < 2 * CL_N; i++)
    buf[i] = cl_gate_up[i];
  for (int i = 0; i < CL_N; i++)
    {
      g[i] = cl_gate_up[2 * i];
      u[i] = cl_gate_up[2 * i + 1];
      clamped += g[i] > 7.0f || fabsf (u[i]) > 7.0f;
    }
  g_assert_cmpint (clamped, >, 0);
  bw_gated_act (&act, buf, buf, NULL, CL_N);   /* in place, interleaved */
  bw_gated_act (&act, split, g, u, CL_N);      /* separate gate and up */
  for (int i = 0; i < CL_N; i++)
    {
      g_assert_cmpfloat_with_epsilon (buf[i], cl_out[i], 1e-5 * MAX (1.0, fabs (cl_out[i])));
      g_assert_cmpfloat (split[i], ==, buf[i]);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/clamped-swiglu/interleaved", test_interleaved);
  return g_test_run ();
}
