/* The real window on the demo model, driven by real key presses and clicks (XTest) where
 * a user would use them: Ctrl+Delete from the composer deletes the chat; a chat cannot be
 * renamed to nothing; editing the first message renames a chat named after it; a model
 * that fails to load leaves no empty chat behind; the sidebar highlights a chat only
 * while it is the page shown. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <X11/keysym.h>

#include "burrow-chat-settings-window.h"
#include "burrow-chat-view.h"
#include "burrow-demo.h"
#include "burrow-preferences-window.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "user-dirs.h"
#include "x-input.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

#include "app-window.h"
#include "iterate.h"
#include "screenshot.h"
#include "widget-find.h"

static BurrowApplication *app;
static BurrowWindow *window;

static BurrowChatStore *
store (void)
{
  return burrow_application_get_chat_store (app);
}

static guint
n_chats (void)
{
  return g_list_model_get_n_items (G_LIST_MODEL (store ()));
}

static void
settle (GtkWidget *widget)
{
  app_test_settle_for (widget, 150);
}

/* A new chat with the demo model, loaded, the composer focused. */
static BurrowChat *
demo_chat (void)
{
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-demo", NULL));
  ITERATE_UNTIL (app_test_model_ready (window) && g_strcmp0 (app_test_visible_page (window), "chat") == 0);
  x_input_take_focus (GTK_WINDOW (window));
  burrow_chat_view_focus_composer (app_test_chat_view (window));
  settle (GTK_WIDGET (window));
  g_assert_true (gtk_widget_has_focus (GTK_WIDGET (gtk_widget_get_template_child (
    GTK_WIDGET (app_test_chat_view (window)), BURROW_TYPE_CHAT_VIEW, "composer"))));
  return window->chat;
}

static void
type_text (const char *text)
{
  for (const char *c = text; *c != '\0'; c++)
    x_input_press (GTK_WIDGET (window), *c == ' ' ? XK_space : (guint) *c, FALSE);
}

/* Selects all of the focused field's text and types @text over it. */
static void
retype (GtkWidget  *widget,
        const char *text)
{
  x_input_press_with (widget, XK_a, GDK_CONTROL_MASK);
  x_input_press (widget, XK_BackSpace, FALSE);
  for (const char *c = text; *c != '\0'; c++)
    x_input_press (widget, *c == ' ' ? XK_space : (guint) *c, g_ascii_isupper (*c));
}

static void
test_ctrl_delete_in_composer (void)
{
  BurrowChat *chat = demo_chat ();
  guint before = n_chats ();
  g_autofree char *draft = NULL;

  g_assert_nonnull (chat);
  /* In a draft, Ctrl+Delete deletes the word after the cursor, as in any text field. */
  type_text ("hello there");
  for (int i = 0; i < 5; i++)
    x_input_press (GTK_WIDGET (window), XK_Left, FALSE);
  x_input_press_with (GTK_WIDGET (window), XK_Delete, GDK_CONTROL_MASK);
  draft = burrow_chat_view_dup_draft (app_test_chat_view (window));
  g_assert_cmpstr (draft, ==, "hello ");
  g_assert_cmpuint (n_chats (), ==, before);

  /* At the draft's end too the draft is what Ctrl+Delete edits: the chat stays. */
  x_input_press (GTK_WIDGET (window), XK_End, FALSE);
  x_input_press_with (GTK_WIDGET (window), XK_Delete, GDK_CONTROL_MASK);
  g_assert_cmpuint (n_chats (), ==, before);
  g_assert_true (window->chat == chat);

  /* An empty composer: the chat goes, with Undo offered. */
  retype (GTK_WIDGET (window), "");
  g_clear_pointer (&draft, g_free);
  draft = burrow_chat_view_dup_draft (app_test_chat_view (window));
  g_assert_cmpstr (draft, ==, "");
  x_input_press_with (GTK_WIDGET (window), XK_Delete, GDK_CONTROL_MASK);
  g_assert_cmpuint (n_chats (), ==, before - 1);
  g_assert_true (window->chat != chat);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.undo-delete", "x",
                                             burrow_chat_get_id (chat)));
  g_assert_cmpuint (n_chats (), ==, before);
  burrow_chat_view_set_draft (app_test_chat_view (window), "");
}

static GtkWidget *
window_widget (const char *name)
{
  return GTK_WIDGET (app_test_child (window, name));
}

