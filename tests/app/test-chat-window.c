/* The real window chatting with the bundled demo model, driven through its actions as a
 * user would: a first chat, its own system prompt and sampling, streamed replies, Stop,
 * regenerate, edit and resend, a second chat and switching back, delete with undo, and the
 * dashboard's numbers changing. Also measures the main loop's longest stall while replies
 * stream in: the demo model's, and 2,048-token ones of every shape fed to its chat view. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <time.h>

#include "burrow-chat-settings-window.h"
#include "burrow-chat-view.h"
#include "burrow-dashboard.h"
#include "burrow-demo.h"
#include "burrow-message-row.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "user-dirs.h"
#include "app-window.h"
#include "iterate.h"
#include "widget-find.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

/* Most main-thread CPU time in one stretch without returning to the main loop. */
#ifdef __SANITIZE_ADDRESS__
#define MAIN_LOOP_BUDGET_USEC (200 * 1000)   /* sanitized code runs 2 to 4 times slower */
#else
#define MAIN_LOOP_BUDGET_USEC (50 * 1000)
#endif

static BurrowApplication *app;
static BurrowWindow *window;

static GListModel *
messages (void)
{
  return burrow_chat_view_get_messages (app_test_chat_view (window));
}

static BurrowChatMessage *
message (guint i)
{
  g_autoptr(BurrowChatMessage) m = g_list_model_get_item (messages (), i);

  g_assert_nonnull (m);
  return m;   /* the list keeps it alive */
}

static BurrowChatStore *
store (void)
{
  return burrow_application_get_chat_store (app);
}

static BurrowChat *
chat_at (guint i)
{
  g_autoptr(BurrowChat) chat = g_list_model_get_item (G_LIST_MODEL (store ()), i);

  return chat;
}

static gboolean
activate (const char *action,
          const char *format,
          ...)
{
  GVariant *param = NULL;
  va_list args;

  if (format != NULL)
    {
      va_start (args, format);
      param = g_variant_new_va (format, NULL, &args);
      va_end (args);
    }
  return gtk_widget_activate_action_variant (GTK_WIDGET (window), action, param);
}

/* Types @text and presses Send; returns once the reply has started. */
static void
send (const char *text)
{
  guint before = g_list_model_get_n_items (messages ());

  burrow_chat_view_set_draft (app_test_chat_view (window), text);
  g_assert_true (activate ("win.send", NULL));
  g_assert_true (burrow_window_get_generating (window));
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, before + 2);
  g_assert_cmpstr (burrow_chat_message_get_content (message (before)), ==, text);
}

typedef struct {
  guint n_notifies;          /* content changes while streaming */
  guint n_partial;           /* times the reply was seen non-empty and still streaming */
  int min_width, max_width;  /* the chat column's width while the panel shows */
} Streaming;

/* Every frame: the chat column's width while the panel shows beside it. */
static gboolean
sample_widths (GtkWidget     *widget,
               GdkFrameClock *clock,
               gpointer       user_data)
{
  Streaming *s = user_data;
  GtkWidget *panel = GTK_WIDGET (app_test_child (window, "panel"));

  if (gtk_widget_get_mapped (panel) && gtk_widget_get_width (panel) > 0)
    {
      int w = gtk_widget_get_width (GTK_WIDGET (app_test_chat_view (window)));

      s->min_width = s->min_width == 0 ? w : MIN (s->min_width, w);
      s->max_width = MAX (s->max_width, w);
    }
  return G_SOURCE_CONTINUE;
}

static void
on_reply_notify (BurrowChatMessage *reply,
                 GParamSpec        *pspec,
                 Streaming         *s)
{
  s->n_notifies++;
  if (burrow_chat_message_get_streaming (reply) && burrow_chat_message_get_content (reply)[0] != '\0')
    s->n_partial++;

}

