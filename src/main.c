#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-application.h"

int
main (int   argc,
      char *argv[])
{
  g_autoptr(BurrowApplication) app = NULL;

  bindtextdomain (GETTEXT_PACKAGE, BURROW_LOCALEDIR);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  textdomain (GETTEXT_PACKAGE);

  if (g_getenv ("GSK_RENDERER") == NULL)
    {
      const char *renderer = burrow_application_pick_renderer ("/dev/dri");
      if (renderer != NULL)
        g_setenv ("GSK_RENDERER", renderer, FALSE);
    }

  app = burrow_application_new (G_APPLICATION_DEFAULT_FLAGS);

  return g_application_run (G_APPLICATION (app), argc, argv);
}
