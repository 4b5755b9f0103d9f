/* The real window under a display: what it shows with no model, after opening the Kimi
 * Linear oracle (directly, from the recent list, through the file chooser), after opening
 * bad folders, and what it remembers. */
#include "tmp-dir.h"
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <unistd.h>

#include "burrow-chat-view.h"
#include "burrow-demo.h"
#include "burrow-preferences-window.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "app-finalize.h"
#include "user-dirs.h"
#include "app-window.h"
#include "iterate.h"
#include "screenshot.h"
#include "widget-find.h"

/* g_format_size puts a no-break space between number and unit. */
#define NBSP "\302\240"

#define WAIT_USEC (20 * G_USEC_PER_SEC)

static BurrowApplication *app;

static gboolean
page_is (BurrowWindow *window,
         const char   *name)
{
  return g_strcmp0 (app_test_visible_page (window), name) == 0;
}

static void
reset_settings (void)
{
  /* Every key back to its default, so no test sees what an earlier one chose (the memory
   * backend is shared by every GSettings of the process). */
  g_autoptr(GSettings) settings = g_settings_new (BURROW_APP_ID);
  g_autoptr(GSettingsSchema) schema = NULL;
  g_auto(GStrv) keys = NULL;

  g_object_get (settings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (settings, keys[i]);
}

static gboolean
on_tick (GtkWidget     *widget,
         GdkFrameClock *clock,
         gpointer       user_data)
{
  *(gboolean *) user_data = TRUE;
  return G_SOURCE_REMOVE;
}

static BurrowWindow *
show_window (void)
{
  BurrowWindow *window = burrow_window_new (app);
  gboolean ticked = FALSE;

  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (GTK_WIDGET (window)));
  /* Let the frame clock run once before poking at it. */
  gtk_widget_add_tick_callback (GTK_WIDGET (window), on_tick, &ticked, NULL);
  ITERATE_UNTIL (ticked);

  return window;
}

static void
close_window (BurrowWindow *window)
{
  app_test_close_last_window (GTK_APPLICATION (app), GTK_WINDOW (window));
}

static void
assert_shown (BurrowWindow *window,
              const char   *title,
              const char   *value)
{
  GtkWidget *row = test_find_row (GTK_WIDGET (app_test_child (window, "model_view")), title, FALSE);
  GtkWidget *label;

  g_assert_nonnull (row);
  g_assert_true (gtk_widget_is_visible (row));
  label = test_find_value_label (row);
  g_assert_nonnull (label);
  g_assert_cmpstr (gtk_label_get_label (GTK_LABEL (label)), ==, value);
}

static void
assert_kimi_linear_shown (BurrowWindow *window,
                          const char   *dir)
{
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (burrow_application_get_settings (app));

  g_assert_cmpstr (adw_view_switcher_title_get_subtitle (ADW_VIEW_SWITCHER_TITLE (app_test_child (window, "switcher_title"))),
                   ==, "kimi_linear");
  assert_shown (window, "Family", "Kimi Linear");
  assert_shown (window, "Layers", "3");
  assert_shown (window, "Experts per layer", "4");
  assert_shown (window, "Experts per token", "2");
  assert_shown (window, "All experts", "3.1" NBSP "kB");
  assert_shown (window, "One expert", "384 bytes");
  assert_shown (window, "Read per token", "1.5" NBSP "kB");
  g_assert_nonnull (recent[0]);
  g_assert_cmpstr (recent[0], ==, dir);
}

static char *
oracle_dir (void)
{
  return g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
}

/* Whether @widget's class binds @accel. */
static gboolean
widget_binds (GtkWidget  *widget,
              const char *accel)
{
  g_autoptr(GListModel) controllers = gtk_widget_observe_controllers (widget);
  guint key = 0;
  GdkModifierType mods = 0;
  gboolean found = FALSE;

  g_assert_true (gtk_accelerator_parse (accel, &key, &mods));
  for (guint i = 0; i < g_list_model_get_n_items (controllers) && !found; i++)
    {
      g_autoptr(GObject) c = g_list_model_get_item (controllers, i);

      /* the class's bindings; the application's accelerators come through others */
      if (g_strcmp0 (gtk_event_controller_get_name (GTK_EVENT_CONTROLLER (c)),
                     "gtk-widget-class-shortcuts") != 0)
        continue;
      for (guint j = 0; j < g_list_model_get_n_items (G_LIST_MODEL (c)) && !found; j++)
        {
          g_autoptr(GtkShortcut) s = g_list_model_get_item (G_LIST_MODEL (c), j);
          g_autoptr(GtkShortcutTrigger) t = gtk_keyval_trigger_new (key, mods);

          found = gtk_shortcut_trigger_equal (gtk_shortcut_get_trigger (s), t);
        }
    }
  return found;
}