static void
test_first_chat (void)
{
  BurrowDashboard *panel = BURROW_DASHBOARD (app_test_child (window, "panel"));
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GError) error = NULL;
  Streaming s = { 0 };
  BurrowChatMessage *reply;
  BurrowReplyStats stats;
  BurrowChat *chat;
  guint tick;

  g_assert_nonnull (demo);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 0);

  /* "Try the Demo Model": a chat opens and the model loads with the bar showing. */
  g_assert_true (activate ("win.open-demo", NULL));
  g_assert_cmpstr (app_test_visible_page (window), ==, "chat");
  g_assert_cmpint (burrow_chat_view_get_model_bar (app_test_chat_view (window)), ==, BURROW_MODEL_BAR_LOADING);
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "decode"), ==, "—");
  ITERATE_UNTIL (app_test_model_ready (window));
  chat = chat_at (0);
  g_assert_cmpstr (burrow_chat_get_model_dir (chat), ==, demo);
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "");

  /* Send: the reply streams in token by token, then is saved with its stats. */
  tick = gtk_widget_add_tick_callback (GTK_WIDGET (window), sample_widths, &s, NULL);
  send ("Once upon a time there was a little fox.");
  reply = message (1);
  g_assert_true (burrow_chat_message_get_streaming (reply));
  g_signal_connect (reply, "notify::content", G_CALLBACK (on_reply_notify), &s);
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  g_signal_handlers_disconnect_by_data (reply, &s);
  for (int i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
  gtk_widget_remove_tick_callback (GTK_WIDGET (window), tick);
  g_test_message ("reply: %s (%u content updates)", burrow_chat_message_get_content (reply), s.n_notifies);
  g_assert_cmpuint (s.n_partial, >, 1);
  /* The panel's numbers change as tokens come in; the chat column beside it stays put. */
  g_test_message ("chat column %d to %d px wide", s.min_width, s.max_width);
  g_assert_cmpint (s.min_width, >, 0);
  g_assert_cmpint (s.max_width, ==, s.min_width);
  g_assert_false (burrow_chat_message_get_streaming (reply));
  burrow_chat_message_get_stats (reply, &stats);
  g_assert_cmpint (stats.n_tokens, >, 0);
  g_assert_cmpfloat (stats.ttft_seconds, >, 0);
  g_assert_cmpint (stats.finish, ==, BURROW_FINISH_STOP);

  /* The chat is named after the first message, and both messages are on disk. */
  g_assert_cmpstr (burrow_chat_get_title (chat), ==, "Once upon a time there was a little fox.");
  saved = burrow_chat_store_load_messages (store (), chat, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (saved->len, ==, 2);
  g_assert_cmpstr (burrow_chat_message_get_content (saved->pdata[1]), ==,
                   burrow_chat_message_get_content (reply));

  /* The dashboard shows what the reply cost. */
  ITERATE_UNTIL (g_strcmp0 (burrow_dashboard_get_value (panel, "decode"), "—") != 0);
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "ttft"), !=, "—");
  g_assert_cmpstr (burrow_dashboard_get_value (panel, "hit-rate"), !=, "—");
  g_assert_cmpstr (burrow_dashboard_get_value (BURROW_DASHBOARD (app_test_child (window, "performance")), "bytes-read"),
                   !=, "0 bytes");
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (panel)));
}

/* The chat settings dialog that is open, or NULL. */
static BurrowChatSettingsWindow *
settings_dialog (void)
{
  return BURROW_CHAT_SETTINGS_WINDOW (test_find_toplevel (BURROW_TYPE_CHAT_SETTINGS_WINDOW));
}

static gpointer
dialog_child (BurrowChatSettingsWindow *dialog,
              const char               *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (dialog),
                                                   BURROW_TYPE_CHAT_SETTINGS_WINDOW, name);

  g_assert_nonnull (object);
  return object;
}

static char *
dialog_prompt (BurrowChatSettingsWindow *dialog)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (dialog_child (dialog, "system_prompt_view"));
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

static void
close_dialog (BurrowChatSettingsWindow *dialog)
{
  gpointer weak = dialog;

  g_object_add_weak_pointer (G_OBJECT (dialog), &weak);
  gtk_window_close (GTK_WINDOW (dialog));
  ITERATE_UNTIL (weak == NULL);
}

static int
last_prompt_tokens (void)
{
  const BurrowPerfSnapshot *s = burrow_perf_monitor_get_snapshot (burrow_session_get_monitor (window->session));

  g_assert_nonnull (s);
  return s->turn.prompt_tokens;
}

