/* compressed-tensors quantization_config (core/ct-config.h): Kimi K2 Thinking's config
 * from the deepseek_v3/int4 oracle, module matching as the library does it, one clear
 * error per unsupported setting, inspect's description, and a load that refuses packed
 * experts the config does not quantise. A missing fixture fails. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "core/ct-config.h"
#include "model/model.h"
#include "families/family.h"

#define FIXTURE "deepseek_v3/int4"

/* The fixture's quantization_config as a fresh object, or NULL (test failed) when absent. */
static JsonNode *
fixture_config (void)
{
  g_autofree char *path = g_build_filename (BURROW_ORACLES, FIXTURE, "config.json", NULL);
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;

  if (!json_parser_load_from_file (p, path, &error))
    {
      g_test_message ("fixture missing: %s", error->message);
      g_test_fail ();
      return NULL;
    }
  return json_node_copy (json_parser_get_root (p));
}

static JsonObject *
qcfg (JsonNode *root)
{
  return json_object_get_object_member (json_node_get_object (root), "quantization_config");
}

static void
test_kimi_k2_config (void)
{
  g_autoptr (JsonNode) root = fixture_config ();
  g_autoptr (GError) error = NULL;
  BwCtConfig ct;

  if (root == NULL)
    return;
  g_assert_true (bw_ct_config_is (qcfg (root)));
  g_assert_true (bw_ct_config_parse (qcfg (root), "config.json", &ct, &error));
  g_assert_no_error (error);
  g_assert_cmpint (ct.n_groups, ==, 1);
  g_assert_cmpint (ct.groups[0].num_bits, ==, 4);
  g_assert_cmpint (ct.groups[0].group, ==, 32);

  /* routed experts are quantised; the ignore patterns catch everything else */
  g_assert_true (bw_ct_config_group_for (&ct, "model.layers.1.mlp.experts.0.gate_proj") == &ct.groups[0]);
  g_assert_true (bw_ct_config_group_for (&ct, "model.layers.3.mlp.experts.15.down_proj") == &ct.groups[0]);
  g_assert_null (bw_ct_config_group_for (&ct, "model.layers.0.mlp.gate_proj"));
  g_assert_null (bw_ct_config_group_for (&ct, "model.layers.0.mlp.down_proj"));
  g_assert_null (bw_ct_config_group_for (&ct, "model.layers.1.self_attn.q_a_proj"));
  g_assert_null (bw_ct_config_group_for (&ct, "model.layers.1.mlp.shared_experts.up_proj"));
  g_assert_null (bw_ct_config_group_for (&ct, "lm_head"));
  g_autofree char *desc = bw_ct_config_describe (&ct);
  g_assert_cmpstr (desc, ==, "compressed-tensors pack-quantized: INT4 symmetric, groups of 32 "
                              "columns, BF16 scales (group_0); 4 ignore entries");
  bw_ct_config_clear (&ct);
}

static void
test_anchoring (void)
{
  const char *text =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\","
    " \"config_groups\": {\"g\": {\"targets\": [\"re:mlp\\\\.experts\"], \"weights\":"
    " {\"num_bits\": 8, \"type\": \"int\", \"symmetric\": true, \"strategy\": \"channel\"}}},"
    " \"ignore\": [\"mlp.experts.1\"]}";
  g_autoptr (JsonNode) root = json_from_string (text, NULL);
  g_autoptr (GError) error = NULL;
  BwCtConfig ct;

  g_assert_true (bw_ct_config_parse (json_node_get_object (root), "c.json", &ct, &error));
  g_assert_cmpint (ct.groups[0].num_bits, ==, 8);
  g_assert_cmpint (ct.groups[0].group, ==, 0);
  g_assert_nonnull (bw_ct_config_group_for (&ct, "mlp.experts.0"));
  g_assert_null (bw_ct_config_group_for (&ct, "mlp.experts.1"));   /* exact ignore */
  g_assert_null (bw_ct_config_group_for (&ct, "x.mlp.experts.0")); /* not at the start */
  bw_ct_config_clear (&ct);
}

/* The fixture's config with `path` (dotted, below quantization_config) set to the JSON
 * `value` must be refused with an error naming the file and containing `field`. */
