/* The softmax routers (Qwen3-MoE's softmax top-k with and without norm_topk_prob, gpt-oss's
 * softmax over the top-k biased logits) against gen-moe-blocks-ref.py. The sigmoid noaux_tc
 * router is covered by the Kimi and GLM block and oracle tests. */
#include <glib.h>
#include <math.h>

#include "blocks/router.h"

#include "moe-blocks-ref.h"

static void
check (const BwRouterConfig *cfg, const float *bias, const int *want_ids, const float *want_w)
{
  float scratch[64];
  int ids[RT_K];
  float w[RT_K];

  g_assert_cmpuint (bw_router_scratch_floats (cfg), <=, G_N_ELEMENTS (scratch));
  for (int t = 0; t < RT_T; t++)
    {
      bw_router_select (cfg, rt_logits + t * RT_E, bias, ids, w, scratch);
      for (int j = 0; j < RT_K; j++)
        {
          g_assert_cmpint (ids[j], ==, want_ids[t * RT_K + j]);
          g_assert_cmpfloat_with_epsilon (w[j], want_w[t * RT_K + j], 1e-6);
        }
    }
}

static void
test_softmax (void)
{
  BwRouterConfig cfg = { .kind = BW_ROUTER_SOFTMAX, .n_experts = RT_E, .top_k = RT_K,
                         .scaling = 1.0f };
  check (&cfg, NULL, rt_softmax_ids, rt_softmax_w);
  cfg.renormalize = TRUE;
  check (&cfg, NULL, rt_softmax_ids, rt_softmax_w_norm);
}

static void
test_topk_softmax (void)
{
  BwRouterConfig cfg = { .kind = BW_ROUTER_TOPK_SOFTMAX, .n_experts = RT_E, .top_k = RT_K,
                         .scaling = 1.0f };
  check (&cfg, rt_bias, rt_topk_ids, rt_topk_w);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/router/softmax", test_softmax);
  g_test_add_func ("/router/topk-softmax", test_topk_softmax);
  return g_test_run ();
}