static void
test_chat_settings (void)
{
  BurrowSettings *settings = burrow_application_get_settings (app);
  BurrowChat *chat = chat_at (0), *fresh;
  gint64 id = burrow_chat_get_id (chat);
  g_autoptr(BurrowChatStore) reopened = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *prompt = NULL, *first_reply = NULL;
  BurrowChatSettingsWindow *dialog;
  BurrowSampling sampling;
  double default_temperature;
  int tokens_before;
  guint n;

  /* The chat started with the defaults from Preferences, and the dialog shows them. */
  g_object_get (settings, "temperature", &default_temperature, NULL);
  burrow_chat_get_sampling (chat, &sampling);
  g_assert_cmpfloat_with_epsilon (sampling.temperature, default_temperature, 1e-9);
  g_assert_true (activate ("win.current-chat-settings", NULL));
  dialog = settings_dialog ();
  g_assert_nonnull (dialog);
  g_assert_true (burrow_chat_settings_window_get_chat (dialog) == chat);
  g_assert_cmpfloat_with_epsilon (gtk_spin_button_get_value (dialog_child (dialog, "temperature_spin")),
                                  default_temperature, 1e-9);
  prompt = dialog_prompt (dialog);
  g_assert_cmpstr (prompt, ==, "");

  /* Edit: a system prompt and greedy sampling; closing saves them. */
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (dialog_child (dialog, "system_prompt_view")),
                            "You are a storyteller who always talks about foxes and forests.", -1);
  gtk_spin_button_set_value (dialog_child (dialog, "temperature_spin"), 0);
  gtk_spin_button_set_value (dialog_child (dialog, "top_p_spin"), 0.5);
  gtk_spin_button_set_value (dialog_child (dialog, "top_k_spin"), 7);
  close_dialog (dialog);
  g_assert_null (settings_dialog ());

  reopened = burrow_chat_store_new (burrow_chat_store_get_path (store ()), &error);
  g_assert_no_error (error);
  fresh = burrow_chat_store_find_chat (reopened, id);
  g_assert_nonnull (fresh);
  g_assert_cmpstr (burrow_chat_get_system_prompt (fresh), ==,
                   "You are a storyteller who always talks about foxes and forests.");
  burrow_chat_get_sampling (fresh, &sampling);
  g_assert_cmpfloat_with_epsilon (sampling.temperature, 0, 1e-9);
  g_assert_cmpfloat_with_epsilon (sampling.top_p, 0.5, 1e-9);
  g_assert_cmpuint (sampling.top_k, ==, 7);

  /* Reopened, the dialog shows what was saved. */
  g_assert_true (activate ("win.chat-settings", "x", id));
  dialog = settings_dialog ();
  g_assert_nonnull (dialog);
  g_clear_pointer (&prompt, g_free);
  prompt = dialog_prompt (dialog);
  g_assert_cmpstr (prompt, ==, "You are a storyteller who always talks about foxes and forests.");
  g_assert_cmpfloat_with_epsilon (gtk_spin_button_get_value (dialog_child (dialog, "top_p_spin")), 0.5, 1e-9);
  g_assert_cmpint (gtk_spin_button_get_value_as_int (dialog_child (dialog, "top_k_spin")), ==, 7);
  close_dialog (dialog);

  /* The next reply uses them: the prompt grew by the system prompt, and greedy sampling
   * gives the same reply twice. */
  tokens_before = last_prompt_tokens ();
  g_assert_true (activate ("win.regenerate", NULL));
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  g_test_message ("prompt tokens without the system prompt %d, with it %d", tokens_before,
                  last_prompt_tokens ());
  g_assert_cmpint (last_prompt_tokens (), >, tokens_before + 5);
  n = g_list_model_get_n_items (messages ());
  first_reply = g_strdup (burrow_chat_message_get_content (message (n - 1)));
  g_assert_cmpstr (first_reply, !=, "");
  g_assert_true (activate ("win.regenerate", NULL));
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  g_assert_cmpstr (burrow_chat_message_get_content (message (n - 1)), ==, first_reply);

  /* A new chat starts from whatever Preferences say now; the first chat keeps its own. */
  g_object_set (settings, "temperature", 1.25, "system-prompt", "Be brief.", NULL);
  g_assert_true (activate ("win.new-chat", NULL));
  fresh = chat_at (0);
  g_assert_true (fresh != chat);
  g_assert_cmpstr (burrow_chat_get_system_prompt (fresh), ==, "Be brief.");
  burrow_chat_get_sampling (fresh, &sampling);
  g_assert_cmpfloat_with_epsilon (sampling.temperature, 1.25, 1e-9);
  burrow_chat_get_sampling (chat, &sampling);
  g_assert_cmpfloat_with_epsilon (sampling.temperature, 0, 1e-9);

  /* "Use Defaults" takes them back from Preferences. */
  g_assert_true (activate ("win.chat-settings", "x", id));
  dialog = settings_dialog ();
  g_signal_emit_by_name (dialog_child (dialog, "defaults_button"), "clicked");
  close_dialog (dialog);
  g_assert_cmpstr (burrow_chat_get_system_prompt (chat), ==, "Be brief.");
  burrow_chat_get_sampling (chat, &sampling);
  g_assert_cmpfloat_with_epsilon (sampling.temperature, 1.25, 1e-9);

  /* Leave things as the next tests expect them: one chat with the default settings. */
  g_assert_true (activate ("win.delete-chat", "x", burrow_chat_get_id (fresh)));
  g_assert_true (activate ("win.select-chat", "x", id));
  g_assert_true (activate ("win.current-chat-settings", NULL));
  dialog = settings_dialog ();
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (dialog_child (dialog, "system_prompt_view")), "", -1);
  gtk_spin_button_set_value (dialog_child (dialog, "temperature_spin"), default_temperature);
  close_dialog (dialog);
  g_object_set (settings, "temperature", default_temperature, "system-prompt", "", NULL);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 1);
}

/* The visible file chooser of the template row, if any. */
static GtkWindow *
file_chooser (void)
{
  return test_find_toplevel (GTK_TYPE_FILE_CHOOSER);
}

/* Regenerates the last reply and returns the prompt's token count. */
static int
regenerate_prompt_tokens (void)
{
  g_assert_true (activate ("win.regenerate", NULL));
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  return last_prompt_tokens ();
}

/* Chat Settings shows the template in use (the demo's own, in tokenizer_config.json),
 * Choose opens a file chooser, a chosen file builds the prompts once the model loads again
 * (here a copy of the demo's template that adds a system message), and the reset button
 * goes back to the model's own. */
