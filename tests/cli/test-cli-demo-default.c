/* Without --model, burrow-cli runs the bundled demo model: the same ids as with the demo
 * folder named explicitly, the demo's reference continuation, one stderr line saying so,
 * and stdout left as the command's contract has it. */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <string.h>

typedef struct {
  gboolean ok;
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
run_cli (Run *r, const char *input, const char *const *args)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_ptr_array_add (argv, (char *) BURROW_CLI);
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE
                           | (input ? G_SUBPROCESS_FLAGS_STDIN_PIPE : 0);
  g_autoptr (GSubprocess) p = g_subprocess_newv ((const char *const *) argv->pdata, flags,
                                                 &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate_utf8 (p, input, NULL, &r->out, &r->err, &error));
  g_assert_no_error (error);
  g_test_message ("stderr: %s", r->err);
  r->ok = g_subprocess_get_successful (p);
}

/* The last line of out, without its newline. */
static char *
last_line (const char *out)
{
  g_autofree char *copy = g_strchomp (g_strdup (out));
  const char *nl = strrchr (copy, '\n');
  return g_strdup (nl ? nl + 1 : copy);
}

/* The demo folder the stderr line names; fails unless exactly that line is there. */
static char *
announced_dir (const char *err)
{
  static const char prefix[] = "burrow-cli: no --model given, using the demo model at ";
  const char *at = strstr (err, prefix);
  g_assert_nonnull (at);
  g_assert_null (strstr (at + 1, prefix));
  at += strlen (prefix);
  const char *nl = strchr (at, '\n');
  g_assert_nonnull (nl);
  g_autofree char *dir = g_strndup (at, (gsize) (nl - at));
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  g_assert_true (g_str_has_suffix (dir, "demo-model"));
  g_assert_true (g_file_test (config, G_FILE_TEST_IS_REGULAR));
  return g_steal_pointer (&dir);
}

static void
test_run_ids (void)
{
  const char *const args[] = { "run", "--threads", "2", "--ids", "1,2,3", "--max-tokens", "3",
                               "--greedy", "--print-ids", NULL };
  Run r = { 0 }, named = { 0 };

  run_cli (&r, NULL, args);
  g_assert_true (r.ok);
  g_autofree char *dir = announced_dir (r.err);
  g_autofree char *ids = last_line (r.out);
  g_auto (GStrv) parts = g_strsplit (ids, ",", -1);
  g_assert_cmpuint (g_strv_length (parts), ==, 3);
  for (int i = 0; parts[i]; i++)
    {
      guint64 v;
      g_assert_true (g_ascii_string_to_unsigned (parts[i], 10, 0, G_MAXINT32, &v, NULL));
    }
  /* stdout holds nothing but the ids line. */
  g_autofree char *only_ids = g_strconcat (ids, "\n", NULL);
  g_assert_cmpstr (r.out, ==, only_ids);

  const char *const with_model[] = { "run", "--model", dir, "--threads", "2", "--ids", "1,2,3",
                                     "--max-tokens", "3", "--greedy", "--print-ids", NULL };
  run_cli (&named, NULL, with_model);
  g_assert_true (named.ok);
  g_assert_null (strstr (named.err, "no --model given"));
  g_assert_cmpstr (named.out, ==, r.out);
  run_clear (&r);
  run_clear (&named);
}

static char *
join_ids (JsonArray *arr, guint from, guint to)
{
  GString *s = g_string_new (NULL);
  for (guint i = from; i < to; i++)
    g_string_append_printf (s, "%s%" G_GINT64_FORMAT, i > from ? "," : "",
                            json_array_get_int_element (arr, i));
  return g_string_free (s, FALSE);
}

