/* The MoE families on the shared decoder, beyond the oracle checks (argv[1]: a fixture under
 * BURROW_ORACLES):
 *   - MTP: the same checkpoint read with its last layer as a next-token-prediction layer
 *     (num_hidden_layers one less, num_nextn_predict_layers 1), plus the tensors only an MTP
 *     layer has (enorm, hnorm, eh_proj, shared_head.norm) in a shard of their own, loads,
 *     runs one layer fewer and keeps none of that layer's weights in RAM;
 *   - inspect names the family and counts its layers and experts;
 *   - burrow-cli run under a --ram-budget of about three experts (far below the experts'
 *     total) decodes ref.json's greedy continuation.
 * A missing fixture fails. */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <unistd.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "core/safetensors-writer.h"
#include "model/model.h"
#include "families/family.h"

static const char *fixture;

static char *
fixture_dir (void)
{
  char *dir = g_build_filename (BURROW_ORACLES, fixture, NULL);
  g_autofree char *ref = g_build_filename (dir, "ref.json", NULL);
  if (!g_file_test (ref, G_FILE_TEST_EXISTS))
    {
      g_test_message ("fixture missing: %s", ref);
      g_test_fail ();
      g_free (dir);
      return NULL;
    }
  return dir;
}

static JsonNode *
read_json (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  return json_node_copy (json_parser_get_root (parser));
}

/* A copy of the fixture (shards linked) whose config.json is root. */
static char *
edited_copy (const char *src, JsonNode *root)
{
  static const char *const files[] = { "model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors",
                                       "model.safetensors.index.json" };
  g_autoptr (GError) error = NULL;
  char *dir = bw_test_tmp_dir ("burrow-moe-XXXXXX");
  g_assert_no_error (error);
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *from = g_build_filename (src, files[i], NULL);
      g_autofree char *to = g_build_filename (dir, files[i], NULL);
      g_assert_cmpint (symlink (from, to), ==, 0);
    }
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autofree char *cfg = g_build_filename (dir, "config.json", NULL);
  json_generator_set_root (gen, root);
  g_assert_true (json_generator_to_file (gen, cfg, NULL));
  return dir;
}

/* Adds layer l's MTP-only tensors (as DeepSeek-V3 / GLM-4.5 releases name them) to the copy
 * in dir: a shard of zeros and the index entries that point to it. */
static void
add_mtp_tensors (const char *dir, int l, int64_t D)
{
  static const char *const vectors[] = { "enorm", "hnorm", "shared_head.norm" };
  g_autoptr (BwSafetensorsWriter) w = bw_safetensors_writer_new ();
  g_autofree char *shard = g_build_filename (dir, "mtp.safetensors", NULL);
  g_autofree char *index = g_build_filename (dir, "model.safetensors.index.json", NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GError) error = NULL;
  int64_t eh[2] = { D, 2 * D };

  for (gsize i = 0; i < G_N_ELEMENTS (vectors); i++)
    {
      g_ptr_array_add (names, g_strdup_printf ("model.layers.%d.%s.weight", l, vectors[i]));
      bw_safetensors_writer_add (w, names->pdata[i], BW_DTYPE_BF16, 1, &D);
    }
  g_ptr_array_add (names, g_strdup_printf ("model.layers.%d.eh_proj.weight", l));
  bw_safetensors_writer_add (w, names->pdata[3], BW_DTYPE_BF16, 2, eh);
  g_assert_true (bw_safetensors_writer_begin (w, shard, &error));
  g_autofree guint8 *zeros = g_malloc0 (bw_safetensors_writer_data_bytes (w));
  g_assert_true (bw_safetensors_writer_write (w, zeros, bw_safetensors_writer_data_bytes (w),
                                              &error));
  g_assert_true (bw_safetensors_writer_finish (w, &error));
  g_assert_no_error (error);

  JsonNode *root = read_json (dir, "model.safetensors.index.json");
  JsonObject *map = json_object_get_object_member (json_node_get_object (root), "weight_map");
  for (guint i = 0; i < names->len; i++)
    json_object_set_string_member (map, names->pdata[i], "mtp.safetensors");
  g_unlink (index);
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, root);
  g_assert_true (json_generator_to_file (gen, index, NULL));
  json_node_unref (root);
}

static void
remove_tree (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)))
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}

