#include "burrow-config.h"

#include "burrow-demo.h"

gboolean
burrow_is_demo_model (const char *dir)
{
  g_autofree char *demo = burrow_demo_model_dir ();

  return demo != NULL && dir != NULL && g_str_equal (demo, dir);
}
