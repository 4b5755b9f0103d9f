/* Make a Compact Copy in the real window under Xvfb, with real clicks (XTest) on a copy of
 * the demo model: the estimate shown before starting, the conversion, the quality report
 * against the quality.json it wrote, the copy in the recent models and its page, and the
 * copy loading; then Cancel half-way through the writing and through the quality
 * measurement, each of which leaves no folder behind, and Escape. */
#include "burrow-config.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <X11/keysym.h>

#include "burrow-compact-dialog.h"
#include "burrow-convert-job.h"
#include "burrow-demo.h"
#include "burrow-window.h"
#include "burrow-window-private.h"
#include "app-finalize.h"
#include "app-window.h"
#include "iterate.h"
#include "widget-find.h"
#include "user-dirs.h"
#include "x-input.h"

#define WAIT_USEC (60 * G_USEC_PER_SEC)

static BurrowApplication *app;
static char *models_dir;   /* holds the demo model's copy and what is made of it */
static char *demo_copy;

static void
settle (GtkWidget *widget)
{
  app_test_settle_for (widget, 300);
}

/* Escape (or another key) to @window, which takes the keyboard first. */
static void
press_key (GtkWindow *window,
           guint      keysym)
{
  x_input_take_focus (window);
  x_input_press (GTK_WIDGET (window), keysym, FALSE);
}

static gpointer
window_child (BurrowWindow *window,
              const char   *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (window), BURROW_TYPE_WINDOW, name);

  g_assert_nonnull (object);
  return object;
}

static gpointer
dialog_child (BurrowCompactDialog *dialog,
              const char          *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (dialog), BURROW_TYPE_COMPACT_DIALOG, name);

  g_assert_nonnull (object);
  return object;
}

/* Waits until the button is on screen (a page may still be on its way in). */
static GtkWidget *
window_button (BurrowWindow *window,
               const char   *action)
{
  GtkWidget *button = NULL;

  ITERATE_UNTIL ((button = test_find_button (GTK_WIDGET (window), action)) != NULL);
  return button;
}

static const char *
stack_page (GtkStack *stack)
{
  return gtk_stack_get_visible_child_name (stack);
}

static void
assert_row_value (GtkWidget  *root,
                  const char *title,
                  const char *value)
{
  GtkWidget *row = test_find_row (root, title, TRUE);
  GtkWidget *label;

  g_assert_nonnull (row);
  label = test_find_value_label (row);
  g_assert_nonnull (label);
  g_assert_cmpstr (gtk_label_get_label (GTK_LABEL (label)), ==, value);
}

/* The quality report as shown (rows under @root) against quality.json as written,
 * read here with json-glib, not through the engine. */
static void
assert_quality_shown (GtkWidget  *root,
                      const char *dir)
{
  static const struct { const char *key, *title; } classes[] = {
    { "attention", "Attention" }, { "dense_mlp", "Dense layers" },
    { "shared_experts", "Shared experts" }, { "routed_experts", "Routed experts" },
    { "other", "Other weights" },
  };
  g_autofree char *path = g_build_filename (dir, "quality.json", NULL);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *root_obj, *weights, *text;
  g_autofree char *ppl = NULL;
  g_autofree char *kl = NULL;
  g_autofree char *top1 = NULL;
  guint shown = 0;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  root_obj = json_node_get_object (json_parser_get_root (parser));
  weights = json_object_get_object_member (root_obj, "weights");
  text = json_object_get_object_member (root_obj, "text");
  g_assert_nonnull (weights);
  g_assert_nonnull (text);

  for (guint i = 0; i < G_N_ELEMENTS (classes); i++)
    {
      JsonObject *c = json_object_get_object_member (weights, classes[i].key);
      g_autofree char *value = g_strdup_printf ("%.4f", json_object_get_double_member (c, "relative_rms_error"));

      if (json_object_get_int_member (c, "matrices") == 0)
        {
          g_assert_null (test_find_row (root, classes[i].title, TRUE));
          continue;
        }
      assert_row_value (root, classes[i].title, value);
      shown++;
    }
  g_assert_cmpuint (shown, >=, 1);
  g_assert_nonnull (test_find_row (root, "Routed experts", TRUE));

  ppl = g_strdup_printf ("%.3f → %.3f", json_object_get_double_member (text, "perplexity_original"),
                         json_object_get_double_member (text, "perplexity_converted"));
  kl = g_strdup_printf ("%.4f nats", json_object_get_double_member (text, "kl_mean"));
  top1 = g_strdup_printf ("%.1f%%", 100.0 * json_object_get_double_member (text, "top1_agreement"));
  assert_row_value (root, "Perplexity", ppl);
  assert_row_value (root, "Mean KL divergence", kl);
  assert_row_value (root, "Top-1 agreement", top1);
}

