/* The app tests' lookups of what a page shows: a row by its title, and the numeric value
 * label inside it. */
#pragma once

#include <adwaita.h>

/* The first AdwActionRow under root titled title (only a mapped one when mapped_only). */
static inline GtkWidget *
test_find_row (GtkWidget  *root,
               const char *title,
               gboolean    mapped_only)
{
  for (GtkWidget *w = gtk_widget_get_first_child (root); w; w = gtk_widget_get_next_sibling (w))
    {
      GtkWidget *found;

      if (ADW_IS_ACTION_ROW (w) && (!mapped_only || gtk_widget_get_mapped (w)) &&
          g_strcmp0 (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (w)), title) == 0)
        return w;
      if ((found = test_find_row (w, title, mapped_only)) != NULL)
        return found;
    }
  return NULL;
}

/* The first label with the "numeric" style class under root. */
static inline GtkWidget *
test_find_value_label (GtkWidget *root)
{
  for (GtkWidget *w = gtk_widget_get_first_child (root); w; w = gtk_widget_get_next_sibling (w))
    {
      GtkWidget *found;

      if (GTK_IS_LABEL (w) && gtk_widget_has_css_class (w, "numeric"))
        return w;
      if ((found = test_find_value_label (w)) != NULL)
        return found;
    }
  return NULL;
}
