/* The window's chat history, driven with real key presses and clicks (XTest) as a user
 * would: searching the chats from the sidebar (Ctrl+K, Ctrl+F, typing, Enter or a click
 * opens the chat found), a reply regenerated twice whose three versions are browsed
 * with its previous and next buttons, and that chat exported from its menu to Markdown
 * and JSON and the JSON imported back from the main menu. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <X11/keysym.h>
#include <string.h>

#include "burrow-chat-export.h"
#include "burrow-chat-view.h"
#include "burrow-demo.h"
#include "burrow-message-row.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "app-window.h"
#include "iterate.h"
#include "widget-find.h"
#include "user-dirs.h"
#include "x-input.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

static BurrowApplication *app;
static BurrowWindow *window;
static char *demo;
static gint64 sourdough_id, rust_id;

static void
settle (GtkWidget *widget)
{
  app_test_settle_for (widget, 300);
}

static gpointer
window_child (const char *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (window), BURROW_TYPE_WINDOW, name);

  g_assert_nonnull (object);
  return object;
}

/* The chats the sidebar lists now (the filter's verdict), in order. */
static GPtrArray *
listed_rows (void)
{
  GPtrArray *rows = g_ptr_array_new ();

  for (GtkWidget *row = gtk_widget_get_first_child (window_child ("chat_list")); row != NULL;
       row = gtk_widget_get_next_sibling (row))
    if (GTK_IS_LIST_BOX_ROW (row) && gtk_widget_get_child_visible (row) &&
        gtk_widget_get_mapped (row))
      g_ptr_array_add (rows, row);
  return rows;
}

static gint64
row_id (GtkWidget *row)
{
  return burrow_chat_get_id (g_object_get_data (G_OBJECT (row), "chat"));
}

static void
press (guint           keysym,
       GdkModifierType mods)
{
  x_input_press_with (GTK_WIDGET (window), keysym, mods);
}

/* Waits for the search entry's delayed search to have run for what it holds. */
static void
wait_for_search (guint n_hits)
{
  ITERATE_UNTIL (window->search_hits != NULL && g_hash_table_size (window->search_hits) == n_hits);
  settle (GTK_WIDGET (window));
}

