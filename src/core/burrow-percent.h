/* Percentages as the user's language writes them ("66%", "66 %", "%66"): the one place
 * the app puts a number and a percent sign together. No GTK. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* @share (0.66 for 66 percent) with @digits after the point, translated. */
char *burrow_percent_text (double share,
                           int    digits);

G_END_DECLS
