/* The app started on a damaged chat database: it starts, says where the damaged file was
 * kept, and its "Recover" button brings back what SQLite can still read. */
#include "burrow-config.h"

#include <adwaita.h>
#include <sqlite3.h>
#include <string.h>

#include "burrow-application.h"
#include "burrow-chat-store.h"
#include "user-dirs.h"
#include "app-window.h"
#include "iterate.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

enum { CHATS = 2, MESSAGES = 30 };

/* The default database with CHATS conversations, its journal folded in, then cut at two
 * thirds as a crash of the disk might leave it. */
static void
write_damaged_store (void)
{
  g_autofree char *path = burrow_chat_store_default_path ();
  g_autoptr(GError) error = NULL;
  g_autofree char *data = NULL;
  gsize len = 0;
  const BurrowSampling sampling = { 0.7, 0.9, 40 };

  {
    g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);

    g_assert_no_error (error);
    for (int c = 0; c < CHATS; c++)
      {
        BurrowChat *chat = burrow_chat_store_create_chat (store, "/m", "", &sampling, &error);

        g_assert_no_error (error);
        for (int m = 0; m < MESSAGES; m++)
          {
            g_autofree char *pad = g_strnfill (700, 'x');
            g_autofree char *text = g_strdup_printf ("chat %d message %d %s", c, m, pad);
            g_autoptr(BurrowChatMessage) message =
              burrow_chat_message_new (m % 2 ? BURROW_ROLE_ASSISTANT : BURROW_ROLE_USER, text);

            g_assert_true (burrow_chat_store_add_message (store, chat, message, &error));
          }
      }
  }
  {
    sqlite3 *db = NULL;

    g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
    g_assert_cmpint (sqlite3_exec (db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
                     ==, SQLITE_OK);
    sqlite3_close (db);
  }
  g_assert_true (g_file_get_contents (path, &data, &len, NULL));
  g_assert_true (g_file_set_contents (path, data, (gssize) (len / 3 * 2), NULL));
}

static AdwMessageDialog *
find_dialog (const char *heading)
{
  g_autoptr(GList) windows = gtk_window_list_toplevels ();

  for (GList *l = windows; l != NULL; l = l->next)
    if (ADW_IS_MESSAGE_DIALOG (l->data) && gtk_widget_get_visible (l->data)
        && g_strcmp0 (adw_message_dialog_get_heading (l->data), heading) == 0)
      return l->data;
  return NULL;
}

static void
test_recover_button (void)
{
  g_autoptr(BurrowApplication) app = burrow_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr(GError) error = NULL;
  AdwMessageDialog *dialog = NULL, *result = NULL;
  BurrowChatStore *store;
  guint n_chats = 0, n_messages = 0, found = 0;

  write_damaged_store ();
  g_application_register (G_APPLICATION (app), NULL, &error);
  g_assert_no_error (error);
  store = burrow_application_get_chat_store (app);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 0);

  g_application_activate (G_APPLICATION (app));
  ITERATE_UNTIL ((dialog = find_dialog ("Saved Chats Were Damaged")) != NULL);
  g_test_message ("%s", adw_message_dialog_get_body (dialog));
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "chats.db.damaged-"));
  g_assert_true (adw_message_dialog_has_response (dialog, "recover"));

  adw_message_dialog_response (dialog, "recover");
  ITERATE_UNTIL ((result = find_dialog ("Chats Recovered")) != NULL);
  g_test_message ("%s", adw_message_dialog_get_body (result));
  g_assert_cmpint (sscanf (adw_message_dialog_get_body (result),
                           "Recovered %u conversations with %u messages.", &n_chats,
                           &n_messages), ==, 2);
  g_assert_cmpuint (n_chats, >=, 1);
  g_assert_cmpuint (n_messages, >=, CHATS * MESSAGES / 3);
  /* In the list beside the demo's conversation (a first run opens the demo). */
  for (guint i = 0; i < g_list_model_get_n_items (G_LIST_MODEL (store)); i++)
    {
      g_autoptr(BurrowChat) chat = g_list_model_get_item (G_LIST_MODEL (store), i);
      g_autoptr(GPtrArray) messages = burrow_chat_store_load_messages (store, chat, &error);

      g_assert_no_error (error);
      if (messages->len > 0
          && g_str_has_prefix (burrow_chat_message_get_content (messages->pdata[0]), "chat "))
        found += messages->len;
    }
  g_assert_cmpuint (found, ==, n_messages);

  adw_message_dialog_response (result, "close");
  for (GList *l = gtk_window_list_toplevels (), *w = l; w != NULL; w = w->next)
    {
      gtk_window_destroy (w->data);
      if (w->next == NULL)
        g_list_free (l);
    }
  g_application_quit (G_APPLICATION (app));
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-damaged-store");
  int ret;

  g_setenv ("LANGUAGE", "C", TRUE);
  if (!app_test_init (&argc, &argv))
    return 0;
  g_test_add_func ("/damaged-store/recover-button", test_recover_button);
  ret = g_test_run ();
  bw_test_remove_tree (user_dirs);
  return ret;
}
