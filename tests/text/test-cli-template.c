/* burrow-cli template: every reference case under tests/fixtures/templates (real templates
 * with what transformers renders for them) must come out byte for byte, and --model renders
 * a checkpoint's own template from tokenizer_config.json. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "tmp-dir.h"

typedef struct {
  int status;
  GBytes *out;
  char *err;
} Result;

static Result
run (const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GSubprocess) proc = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) err = NULL;
  Result r = { 0 };

  g_ptr_array_add (argv, (gpointer) BURROW_CLI);
  g_ptr_array_add (argv, (gpointer) "template");
  for (gsize i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  proc = g_subprocess_newv ((const char *const *) argv->pdata,
                            G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate (proc, NULL, NULL, &r.out, &err, &error));
  g_assert_no_error (error);
  r.status = g_subprocess_get_exit_status (proc);
  r.err = g_strndup (g_bytes_get_data (err, NULL), g_bytes_get_size (err));
  return r;
}

static void
test_case (gconstpointer data)
{
  const char *path = data;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  const char *expected;
  Result r;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  expected = json_object_get_string_member (json_node_get_object (json_parser_get_root (parser)),
                                            "expected");
  g_assert_nonnull (expected);
  r = run ((const char *[]) { "--case", path, NULL });
  if (r.status != 0)
    g_test_message ("stderr: %s", r.err);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpuint (g_bytes_get_size (r.out), ==, strlen (expected));
  g_assert_cmpmem (g_bytes_get_data (r.out, NULL), g_bytes_get_size (r.out), expected,
                   strlen (expected));
  g_bytes_unref (r.out);
  g_free (r.err);
}

/* A checkpoint folder whose tokenizer_config.json holds the template as a list, with its
 * bos/eos tokens as AddedToken objects. */
