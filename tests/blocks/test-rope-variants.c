/* Split-half (NeoX) and partial RoPE, YaRN (DeepSeek-V3's truncated range with mscale,
 * gpt-oss's untruncated one with the attention factor on cos/sin) against numbers from
 * gen-moe-blocks-ref.py, and the YaRN config fields. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "blocks/rope.h"
#include "core/checkpoint.h"

#include "moe-blocks-ref.h"

#define N_VECS 3

static void
check_case (const BwRopeConfig *cfg, int head, const float *in, const float *out)
{
  g_autoptr (BwRopeTable) table = bw_rope_new (cfg, 64);   /* later positions: direct path */
  g_autofree float *x = g_new (float, N_VECS * head);
  double worst = 0.0;

  for (int p = 0; p < RY_N_POS; p++)
    {
      memcpy (x, in + p * N_VECS * head, sizeof (float) * N_VECS * head);
      bw_rope_apply (table, x, N_VECS, head, ry_positions[p]);
      for (int i = 0; i < N_VECS * head; i++)
        worst = MAX (worst, fabs ((double) x[i] - out[p * N_VECS * head + i]));
    }
  /* float32 angles as the reference; cos/sin and the factor product round differently. */
  g_assert_cmpfloat (worst, <, 1e-5);
}

static gboolean
parse (const char *json, int dim, BwRopeConfig *out, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();

  g_assert_true (json_parser_load_from_data (parser, json, -1, NULL));
  return bw_rope_config_parse (json_node_get_object (json_parser_get_root (parser)),
                               "config.json", dim, out, error);
}

static void
test_neox_partial (void)
{
  BwRopeConfig cfg = { .dim = RY_NEOX_PARTIAL_ROT, .theta = 1e7, .style = BW_ROPE_NEOX };
  check_case (&cfg, RY_NEOX_PARTIAL_HEAD, ry_neox_partial_in, ry_neox_partial_out);
}

static void
test_yarn_deepseek (void)
{
  BwRopeConfig cfg;
  g_autoptr (GError) error = NULL;

  /* DeepSeek-V3's release keys (rope_scaling with a top-level theta). */
  g_assert_true (parse ("{\"rope_theta\":10000,\"max_position_embeddings\":163840,"
                        "\"rope_scaling\":{\"type\":\"yarn\",\"factor\":40,\"beta_fast\":32,"
                        "\"beta_slow\":1,\"mscale\":1.0,\"mscale_all_dim\":1.0,"
                        "\"original_max_position_embeddings\":4096}}", RY_DS_YARN_ROT, &cfg,
                        &error));
  g_assert_no_error (error);
  g_assert_true (cfg.yarn_truncate);
  g_assert_cmpfloat_with_epsilon (cfg.attention_factor, RY_DS_YARN_ATT, 1e-12);
  double m = 0.1 * log (40.0) + 1.0;
  g_assert_cmpfloat_with_epsilon (cfg.softmax_mscale2, m * m, 1e-12);
  check_case (&cfg, RY_DS_YARN_HEAD, ry_ds_yarn_in, ry_ds_yarn_out);

  /* mscale != mscale_all_dim: the attention factor is their ratio. */
  g_assert_true (parse ("{\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":10000,"
                        "\"factor\":40,\"mscale\":0.707,\"mscale_all_dim\":1.0,"
                        "\"original_max_position_embeddings\":4096}}", RY_DS_YARN_M_ROT, &cfg,
                        &error));
  g_assert_cmpfloat_with_epsilon (cfg.attention_factor, RY_DS_YARN_M_ATT, 1e-12);
  check_case (&cfg, RY_DS_YARN_M_HEAD, ry_ds_yarn_m_in, ry_ds_yarn_m_out);
}

static void
test_yarn_gpt_oss (void)
{
  BwRopeConfig cfg;
  g_autoptr (GError) error = NULL;

  g_assert_true (parse ("{\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":150000,"
                        "\"factor\":32,\"beta_fast\":32.0,\"beta_slow\":1.0,\"truncate\":false,"
                        "\"original_max_position_embeddings\":4096}}", RY_OSS_YARN_ROT, &cfg,
                        &error));
  g_assert_no_error (error);
  g_assert_false (cfg.yarn_truncate);
  g_assert_cmpfloat (cfg.softmax_mscale2, ==, 1.0);
  g_assert_cmpfloat_with_epsilon (cfg.attention_factor, RY_OSS_YARN_ATT, 1e-12);
  cfg.style = BW_ROPE_NEOX;
  check_case (&cfg, RY_OSS_YARN_HEAD, ry_oss_yarn_in, ry_oss_yarn_out);
}

static void
test_config_errors (void)
{
  BwRopeConfig cfg;
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  int dim = 0;

  g_assert_false (parse ("{\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":1e4}}",
                         8, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "YaRN"));
  g_clear_error (&error);
  g_assert_false (parse ("{\"rope_parameters\":{\"rope_type\":\"yarn\",\"rope_theta\":1e4,"
                         "\"factor\":4,\"original_max_position_embeddings\":4096,"
                         "\"truncate\":1}}", 8, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_clear_error (&error);
  g_assert_false (parse ("{\"rope_parameters\":{\"rope_type\":\"dynamic\",\"rope_theta\":1e4}}",
                         8, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED);
  g_clear_error (&error);

  g_assert_true (json_parser_load_from_data (
    parser, "{\"rope_parameters\":{\"partial_rotary_factor\":0.25}}", -1, NULL));
  g_assert_true (bw_rope_partial_dim (json_node_get_object (json_parser_get_root (parser)),
                                      "config.json", 32, &dim, &error));
  g_assert_cmpint (dim, ==, 8);
  g_assert_true (json_parser_load_from_data (parser, "{\"partial_rotary_factor\":0.5}", -1,
                                             NULL));
  g_assert_true (bw_rope_partial_dim (json_node_get_object (json_parser_get_root (parser)),
                                      "config.json", 64, &dim, &error));
  g_assert_cmpint (dim, ==, 32);
  g_assert_true (json_parser_load_from_data (parser, "{\"partial_rotary_factor\":0.1}", -1,
                                             NULL));
  g_assert_false (bw_rope_partial_dim (json_node_get_object (json_parser_get_root (parser)),
                                       "config.json", 32, &dim, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/rope/neox-partial", test_neox_partial);
  g_test_add_func ("/rope/yarn-deepseek", test_yarn_deepseek);
  g_test_add_func ("/rope/yarn-gpt-oss", test_yarn_gpt_oss);
  g_test_add_func ("/rope/config-errors", test_config_errors);
  return g_test_run ();
}