static void
test_chat_template_setting (void)
{
  BurrowChat *chat = chat_at (0);
  const char *dir = burrow_chat_get_model_dir (chat);
  g_autofree char *config = g_build_filename (dir, "tokenizer_config.json", NULL);
  g_autofree char *tmp = bw_test_tmp_dir ("burrow-template-XXXXXX");
  g_autofree char *path = g_build_filename (tmp, "foxes.jinja", NULL);
  g_autofree char *source = NULL;
  g_autofree char *shown = NULL;
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;
  BurrowChatSettingsWindow *dialog;
  AdwActionRow *row;
  GtkWidget *reset;
  GtkWindow *chooser;
  int own, chosen;

  g_assert_true (json_parser_load_from_file (parser, config, &error));
  g_assert_no_error (error);
  source = g_strconcat ("<|im_system|>system<|im_middle|>Speak of foxes and forests.<|im_end|>",
                        json_object_get_string_member (json_node_get_object (json_parser_get_root (parser)),
                                                       "chat_template"), NULL);
  g_assert_true (g_file_set_contents (path, source, -1, &error));
  own = regenerate_prompt_tokens ();

  g_assert_true (activate ("win.current-chat-settings", NULL));
  dialog = settings_dialog ();
  row = dialog_child (dialog, "template_row");
  reset = dialog_child (dialog, "reset_template_button");
  g_assert_true (g_str_has_prefix (adw_action_row_get_subtitle (row), "The model's own: "));
  g_assert_true (g_str_has_suffix (adw_action_row_get_subtitle (row), "tokenizer_config.json"));
  g_assert_false (gtk_widget_get_visible (reset));

  /* Choose opens a file chooser; closing it changes nothing. */
  g_signal_emit_by_name (dialog_child (dialog, "choose_template_button"), "clicked");
  ITERATE_UNTIL ((chooser = file_chooser ()) != NULL);
  gtk_window_close (chooser);
  ITERATE_UNTIL (file_chooser () == NULL);
  g_assert_false (burrow_chat_settings_window_get_template_changed (dialog));

  /* What the chooser does with a file: it is shown, and the model loads again with it. */
  burrow_chat_settings_window_choose_template_file (dialog, file);
  shown = g_strconcat ("Chosen: ", path, NULL);
  g_assert_cmpstr (adw_action_row_get_subtitle (row), ==, shown);
  g_assert_true (gtk_widget_get_visible (reset));
  close_dialog (dialog);
  ITERATE_UNTIL (app_test_model_ready (window));
  chosen = regenerate_prompt_tokens ();
  g_test_message ("prompt tokens with the model's own template %d, with the chosen one %d", own, chosen);
  g_assert_cmpint (chosen, >, own + 5);

  /* Reset: the model's own again. */
  g_assert_true (activate ("win.current-chat-settings", NULL));
  dialog = settings_dialog ();
  g_signal_emit_by_name (dialog_child (dialog, "reset_template_button"), "clicked");
  g_assert_true (g_str_has_prefix (adw_action_row_get_subtitle (dialog_child (dialog, "template_row")),
                                   "The model's own: "));
  g_assert_false (gtk_widget_get_visible (dialog_child (dialog, "reset_template_button")));
  close_dialog (dialog);
  ITERATE_UNTIL (app_test_model_ready (window));
  g_assert_cmpint (regenerate_prompt_tokens (), ==, own);
  g_remove (path);
  g_rmdir (tmp);
}

static void
test_stop_and_regenerate (void)
{
  g_autoptr(GPtrArray) saved = NULL;
  g_autoptr(GError) error = NULL;
  BurrowChatMessage *reply;
  BurrowReplyStats stats;
  guint n;

  /* Stop as soon as text shows: nothing more arrives, the action is off at once. */
  send ("Tell me more about the fox and the forest.");
  n = g_list_model_get_n_items (messages ());
  reply = message (n - 1);
  ITERATE_UNTIL (burrow_chat_message_get_content (reply)[0] != '\0' ||
                 !burrow_window_get_generating (window));
  if (burrow_window_get_generating (window))
    {
      g_autofree char *at_stop = NULL;

      g_assert_true (activate ("win.stop", NULL));
      g_assert_false (burrow_window_get_generating (window));
      at_stop = g_strdup (burrow_chat_message_get_content (reply));
      burrow_chat_message_get_stats (reply, &stats);
      g_assert_cmpint (stats.finish, ==, BURROW_FINISH_CANCELLED);
      /* Later tokens from the worker are dropped. */
      for (int i = 0; i < 50; i++)
        g_main_context_iteration (NULL, FALSE);
      g_assert_cmpstr (burrow_chat_message_get_content (reply), ==, at_stop);
    }
  else
    g_test_message ("the reply ended before Stop could be pressed");
  g_assert_false (gtk_widget_activate_action (GTK_WIDGET (window), "win.stop", NULL) &&
                  burrow_window_get_generating (window));

  /* Regenerate replaces the last reply with a new one. */
  n = g_list_model_get_n_items (messages ());
  g_assert_cmpint (burrow_chat_message_get_role (message (n - 1)), ==, BURROW_ROLE_ASSISTANT);
  g_assert_true (activate ("win.regenerate", NULL));
  g_assert_true (burrow_window_get_generating (window));
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, n);
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  saved = burrow_chat_store_load_messages (store (), chat_at (0), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (saved->len, ==, n);
  g_assert_cmpstr (burrow_chat_message_get_content (saved->pdata[n - 1]), ==,
                   burrow_chat_message_get_content (message (n - 1)));
}