static BurrowWindow *
show_window (void)
{
  BurrowWindow *window = burrow_window_new (app);

  gtk_window_set_default_size (GTK_WINDOW (window), 900, 700);
  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (GTK_WIDGET (window)));
  /* At its full size, sidebar and content side by side: a busy X server may map it
   * smaller first, folded. */
  ITERATE_UNTIL (gtk_widget_get_width (GTK_WIDGET (window)) >= 880 && !adw_leaflet_get_folded (window->leaflet));
  settle (GTK_WIDGET (window));
  return window;
}

/* The demo model's page, then a click on Make a Compact Copy… and its first estimate. */
static BurrowCompactDialog *
open_dialog (BurrowWindow *window)
{
  g_autoptr(GFile) folder = g_file_new_for_path (demo_copy);
  BurrowCompactDialog *dialog;

  burrow_window_open_model (window, folder);
  ITERATE_UNTIL (g_strcmp0 (stack_page (window_child (window, "stack")), "model") == 0);
  /* A page fading in takes no clicks yet. */
  ITERATE_UNTIL (!gtk_stack_get_transition_running (window_child (window, "stack")));
  x_input_click (window_button (window, "win.compact-copy"));
  ITERATE_UNTIL (window->compact_dialog != NULL && gtk_widget_get_mapped (GTK_WIDGET (window->compact_dialog)));
  dialog = BURROW_COMPACT_DIALOG (window->compact_dialog);
  ITERATE_UNTIL (burrow_compact_dialog_has_estimate (dialog));
  return dialog;
}

static char *
size_text (guint64 after,
           guint64 before)
{
  return burrow_convert_size_text (after, before);
}

