/* The real window's chats as listed in the sidebar, driven with real clicks and key presses
 * (XTest): each chat keeps its own draft (typed in one, never sent in another, also after
 * the first is deleted); a chat's name is shown as written in the toasts about it (a
 * "Q&A" or a "<b>" is not markup); and a chat with a server's model is marked as such in
 * the list and says in its greeting where the text goes. The dashboards and the memory
 * banner follow the open chat's model. The menu beside New Chat starts a chat with any
 * model listed there. */
#include "burrow-config.h"

#include <X11/keysym.h>

#include <string.h>

#include "burrow-chat-store.h"
#include "burrow-chat-view.h"
#include "burrow-dashboard.h"
#include "burrow-demo.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "screenshot.h"
#include "user-dirs.h"
#include "app-window.h"
#include "iterate.h"
#include "widget-find.h"
#include "x-input.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

static BurrowApplication *app;
static BurrowWindow *window;

static BurrowChatStore *
store (void)
{
  return burrow_application_get_chat_store (app);
}

static guint
n_messages (void)
{
  return g_list_model_get_n_items (burrow_chat_view_get_messages (app_test_chat_view (window)));
}

static char *
draft (void)
{
  return burrow_chat_view_dup_draft (app_test_chat_view (window));
}

static BurrowChat *
new_chat (const char *model_dir,
          const char *title)
{
  BurrowSampling sampling = { .temperature = 0, .top_p = 1, .top_k = 0 };
  g_autoptr(GError) error = NULL;
  BurrowChat *chat = burrow_chat_store_create_chat (store (), model_dir, "", &sampling, &error);

  g_assert_no_error (error);
  burrow_chat_set_title (chat, title);
  g_assert_true (burrow_chat_store_save_chat (store (), chat, &error));
  g_assert_no_error (error);
  return chat;
}

/* The sidebar's row for @chat. */
static GtkWidget *
chat_row (BurrowChat *chat)
{
  GtkWidget *list = GTK_WIDGET (app_test_child (window, "chat_list"));

  for (GtkWidget *c = gtk_widget_get_first_child (list); c != NULL; c = gtk_widget_get_next_sibling (c))
    if (g_object_get_data (G_OBJECT (c), "chat") == chat)
      return c;
  g_assert_not_reached ();
}

/* A click on @chat's row in the sidebar; returns once it is the open chat. */
static void
click_chat (BurrowChat *chat)
{
  x_input_click (chat_row (chat));
  ITERATE_UNTIL (window->chat == chat);
}

static void
type (const char *text)
{
  x_input_take_focus (GTK_WINDOW (window));
  burrow_chat_view_focus_composer (app_test_chat_view (window));
  app_test_settle (GTK_WIDGET (window));
  for (const char *c = text; *c != '\0'; c++)
    x_input_press (GTK_WIDGET (window), (guint) *c, FALSE);
}

static void
assert_draft (const char *expected)
{
  g_autofree char *text = draft ();

  g_assert_cmpstr (text, ==, expected);
}

static void
test_drafts (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  BurrowChat *b = new_chat (demo, "Bee"), *a = new_chat (demo, "Ant");
  gint64 a_id = burrow_chat_get_id (a);

  /* A draft typed in one chat, then that chat deleted: the chat that opens instead has an
   * empty composer, and Enter there sends nothing. */
  click_chat (a);
  ITERATE_UNTIL (app_test_model_ready (window));
  type ("hi");
  assert_draft ("hi");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.delete-current", NULL));
  ITERATE_UNTIL (window->chat == b);
  ITERATE_UNTIL (app_test_model_ready (window));
  assert_draft ("");
  x_input_press (GTK_WIDGET (window), XK_Return, FALSE);
  app_test_settle (GTK_WIDGET (window));
  g_assert_false (burrow_window_get_generating (window));
  g_assert_cmpuint (n_messages (), ==, 0);

  /* Undo brings the chat back with its draft. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.undo-delete", "x", a_id));
  ITERATE_UNTIL (window->chat == a);
  assert_draft ("hi");

  /* Switching by clicks: each chat shows its own. */
  click_chat (b);
  assert_draft ("");
  type ("yo");
  click_chat (a);
  assert_draft ("hi");
  click_chat (b);
  assert_draft ("yo");
}

