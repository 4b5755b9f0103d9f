/* Screenshots of the real app for the metainfo and for looking at the result as a user
 * would: runs the window through a first run on the demo model, a streamed reply, the
 * performance page, and a narrow width, saving PNGs. Not a test; run by hand under Xvfb:
 *   take-screenshots OUT_DIR [WIDTH HEIGHT]
 * in another language with the build's translations: LC_ALL=C.UTF-8 LANGUAGE=de ... */
#include "burrow-config.h"

#include <glib/gstdio.h>

#include "burrow-chat-settings-window.h"
#include "burrow-chat-view.h"
#include "burrow-compact-dialog.h"
#include "burrow-demo.h"
#include "burrow-markdown-view.h"
#include "burrow-preferences-window.h"
#include "burrow-window.h"

#define WAIT_USEC (120 * G_USEC_PER_SEC)

static void
iterate_for (double seconds)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);

  while (g_get_monotonic_time () < end)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (2000);
}

#define ITERATE_UNTIL(cond)                                                  \
  G_STMT_START {                                                             \
    gint64 end_ = g_get_monotonic_time () + WAIT_USEC;                       \
    while (!(cond) && g_get_monotonic_time () < end_)                        \
      if (!g_main_context_iteration (NULL, FALSE))                           \
        g_usleep (2000);                                                     \
  } G_STMT_END

static GObject *
child (BurrowWindow *window,
       const char   *name)
{
  return gtk_widget_get_template_child (GTK_WIDGET (window), BURROW_TYPE_WINDOW, name);
}

static void
save (GtkWidget  *widget,
      const char *dir,
      const char *name)
{
  g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new (widget);
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  g_autofree char *path = g_build_filename (dir, name, NULL);
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);

  iterate_for (0.5);
  gdk_paintable_snapshot (paintable, GDK_SNAPSHOT (snapshot), w, h);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  texture = gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (widget)), node,
                                         &GRAPHENE_RECT_INIT (0, 0, w, h));
  gdk_texture_save_to_png (texture, path);
  g_print ("%s (%dx%d)\n", path, w, h);
}

static gboolean
loaded (BurrowWindow *window)
{
  return burrow_chat_view_get_model_bar (BURROW_CHAT_VIEW (child (window, "chat_view"))) ==
         BURROW_MODEL_BAR_HIDDEN;
}

static void
send (BurrowWindow *window,
      const char   *text)
{
  burrow_chat_view_set_draft (BURROW_CHAT_VIEW (child (window, "chat_view")), text);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.send", NULL);
}

/* A reply rendered from Markdown with every construct, to look at (not for the metainfo:
 * the demo model does not write Markdown). */
static void
shoot_markdown (const char *dir)
{
  GtkWidget *window = gtk_window_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();
  GtkWidget *view = burrow_markdown_view_new ();

  burrow_markdown_view_set_text (BURROW_MARKDOWN_VIEW (view),
    "## Reading experts from disk\n\n"
    "Burrow keeps the **dense part** in memory and reads *experts* as tokens need them; "
    "see [io_uring](https://kernel.dk/io_uring.pdf) and `O_DIRECT`.\n\n"
    "1. Inspect the folder\n2. Load the dense weights\n   - requantised to `int8` if asked\n"
    "3. Stream experts\n\n"
    "> Pinned experts are never evicted.\n\n"
    "| Format | Bits | Block |\n|:--|--:|:-:|\n| BF16 | 16 | — |\n| FP8 E4M3 | 8 | 128×128 |\n"
    "| MXFP4 | 4 | 32 |\n\n"
    "```c\nstatic int\nadd (int a, int b)\n{\n  return a + b;   /* a long line to show horizontal scrolling of wide code */\n}\n```\n\n"
    "---\n\nThat is all.");
  gtk_widget_set_margin_start (view, 18);
  gtk_widget_set_margin_end (view, 18);
  gtk_widget_set_margin_top (view, 18);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), view);
  gtk_window_set_child (GTK_WINDOW (window), scroller);
  gtk_window_set_default_size (GTK_WINDOW (window), 640, 720);
  gtk_window_present (GTK_WINDOW (window));
  gtk_window_set_focus (GTK_WINDOW (window), NULL);
  iterate_for (1.0);
  save (window, dir, "6-markdown.png");
  gtk_window_destroy (GTK_WINDOW (window));
}

static void
chat_turn (BurrowWindow *window,
           const char   *text)
{
  send (window, text);
  ITERATE_UNTIL (!burrow_window_get_generating (window));
}

