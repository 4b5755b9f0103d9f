/* Model folders for the generation tests (see run-fixture.h). */
#include "tmp-dir.h"
#include "run-fixture.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <unistd.h>

/* The end-of-text ids of each fixture tokenizer (tests/run/fixtures/README.md). */
static JsonNode *
fixture_eos (const char *oracle)
{
  JsonNode *node = json_node_new (JSON_NODE_ARRAY);
  JsonArray *arr = json_array_new ();
  if (g_str_equal (oracle, "glm52"))
    {
      json_array_add_int_element (arr, 96);
      json_array_add_int_element (arr, 103);
      json_array_add_int_element (arr, 105);
    }
  else
    json_array_add_int_element (arr, g_str_equal (oracle, "kimi_k3") ? 99 : 57);
  json_node_take_array (node, arr);
  return node;
}

static void
link_into (const char *from_dir, const char *name, const char *to_dir)
{
  g_autofree char *src = g_build_filename (from_dir, name, NULL);
  g_autofree char *dst = g_build_filename (to_dir, name, NULL);
  g_assert_true (g_file_test (src, G_FILE_TEST_EXISTS));
  g_assert_cmpint (symlink (src, dst), ==, 0);
}

static void
copy_into (const char *from_dir, const char *name, const char *to_dir)
{
  g_autofree char *src = g_build_filename (from_dir, name, NULL);
  g_autofree char *dst = g_build_filename (to_dir, name, NULL);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true (g_file_get_contents (src, &data, &len, NULL));
  g_assert_true (g_file_set_contents (dst, data, (gssize) len, NULL));
}

static void
write_config (const char *oracle_dir, const char *dir, const char *oracle)
{
  g_autofree char *src = g_build_filename (oracle_dir, "config.json", NULL);
  g_autofree char *dst = g_build_filename (dir, "config.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (parser, src, NULL));
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  json_object_set_member (root, "eos_token_id", fixture_eos (oracle));
  if (json_object_has_member (root, "text_config")
      && JSON_NODE_HOLDS_OBJECT (json_object_get_member (root, "text_config")))
    json_object_set_member (json_object_get_object_member (root, "text_config"),
                            "eos_token_id", fixture_eos (oracle));
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  json_generator_set_root (gen, json_parser_get_root (parser));
  g_assert_true (json_generator_to_file (gen, dst, NULL));
}

char *
run_fixture_make (const char *oracle)
{
  g_autofree char *oracle_dir = g_build_filename (BURROW_ORACLES, oracle, NULL);
  g_autofree char *tok_dir = g_build_filename (RUN_FIXTURES, oracle, NULL);
  g_autofree char *index = g_build_filename (oracle_dir, "model.safetensors.index.json", NULL);
  if (!g_file_test (index, G_FILE_TEST_EXISTS))
    g_error ("oracle fixture %s is missing", index);
  char *dir = bw_test_tmp_dir ("burrow-run-XXXXXX");
  g_assert_nonnull (dir);
  link_into (oracle_dir, "model.safetensors.index.json", dir);
  link_into (oracle_dir, "model-00001-of-00002.safetensors", dir);
  link_into (oracle_dir, "model-00002-of-00002.safetensors", dir);
  g_autoptr (GDir) tok_files = g_dir_open (tok_dir, 0, NULL);
  if (tok_files == NULL)
    g_error ("tokenizer fixture %s is missing", tok_dir);
  for (const char *name; (name = g_dir_read_name (tok_files)) != NULL;)
    copy_into (tok_dir, name, dir);
  write_config (oracle_dir, dir, oracle);
  return dir;
}

void
run_fixture_remove (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}