static void
test_rename_to_nothing (void)
{
  BurrowChat *chat = demo_chat ();
  GtkWindow *dialog;

  burrow_chat_set_title (chat, "Kept");
  x_input_press (GTK_WIDGET (window), XK_F2, FALSE);
  ITERATE_UNTIL ((dialog = test_find_toplevel (ADW_TYPE_MESSAGE_DIALOG)) != NULL);
  x_input_take_focus (dialog);
  settle (GTK_WIDGET (dialog));

  /* Spaces only: Rename cannot be chosen, Enter does nothing. */
  retype (GTK_WIDGET (dialog), "   ");
  g_assert_false (adw_message_dialog_get_response_enabled (ADW_MESSAGE_DIALOG (dialog), "rename"));
  x_input_press (GTK_WIDGET (dialog), XK_Return, FALSE);
  g_assert_true (test_find_toplevel (ADW_TYPE_MESSAGE_DIALOG) == dialog);
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Kept");

  /* A name: Enter renames, without the spaces around it. */
  retype (GTK_WIDGET (dialog), " Plans ");
  g_assert_true (adw_message_dialog_get_response_enabled (ADW_MESSAGE_DIALOG (dialog), "rename"));
  x_input_press (GTK_WIDGET (dialog), XK_Return, FALSE);
  ITERATE_UNTIL (test_find_toplevel (ADW_TYPE_MESSAGE_DIALOG) == NULL);
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Plans");
  x_input_take_focus (GTK_WINDOW (window));
}

/* Types @text into the composer and presses Enter; returns once the reply is written. */
static void
send_typed (const char *text)
{
  GListModel *messages = burrow_chat_view_get_messages (app_test_chat_view (window));
  g_autoptr(BurrowChatMessage) reply = NULL;

  burrow_chat_view_focus_composer (app_test_chat_view (window));
  retype (GTK_WIDGET (window), text);
  x_input_press (GTK_WIDGET (window), XK_Return, FALSE);
  ITERATE_UNTIL (g_list_model_get_n_items (messages) >= 2 && !burrow_window_get_generating (window));
  reply = g_list_model_get_item (messages, g_list_model_get_n_items (messages) - 1);
  g_assert_cmpint (burrow_chat_message_get_role (reply), ==, BURROW_ROLE_ASSISTANT);
}

static void
test_edit_first_message_title (void)
{
  BurrowChat *chat;

  chat = demo_chat ();
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "");
  send_typed ("Where is the fox");
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Where is the fox");

  /* The first message edited: the title named after it follows. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.edit-message", "u", 0));
  send_typed ("Where is the owl");
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Where is the owl");

  /* A name the user gave stays. */
  burrow_chat_set_title (chat, "Birds");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.edit-message", "u", 0));
  send_typed ("Where is the hen");
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Birds");
}

/* The row the sidebar highlights, or NULL. */
static BurrowChat *
highlighted (void)
{
  GtkListBoxRow *row = gtk_list_box_get_selected_row (GTK_LIST_BOX (app_test_child (window, "chat_list")));

  return row != NULL ? g_object_get_data (G_OBJECT (row), "chat") : NULL;
}

static void
test_sidebar_follows_page (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  BurrowChat *chat = demo_chat ();

  g_assert_true (highlighted () == chat);
  /* A model folder's page: no chat is shown, none highlighted. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-recent", "s", demo));
  ITERATE_UNTIL (g_strcmp0 (app_test_visible_page (window), "model") == 0);
  g_assert_null (highlighted ());
  /* Its row clicked: the chat again, highlighted. */
  for (GtkWidget *row = gtk_widget_get_first_child (window_widget ("chat_list")); row != NULL;
       row = gtk_widget_get_next_sibling (row))
    if (g_object_get_data (G_OBJECT (row), "chat") == chat)
      x_input_click (row);
  ITERATE_UNTIL (g_strcmp0 (app_test_visible_page (window), "chat") == 0);
  g_assert_true (window->chat == chat);
  g_assert_true (highlighted () == chat);
}

/* Copies every file of @from into a new folder. */
static char *
copy_folder (const char *from)
{
  g_autofree char *to = bw_test_tmp_dir ("burrow-broken-model-XXXXXX");
  g_autoptr(GDir) dir = g_dir_open (from, 0, NULL);
  const char *name;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *src = g_build_filename (from, name, NULL);
      g_autofree char *dst = g_build_filename (to, name, NULL);
      g_autofree char *contents = NULL;
      gsize length;

      g_assert_true (g_file_get_contents (src, &contents, &length, NULL));
      g_assert_true (g_file_set_contents (dst, contents, (gssize) length, NULL));
    }
  return g_steal_pointer (&to);
}

