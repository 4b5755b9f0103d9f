/* GLM-5.2 config.json parsing and weight binding: the layer plans derived from every way a
 * config can spell them, and clear errors for unsupported or inconsistent settings and for
 * missing tensors. Each case is the dense oracle checkpoint with an edited config.json. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "tmp-dir.h"
#include "families/glm52.h"
#include "families/family.h"

typedef struct {
  char *dir;
  JsonObject *config;   /* edit before load_edited */
  JsonNode *root;
} Edited;

static const char *const shard_files[] = {
  "model-00001-of-00002.safetensors",
  "model-00002-of-00002.safetensors",
  "model.safetensors.index.json",
};

static void
edited_init (Edited *e, const char *sub)
{
  g_autofree char *src = g_build_filename (BURROW_ORACLES, "glm52", sub, NULL);
  g_autofree char *cfg = g_build_filename (src, "config.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;

  json_parser_load_from_file (parser, cfg, &error);
  g_assert_no_error (error);
  e->root = json_node_copy (json_parser_get_root (parser));
  e->config = json_node_get_object (e->root);
  e->dir = bw_test_tmp_dir ("glm52-config-XXXXXX");
  g_assert_no_error (error);
  for (gsize i = 0; i < G_N_ELEMENTS (shard_files); i++)
    {
      g_autofree char *from = g_build_filename (src, shard_files[i], NULL);
      g_autofree char *to = g_build_filename (e->dir, shard_files[i], NULL);
      g_assert_cmpint (symlink (from, to), ==, 0);
    }
}

static void
edited_clear (Edited *e)
{
  g_autoptr (GDir) d = g_dir_open (e->dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *p = g_build_filename (e->dir, name, NULL);
      g_unlink (p);
    }
  g_rmdir (e->dir);
  g_free (e->dir);
  json_node_unref (e->root);
}

static BwModel *
load_edited (Edited *e, GError **error)
{
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autofree char *cfg = g_build_filename (e->dir, "config.json", NULL);
  BwModelOptions opts;

  json_generator_set_root (gen, e->root);
  g_assert_true (json_generator_to_file (gen, cfg, NULL));
  bw_model_options_init (&opts);
  opts.threads = 1;
  opts.max_batch = 4;
  return bw_model_load (e->dir, bw_families (), &opts, NULL, NULL, NULL, error);
}

static JsonArray *
words (const char *const *w, int n)
{
  JsonArray *arr = json_array_new ();
  for (int i = 0; i < n; i++)
    json_array_add_string_element (arr, w[i]);
  return arr;
}

static void
assert_plan (BwModel *model, const char *full, const char *moe)
{
  for (int l = 0; l < 5; l++)
    {
      g_assert_cmpint (bw_glm52_layer_is_full (model, l), ==, full[l] == 'F');
      g_assert_cmpint (bw_glm52_layer_is_moe (model, l), ==, moe[l] == 'M');
    }
}

/* Loads the edited checkpoint and expects it to fail with code, naming `needle`. */
static void
expect_error (Edited *e, int code, const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModel) model = load_edited (e, &error);

  g_assert_null (model);
  g_assert_error (error, BW_CHECKPOINT_ERROR, code);
  if (strstr (error->message, needle) == NULL)
    g_error ("error \"%s\" does not mention \"%s\"", error->message, needle);
}

static void
test_plan_as_given (void)
{
  Edited e;
  g_autoptr (GError) error = NULL;

  edited_init (&e, ".");
  g_autoptr (BwModel) model = load_edited (&e, &error);
  g_assert_no_error (error);
  assert_plan (model, "FFSFS", "DDDMM");
  g_assert_false (bw_glm52_layer_is_full (model, 5));
  edited_clear (&e);
}

/* Without indexer_types: index_topk_freq 2 / index_skip_topk_offset 2 give the same plan;
 * the reference defaults (1, 2) make every layer full. */