static void
test_toast_names (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  BurrowChat *chat = new_chat (demo, "Q&A <b>about</b>");

  click_chat (chat);
  /* A Gtk-WARNING about markup fails the test (warnings are fatal here). */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.delete-current", NULL));
  app_test_settle (GTK_WIDGET (window));
  g_assert_true (app_test_toast_shows (window, "“Q&A <b>about</b>” deleted"));
  app_test_save_screenshot (GTK_WIDGET (window), "chat-deleted-toast.png");
}

static const char *
greeting (void)
{
  GtkWidget *page = GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (app_test_chat_view (window)),
                                                               BURROW_TYPE_CHAT_VIEW, "empty_status"));

  return adw_status_page_get_description (ADW_STATUS_PAGE (page));
}

static void
test_remote_marked (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  BurrowChat *local = new_chat (demo, "Here");
  BurrowChat *remote = new_chat ("http://192.0.2.9:8000/v1#big-model", "There");
  GtkWidget *mark;

  app_test_settle (GTK_WIDGET (window));
  g_assert_null (test_find_named (chat_row (local), "remote-mark"));
  mark = test_find_named (chat_row (remote), "remote-mark");
  g_assert_nonnull (mark);
  g_assert_true (gtk_widget_get_mapped (mark));
  g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (mark), "192.0.2.9"));

  click_chat (local);
  g_assert_nonnull (strstr (greeting (), "stays on this computer"));
  /* Only selected: a click would try to reach the server, which is not there. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.select-chat", "x",
                                             burrow_chat_get_id (remote)));
  ITERATE_UNTIL (window->chat == remote);
  g_assert_null (strstr (greeting (), "stays on this computer"));
  g_assert_nonnull (strstr (greeting (), "sent to the server at 192.0.2.9"));
  g_assert_nonnull (strstr (greeting (), "big-model"));
  app_test_save_screenshot (GTK_WIDGET (window), "remote-chat-greeting.png");
}

static void
count_state (guint *n)
{
  (*n)++;
}

/* The dashboards and the memory banner speak of the open chat's model: with another
 * model's chat open (not loaded) they show nothing of the loaded one; the banner, once its
 * setting changes, says the change waits for the model to load again, and its button does
 * that. */
