/* A one-line label for numbers that change several times a second. Unlike GtkLabel it
 * asks for a new size only when its text outgrows the width it has (rounded up), so a
 * ticking value redraws without a relayout of everything around it. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define BURROW_TYPE_VALUE_LABEL (burrow_value_label_get_type ())
G_DECLARE_FINAL_TYPE (BurrowValueLabel, burrow_value_label, BURROW, VALUE_LABEL, GtkWidget)

GtkWidget *burrow_value_label_new (void);
const char *burrow_value_label_get_text (BurrowValueLabel *self);
void burrow_value_label_set_text (BurrowValueLabel *self,
                                  const char       *text);

G_END_DECLS
