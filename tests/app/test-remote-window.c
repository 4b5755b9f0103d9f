/* The real window against a real burrow-cli serve on loopback (the testing build, pacing
 * its tokens so that a reply lasts), with a real Secret Service (run through
 * tests/with-keyring.sh): add the server with a wrong key (refused, nothing kept) and
 * again with the right one (its models listed), the key only in the keyring; chat with a
 * remote model, the reply streaming and the dashboard showing the server's profile
 * (expert grid, per-layer hits, per-token numbers); Stop mid-reply; the server killed
 * mid-reply (the error said, the partial reply kept); and plain http to another computer
 * asking before a key is sent. With BURROW_SCREENSHOT_DIR set, saves the performance page
 * during a remote reply there. */
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <libsecret/secret.h>
#include <signal.h>
#include <string.h>

#include "burrow-chat-view.h"
#include "burrow-dashboard.h"
#include "burrow-message-row.h"
#include "burrow-remote-backend.h"
#include "burrow-remote-error.h"
#include "burrow-remote-keyring.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "remote-server.h"
#include "screenshot.h"
#include "user-dirs.h"
#include "app-window.h"
#include "iterate.h"
#include "widget-find.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

static BurrowApplication *app;
static BurrowWindow *window;
static RemoteServer *server;
static char *key_file;
static const char right_key[] = "burrow-right-key-4711";
static const char wrong_key[] = "burrow-wrong-key-0815";

static BurrowChatMessage *
message (guint i)
{
  g_autoptr(BurrowChatMessage) m = g_list_model_get_item (burrow_chat_view_get_messages (app_test_chat_view (window)), i);

  g_assert_nonnull (m);
  return m;
}

static guint
n_messages (void)
{
  return g_list_model_get_n_items (burrow_chat_view_get_messages (app_test_chat_view (window)));
}

static void
iterate_for (double seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);

  while (g_get_monotonic_time () < end)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (1000);
}

/* "Add a Server…" beside the Servers heading of the start page. */
static GtkWidget *
add_button (void)
{
  GtkWidget *button = adw_preferences_group_get_header_suffix (ADW_PREFERENCES_GROUP (app_test_child (window, "servers_group")));

  g_assert_true (GTK_IS_BUTTON (button));
  /* The start page shows a moment after the window maps. */
  ITERATE_UNTIL (gtk_widget_get_mapped (button));
  g_assert_true (gtk_widget_is_sensitive (button));
  return button;
}

/* The dialog this window has on top, if any. */
static AdwMessageDialog *
top_dialog (void)
{
  return ADW_MESSAGE_DIALOG (test_find_toplevel (ADW_TYPE_MESSAGE_DIALOG));
}

/* Answers @dialog as its button would, then makes sure it is gone. */
static void
respond (AdwMessageDialog *dialog,
         const char       *response)
{
  g_object_add_weak_pointer (G_OBJECT (dialog), (gpointer *) &dialog);
  adw_message_dialog_response (dialog, response);
  if (dialog != NULL)
    {
      g_object_remove_weak_pointer (G_OBJECT (dialog), (gpointer *) &dialog);
      gtk_window_destroy (GTK_WINDOW (dialog));
    }
}

/* The row of the servers list titled @title, or NULL. */
static AdwActionRow *
server_list_row (const char *title)
{
  GtkWidget *list = GTK_WIDGET (app_test_child (window, "servers_list"));

  for (GtkWidget *c = gtk_widget_get_first_child (list); c != NULL; c = gtk_widget_get_next_sibling (c))
    if (ADW_IS_ACTION_ROW (c) &&
        g_strcmp0 (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (c)), title) == 0)
      return ADW_ACTION_ROW (c);
  return NULL;
}

static gboolean
row_says (const char *title,
          const char *words)
{
  AdwActionRow *row = server_list_row (title);
  const char *subtitle = row ? adw_action_row_get_subtitle (row) : NULL;

  return subtitle != NULL && strstr (subtitle, words) != NULL;
}

/* Clicks "Add a Server…" (or its menu item), fills the dialog and clicks Add. */
static void
add_server (const char *url,
            const char *key,
            const char *name)
{
  AdwMessageDialog *dialog;

  g_assert_null (top_dialog ());
  /* From the start page's button, or the main menu where a chat shows. */
  if (window->chat == NULL)
    g_assert_true (gtk_widget_activate (add_button ()));
  else
    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.add-server", NULL));
  ITERATE_UNTIL (top_dialog () != NULL);
  dialog = top_dialog ();
  gtk_editable_set_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-url")), url);
  gtk_editable_set_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-key")), key);
  gtk_editable_set_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-name")), name);
  g_assert_true (adw_message_dialog_get_response_enabled (dialog, "add"));
  respond (dialog, "add");
  ITERATE_UNTIL (top_dialog () == NULL);
}

