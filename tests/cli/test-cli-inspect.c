/* burrow-cli inspect, as a user runs it: JSON values on every oracle fixture, the text
 * report, and one-line errors with a non-zero exit on bad input. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/wait.h>

#include "ckpt-builder.h"

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void
run_clear (Run *r)
{
  g_free (r->out);
  g_free (r->err);
}

static void
run_cli (Run *r, const char *arg1, const char *arg2, const char *arg3)
{
  const char *argv[] = { BURROW_CLI, arg1, arg2, arg3, NULL };
  g_autoptr (GError) error = NULL;
  int wait_status;

  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r->out, &r->err,
                &wait_status, &error);
  g_assert_no_error (error);
  r->status = WIFEXITED (wait_status) ? WEXITSTATUS (wait_status) : -1;
}

static char *
oracle_path (const char *sub)
{
  const char *root = g_getenv ("BURROW_ORACLES");
  return g_build_filename (root != NULL ? root : BURROW_ORACLES, sub, NULL);
}

/* stderr is exactly one line, "burrow-cli: ...", containing `needle`. */
static void
assert_one_line_error (const Run *r, const char *needle)
{
  const char *nl = strchr (r->err, '\n');

  g_test_message ("stderr: %s", r->err);
  g_assert_true (g_str_has_prefix (r->err, "burrow-cli: "));
  g_assert_nonnull (nl);
  g_assert_cmpint (nl[1], ==, '\0');
  g_assert_nonnull (strstr (r->err, needle));
  g_assert_cmpstr (r->out, ==, "");
}

typedef struct {
  const char *sub;
  const char *family;
  gint64 layers, moe_layers, experts, per_token, tensors;
  const char *dtype;       /* the largest dtype and its bytes */
  gint64 dtype_bytes;
  gint64 total, resident, q8, q4, expert, per_expert, per_token_read;
} Expected;

static const Expected fixtures[] = {
  { "kimi_linear", "kimi_linear", 3, 2, 4, 2, 81, "BF16", 13952,
    14064, 10992, 7496, 4936, 3072, 384, 1536 },
  { "kimi_k3", "kimi_k3", 4, 3, 8, 2, 178, "BF16", 365744,
    366272, 218816, 120516, 72648, 147456, 6144, 36864 },
  { "kimi_k3/mxfp4", "kimi_k3", 4, 3, 8, 2, 250, "U8", 39168,
    257984, 218816, 120516, 72648, 39168, 1632, 9792 },
  { "glm52", "glm_moe_dsa", 5, 2, 8, 2, 130, "BF16", 1755008,
    1755072, 1361856, 714144, 428352, 393216, 24576, 98304 },
  { "glm52/sparse", "glm_moe_dsa", 5, 2, 8, 2, 130, "F32", 64,
    1755072, 1361856, 714144, 428352, 393216, 24576, 98304 },
  { "glm52/fp8", "glm_moe_dsa", 5, 2, 8, 2, 224, "F8_E4M3", 801792,
    953744, 756944, 714144, 428352, 196800, 12300, 49200 },
  { "glm52/sparse_fp8", "glm_moe_dsa", 5, 2, 8, 2, 224, "F8_E4M3", 801792,
    953744, 756944, 714144, 428352, 196800, 12300, 49200 },
};

static void
test_json (gconstpointer data)
{
  const Expected *x = data;
  g_autofree char *dir = oracle_path (x->sub);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonObject *o, *by_dtype;
  Run r = { 0 };

  run_cli (&r, "inspect", "--json", dir);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.err, ==, "");
  json_parser_load_from_data (parser, r.out, -1, &error);
  g_assert_no_error (error);
  o = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (o, "family"), ==, x->family);
  g_assert_true (g_str_has_suffix (json_object_get_string_member (o, "dir"), x->sub));
  g_assert_cmpint (json_object_get_int_member (o, "n_layers"), ==, x->layers);
  g_assert_cmpint (json_object_get_int_member (o, "n_moe_layers"), ==, x->moe_layers);
  g_assert_cmpint (json_object_get_int_member (o, "n_experts"), ==, x->experts);
  g_assert_cmpint (json_object_get_int_member (o, "n_experts_per_token"), ==, x->per_token);
  g_assert_cmpint (json_object_get_int_member (o, "n_tensors"), ==, x->tensors);
  g_assert_cmpint (json_object_get_int_member (o, "n_shards"), ==, 2);
  g_assert_cmpint (json_object_get_int_member (o, "total_bytes"), ==, x->total);
  g_assert_cmpint (json_object_get_int_member (o, "resident_bytes"), ==, x->resident);
  g_assert_cmpint (json_object_get_int_member (o, "resident_bytes_int8"), ==, x->q8);
  g_assert_cmpint (json_object_get_int_member (o, "resident_bytes_int4"), ==, x->q4);
  g_assert_cmpint (json_object_get_int_member (o, "expert_bytes"), ==, x->expert);
  g_assert_cmpint (json_object_get_int_member (o, "bytes_per_expert"), ==, x->per_expert);
  g_assert_cmpint (json_object_get_int_member (o, "read_per_token"), ==, x->per_token_read);
  g_assert_cmpint (json_object_get_int_member (o, "ignored_bytes"), ==, 0);
  by_dtype = json_object_get_object_member (o, "bytes_by_dtype");
  g_assert_cmpint (json_object_get_int_member (by_dtype, x->dtype), ==, x->dtype_bytes);
  g_assert_false (json_object_has_member (by_dtype, "F16"));
  run_clear (&r);
}