static void
test_empty (void)
{
  BurrowWindow *window;
  g_auto(GStrv) open_accels = NULL;
  g_auto(GStrv) quit_accels = NULL;
  g_auto(GStrv) help_accels = NULL;

  reset_settings ();
  window = show_window ();

  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (window)), ==, "Burrow");
  g_assert_cmpstr (app_test_visible_page (window), ==, "empty");
  g_assert_cmpstr (adw_status_page_get_title (ADW_STATUS_PAGE (app_test_child (window, "empty_page"))),
                   ==, "No Model Open");
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "recent_group"))));

  open_accels = gtk_application_get_accels_for_action (GTK_APPLICATION (app), "win.open-model");
  quit_accels = gtk_application_get_accels_for_action (GTK_APPLICATION (app), "app.quit");
  help_accels = gtk_application_get_accels_for_action (GTK_APPLICATION (app),
                                                       "win.show-help-overlay");
  g_assert_true (g_strv_contains ((const char * const *) open_accels, "<Control>o"));
  /* Each shortcut is defined once: the application's accelerators are not also window
   * bindings. */
  for (const char *const *a = (const char *const[]) { "<Control>o", "<Control>n", NULL }; *a; a++)
    g_assert_false (widget_binds (GTK_WIDGET (window), *a));
  g_assert_true (g_strv_contains ((const char * const *) quit_accels, "<Control>q"));
  g_assert_true (g_strv_contains ((const char * const *) help_accels, "<Control>question"));
  g_assert_nonnull (gtk_application_window_get_help_overlay (GTK_APPLICATION_WINDOW (window)));
  g_assert_true (g_action_group_has_action (G_ACTION_GROUP (app), "about"));

  /* Follows the system's light or dark preference unless told otherwise. */
  g_assert_cmpint (adw_style_manager_get_color_scheme (adw_style_manager_get_default ()),
                   ==, ADW_COLOR_SCHEME_DEFAULT);

  close_window (window);
}

static void
test_open_oracle (void)
{
  g_autofree char *dir = oracle_dir ();
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  BurrowWindow *window;

  reset_settings ();
  window = show_window ();

  burrow_window_open_model (window, folder);
  /* The inspection runs on the worker: the call returns at once with a spinner up. */
  g_assert_cmpstr (app_test_visible_page (window), ==, "loading");
  ITERATE_UNTIL (!page_is (window, "loading"));
  g_assert_cmpstr (app_test_visible_page (window), ==, "model");
  assert_kimi_linear_shown (window, dir);

  /* The recent list on the start page now offers it. */
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "recent_group"))));
  g_assert_nonnull (test_find_row (GTK_WIDGET (app_test_child (window, "recent_list")), "kimi_linear", FALSE));

  close_window (window);
}

static void
write_file (const char *dir,
            const char *name,
            const void *data,
            gsize       len)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autoptr(GError) error = NULL;

  g_file_set_contents (path, data, (gssize) len, &error);
  g_assert_no_error (error);
}

static void
open_expecting_error (BurrowWindow *window,
                      const char   *dir,
                      const char   *named_file,
                      const char   *summary_says)
{
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  const char *description, *details;

  burrow_window_open_model (window, folder);
  ITERATE_UNTIL (!page_is (window, "loading"));
  g_assert_cmpstr (app_test_visible_page (window), ==, "error");

  /* In words first; the engine's own message, naming the file, under Details. */
  description = adw_status_page_get_description (ADW_STATUS_PAGE (app_test_child (window, "error_page")));
  details = gtk_label_get_label (GTK_LABEL (app_test_child (window, "error_details")));
  g_test_message ("error shown: %s (details: %s)", description, details);
  g_assert_nonnull (strstr (description, summary_says));
  g_assert_null (strchr (description, '/'));
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "error_details_expander"))));
  g_assert_nonnull (strstr (details, named_file));
  g_assert_nonnull (strstr (details, dir));
  g_assert_cmpstr (adw_view_switcher_title_get_subtitle (ADW_VIEW_SWITCHER_TITLE (app_test_child (window, "switcher_title"))),
                   ==, "");
}

/* A copy of the oracle in @dir, its second shard cut to half its length (a download
 * stopped midway). */
