/* The bundled demo model (data/demo-model) against the greedy outputs of its independent
 * PyTorch implementation (tests/demo/demo-ref.json, written by tests/demo/export.py):
 *   - the folder is a complete Kimi Linear checkpoint within the size limit
 *   - burrow-cli tokenize gives the fixture's prompt ids for each prompt text
 *   - burrow-cli run --teacher-force: the argmax at every position == tf_pred
 *   - burrow-cli run --ids --greedy: the continuation == the fixture's, token for token
 *   - burrow-cli run --prompt (chat template, or --raw): the same ids, stopping at <|im_end|>
 * A missing model or fixture fails. */
#include <gio/gio.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#define MAX_BYTES (20 * 1000 * 1000)

static JsonObject *
load_fixture (JsonParser *parser)
{
  g_autoptr (GError) error = NULL;
  if (!json_parser_load_from_file (parser, DEMO_FIXTURE, &error))
    {
      g_test_message ("fixture missing or unreadable: %s", error->message);
      g_test_fail ();
      return NULL;
    }
  return json_node_get_object (json_parser_get_root (parser));
}

static JsonArray *
cases_of (JsonObject *root)
{
  JsonArray *cases = json_object_get_array_member (root, "cases");
  g_assert_nonnull (cases);
  g_assert_cmpuint (json_array_get_length (cases), >, 0);
  return cases;
}

/* "a,b,c" of elements [from, to) of an int array. */
static char *
join_ids (JsonArray *arr, guint from, guint to)
{
  GString *s = g_string_new (NULL);
  for (guint i = from; i < to; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i > from ? "," : "",
                            json_array_get_int_element (arr, i));
  return g_string_free (s, FALSE);
}

/* Runs burrow-cli with args (NULL-terminated) and optional stdin; returns its last stdout
 * line. Fails the test when it exits non-zero. */
static char *
cli_last_line (const char *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) BURROW_CLI);
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);

  g_autoptr (GError) error = NULL;
  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE
                           | (input ? G_SUBPROCESS_FLAGS_STDIN_PIPE : 0);
  g_autoptr (GSubprocess) proc = g_subprocess_newv ((const char *const *) argv->pdata, flags,
                                                    &error);
  g_assert_no_error (error);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_true (g_subprocess_communicate_utf8 (proc, input, NULL, &out, &err, &error));
  g_assert_no_error (error);
  if (!g_subprocess_get_successful (proc))
    g_test_message ("burrow-cli stderr: %s", err);
  g_assert_true (g_subprocess_get_successful (proc));
  g_strchomp (out);
  const char *last = strrchr (out, '\n');
  return g_strdup (last ? last + 1 : out);
}

static char *
run_model (const char *const *extra)
{
  const char *args[16] = { "run", "--model", DEMO_MODEL_DIR, "--threads", "2" };
  int n = 5;
  for (int i = 0; extra[i]; i++)
    args[n++] = extra[i];
  args[n] = NULL;
  g_assert_cmpint (n, <, 16);
  return cli_last_line (NULL, args);
}

static void
test_files (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GDir) dir = g_dir_open (DEMO_MODEL_DIR, 0, &error);
  if (dir == NULL)
    {
      g_test_message ("demo model missing: %s", error->message);
      g_test_fail ();
      return;
    }
  guint64 total = 0;
  const char *name;
  while ((name = g_dir_read_name (dir)))
    {
      g_autofree char *path = g_build_filename (DEMO_MODEL_DIR, name, NULL);
      GStatBuf st;
      g_assert_cmpint (g_stat (path, &st), ==, 0);
      total += (guint64) st.st_size;
    }
  g_test_message ("demo model folder: %" G_GUINT64_FORMAT " bytes", total);
  g_assert_cmpuint (total, <=, MAX_BYTES);

  const char *needed[] = { "config.json", "tiktoken.model", "tokenizer_config.json",
                           "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors" };
  for (gsize i = 0; i < G_N_ELEMENTS (needed); i++)
    {
      g_autofree char *path = g_build_filename (DEMO_MODEL_DIR, needed[i], NULL);
      if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
        g_error ("missing %s", path);
    }

  g_autofree char *cfg_path = g_build_filename (DEMO_MODEL_DIR, "config.json", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (parser, cfg_path, &error));
  JsonObject *cfg = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (cfg, "model_type"), ==, "kimi_linear");
  g_assert_cmpint (json_object_get_int_member (cfg, "num_experts"), >, 1);
}

