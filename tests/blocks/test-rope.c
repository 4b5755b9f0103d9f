/* Interleaved RoPE against numbers from transformers' GLM/DeepSeek-V3 formula
 * (gen-glm-blocks-ref.py), the table/direct equivalence and config parsing. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "blocks/rope.h"
#include "core/checkpoint.h"

#include "rope-ref.h"

#define N_POS G_N_ELEMENTS (rope_ref_positions)
#define N_VECS 3

static void
check_case (int dim, double theta, const float *in, const float *out, int table_positions)
{
  BwRopeConfig cfg = { dim, theta };
  g_autoptr (BwRopeTable) rope = bw_rope_new (&cfg, table_positions);
  g_autofree float *x = g_new (float, N_VECS * dim);
  double worst = 0.0;

  g_assert_cmpint (bw_rope_dim (rope), ==, dim);
  for (gsize p = 0; p < N_POS; p++)
    {
      memcpy (x, in + p * N_VECS * dim, sizeof (float) * N_VECS * dim);
      bw_rope_apply (rope, x, N_VECS, dim, rope_ref_positions[p]);
      for (int i = 0; i < N_VECS * dim; i++)
        worst = MAX (worst, fabs ((double) x[i] - out[p * N_VECS * dim + i]));
    }
  /* Same float32 formula as the reference; only cos/sin rounding may differ by an ulp. */
  g_assert_cmpfloat (worst, <, 2e-6);
}

static void
test_rope_reference (void)
{
  /* 4096-entry table: some positions from the table, the rest computed directly. */
  check_case (ROPE_REF_SMALL_DIM, ROPE_REF_SMALL_THETA, rope_ref_small_in, rope_ref_small_out,
              4096);
  check_case (ROPE_REF_GLM_DIM, ROPE_REF_GLM_THETA, rope_ref_glm_in, rope_ref_glm_out, 4096);
  check_case (ROPE_REF_WIDE_DIM, ROPE_REF_WIDE_THETA, rope_ref_wide_in, rope_ref_wide_out, 0);
}

static void
test_rope_position_zero_is_identity (void)
{
  BwRopeConfig cfg = { 8, 10000.0 };
  g_autoptr (BwRopeTable) rope = bw_rope_new (&cfg, 16);
  float x[8] = { 1, -2, 3, -4, 5, -6, 7, -8 }, y[8];

  memcpy (y, x, sizeof x);
  bw_rope_apply (rope, y, 1, 0, 0);
  g_assert_cmpmem (x, sizeof x, y, sizeof y);

  /* Pair 0 turns by exactly pos radians (inv_0 = 1): (1, 0) -> (cos 1, sin 1). */
  float z[8] = { 1, 0, 0, 0, 0, 0, 0, 0 };
  bw_rope_apply (rope, z, 1, 0, 1);
  g_assert_cmpfloat_with_epsilon (z[0], cosf (1.0f), 1e-7);
  g_assert_cmpfloat_with_epsilon (z[1], sinf (1.0f), 1e-7);
  g_assert_cmpfloat (z[2], ==, 0.0f);
}

static void
test_rope_table_equals_direct (void)
{
  BwRopeConfig cfg = { 64, 10000.0 };
  g_autoptr (BwRopeTable) table = bw_rope_new (&cfg, 3000);
  g_autoptr (BwRopeTable) direct = bw_rope_new (&cfg, 0);
  g_autoptr (GRand) rand = g_rand_new_with_seed (11);
  float a[64], b[64];

  for (int pos = 0; pos < 3000; pos += 7)
    {
      for (int i = 0; i < 64; i++)
        a[i] = b[i] = (float) g_rand_double_range (rand, -2, 2);
      bw_rope_apply (table, a, 1, 0, pos);
      bw_rope_apply (direct, b, 1, 0, pos);
      g_assert_cmpmem (a, sizeof a, b, sizeof b);
    }
}

static double
dot64 (const float *a, const float *b)
{
  double s = 0.0;
  for (int i = 0; i < 64; i++)
    s += (double) a[i] * b[i];
  return s;
}

