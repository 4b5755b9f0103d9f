/* Screenshots of the real app for the metainfo and for looking at the result as a user
 * would: runs the window through a first run on the demo model, a streamed reply, the
 * performance page, and a narrow width, saving PNGs. Not a test; run by hand under Xvfb:
 *   take-screenshots OUT_DIR [WIDTH HEIGHT] */
#include "burrow-config.h"

#include <glib/gstdio.h>

#include "burrow-chat-view.h"
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

static void
shoot (const char *dir,
       int         width,
       int         height)
{
  BurrowApplication *app = BURROW_APPLICATION (g_application_get_default ());
  BurrowWindow *window = burrow_window_new (app);

  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  gtk_window_present (GTK_WINDOW (window));
  burrow_window_open_demo (window);
  ITERATE_UNTIL (loaded (window));
  save (GTK_WIDGET (window), dir, "1-new-chat.png");

  send (window, "Once upon a time, a small fox lived at the edge of the forest.");
  iterate_for (2.5);
  save (GTK_WIDGET (window), dir, "2-streaming.png");
  ITERATE_UNTIL (!burrow_window_get_generating (window));
  save (GTK_WIDGET (window), dir, "3-reply.png");

  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL);
  save (GTK_WIDGET (window), dir, "4-performance.png");
  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-performance", NULL);

  gtk_window_set_default_size (GTK_WINDOW (window), 390, height);
  iterate_for (1.0);
  save (GTK_WIDGET (window), dir, "5-narrow.png");

  gtk_window_destroy (GTK_WINDOW (window));
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

  app = burrow_application_new (G_APPLICATION_NON_UNIQUE);
  if (!g_application_register (G_APPLICATION (app), NULL, &error))
    g_error ("%s", error->message);
  g_application_set_default (G_APPLICATION (app));

  shoot (argv[1], argc > 3 ? atoi (argv[2]) : 1280, argc > 3 ? atoi (argv[3]) : 800);
  return 0;
}