static void
test_text (void)
{
  g_autofree char *dir = oracle_path ("kimi_linear");
  Run r = { 0 };

  run_cli (&r, "inspect", dir, NULL);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpstr (r.err, ==, "");
  g_assert_nonnull (strstr (r.out, "kimi_linear"));
  g_assert_nonnull (strstr (r.out, "3 (2 MoE)"));
  g_assert_nonnull (strstr (r.out, "4 routed per MoE layer, 2 per token"));
  g_assert_nonnull (strstr (r.out, "81 in 2 shards"));
  g_assert_nonnull (strstr (r.out, "13952 bytes"));
  g_assert_nonnull (strstr (r.out, "10992 bytes"));
  g_assert_nonnull (strstr (r.out, "int4"));
  g_assert_nonnull (strstr (r.out, "1536 bytes"));
  run_clear (&r);
}

static void
test_missing_folder (void)
{
  Run r = { 0 };

  run_cli (&r, "inspect", "/nonexistent/burrow-model", NULL);
  g_assert_cmpint (r.status, ==, 1);
  assert_one_line_error (&r, "/nonexistent/burrow-model: no such file or folder");
  run_clear (&r);
}

static void
test_hostile_folder (void)
{
  g_autofree char *dir = ckb_make_dir ();
  Run r = { 0 };

  ckb_write_config (dir, ckb_config_kimi_linear, NULL, NULL);
  ckb_write_shard_len (dir, "model.safetensors", 1 << 20, "{}", 4);
  run_cli (&r, "inspect", "--json", dir);
  g_assert_cmpint (r.status, ==, 1);
  assert_one_line_error (&r, "model.safetensors: header length 1048576 runs past the end");
  run_clear (&r);

  /* json-glib's parser message must not break the one-line rule. */
  ckb_write_shard (dir, "model.safetensors", "{\"t\": {\"dtype\": \"F32\",\n\n \"shape\": [", 4);
  run_cli (&r, "inspect", dir, NULL);
  g_assert_cmpint (r.status, ==, 1);
  assert_one_line_error (&r, "malformed JSON");
  run_clear (&r);

  ckb_write_config (dir, ckb_config_kimi_linear, "num_experts_per_token", "64");
  run_cli (&r, "inspect", dir, NULL);
  g_assert_cmpint (r.status, ==, 1);
  assert_one_line_error (&r, "config.json: num_experts_per_token = 64");
  run_clear (&r);
  ckb_remove_dir (dir);
}

static void
test_usage_errors (void)
{
  g_autofree char *dir = oracle_path ("kimi_linear");
  Run r = { 0 };

  run_cli (&r, "inspect", NULL, NULL);
  g_assert_cmpint (r.status, ==, 2);
  assert_one_line_error (&r, "checkpoint folder");
  run_clear (&r);

  run_cli (&r, "inspect", "--frobnicate", dir);
  g_assert_cmpint (r.status, ==, 2);
  assert_one_line_error (&r, "--frobnicate");
  run_clear (&r);

  run_cli (&r, "inspect", dir, dir);
  g_assert_cmpint (r.status, ==, 2);
  assert_one_line_error (&r, "exactly one");
  run_clear (&r);

  run_cli (&r, "inspect", "--help", NULL);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_nonnull (strstr (r.out, "--json"));
  run_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS (fixtures); i++)
    {
      g_autofree char *path = g_strdup_printf ("/cli/inspect/json/%s", fixtures[i].sub);
      g_test_add_data_func (path, &fixtures[i], test_json);
    }
  g_test_add_func ("/cli/inspect/text", test_text);
  g_test_add_func ("/cli/inspect/missing-folder", test_missing_folder);
  g_test_add_func ("/cli/inspect/hostile-folder", test_hostile_folder);
  g_test_add_func ("/cli/inspect/usage-errors", test_usage_errors);
  return g_test_run ();
}