static void
on_key (GObject      *source,
        GAsyncResult *result,
        gpointer      data)
{
  char **key = data;

  *key = burrow_remote_keyring_lookup_finish (result, NULL);
  if (*key == NULL)
    *key = g_strdup ("");
}

static char *
keyring_key (const char *url)
{
  char *key = NULL;

  burrow_remote_keyring_lookup_async (url, NULL, on_key, &key);
  ITERATE_UNTIL (key != NULL);
  return key;
}

/* Nothing Burrow wrote on disk or into GSettings holds @key. */
static void
assert_key_nowhere (const char *key)
{
  g_autoptr(GSettings) settings = g_settings_new (BURROW_APP_ID);
  g_autoptr(GVariant) servers = g_settings_get_value (settings, "remote-servers");
  g_autofree char *text = g_variant_print (servers, FALSE);
  g_autofree char *db = g_build_filename (g_get_user_data_dir (), "burrow", NULL);
  GDir *dir = g_dir_open (db, 0, NULL);
  const char *name;

  g_assert_null (strstr (text, key));
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (db, name, NULL);
      g_autofree char *bytes = NULL;
      gsize len = 0;

      if (g_file_get_contents (path, &bytes, &len, NULL))
        g_assert_null (g_strstr_len (bytes, (gssize) len, key));
    }
  g_clear_pointer (&dir, g_dir_close);
}

/* A key the server refuses is found out when adding: nothing is added, the key is not
 * kept, and the toast says so, the server's name (markup characters and all) as typed. */
static void
test_wrong_key (void)
{
  g_autofree char *url = g_strndup (server->url, strlen (server->url) - 1);
  g_autofree char *kept = NULL;
  g_autoptr(GSettings) settings = g_settings_new (BURROW_APP_ID);
  g_autoptr(GVariant) before = g_settings_get_value (settings, "remote-servers");
  g_autoptr(GVariant) after = NULL;

  add_server (server->url, wrong_key, "<b>Test</b> & co");
  ITERATE_UNTIL (app_test_toast_shows (window,
                                       "<b>Test</b> & co refused the API key, so the server was not added"));
  app_test_save_screenshot (GTK_WIDGET (window), "server-key-refused.png");
  after = g_settings_get_value (settings, "remote-servers");
  g_assert_true (g_variant_equal (before, after));
  g_assert_null (server_list_row ("<b>Test</b> & co"));
  g_assert_null (server_list_row ("demo-model"));
  kept = keyring_key (url);
  g_assert_cmpstr (kept, ==, "");
}

/* Whether the menu beside New Chat has, in the section labelled @section, an item @label
 * that starts a chat with @id. */
static gboolean
model_menu_has (const char *section,
                const char *label,
                const char *id)
{
  GMenuModel *menu = adw_split_button_get_menu_model (ADW_SPLIT_BUTTON (app_test_child (window, "new_chat_button")));

  for (int s = 0; s < g_menu_model_get_n_items (menu); s++)
    {
      g_autofree char *heading = NULL;
      g_autoptr(GMenuModel) items = g_menu_model_get_item_link (menu, s, G_MENU_LINK_SECTION);

      if (!g_menu_model_get_item_attribute (menu, s, G_MENU_ATTRIBUTE_LABEL, "s", &heading) ||
          g_strcmp0 (heading, section) != 0 || items == NULL)
        continue;
      for (int i = 0; i < g_menu_model_get_n_items (items); i++)
        {
          g_autofree char *text = NULL, *action = NULL, *target = NULL;

          g_menu_model_get_item_attribute (items, i, G_MENU_ATTRIBUTE_LABEL, "s", &text);
          g_menu_model_get_item_attribute (items, i, G_MENU_ATTRIBUTE_ACTION, "s", &action);
          g_menu_model_get_item_attribute (items, i, G_MENU_ATTRIBUTE_TARGET, "s", &target);
          if (g_strcmp0 (text, label) == 0 && g_strcmp0 (action, "win.new-chat-with") == 0 &&
              g_strcmp0 (target, id) == 0)
            return TRUE;
        }
    }
  return FALSE;
}

