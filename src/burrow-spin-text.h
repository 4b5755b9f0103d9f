/* Spin buttons whose 0 means something else ("Automatic", "Random"): the word shows
 * instead of the number, and typing it back works. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Formats a value other than 0 for display, the unit included; NULL: the spin's own. */
typedef char *(*BurrowSpinFormat) (double value);

void burrow_spin_text_init (GtkSpinButton    *spin,
                            const char       *zero_text,
                            BurrowSpinFormat  format);

G_END_DECLS
