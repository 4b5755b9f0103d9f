/* Error summaries: what a person reads instead of the engine's or SQLite's message. Each
 * case is a message the code really produces; the summary must say the right thing and
 * carry no path, SQL or internals (those stay under Details). */
#include "burrow-config.h"

#include <gio/gio.h>
#include <string.h>

#include "burrow-chat-store.h"
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
  return g_test_run ();
}