static void
test_right_key (void)
{
  g_autofree char *url = g_strndup (server->url, strlen (server->url) - 1);
  g_autofree char *kept = NULL;

  add_server (server->url, right_key, "Test server");
  ITERATE_UNTIL (server_list_row ("demo-model") != NULL && server_list_row ("alias") != NULL);
  g_assert_true (row_says ("Test server", url));
  /* Listed where a new chat's model is chosen too. */
  {
    g_autofree char *demo_id = burrow_remote_model_id (url, "demo-model");
    g_autofree char *alias_id = burrow_remote_model_id (url, "alias");

    ITERATE_UNTIL (model_menu_has ("Test server", "demo-model", demo_id));
    g_assert_true (model_menu_has ("Test server", "alias", alias_id));
  }
  kept = keyring_key (url);
  g_assert_cmpstr (kept, ==, right_key);
  assert_key_nowhere (right_key);
  assert_key_nowhere (wrong_key);
}

static void
on_stored (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  gboolean *done = data;

  g_assert_true (burrow_remote_keyring_store_finish (result, NULL));
  *done = TRUE;
}

/* The key changed on the server since it was added (here: the keyring's key replaced): the
 * chat's failed load offers to edit the server, whose dialog holds its address, name and
 * key; the right key saved, the model loads. A server's row opens the same dialog. */
static void
test_edit_key (void)
{
  g_autofree char *url = g_strndup (server->url, strlen (server->url) - 1);
  g_autofree char *id = burrow_remote_model_id (url, "demo-model");
  GtkButton *button = GTK_BUTTON (gtk_widget_get_template_child (GTK_WIDGET (app_test_chat_view (window)),
                                                                 BURROW_TYPE_CHAT_VIEW,
                                                                 "model_bar_button"));
  AdwMessageDialog *dialog;
  GtkEditable *key;
  gboolean stored = FALSE;
  g_autofree char *kept = NULL;

  burrow_remote_keyring_store_async (url, "Test server", wrong_key, NULL, on_stored, &stored);
  ITERATE_UNTIL (stored);
  burrow_remote_backend_forget (burrow_application_get_remote (app), url);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-recent", "s", id));
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_FAILED);
  g_assert_nonnull (strstr (burrow_session_get_load_error (burrow_application_get_session (app)),
                            "401"));
  g_assert_cmpstr (gtk_button_get_label (button), ==, "_Edit Server…");
  app_test_save_screenshot (GTK_WIDGET (window), "remote-key-refused-bar.png");

  g_assert_true (gtk_widget_activate (GTK_WIDGET (button)));
  ITERATE_UNTIL (top_dialog () != NULL);
  dialog = top_dialog ();
  g_assert_cmpstr (adw_message_dialog_get_heading (dialog), ==, "Edit Server");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-url"))),
                   ==, url);
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-name"))),
                   ==, "Test server");
  key = GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-key"));
  ITERATE_UNTIL (g_strcmp0 (gtk_editable_get_text (key), wrong_key) == 0);
  app_test_save_screenshot (GTK_WIDGET (dialog), "edit-server.png");
  gtk_editable_set_text (key, right_key);
  respond (dialog, "add");
  ITERATE_UNTIL (top_dialog () == NULL);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_HIDDEN);
  kept = keyring_key (url);
  g_assert_cmpstr (kept, ==, right_key);

  /* The server's row on the start page opens the same dialog. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.edit-server", "s", url));
  ITERATE_UNTIL (top_dialog () != NULL);
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (server_list_row ("Test server"))),
                   ==, "win.edit-server");
  respond (top_dialog (), "cancel");
  ITERATE_UNTIL (top_dialog () == NULL);
}

static gboolean
reply_has_text (guint i)
{
  return n_messages () > i && burrow_chat_message_get_content (message (i))[0] != '\0';
}

static void
test_chat_and_stop (void)
{
  BurrowSession *session = burrow_application_get_session (app);
  BurrowPerfMonitor *monitor = burrow_session_get_monitor (session);
  g_autofree char *id = NULL;
  g_autofree char *url = g_strndup (server->url, strlen (server->url) - 1);
  const BurrowPerfSnapshot *s;
  g_autofree char *at_stop = NULL;
  BurrowReplyStats stats;
  guint64 lookups = 0;

  /* Click the model in the list: a new chat with it, connected. */
  g_assert_true (gtk_widget_activate (GTK_WIDGET (server_list_row ("demo-model"))));
  id = burrow_remote_model_id (url, "demo-model");
  ITERATE_UNTIL (window->chat != NULL && g_strcmp0 (burrow_chat_get_model_dir (window->chat), id) == 0);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_HIDDEN);
  g_assert_cmpstr (burrow_session_get_model_dir (session), ==, id);

  burrow_chat_view_set_draft (app_test_chat_view (window), "Hello");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL));
  g_assert_true (burrow_window_get_generating (window));
  ITERATE_UNTIL (reply_has_text (1));

  /* The server's profile on the dashboard: the demo model's 4 x 16 expert grid, with the
   * hits of its three MoE layers, and per-token numbers from the stream. */
  ITERATE_UNTIL ((s = burrow_perf_monitor_get_snapshot (monitor)) != NULL && s->n_layers == 4 &&
                 s->turn.running && burrow_perf_monitor_get_n_tokens (monitor) >= 3);
  g_assert_cmpint (s->n_experts, ==, 16);
  g_assert_cmpint (s->layer_experts[0], ==, 0);
  g_assert_cmpint (s->layer_experts[1], ==, 16);
  for (int l = 0; l < s->n_layers; l++)
    lookups += s->layer_hits[l] + s->layer_misses[l];
  g_assert_cmpuint (lookups, >, 0);
  g_assert_cmpuint (s->cache.hits + s->cache.misses, >, 0);
  g_assert_true (s->turn.running);
  {
    const BurrowTokenTimes *t = burrow_perf_monitor_get_token (monitor, burrow_perf_monitor_get_n_tokens (monitor) - 1);
    double inside = 0;

    for (int p = 0; p < BURROW_N_PHASES; p++)
      inside += t->phase_seconds[p];
    g_assert_cmpfloat (inside, >, 0);
    g_assert_cmpfloat (t->values[BURROW_PERF_DECODE_RATE], >, 0);
  }
  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL);
  iterate_for (0.8);
  app_test_save_screenshot (GTK_WIDGET (window), "remote-performance.png");
  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL);

  /* Stop: the reply so far stays, as a stopped reply. */
  g_assert_true (burrow_window_get_generating (window));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.stop", NULL));
  g_assert_false (burrow_window_get_generating (window));
  at_stop = g_strdup (burrow_chat_message_get_content (message (1)));
  g_assert_cmpuint (strlen (at_stop), >, 0);
  iterate_for (0.5);
  g_assert_cmpstr (burrow_chat_message_get_content (message (1)), ==, at_stop);
  burrow_chat_message_get_stats (message (1), &stats);
  g_assert_cmpint (stats.finish, ==, BURROW_FINISH_CANCELLED);
  g_assert_cmpint (stats.n_tokens, >=, 3);
  g_assert_cmpint (burrow_chat_message_get_id (message (1)), >, 0);
}