static void
refused (const char *path, const char *value, const char *field)
{
  g_autoptr (JsonNode) root = fixture_config ();
  g_autoptr (GError) error = NULL;
  BwCtConfig ct;

  if (root == NULL)
    return;
  JsonObject *o = qcfg (root);
  g_auto (GStrv) parts = g_strsplit (path, ".", -1);
  for (int i = 0; parts[i + 1] != NULL; i++)
    o = json_object_get_object_member (o, parts[i]);
  json_object_set_member (o, parts[g_strv_length (parts) - 1], json_from_string (value, NULL));
  g_assert_false (bw_ct_config_parse (qcfg (root), "/m/config.json", &ct, &error));
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_true (g_str_has_prefix (error->message, "/m/config.json: quantization_config."));
  if (strstr (error->message, field) == NULL)
    g_error ("\"%s\" does not name %s", error->message, field);
}

static void
test_refused (void)
{
  refused ("config_groups.group_0.weights.num_bits", "3", "config_groups.group_0.weights.num_bits");
  refused ("config_groups.group_0.weights.symmetric", "false", "weights.symmetric");
  refused ("config_groups.group_0.weights.actorder", "\"group\"", "weights.actorder");
  refused ("config_groups.group_0.weights.type", "\"float\"", "weights.type");
  refused ("config_groups.group_0.weights.strategy", "\"tensor\"", "weights.strategy");
  refused ("config_groups.group_0.weights.group_size", "0", "weights.group_size");
  refused ("config_groups.group_0.weights.dynamic", "true", "weights.dynamic");
  refused ("config_groups.group_0.input_activations", "{\"num_bits\": 8}", "input_activations");
  refused ("format", "\"int-quantized\"", "format");
  refused ("kv_cache_scheme", "{\"num_bits\": 8}", "kv_cache_scheme");
  refused ("ignore", "[\"re:(unclosed\"]", "ignore");
  refused ("ignore", "[1]", "ignore");
  refused ("config_groups", "{}", "config_groups");
}

static void
test_inspect_describes (void)
{
  g_autofree char *dir = g_build_filename (BURROW_ORACLES, FIXTURE, NULL);
  g_autoptr (GError) error = NULL;
  BurrowModelInfo info;

  if (!burrow_inspect (dir, &info, &error))
    {
      g_test_message ("%s", error->message);
      g_test_fail ();
      return;
    }
  g_assert_nonnull (strstr (info.quantization, "INT4 symmetric, groups of 32 columns"));
  /* per expert: 3 matrices of 32 x 128 codes (2048 bytes packed) + 128 BF16 scales
   * (256 bytes) + an I32 [2] shape */
  g_assert_cmpuint (info.bytes_per_expert, ==, 3 * (2048 + 256 + 8));
  burrow_model_info_clear (&info);
}

/* A copy of the fixture whose config ignores the routed experts too: the packed tensors
 * no longer match the config, and loading says so. */
static void
test_load_refuses_unquantised_module (void)
{
  static const char *const files[] = { "model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors",
                                       "model.safetensors.index.json" };
  g_autofree char *src = g_build_filename (BURROW_ORACLES, FIXTURE, NULL);
  g_autoptr (JsonNode) root = fixture_config ();
  g_autoptr (GError) error = NULL;

  if (root == NULL)
    return;
  char *dir = bw_test_tmp_dir ("burrow-ct-XXXXXX");
  g_assert_no_error (error);
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *from = g_build_filename (src, files[i], NULL);
      g_autofree char *to = g_build_filename (dir, files[i], NULL);
      g_assert_cmpint (symlink (from, to), ==, 0);
    }
  JsonArray *ignore = json_object_get_array_member (qcfg (root), "ignore");
  json_array_add_string_element (ignore, "re:.*experts.*");
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autofree char *cfg = g_build_filename (dir, "config.json", NULL);
  json_generator_set_root (gen, root);
  g_assert_true (json_generator_to_file (gen, cfg, NULL));

  BwModelOptions opts;
  bw_model_options_init (&opts);
  opts.threads = 1;
  BwModel *model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_null (model);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "model.layers.1.mlp.experts.0.gate_proj"));
  g_assert_nonnull (strstr (error->message, "does not quantise the module"));

  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    {
      g_autofree char *p = g_build_filename (dir, name, NULL);
      g_unlink (p);
    }
  g_rmdir (dir);
  g_free (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ct-config/kimi-k2", test_kimi_k2_config);
  g_test_add_func ("/ct-config/anchoring", test_anchoring);
  g_test_add_func ("/ct-config/refused", test_refused);
  g_test_add_func ("/ct-config/inspect", test_inspect_describes);
  g_test_add_func ("/ct-config/load-refuses-unquantised-module", test_load_refuses_unquantised_module);
  return g_test_run ();
}