static void
copy_oracle_cut_short (const char *dir)
{
  g_autofree char *oracle = oracle_dir ();
  const char *names[] = { "config.json", "model.safetensors.index.json",
                          "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *from = g_build_filename (oracle, names[i], NULL);
      g_autofree char *bytes = NULL;
      gsize len = 0;

      g_assert_true (g_file_get_contents (from, &bytes, &len, NULL));
      write_file (dir, names[i], bytes, i + 1 == G_N_ELEMENTS (names) ? len / 2 : len);
    }
}

static void
test_open_bad_folders (void)
{
  g_autofree char *empty = bw_test_tmp_dir ("burrow-empty-XXXXXX");
  g_autofree char *broken = bw_test_tmp_dir ("burrow-broken-XXXXXX");
  g_autofree char *cut = bw_test_tmp_dir ("burrow-cut-XXXXXX");
  g_autofree char *gone = bw_test_tmp_dir ("burrow-gone-XXXXXX");
  g_autofree char *oracle = oracle_dir ();
  g_autofree char *config_path = g_build_filename (oracle, "config.json", NULL);
  g_autofree char *config = NULL;
  g_auto(GStrv) recent = NULL;
  /* A safetensors header that claims to be far longer than the file. */
  const guint8 truncated[12] = { 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, '{', '"', 'a', '"' };
  gsize config_len;
  BurrowWindow *window;

  reset_settings ();
  g_assert_true (g_file_get_contents (config_path, &config, &config_len, NULL));
  write_file (broken, "config.json", config, config_len);
  write_file (broken, "model.safetensors", truncated, sizeof truncated);

  window = show_window ();
  open_expecting_error (window, empty, "config.json", "config.json is missing");
  open_expecting_error (window, broken, "model.safetensors", "may still be downloading");
  /* A real shard cut short is an incomplete file, not a folder without a model. */
  copy_oracle_cut_short (cut);
  open_expecting_error (window, cut, "model-00002-of-00002.safetensors", "shorter than it says");
  /* A folder deleted since: said to be gone, not to lack a config.json. */
  bw_test_remove_tree (gone);
  open_expecting_error (window, gone, gone, "no longer there");

  recent = burrow_settings_dup_recent_models (burrow_application_get_settings (app));
  g_assert_cmpuint (g_strv_length (recent), ==, 0);

  close_window (window);
  bw_test_remove_tree (empty);
  bw_test_remove_tree (broken);
  bw_test_remove_tree (cut);
}

/* A newer open replaces one still running; only the newer result is shown. */
static void
test_open_twice (void)
{
  g_autofree char *dir = oracle_dir ();
  g_autofree char *empty = bw_test_tmp_dir ("burrow-empty-XXXXXX");
  g_autoptr(GFile) bad = g_file_new_for_path (empty);
  g_autoptr(GFile) good = g_file_new_for_path (dir);
  BurrowWindow *window;

  reset_settings ();
  window = show_window ();

  burrow_window_open_model (window, bad);
  burrow_window_open_model (window, good);
  ITERATE_UNTIL (!page_is (window, "loading"));
  g_assert_cmpstr (app_test_visible_page (window), ==, "model");
  assert_kimi_linear_shown (window, dir);

  close_window (window);
  bw_test_remove_tree (empty);
}

static void
test_recent_actions (void)
{
  g_autofree char *dir = oracle_dir ();
  BurrowSettings *settings = burrow_application_get_settings (app);
  g_auto(GStrv) recent = NULL;
  BurrowWindow *window;

  reset_settings ();
  burrow_settings_add_recent_model (settings, "/nowhere/else");
  burrow_settings_add_recent_model (settings, dir);
  window = show_window ();
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "recent_group"))));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-recent", "s", dir));
  ITERATE_UNTIL (page_is (window, "model"));
  assert_kimi_linear_shown (window, dir);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.remove-recent", "s",
                                             "/nowhere/else"));
  recent = burrow_settings_dup_recent_models (settings);
  g_assert_cmpuint (g_strv_length (recent), ==, 1);
  g_assert_null (test_find_row (GTK_WIDGET (app_test_child (window, "recent_list")), "else", FALSE));

  close_window (window);
}

static GtkWidget *
find_file_chooser_dialog (void)
{
  return GTK_WIDGET (test_find_toplevel (GTK_TYPE_FILE_CHOOSER_DIALOG));
}

static gboolean
chooser_is_at (GtkWidget *dialog,
               GFile     *folder)
{
  g_autoptr(GFile) chosen = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));

  return chosen != NULL && g_file_equal (chosen, folder);
}