static void
test_model_folder (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-template-XXXXXX");
  g_autofree char *cfg = g_build_filename (dir, "tokenizer_config.json", NULL);
  g_autofree char *msgs = g_build_filename (dir, "messages.json", NULL);
  g_autofree char *tools = g_build_filename (dir, "tools.json", NULL);
  const char *config =
    "{\"bos_token\": {\"content\": \"<s>\"}, \"eos_token\": \"</s>\", \"chat_template\": ["
    "{\"name\": \"default\", \"template\": \"{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}{{ mode }}\"},"
    "{\"name\": \"tool_use\", \"template\": \"T{{ tools | length }}{{ eos_token }}\"}]}";
  Result r;

  g_assert_true (g_file_set_contents (cfg, config, -1, NULL));
  g_assert_true (g_file_set_contents (msgs, "[{\"role\": \"user\", \"content\": \"hi <|x|>\"}]", -1, NULL));
  g_assert_true (g_file_set_contents (tools, "[{\"type\": \"function\", \"function\": {\"name\": \"f\"}}]", -1, NULL));

  r = run ((const char *[]) { "--model", dir, "--messages", msgs, "--kwargs", "{\"mode\": \"!\"}", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpmem (g_bytes_get_data (r.out, NULL), g_bytes_get_size (r.out), "<s>[user]hi <|x|>[assistant]!", 29);
  g_bytes_unref (r.out);
  g_free (r.err);

  r = run ((const char *[]) { "--model", dir, "--messages", msgs, "--no-generation-prompt", NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpmem (g_bytes_get_data (r.out, NULL), g_bytes_get_size (r.out), "<s>[user]hi <|x|>", 17);
  g_bytes_unref (r.out);
  g_free (r.err);

  r = run ((const char *[]) { "--model", dir, "--messages", msgs, "--tools", tools, NULL });
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpmem (g_bytes_get_data (r.out, NULL), g_bytes_get_size (r.out), "T1</s>", 6);
  g_bytes_unref (r.out);
  g_free (r.err);

  /* A broken template: the error names the file, line and column. */
  g_assert_true (g_file_set_contents (cfg, "{\"chat_template\": \"ok\\n{{ 1 + }}\"}", -1, NULL));
  r = run ((const char *[]) { "--model", dir, "--messages", msgs, NULL });
  g_assert_cmpint (r.status, ==, 1);
  g_assert_nonnull (strstr (r.err, "tokenizer_config.json:2:"));
  g_bytes_unref (r.out);
  g_free (r.err);

  g_assert_true (g_file_set_contents (cfg, "{}", -1, NULL));
  r = run ((const char *[]) { "--model", dir, "--messages", msgs, NULL });
  g_assert_cmpint (r.status, ==, 1);
  g_assert_nonnull (strstr (r.err, "no chat template"));
  g_bytes_unref (r.out);
  g_free (r.err);

  g_remove (cfg);
  g_remove (msgs);
  g_remove (tools);
  g_rmdir (dir);
}

/* Runs burrow-cli chat on the demo model with input on stdin; returns its status. */
static int
run_chat (const char *input, const char *const *extra, char **out, char **err)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GSubprocess) proc = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) in = g_bytes_new (input, strlen (input));
  g_autoptr (GBytes) o = NULL, e = NULL;

  for (const char *const *a = (const char *const[]) { BURROW_CLI, "chat", "--model", BURROW_DEMO_MODEL,
                                                        "--threads", "2", "-n", "6", "--temperature", "0", NULL };
       *a; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  for (gsize i = 0; extra[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  proc = g_subprocess_newv ((const char *const *) argv->pdata, G_SUBPROCESS_FLAGS_STDIN_PIPE
                            | G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate (proc, in, NULL, &o, &e, &error));
  g_assert_no_error (error);
  *out = g_strndup (g_bytes_get_data (o, NULL), g_bytes_get_size (o));
  *err = g_strndup (g_bytes_get_data (e, NULL), g_bytes_get_size (e));
  return g_subprocess_get_exit_status (proc);
}

/* The demo model's own template builds chat prompts: a second turn reuses the first's
 * decode state (the re-rendered history starts with the ids already read), and --template
 * replaces it, its errors naming the file, line and column. */
static void
test_chat_uses_template (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-chat-template-XXXXXX");
  g_autofree char *raise = g_build_filename (dir, "raise.jinja", NULL);
  g_autofree char *out = NULL, *err = NULL;
  const char *stats;
  int cached = -1, prompt = -1;

  g_assert_cmpint (run_chat ("hello\nhow are you\n", (const char *[]) { NULL }, &out, &err), ==, 0);
  /* the last turn's stats line (a per-token phase line may follow it) */
  stats = NULL;
  for (const char *p = err; (p = strstr (p, "| prompt ")) != NULL; p++)
    stats = p;
  g_assert_nonnull (stats);
  g_assert_cmpint (sscanf (stats, "| prompt %d (%d cached", &prompt, &cached), ==, 2);
  g_test_message ("second turn: prompt %d, cached %d", prompt, cached);
  g_assert_cmpint (cached, >, 13);
  g_assert_cmpint (cached, <, prompt);
  g_free (out);
  g_free (err);

  g_assert_true (g_file_set_contents (raise, "\n{{ raise_exception('template in use') }}", -1, NULL));
  g_assert_cmpint (run_chat ("hello\n", (const char *[]) { "--template", raise, NULL }, &out, &err), !=, 0);
  g_assert_nonnull (strstr (err, "raise.jinja:2:"));
  g_assert_nonnull (strstr (err, "template in use"));
  g_remove (raise);
  g_rmdir (dir);
}

static int
compare_paths (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

int
main (int argc, char **argv)
{
  g_autofree char *root = g_build_filename (BURROW_FIXTURES, "templates", NULL);
  g_autoptr (GPtrArray) cases = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GDir) dir = NULL;
  g_autoptr (GError) error = NULL;
  const char *family;
  guint families = 0;

  g_test_init (&argc, &argv, NULL);
  dir = g_dir_open (root, 0, &error);
  g_assert_no_error (error);
  while ((family = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *fdir = g_build_filename (root, family, NULL);
      g_autoptr (GDir) sub = g_dir_open (fdir, 0, NULL);
      const char *name;
      if (sub == NULL)
        continue;
      families++;
      while ((name = g_dir_read_name (sub)) != NULL)
        if (g_str_has_suffix (name, ".json"))
          g_ptr_array_add (cases, g_build_filename (fdir, name, NULL));
    }
  /* Five families with ten or eleven cases each ship in tests/fixtures/templates. */
  g_assert_cmpuint (families, >=, 5);
  g_assert_cmpuint (cases->len, >=, 49);
  g_ptr_array_sort (cases, compare_paths);
  for (guint i = 0; i < cases->len; i++)
    {
      g_autofree char *rel = g_strdup ((char *) cases->pdata[i] + strlen (root));
      g_autofree char *test = g_strdup_printf ("/template/case%s", rel);
      g_test_add_data_func (test, cases->pdata[i], test_case);
    }
  g_test_add_func ("/template/model-folder", test_model_folder);
  g_test_add_func ("/template/chat-uses-template", test_chat_uses_template);
  return g_test_run ();
}
