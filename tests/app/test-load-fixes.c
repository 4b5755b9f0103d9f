/* The real window when a chat's model fails to load: the bar's one button is the fix for
 * that error, clicked for real (XTest). A chat template chosen for the model that does not
 * parse: "Use the Model's Template" goes back to the model's own and the model loads. A
 * tokenizer chosen for it that does not fit: "Choose Another Tokenizer…" opens a file
 * chooser in the model's folder. A folder that is gone keeps "Choose Another Folder…". A
 * template or tokenizer that is not one is refused when chosen, and nothing is kept. */
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <string.h>

#include "burrow-chat-settings-window.h"
#include "burrow-chat-store.h"
#include "burrow-chat-view.h"
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
static char *scratch;

static GtkButton *
bar_button (void)
{
  return GTK_BUTTON (gtk_widget_get_template_child (GTK_WIDGET (app_test_chat_view (window)), BURROW_TYPE_CHAT_VIEW,
                                                    "model_bar_button"));
}

static BurrowModelBarState
bar (void)
{
  return burrow_chat_view_get_model_bar (app_test_chat_view (window));
}

/* A chat with @model_dir, opened as a click on it in the list would. */
static void
open_chat (const char *model_dir)
{
  BurrowSampling sampling = { .temperature = 0, .top_p = 1, .top_k = 0 };
  g_autoptr(GError) error = NULL;
  BurrowChat *chat = burrow_chat_store_create_chat (burrow_application_get_chat_store (app),
                                                    model_dir, "", &sampling, &error);

  g_assert_no_error (error);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.select-chat", "x",
                                             burrow_chat_get_id (chat)));
  ITERATE_UNTIL (window->chat == chat);
}