/* win.open-model shows a folder chooser; accepting it opens the chosen folder. Without a
 * portal, GtkFileChooserNative falls back to GtkFileChooserDialog, which we can drive. */
static void
test_file_chooser (void)
{
  g_autofree char *dir = oracle_dir ();
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  g_autoptr(GError) error = NULL;
  GtkWidget *dialog = NULL;
  BurrowWindow *window;

  reset_settings ();
  window = show_window ();

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-model", NULL));
  ITERATE_UNTIL ((dialog = find_file_chooser_dialog ()) != NULL);
  g_assert_cmpint (gtk_file_chooser_get_action (GTK_FILE_CHOOSER (dialog)), ==,
                   GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER);

  /* Cancel leaves the window as it was. */
  gtk_dialog_response (GTK_DIALOG (dialog), GTK_RESPONSE_CANCEL);
  ITERATE_UNTIL (find_file_chooser_dialog () == NULL);
  g_assert_cmpstr (app_test_visible_page (window), ==, "empty");

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.open-model", NULL));
  ITERATE_UNTIL ((dialog = find_file_chooser_dialog ()) != NULL);
  gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, &error);
  g_assert_no_error (error);
  /* The chooser changes folder asynchronously; accept once it has. */
  ITERATE_UNTIL (chooser_is_at (dialog, folder));
  gtk_dialog_response (GTK_DIALOG (dialog), GTK_RESPONSE_ACCEPT);
  ITERATE_UNTIL (page_is (window, "model"));
  assert_kimi_linear_shown (window, dir);

  close_window (window);
}

/* The menu's About and Keyboard Shortcuts items open their windows. */
static void
test_about_and_shortcuts (void)
{
  BurrowWindow *window;
  GtkWindow *about, *shortcuts;

  reset_settings ();
  window = show_window ();

  g_action_group_activate_action (G_ACTION_GROUP (app), "about", NULL);
  ITERATE_UNTIL ((about = test_find_toplevel (ADW_TYPE_ABOUT_WINDOW)) != NULL);
  g_assert_cmpstr (adw_about_window_get_application_name (ADW_ABOUT_WINDOW (about)), ==, "Burrow");
  g_assert_cmpstr (adw_about_window_get_version (ADW_ABOUT_WINDOW (about)), ==, BURROW_VERSION);
  g_assert_cmpstr (adw_about_window_get_application_icon (ADW_ABOUT_WINDOW (about)), ==,
                   BURROW_APP_ID);
  g_assert_true (gtk_window_get_transient_for (about) == GTK_WINDOW (window));
  gtk_window_destroy (about);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.show-help-overlay", NULL));
  ITERATE_UNTIL ((shortcuts = test_find_toplevel (GTK_TYPE_SHORTCUTS_WINDOW)) != NULL);
  gtk_window_close (shortcuts);
  ITERATE_UNTIL (test_find_toplevel (GTK_TYPE_SHORTCUTS_WINDOW) == NULL);

  close_window (window);
}

static void
test_close_saves_size (void)
{
  BurrowSettings *settings = burrow_application_get_settings (app);
  BurrowWindow *window;
  int width = 0, height = 0;

  reset_settings ();
  g_object_set (settings, "window-width", 800, "window-height", 600, NULL);
  window = show_window ();
  gtk_window_get_default_size (GTK_WINDOW (window), &width, &height);
  g_assert_cmpint (width, ==, 800);
  g_assert_cmpint (height, ==, 600);

  gtk_window_set_default_size (GTK_WINDOW (window), 720, 540);
  gtk_window_close (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_application_get_windows (GTK_APPLICATION (app)) == NULL);

  g_object_get (settings, "window-width", &width, "window-height", &height, NULL);
  g_assert_cmpint (width, ==, 720);
  g_assert_cmpint (height, ==, 540);
}

static GObject *
pref (GtkWindow  *prefs,
      const char *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (prefs),
                                                   BURROW_TYPE_PREFERENCES_WINDOW, name);

  g_assert_nonnull (object);
  return object;
}

/* app.preferences opens the preferences; every row is bound both ways to its setting. */
/* A key's <summary> or <description> in the schema as written (the compiled schema
 * leaves them out). */