static void
test_failed_load_leaves_no_chat (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *copy = copy_folder (demo);
  g_autofree char *shard = g_build_filename (copy, "model-00002-of-00002.safetensors", NULL);
  g_autoptr(GFile) folder = g_file_new_for_path (copy);
  guint before = n_chats ();

  burrow_window_open_model (window, folder);
  ITERATE_UNTIL (g_strcmp0 (app_test_visible_page (window), "model") == 0);
  /* Gone between looking at the folder and starting the chat. */
  g_assert_cmpint (g_unlink (shard), ==, 0);
  x_input_click (test_find_button (GTK_WIDGET (window), "win.start-chat"));
  ITERATE_UNTIL (burrow_session_get_model_state (window->session) == BURROW_MODEL_FAILED);
  ITERATE_UNTIL (g_strcmp0 (app_test_visible_page (window), "error") == 0);
  g_assert_cmpuint (n_chats (), ==, before);
  g_assert_null (window->chat);
  g_assert_null (highlighted ());
  /* The page says why: the missing shard. */
  g_assert_cmpstr (adw_status_page_get_title (ADW_STATUS_PAGE (app_test_child (window, "error_page"))), ==,
                   "Could Not Load the Model");
  g_assert_cmpstr (adw_status_page_get_description (ADW_STATUS_PAGE (app_test_child (window, "error_page"))), !=, "");
  g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (app_test_child (window, "error_details"))),
                            "model-00002-of-00002.safetensors"));
}

static void
test_memory_in_gib (void)
{
  BurrowSettings *settings = burrow_application_get_settings (app);
  GtkWindow *prefs;
  GtkWidget *spin;
  guint64 budget;

  g_object_set (settings, "ram-budget", (guint64) 0, NULL);
  g_action_group_activate_action (G_ACTION_GROUP (app), "preferences", NULL);
  ITERATE_UNTIL ((prefs = test_find_toplevel (BURROW_TYPE_PREFERENCES_WINDOW)) != NULL);
  spin = GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (prefs), BURROW_TYPE_PREFERENCES_WINDOW,
                                                    "ram_budget_spin"));
  settle (GTK_WIDGET (prefs));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (spin)), ==, "Automatic");

  /* A tenth of a GiB typed: that many bytes, and it says GiB. */
  x_input_take_focus (prefs);
  gtk_widget_grab_focus (spin);
  retype (spin, "0.1");
  x_input_press (spin, XK_Tab, FALSE);
  g_object_get (settings, "ram-budget", &budget, NULL);
  g_assert_cmpuint (budget, ==, (guint64) (0.1 * (1 << 30)));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (spin)), ==, "0.1\302\240GiB");

  /* Back to 0: Automatic again. */
  gtk_widget_grab_focus (spin);
  retype (spin, "0");
  x_input_press (spin, XK_Tab, FALSE);
  g_object_get (settings, "ram-budget", &budget, NULL);
  g_assert_cmpuint (budget, ==, 0);
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (spin)), ==, "Automatic");
  gtk_window_destroy (prefs);
  x_input_take_focus (GTK_WINDOW (window));
}

static GtkSpinButton *
settings_spin (GtkWindow  *dialog,
               const char *name)
{
  return GTK_SPIN_BUTTON (gtk_widget_get_template_child (GTK_WIDGET (dialog),
                                                         BURROW_TYPE_CHAT_SETTINGS_WINDOW, name));
}

/* Focuses @spin in @dialog, types @text over its value and leaves it with Tab. */
static void
type_into (GtkWindow     *dialog,
           GtkSpinButton *spin,
           const char    *text)
{
  gtk_widget_grab_focus (GTK_WIDGET (spin));
  retype (GTK_WIDGET (spin), text);
  x_input_press (GTK_WIDGET (dialog), XK_Tab, FALSE);
}

/* The last message: the reply. */
static BurrowChatMessage *
last_reply (void)
{
  GListModel *messages = burrow_chat_view_get_messages (app_test_chat_view (window));
  g_autoptr(BurrowChatMessage) reply = g_list_model_get_item (messages, g_list_model_get_n_items (messages) - 1);

  g_assert_cmpint (burrow_chat_message_get_role (reply), ==, BURROW_ROLE_ASSISTANT);
  return reply;   /* the list keeps it */
}

/* Reply length, min-p, repetition penalty and seed, set in Chat Settings by typing: kept
 * with the chat, and the engine gets them (the reply stops at its length; a fixed seed
 * at temperature 1 gives the same reply twice). */