static void
on_error (BurrowSession *session,
          BurrowChat    *chat,
          GError        *error,
          const char    *fallback,
          GError       **out)
{
  g_clear_error (out);
  *out = g_error_copy (error);
}

static void
test_server_killed (void)
{
  BurrowSession *session = burrow_application_get_session (app);
  g_autoptr(GError) error = NULL;
  gulong handler = g_signal_connect (session, "error", G_CALLBACK (on_error), &error);
  BurrowReplyStats stats;
  g_autofree char *partial = NULL;

  burrow_chat_view_set_draft (app_test_chat_view (window), "Tell me more.");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL));
  ITERATE_UNTIL (reply_has_text (3));
  remote_server_signal (server, SIGKILL);
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  g_signal_handler_disconnect (session, handler);

  g_assert_error (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CUT);
  partial = g_strdup (burrow_chat_message_get_content (message (3)));
  g_assert_cmpuint (strlen (partial), >, 0);
  burrow_chat_message_get_stats (message (3), &stats);
  g_assert_cmpint (stats.finish, ==, BURROW_FINISH_ERROR);
  /* Kept in the store with the chat. */
  g_assert_cmpint (burrow_chat_message_get_id (message (3)), >, 0);
}

/* A key for plain http to another computer: asked first; cancelled, nothing is added and
 * nothing is sent (the address is never contacted). */
