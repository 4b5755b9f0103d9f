/* GQA attention against gen-moe-blocks-ref.py in the four forms the families use: Qwen3-MoE
 * (q/k norm, full split-half RoPE), gpt-oss (q/k/v/o biases, sinks, a sliding window, YaRN),
 * Qwen3-Next (output gate, partial RoPE, q/k norm) and GLM-4.5 (q/k/v biases, partial RoPE,
 * q/k norm); each as one prefill, token by token, and a prefill continued by decode steps. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "blocks/gqa.h"
#include "core/threadpool.h"

#include "moe-blocks-ref.h"

typedef struct {
  const float *x, *q, *k, *v, *o, *qb, *kb, *vb, *ob, *qn, *kn, *sk, *out;
  int rot, window;
  double theta, yarn;
  gboolean gate;
} Case;

static BwMatrix
f32_matrix (const float *w, int rows, int cols)
{
  return (BwMatrix) { .fmt = BW_FMT_F32, .rows = rows, .cols = cols, .data = w };
}

/* Runs the case's tokens in calls of `chunk` tokens; returns the worst error. */
static double
run (const Case *c, int chunk, BwPool *pool)
{
  int hd = GQA_HD, D = GQA_D;
  BwRopeConfig rc = { .dim = c->rot, .theta = c->theta, .style = BW_ROPE_NEOX };
  if (c->yarn > 0)
    {
      rc.yarn_factor = c->yarn;
      rc.yarn_original_max_pos = 4096;
      rc.yarn_beta_fast = 32;
      rc.yarn_beta_slow = 1;
      rc.attention_factor = 0.1 * log (c->yarn) + 1.0;
    }
  g_autoptr (BwRopeTable) rope = bw_rope_new (&rc, 4);   /* positions >= 4: direct path */
  BwGqa a = {
    .n_heads = GQA_H, .n_kv_heads = GQA_HKV, .head_dim = hd, .scale = 1.0f / sqrtf (hd),
    .norm_eps = 1e-6f,
    .q_proj = f32_matrix (c->q, GQA_H * hd * (c->gate ? 2 : 1), D),
    .k_proj = f32_matrix (c->k, GQA_HKV * hd, D), .v_proj = f32_matrix (c->v, GQA_HKV * hd, D),
    .o_proj = f32_matrix (c->o, D, GQA_H * hd),
    .q_bias = c->qb, .k_bias = c->kb, .v_bias = c->vb, .o_bias = c->ob,
    .q_norm = c->qn, .k_norm = c->kn, .sinks = c->sk, .window = c->window,
    .output_gate = c->gate, .rope = rope,
  };
  g_autofree float *cache = g_new0 (float, GQA_N * bw_gqa_cache_floats (&a));
  g_autofree float *out = g_new (float, GQA_N * D);
  g_autofree char *scratch = g_malloc (bw_gqa_scratch_bytes (&a, chunk));
  double worst = 0.0;

  for (int p = 0; p < GQA_N; p += chunk)
    {
      int n = MIN (chunk, GQA_N - p);
      bw_gqa_forward (&a, c->x + p * D, n, p, cache, out + p * D, scratch, pool);
    }
  for (int i = 0; i < GQA_N * D; i++)
    worst = MAX (worst, fabs ((double) out[i] - c->out[i]));
  return worst;
}

static void
check (const Case *c)
{
  BwPool *pool = bw_pool_new (2);
  for (int chunk = 1; chunk <= GQA_N; chunk += 3)
    {
      g_assert_cmpfloat (run (c, chunk, pool), <, 2e-5);
      g_assert_cmpfloat (run (c, chunk, NULL), <, 2e-5);
    }
  bw_pool_free (pool);
}

static void
test_qwen (void)
{
  Case c = { .x = gqa_qwen_x, .q = gqa_qwen_q, .k = gqa_qwen_k, .v = gqa_qwen_v,
             .o = gqa_qwen_o, .qn = gqa_qwen_qn, .kn = gqa_qwen_kn, .out = gqa_qwen_out,
             .rot = GQA_QWEN_ROT, .theta = GQA_QWEN_THETA };
  check (&c);
}

static void
test_gpt_oss (void)
{
  Case c = { .x = gqa_oss_x, .q = gqa_oss_q, .k = gqa_oss_k, .v = gqa_oss_v, .o = gqa_oss_o,
             .qb = gqa_oss_qb, .kb = gqa_oss_kb, .vb = gqa_oss_vb, .ob = gqa_oss_ob,
             .sk = gqa_oss_sk, .out = gqa_oss_out, .rot = GQA_OSS_ROT,
             .theta = GQA_OSS_THETA, .window = GQA_OSS_WINDOW, .yarn = GQA_OSS_YARN };
  check (&c);
  /* Without the sink or the window the numbers differ: both are exercised. */
  BwPool *pool = NULL;
  Case no_sink = c, no_window = c;
  no_sink.sk = NULL;
  no_window.window = 0;
  g_assert_cmpfloat (run (&no_sink, GQA_N, pool), >, 1e-3);
  g_assert_cmpfloat (run (&no_window, GQA_N, pool), >, 1e-3);
}

static void
test_qwen3_next (void)
{
  Case c = { .x = gqa_next_x, .q = gqa_next_q, .k = gqa_next_k, .v = gqa_next_v,
             .o = gqa_next_o, .qn = gqa_next_qn, .kn = gqa_next_kn, .out = gqa_next_out,
             .rot = GQA_NEXT_ROT, .theta = GQA_NEXT_THETA, .gate = TRUE };
  check (&c);
}

static void
test_glm4 (void)
{
  Case c = { .x = gqa_glm_x, .q = gqa_glm_q, .k = gqa_glm_k, .v = gqa_glm_v, .o = gqa_glm_o,
             .qb = gqa_glm_qb, .kb = gqa_glm_kb, .vb = gqa_glm_vb, .qn = gqa_glm_qn,
             .kn = gqa_glm_kn, .out = gqa_glm_out, .rot = GQA_GLM_ROT, .theta = GQA_GLM_THETA };
  check (&c);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/gqa/qwen3-moe", test_qwen);
  g_test_add_func ("/gqa/gpt-oss", test_gpt_oss);
  g_test_add_func ("/gqa/qwen3-next", test_qwen3_next);
  g_test_add_func ("/gqa/glm4-moe", test_glm4);
  return g_test_run ();
}