static char *
schema_text (const char *key,
             const char *element)
{
  g_autofree char *path = g_build_filename (BURROW_SOURCE_DIR, "data", BURROW_APP_ID ".gschema.xml", NULL);
  g_autofree char *xml = NULL;
  g_autofree char *open_key = g_strdup_printf ("<key name=\"%s\"", key);
  g_autofree char *open = g_strdup_printf ("<%s>", element);
  g_autofree char *close = g_strdup_printf ("</%s>", element);
  const char *start, *end;

  g_assert_true (g_file_get_contents (path, &xml, NULL, NULL));
  start = strstr (xml, open_key);
  g_assert_nonnull (start);
  start = strstr (start, open);
  g_assert_nonnull (start);
  start += strlen (open);
  end = strstr (start, close);
  g_assert_nonnull (end);
  return g_strndup (start, (gsize) (end - start));
}

static void
test_preferences (void)
{
  BurrowSettings *settings = burrow_application_get_settings (app);
  g_autofree char *io = NULL;
  g_autofree char *experts = NULL;
  g_autofree char *prompt = NULL;
  BurrowWindow *window;
  GtkWindow *prefs;
  guint64 budget;
  guint threads, top_k;
  gboolean direct, int8;

  reset_settings ();
  g_object_set (settings, "io-backend", "auto", "expert-format", "as-stored", "direct-io", FALSE,
                "ram-budget", (guint64) 0, "dense-format", "as-stored", "system-prompt", "",
                NULL);
  window = show_window ();

  g_action_group_activate_action (G_ACTION_GROUP (app), "preferences", NULL);
  ITERATE_UNTIL ((prefs = test_find_toplevel (BURROW_TYPE_PREFERENCES_WINDOW)) != NULL);
  g_assert_true (gtk_window_get_transient_for (prefs) == GTK_WINDOW (window));

  /* The memory row means what the setting means, which is what the engine does with it:
   * the cache of routed experts, without the dense part. */
  {
    GtkWidget *row = gtk_widget_get_ancestor (GTK_WIDGET (pref (prefs, "ram_budget_spin")),
                                              ADW_TYPE_ACTION_ROW);
    g_autofree char *summary = schema_text ("ram-budget", "summary");
    g_autofree char *description = schema_text ("ram-budget", "description");
    const char *subtitle = adw_action_row_get_subtitle (ADW_ACTION_ROW (row));

    g_assert_cmpstr (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (row)), ==, summary);
    g_assert_nonnull (strstr (subtitle, "cache of routed experts"));
    g_assert_nonnull (strstr (description, "cache of routed experts"));
    g_assert_nonnull (strstr (subtitle, "dense part of the model is not counted"));
    g_assert_nonnull (strstr (description, "dense part of the model"));
    g_assert_nonnull (strstr (description, "is not counted"));
  }

  /* Widgets to settings. */
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (pref (prefs, "ram_budget_spin")), 8);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (pref (prefs, "threads_spin")), 3);
  adw_combo_row_set_selected (ADW_COMBO_ROW (pref (prefs, "io_backend_row")), 2);
  adw_combo_row_set_selected (ADW_COMBO_ROW (pref (prefs, "expert_format_row")), 3);
  gtk_switch_set_active (GTK_SWITCH (pref (prefs, "direct_io_switch")), TRUE);
  gtk_switch_set_active (GTK_SWITCH (pref (prefs, "int8_switch")), TRUE);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (pref (prefs, "top_k_spin")), 12);
  gtk_editable_set_text (GTK_EDITABLE (pref (prefs, "system_prompt_row")), "Answer briefly.");
  g_object_get (settings, "ram-budget", &budget, "threads", &threads, "io-backend", &io,
                "expert-format", &experts, "direct-io", &direct, "top-k", &top_k,
                "system-prompt", &prompt, "int8-activations", &int8, NULL);
  g_assert_cmpuint (budget, ==, (guint64) 8 << 30);
  g_assert_true (int8);
  g_assert_cmpuint (threads, ==, 3);
  g_assert_cmpstr (io, ==, "pread");
  g_assert_cmpstr (experts, ==, "int2");
  g_assert_true (direct);
  g_assert_cmpuint (top_k, ==, 12);
  g_assert_cmpstr (prompt, ==, "Answer briefly.");

  /* Settings to widgets. */
  g_object_set (settings, "dense-format", "int4", "temperature", 1.25, "int8-activations", FALSE,
                NULL);
  g_assert_false (gtk_switch_get_active (GTK_SWITCH (pref (prefs, "int8_switch"))));
  g_assert_cmpuint (adw_combo_row_get_selected (ADW_COMBO_ROW (pref (prefs, "dense_format_row"))), ==, 3);
  g_assert_cmpfloat (gtk_spin_button_get_value (GTK_SPIN_BUTTON (pref (prefs, "temperature_spin"))),
                     ==, 1.25);

  gtk_window_destroy (prefs);
  close_window (window);
}

