#include "burrow-config.h"

#include "burrow-toast.h"

AdwToast *
burrow_toast_new (const char *text)
{
  g_autofree char *escaped = g_markup_escape_text (text, -1);

  return adw_toast_new (escaped);
}