static BwModel *
load (const char *dir)
{
  BwModelOptions opts;
  g_autoptr (GError) error = NULL;
  bw_model_options_init (&opts);
  opts.threads = 1;
  opts.max_batch = 4;
  BwModel *model = bw_model_load (dir, bw_families (), &opts, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return model;
}

static void
test_mtp_layer (void)
{
  g_autofree char *src = fixture_dir ();
  if (src == NULL)
    return;
  JsonNode *root = read_json (src, "config.json");
  JsonObject *cfg = json_node_get_object (root);
  int n = (int) json_object_get_int_member (cfg, "num_hidden_layers");

  json_object_set_int_member (cfg, "num_hidden_layers", n - 1);
  json_object_set_int_member (cfg, "num_nextn_predict_layers", 0);
  g_autofree char *plain = edited_copy (src, root);
  json_object_set_int_member (cfg, "num_nextn_predict_layers", 1);
  g_autofree char *mtp = edited_copy (src, root);
  add_mtp_tensors (mtp, n - 1, json_object_get_int_member (cfg, "hidden_size"));
  json_node_unref (root);

  g_autoptr (BwModel) a = load (plain);
  g_autoptr (BwModel) b = load (mtp);
  g_autoptr (BwModel) full = load (src);
  g_assert_cmpint (bw_model_n_layers (b), ==, n - 1);
  g_assert_cmpuint (bw_model_resident_bytes (b), ==, bw_model_resident_bytes (a));
  g_assert_cmpuint (bw_model_resident_bytes (b), <, bw_model_resident_bytes (full));
  const BwCheckpoint *ck = bw_model_checkpoint (b);
  g_autofree char *norm = g_strdup_printf ("model.layers.%d.input_layernorm.weight", n - 1);
  const BwTensorInfo *t = bw_checkpoint_find (ck, norm);
  g_assert_nonnull (t);
  g_assert_cmpint (t->role, ==, BW_ROLE_IGNORED);
  g_autofree char *eh = g_strdup_printf ("model.layers.%d.eh_proj.weight", n - 1);
  t = bw_checkpoint_find (ck, eh);
  g_assert_nonnull (t);
  g_assert_cmpint (t->role, ==, BW_ROLE_IGNORED);

  /* It still runs. */
  g_autoptr (BwState) state = bw_state_new (b);
  g_autoptr (GError) error = NULL;
  int32_t ids[3] = { 3, 14, 15 };
  g_autofree float *logits = g_new (float, bw_model_vocab_size (b));
  g_assert_true (bw_model_forward (b, state, ids, 3, logits, FALSE, NULL, &error));
  g_assert_no_error (error);
  remove_tree (plain);
  remove_tree (mtp);
}

static void
test_inspect (void)
{
  g_autofree char *src = fixture_dir ();
  if (src == NULL)
    return;
  JsonNode *root = read_json (src, "config.json");
  JsonObject *cfg = json_node_get_object (root);
  BurrowModelInfo info;
  g_autoptr (GError) error = NULL;

  g_assert_true (burrow_inspect (src, &info, &error));
  g_assert_no_error (error);
  /* the canonical name of the family the model_type names (kimi_k2 is deepseek_v3) */
  JsonArray *archs = json_object_get_array_member (cfg, "architectures");
  const BwFamily *fam = bw_family_lookup (json_object_get_string_member (cfg, "model_type"),
                                          json_array_get_string_element (archs, 0));
  g_assert_nonnull (fam);
  g_assert_cmpstr (info.family, ==, fam->name);
  g_assert_cmpint (info.n_layers, ==, json_object_get_int_member (cfg, "num_hidden_layers"));
  g_assert_cmpint (info.n_experts_per_token, ==,
                   json_object_get_int_member (cfg, "num_experts_per_tok"));
  g_assert_cmpuint (info.bytes_per_expert, >, 0);
  g_assert_cmpuint (info.expert_bytes, >, 8 * info.bytes_per_expert);
  burrow_model_info_clear (&info);
  json_node_unref (root);
}

static char *
join (JsonArray *arr, guint from, guint to)
{
  GString *s = g_string_new (NULL);
  for (guint i = from; i < to; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i > from ? "," : "",
                            json_array_get_int_element (arr, i));
  return g_string_free (s, FALSE);
}

static void
test_cli_small_budget (void)
{
  g_autofree char *src = fixture_dir ();
  if (src == NULL)
    return;
  JsonNode *ref = read_json (src, "ref.json");
  JsonObject *r = json_node_get_object (ref);
  JsonArray *full = json_object_get_array_member (r, "full_ids");
  guint np = (guint) json_object_get_int_member (json_object_get_object_member (r, "info"),
                                                 "n_prompt");
  guint nt = json_array_get_length (full);
  BurrowModelInfo info;
  g_autoptr (GError) error = NULL;

  g_assert_true (burrow_inspect (src, &info, &error));
  /* three experts' bytes plus the store's padding: far below every expert together */
  guint64 budget = 3 * info.bytes_per_expert + 3 * 8192;
  g_assert_cmpuint (budget, <, info.expert_bytes);
  burrow_model_info_clear (&info);

  g_autofree char *prompt = join (full, 0, np);
  g_autofree char *want = join (full, np, nt);
  g_autofree char *max = g_strdup_printf ("%u", nt - np);
  g_autofree char *ram = g_strdup_printf ("%" G_GUINT64_FORMAT, budget);
  const char *argv[] = { BURROW_CLI, "run", "--model", src, "--threads", "2", "--ram-budget",
                         ram, "--ids", prompt, "--max-tokens", max, "--greedy", "--print-ids",
                         NULL };
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_test_message ("burrow-cli stderr: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_strchomp (out);
  const char *last = strrchr (out, '\n');
  g_assert_cmpstr (last ? last + 1 : out, ==, want);
  json_node_unref (ref);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  fixture = argc > 1 ? argv[1] : "";
  g_test_add_func ("/moe-family/mtp-layer", test_mtp_layer);
  g_test_add_func ("/moe-family/inspect", test_inspect);
  g_test_add_func ("/moe-family/cli-small-budget", test_cli_small_budget);
  return g_test_run ();
}