static void
test_plain_http_asks (void)
{
  AdwMessageDialog *dialog;
  g_autoptr(GSettings) settings = g_settings_new (BURROW_APP_ID);
  g_autoptr(GVariant) before = g_settings_get_value (settings, "remote-servers");
  g_autoptr(GVariant) after = NULL;

  /* From the main menu this time: the window shows the chat. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.add-server", NULL));
  ITERATE_UNTIL (top_dialog () != NULL);
  dialog = top_dialog ();
  gtk_editable_set_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-url")),
                         "http://192.0.2.7:8000/v1");
  gtk_editable_set_text (GTK_EDITABLE (test_find_named (GTK_WIDGET (dialog), "server-key")), "k");
  respond (dialog, "add");
  ITERATE_UNTIL (top_dialog () != NULL);
  dialog = top_dialog ();
  g_assert_cmpstr (adw_message_dialog_get_heading (dialog), ==, "Send the Key Unencrypted?");
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "http://192.0.2.7:8000"));
  respond (dialog, "cancel");
  ITERATE_UNTIL (top_dialog () == NULL);
  after = g_settings_get_value (settings, "remote-servers");
  g_assert_true (g_variant_equal (before, after));
}

/* A server without Burrow's profile (as vLLM or llama.cpp): the dashboard shows the speed
 * of the reply and says the rest is not available. */
static void
test_other_server (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=20", "BURROW_TEST_NO_PROFILE=1", NULL };
  RemoteServer *other = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autofree char *url = g_strndup (other->url, strlen (other->url) - 1);
  g_autofree char *id = burrow_remote_model_id (url, "demo-model");
  BurrowDashboard *panel = BURROW_DASHBOARD (app_test_child (window, "panel"));
  guint n;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-recent", "s", id));
  ITERATE_UNTIL (window->chat != NULL && g_strcmp0 (burrow_chat_get_model_dir (window->chat), id) == 0);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_HIDDEN);
  g_assert_nonnull (strstr (burrow_dashboard_get_value (panel, "source-note"), "not available"));

  n = n_messages ();
  burrow_chat_view_set_draft (app_test_chat_view (window), "Hello");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL));
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  g_assert_true (reply_has_text (n + 1));
  iterate_for (0.5);
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "decode"), !=, "—");
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "ttft"), !=, "—");
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "hit-rate"), ==, "—");
  remote_server_stop (other);
}

/* A Burrow server at full speed: its tokens reach this computer in bursts. The dashboard
 * shows the server's own speed and the first-token time the reply's line shows, says they
 * are the server's, and hides what timing pieces here would make up (speed per token,
 * time per token by phase, disk reads per second) and the expert tiers it has no sizes
 * for. */
static void
test_server_figures (void)
{
  RemoteServer *fast = remote_server_start (BURROW_CLI_TESTING, NULL, NULL);
  g_autofree char *url = g_strndup (fast->url, strlen (fast->url) - 1);
  g_autofree char *id = burrow_remote_model_id (url, "demo-model");
  BurrowDashboard *page = BURROW_DASHBOARD (app_test_child (window, "performance"));
  BurrowReplyStats stats;
  g_autofree char *decode = NULL;
  g_autofree char *ttft = NULL;
  guint n;

  add_server (fast->url, "", "Fast server");
  ITERATE_UNTIL (server_list_row ("Fast server") != NULL &&
                 g_strcmp0 (adw_action_row_get_subtitle (server_list_row ("Fast server")), url) == 0);
  /* New Chat's menu, with a chat open. */
  ITERATE_UNTIL (model_menu_has ("Fast server", "demo-model", id));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.new-chat-with", "s", id));
  ITERATE_UNTIL (window->chat != NULL && g_strcmp0 (burrow_chat_get_model_dir (window->chat), id) == 0);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_HIDDEN);

  n = n_messages ();
  burrow_chat_view_set_draft (app_test_chat_view (window), "Once upon a time");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL));
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  g_assert_true (reply_has_text (n + 1));
  burrow_chat_message_get_stats (message (n + 1), &stats);
  g_assert_cmpfloat (stats.tokens_per_second, >, 0);
  g_assert_cmpfloat (stats.ttft_seconds, >, 0);
  iterate_for (0.5);

  decode = g_strdup_printf ("%.1f", stats.tokens_per_second);
  ttft = burrow_format_seconds (stats.ttft_seconds);
  g_assert_cmpstr (burrow_dashboard_get_value (page, "decode"), ==, decode);
  g_assert_cmpstr (burrow_dashboard_get_value (page, "ttft"), ==, ttft);
  g_assert_nonnull (strstr (burrow_dashboard_get_value (page, "source-note"),
                            "reported by the server at 127.0.0.1"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL));
  iterate_for (0.5);
  {
    const char *hidden[] = { "speed_section", "token_section", "read_section", "read_rate_tile",
                             "tier_legend" };
    const char *shown[] = { "hit_rate_chart", "layer_chart", "expert_map" };

    for (guint i = 0; i < G_N_ELEMENTS (hidden); i++)
      g_assert_false (gtk_widget_is_visible (GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (page), BURROW_TYPE_DASHBOARD, hidden[i]))));
    for (guint i = 0; i < G_N_ELEMENTS (shown); i++)
      g_assert_true (gtk_widget_is_visible (GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (page), BURROW_TYPE_DASHBOARD, shown[i]))));
  }
  app_test_save_screenshot (GTK_WIDGET (window), "remote-figures.png");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL));
  remote_server_stop (fast);
}