static void
test_search (void)
{
  GtkWidget *entry = window_child ("search_entry");
  GtkSearchBar *bar = window_child ("search_bar");
  g_autoptr(GPtrArray) rows = NULL;
  GtkLabel *snippet;

  x_input_take_focus (GTK_WINDOW (window));
  rows = listed_rows ();
  g_assert_cmpuint (rows->len, ==, 3);
  g_clear_pointer (&rows, g_ptr_array_unref);

  /* Ctrl+K opens the search with the entry focused; typing filters the list. */
  g_assert_false (gtk_search_bar_get_search_mode (bar));
  press (XK_k, GDK_CONTROL_MASK);
  g_assert_true (gtk_search_bar_get_search_mode (bar));
  g_assert_true (gtk_widget_is_ancestor (gtk_window_get_focus (GTK_WINDOW (window)), entry));
  x_input_type (GTK_WIDGET (window), "fridge");
  wait_for_search (1);
  rows = listed_rows ();
  g_assert_cmpuint (rows->len, ==, 1);
  g_assert_cmpint (row_id (rows->pdata[0]), ==, sourdough_id);
  snippet = g_object_get_data (G_OBJECT (rows->pdata[0]), "snippet");
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (snippet)));
  g_assert_cmpstr (gtk_label_get_text (snippet), ==, "Once a week is enough in the fridge.");
  g_assert_nonnull (strstr (gtk_label_get_label (snippet), "<b>fridge</b>"));
  g_clear_pointer (&rows, g_ptr_array_unref);

  /* Enter opens the chat found. */
  g_assert_true (window->chat == NULL || burrow_chat_get_id (window->chat) != sourdough_id);
  press (XK_Return, 0);
  ITERATE_UNTIL (window->chat != NULL && burrow_chat_get_id (window->chat) == sourdough_id);
  g_assert_cmpstr (gtk_stack_get_visible_child_name (window_child ("stack")), ==, "chat");

  /* Words nothing holds: the sidebar says so. */
  x_input_take_focus (GTK_WINDOW (window));
  press (XK_k, GDK_CONTROL_MASK);
  press (XK_a, GDK_CONTROL_MASK);
  x_input_type (GTK_WIDGET (window), "fridge zebra");
  wait_for_search (0);
  g_assert_cmpstr (gtk_stack_get_visible_child_name (window_child ("sidebar_stack")), ==,
                   "no-results");

  /* A title's word, typed over the last search; a click opens the chat. */
  press (XK_a, GDK_CONTROL_MASK);
  x_input_type (GTK_WIDGET (window), "Rust");
  wait_for_search (1);
  g_assert_cmpstr (gtk_stack_get_visible_child_name (window_child ("sidebar_stack")), ==, "chats");
  rows = listed_rows ();
  g_assert_cmpuint (rows->len, ==, 1);
  g_assert_cmpint (row_id (rows->pdata[0]), ==, rust_id);
  x_input_click (rows->pdata[0]);
  ITERATE_UNTIL (burrow_chat_get_id (window->chat) == rust_id);
  g_clear_pointer (&rows, g_ptr_array_unref);

  /* Escape in the entry ends the search: every chat is listed again, without snippets. */
  x_input_take_focus (GTK_WINDOW (window));
  press (XK_f, GDK_CONTROL_MASK);
  g_assert_true (gtk_widget_is_ancestor (gtk_window_get_focus (GTK_WINDOW (window)), entry));
  press (XK_Escape, 0);
  g_assert_false (gtk_search_bar_get_search_mode (bar));
  g_assert_null (window->search_hits);
  rows = listed_rows ();
  g_assert_cmpuint (rows->len, ==, 3);
  for (guint i = 0; i < rows->len; i++)
    g_assert_false (gtk_widget_get_visible (g_object_get_data (G_OBJECT (rows->pdata[i]), "snippet")));

  /* Ctrl+F opens it too. */
  press (XK_f, GDK_CONTROL_MASK);
  g_assert_true (gtk_search_bar_get_search_mode (bar));
  press (XK_Escape, 0);
  g_assert_false (gtk_search_bar_get_search_mode (bar));
}

static GtkWidget *
last_row (void)
{
  GtkWidget *box = GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (window->chat_view),
                                                              BURROW_TYPE_CHAT_VIEW, "message_box"));

  return gtk_widget_get_last_child (box);
}

static gpointer
row_child (const char *name)
{
  GObject *object = gtk_widget_get_template_child (last_row (), BURROW_TYPE_MESSAGE_ROW, name);

  g_assert_nonnull (object);
  return object;
}

static void
append_label_texts (GtkWidget *widget,
                    GString   *out)
{
  for (GtkWidget *w = gtk_widget_get_first_child (widget); w; w = gtk_widget_get_next_sibling (w))
    {
      if (GTK_IS_LABEL (w))
        g_string_append_printf (out, "%s\n", gtk_label_get_text (GTK_LABEL (w)));
      append_label_texts (w, out);
    }
}

/* What the last reply shows of its text. */
static char *
shown_reply (void)
{
  GString *out = g_string_new (NULL);

  settle (GTK_WIDGET (window));
  append_label_texts (row_child ("markdown"), out);
  return g_string_free (out, FALSE);
}

static const char *
shown_count (void)
{
  if (!gtk_widget_get_visible (row_child ("alternatives_box")))
    return "";
  return gtk_label_get_text (row_child ("alternatives_label"));
}

static const char *
last_content (void)
{
  guint n = g_list_model_get_n_items (window->messages);
  g_autoptr(BurrowChatMessage) m = g_list_model_get_item (window->messages, n - 1);

  return burrow_chat_message_get_content (m);
}

static const char *
saved_content (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) saved = burrow_chat_store_load_messages (window->store, window->chat, &error);
  static char *text;

  g_assert_no_error (error);
  g_free (text);
  text = g_strdup (burrow_chat_message_get_content (saved->pdata[saved->len - 1]));
  return text;
}

static guint n_finished;

static void
on_reply_finished (BurrowSession     *session,
                   BurrowChat        *chat,
                   BurrowChatMessage *reply,
                   gboolean           saved)
{
  g_assert_true (saved);
  n_finished++;
}