static void
test_plan_derived (void)
{
  Edited e;
  g_autoptr (GError) error = NULL;

  edited_init (&e, ".");
  json_object_remove_member (e.config, "indexer_types");
  json_object_remove_member (e.config, "mlp_layer_types");
  {
    g_autoptr (BwModel) model = load_edited (&e, &error);
    g_assert_no_error (error);
    assert_plan (model, "FFSFS", "DDDMM");
  }
  json_object_set_int_member (e.config, "index_topk_freq", 3);
  json_object_set_int_member (e.config, "index_skip_topk_offset", 1);
  {
    g_autoptr (BwModel) model = load_edited (&e, &error);
    g_assert_no_error (error);
    assert_plan (model, "FSSFS", "DDDMM");
  }
  json_object_remove_member (e.config, "index_topk_freq");
  json_object_remove_member (e.config, "index_skip_topk_offset");
  json_object_remove_member (e.config, "first_k_dense_replace");
  json_object_set_string_member (e.config, "index_topk_pattern", "FSFSF");
  {
    /* FSFSF needs indexer tensors on layer 2, which this checkpoint lacks. */
    g_assert_null (load_edited (&e, &error));
    g_assert_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT);
    g_assert_nonnull (strstr (error->message, "model.layers.2.self_attn.indexer.wq_b.weight"));
    g_clear_error (&error);
  }
  json_object_set_string_member (e.config, "index_topk_pattern", "FFSFS");
  {
    /* first_k_dense_replace defaults to 3, as in the reference config class. */
    g_autoptr (BwModel) model = load_edited (&e, &error);
    g_assert_no_error (error);
    assert_plan (model, "FFSFS", "DDDMM");
  }
  edited_clear (&e);
}

static void
test_plan_errors (void)
{
  Edited e;
  const char *shared_first[] = { "shared", "full", "shared", "full", "shared" };
  const char *bad_word[] = { "full", "full", "half", "full", "shared" };
  const char *short_list[] = { "full", "full" };
  const char *mlp[] = { "dense", "dense", "sparse", "sparse", "sparse" };

  edited_init (&e, ".");
  json_object_set_array_member (e.config, "indexer_types", words (shared_first, 5));
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "shared");
  json_object_set_array_member (e.config, "indexer_types", words (bad_word, 5));
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "indexer_types");
  json_object_set_array_member (e.config, "indexer_types", words (short_list, 2));
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "indexer_types");
  json_object_remove_member (e.config, "indexer_types");
  json_object_set_array_member (e.config, "mlp_layer_types", words (mlp, 5));
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "first_k_dense_replace");
  edited_clear (&e);
}

static void
test_config_errors (void)
{
  Edited e;

  edited_init (&e, ".");
  JsonObject *rope = json_object_get_object_member (e.config, "rope_parameters");
  json_object_set_string_member (rope, "rope_type", "dynamic");
  expect_error (&e, BW_CHECKPOINT_ERROR_UNSUPPORTED, "dynamic");
  json_object_set_string_member (rope, "rope_type", "default");

  json_object_set_null_member (e.config, "q_lora_rank");
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "q_lora_rank");
  json_object_set_int_member (e.config, "q_lora_rank", 64);

  json_object_set_int_member (e.config, "num_key_value_heads", 1);
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "num_key_value_heads");
  json_object_set_int_member (e.config, "num_key_value_heads", 8);

  json_object_set_int_member (e.config, "index_head_dim", 4);
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "index_head_dim");
  json_object_set_int_member (e.config, "index_head_dim", 16);

  json_object_set_string_member (e.config, "hidden_act", "gelu");
  expect_error (&e, BW_CHECKPOINT_ERROR_UNSUPPORTED, "hidden_act");
  json_object_set_string_member (e.config, "hidden_act", "silu");

  json_object_set_int_member (e.config, "num_experts_per_tok", 9);
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "num_experts_per_tok");
  json_object_set_int_member (e.config, "num_experts_per_tok", 2);

  json_object_set_string_member (e.config, "eos_token_id", "<|user|>");
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "eos_token_id");
  json_object_set_int_member (e.config, "eos_token_id", 1);

  json_object_remove_member (e.config, "index_topk");
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "index_topk");
  json_object_set_int_member (e.config, "index_topk", 8);

  /* A wider MLA than the tensors: the binding names the tensor and both shapes. */
  json_object_set_int_member (e.config, "kv_lora_rank", 48);
  expect_error (&e, BW_CHECKPOINT_ERROR_FORMAT, "model.layers.0.self_attn.kv_a_proj_with_mqa");
  json_object_set_int_member (e.config, "kv_lora_rank", 32);

  /* Everything restored: it loads again, with a single eos id. */
  g_autoptr (GError) error = NULL;
  g_autoptr (BwModel) model = load_edited (&e, &error);
  g_assert_no_error (error);
  int n;
  g_assert_cmpint (bw_model_eos_ids (model, &n)[0], ==, 1);
  g_assert_cmpint (n, ==, 1);
  edited_clear (&e);
}

