/* burrow_inspect on the oracle fixtures. Expected numbers were computed independently with
 * Python from the fixtures' headers (total = the index's metadata.total_size). */
#include <glib.h>
#include <string.h>
#include <unistd.h>

#include "burrow-config.h"
#include "burrow-engine.h"
#include "ckpt-builder.h"
#include "core/dtype.h"

typedef struct {
  const char *sub;
  const char *family;
  int layers, moe_layers, experts, per_token, tensors;
  guint64 f32, bf16, u8, f8;
  guint64 total, resident, q8, q4, expert, per_expert;
} Expected;

static const Expected fixtures[] = {
  { "kimi_linear", "kimi_linear", 3, 2, 4, 2, 81, 112, 13952, 0, 0,
    14064, 10992, 7496, 4936, 3072, 384 },
  { "kimi_k3", "kimi_k3", 4, 3, 8, 2, 178, 528, 365744, 0, 0,
    366272, 218816, 120516, 72648, 147456, 6144 },
  { "kimi_k3/mxfp4", "kimi_k3", 4, 3, 8, 2, 250, 528, 218288, 39168, 0,
    257984, 218816, 120516, 72648, 39168, 1632 },
  { "glm52", "glm_moe_dsa", 5, 2, 8, 2, 130, 64, 1755008, 0, 0,
    1755072, 1361856, 714144, 428352, 393216, 24576 },
  { "glm52/sparse", "glm_moe_dsa", 5, 2, 8, 2, 130, 64, 1755008, 0, 0,
    1755072, 1361856, 714144, 428352, 393216, 24576 },
  { "glm52/fp8", "glm_moe_dsa", 5, 2, 8, 2, 224, 528, 151424, 0, 801792,
    953744, 756944, 714144, 428352, 196800, 12300 },
  { "glm52/sparse_fp8", "glm_moe_dsa", 5, 2, 8, 2, 224, 528, 151424, 0, 801792,
    953744, 756944, 714144, 428352, 196800, 12300 },
};