static void
test_edit_and_resend (void)
{
  g_autofree char *draft = NULL;
  g_autofree char *reply = g_strdup (burrow_chat_message_get_content (message (3)));
  g_autoptr(GPtrArray) saved = NULL;

  /* Editing the second question puts its text in the composer and deletes nothing yet. */
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, 4);
  burrow_chat_view_set_draft (app_test_chat_view (window), "half a thought");
  g_assert_true (activate ("win.edit-message", "u", 2));
  g_assert_cmpint (burrow_chat_view_get_editing (app_test_chat_view (window)), ==, 2);
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, 4);
  draft = burrow_chat_view_dup_draft (app_test_chat_view (window));
  g_assert_cmpstr (draft, ==, "Tell me more about the fox and the forest.");
  saved = burrow_chat_store_load_messages (store (), chat_at (0), NULL);
  g_assert_cmpuint (saved->len, ==, 4);
  g_clear_pointer (&saved, g_ptr_array_unref);

  /* Cancel: everything as it was, the composer's own text back. */
  g_assert_true (activate ("win.cancel-edit", NULL));
  g_assert_cmpint (burrow_chat_view_get_editing (app_test_chat_view (window)), ==, -1);
  g_clear_pointer (&draft, g_free);
  draft = burrow_chat_view_dup_draft (app_test_chat_view (window));
  g_assert_cmpstr (draft, ==, "half a thought");
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, 4);
  g_assert_cmpstr (burrow_chat_message_get_content (message (3)), ==, reply);

  /* Edit again and send: now the question and its reply are replaced. */
  g_assert_true (activate ("win.edit-message", "u", 2));
  burrow_chat_view_set_draft (app_test_chat_view (window), "Tell me more about the forest.");
  g_assert_true (activate ("win.send", NULL));
  g_assert_cmpint (burrow_chat_view_get_editing (app_test_chat_view (window)), ==, -1);
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, 4);
  g_assert_cmpstr (burrow_chat_message_get_content (message (2)), ==, "Tell me more about the forest.");
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  saved = burrow_chat_store_load_messages (store (), chat_at (0), NULL);
  g_assert_cmpuint (saved->len, ==, 4);
  g_assert_cmpstr (burrow_chat_message_get_content (saved->pdata[2]), ==, "Tell me more about the forest.");
}

static void
test_switch_and_delete (void)
{
  BurrowChat *first = chat_at (0), *second;
  gint64 first_id = burrow_chat_get_id (first), second_id;
  guint n_first = g_list_model_get_n_items (messages ());
  g_autoptr(BurrowChatStore) reopened = NULL;
  g_autoptr(GError) error = NULL;

  /* Ctrl+L on the Performance page goes back to the chat, to its composer. */
  adw_view_stack_set_visible_child_name (ADW_VIEW_STACK (app_test_child (window, "view_stack")), "performance");
  g_assert_true (activate ("win.focus-composer", NULL));
  g_assert_cmpstr (adw_view_stack_get_visible_child_name (ADW_VIEW_STACK (app_test_child (window, "view_stack"))),
                   ==, "chat");

  /* A second chat with the same model, from the Performance page (Ctrl+N): the chat page
   * shows it; the first is still listed. */
  adw_view_stack_set_visible_child_name (ADW_VIEW_STACK (app_test_child (window, "view_stack")), "performance");
  g_assert_true (activate ("win.new-chat", NULL));
  g_assert_cmpstr (adw_view_stack_get_visible_child_name (ADW_VIEW_STACK (app_test_child (window, "view_stack"))),
                   ==, "chat");
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 2);
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, 0);
  second = chat_at (0);
  second_id = burrow_chat_get_id (second);
  g_assert_cmpint (second_id, !=, first_id);
  g_assert_true (app_test_model_ready (window));
  send ("Hello there.");
  ITERATE_UNTIL (!burrow_window_get_generating (window));

  /* Back to the first: its messages come back from disk. */
  g_assert_true (activate ("win.select-chat", "x", first_id));
  g_assert_cmpuint (g_list_model_get_n_items (messages ()), ==, n_first);

  /* Delete the second, undo, delete again and let the toast go. */
  g_assert_true (activate ("win.delete-chat", "x", second_id));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 1);
  g_assert_true (activate ("win.undo-delete", "x", second_id));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 2);
  g_assert_nonnull (burrow_chat_store_find_chat (store (), second_id));

  /* Deleting the open chat opens the next one. */
  g_assert_true (activate ("win.delete-chat", "x", second_id));
  g_assert_true (activate ("win.delete-chat", "x", first_id));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 0);
  g_assert_cmpstr (app_test_visible_page (window), ==, "empty");

  /* Deleting the first made the second's deletion final: its Undo does nothing now. The
   * first is still undoable, and a store opened now sees neither. */
  reopened = burrow_chat_store_new (burrow_chat_store_get_path (store ()), &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (reopened)), ==, 0);
  g_assert_true (activate ("win.undo-delete", "x", second_id));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 0);
  g_assert_true (activate ("win.undo-delete", "x", first_id));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store ())), ==, 1);
  g_assert_cmpint (burrow_chat_get_id (chat_at (0)), ==, first_id);
  g_assert_cmpstr (app_test_visible_page (window), ==, "chat");
}

