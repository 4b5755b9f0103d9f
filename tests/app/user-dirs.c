#include "user-dirs.h"

#include <glib/gstdio.h>

#include "tmp-dir.h"

char *
app_test_isolate_user_dirs (const char *prefix)
{
  g_autofree char *tmpl = g_strconcat (prefix, "-XXXXXX", NULL);
  char *root = bw_test_tmp_dir (tmpl);
  const char *vars[] = { "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME" };

  for (guint i = 0; i < G_N_ELEMENTS (vars); i++)
    {
      g_autofree char *dir = g_build_filename (root, vars[i], NULL);

      g_mkdir_with_parents (dir, 0700);
      g_setenv (vars[i], dir, TRUE);
    }
  return root;
}