static void
test_fixture (gconstpointer data)
{
  const Expected *x = data;
  const char *root = g_getenv ("BURROW_ORACLES");
  g_autofree char *dir = g_build_filename (root != NULL ? root : BURROW_ORACLES, x->sub, NULL);
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  g_assert_true (burrow_inspect (dir, &info, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (info.family, ==, x->family);
  g_assert_true (g_str_has_suffix (info.dir, x->sub));
  g_assert_cmpint (info.n_layers, ==, x->layers);
  g_assert_cmpint (info.n_moe_layers, ==, x->moe_layers);
  g_assert_cmpint (info.n_experts, ==, x->experts);
  g_assert_cmpint (info.n_experts_per_token, ==, x->per_token);
  g_assert_cmpint (info.n_tensors, ==, x->tensors);
  g_assert_cmpint (info.n_shards, ==, 2);
  g_assert_cmpuint (info.bytes_by_dtype[BW_DTYPE_F32], ==, x->f32);
  g_assert_cmpuint (info.bytes_by_dtype[BW_DTYPE_BF16], ==, x->bf16);
  g_assert_cmpuint (info.bytes_by_dtype[BW_DTYPE_U8], ==, x->u8);
  g_assert_cmpuint (info.bytes_by_dtype[BW_DTYPE_F8_E4M3], ==, x->f8);
  g_assert_cmpuint (info.total_bytes, ==, x->total);
  g_assert_cmpuint (info.resident_bytes, ==, x->resident);
  g_assert_cmpuint (info.resident_bytes_q8, ==, x->q8);
  g_assert_cmpuint (info.resident_bytes_q4, ==, x->q4);
  g_assert_cmpuint (info.expert_bytes, ==, x->expert);
  g_assert_cmpuint (info.bytes_per_expert, ==, x->per_expert);
  g_assert_cmpuint (info.read_per_token, ==,
                    (guint64) x->moe_layers * x->per_token * x->per_expert);
  g_assert_cmpuint (info.ignored_bytes, ==, 0);
  /* the oracle checkpoints come without a tokenizer */
  g_assert_null (info.tokenizer);
  g_assert_cmpuint (info.resident_bytes + info.expert_bytes + info.ignored_bytes, ==,
                    info.total_bytes);
  /* Every expert of every MoE layer is the same size here. */
  g_assert_cmpuint (info.expert_bytes, ==,
                    (guint64) x->moe_layers * x->experts * x->per_expert);

  burrow_model_info_clear (&info);
  g_assert_null (info.dir);
  g_assert_null (info.family);
  g_assert_cmpuint (info.total_bytes, ==, 0);
}

/* The tokenizer a load would use: the demo model's tiktoken.model. */
static void
test_tokenizer (void)
{
  g_autofree char *dir = g_build_filename (BURROW_SOURCE_DIR, "data", "demo-model", NULL);
  g_autofree char *expect = g_build_filename (dir, "tiktoken.model", NULL);
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  g_assert_true (burrow_inspect (dir, &info, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (info.tokenizer, ==, expect);
  burrow_model_info_clear (&info);
  g_assert_null (info.tokenizer);
}

/* Vision tower and MTP bytes are counted apart, never as resident. */
static void
test_ignored_bytes (void)
{
  g_autofree char *dir = ckb_make_dir ();
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  ckb_write_config (dir, ckb_config_kimi_k3, NULL, NULL);
  ckb_write_shard (dir, "model.safetensors",
                   "{\"vision_tower.w\": {\"dtype\": \"BF16\", \"shape\": [2, 4],"
                   " \"data_offsets\": [0, 16]},"
                   " \"language_model.model.layers.1.block_sparse_moe.experts.3.w2.weight\":"
                   " {\"dtype\": \"BF16\", \"shape\": [4, 64], \"data_offsets\": [16, 528]},"
                   " \"language_model.lm_head.weight\": {\"dtype\": \"F32\", \"shape\": [3, 64],"
                   " \"data_offsets\": [528, 1296]}}", 1296);
  g_assert_true (burrow_inspect (dir, &info, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (info.ignored_bytes, ==, 16);
  g_assert_cmpuint (info.expert_bytes, ==, 512);
  g_assert_cmpuint (info.bytes_per_expert, ==, 512);
  g_assert_cmpuint (info.resident_bytes, ==, 768);
  /* 3 rows x 64 columns: int8 192 + 3 x 1 group (of 128) x 4; int4 96 + 3 x 2 groups
   * (of 32) x 4. */
  g_assert_cmpuint (info.resident_bytes_q8, ==, 192 + 12);
  g_assert_cmpuint (info.resident_bytes_q4, ==, 96 + 24);
  g_assert_cmpuint (info.read_per_token, ==, 1 * 2 * 512);
  burrow_model_info_clear (&info);
  ckb_remove_dir (dir);
}

static void
test_errors (void)
{
  g_autofree char *dir = ckb_make_dir ();
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  g_assert_false (burrow_inspect ("/nonexistent/burrow-model", &info, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, "/nonexistent/burrow-model: no such file or folder"));
  g_assert_null (info.family);
  g_clear_error (&error);

  ckb_write_config (dir, ckb_config_kimi_linear, "model_type", "\"mistral\"");
  g_assert_false (burrow_inspect (dir, &info, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT);
  g_assert_nonnull (strstr (error->message, "config.json"));
  g_assert_nonnull (strstr (error->message, "mistral"));
  ckb_remove_dir (dir);
}

static char *
gguf_fixture (const char *file)
{
  const char *root = g_getenv ("BURROW_FIXTURES");
  return g_build_filename (root != NULL ? root : BURROW_FIXTURES, "gguf",
                           "deepseek2-Q4_K_M-split", file, NULL);
}

/* A GGUF split set, from any part: the figures burrow-cli inspect prints for it
 * (tests/cli/test-cli-inspect-gguf.c), with the file as its tokenizer. */
static void
test_gguf (void)
{
  g_autofree char *folder = gguf_fixture (NULL);
  g_autofree char *part = gguf_fixture ("deepseek2-Q4_K_M-00002-of-00003.gguf");
  g_autofree char *first = gguf_fixture ("deepseek2-Q4_K_M-00001-of-00003.gguf");
  g_autofree char *dir = ckb_make_dir ();
  g_autofree char *lone = g_build_filename (dir, "deepseek2-Q4_K_M-00001-of-00003.gguf", NULL);
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  for (const char *const *p = (const char *const[]) { folder, part, NULL }; *p; p++)
    {
      g_assert_true (burrow_inspect (*p, &info, &error));
      g_assert_no_error (error);
      g_assert_cmpstr (info.family, ==, "deepseek_v3");
      g_assert_cmpint (info.n_layers, ==, 2);
      g_assert_cmpint (info.n_moe_layers, ==, 1);
      g_assert_cmpint (info.n_experts, ==, 16);
      g_assert_cmpint (info.n_experts_per_token, ==, 4);
      g_assert_cmpint (info.n_tensors, ==, 34);
      g_assert_cmpint (info.n_shards, ==, 3);
      g_assert_cmpuint (info.expert_bytes, ==, 2039808);
      g_assert_cmpuint (info.resident_bytes, ==, 1069632);
      g_assert_cmpuint (info.read_per_token, ==, 509952);
      g_assert_cmpuint (info.total_bytes, ==, info.expert_bytes + info.resident_bytes);
      g_assert_cmpstr (info.tokenizer, ==, first);
      g_assert_cmpstr (info.quantization, ==, "GGUF: F32 11, Q5_0 2, Q4_K 18, Q6_K 3");
      burrow_model_info_clear (&info);
    }

  /* a set with a part missing: the part is named */
  g_assert_cmpint (symlink (first, lone), ==, 0);
  g_assert_false (burrow_inspect (lone, &info, &error));
  g_assert_nonnull (strstr (error->message, "deepseek2-Q4_K_M-00002-of-00003.gguf"));
  g_assert_null (info.family);
  unlink (lone);
  ckb_remove_dir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (fixtures); i++)
    {
      g_autofree char *path = g_strdup_printf ("/inspect/%s", fixtures[i].sub);
      g_test_add_data_func (path, &fixtures[i], test_fixture);
    }
  g_test_add_func ("/inspect/ignored-bytes", test_ignored_bytes);
  g_test_add_func ("/inspect/tokenizer", test_tokenizer);
  g_test_add_func ("/inspect/errors", test_errors);
  g_test_add_func ("/inspect/gguf", test_gguf);
  return g_test_run ();
}