static void
test_quantization_config (void)
{
  Edited e;

  edited_init (&e, "fp8");
  JsonObject *q = json_object_get_object_member (e.config, "quantization_config");
  JsonArray *block = json_array_new ();
  json_array_add_int_element (block, 64);
  json_array_add_int_element (block, 64);
  json_object_set_array_member (q, "weight_block_size", block);
  expect_error (&e, BW_CHECKPOINT_ERROR_UNSUPPORTED, "weight_block_size");
  json_object_remove_member (q, "weight_block_size");
  expect_error (&e, BW_CHECKPOINT_ERROR_UNSUPPORTED, "weight_block_size");

  json_object_set_string_member (q, "quant_method", "gptq");
  expect_error (&e, BW_CHECKPOINT_ERROR_UNSUPPORTED, "gptq");
  edited_clear (&e);
}

/* The MTP layer and anything past num_hidden_layers is never bound: a 4-layer reading of
 * the 5-layer checkpoint loads (layer 4 is ignored, like the real checkpoint's layer 78). */
static void
test_extra_layers_ignored (void)
{
  Edited e;
  g_autoptr (GError) error = NULL;

  const char *full[] = { "full", "full", "shared", "full" };
  const char *mlp[] = { "dense", "dense", "dense", "sparse" };

  edited_init (&e, ".");
  json_object_set_int_member (e.config, "num_hidden_layers", 4);
  json_object_set_array_member (e.config, "indexer_types", words (full, 4));
  json_object_set_array_member (e.config, "mlp_layer_types", words (mlp, 4));
  g_autoptr (BwModel) model = load_edited (&e, &error);
  g_assert_no_error (error);
  g_assert_cmpint (bw_model_n_layers (model), ==, 4);
  assert_plan (model, "FFSF.", "DDDM.");
  edited_clear (&e);
}

/* Real releases list their MTP layers (num_nextn_predict_layers, stored at index
 * num_hidden_layers) in the per-layer lists too: a 4-layer reading of the checkpoint with one
 * MTP layer loads with 5-entry lists, keeps none of layer 4's weights in RAM, and a list
 * longer than the main and MTP layers together is an error that names it. */
static void
test_mtp_layers (void)
{
  Edited e;
  g_autoptr (GError) error = NULL;
  const char *full[] = { "full", "full", "shared", "full", "full", "full" };
  const char *mlp[] = { "dense", "dense", "dense", "sparse", "sparse", "sparse" };
  guint64 with_layer4;

  edited_init (&e, ".");
  json_object_set_array_member (e.config, "indexer_types", words (full, 4));
  json_object_set_array_member (e.config, "mlp_layer_types", words (mlp, 4));
  json_object_set_int_member (e.config, "num_hidden_layers", 4);
  {
    g_autoptr (BwModel) model = load_edited (&e, &error);
    g_assert_no_error (error);
    with_layer4 = bw_model_resident_bytes (model);
  }
  json_object_set_int_member (e.config, "num_nextn_predict_layers", 1);
  json_object_set_array_member (e.config, "indexer_types", words (full, 5));
  json_object_set_array_member (e.config, "mlp_layer_types", words (mlp, 5));
  {
    g_autoptr (BwModel) model = load_edited (&e, &error);
    g_assert_no_error (error);
    g_assert_cmpint (bw_model_n_layers (model), ==, 4);
    assert_plan (model, "FFSF.", "DDDM.");
    g_assert_cmpuint (bw_model_resident_bytes (model), ==, with_layer4);
    const BwCheckpoint *ck = bw_model_checkpoint (model);
    const BwTensorInfo *t = bw_checkpoint_find (ck, "model.layers.4.self_attn.o_proj.weight");
    g_assert_nonnull (t);
    g_assert_cmpint (t->role, ==, BW_ROLE_IGNORED);
  }
  json_object_set_array_member (e.config, "mlp_layer_types", words (mlp, 6));
  expect_error (&e, BW_CHECKPOINT_ERROR_CONFIG, "mlp_layer_types");
  edited_clear (&e);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/glm52-config/plan-as-given", test_plan_as_given);
  g_test_add_func ("/glm52-config/plan-derived", test_plan_derived);
  g_test_add_func ("/glm52-config/plan-errors", test_plan_errors);
  g_test_add_func ("/glm52-config/errors", test_config_errors);
  g_test_add_func ("/glm52-config/quantization", test_quantization_config);
  g_test_add_func ("/glm52-config/extra-layers-ignored", test_extra_layers_ignored);
  g_test_add_func ("/glm52-config/mtp-layers", test_mtp_layers);
  return g_test_run ();
}
