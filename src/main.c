#include "burrow-config.h"

#include "burrow-application.h"

int
main (int   argc,
      char *argv[])
{
  g_autoptr(BurrowApplication) app = NULL;

  burrow_application_bind_translations (BURROW_LOCALEDIR);

  if (g_getenv ("GSK_RENDERER") == NULL)
    {
      const char *renderer = burrow_application_pick_renderer ("/dev/dri");
      if (renderer != NULL)
        g_setenv ("GSK_RENDERER", renderer, FALSE);
    }

  app = burrow_application_new (G_APPLICATION_DEFAULT_FLAGS);

  return g_application_run (G_APPLICATION (app), argc, argv);
}