static void
test_tokenize (void)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_fixture (parser);
  if (root == NULL)
    return;
  JsonArray *cases = cases_of (root);
  g_autofree char *tok = g_build_filename (DEMO_MODEL_DIR, "tiktoken.model", NULL);
  for (guint c = 0; c < json_array_get_length (cases); c++)
    {
      JsonObject *cs = json_array_get_object_element (cases, c);
      JsonArray *prompt = json_object_get_array_member (cs, "prompt_ids");
      g_autofree char *want = join_ids (prompt, 0, json_array_get_length (prompt));
      const char *args[] = { "tokenize", "--tokenizer", tok, NULL };
      g_autofree char *got = cli_last_line (json_object_get_string_member (cs, "prompt_rendered"),
                                            args);
      g_assert_cmpstr (got, ==, want);
    }
}

static void
test_teacher_force (void)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_fixture (parser);
  if (root == NULL)
    return;
  JsonArray *cases = cases_of (root);
  for (guint c = 0; c < json_array_get_length (cases); c++)
    {
      JsonObject *cs = json_array_get_object_element (cases, c);
      JsonArray *full = json_object_get_array_member (cs, "full_ids");
      JsonArray *tf = json_object_get_array_member (cs, "tf_pred");
      g_autofree char *ids = join_ids (full, 0, json_array_get_length (full));
      g_autofree char *want = join_ids (tf, 0, json_array_get_length (tf));
      const char *extra[] = { "--teacher-force", ids, "--print-ids", NULL };
      g_autofree char *got = run_model (extra);
      g_assert_cmpstr (got, ==, want);
    }
}

static void
test_greedy (void)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_fixture (parser);
  if (root == NULL)
    return;
  JsonArray *cases = cases_of (root);
  for (guint c = 0; c < json_array_get_length (cases); c++)
    {
      JsonObject *cs = json_array_get_object_element (cases, c);
      JsonArray *full = json_object_get_array_member (cs, "full_ids");
      guint n_prompt = json_array_get_length (json_object_get_array_member (cs, "prompt_ids"));
      guint n_total = json_array_get_length (full);
      g_autofree char *prompt = join_ids (full, 0, n_prompt);
      g_autofree char *want = join_ids (full, n_prompt, n_total);
      g_autofree char *n = g_strdup_printf ("%u", n_total - n_prompt);
      const char *extra[] = { "--ids", prompt, "--max-tokens", n, "--greedy", "--print-ids",
                              NULL };
      g_autofree char *got = run_model (extra);
      g_assert_cmpstr (got, ==, want);
    }
}

/* Text in: chat cases through the Kimi chat template, text cases with --raw. Generation
 * stops after <|im_end|>, which the fixture's until_stop_ids include when it is reached. */
static void
test_prompt (void)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonObject *root = load_fixture (parser);
  if (root == NULL)
    return;
  JsonArray *cases = cases_of (root);
  for (guint c = 0; c < json_array_get_length (cases); c++)
    {
      JsonObject *cs = json_array_get_object_element (cases, c);
      JsonArray *until = json_object_get_array_member (cs, "until_stop_ids");
      guint n_gen = json_array_get_length (json_object_get_array_member (cs, "full_ids"))
                    - json_array_get_length (json_object_get_array_member (cs, "prompt_ids"));
      g_autofree char *want = join_ids (until, 0, json_array_get_length (until));
      g_autofree char *n = g_strdup_printf ("%u", n_gen);
      const char *text = json_object_get_string_member (cs, "prompt_text");
      gboolean chat = g_strcmp0 (json_object_get_string_member (cs, "kind"), "chat") == 0;
      const char *extra[] = { "--prompt", text, "--max-tokens", n, "--print-ids",
                              chat ? NULL : "--raw", NULL };
      g_autofree char *got = run_model (extra);
      g_assert_cmpstr (got, ==, want);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/demo/files", test_files);
  g_test_add_func ("/demo/tokenize", test_tokenize);
  g_test_add_func ("/demo/teacher-force", test_teacher_force);
  g_test_add_func ("/demo/greedy", test_greedy);
  g_test_add_func ("/demo/prompt", test_prompt);
  return g_test_run ();
}