static void
test_figures_follow_chat (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *other_dir = g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
  BurrowSettings *settings = burrow_application_get_settings (app);
  BurrowDashboard *panel = BURROW_DASHBOARD (app_test_child (window, "panel"));
  GtkRevealer *banner = GTK_REVEALER (app_test_child (window, "memory_banner"));
  GtkButton *button = GTK_BUTTON (app_test_child (window, "memory_banner_button"));
  BurrowModelInfo info;
  g_autoptr(GError) error = NULL;
  BurrowChat *here, *other;
  guint n_states = 0;

  g_assert_true (burrow_inspect (demo, &info, &error));
  g_assert_no_error (error);
  g_object_set (settings, "ram-budget", info.read_per_token, NULL);
  burrow_model_info_clear (&info);
  here = new_chat (demo, "Demo");
  other = new_chat (other_dir, "Other");

  /* The demo loads again with the small budget: banner and figures. */
  click_chat (here);
  burrow_session_load_model (burrow_application_get_session (app), demo);
  ITERATE_UNTIL (app_test_model_ready (window) && gtk_revealer_get_reveal_child (banner));
  ITERATE_UNTIL (g_strcmp0 (burrow_dashboard_get_value (panel, "bytes-read"), "—") != 0);

  /* Another model's chat, opened as deleting one opens the next (no load). */
  _burrow_window_select_chat (window, other);
  g_assert_cmpint (burrow_chat_view_get_model_bar (app_test_chat_view (window)), ==, BURROW_MODEL_BAR_UNLOADED);
  g_assert_false (gtk_revealer_get_reveal_child (banner));
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "bytes-read"), ==, "—");
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "hit-rate"), ==, "—");

  /* Back: the demo's again. */
  click_chat (here);
  g_assert_true (gtk_revealer_get_reveal_child (banner));
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "bytes-read"), !=, "—");
  g_assert_cmpstr (gtk_button_get_label (button), ==, "Memory Settings");

  /* The setting back to automatic: the banner says it waits for a load, and loads. */
  g_object_set (settings, "ram-budget", (guint64) 0, NULL);
  app_test_settle (GTK_WIDGET (window));
  g_assert_true (gtk_revealer_get_reveal_child (banner));
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (app_test_child (window, "memory_banner_label"))),
                            "takes effect when the model loads again"));
  g_assert_cmpstr (gtk_button_get_label (button), ==, "Load Again");
  app_test_save_screenshot (GTK_WIDGET (window), "memory-banner-changed.png");
  g_signal_connect_swapped (burrow_application_get_session (app), "notify::model-state",
                            G_CALLBACK (count_state), &n_states);
  x_input_click (GTK_WIDGET (button));
  /* Loading, then loaded: with the automatic budget, no banner. */
  ITERATE_UNTIL (n_states >= 2 && app_test_model_ready (window));
  g_signal_handlers_disconnect_by_data (burrow_application_get_session (app), &n_states);
  app_test_settle (GTK_WIDGET (window));
  g_assert_false (gtk_revealer_get_reveal_child (banner));
}

/* The menu beside New Chat lists the models a chat can start with; a click on one starts
 * a chat with it, from a chat with another model. */
static void
test_model_menu (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *other_dir = g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
  AdwSplitButton *split = ADW_SPLIT_BUTTON (app_test_child (window, "new_chat_button"));
  guint n_chats = g_list_model_get_n_items (G_LIST_MODEL (store ()));
  GtkWidget *popover, *item = NULL;
  BurrowChat *other = new_chat (other_dir, "Elsewhere");

  _burrow_window_select_chat (window, other);
  adw_split_button_popup (split);
  popover = GTK_WIDGET (adw_split_button_get_popover (split));
  g_assert_nonnull (popover);
  ITERATE_UNTIL (gtk_widget_get_mapped (popover) &&
                 (item = test_find_label (popover, "demo-model", TRUE)) != NULL);
  g_assert_nonnull (test_find_label (popover, "On This Computer", TRUE));
  app_test_settle (popover);
  if (g_getenv ("BURROW_SCREENSHOT_DIR") != NULL)
    {
      g_autofree char *path = g_build_filename (g_getenv ("BURROW_SCREENSHOT_DIR"),
                                                "new-chat-menu.png", NULL);
      const char *argv[] = { "import", "-window", "root", path, NULL };

      g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
                    NULL, NULL);
    }
  x_input_click (item);
  ITERATE_UNTIL (g_strcmp0 (burrow_chat_get_model_dir (window->chat), demo) == 0);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, n_chats + 2);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-chat-list");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;
  x_input_init (app_test_settle);

  app = app_test_application_new ();
  window = app_test_window_new (app, 1200, 760);

  g_test_add_func ("/chat-list/drafts", test_drafts);
  g_test_add_func ("/chat-list/toast-names", test_toast_names);
  g_test_add_func ("/chat-list/remote-marked", test_remote_marked);
  g_test_add_func ("/chat-list/figures-follow-chat", test_figures_follow_chat);
  g_test_add_func ("/chat-list/model-menu", test_model_menu);

  ret = app_test_run_in_window (&app, window);
  bw_test_remove_tree (user_dirs);
  return ret;
}
