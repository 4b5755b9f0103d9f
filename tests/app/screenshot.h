/* The app tests' screenshots: with BURROW_SCREENSHOT_DIR set, a widget (a window or a part
 * of one) as drawn, saved there as a PNG for a person to look at; without it, nothing. */
#pragma once

#include <gtk/gtk.h>

static inline void
app_test_save_screenshot (GtkWidget  *widget,
                          const char *name)
{
  const char *dir = g_getenv ("BURROW_SCREENSHOT_DIR");
  g_autoptr(GdkPaintable) paintable = NULL;
  g_autoptr(GtkSnapshot) snapshot = NULL;
  g_autoptr(GskRenderNode) node = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  g_autofree char *path = NULL;
  int w = gtk_widget_get_width (widget), h = gtk_widget_get_height (widget);

  if (dir == NULL)
    return;
  /* A few frames, so that what was just shown is drawn. */
  for (gint64 end = g_get_monotonic_time () + G_USEC_PER_SEC / 2; g_get_monotonic_time () < end;)
    if (!g_main_context_iteration (NULL, FALSE))
      g_usleep (1000);
  paintable = gtk_widget_paintable_new (widget);
  snapshot = gtk_snapshot_new ();
  gdk_paintable_snapshot (paintable, GDK_SNAPSHOT (snapshot), w, h);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  if (node == NULL)
    {
      g_test_message ("%s: nothing drawn yet, no screenshot", name);
      return;
    }
  texture = gsk_renderer_render_texture (gtk_native_get_renderer (gtk_widget_get_native (widget)),
                                         node, &GRAPHENE_RECT_INIT (0, 0, w, h));
  path = g_build_filename (dir, name, NULL);
  g_assert_true (gdk_texture_save_to_png (texture, path));
  g_print ("# saved %s\n", path);
}