/* Clicks Regenerate and waits for the new reply (the demo may finish within the click). */
static void
click_regenerate (void)
{
  guint before = n_finished;

  x_input_click (row_child ("regenerate_button"));
  ITERATE_UNTIL (n_finished == before + 1 && !burrow_window_get_generating (window));
}

static void
test_browse_alternatives (void)
{
  char *shown[3] = { NULL };
  char *text[3] = { NULL };
  g_autofree char *now = NULL;
  BurrowSampling sampling = { 1.2, 1.0, 0 };

  g_signal_connect (window->session, "reply-finished", G_CALLBACK (on_reply_finished), NULL);

  /* A chat with the demo model; a first reply, then Regenerate clicked twice. */
  gtk_widget_activate_action (GTK_WIDGET (window), "win.open-demo", NULL);
  ITERATE_UNTIL (burrow_session_is_ready_for (window->session, demo));
  burrow_chat_set_sampling (window->chat, &sampling);
  burrow_chat_view_set_draft (window->chat_view, "Once upon a time there was a little fox.");
  gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL);
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  shown[0] = shown_reply ();
  text[0] = g_strdup (last_content ());
  g_assert_cmpstr (shown_count (), ==, "");

  click_regenerate ();
  shown[1] = shown_reply ();
  text[1] = g_strdup (last_content ());
  g_assert_cmpstr (shown_count (), ==, "2 of 2");
  click_regenerate ();
  shown[2] = shown_reply ();
  text[2] = g_strdup (last_content ());
  g_assert_cmpstr (shown_count (), ==, "3 of 3");
  g_assert_false (gtk_widget_get_sensitive (row_child ("next_button")));
  for (guint i = 0; i < 3; i++)
    g_test_message ("reply %u: %s", i + 1, text[i]);
  /* Sampled hot, three replies of a few dozen tokens are not all alike. */
  g_assert_true (g_strcmp0 (text[0], text[1]) != 0 || g_strcmp0 (text[1], text[2]) != 0);

  /* Previous, previous, next: each shows its reply, and the chat continues from it. */
  x_input_click (row_child ("previous_button"));
  g_assert_cmpstr (shown_count (), ==, "2 of 3");
  now = shown_reply ();
  g_assert_cmpstr (now, ==, shown[1]);
  g_assert_cmpstr (last_content (), ==, text[1]);
  g_assert_cmpstr (saved_content (), ==, text[1]);

  x_input_click (row_child ("previous_button"));
  g_assert_cmpstr (shown_count (), ==, "1 of 3");
  g_clear_pointer (&now, g_free);
  now = shown_reply ();
  g_assert_cmpstr (now, ==, shown[0]);
  g_assert_cmpstr (saved_content (), ==, text[0]);
  g_assert_false (gtk_widget_get_sensitive (row_child ("previous_button")));

  x_input_click (row_child ("next_button"));
  g_assert_cmpstr (shown_count (), ==, "2 of 3");
  g_clear_pointer (&now, g_free);
  now = shown_reply ();
  g_assert_cmpstr (now, ==, shown[1]);
  g_assert_cmpstr (saved_content (), ==, text[1]);
  g_signal_handlers_disconnect_by_func (window->session, on_reply_finished, NULL);
  for (guint i = 0; i < 3; i++)
    {
      g_free (shown[i]);
      g_free (text[i]);
    }
}

/* The first menu item under @root labelled @label (as shown, without the mnemonic's
 * underscore). */
static GtkWidget *
find_menu_item (GtkWidget  *root,
                const char *label)
{
  for (GtkWidget *w = gtk_widget_get_first_child (root); w; w = gtk_widget_get_next_sibling (w))
    {
      GtkWidget *found;

      if (g_str_equal (G_OBJECT_TYPE_NAME (w), "GtkModelButton") && gtk_widget_get_mapped (w))
        {
          g_autofree char *text = NULL;

          g_object_get (w, "text", &text, NULL);
          if (g_strcmp0 (text, label) == 0)
            return w;
        }
      if ((found = find_menu_item (w, label)) != NULL)
        return found;
    }
  return NULL;
}