static char *
write_scratch (const char *name,
               const char *text)
{
  char *path = g_build_filename (scratch, name, NULL);

  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static GtkWidget *
find_file_chooser_dialog (void)
{
  return GTK_WIDGET (test_find_toplevel (GTK_TYPE_FILE_CHOOSER_DIALOG));
}

static void
test_broken_template (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *broken = write_scratch ("broken.jinja", "{% for m in messages %}{{ m.content ");
  BurrowSettings *settings = burrow_application_get_settings (app);
  g_autofree char *kept = NULL;

  burrow_settings_set_model_template (settings, demo, broken);
  open_chat (demo);
  ITERATE_UNTIL (bar () == BURROW_MODEL_BAR_FAILED);
  app_test_settle (GTK_WIDGET (window));
  app_test_save_screenshot (GTK_WIDGET (window), "load-failed-template.png");
  g_assert_cmpstr (gtk_button_get_label (bar_button ()), ==, "_Use the Model’s Template");
  g_assert_cmpstr (burrow_session_get_load_error (burrow_application_get_session (app)), ==,
                   "The chat template chosen for this model cannot be used.");

  x_input_click (GTK_WIDGET (bar_button ()));
  ITERATE_UNTIL (bar () == BURROW_MODEL_BAR_HIDDEN);
  kept = burrow_settings_dup_model_template (settings, demo);
  g_assert_null (kept);
  g_assert_cmpint (burrow_session_get_model_state (burrow_application_get_session (app)), ==,
                   BURROW_MODEL_LOADED);
}

static void
test_wrong_tokenizer (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *other = g_build_filename (BURROW_FIXTURES, "text", "cl100k_base",
                                             "tiktoken.model.gz", NULL);
  GtkWidget *dialog = NULL;
  g_autoptr(GFile) folder = NULL;
  g_autoptr(GFile) expected = g_file_new_for_path (demo);

  /* A real tokenizer, of another model: it opens, and the model does not load with it. */
  g_assert_true (_burrow_window_set_model_tokenizer (window, demo, other));
  burrow_session_load_model (burrow_application_get_session (app), demo);
  ITERATE_UNTIL (bar () == BURROW_MODEL_BAR_FAILED);
  app_test_settle (GTK_WIDGET (window));
  g_assert_cmpstr (gtk_button_get_label (bar_button ()), ==, "Choose Another _Tokenizer…");
  g_assert_cmpstr (burrow_session_get_load_error (burrow_application_get_session (app)), ==,
                   "The tokenizer chosen for this model does not fit it.");

  x_input_click (GTK_WIDGET (bar_button ()));
  ITERATE_UNTIL ((dialog = find_file_chooser_dialog ()) != NULL);
  /* shown and laid out before it is answered: GTK warns when a dialog's buttons are drawn
   * before they are allocated, as a loaded machine can make happen */
  ITERATE_UNTIL (gtk_widget_get_mapped (dialog));
  app_test_settle (dialog);
  folder = gtk_file_chooser_get_current_folder (GTK_FILE_CHOOSER (dialog));
  g_assert_true (g_file_equal (folder, expected));
  gtk_dialog_response (GTK_DIALOG (dialog), GTK_RESPONSE_CANCEL);
  ITERATE_UNTIL (find_file_chooser_dialog () == NULL);

  /* The model's own tokenizer again: loads. */
  g_assert_true (_burrow_window_set_model_tokenizer (window, demo, NULL));
  burrow_session_load_model (burrow_application_get_session (app), demo);
  ITERATE_UNTIL (bar () == BURROW_MODEL_BAR_HIDDEN);
}

/* Files that are no template and no tokenizer are refused when chosen. */
static void
test_checked_when_chosen (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *broken = write_scratch ("also-broken.jinja", "{{ unclosed ");
  g_autofree char *not_tokenizer = write_scratch ("notes.json", "{\"hello\": 1}");
  g_autoptr(GFile) file = g_file_new_for_path (broken);
  BurrowSettings *settings = burrow_application_get_settings (app);
  GtkWidget *dialog;
  g_autofree char *template_kept = NULL;
  g_autofree char *tokenizer_kept = NULL;

  g_assert_false (_burrow_window_set_model_tokenizer (window, demo, not_tokenizer));
  tokenizer_kept = burrow_settings_dup_model_tokenizer (settings, demo);
  g_assert_null (tokenizer_kept);

  dialog = burrow_chat_settings_window_new (window->chat, settings);
  gtk_window_set_transient_for (GTK_WINDOW (dialog), GTK_WINDOW (window));
  gtk_window_present (GTK_WINDOW (dialog));
  burrow_chat_settings_window_choose_template_file (BURROW_CHAT_SETTINGS_WINDOW (dialog), file);
  template_kept = burrow_settings_dup_model_template (settings, demo);
  g_assert_null (template_kept);
  g_assert_false (burrow_chat_settings_window_get_template_changed (BURROW_CHAT_SETTINGS_WINDOW (dialog)));
  app_test_save_screenshot (dialog, "template-refused.png");
  gtk_window_destroy (GTK_WINDOW (dialog));
}

/* A folder that is gone: another folder is the fix. */
static void
test_folder_gone (void)
{
  g_autofree char *gone = g_build_filename (scratch, "gone-model", NULL);

  open_chat (gone);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.load-chat-model", NULL));
  ITERATE_UNTIL (bar () == BURROW_MODEL_BAR_FAILED);
  g_assert_cmpstr (gtk_button_get_label (bar_button ()), ==, "_Choose Another Folder…");
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (bar_button ())), ==,
                   "win.open-model");
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-load-fixes");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;
  x_input_init (app_test_settle);
  scratch = g_build_filename (user_dirs, "files", NULL);
  g_assert_cmpint (g_mkdir (scratch, 0700), ==, 0);

  app = app_test_application_new ();
  window = app_test_window_new (app, 1200, 760);

  g_test_add_func ("/load-fixes/broken-template", test_broken_template);
  g_test_add_func ("/load-fixes/wrong-tokenizer", test_wrong_tokenizer);
  g_test_add_func ("/load-fixes/checked-when-chosen", test_checked_when_chosen);
  g_test_add_func ("/load-fixes/folder-gone", test_folder_gone);

  ret = app_test_run_in_window (&app, window);
  g_free (scratch);
  bw_test_remove_tree (user_dirs);
  return ret;
}
