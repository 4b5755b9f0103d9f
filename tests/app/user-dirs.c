#include "user-dirs.h"

#include <glib/gstdio.h>

char *
app_test_isolate_user_dirs (const char *prefix)
{
  g_autofree char *tmpl = g_strconcat (prefix, "-XXXXXX", NULL);
  char *root = g_dir_make_tmp (tmpl, NULL);
  const char *vars[] = { "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME" };

  g_assert_nonnull (root);
  for (guint i = 0; i < G_N_ELEMENTS (vars); i++)
    {
      g_autofree char *dir = g_build_filename (root, vars[i], NULL);

      g_mkdir_with_parents (dir, 0700);
      g_setenv (vars[i], dir, TRUE);
    }
  return root;
}

void
app_test_remove_tree (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
        app_test_remove_tree (path);
      else
        g_unlink (path);
    }
  g_clear_pointer (&d, g_dir_close);
  g_rmdir (dir);
}