/* ---- main-loop stalls while replies stream in ---- */

/* Wall-clock gaps between two runs of a 5 ms timer, and the main thread's own CPU time
 * in each gap: on a loaded machine a long gap with little CPU time is the scheduler, not
 * work the main loop did. */
typedef struct {
  gint64 last, last_cpu;
  gint64 worst;                /* longest gap */
  gint64 worst_cpu;            /* most main-thread CPU time in one gap */
  guint over_50ms;             /* gaps over 50 ms */
} Stall;

static gint64
thread_cpu_usec (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

static gboolean
on_probe (gpointer user_data)
{
  Stall *s = user_data;
  gint64 now = g_get_monotonic_time (), cpu = thread_cpu_usec ();

  if (s->last != 0)
    {
      s->worst = MAX (s->worst, now - s->last);
      s->worst_cpu = MAX (s->worst_cpu, cpu - s->last_cpu);
      s->over_50ms += now - s->last > 50000;
    }
  s->last = now;
  s->last_cpu = cpu;
  return G_SOURCE_CONTINUE;
}

typedef struct {
  gint64 last;
  gint64 worst;
  guint frames;
} Frames;

static gboolean
on_frame (GtkWidget     *widget,
          GdkFrameClock *clock,
          gpointer       user_data)
{
  Frames *f = user_data;
  gint64 now = gdk_frame_clock_get_frame_time (clock);

  if (f->last != 0)
    f->worst = MAX (f->worst, now - f->last);
  f->last = now;
  f->frames++;
  return G_SOURCE_CONTINUE;
}

/* Where a frame's time goes: each phase of the frame clock, longest seen. */
typedef struct {
  gint64 start[3];
  gint64 worst[3];             /* update (tick callbacks), layout, paint */
  gint64 total[3];
  guint count[3];
} Phases;

static void
phase_begin (GdkFrameClock *clock,
             gpointer       user_data)
{
  Phases *p = g_object_get_data (G_OBJECT (clock), "phases");
  int which = GPOINTER_TO_INT (user_data);

  p->start[which] = thread_cpu_usec ();
}

static void
phase_end (GdkFrameClock *clock,
           gpointer       user_data)
{
  Phases *p = g_object_get_data (G_OBJECT (clock), "phases");
  int which = GPOINTER_TO_INT (user_data);

  if (p->start[which] != 0)
    {
      gint64 spent = thread_cpu_usec () - p->start[which];

      p->worst[which] = MAX (p->worst[which], spent);
      p->total[which] += spent;
      p->count[which]++;
      p->start[which] = 0;
    }
}

/* Everything the stall tests watch while replies stream in. */
typedef struct {
  Phases phases;
  gulong ids[6];
  Stall stall;
  Frames frames;
  guint probe, tick;
} Watch;

static void
watch_begin (Watch *w)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (window));
  const char *signals[3][2] = { { "update", "layout" }, { "layout", "paint" },
                                { "paint", "after-paint" } };

  memset (w, 0, sizeof *w);
  /* A 5 ms timer finds every stretch the main loop was busy elsewhere. */
  g_object_set_data (G_OBJECT (clock), "phases", &w->phases);
  for (int i = 0; i < 3; i++)
    {
      w->ids[2 * i] = g_signal_connect (clock, signals[i][0], G_CALLBACK (phase_begin),
                                        GINT_TO_POINTER (i));
      w->ids[2 * i + 1] = g_signal_connect_after (clock, signals[i][1], G_CALLBACK (phase_end),
                                                  GINT_TO_POINTER (i));
    }
  w->probe = g_timeout_add_full (G_PRIORITY_HIGH, 5, on_probe, &w->stall, NULL);
  w->tick = gtk_widget_add_tick_callback (GTK_WIDGET (window), on_frame, &w->frames, NULL);
}

