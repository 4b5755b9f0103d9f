/* The app tests' lookups of what a page shows: a row by its title, the numeric value label
 * inside it, a label by its text, a widget by its name, a button by its action, and a
 * window on screen. */
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

/* The first label under @root showing @text (only a mapped one when mapped_only). */
static inline GtkWidget *
test_find_label (GtkWidget  *root,
                 const char *text,
                 gboolean    mapped_only)
{
  for (GtkWidget *c = gtk_widget_get_first_child (root); c != NULL; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *found;

      if (GTK_IS_LABEL (c) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (c)), text) == 0 &&
          (!mapped_only || gtk_widget_get_mapped (c)))
        return c;
      if ((found = test_find_label (c, text, mapped_only)) != NULL)
        return found;
    }
  return NULL;
}

/* @root itself or the first widget under it named @name. */
static inline GtkWidget *
test_find_named (GtkWidget  *root,
                 const char *name)
{
  if (g_strcmp0 (gtk_widget_get_name (root), name) == 0)
    return root;
  for (GtkWidget *c = gtk_widget_get_first_child (root); c != NULL; c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *found = test_find_named (c, name);

      if (found != NULL)
        return found;
    }
  return NULL;
}

/* The first mapped button under @root that activates @action. */
static inline GtkWidget *
test_find_button (GtkWidget  *root,
                  const char *action)
{
  for (GtkWidget *w = gtk_widget_get_first_child (root); w; w = gtk_widget_get_next_sibling (w))
    {
      GtkWidget *found;

      if (GTK_IS_BUTTON (w) && gtk_widget_get_mapped (w) &&
          g_strcmp0 (gtk_actionable_get_action_name (GTK_ACTIONABLE (w)), action) == 0)
        return w;
      if ((found = test_find_button (w, action)) != NULL)
        return found;
    }
  return NULL;
}

/* The visible toplevel window of @type (a class or an interface), or NULL. */
static inline GtkWindow *
test_find_toplevel (GType type)
{
  GListModel *toplevels = gtk_window_get_toplevels ();

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GObject) w = g_list_model_get_item (toplevels, i);

      if (G_TYPE_CHECK_INSTANCE_TYPE (w, type) && gtk_widget_get_visible (GTK_WIDGET (w)))
        return GTK_WINDOW (w);
    }
  return NULL;
}