/* The file chooser on screen (GtkFileChooserNative's own dialog, without a portal). */
static GtkWidget *
file_chooser (void)
{
  return GTK_WIDGET (test_find_toplevel (GTK_TYPE_FILE_CHOOSER_DIALOG));
}

/* Opens @menu_button's menu with a click and clicks its item @label. */
static void
click_menu_item (GtkWidget  *menu_button,
                 const char *label)
{
  GtkWidget *popover;
  GtkWidget *item = NULL;

  x_input_click (menu_button);
  popover = GTK_WIDGET (gtk_menu_button_get_popover (GTK_MENU_BUTTON (menu_button)));
  ITERATE_UNTIL (popover != NULL && gtk_widget_get_mapped (popover) &&
                 (item = find_menu_item (popover, label)) != NULL);
  x_input_click (item);
}

/* The header bar's main menu button. */
static GtkWidget *
main_menu_button (GtkWidget *root)
{
  for (GtkWidget *w = gtk_widget_get_first_child (root); w; w = gtk_widget_get_next_sibling (w))
    {
      GtkWidget *found;

      if (GTK_IS_MENU_BUTTON (w) && g_strcmp0 (gtk_widget_get_tooltip_text (w), "Main Menu") == 0)
        return w;
      if ((found = main_menu_button (w)) != NULL)
        return found;
    }
  return NULL;
}

/* The menu button in the sidebar row of the open chat. */
static GtkWidget *
chat_menu_button (void)
{
  g_autoptr(GPtrArray) rows = listed_rows ();

  for (guint i = 0; i < rows->len; i++)
    if (g_object_get_data (G_OBJECT (rows->pdata[i]), "chat") == (gpointer) window->chat)
      {
        GtkWidget *box = gtk_list_box_row_get_child (rows->pdata[i]);

        return gtk_widget_get_last_child (box);
      }
  g_assert_not_reached ();
}

/* Chooses @path in the chooser that is open, and accepts. */
static void
choose_file (const char *path,
             gboolean    save)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GFile) folder = g_file_get_parent (file);
  g_autofree char *name = g_path_get_basename (path);
  g_autoptr(GError) error = NULL;
  GtkWidget *dialog;

  ITERATE_UNTIL ((dialog = file_chooser ()) != NULL);
  if (save)
    {
      gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, &error);
      gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), name);
    }
  else
    gtk_file_chooser_set_file (GTK_FILE_CHOOSER (dialog), file, &error);
  g_assert_no_error (error);
  settle (dialog);
  gtk_dialog_response (GTK_DIALOG (dialog), GTK_RESPONSE_ACCEPT);
  ITERATE_UNTIL (file_chooser () == NULL);
}

static char *
wait_for_file (const char *path)
{
  g_autoptr(GError) error = NULL;
  char *text = NULL;

  ITERATE_UNTIL (g_file_test (path, G_FILE_TEST_EXISTS));
  settle (GTK_WIDGET (window));
  g_assert_true (g_file_get_contents (path, &text, NULL, &error));
  g_assert_no_error (error);
  return text;
}

