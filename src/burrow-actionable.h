/* Giving a button another action and target at once: set one after the other, the old
 * action with the new target (or the other way round) would not match, and GTK warns. */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* @target may be NULL (an action without a parameter); a floating one is sunk. */
void burrow_actionable_set (GtkActionable *actionable,
                            const char    *action,
                            GVariant      *target);

G_END_DECLS
