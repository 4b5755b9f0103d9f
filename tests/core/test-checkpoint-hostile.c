/* Hostile and broken checkpoint folders: each must fail with the right error, naming the file
 * and the problem, and nothing may crash or read out of bounds. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ckpt-builder.h"
#include "core/checkpoint.h"
#include "families/family.h"

/* One tensor "t" of 4 F32 elements at [0, 16). */
#define GOOD_HEADER "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [4], " \
                    "\"data_offsets\": [0, 16]}}"
#define INDEX_FILE "model.safetensors.index.json"
#define SHARD1 "model-00001-of-00002.safetensors"
#define SHARD2 "model-00002-of-00002.safetensors"

typedef struct {
  const char *name;
  const char *config_field;    /* dotted path to replace, NULL to keep the base */
  const char *config_value;    /* JSON text; NULL removes the field */
  const char *header;          /* model.safetensors header (NULL: GOOD_HEADER) */
  guint64 claimed_len;         /* length prefix to write; 0: the header's own length */
  gsize data_len;              /* data bytes after the header (0: 16) */
  void (*setup) (const char *dir);   /* replaces the default layout when set */
  int code;
  const char *file;            /* what the message must name */
  const char *problem;         /* and a phrase saying what is wrong */
} Hostile;

static void
setup_index_missing_shard (const char *dir)
{
  ckb_write_shard (dir, SHARD1, GOOD_HEADER, 16);
  ckb_write_text (dir, INDEX_FILE, "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\","
                  " \"lm_head.weight\": \"" SHARD2 "\"}}");
}

static void
setup_index_absent_tensor (const char *dir)
{
  ckb_write_shard (dir, SHARD1, GOOD_HEADER, 16);
  ckb_write_text (dir, INDEX_FILE, "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\","
                  " \"lm_head.weight\": \"" SHARD1 "\"}}");
}

static void
setup_index_wrong_shard (const char *dir)
{
  ckb_write_shard (dir, SHARD1, GOOD_HEADER, 16);
  ckb_write_shard (dir, SHARD2, "{\"lm_head.weight\": {\"dtype\": \"U8\", \"shape\": [2],"
                   " \"data_offsets\": [0, 2]}}", 2);
  ckb_write_text (dir, INDEX_FILE, "{\"weight_map\": {\"model.norm.weight\": \"" SHARD2 "\","
                  " \"lm_head.weight\": \"" SHARD2 "\"}}");
}

static void
setup_index_path_escape (const char *dir)
{
  ckb_write_text (dir, INDEX_FILE, "{\"weight_map\": {\"model.norm.weight\":"
                  " \"../model.safetensors\"}}");
}

static void
setup_index_no_weight_map (const char *dir)
{
  ckb_write_text (dir, INDEX_FILE, "{\"metadata\": {\"total_size\": 16}}");
}

static void
setup_index_bad_json (const char *dir)
{
  ckb_write_text (dir, INDEX_FILE, "{\"weight_map\": {\"model.norm.weight\": ");
}

static void
setup_duplicate_across_shards (const char *dir)
{
  ckb_write_shard (dir, SHARD1, GOOD_HEADER, 16);
  ckb_write_shard (dir, SHARD2, GOOD_HEADER, 16);
  ckb_write_text (dir, INDEX_FILE, "{\"weight_map\": {\"model.norm.weight\": \"" SHARD1 "\","
                  " \"lm_head.weight\": \"" SHARD2 "\"}}");
}

static void
setup_no_weights (const char *dir)
{
}

static void
setup_shard_is_directory (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, "model.safetensors", NULL);
  g_mkdir (path, 0755);
}

static void
setup_no_config (const char *dir)
{
  g_autofree char *path = g_build_filename (dir, "config.json", NULL);
  g_unlink (path);
  ckb_write_shard (dir, "model.safetensors", GOOD_HEADER, 16);
}

static void
setup_config_not_json (const char *dir)
{
  ckb_write_text (dir, "config.json", "{\"model_type\": \"kimi_linear\",,}");
  ckb_write_shard (dir, "model.safetensors", GOOD_HEADER, 16);
}

static void
setup_config_array (const char *dir)
{
  ckb_write_text (dir, "config.json", "[1, 2, 3]");
  ckb_write_shard (dir, "model.safetensors", GOOD_HEADER, 16);
}

static void
setup_short_file (const char *dir)
{
  ckb_write_file (dir, "model.safetensors", "\x10\x00\x00\x00\x00", 5);
}

static void
setup_header_invalid_utf8 (const char *dir)
{
  const char header[] = "{\"model.norm\xff\xfe\": {\"dtype\": \"F32\", \"shape\": [0],"
                        " \"data_offsets\": [0, 0]}}";
  ckb_write_shard (dir, "model.safetensors", header, 0);
}