/* Stops watching and reports what was seen, under @what. */
static void
watch_end (Watch      *w,
           const char *what)
{
  GdkFrameClock *clock = gtk_widget_get_frame_clock (GTK_WIDGET (window));
  Phases *p = &w->phases;

  g_source_remove (w->probe);
  gtk_widget_remove_tick_callback (GTK_WIDGET (window), w->tick);
  for (int i = 0; i < 6; i++)
    g_signal_handler_disconnect (clock, w->ids[i]);
  g_object_set_data (G_OBJECT (clock), "phases", NULL);
  g_test_message ("%s: frame phases, main-thread CPU most/mean: update %.1f/%.1f ms, "
                  "layout %.1f/%.1f ms, paint %.1f/%.1f ms", what,
                  p->worst[0] / 1000.0, p->total[0] / 1000.0 / MAX (p->count[0], 1),
                  p->worst[1] / 1000.0, p->total[1] / 1000.0 / MAX (p->count[1], 1),
                  p->worst[2] / 1000.0, p->total[2] / 1000.0 / MAX (p->count[2], 1));
  g_test_message ("%s: main loop: longest gap %.1f ms (%u over 50 ms), most main-thread CPU "
                  "in one gap %.1f ms; longest frame gap %.1f ms over %u frames", what,
                  w->stall.worst / 1000.0, w->stall.over_50ms, w->stall.worst_cpu / 1000.0,
                  w->frames.worst / 1000.0, w->frames.frames);
}

static void
test_main_loop_stalls (void)
{
  Watch w;
  int tokens = 0;

  watch_begin (&w);
  for (int i = 0; i < 4; i++)
    {
      BurrowReplyStats stats;
      guint n;

      w.stall.last = w.frames.last = 0;
      send ("And then what happened next?");
      ITERATE_UNTIL (!burrow_window_get_generating (window));
      n = g_list_model_get_n_items (messages ());
      burrow_chat_message_get_stats (message (n - 1), &stats);
      tokens += stats.n_tokens;
    }
  watch_end (&w, "demo replies");
  g_test_message ("%d tokens", tokens);
  g_assert_cmpint (tokens, >, 0);
  /* The main loop itself never works 50 ms without coming back; wall-clock gaps also count
   * the scheduler on a loaded machine (PERFORMANCE.md has both). */
  g_assert_cmpint (w.stall.worst_cpu, <, MAIN_LOOP_BUDGET_USEC);
}

/* ---- main-loop stalls while a long reply streams in ---- */

#define LONG_REPLY_TOKENS 2048

/* Sanitized, creating a widget or laying out a kilobyte now and then takes 100 to 220 ms
 * of CPU (ASan's allocator under GTK's style and Pango), before and after pieces alike:
 * there the long replies only catch a main loop that stops for the better part of a
 * second. */
#ifdef __SANITIZE_ADDRESS__
#define LONG_REPLY_BUDGET_USEC (500 * 1000)
#else
#define LONG_REPLY_BUDGET_USEC MAIN_LOOP_BUDGET_USEC
#endif

typedef enum {
  SHAPE_PARAGRAPHS,      /* many paragraphs with lists and emphasis */
  SHAPE_ONE_PARAGRAPH,   /* one paragraph without a blank line or a line break */
  SHAPE_CODE,            /* one code block that never closes */
  SHAPE_THINKING,        /* thinking in paragraphs, watched as it grows, then a short answer */
} Shape;

/* The @i-th token of a long reply of @shape, about four characters as a model's are. */
static const char *
long_reply_token (Shape shape,
                  int   i)
{
  static const char *prose[] = {
    "The", " fox", " ran", " through", " the", " forest", " and", " found", " a", " river",
    ".", " It", " followed", " the", " **water**", " all", " day", " long", ",", " past",
    " the", " mill", " and", " the", " old", " bridge", ",", " until", " the", " sun",
    " went", " down", " behind", " the", " *hills*", ".",
  };
  static const char *code[] = {
    "static", " int", "\n", "count", "_words", " (", "const", " char", " *", "text", ")",
    "\n", "{", "\n", "  ", "int", " n", " =", " 0", ";", "\n", "  ", "for", " (", ";",
    " *", "text", ";", " text", "++", ")", "\n", "    ", "n", " +=", " *", "text", " ==",
    " '", " '", ";", "\n", "  ", "return", " n", ";", "\n", "}", "\n\n",
  };

  if (i == 0 && shape == SHAPE_CODE)
    return "Here is the code:\n\n```c\n";
  switch (shape)
    {
    case SHAPE_PARAGRAPHS:
      if (i % 60 == 59)
        return i % 240 == 239 ? "\n\n- one\n- two\n\n" : "\n\n";
      return prose[i % G_N_ELEMENTS (prose)];
    case SHAPE_ONE_PARAGRAPH:
      return prose[i % G_N_ELEMENTS (prose)];
    case SHAPE_THINKING:
      return i % 300 == 299 ? "\n\n" : prose[i % G_N_ELEMENTS (prose)];
    case SHAPE_CODE:
    default:
      return code[i % G_N_ELEMENTS (code)];
    }
}

static gboolean
count_frame (GtkWidget     *widget,
             GdkFrameClock *clock,
             gpointer       user_data)
{
  (*(guint *) user_data)++;
  return G_SOURCE_CONTINUE;
}

/* Lets a few frames go by. */
static void
settle (void)
{
  guint frames = 0;
  guint id = gtk_widget_add_tick_callback (GTK_WIDGET (window), count_frame, &frames, NULL);

  gtk_widget_queue_draw (GTK_WIDGET (window));
  ITERATE_UNTIL (frames >= 3);
  gtk_widget_remove_tick_callback (GTK_WIDGET (window), id);
}

