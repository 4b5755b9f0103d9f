/* Error summaries: what a person reads instead of the engine's or SQLite's message. Each
 * case is a message the code really produces; the summary must say the right thing and
 * carry no path, SQL or internals (those stay under Details). */
#include "burrow-config.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-chat-store.h"
#include "burrow-engine.h"
#include "burrow-error-text.h"

static GQuark
engine_domain (void)
{
  return g_quark_from_static_string ("burrow-engine-error-quark");
}

static void
assert_plain (const char *summary)
{
  g_assert_nonnull (summary);
  g_assert_null (strchr (summary, '/'));
  for (const char *const *w = (const char *const[]) { "INSERT", "SELECT", "UPDATE", "DELETE",
                                                      "PRAGMA", "sqlite", "SQL", NULL }; *w; w++)
    g_assert_null (strstr (summary, *w));
}

static void
check (GQuark      domain,
       int         code,
       const char *message,
       const char *expect)
{
  g_autoptr(GError) error = g_error_new_literal (domain, code, message);
  g_autofree char *summary = burrow_error_summary (error, "FALLBACK");

  g_test_message ("%s -> %s", message, summary);
  assert_plain (summary);
  g_assert_nonnull (strstr (summary, expect));
}

static void
test_summaries (void)
{
  check (BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_FAILED,
         "/home/a/.local/share/burrow/chats.db: INSERT INTO messages (chat_id, role, content) "
         "VALUES (?, ?, ?): disk I/O error", "chats could not be saved");
  check (BURROW_CHAT_STORE_ERROR, BURROW_CHAT_STORE_ERROR_VERSION,
         "/home/a/.local/share/burrow/chats.db: schema version 9 is newer than 3", "newer version");
  check (engine_domain (), 1, "/m/model-00001-of-00002.safetensors: header is truncated",
         "may still be downloading");
  check (engine_domain (), 1,
         "/m/model-00002-of-00002.safetensors: tensor model.layers.3.mlp.gate.weight runs past "
         "the end of the file", "may still be downloading");
  check (engine_domain (), 1, "/m/model.safetensors: header length 68719476736 is larger than the "
         "104857600-byte limit", "may still be downloading");
  check (engine_domain (), 1, "/m/config.json: No such file or directory", "config.json");
  check (engine_domain (), 1, "/m: no tokenizer.json or tiktoken.model in this folder", "tokenizer");
  check (engine_domain (), 1, "/m/config.json: model_type 'llama' is not supported (Burrow reads "
         "kimi_linear, kimi_k3 and glm_moe_dsa)", "does not support");
  check (engine_domain (), 1, "/m/model.safetensors: Permission denied", "not allowed");
  check (G_IO_ERROR, G_IO_ERROR_NO_SPACE, "/m/x: No space left on device", "full");
  check (engine_domain (), 1, "/m: something nobody expected", "FALLBACK");
}

/* What the engine itself reports for a folder deleted since it was chosen and for a shard
 * cut short: each its own summary, neither "no model" nor a missing config.json. */
static void
test_engine_errors (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *dir = bw_test_tmp_dir ("burrow-error-text-XXXXXX");
  g_autofree char *gone = g_build_filename (dir, "gone", NULL);
  g_autofree char *cut = g_build_filename (dir, "cut", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *summary = NULL;
  BurrowModelInfo info;
  GDir *files;
  const char *name;

  g_assert_false (burrow_inspect (gone, &info, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_NOT_FOUND);
  summary = burrow_error_summary (error, "FALLBACK");
  g_assert_nonnull (strstr (summary, "no longer there"));
  g_clear_error (&error);
  g_clear_pointer (&summary, g_free);

  g_assert_nonnull (demo);
  g_assert_cmpint (g_mkdir (cut, 0700), ==, 0);
  files = g_dir_open (demo, 0, &error);
  g_assert_no_error (error);
  while ((name = g_dir_read_name (files)) != NULL)
    {
      g_autofree char *from = g_build_filename (demo, name, NULL);
      g_autofree char *to = g_build_filename (cut, name, NULL);
      g_autofree char *bytes = NULL;
      gsize len = 0;

      g_assert_true (g_file_get_contents (from, &bytes, &len, NULL));
      /* The last shard stops halfway, as an interrupted download does. */
      if (g_str_has_suffix (name, "-00002-of-00002.safetensors"))
        len /= 2;
      g_assert_true (g_file_set_contents (to, bytes, (gssize) len, NULL));
    }
  g_dir_close (files);
  g_assert_false (burrow_inspect (cut, &info, &error));
  g_assert_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INCOMPLETE);
  summary = burrow_error_summary (error, "FALLBACK");
  assert_plain (summary);
  g_assert_nonnull (strstr (summary, "may still be downloading"));
  bw_test_remove_tree (dir);
}

static void
test_no_error (void)
{
  g_autofree char *summary = burrow_error_summary (NULL, "FALLBACK");

  g_assert_cmpstr (summary, ==, "FALLBACK");
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/error-text/summaries", test_summaries);
  g_test_add_func ("/error-text/no-error", test_no_error);
  g_test_add_func ("/error-text/engine-errors", test_engine_errors);
  return g_test_run ();
}
