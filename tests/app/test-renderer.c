/* The renderer the app asks GTK for: cairo when there is no DRM render node (OpenGL would be
 * software rendering on the CPU, which decoding needs), GTK's own choice when there is. */
#include <glib/gstdio.h>

#include "tmp-dir.h"
#include "burrow-application.h"

static void
test_pick (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = bw_test_tmp_dir ("burrow-dri-XXXXXX");
  g_autofree char *card = NULL, *node = NULL, *missing = NULL;

  g_assert_no_error (error);
  /* no such folder (no DRM at all), and an empty one */
  missing = g_build_filename (dir, "missing", NULL);
  g_assert_cmpstr (burrow_application_pick_renderer (missing), ==, "cairo");
  g_assert_cmpstr (burrow_application_pick_renderer (dir), ==, "cairo");
  /* a display-only card is not a render node */
  card = g_build_filename (dir, "card0", NULL);
  g_assert_true (g_file_set_contents (card, "", 0, NULL));
  g_assert_cmpstr (burrow_application_pick_renderer (dir), ==, "cairo");
  node = g_build_filename (dir, "renderD128", NULL);
  g_assert_true (g_file_set_contents (node, "", 0, NULL));
  g_assert_null (burrow_application_pick_renderer (dir));

  g_remove (node);
  g_remove (card);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/renderer/pick", test_pick);
  return g_test_run ();
}