static void
test_convert (void)
{
  BurrowWindow *window = show_window ();
  BurrowCompactDialog *dialog = open_dialog (window);
  AdwComboRow *experts = dialog_child (dialog, "experts_row");
  GListModel *formats = adw_combo_row_get_model (experts);
  g_autofree char *out = g_build_filename (models_dir, "demo-model-int8", NULL);
  g_autofree char *disk = NULL;
  g_autofree char *ram = NULL;
  g_autofree char *read = NULL;
  g_autofree char *expert = NULL;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) recent = NULL;
  BurrowConvertOptions options;
  BurrowConvertEstimate est;
  GtkWidget *group;

  /* Every format the demo's experts can take, INT4 first. */
  g_assert_cmpuint (g_list_model_get_n_items (formats), ==, 4);
  g_assert_cmpstr (gtk_string_list_get_string (GTK_STRING_LIST (formats), 0), ==, "INT4, 4 bits a weight");
  g_assert_cmpstr (gtk_string_list_get_string (GTK_STRING_LIST (formats), 1), ==, "INT8, 8 bits a weight");
  g_assert_cmpstr (adw_action_row_get_subtitle (dialog_child (dialog, "folder_row")), !=, out);

  adw_combo_row_set_selected (experts, 1);
  ITERATE_UNTIL (burrow_compact_dialog_has_estimate (dialog));
  g_assert_cmpstr (adw_action_row_get_subtitle (dialog_child (dialog, "folder_row")), ==, out);
  g_assert_cmpstr (burrow_compact_dialog_get_out_dir (dialog), ==, out);

  /* The estimate shown is the tensor plan's, for this folder. */
  burrow_convert_options_init (&options);
  options.experts = BURROW_CONVERT_INT8;
  g_assert_true (burrow_convert_estimate (demo_copy, out, &options, &est, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (est.read_per_token, <, est.original_read_per_token);
  disk = size_text (est.disk_bytes, est.original_disk_bytes);
  ram = size_text (est.resident_bytes, est.original_resident_bytes);
  read = size_text (est.read_per_token, est.original_read_per_token);
  expert = size_text (est.bytes_per_expert, est.original_bytes_per_expert);
  g_assert_cmpstr (gtk_label_get_label (dialog_child (dialog, "disk_label")), ==, disk);
  g_assert_cmpstr (gtk_label_get_label (dialog_child (dialog, "ram_label")), ==, ram);
  g_assert_cmpstr (gtk_label_get_label (dialog_child (dialog, "read_label")), ==, read);
  g_assert_cmpstr (gtk_label_get_label (dialog_child (dialog, "expert_label")), ==, expert);
  g_assert_false (gtk_widget_get_visible (dialog_child (dialog, "problem_row")));

  x_input_click (dialog_child (dialog, "start_button"));
  ITERATE_UNTIL (g_strcmp0 (stack_page (dialog_child (dialog, "stack")), "done") == 0 &&
                 !gtk_stack_get_transition_running (dialog_child (dialog, "stack")));
  g_assert_true (g_file_test (out, G_FILE_TEST_IS_DIR));
  settle (GTK_WIDGET (dialog));
  assert_quality_shown (GTK_WIDGET (dialog), out);

  /* In the recent models, first. */
  recent = burrow_settings_dup_recent_models (window->settings);
  g_assert_cmpstr (recent[0], ==, out);

  x_input_click (dialog_child (dialog, "open_button"));
  ITERATE_UNTIL (window->compact_dialog == NULL);
  ITERATE_UNTIL (g_strcmp0 (window->inspect_dir, out) == 0 &&
                 g_strcmp0 (stack_page (window_child (window, "stack")), "model") == 0 &&
                 !gtk_stack_get_transition_running (window_child (window, "stack")));
  settle (GTK_WIDGET (window));
  group = test_find_named (window_child (window, "model_view"), "quality_group");
  g_assert_nonnull (group);
  assert_quality_shown (group, out);

  /* And it loads. */
  x_input_click (window_button (window, "win.start-chat"));
  ITERATE_UNTIL (burrow_session_is_ready_for (window->session, out));

  app_test_close_last_window (GTK_APPLICATION (app), GTK_WINDOW (window));
  bw_test_remove_tree (out);
}

static void
test_cancel (void)
{
  BurrowWindow *window = show_window ();
  BurrowCompactDialog *dialog = open_dialog (window);
  g_autofree char *out = g_strdup (burrow_compact_dialog_get_out_dir (dialog));
  g_autofree char *partial = g_strconcat (out, ".partial", NULL);
  GtkProgressBar *bar = dialog_child (dialog, "progress_bar");
  AdwActionRow *note;

  g_assert_true (g_str_has_suffix (out, "demo-model-int4"));
  burrow_compact_dialog_set_step_delay (dialog, BURROW_CONVERT_STAGE_WRITING, 20000);
  x_input_click (dialog_child (dialog, "start_button"));
  ITERATE_UNTIL (gtk_progress_bar_get_fraction (bar) > 0 &&
                 !gtk_stack_get_transition_running (dialog_child (dialog, "stack")));
  g_assert_cmpstr (stack_page (dialog_child (dialog, "stack")), ==, "progress");
  g_assert_cmpfloat (gtk_progress_bar_get_fraction (bar), <, 0.5);
  g_assert_true (g_file_test (partial, G_FILE_TEST_IS_DIR));

  x_input_click (dialog_child (dialog, "cancel_button"));
  ITERATE_UNTIL (g_strcmp0 (stack_page (dialog_child (dialog, "stack")), "options") == 0);
  ITERATE_UNTIL (burrow_compact_dialog_has_estimate (dialog));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
  note = dialog_child (dialog, "problem_row");
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (note)));
  g_assert_cmpstr (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (note)), ==,
                   "Cancelled: nothing of the copy was kept.");

  /* Escape closes it. */
  press_key (GTK_WINDOW (dialog), XK_Escape);
  ITERATE_UNTIL (window->compact_dialog == NULL);
  app_test_close_last_window (GTK_APPLICATION (app), GTK_WINDOW (window));
}

/* Cancel while both models read the sample text: the bar moves meanwhile, Cancel stays
 * clickable, and nothing of the copy remains. */