/* The keyring locked (its unlock prompt dismissed, as a session without one does): the
 * failed load says the keyring is locked and offers to unlock it, instead of asking the
 * server without the key and reporting its 401. Last: the keyring stays locked. */
static void
test_locked_keyring (void)
{
  const char *const args[] = { "--api-key-file", key_file, NULL };
  RemoteServer *keyed = remote_server_start (BURROW_CLI_TESTING, args, NULL);
  g_autofree char *url = g_strndup (keyed->url, strlen (keyed->url) - 1);
  g_autofree char *id = burrow_remote_model_id (url, "demo-model");
  GtkButton *button = GTK_BUTTON (gtk_widget_get_template_child (GTK_WIDGET (app_test_chat_view (window)),
                                                                 BURROW_TYPE_CHAT_VIEW,
                                                                 "model_bar_button"));
  g_autoptr(GError) error = NULL;
  g_autoptr(SecretService) service = NULL;
  g_autoptr(SecretCollection) collection = NULL;
  GList *locked = NULL;
  const char *said;

  add_server (keyed->url, right_key, "Keyed server");
  ITERATE_UNTIL (model_menu_has ("Keyed server", "demo-model", id));

  service = secret_service_get_sync (SECRET_SERVICE_LOAD_COLLECTIONS, NULL, &error);
  g_assert_no_error (error);
  collection = secret_collection_for_alias_sync (service, SECRET_COLLECTION_DEFAULT,
                                                 SECRET_COLLECTION_NONE, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (collection);
  locked = g_list_append (NULL, collection);
  secret_service_lock_sync (service, locked, NULL, NULL, &error);
  g_list_free (locked);
  g_assert_no_error (error);
  burrow_remote_backend_forget (burrow_application_get_remote (app), url);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.new-chat-with", "s", id));
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (app_test_chat_view (window)) == BURROW_MODEL_BAR_FAILED);
  said = burrow_session_get_load_error (burrow_application_get_session (app));
  g_assert_nonnull (strstr (said, "keyring"));
  g_assert_nonnull (strstr (said, "locked"));
  g_assert_null (strstr (said, "401"));
  g_assert_cmpstr (gtk_button_get_label (button), ==, "_Unlock Keyring…");
  app_test_save_screenshot (GTK_WIDGET (window), "keyring-locked.png");
  remote_server_stop (keyed);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-remote-window");
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=60", "BURROW_TEST_IGNORE_EOS=1", NULL };
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;
  if (g_getenv ("BURROW_KEYRING_BUS") == NULL)
    g_error ("run this test through tests/with-keyring.sh");

  key_file = g_build_filename (user_dirs, "key", NULL);
  g_assert_true (g_file_set_contents (key_file, right_key, -1, NULL));
  {
    const char *const args[] = { "--api-key-file", key_file, "--served-model-name", "alias", NULL };

    server = remote_server_start (BURROW_CLI_TESTING, args, env);
  }

  app = app_test_application_new ();
  window = app_test_window_new (app, 1200, 760);

  /* In order, each starting where the last one left the window. */
  g_test_add_func ("/remote-window/wrong-key", test_wrong_key);
  g_test_add_func ("/remote-window/right-key", test_right_key);
  g_test_add_func ("/remote-window/edit-key", test_edit_key);
  g_test_add_func ("/remote-window/chat-and-stop", test_chat_and_stop);
  g_test_add_func ("/remote-window/server-killed", test_server_killed);
  g_test_add_func ("/remote-window/plain-http-asks", test_plain_http_asks);
  g_test_add_func ("/remote-window/other-server", test_other_server);
  g_test_add_func ("/remote-window/server-figures", test_server_figures);
  g_test_add_func ("/remote-window/locked-keyring", test_locked_keyring);

  ret = g_test_run ();
  gtk_window_destroy (GTK_WINDOW (window));
  g_clear_object (&app);
  remote_server_stop (server);
  bw_test_remove_tree (user_dirs);
  g_free (key_file);
  return ret;
}