/* Start Chat on a model that cannot load (the oracle has no tokenizer): the chat opens and
 * the bar above it says why, naming the folder, and offers another folder. */
/* A model folder without a tokenizer (the demo model's files, less tiktoken.model): no
 * Start Chat, and so no empty chat; instead the offer to pick a tokenizer file, after
 * which the chat starts and its model loads with that tokenizer. */
static void
test_start_chat_without_tokenizer (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autofree char *dir = bw_test_tmp_dir ("burrow-no-tokenizer-XXXXXX");
  g_autofree char *tokenizer = g_build_filename (demo, "tiktoken.model", NULL);
  g_autoptr(GFile) folder = g_file_new_for_path (dir);
  BurrowChatStore *store = burrow_application_get_chat_store (app);
  guint n_chats = g_list_model_get_n_items (G_LIST_MODEL (store));
  g_autoptr(GDir) files = g_dir_open (demo, 0, NULL);
  GtkWidget *dialog = NULL;
  const char *name;
  BurrowChatView *view;
  BurrowWindow *window;

  g_assert_nonnull (files);
  while ((name = g_dir_read_name (files)) != NULL)
    if (!g_str_equal (name, "tiktoken.model"))
      {
        g_autofree char *from = g_build_filename (demo, name, NULL);
        g_autofree char *to = g_build_filename (dir, name, NULL);

        g_assert_cmpint (symlink (from, to), ==, 0);
      }

  reset_settings ();
  window = show_window ();
  burrow_window_open_model (window, folder);
  ITERATE_UNTIL (page_is (window, "model"));
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "tokenizer_box"))));
  gtk_widget_activate_action (GTK_WIDGET (window), "win.start-chat", NULL);
  g_assert_cmpstr (app_test_visible_page (window), ==, "model");
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, n_chats);

  /* The offer opens a file chooser; the file picked there (set directly: the chooser
   * dialog's own selection is not scriptable) becomes the folder's tokenizer. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.choose-tokenizer", NULL));
  ITERATE_UNTIL ((dialog = find_file_chooser_dialog ()) != NULL);
  g_assert_cmpint (gtk_file_chooser_get_action (GTK_FILE_CHOOSER (dialog)), ==,
                   GTK_FILE_CHOOSER_ACTION_OPEN);
  gtk_dialog_response (GTK_DIALOG (dialog), GTK_RESPONSE_CANCEL);
  ITERATE_UNTIL (find_file_chooser_dialog () == NULL);
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "tokenizer_box"))));
  _burrow_window_set_tokenizer (window, tokenizer);
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (app_test_child (window, "tokenizer_box"))));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.start-chat", NULL));
  g_assert_cmpstr (app_test_visible_page (window), ==, "chat");
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, n_chats + 1);
  view = BURROW_CHAT_VIEW (app_test_child (window, "chat_view"));
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view) != BURROW_MODEL_BAR_LOADING);
  g_assert_cmpint (burrow_chat_view_get_model_bar (view), ==, BURROW_MODEL_BAR_HIDDEN);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.delete-current", NULL));
  close_window (window);
  bw_test_remove_tree (dir);
}

/* Activating the app on a first run (no chat, no model ever opened) opens a chat with the
 * demo model, which starts loading at once: the quick start ends chatting. */
static void
test_first_run_opens_demo (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  BurrowChatStore *store = burrow_application_get_chat_store (app);
  g_autoptr(BurrowChat) chat = NULL;
  GtkWindow *window;

  reset_settings ();
  g_assert_nonnull (demo);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 0);

  g_application_activate (G_APPLICATION (app));
  window = gtk_application_get_active_window (GTK_APPLICATION (app));
  g_assert_true (BURROW_IS_WINDOW (window));
  g_assert_cmpstr (app_test_visible_page (BURROW_WINDOW (window)), ==, "chat");
  chat = g_list_model_get_item (G_LIST_MODEL (store), 0);
  g_assert_nonnull (chat);
  g_assert_cmpstr (burrow_chat_get_model_dir (chat), ==, demo);

  /* Not a first run any more: activating again just presents the window. */
  g_application_activate (G_APPLICATION (app));
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (store)), ==, 1);

  close_window (BURROW_WINDOW (window));
}

/* A restart (a new window over the same chats) opens the last chat, highlighted in the
 * sidebar, and loads its model: not "No Model Open". */
