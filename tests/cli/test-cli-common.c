/* The parsers and option group that every burrow-cli command shares: sizes, token id
 * lists, the model options and the demo model lookup. */
#include <glib.h>
#include <string.h>

#include "cli-common.h"
#include "tmp-dir.h"

static void
assert_size (const char *text, guint64 want)
{
  g_autoptr (GError) error = NULL;
  guint64 got = 7;
  g_assert_true (bw_cli_parse_size (text, &got, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (got, ==, want);
}

static void
assert_bad_size (const char *text)
{
  g_autoptr (GError) error = NULL;
  guint64 got = 7;
  g_assert_false (bw_cli_parse_size (text, &got, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  g_assert_nonnull (strstr (error->message, "is not a size"));
  g_assert_cmpuint (got, ==, 7);
}

static void
test_sizes (void)
{
  assert_size ("16G", G_GUINT64_CONSTANT (16) << 30);
  assert_size ("512M", G_GUINT64_CONSTANT (512) << 20);
  assert_size ("1.5G", G_GUINT64_CONSTANT (3) << 29);
  assert_size ("64k", G_GUINT64_CONSTANT (64) << 10);
  assert_size ("8GB", G_GUINT64_CONSTANT (8) << 30);
  assert_size ("2TiB", G_GUINT64_CONSTANT (2) << 40);
  assert_size ("1048576", 1048576);
  assert_size ("0", 0);
  assert_bad_size ("");
  assert_bad_size ("garbage");
  assert_bad_size ("G");
  assert_bad_size ("12Q");
  assert_bad_size ("16Gx");
  assert_bad_size ("16GBytes");
  assert_bad_size ("-1G");
  assert_bad_size ("nan");
  assert_bad_size ("1e30");
  assert_bad_size ("2000000T");
}

/* Parses text onto an array that already holds 99; checks the appended ids. */
static void
assert_ids (const char *text, const gint32 *want, guint n)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  gint32 first = 99;
  g_array_append_val (ids, first);
  g_assert_true (bw_cli_parse_ids (text, ids, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ids->len, ==, n + 1);
  g_assert_cmpint (g_array_index (ids, gint32, 0), ==, 99);
  for (guint i = 0; i < n; i++)
    g_assert_cmpint (g_array_index (ids, gint32, i + 1), ==, want[i]);
}

static void
assert_bad_ids (const char *text, const char *needle)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  gint32 first = 99;
  g_array_append_val (ids, first);
  g_assert_false (bw_cli_parse_ids (text, ids, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  g_assert_nonnull (strstr (error->message, needle));
  g_assert_cmpuint (ids->len, ==, 1);   /* nothing half-appended */
}

static void
test_ids (void)
{
  assert_ids ("1,2,3", (const gint32[]) { 1, 2, 3 }, 3);
  assert_ids (" 4 , 5,\t6 ", (const gint32[]) { 4, 5, 6 }, 3);
  assert_ids ("0", (const gint32[]) { 0 }, 1);
  assert_ids ("2147483647", (const gint32[]) { G_MAXINT32 }, 1);
  assert_bad_ids ("", "no token ids");
  assert_bad_ids ("1,x,3", "'x' is not a token id");
  assert_bad_ids ("1,,3", "'' is not a token id");
  assert_bad_ids ("1,2,", "'' is not a token id");
  assert_bad_ids ("1 2", "'1 2' is not a token id");
  assert_bad_ids ("-1", "'-1' is not a token id");
  assert_bad_ids ("0x10", "'0x10' is not a token id");
  assert_bad_ids ("2147483648", "'2147483648' is not a token id");
  assert_bad_ids ("99999999999999999999999", "is not a token id");
}

static void
test_argmax (void)
{
  const float v[] = { 0.5f, 3.0f, -1.0f, 3.0f, 2.0f };
  g_assert_cmpint (bw_cli_argmax (v, 5), ==, 1);   /* the first of equal maxima */
  g_assert_cmpint (bw_cli_argmax (v, 1), ==, 0);
}

/* Parses argv (NULL-terminated, without argv[0]) with the group for which. */
static gboolean
parse_model_args (BwCliModelArgs *a, BwCliModelFlags which, const char *const *args,
                  GError **error)
{
  g_autoptr (GOptionContext) ctx = g_option_context_new (NULL);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (char *) "test");
  for (int i = 0; args[i]; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  int argc = (int) argv->len;
  char **v = (char **) argv->pdata;
  memset (a, 0, sizeof *a);
  bw_cli_add_model_entries (ctx, a, which);
  return g_option_context_parse (ctx, &argc, &v, error);
}

static void
test_model_options (void)
{
  const BwCliModelFlags all = BW_CLI_MODEL_THREADS | BW_CLI_MODEL_RAM_BUDGET
                              | BW_CLI_MODEL_TOKENIZER | BW_CLI_MODEL_DENSE_BITS
                              | BW_CLI_MODEL_EXPERT_BITS | BW_CLI_MODEL_MAX_BATCH;
  const char *const args[] = { "--model", "/m", "--threads", "3", "--dense-bits", "8",
                               "--expert-bits", "4", "--max-batch", "32", "--ram-budget", "1.5G",
                               "--tokenizer", "/t.json", NULL };
  BwCliModelArgs a;
  BwModelOptions o;
  g_autoptr (GError) error = NULL;

  g_assert_true (parse_model_args (&a, all, args, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (a.model_dir, ==, "/m");
  g_assert_cmpstr (a.tokenizer, ==, "/t.json");
  g_assert_true (bw_cli_model_options (&a, &o, &error));
  g_assert_cmpint (o.threads, ==, 3);
  g_assert_cmpint (o.dense_bits, ==, 8);
  g_assert_cmpint (o.expert_bits, ==, 4);
  g_assert_cmpint (o.max_batch, ==, 32);
  g_assert_cmpuint (o.store.ram_budget, ==, G_GUINT64_CONSTANT (3) << 29);
  /* --model given: kept as is, no demo fallback. */
  g_assert_true (bw_cli_resolve_model (&a, &error));
  g_assert_cmpstr (a.model_dir, ==, "/m");
  bw_cli_model_args_clear (&a);
  g_assert_null (a.model_dir);

  /* Only the options asked for exist. */
  const char *const expert[] = { "--expert-bits", "4", NULL };
  g_assert_false (parse_model_args (&a, BW_CLI_MODEL_THREADS, expert, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_UNKNOWN_OPTION);
  g_clear_error (&error);
  bw_cli_model_args_clear (&a);

  const char *const bad[] = { "--ram-budget", "lots", NULL };
  g_assert_true (parse_model_args (&a, BW_CLI_MODEL_RAM_BUDGET, bad, &error));
  g_assert_false (bw_cli_model_options (&a, &o, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  bw_cli_model_args_clear (&a);
}

/* The store switches: auto by default, bare flag on, values, the legacy spellings off, and
 * the same options reaching the model as burrow_engine_load would give it. */
static void
test_store_switches (void)
{
  BwCliModelArgs a;
  BwModelOptions o;
  g_autoptr (GError) error = NULL;

  const char *const none[] = { NULL };
  g_assert_true (parse_model_args (&a, BW_CLI_MODEL_ENGINE, none, &error));
  g_assert_true (bw_cli_model_options (&a, &o, &error));
  g_assert_cmpint (o.store.direct_io, ==, BW_STORE_AUTO);
  g_assert_cmpint (o.store.prefetch, ==, BW_STORE_AUTO);
  g_assert_true (o.store.pinning);
  g_assert_cmpint (o.store.io, ==, BW_IO_AUTO);
  g_assert_cmpint (o.max_batch, ==, 64);
  bw_cli_model_args_clear (&a);

  const char *const on[] = { "--direct", "--prefetch=off", "--pinning=off", "--io", "pread",
                             "--max-batch", "16", NULL };
  g_assert_true (parse_model_args (&a, BW_CLI_MODEL_ENGINE, on, &error));
  g_assert_true (bw_cli_model_options (&a, &o, &error));
  g_assert_cmpint (o.store.direct_io, ==, TRUE);
  g_assert_cmpint (o.store.prefetch, ==, FALSE);
  g_assert_false (o.store.pinning);
  g_assert_cmpint (o.store.io, ==, BW_IO_PREAD);
  g_assert_cmpint (o.max_batch, ==, 16);
  bw_cli_model_args_clear (&a);

  const char *const legacy[] = { "--buffered", "--no-pinning", "--prefetch-top", "3", NULL };
  g_assert_true (parse_model_args (&a, BW_CLI_MODEL_ENGINE, legacy, &error));
  g_assert_true (bw_cli_model_options (&a, &o, &error));
  g_assert_cmpint (o.store.direct_io, ==, FALSE);
  g_assert_false (o.store.pinning);
  g_assert_cmpint (o.store.prefetch, ==, TRUE);   /* a breadth asks for the lookahead */
  g_assert_cmpint (o.store.prefetch_top, ==, 3);
  bw_cli_model_args_clear (&a);

  const char *const bad[] = { "--direct=sometimes", NULL };
  g_assert_false (parse_model_args (&a, BW_CLI_MODEL_ENGINE, bad, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  g_clear_error (&error);
  bw_cli_model_args_clear (&a);

  const char *const bad_io[] = { "--io", "mmap", NULL };
  g_assert_true (parse_model_args (&a, BW_CLI_MODEL_ENGINE, bad_io, &error));
  g_assert_false (bw_cli_model_options (&a, &o, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  bw_cli_model_args_clear (&a);
}

static void
test_default_model_dir (void)
{
  g_autofree char *dir = burrow_demo_model_dir ();
  g_assert_nonnull (dir);
  g_assert_true (g_str_has_suffix (dir, G_DIR_SEPARATOR_S "demo-model"));
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  g_assert_true (g_file_test (config, G_FILE_TEST_IS_REGULAR));

  /* $BURROW_DEMO_MODEL wins, for the CLI and the app alike, and must hold a config.json. */
  g_autofree char *tmp = bw_test_tmp_dir ("demo-env-XXXXXX");
  g_setenv ("BURROW_DEMO_MODEL", tmp, TRUE);
  g_assert_null (burrow_demo_model_dir ());
  BwCliModelArgs a = { 0 };
  g_autoptr (GError) error = NULL;
  g_assert_false (bw_cli_resolve_model (&a, &error));
  g_assert_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE);
  g_assert_nonnull (strstr (error->message, "BURROW_DEMO_MODEL"));
  g_autofree char *tmp_config = g_build_filename (tmp, "config.json", NULL);
  g_assert_true (g_file_set_contents (tmp_config, "{}", -1, NULL));
  g_autofree char *from_env = burrow_demo_model_dir ();
  g_assert_cmpstr (from_env, ==, tmp);
  g_assert_true (bw_cli_resolve_model (&a, NULL));
  g_assert_cmpstr (a.model_dir, ==, tmp);
  bw_cli_model_args_clear (&a);
  g_unsetenv ("BURROW_DEMO_MODEL");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli-common/sizes", test_sizes);
  g_test_add_func ("/cli-common/ids", test_ids);
  g_test_add_func ("/cli-common/argmax", test_argmax);
  g_test_add_func ("/cli-common/model-options", test_model_options);
  g_test_add_func ("/cli-common/store-switches", test_store_switches);
  g_test_add_func ("/cli-common/default-model-dir", test_default_model_dir);
  return g_test_run ();
}