/* The demo's reference greedy continuation, reached without --model. */
static void
test_run_reference (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_assert_true (json_parser_load_from_file (parser, DEMO_FIXTURE, &error));
  g_assert_no_error (error);
  JsonObject *ref = json_node_get_object (json_parser_get_root (parser));
  JsonArray *full = json_object_get_array_member (ref, "full_ids");
  guint n_prompt = json_array_get_length (json_object_get_array_member (ref, "prompt_ids"));
  g_assert_cmpuint (json_array_get_length (full), >=, n_prompt + 3);
  g_autofree char *prompt = join_ids (full, 0, n_prompt);
  g_autofree char *want = join_ids (full, n_prompt, n_prompt + 3);
  /* the same tokens from the scalar kernels as from the best level (--isa selects it) */
  static const char *const levels[] = { "auto", "scalar" };
  for (gsize i = 0; i < G_N_ELEMENTS (levels); i++)
    {
      const char *const args[] = { "run", "--threads", "2", "--ids", prompt, "--max-tokens", "3",
                                   "--greedy", "--print-ids", "--isa", levels[i], NULL };
      Run r = { 0 };

      run_cli (&r, NULL, args);
      g_assert_true (r.ok);
      g_free (announced_dir (r.err));
      g_autofree char *got = last_line (r.out);
      g_assert_cmpstr (got, ==, want);
      run_clear (&r);
    }
  const char *const bad[] = { "run", "--ids", prompt, "--max-tokens", "1", "--isa", "avx9000",
                              NULL };
  Run r = { 0 };
  run_cli (&r, NULL, bad);
  g_assert_false (r.ok);
  g_assert_nonnull (strstr (r.err, "--isa must be"));
  run_clear (&r);
}

static void
test_chat (void)
{
  const char *const args[] = { "chat", "--threads", "2", "--temperature", "0", "-n", "4",
                               "--quiet", NULL };
  Run r = { 0 };

  run_cli (&r, "hello\n", args);
  g_assert_true (r.ok);
  g_free (announced_dir (r.err));
  g_assert_cmpuint (strlen (r.out), >, 1);
  run_clear (&r);
}

/* Values that make no sense are refused with the flag named, not run anyway. */
static void
test_bad_values (void)
{
  static const struct { const char *args[8]; const char *says; } cases[] = {
    { { "run", "--ids", "1,2", "-n", "0", NULL }, "--max-tokens must be at least 1" },
    { { "run", "--ids", "1,2", "-n", "-3", NULL }, "--max-tokens must be at least 1" },
    { { "run", "--ids", "1,2", "--threads", "-2", NULL }, "--threads must be between 1" },
    { { "chat", "-n", "0", NULL }, "--max-tokens must be at least 1" },
    { { "inspect", BURROW_CLI, NULL }, "not a model: a model is a folder" },
    { { "inspect", "/nonexistent/burrow-model", NULL }, "no such file or folder" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      Run r = { 0 };
      /* no input: a refused command exits without reading it, and writing to its closed
       * stdin would kill this test with SIGPIPE */
      run_cli (&r, NULL, cases[i].args);
      g_assert_false (r.ok);
      g_assert_nonnull (strstr (r.err, cases[i].says));
      g_assert_null (strstr (r.err, "/config.json"));
      run_clear (&r);
    }
}

/* The per-token phase line shows the demo's sub-millisecond phases, not "0.000 s". */
static void
test_chat_phases (void)
{
  const char *const args[] = { "chat", "--threads", "2", "--temperature", "0", "-n", "4", NULL };
  Run r = { 0 };

  run_cli (&r, "hello\n", args);
  g_assert_true (r.ok);
  const char *line = strstr (r.err, "[per token: attention ");
  g_assert_nonnull (line);
  g_assert_null (strstr (line, " 0.000 s"));
  g_assert_true (strstr (line, " ms") != NULL || strstr (line, " us") != NULL);
  run_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli-demo-default/run-ids", test_run_ids);
  g_test_add_func ("/cli-demo-default/run-reference", test_run_reference);
  g_test_add_func ("/cli-demo-default/chat", test_chat);
  g_test_add_func ("/cli-demo-default/bad-values", test_bad_values);
  g_test_add_func ("/cli-demo-default/chat-phases", test_chat_phases);
  return g_test_run ();
}
