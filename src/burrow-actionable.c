#include "burrow-config.h"

#include "burrow-actionable.h"

void
burrow_actionable_set (GtkActionable *actionable,
                       const char    *action,
                       GVariant      *target)
{
  gtk_actionable_set_action_name (actionable, NULL);
  gtk_actionable_set_action_target_value (actionable, target);
  gtk_actionable_set_action_name (actionable, action);
}
