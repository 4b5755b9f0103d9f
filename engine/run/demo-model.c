/* burrow_demo_model_dir: where the bundled demo model is, for burrow-cli and the app alike. */
#include "burrow-engine.h"

#include "burrow-config.h"

static gboolean
has_config (const char *dir)
{
  g_autofree char *config = g_build_filename (dir, "config.json", NULL);
  return g_file_test (config, G_FILE_TEST_IS_REGULAR);
}

char *
burrow_demo_model_dir (void)
{
  const char *env = g_getenv ("BURROW_DEMO_MODEL");
  g_autofree char *installed = g_build_filename (BURROW_PKGDATADIR, "demo-model", NULL);
  g_autofree char *source = g_build_filename (BURROW_SOURCE_DIR, "data", "demo-model", NULL);

  if (env != NULL && env[0] != '\0')
    return has_config (env) ? g_strdup (env) : NULL;
  if (has_config (installed))
    return g_steal_pointer (&installed);
  if (has_config (source))
    return g_steal_pointer (&source);
  return NULL;
}