static void
test_export_import (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-export-XXXXXX");
  g_autofree char *md_path = g_build_filename (dir, "fox.md", NULL);
  g_autofree char *json_path = g_build_filename (dir, "fox.json", NULL);
  g_autofree char *md = NULL, *json = NULL, *expected = NULL, *reexported = NULL;
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GPtrArray) imported = NULL;
  g_autoptr(GError) error = NULL;
  BurrowChat *original = window->chat;
  guint n_chats = g_list_model_get_n_items (G_LIST_MODEL (window->store));

  saved = burrow_chat_store_load_messages (window->store, original, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (saved->len, ==, 2);

  /* The chat's menu: Export as Markdown, then as JSON; each file holds the chat. */
  x_input_take_focus (GTK_WINDOW (window));
  click_menu_item (chat_menu_button (), "Export as Markdown…");
  choose_file (md_path, TRUE);
  md = wait_for_file (md_path);
  expected = burrow_chat_export_markdown (original, saved);
  g_assert_cmpstr (md, ==, expected);
  g_assert_nonnull (strstr (md, "## You\n\nOnce upon a time there was a little fox.\n"));
  g_clear_pointer (&expected, g_free);

  /* As a hand would, the pointer leaves the menu button before coming back to it. */
  x_input_take_focus (GTK_WINDOW (window));
  x_input_hover (window_child ("chat_view"));
  click_menu_item (chat_menu_button (), "Export as JSON…");
  choose_file (json_path, TRUE);
  json = wait_for_file (json_path);
  expected = burrow_chat_export_json (original, saved);
  g_assert_cmpstr (json, ==, expected);

  /* The main menu: Import a Chat; the JSON comes back as a new chat, opened, with the same
   * messages. */
  x_input_take_focus (GTK_WINDOW (window));
  x_input_hover (window_child ("chat_view"));
  click_menu_item (main_menu_button (GTK_WIDGET (window)), "Import a Chat…");
  choose_file (json_path, FALSE);
  ITERATE_UNTIL (g_list_model_get_n_items (G_LIST_MODEL (window->store)) == n_chats + 1 &&
                 window->chat != original);
  g_assert_true (g_list_model_get_item (G_LIST_MODEL (window->store), 0) == (gpointer) window->chat);
  g_object_unref (window->chat);
  g_assert_cmpstr (burrow_chat_get_title (window->chat), ==, burrow_chat_get_title (original));
  imported = burrow_chat_store_load_messages (window->store, window->chat, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (imported->len, ==, saved->len);
  for (guint i = 0; i < saved->len; i++)
    {
      g_assert_cmpint (burrow_chat_message_get_role (imported->pdata[i]), ==,
                       burrow_chat_message_get_role (saved->pdata[i]));
      g_assert_cmpstr (burrow_chat_message_get_content (imported->pdata[i]), ==,
                       burrow_chat_message_get_content (saved->pdata[i]));
    }
  reexported = burrow_chat_export_json (window->chat, imported);
  g_assert_cmpstr (reexported, ==, json);
  g_assert_cmpuint (g_list_model_get_n_items (window->messages), ==, saved->len);
}

/* Three chats in the store before the app opens it. */
static void
fill_store (void)
{
  g_autofree char *path = burrow_chat_store_default_path ();
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowChatStore) store = burrow_chat_store_new (path, &error);
  static const char *const chats[][3] = {
    { "Sourdough starter", "How often should I feed my starter?", "Once a week is enough in the fridge." },
    { "Rust lifetimes", "What does the borrow checker do?", NULL },
    { "Cats", "Do cats dream?", NULL },
  };
  BurrowSampling sampling = { 0.7, 0.95, 40 };

  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (chats); i++)
    {
      BurrowChat *chat = burrow_chat_store_create_chat (store, demo, "", &sampling, &error);

      g_assert_no_error (error);
      burrow_chat_set_title (chat, chats[i][0]);
      g_assert_true (burrow_chat_store_save_chat (store, chat, &error));
      for (guint m = 1; m < 3 && chats[i][m] != NULL; m++)
        {
          g_autoptr(BurrowChatMessage) message =
            burrow_chat_message_new (m == 1 ? BURROW_ROLE_USER : BURROW_ROLE_ASSISTANT, chats[i][m]);

          g_assert_true (burrow_chat_store_add_message (store, chat, message, &error));
        }
      if (i == 0)
        sourdough_id = burrow_chat_get_id (chat);
      if (i == 1)
        rust_id = burrow_chat_get_id (chat);
    }
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-history-window");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;
  x_input_init (settle);
  demo = burrow_demo_model_dir ();
  g_assert_nonnull (demo);
  fill_store ();

  app = app_test_application_new ();
  window = app_test_window_new (app, 1200, 760);
  settle (GTK_WIDGET (window));

  /* In order: the second starts where the first left the window. */
  g_test_add_func ("/history-window/search", test_search);
  g_test_add_func ("/history-window/browse-alternatives", test_browse_alternatives);
  g_test_add_func ("/history-window/export-import", test_export_import);

  ret = app_test_run_in_window (&app, window);
  g_free (demo);
  bw_test_remove_tree (user_dirs);
  return ret;
}