static void
test_restart_reopens_last_chat (void)
{
  BurrowChatStore *store = burrow_application_get_chat_store (app);
  g_autoptr(BurrowChat) last = g_list_model_get_item (G_LIST_MODEL (store), 0);
  BurrowWindow *window;
  BurrowChatView *view;
  GtkListBoxRow *selected;

  g_assert_nonnull (last);
  window = show_window ();
  view = BURROW_CHAT_VIEW (app_test_child (window, "chat_view"));
  g_assert_cmpstr (app_test_visible_page (window), ==, "chat");
  selected = gtk_list_box_get_selected_row (GTK_LIST_BOX (app_test_child (window, "chat_list")));
  g_assert_nonnull (selected);
  g_assert_true (g_object_get_data (G_OBJECT (selected), "chat") == last);
  g_assert_cmpint (burrow_chat_view_get_model_bar (view), !=, BURROW_MODEL_BAR_UNLOADED);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view) == BURROW_MODEL_BAR_HIDDEN);
  g_assert_cmpstr (app_test_visible_page (window), ==, "chat");
  close_window (window);
}

/* The model is the application's, not a window's: a second window on the same chat finds
 * it loaded, a load that fails in one window is what the other shows too, and loading the
 * chat's model again from the other window is seen in the first. */
static void
test_two_windows_one_model (void)
{
  BurrowChatStore *store = burrow_application_get_chat_store (app);
  g_autoptr(BurrowChat) last = g_list_model_get_item (G_LIST_MODEL (store), 0);
  BurrowSampling sampling = { 0.7, 0.9, 40 };
  g_autoptr(GError) error = NULL;
  BurrowChat *elsewhere;
  BurrowChatView *view_a, *view_b;
  BurrowWindow *a, *b;

  g_assert_nonnull (last);
  a = show_window ();
  view_a = BURROW_CHAT_VIEW (app_test_child (a, "chat_view"));
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view_a) == BURROW_MODEL_BAR_HIDDEN);
  b = show_window ();
  view_b = BURROW_CHAT_VIEW (app_test_child (b, "chat_view"));
  g_assert_cmpint (burrow_chat_view_get_model_bar (view_b), ==, BURROW_MODEL_BAR_HIDDEN);

  /* A chat whose model folder is gone, opened in the first window. */
  elsewhere = burrow_chat_store_create_chat (store, "/nonexistent/burrow-model", "", &sampling, &error);
  g_assert_no_error (error);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (a), "win.select-chat", "x",
                                             burrow_chat_get_id (elsewhere)));
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view_a) == BURROW_MODEL_BAR_FAILED);
  /* The second window's chat lost its model with it. */
  g_assert_cmpint (burrow_chat_view_get_model_bar (view_b), ==, BURROW_MODEL_BAR_UNLOADED);

  /* Loaded again from the second window: the first sees its own chat's model is not. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (b), "win.load-chat-model", NULL));
  g_assert_cmpint (burrow_chat_view_get_model_bar (view_b), ==, BURROW_MODEL_BAR_LOADING);
  g_assert_cmpint (burrow_chat_view_get_model_bar (view_a), ==, BURROW_MODEL_BAR_UNLOADED);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view_b) == BURROW_MODEL_BAR_HIDDEN);
  g_assert_cmpint (burrow_chat_view_get_model_bar (view_a), ==, BURROW_MODEL_BAR_UNLOADED);

  g_object_ref (b);
  gtk_window_destroy (GTK_WINDOW (b));
  ITERATE_UNTIL (g_list_length (gtk_application_get_windows (GTK_APPLICATION (app))) == 1);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_finalize_object (b);
  g_assert_true (burrow_chat_store_trash_chat (store, elsewhere, &error));
  g_assert_true (burrow_chat_store_empty_trash (store, &error));
  g_assert_no_error (error);
  close_window (a);
}

/* The demo model loaded with the memory for experts set to one token's experts: a banner
 * above the chat says so in words, and its button opens Preferences at that setting. At
 * the default the demo's cache is small on purpose, and the banner goes. */