/* q.k after RoPE depends only on the distance between the two positions. */
static void
test_rope_relative (void)
{
  BwRopeConfig cfg = { 64, 10000.0 };
  g_autoptr (BwRopeTable) rope = bw_rope_new (&cfg, 256);
  g_autoptr (GRand) rand = g_rand_new_with_seed (3);
  float q[64], k[64], q1[64], k1[64], q2[64], k2[64];

  for (int i = 0; i < 64; i++)
    {
      q[i] = (float) g_rand_double_range (rand, -1, 1);
      k[i] = (float) g_rand_double_range (rand, -1, 1);
    }
  memcpy (q1, q, sizeof q);
  memcpy (k1, k, sizeof k);
  memcpy (q2, q, sizeof q);
  memcpy (k2, k, sizeof k);
  bw_rope_apply (rope, q1, 1, 0, 10);
  bw_rope_apply (rope, k1, 1, 0, 3);
  bw_rope_apply (rope, q2, 1, 0, 110);
  bw_rope_apply (rope, k2, 1, 0, 103);
  g_assert_cmpfloat_with_epsilon (dot64 (q1, k1), dot64 (q2, k2), 1e-4);
  /* And a different distance gives a different product. */
  bw_rope_apply (rope, k2, 1, 0, 1);
  g_assert_cmpfloat (fabs (dot64 (q1, k1) - dot64 (q2, k2)), >, 1e-3);
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
test_rope_config (void)
{
  BwRopeConfig cfg;
  g_autoptr (GError) error = NULL;

  g_assert_true (parse ("{\"rope_parameters\":{\"rope_type\":\"default\",\"rope_theta\":1e6}}",
                        64, &cfg, &error));
  g_assert_no_error (error);
  g_assert_cmpfloat (cfg.theta, ==, 1e6);
  g_assert_cmpint (cfg.dim, ==, 64);

  /* Legacy top-level theta, with and without a null rope_scaling. */
  g_assert_true (parse ("{\"rope_theta\":10000,\"rope_scaling\":null}", 8, &cfg, &error));
  g_assert_cmpfloat (cfg.theta, ==, 10000.0);
  g_assert_true (parse ("{\"rope_theta\":500000.0}", 8, &cfg, &error));
  g_assert_cmpfloat (cfg.theta, ==, 500000.0);
  /* rope_parameters without a theta falls back to the top-level one. */
  g_assert_true (parse ("{\"rope_parameters\":{\"rope_type\":\"default\"},\"rope_theta\":50}",
                        8, &cfg, &error));
  g_assert_cmpfloat (cfg.theta, ==, 50.0);

  g_assert_false (parse ("{\"rope_parameters\":{\"rope_type\":\"longrope\",\"rope_theta\":1e4,"
                         "\"factor\":40}}", 64, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "longrope"));
  g_assert_nonnull (strstr (error->message, "config.json"));
  g_clear_error (&error);

  g_assert_false (parse ("{\"rope_theta\":1e4,\"rope_scaling\":{\"type\":\"linear\"}}", 64,
                         &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED);
  g_clear_error (&error);

  g_assert_false (parse ("{\"hidden_size\":8}", 64, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_assert_nonnull (strstr (error->message, "rope_theta"));
  g_clear_error (&error);

  g_assert_false (parse ("{\"rope_parameters\":{\"rope_theta\":\"big\"}}", 64, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_clear_error (&error);

  g_assert_false (parse ("{\"rope_theta\":-3}", 64, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_clear_error (&error);

  g_assert_false (parse ("{\"rope_theta\":1e4}", 7, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_clear_error (&error);

  g_assert_false (parse ("{\"rope_parameters\":[1]}", 8, &cfg, &error));
  g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG);
  g_clear_error (&error);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/rope/reference", test_rope_reference);
  g_test_add_func ("/rope/position-zero", test_rope_position_zero_is_identity);
  g_test_add_func ("/rope/table-equals-direct", test_rope_table_equals_direct);
  g_test_add_func ("/rope/relative", test_rope_relative);
  g_test_add_func ("/rope/config", test_rope_config);
  return g_test_run ();
}