static void
test_chat_settings_sampling (void)
{
  BurrowChat *chat = demo_chat ();
  g_autoptr(BurrowChatStore) second = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *first = NULL;
  BurrowReplyStats stats;
  BurrowSampling s;
  GtkWindow *dialog;

  x_input_press_with (GTK_WIDGET (window), XK_i, GDK_CONTROL_MASK);
  ITERATE_UNTIL ((dialog = test_find_toplevel (BURROW_TYPE_CHAT_SETTINGS_WINDOW)) != NULL);
  x_input_take_focus (dialog);
  settle (GTK_WIDGET (dialog));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (settings_spin (dialog, "max_tokens_spin"))), ==,
                   "Automatic");
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (settings_spin (dialog, "seed_spin"))), ==, "Random");
  g_assert_cmpfloat (gtk_spin_button_get_value (settings_spin (dialog, "repetition_penalty_spin")), ==, 1);

  type_into (dialog, settings_spin (dialog, "max_tokens_spin"), "5");
  type_into (dialog, settings_spin (dialog, "seed_spin"), "7");
  type_into (dialog, settings_spin (dialog, "min_p_spin"), "0.05");
  type_into (dialog, settings_spin (dialog, "repetition_penalty_spin"), "1.1");
  type_into (dialog, settings_spin (dialog, "temperature_spin"), "1");
  app_test_save_screenshot (gtk_widget_get_ancestor (GTK_WIDGET (settings_spin (dialog, "seed_spin")),
                                                     ADW_TYPE_PREFERENCES_GROUP),
                            "chat-settings-sampling.png");
  x_input_press (GTK_WIDGET (dialog), XK_Escape, FALSE);
  ITERATE_UNTIL (test_find_toplevel (BURROW_TYPE_CHAT_SETTINGS_WINDOW) == NULL);
  x_input_take_focus (GTK_WINDOW (window));

  /* Kept: the chat has them, and so has the database (read by a second store). */
  burrow_chat_get_sampling (chat, &s);
  g_assert_cmpuint (s.max_tokens, ==, 5);
  g_assert_cmpint (s.seed, ==, 7);
  g_assert_cmpfloat_with_epsilon (s.min_p, 0.05, 1e-9);
  g_assert_cmpfloat_with_epsilon (s.repetition_penalty, 1.1, 1e-9);
  second = burrow_chat_store_new (burrow_chat_store_get_path (store ()), &error);
  g_assert_no_error (error);
  burrow_chat_get_sampling (burrow_chat_store_find_chat (second, burrow_chat_get_id (chat)), &s);
  g_assert_cmpuint (s.max_tokens, ==, 5);
  g_assert_cmpint (s.seed, ==, 7);
  g_assert_cmpfloat_with_epsilon (s.min_p, 0.05, 1e-9);
  g_assert_cmpfloat_with_epsilon (s.repetition_penalty, 1.1, 1e-9);
  g_clear_object (&second);

  /* Used: five tokens, cut at the length; the same five again with the same seed. */
  send_typed ("Tell me a story");
  burrow_chat_message_get_stats (last_reply (), &stats);
  g_assert_cmpint (stats.n_tokens, ==, 5);
  g_assert_cmpint (stats.finish, ==, BURROW_FINISH_LENGTH);
  first = g_strdup (burrow_chat_message_get_content (last_reply ()));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.regenerate", NULL));
  ITERATE_UNTIL (!burrow_window_get_generating (window) &&
                 !burrow_chat_message_get_streaming (last_reply ()));
  g_assert_cmpstr (burrow_chat_message_get_content (last_reply ()), ==, first);

  /* Which was the seed's doing: a new seed for each reply soon gives another. */
  burrow_chat_get_sampling (chat, &s);
  s.seed = 0;
  burrow_chat_set_sampling (chat, &s);
  for (int i = 0; i < 8 && g_strcmp0 (burrow_chat_message_get_content (last_reply ()), first) == 0; i++)
    {
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.regenerate", NULL));
      ITERATE_UNTIL (!burrow_window_get_generating (window) &&
                     !burrow_chat_message_get_streaming (last_reply ()));
    }
  g_assert_cmpstr (burrow_chat_message_get_content (last_reply ()), !=, first);
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-window-details");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;
  x_input_init (settle);

  app = app_test_application_new ();
  window = app_test_window_new (app, 1000, 700);

  g_test_add_func ("/window-details/ctrl-delete-in-composer", test_ctrl_delete_in_composer);
  g_test_add_func ("/window-details/edit-first-message-title", test_edit_first_message_title);
  g_test_add_func ("/window-details/rename-to-nothing", test_rename_to_nothing);
  g_test_add_func ("/window-details/sidebar-follows-page", test_sidebar_follows_page);
  g_test_add_func ("/window-details/failed-load-leaves-no-chat", test_failed_load_leaves_no_chat);
  g_test_add_func ("/window-details/memory-in-gib", test_memory_in_gib);
  g_test_add_func ("/window-details/chat-settings-sampling", test_chat_settings_sampling);

  ret = app_test_run_in_window (&app, window);
  bw_test_remove_tree (user_dirs);
  return ret;
}