typedef struct {
  BurrowChatMessage *reply;
  Shape shape;
  int next;
} Feed;

/* Like the worker's coalesced source: a few tokens at a time, many between two frames. */
static gboolean
feed_tokens (gpointer user_data)
{
  Feed *f = user_data;

  for (int k = 0; k < 4 && f->next < LONG_REPLY_TOKENS; k++)
    {
      const char *token = long_reply_token (f->shape, f->next++);

      if (f->shape == SHAPE_THINKING)
        burrow_chat_message_append (f->reply, NULL, token);
      else
        burrow_chat_message_append (f->reply, token, NULL);
    }
  if (f->next < LONG_REPLY_TOKENS)
    return G_SOURCE_CONTINUE;
  if (f->shape == SHAPE_THINKING)
    burrow_chat_message_append (f->reply, "So the fox went home.", NULL);
  burrow_chat_message_set_streaming (f->reply, FALSE);
  return G_SOURCE_REMOVE;
}

static void
test_long_reply_stalls (void)
{
  const char *names[] = { "many paragraphs", "one paragraph", "one code block", "thinking" };
  g_autoptr(GListStore) store = g_list_store_new (BURROW_TYPE_CHAT_MESSAGE);
  gint64 worst_cpu[G_N_ELEMENTS (names)];

  /* The window's chat view shows a conversation of the test's own. */
  burrow_chat_view_set_messages (app_test_chat_view (window), G_LIST_MODEL (store));
  for (Shape shape = 0; shape < G_N_ELEMENTS (names); shape++)
    {
      g_autoptr(BurrowChatMessage) question =
        burrow_chat_message_new (BURROW_ROLE_USER, "Tell me a long story.");
      g_autoptr(BurrowChatMessage) reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "");
      g_autofree char *label = g_strdup_printf ("%d tokens as %s", LONG_REPLY_TOKENS, names[shape]);
      Feed feed = { reply, shape, 0 };
      Watch w;

      g_list_store_remove_all (store);
      g_list_store_append (store, question);
      burrow_chat_message_set_streaming (reply, TRUE);
      g_list_store_append (store, reply);
      if (shape == SHAPE_THINKING)
        {
          /* The reader opened the thoughts to watch them grow. */
          GtkWidget *row = gtk_widget_get_last_child (
            GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (app_test_chat_view (window)), BURROW_TYPE_CHAT_VIEW,
                                                       "message_box")));

          gtk_expander_set_expanded (GTK_EXPANDER (gtk_widget_get_template_child (
                                       row, BURROW_TYPE_MESSAGE_ROW, "thinking_expander")), TRUE);
        }

      /* The new rows are laid out before the watch starts: it is streaming that counts. */
      settle ();
      watch_begin (&w);
      g_timeout_add (2, feed_tokens, &feed);
      ITERATE_UNTIL (!burrow_chat_message_get_streaming (reply));
      /* The last frames draw the finished reply. */
      for (gint64 end = g_get_monotonic_time () + G_USEC_PER_SEC / 4; g_get_monotonic_time () < end;)
        if (!g_main_context_iteration (NULL, FALSE))
          g_usleep (1000);
      watch_end (&w, label);
      worst_cpu[shape] = w.stall.worst_cpu;
      g_assert_cmpint (strlen (burrow_chat_message_get_content (reply)) +
                       strlen (burrow_chat_message_get_reasoning (reply)), >, 2 * LONG_REPLY_TOKENS);
    }
  g_list_store_remove_all (store);
  burrow_chat_view_set_messages (app_test_chat_view (window), window->messages);

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_test_message ("%s: most main-thread CPU in one gap %.1f ms", names[i], worst_cpu[i] / 1000.0);
      g_assert_cmpint (worst_cpu[i], <, LONG_REPLY_BUDGET_USEC);
    }
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-chat-window");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;

  app = app_test_application_new ();
  /* The default width: there the panel's content once widened it as a reply came in. */
  window = app_test_window_new (app, 1200, 760);

  /* The tests run in order, each starting where the last one left the window. */
  g_test_add_func ("/chat-window/first-chat", test_first_chat);
  g_test_add_func ("/chat-window/chat-settings", test_chat_settings);
  g_test_add_func ("/chat-window/chat-template-setting", test_chat_template_setting);
  g_test_add_func ("/chat-window/stop-and-regenerate", test_stop_and_regenerate);
  g_test_add_func ("/chat-window/edit-and-resend", test_edit_and_resend);
  g_test_add_func ("/chat-window/main-loop-stalls", test_main_loop_stalls);
  g_test_add_func ("/chat-window/long-reply-stalls", test_long_reply_stalls);
  g_test_add_func ("/chat-window/switch-and-delete", test_switch_and_delete);

  ret = app_test_run_in_window (&app, window);
  bw_test_remove_tree (user_dirs);
  return ret;
}
