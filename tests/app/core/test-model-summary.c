/* The words the model view shows, from a made-up BurrowModelInfo and from the Kimi Linear
 * oracle checkpoint (numbers summed by hand from its safetensors headers). */
#include "burrow-config.h"

#include "burrow-model-summary.h"

/* g_format_size puts a no-break space between number and unit. */
#define NBSP "\302\240"

static int
dtype_index (const char *name)
{
  for (int i = 0; burrow_dtype_name (i) != NULL; i++)
    if (g_strcmp0 (burrow_dtype_name (i), name) == 0)
      return i;
  g_assert_not_reached ();
}

static void
assert_row (GPtrArray  *rows,
            const char *title,
            const char *value)
{
  const BurrowSummaryRow *row = burrow_model_summary_find (rows, title);

  g_assert_nonnull (row);
  g_assert_cmpstr (row->value, ==, value);
}

static void
test_family_names (void)
{
  g_assert_cmpstr (burrow_family_display_name ("kimi_linear"), ==, "Kimi Linear");
  g_assert_cmpstr (burrow_family_display_name ("kimi_k3"), ==, "Kimi K3");
  g_assert_cmpstr (burrow_family_display_name ("glm_moe_dsa"), ==, "GLM-5.2");
  g_assert_cmpstr (burrow_family_display_name ("llama"), ==, "llama");
}

static void
test_synthetic (void)
{
  BurrowModelInfo info = { 0 };
  g_autoptr(GPtrArray) rows = NULL;
  g_autoptr(GPtrArray) with_ignored = NULL;
  guint groups_seen[BURROW_SUMMARY_N_GROUPS] = { 0 };
  int last_group = 0;

  info.family = (char *) "glm_moe_dsa";
  info.n_layers = 78;
  info.n_moe_layers = 75;
  info.n_experts = 256;
  info.n_experts_per_token = 8;
  info.n_tensors = 1809;
  info.n_shards = 1;
  info.total_bytes = 756000000000ull;
  info.bytes_by_dtype[dtype_index ("F32")] = 2000000;
  info.bytes_by_dtype[dtype_index ("BF16")] = 50000000000ull;
  info.bytes_by_dtype[dtype_index ("F8_E4M3")] = 700000000000ull;
  info.resident_bytes = 17000000000ull;
  info.resident_bytes_q8 = 9000000000ull;
  info.resident_bytes_q4 = 4600000000ull;
  info.expert_bytes = 739000000000ull;
  info.bytes_per_expert = 38000000;
  info.read_per_token = 22800000000ull;

  rows = burrow_model_summary_new (&info);
  assert_row (rows, "Family", "GLM-5.2");
  assert_row (rows, "Layers", "78");
  assert_row (rows, "Layers with experts", "75");
  assert_row (rows, "Experts per layer", "256");
  assert_row (rows, "Experts per token", "8");
  assert_row (rows, "Tensors", "1809 in 1 file");
  assert_row (rows, "Stored as", "F8_E4M3, BF16, F32");
  assert_row (rows, "Size on disk", "756.0" NBSP "GB");
  assert_row (rows, "As stored", "17.0" NBSP "GB");
  assert_row (rows, "At 8 bits", "9.0" NBSP "GB");
  assert_row (rows, "At 4 bits", "4.6" NBSP "GB");
  assert_row (rows, "All experts", "739.0" NBSP "GB");
  assert_row (rows, "One expert", "38.0" NBSP "MB");
  assert_row (rows, "Read per token", "22.8" NBSP "GB");
  g_assert_nonnull (burrow_model_summary_find (rows, "Read per token")->subtitle);
  g_assert_null (burrow_model_summary_find (rows, "Not used"));

  /* Rows come grouped, in group order, and every group has rows. */
  for (guint i = 0; i < rows->len; i++)
    {
      const BurrowSummaryRow *row = g_ptr_array_index (rows, i);

      g_assert_cmpint ((int) row->group, >=, last_group);
      last_group = (int) row->group;
      groups_seen[row->group]++;
    }
  for (guint g = 0; g < BURROW_SUMMARY_N_GROUPS; g++)
    {
      g_assert_cmpuint (groups_seen[g], >, 0);
      g_assert_nonnull (burrow_summary_group_title (g));
    }

  info.ignored_bytes = 1500000000;
  with_ignored = burrow_model_summary_new (&info);
  assert_row (with_ignored, "Not used", "1.5" NBSP "GB");
  g_assert_cmpuint (with_ignored->len, ==, rows->len + 1);
}

static void
test_kimi_linear_oracle (void)
{
  g_autofree char *dir = g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  BurrowModelInfo info = { 0 };

  g_assert_true (burrow_inspect (dir, &info, &error));
  g_assert_no_error (error);

  rows = burrow_model_summary_new (&info);
  assert_row (rows, "Family", "Kimi Linear");
  assert_row (rows, "Layers", "3");
  assert_row (rows, "Layers with experts", "2");
  assert_row (rows, "Experts per layer", "4");
  assert_row (rows, "Experts per token", "2");
  assert_row (rows, "Stored as", "BF16, F32");
  assert_row (rows, "Size on disk", "14.1" NBSP "kB");        /* 14,064 bytes */
  assert_row (rows, "All experts", "3.1" NBSP "kB");          /* 2 layers x 4 experts x 384 */
  assert_row (rows, "One expert", "384 bytes");        /* w1, w2, w3: 3 x 64 BF16 */
  assert_row (rows, "Read per token", "1.5" NBSP "kB");       /* 2 layers x top-2 x 384 */

  burrow_model_info_clear (&info);
}

/* A GGUF model: its weight types a row per tensor group, no 8- or 4-bit rows (its dense
 * part stays as the file stores it). */
static void
test_gguf (void)
{
  g_autofree char *file = g_build_filename (BURROW_FIXTURES, "gguf", "deepseek2-UD-IQ2_XXS-mix",
                                            "deepseek2-UD-IQ2_XXS-mix.gguf", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  BurrowModelInfo info = { 0 };

  g_assert_true (burrow_inspect (file, &info, &error));
  g_assert_no_error (error);
  rows = burrow_model_summary_new (&info);
  assert_row (rows, "Family", "DeepSeek-V3");
  /* the UD-like mix: experts at IQ2_XXS with down a step higher, the rest Q4_K-Q8_0 */
  assert_row (rows, "Routed experts stored as", "IQ2_XXS, IQ2_XS");
  assert_row (rows, "Shared experts stored as", "Q6_K");
  assert_row (rows, "Attention stored as", "Q8_0");
  assert_row (rows, "Dense layers stored as", "Q4_K");
  assert_row (rows, "Embeddings stored as", "Q6_K, Q4_K");
  g_assert_null (burrow_model_summary_find (rows, "Stored as"));
  g_assert_null (burrow_model_summary_find (rows, "At 8 bits"));
  g_assert_null (burrow_model_summary_find (rows, "At 4 bits"));
  burrow_model_info_clear (&info);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/model-summary/family-names", test_family_names);
  g_test_add_func ("/model-summary/synthetic", test_synthetic);
  g_test_add_func ("/model-summary/kimi-linear-oracle", test_kimi_linear_oracle);
  g_test_add_func ("/model-summary/gguf", test_gguf);

  return g_test_run ();
}