static void
test_memory_banner (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  BurrowSettings *settings = burrow_application_get_settings (app);
  BurrowSession *session = burrow_application_get_session (app);
  BurrowModelInfo info;
  g_autoptr(GError) error = NULL;
  GVariant *target;
  BurrowWindow *window;
  BurrowChatView *view;
  GtkRevealer *banner;
  GtkWidget *button, *spin, *focus;
  GtkWindow *prefs;
  const char *text;

  reset_settings ();
  g_assert_true (burrow_inspect (demo, &info, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (info.read_per_token, <, info.expert_bytes);
  g_object_set (settings, "ram-budget", info.read_per_token, NULL);

  window = show_window ();
  view = BURROW_CHAT_VIEW (app_test_child (window, "chat_view"));
  banner = GTK_REVEALER (app_test_child (window, "memory_banner"));
  button = GTK_WIDGET (app_test_child (window, "memory_banner_button"));
  /* the model loads again with the new budget */
  burrow_session_load_model (session, demo);
  g_assert_cmpint (burrow_chat_view_get_model_bar (view), ==, BURROW_MODEL_BAR_LOADING);
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view) == BURROW_MODEL_BAR_HIDDEN);
  ITERATE_UNTIL (gtk_revealer_get_child_revealed (banner));
  g_assert_cmpstr (app_test_visible_page (window), ==, "chat");
  text = gtk_label_get_text (GTK_LABEL (app_test_child (window, "memory_banner_label")));
  g_test_message ("banner: %s", text);
  g_assert_nonnull (strstr (text, "memory for experts set in Preferences"));
  g_assert_nonnull (strstr (text, "less than two tokens"));
  {
    g_autofree char *budget = g_format_size (info.read_per_token);
    g_assert_nonnull (strstr (text, budget));
  }
  g_assert_cmpstr (gtk_button_get_label (GTK_BUTTON (button)), ==, "Memory Settings");
  target = gtk_actionable_get_action_target_value (GTK_ACTIONABLE (button));
  g_assert_cmpstr (g_variant_get_string (target, NULL), ==, "ram-budget");
  app_test_save_screenshot (GTK_WIDGET (window), "memory-banner.png");

  /* Clicked: Preferences, over this window, on the page of the memory row, focused there. */
  g_assert_true (gtk_widget_activate (button));
  ITERATE_UNTIL ((prefs = test_find_toplevel (BURROW_TYPE_PREFERENCES_WINDOW)) != NULL
                 && gtk_widget_get_mapped (GTK_WIDGET (prefs)));
  g_assert_true (gtk_window_get_transient_for (prefs) == GTK_WINDOW (window));
  spin = GTK_WIDGET (pref (prefs, "ram_budget_spin"));
  g_assert_true (gtk_widget_get_ancestor (spin, ADW_TYPE_PREFERENCES_PAGE)
                 == GTK_WIDGET (adw_preferences_window_get_visible_page (ADW_PREFERENCES_WINDOW (prefs))));
  ITERATE_UNTIL ((focus = gtk_window_get_focus (prefs)) != NULL
                 && (focus == spin || gtk_widget_is_ancestor (focus, spin)));
  app_test_save_screenshot (GTK_WIDGET (prefs), "memory-banner-preferences.png");

  /* Back to the automatic budget: the demo's cache is capped on purpose, no banner. */
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (spin), 0);
  gtk_window_destroy (prefs);
  burrow_session_load_model (session, demo);
  g_assert_false (gtk_revealer_get_reveal_child (banner));
  ITERATE_UNTIL (burrow_chat_view_get_model_bar (view) == BURROW_MODEL_BAR_HIDDEN);
  g_assert_false (gtk_revealer_get_reveal_child (banner));
  burrow_model_info_clear (&info);
  close_window (window);
}

int
main (int   argc,
      char *argv[])
{
  /* The app opens its conversation store at startup, before any test runs. */
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-window-test");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;

  app = app_test_application_new ();

  g_test_add_func ("/window/empty", test_empty);
  g_test_add_func ("/window/open-oracle", test_open_oracle);
  g_test_add_func ("/window/open-bad-folders", test_open_bad_folders);
  g_test_add_func ("/window/open-twice", test_open_twice);
  g_test_add_func ("/window/recent-actions", test_recent_actions);
  g_test_add_func ("/window/file-chooser", test_file_chooser);
  g_test_add_func ("/window/about-and-shortcuts", test_about_and_shortcuts);
  g_test_add_func ("/window/close-saves-size", test_close_saves_size);
  g_test_add_func ("/window/preferences", test_preferences);
  g_test_add_func ("/window/start-chat-without-tokenizer", test_start_chat_without_tokenizer);
  g_test_add_func ("/window/first-run-opens-demo", test_first_run_opens_demo);
  g_test_add_func ("/window/restart-reopens-last-chat", test_restart_reopens_last_chat);
  g_test_add_func ("/window/two-windows-one-model", test_two_windows_one_model);
  g_test_add_func ("/window/memory-banner", test_memory_banner);

  ret = g_test_run ();
  app_test_finalize (&app);
  bw_test_remove_tree (user_dirs);

  return ret;
}