/* The open chat's settings dialog over the window. */
/* Scrolls the first scrolled window under w to its end (a dialog's last rows). */
static gboolean
scroll_to_end (GtkWidget *w)
{
  if (GTK_IS_SCROLLED_WINDOW (w))
    {
      GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (w));
      gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj));
      return TRUE;
    }
  for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
    if (gtk_widget_get_mapped (c) && scroll_to_end (c))
      return TRUE;
  return FALSE;
}

/* Opens a dialog through an action, waits for it to show, saves it (and, with `end`, once
 * more scrolled to its end) and closes it. */
static void
shoot_dialog (GtkWidget  *from,
              const char *action,
              GType       type,
              const char *dir,
              const char *name,
              const char *end)
{
  GListModel *toplevels = gtk_window_get_toplevels ();
  GtkWidget *dialog = NULL;

  gtk_widget_activate_action (from, action, NULL);
  for (guint i = 0; i < g_list_model_get_n_items (toplevels) && dialog == NULL; i++)
    {
      g_autoptr(GObject) w = g_list_model_get_item (toplevels, i);

      if (G_TYPE_CHECK_INSTANCE_TYPE (w, type))
        dialog = GTK_WIDGET (w);
    }
  g_assert (dialog != NULL);
  ITERATE_UNTIL (gtk_widget_get_mapped (dialog));
  iterate_for (0.5);
  save (dialog, dir, name);
  if (end != NULL && scroll_to_end (dialog))
    {
      iterate_for (0.5);
      save (dialog, dir, end);
    }
  gtk_window_close (GTK_WINDOW (dialog));
  iterate_for (0.2);
}

static GtkWidget *
find_toplevel (GType type)
{
  GListModel *toplevels = gtk_window_get_toplevels ();

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GObject) w = g_list_model_get_item (toplevels, i);

      if (G_TYPE_CHECK_INSTANCE_TYPE (w, type))
        return GTK_WIDGET (w);
    }
  return NULL;
}

static void
remove_tree (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        remove_tree (path);
      else
        g_unlink (path);
    }
  g_rmdir (dir);
}

static const char *
dialog_page (GtkWidget *dialog)
{
  GObject *stack = gtk_widget_get_template_child (dialog, BURROW_TYPE_COMPACT_DIALOG, "stack");

  return gtk_stack_get_visible_child_name (GTK_STACK (stack));
}

/* Make a Compact Copy of the demo model, into a temporary folder: the options with their
 * estimate, the progress, the quality report, and the copy's own page. */
/* The dialog's progress while its bar's text starts with @text, else 0. */
static double
compact_fraction (GtkWidget  *dialog,
                  const char *text)
{
  GtkProgressBar *bar = GTK_PROGRESS_BAR (gtk_widget_get_template_child (dialog, BURROW_TYPE_COMPACT_DIALOG,
                                                                         "progress_bar"));
  const char *shown = gtk_progress_bar_get_text (bar);

  return shown != NULL && g_str_has_prefix (shown, text) ? gtk_progress_bar_get_fraction (bar) : 0;
}

static void
shoot_compact (BurrowWindow *window,
               const char   *dir)
{
  g_autofree char *demo = burrow_demo_model_dir ();
  g_autoptr(GFile) folder = g_file_new_for_path (demo);
  g_autofree char *tmp = g_dir_make_tmp ("burrow-shots-XXXXXX", NULL);
  g_autofree char *out = g_build_filename (tmp, "demo-model-int4", NULL);
  GtkWidget *dialog;

  burrow_window_open_model (window, folder);
  iterate_for (1.5);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.compact-copy", NULL);
  dialog = find_toplevel (BURROW_TYPE_COMPACT_DIALOG);
  g_assert (dialog != NULL);
  ITERATE_UNTIL (burrow_compact_dialog_has_estimate (BURROW_COMPACT_DIALOG (dialog)));
  burrow_compact_dialog_set_out_dir (BURROW_COMPACT_DIALOG (dialog), out);
  ITERATE_UNTIL (burrow_compact_dialog_has_estimate (BURROW_COMPACT_DIALOG (dialog)));
  save (dialog, dir, "6-compact-copy.png");

  burrow_compact_dialog_set_step_delay (BURROW_COMPACT_DIALOG (dialog),
                                        BURROW_CONVERT_STAGE_WRITING, 40000);
  burrow_compact_dialog_set_step_delay (BURROW_COMPACT_DIALOG (dialog),
                                        BURROW_CONVERT_STAGE_COMPARING, 150000);
  g_signal_emit_by_name (gtk_widget_get_template_child (dialog, BURROW_TYPE_COMPACT_DIALOG, "start_button"),
                         "clicked");
  iterate_for (2.5);
  save (dialog, dir, "6-compact-progress.png");
  ITERATE_UNTIL (compact_fraction (dialog, "Measuring the quality…") > 0.4);
  save (dialog, dir, "6-compact-measuring.png");
  ITERATE_UNTIL (g_strcmp0 (dialog_page (dialog), "done") == 0);
  save (dialog, dir, "6-compact-done.png");
  g_signal_emit_by_name (gtk_widget_get_template_child (dialog, BURROW_TYPE_COMPACT_DIALOG, "open_button"),
                         "clicked");
  iterate_for (1.5);
  save (GTK_WIDGET (window), dir, "6-compact-model.png");
  remove_tree (tmp);
}

