#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-percent.h"

char *
burrow_percent_text (double share,
                     int    digits)
{
  /* Translators: a percentage, the digits after the point given first; place the sign
   * as your language does, e.g. "%.*f\302\240%%" (with a no-break space) in German or
   * French */
  return g_strdup_printf (_("%.*f%%"), CLAMP (digits, 0, 3), share * 100);
}