static void
test_cancel_comparing (void)
{
  BurrowWindow *window = show_window ();
  BurrowCompactDialog *dialog = open_dialog (window);
  g_autofree char *out = g_strdup (burrow_compact_dialog_get_out_dir (dialog));
  g_autofree char *partial = g_strconcat (out, ".partial", NULL);
  GtkProgressBar *bar = dialog_child (dialog, "progress_bar");
  double first;

  /* About 35 steps of 150 ms: five seconds of comparing. */
  burrow_compact_dialog_set_step_delay (dialog, BURROW_CONVERT_STAGE_COMPARING, 150000);
  x_input_click (dialog_child (dialog, "start_button"));
  ITERATE_UNTIL (g_str_has_prefix (gtk_progress_bar_get_text (bar) ? gtk_progress_bar_get_text (bar) : "",
                                   "Measuring the quality…") &&
                 gtk_progress_bar_get_fraction (bar) > 0);
  first = gtk_progress_bar_get_fraction (bar);
  g_assert_cmpfloat (first, <, 0.5);
  ITERATE_UNTIL (gtk_progress_bar_get_fraction (bar) > first);
  g_assert_true (g_str_has_prefix (gtk_progress_bar_get_text (bar), "Measuring the quality…"));
  g_assert_cmpstr (stack_page (dialog_child (dialog, "stack")), ==, "progress");
  g_assert_true (g_file_test (partial, G_FILE_TEST_IS_DIR));

  x_input_click (dialog_child (dialog, "cancel_button"));
  ITERATE_UNTIL (g_strcmp0 (stack_page (dialog_child (dialog, "stack")), "options") == 0);
  g_assert_cmpfloat (gtk_progress_bar_get_fraction (bar), <, 1.0);
  ITERATE_UNTIL (burrow_compact_dialog_has_estimate (dialog));
  g_assert_false (g_file_test (out, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (partial, G_FILE_TEST_EXISTS));
  g_assert_cmpstr (adw_preferences_row_get_title (dialog_child (dialog, "problem_row")), ==,
                   "Cancelled: nothing of the copy was kept.");

  press_key (GTK_WINDOW (dialog), XK_Escape);
  ITERATE_UNTIL (window->compact_dialog == NULL);
  app_test_close_last_window (GTK_APPLICATION (app), GTK_WINDOW (window));
}

/* The demo model's files, copied so that the copy is made beside them. */
static void
copy_demo (void)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autoptr(GDir) files = NULL;
  const char *name;

  g_assert_nonnull (demo);
  files = g_dir_open (demo, 0, NULL);
  g_assert_nonnull (files);
  demo_copy = g_build_filename (models_dir, "demo-model", NULL);
  g_assert_cmpint (g_mkdir_with_parents (demo_copy, 0755), ==, 0);
  while ((name = g_dir_read_name (files)) != NULL)
    {
      g_autofree char *from = g_build_filename (demo, name, NULL);
      g_autofree char *to = g_build_filename (demo_copy, name, NULL);
      g_autoptr(GFile) src = g_file_new_for_path (from);
      g_autoptr(GFile) dst = g_file_new_for_path (to);
      g_autoptr(GError) error = NULL;

      g_assert_true (g_file_copy (src, dst, G_FILE_COPY_NONE, NULL, NULL, NULL, &error));
      g_assert_no_error (error);
    }
}

int
main (int   argc,
      char *argv[])
{
  g_autofree char *user_dirs = app_test_isolate_user_dirs ("burrow-compact-test");
  int ret;

  if (!app_test_init (&argc, &argv))
    return 0;

  /* Real clicks: X11 and its XTest extension (Xvfb has it). */
  x_input_init (settle);

  models_dir = g_build_filename (user_dirs, "models", NULL);
  copy_demo ();

  app = app_test_application_new ();

  g_test_add_func ("/compact-copy/convert", test_convert);
  g_test_add_func ("/compact-copy/cancel", test_cancel);
  g_test_add_func ("/compact-copy/cancel-comparing", test_cancel_comparing);

  ret = g_test_run ();
  app_test_finalize (&app);
  g_free (demo_copy);
  g_free (models_dir);

  return ret;
}