static const Hostile cases[] = {
  /* safetensors header */
  { "truncated-file", .setup = setup_short_file, .code = BW_CHECKPOINT_ERROR_TRUNCATED,
    .file = "model.safetensors", .problem = "too short" },
  { "header-past-end", .claimed_len = 4096, .code = BW_CHECKPOINT_ERROR_TRUNCATED,
    .file = "model.safetensors", .problem = "runs past the end" },
  { "header-huge", .claimed_len = G_GUINT64_CONSTANT (0x4000000000000000),
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "limit" },
  { "header-tiny", .claimed_len = 1, .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = "model.safetensors", .problem = "too short" },
  { "header-bad-json", .header = "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [4",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "malformed JSON" },
  { "header-not-object", .header = "[1, 2, 3]", .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = "model.safetensors", .problem = "not an object" },
  { "header-invalid-utf8", .setup = setup_header_invalid_utf8,
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "UTF-8" },
  { "header-deep-nesting",
    .header = "{\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
              "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "nests" },
  { "entry-not-object", .header = "{\"model.norm.weight\": 5}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "not an object" },
  { "metadata-not-object", .header = "{\"__metadata__\": 7}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "__metadata__" },
  { "missing-dtype", .header = "{\"t\": {\"shape\": [4], \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "dtype" },
  { "unknown-dtype", .header = "{\"t\": {\"dtype\": \"Q4_K\", \"shape\": [4],"
                               " \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors",
    .problem = "unknown dtype 'Q4_K'" },
  { "size-mismatch", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [2, 2],"
                               " \"data_offsets\": [0, 12]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "span 12 bytes" },
  { "packed-u8-mismatch", .header = "{\"t\": {\"dtype\": \"U8\", \"shape\": [4, 2],"
                                    " \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "span 16 bytes" },
  { "negative-dim", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [-4],"
                              " \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "shape entry 0" },
  { "fractional-dim", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [4.5],"
                                " \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "shape entry 0" },
  { "too-many-dims", .header = "{\"t\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,16],"
                               " \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "dimensions" },
  { "element-overflow", .header = "{\"t\": {\"dtype\": \"U8\", \"shape\": [4294967296,"
                                  " 4294967296], \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "overflows" },
  { "byte-overflow", .header = "{\"t\": {\"dtype\": \"F64\", \"shape\": [4611686018427387904],"
                               " \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "span 16 bytes" },
  { "offsets-past-data", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [8],"
                                   " \"data_offsets\": [0, 32]}}",
    .code = BW_CHECKPOINT_ERROR_TRUNCATED, .file = "model.safetensors",
    .problem = "outside the 16-byte data section" },
  { "offsets-reversed", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [0],"
                                  " \"data_offsets\": [16, 0]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "outside" },
  { "offsets-negative", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [4],"
                                  " \"data_offsets\": [-16, 0]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "non-negative" },
  { "offsets-wrong-arity", .header = "{\"t\": {\"dtype\": \"F32\", \"shape\": [4],"
                                     " \"data_offsets\": [0]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "pair" },
  { "offsets-overlap", .header = "{\"a\": {\"dtype\": \"F32\", \"shape\": [3],"
                                 " \"data_offsets\": [0, 12]}, \"b\": {\"dtype\": \"F32\","
                                 " \"shape\": [2], \"data_offsets\": [8, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors",
    .problem = "'a' and 'b' overlap" },
  { "offsets-same-range", .header = "{\"a\": {\"dtype\": \"F32\", \"shape\": [4],"
                                    " \"data_offsets\": [0, 16]}, \"b\": {\"dtype\": \"I32\","
                                    " \"shape\": [4], \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "overlap" },
  { "tensor-twice", .header = "{\"a\": {\"dtype\": \"F32\", \"shape\": [2],"
                              " \"data_offsets\": [0, 8]}, \"a\": {\"dtype\": \"F32\","
                              " \"shape\": [2], \"data_offsets\": [8, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors",
    .problem = "repeats the key \"a\"" },
  { "no-tensors", .header = "{\"__metadata__\": {\"format\": \"pt\"}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "", .problem = "no tensors" },
  { "shard-is-directory", .setup = setup_shard_is_directory, .code = BW_CHECKPOINT_ERROR_IO,
    .file = "model.safetensors", .problem = "regular file" },
  /* index */
  { "index-missing-shard", .setup = setup_index_missing_shard, .code = BW_CHECKPOINT_ERROR_IO,
    .file = SHARD2, .problem = "No such file" },
  { "index-absent-tensor", .setup = setup_index_absent_tensor,
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = INDEX_FILE, .problem = "'lm_head.weight'" },
  { "index-wrong-shard", .setup = setup_index_wrong_shard, .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = INDEX_FILE, .problem = "does not contain it" },
  { "index-path-escape", .setup = setup_index_path_escape, .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = INDEX_FILE, .problem = "plain shard file name" },
  { "index-no-weight-map", .setup = setup_index_no_weight_map,
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = INDEX_FILE, .problem = "weight_map" },
  { "index-bad-json", .setup = setup_index_bad_json, .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = INDEX_FILE, .problem = "malformed JSON" },
  { "duplicate-tensor", .setup = setup_duplicate_across_shards,
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = SHARD2, .problem = "stored twice" },
  { "no-weights", .setup = setup_no_weights, .code = BW_CHECKPOINT_ERROR_IO,
    .file = "burrow-ckpt-", .problem = "found neither" },
  /* roles */
  { "expert-out-of-range",
    .header = "{\"model.layers.1.block_sparse_moe.experts.4.w1.weight\": {\"dtype\": \"F32\","
              " \"shape\": [4], \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "expert" },
  { "expert-in-dense-layer",
    .header = "{\"model.layers.0.block_sparse_moe.experts.1.w1.weight\": {\"dtype\": \"F32\","
              " \"shape\": [4], \"data_offsets\": [0, 16]}}",
    .code = BW_CHECKPOINT_ERROR_FORMAT, .file = "model.safetensors", .problem = "layer 0 dense" },
  /* config.json */
  { "no-config", .setup = setup_no_config, .code = BW_CHECKPOINT_ERROR_IO,
    .file = "config.json", .problem = "No such file" },
  { "config-not-json", .setup = setup_config_not_json, .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = "config.json", .problem = "malformed JSON" },
  { "config-not-object", .setup = setup_config_array, .code = BW_CHECKPOINT_ERROR_FORMAT,
    .file = "config.json", .problem = "not an object" },
  { "unknown-model-type", .config_field = "model_type", .config_value = "\"llama\"",
    .code = BW_CHECKPOINT_ERROR_UNSUPPORTED, .file = "config.json", .problem = "'llama'" },
  { "no-model-type", .config_field = "model_type", .code = BW_CHECKPOINT_ERROR_CONFIG,
    .file = "config.json", .problem = "model_type" },
  { "kimi-as-k3-no-text-config", .config_field = "model_type",
    .config_value = "\"kimi_k3\"", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "text_config" },
  { "hidden-size-zero", .config_field = "hidden_size", .config_value = "0",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "hidden_size = 0" },
  { "hidden-size-huge", .config_field = "hidden_size", .config_value = "1073741824",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "hidden_size" },
  { "hidden-size-string", .config_field = "hidden_size", .config_value = "\"16\"",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "hidden_size is not an integer" },
  { "hidden-size-missing", .config_field = "hidden_size", .code = BW_CHECKPOINT_ERROR_CONFIG,
    .file = "config.json", .problem = "hidden_size is missing" },
  { "layers-negative", .config_field = "num_hidden_layers", .config_value = "-3",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "num_hidden_layers" },
  { "heads-zero", .config_field = "num_attention_heads", .config_value = "0",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "num_attention_heads" },
  { "vocab-huge", .config_field = "vocab_size", .config_value = "99999999999",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "vocab_size" },
  { "kv-lora-negative", .config_field = "kv_lora_rank", .config_value = "-1",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "kv_lora_rank" },
  { "head-dim-huge", .config_field = "v_head_dim", .config_value = "100000",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "v_head_dim" },
  { "experts-zero", .config_field = "num_experts", .config_value = "0",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "num_experts" },
  { "top-k-above-experts", .config_field = "num_experts_per_token", .config_value = "5",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "num_experts_per_token = 5" },
  { "dense-replace-past-layers", .config_field = "first_k_dense_replace", .config_value = "9",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "first_k_dense" },
  { "eps-negative", .config_field = "rms_norm_eps", .config_value = "-0.5",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "rms_norm_eps" },
  { "no-linear-attn-config", .config_field = "linear_attn_config",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "linear_attn_config" },
  { "kda-layer-out-of-range", .config_field = "linear_attn_config.kda_layers",
    .config_value = "[1, 7]", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "linear_attn_config.kda_layers" },
  { "kda-layer-zero", .config_field = "linear_attn_config.kda_layers", .config_value = "[0]",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "kda_layers" },
  { "layer-in-both-lists", .config_field = "linear_attn_config.kda_layers",
    .config_value = "[1, 2]", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "full_attn_layers names a layer twice" },
  { "layer-in-no-list", .config_field = "linear_attn_config.kda_layers", .config_value = "[]",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "layer 1" },
  { "conv-kernel-zero", .config_field = "linear_attn_config.short_conv_kernel_size",
    .config_value = "0", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "short_conv_kernel_size" },
  { "k3-hidden-size-zero", .config_field = "text_config.hidden_size",
    .config_value = "0", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "text_config.hidden_size" },
  { "glm-experts-missing", .config_field = "n_routed_experts",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "n_routed_experts" },
  { "glm-mlp-types-short", .config_field = "mlp_layer_types",
    .config_value = "[\"dense\"]", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "mlp_layer_types" },
  { "glm-indexer-type-bad", .config_field = "indexer_types",
    .config_value = "[\"full\", \"sometimes\"]", .code = BW_CHECKPOINT_ERROR_CONFIG,
    .file = "config.json", .problem = "indexer_types entry 1" },
  { "glm-groups-uneven", .config_field = "n_group", .config_value = "3",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "n_group" },
  /* Read once into typed fields when the checkpoint opens, the family's own ones too. */
  { "eos-not-an-id", .config_field = "eos_token_id", .config_value = "[2, \"</s>\"]",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "eos_token_id" },
  { "tied-embeddings-string", .config_field = "tie_word_embeddings", .config_value = "\"no\"",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "tie_word_embeddings is not a boolean" },
  { "hidden-act-gelu", .config_field = "hidden_act", .config_value = "\"gelu\"",
    .code = BW_CHECKPOINT_ERROR_UNSUPPORTED, .file = "config.json", .problem = "hidden_act" },
  { "kda-lower-bound-positive", .config_field = "linear_attn_config.gate_lower_bound",
    .config_value = "1.5", .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "linear_attn_config.gate_lower_bound" },
  { "mla-with-rope", .config_field = "mla_use_nope", .config_value = "false",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "mla_use_nope" },
  { "k3-no-attn-res", .config_field = "text_config.attn_res_block_size",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json",
    .problem = "text_config.attn_res_block_size is missing" },
  { "glm-index-head-dim-narrow", .config_field = "index_head_dim", .config_value = "1",
    .code = BW_CHECKPOINT_ERROR_CONFIG, .file = "config.json", .problem = "index_head_dim" },
  { "glm-quant-unknown", .config_field = "quantization_config",
    .config_value = "{\"quant_method\": \"gptq\"}", .code = BW_CHECKPOINT_ERROR_UNSUPPORTED,
    .file = "config.json", .problem = "quantization_config.quant_method \"gptq\"" },
};

/* The base config is Kimi Linear's unless the case's name starts with k3- or glm-. */
static const char *
base_config (const Hostile *h)
{
  if (g_str_has_prefix (h->name, "k3-"))
    return ckb_config_kimi_k3;
  if (g_str_has_prefix (h->name, "glm-"))
    return ckb_config_glm;
  return ckb_config_kimi_linear;
}

static void
run_case (gconstpointer data)
{
  const Hostile *h = data;
  g_autofree char *dir = ckb_make_dir ();
  g_autoptr (GError) error = NULL;
  BwCheckpoint *ckpt;
  const char *header = h->header != NULL ? h->header : GOOD_HEADER;

  ckb_write_config (dir, base_config (h), h->config_field, h->config_value);
  if (h->setup != NULL)
    h->setup (dir);
  else
    ckb_write_shard_len (dir, "model.safetensors",
                         h->claimed_len != 0 ? h->claimed_len : strlen (header), header,
                         h->data_len != 0 ? h->data_len : 16);

  ckpt = bw_checkpoint_open (dir, bw_families (), &error);
  g_assert_null (ckpt);
  g_assert_nonnull (error);
  g_test_message ("%s: %s", h->name, error->message);
  g_assert_error (error, BW_CHECKPOINT_ERROR, h->code);
  g_assert_nonnull (strstr (error->message, h->file));
  g_assert_nonnull (strstr (error->message, h->problem));
  g_assert_null (strchr (error->message, '\n'));
  ckb_remove_dir (dir);
}

/* The default layout with nothing hostile opens: the table above tests what it claims. */
static void
test_baselines_open (void)
{
  const char *configs[] = { ckb_config_kimi_linear, ckb_config_kimi_k3, ckb_config_glm };
  const char *names[] = { "kimi_linear", "kimi_k3", "glm_moe_dsa" };

  for (gsize i = 0; i < G_N_ELEMENTS (configs); i++)
    {
      g_autofree char *dir = ckb_make_dir ();
      g_autoptr (GError) error = NULL;
      g_autoptr (BwCheckpoint) ckpt = NULL;

      ckb_write_config (dir, configs[i], NULL, NULL);
      ckb_write_shard (dir, "model.safetensors", GOOD_HEADER, 16);
      ckpt = bw_checkpoint_open (dir, bw_families (), &error);
      g_assert_no_error (error);
      g_assert_cmpint (ckpt->n_tensors, ==, 1);
      g_assert_cmpstr (ckpt->family->name, ==, names[i]);
      ckb_remove_dir (dir);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/checkpoint-hostile/baselines-open", test_baselines_open);
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/checkpoint-hostile/%s", cases[i].name);
      g_test_add_data_func (path, &cases[i], run_case);
    }
  return g_test_run ();
}
