/* The start page's models already on this computer: what Ollama, LM Studio and the Hugging
 * Face cache keep (burrow_find_local_models, on a thread: it reads their headers), each
 * with its family, size and whether Burrow runs it. A runnable one opens where it is. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-window-private.h"

static void
find_thread (GTask        *task,
             gpointer      source,
             gpointer      data,
             GCancellable *cancellable)
{
  g_task_return_pointer (task, burrow_find_local_models (), (GDestroyNotify) g_ptr_array_unref);
}

static GtkWidget *
create_row (const BurrowLocalModel *m)
{
  GtkWidget *row = adw_action_row_new ();
  g_autofree char *size = g_format_size (m->size);
  const char *family = m->family != NULL ? burrow_family_display_name (m->family)
                                         : m->architecture;
  const char *source = burrow_local_source_name (m->source);
  g_autofree char *subtitle = NULL;

  if (m->runnable)
    /* Translators: a model found on this computer: the program that keeps it (Ollama,
     * LM Studio, Hugging Face), its family, its size on disk */
    subtitle = g_strdup_printf (_("%s · %s · %s"), source, family, size);
  else
    /* Translators: a model Burrow cannot run: the program that keeps it, its size on disk,
     * and why Burrow cannot run it */
    subtitle = g_strdup_printf (_("%s · %s · Cannot run: %s"), source, size, m->why_not);

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), m->name);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
  gtk_widget_set_tooltip_text (row, m->path);
  if (m->runnable)
    {
      GtkWidget *arrow = gtk_image_new_from_icon_name ("go-next-symbolic");

      gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);
      gtk_actionable_set_action_name (GTK_ACTIONABLE (row), "win.open-recent");
      gtk_actionable_set_action_target (GTK_ACTIONABLE (row), "s", m->path);
      adw_action_row_add_suffix (ADW_ACTION_ROW (row), arrow);
    }
  else
    gtk_widget_add_css_class (row, "dim-label");
  return row;
}

static void
on_found (GObject      *source,
          GAsyncResult *result,
          gpointer      user_data)
{
  g_autoptr(GPtrArray) models = g_task_propagate_pointer (G_TASK (result), NULL);
  BurrowWindow *self;

  if (models == NULL || g_task_had_error (G_TASK (result)))
    return;   /* cancelled: the window is gone */
  self = BURROW_WINDOW (source);
  g_clear_object (&self->local_cancellable);
  for (guint i = 0; i < models->len; i++)
    gtk_list_box_append (self->local_list, create_row (models->pdata[i]));
  gtk_widget_set_visible (GTK_WIDGET (self->local_group), models->len > 0);
}

void
_burrow_window_find_local_models (BurrowWindow *self)
{
  g_autoptr(GTask) task = NULL;

  self->local_cancellable = g_cancellable_new ();
  task = g_task_new (self, self->local_cancellable, on_found, NULL);
  g_task_set_return_on_cancel (task, TRUE);
  g_task_run_in_thread (task, find_thread);
}

void
_burrow_window_local_dispose (BurrowWindow *self)
{
  g_cancellable_cancel (self->local_cancellable);
  g_clear_object (&self->local_cancellable);
}