static void
shoot (const char *dir,
       int         width,
       int         height)
{
  BurrowApplication *app = BURROW_APPLICATION (g_application_get_default ());
  BurrowWindow *window = burrow_window_new (app);

  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  gtk_window_present (GTK_WINDOW (window));
  ITERATE_UNTIL (gtk_widget_get_mapped (GTK_WIDGET (window)));
  iterate_for (0.5);
  save (GTK_WIDGET (window), dir, "0-empty.png");
  {
    g_autofree char *oracle = g_build_filename (BURROW_ORACLES, "kimi_linear", NULL);
    g_autoptr(GFile) folder = g_file_new_for_path (oracle);

    burrow_window_open_model (window, folder);
    iterate_for (1.5);
    save (GTK_WIDGET (window), dir, "0-model.png");
  }
  shoot_compact (window, dir);
  burrow_window_open_demo (window);
  iterate_for (0.05);
  save (GTK_WIDGET (window), dir, "0-loading.png");
  ITERATE_UNTIL (loaded (window));
  save (GTK_WIDGET (window), dir, "1-new-chat.png");

  chat_turn (window, "Once upon a time, a small fox lived at the edge of the forest.");
  chat_turn (window, "What did the fox find in the forest?");
  send (window, "Tell me more about her journey home.");
  iterate_for (0.4);
  save (GTK_WIDGET (window), dir, "2-streaming.png");
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  save (GTK_WIDGET (window), dir, "3-reply.png");

  shoot_dialog (GTK_WIDGET (window), "win.current-chat-settings", BURROW_TYPE_CHAT_SETTINGS_WINDOW,
                dir, "8-chat-settings.png", NULL);
  shoot_dialog (GTK_WIDGET (window), "app.preferences", BURROW_TYPE_PREFERENCES_WINDOW, dir,
                "9-preferences.png", "9-preferences-end.png");

  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL);
  save (GTK_WIDGET (window), dir, "4-performance.png");
  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL);

  adw_style_manager_set_color_scheme (adw_style_manager_get_default (), ADW_COLOR_SCHEME_FORCE_DARK);
  save (GTK_WIDGET (window), dir, "7-dark.png");
  adw_style_manager_set_color_scheme (adw_style_manager_get_default (), ADW_COLOR_SCHEME_DEFAULT);

  /* Narrowing past the sidebar hides the panel; in one jump the window would stop at
   * the width the panel needs, so close it first as the fold would. */
  gtk_widget_activate_action (GTK_WIDGET (window), "win.toggle-panel", NULL);
  gtk_window_set_default_size (GTK_WINDOW (window), 390, height);
  iterate_for (1.0);
  save (GTK_WIDGET (window), dir, "5-narrow.png");

  gtk_window_destroy (GTK_WINDOW (window));
  shoot_markdown (dir);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(BurrowApplication) app = NULL;
  g_autoptr(GError) error = NULL;

  if (argc < 2 || !gtk_init_check ())
    {
      g_printerr ("usage: %s OUT_DIR [WIDTH HEIGHT] (needs a display)\n", argv[0]);
      return 2;
    }
  g_mkdir_with_parents (argv[1], 0755);
  burrow_application_bind_translations (BURROW_BUILD_LOCALEDIR);

  app = burrow_application_new (G_APPLICATION_NON_UNIQUE);
  if (!g_application_register (G_APPLICATION (app), NULL, &error))
    g_error ("%s", error->message);
  g_application_set_default (G_APPLICATION (app));

  shoot (argv[1], argc > 3 ? atoi (argv[2]) : 1280, argc > 3 ? atoi (argv[3]) : 800);
  return 0;
}
