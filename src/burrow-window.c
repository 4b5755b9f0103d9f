#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-window-private.h"

G_DEFINE_FINAL_TYPE (BurrowWindow, burrow_window, ADW_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_SETTINGS,
  PROP_WORKER,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
show_page (BurrowWindow *self,
           const char   *name)
{
  gtk_spinner_set_spinning (self->loading_spinner, g_str_equal (name, "loading"));
  gtk_stack_set_visible_child_name (self->stack, name);
}

static void
on_inspected (GObject            *owner,
              BurrowWorkerResult *result,
              gpointer            user_data)
{
  BurrowWindow *self = BURROW_WINDOW (owner);
  const BurrowModelInfo *info = result->data;
  g_autofree char *name = NULL;

  /* Only the newest request is not cancelled; older ones have nothing left to show. */
  if (!result->done || g_error_matches (result->error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  g_clear_object (&self->inspect_cancellable);

  if (result->error != NULL)
    {
      g_autofree char *markup = g_markup_escape_text (result->error->message, -1);

      adw_status_page_set_description (self->error_page, markup);
      show_page (self, "error");
      return;
    }

  name = g_path_get_basename (self->inspect_dir);
  burrow_model_view_set_info (self->model_view, info);
  adw_window_title_set_subtitle (self->window_title, name);
  burrow_settings_add_recent_model (self->settings, self->inspect_dir);
  show_page (self, "model");
}

void
burrow_window_open_model (BurrowWindow *self,
                          GFile        *folder)
{
  g_autofree char *path = NULL;
  g_autofree char *markup = NULL;

  g_return_if_fail (BURROW_IS_WINDOW (self));
  g_return_if_fail (G_IS_FILE (folder));

  path = g_file_get_path (folder);
  if (path == NULL)
    {
      adw_status_page_set_description (self->error_page,
                                       _("Burrow can only read model folders stored on this computer."));
      show_page (self, "error");
      return;
    }

  g_cancellable_cancel (self->inspect_cancellable);
  g_clear_object (&self->inspect_cancellable);
  self->inspect_cancellable = g_cancellable_new ();
  g_free (self->inspect_dir);
  self->inspect_dir = g_strdup (path);

  markup = g_markup_escape_text (path, -1);
  adw_status_page_set_description (self->loading_page, markup);
  adw_window_title_set_subtitle (self->window_title, NULL);
  show_page (self, "loading");

  burrow_engine_worker_inspect (self->worker, path, self->inspect_cancellable,
                                G_OBJECT (self), on_inspected, NULL);
}

static GtkWidget *
create_recent_row (const char *dir)
{
  g_autofree char *name = g_path_get_basename (dir);
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *remove = gtk_button_new_from_icon_name ("edit-delete-symbolic");
  GVariant *target = g_variant_new_string (dir);

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), name);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), dir);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (row), "win.open-recent");
  gtk_actionable_set_action_target_value (GTK_ACTIONABLE (row), target);

  gtk_widget_set_valign (remove, GTK_ALIGN_CENTER);
  gtk_widget_add_css_class (remove, "flat");
  gtk_widget_set_tooltip_text (remove, _("Remove From Recent Models"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (remove),
                                  GTK_ACCESSIBLE_PROPERTY_LABEL, _("Remove From Recent Models"),
                                  -1);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (remove), "win.remove-recent");
  gtk_actionable_set_action_target_value (GTK_ACTIONABLE (remove), target);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), remove);

  return row;
}

static void
update_recent_models (BurrowWindow *self)
{
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->recent_list))) != NULL)
    gtk_list_box_remove (self->recent_list, child);

  for (guint i = 0; recent[i] != NULL; i++)
    gtk_list_box_append (self->recent_list, create_recent_row (recent[i]));

  gtk_widget_set_visible (GTK_WIDGET (self->recent_group), recent[0] != NULL);
}

static gboolean
burrow_window_close_request (GtkWindow *window)
{
  BurrowWindow *self = BURROW_WINDOW (window);

  if (!gtk_window_is_maximized (window))
    {
      int width, height;

      gtk_window_get_default_size (window, &width, &height);
      g_object_set (self->settings, "window-width", width, "window-height", height, NULL);
    }

  return GTK_WINDOW_CLASS (burrow_window_parent_class)->close_request (window);
}

static void
burrow_window_constructed (GObject *object)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  G_OBJECT_CLASS (burrow_window_parent_class)->constructed (object);

  g_return_if_fail (self->settings != NULL && self->worker != NULL);

  g_object_bind_property (self->settings, "window-width", self, "default-width",
                          G_BINDING_SYNC_CREATE);
  g_object_bind_property (self->settings, "window-height", self, "default-height",
                          G_BINDING_SYNC_CREATE);
  g_object_bind_property (self->settings, "window-maximized", self, "maximized",
                          G_BINDING_SYNC_CREATE | G_BINDING_BIDIRECTIONAL);

  g_signal_connect_object (self->settings, "notify::recent-models",
                           G_CALLBACK (update_recent_models), self, G_CONNECT_SWAPPED);
  update_recent_models (self);
}

static void
burrow_window_dispose (GObject *object)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  g_cancellable_cancel (self->inspect_cancellable);
  g_clear_object (&self->inspect_cancellable);
  if (self->chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);
  g_clear_object (&self->settings);
  g_clear_object (&self->worker);
  g_clear_pointer (&self->inspect_dir, g_free);

  G_OBJECT_CLASS (burrow_window_parent_class)->dispose (object);
}

static void
burrow_window_get_property (GObject    *object,
                            guint       prop_id,
                            GValue     *value,
                            GParamSpec *pspec)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  switch (prop_id)
    {
    case PROP_SETTINGS:
      g_value_set_object (value, self->settings);
      break;
    case PROP_WORKER:
      g_value_set_object (value, self->worker);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_window_set_property (GObject      *object,
                            guint         prop_id,
                            const GValue *value,
                            GParamSpec   *pspec)
{
  BurrowWindow *self = BURROW_WINDOW (object);

  switch (prop_id)
    {
    case PROP_SETTINGS:
      self->settings = g_value_dup_object (value);
      break;
    case PROP_WORKER:
      self->worker = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_window_class_init (BurrowWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->constructed = burrow_window_constructed;
  object_class->dispose = burrow_window_dispose;
  object_class->get_property = burrow_window_get_property;
  object_class->set_property = burrow_window_set_property;
  window_class->close_request = burrow_window_close_request;

  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, BURROW_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_WORKER] =
    g_param_spec_object ("worker", NULL, NULL, BURROW_TYPE_ENGINE_WORKER,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  g_type_ensure (BURROW_TYPE_MODEL_VIEW);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-window.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, window_title);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, stack);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, empty_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, recent_group);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, recent_list);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, loading_page);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, loading_spinner);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, model_view);
  gtk_widget_class_bind_template_child (widget_class, BurrowWindow, error_page);

  _burrow_window_class_actions_init (widget_class);
}

static void
burrow_window_init (BurrowWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

BurrowWindow *
burrow_window_new (BurrowApplication *application)
{
  g_return_val_if_fail (BURROW_IS_APPLICATION (application), NULL);

  return g_object_new (BURROW_TYPE_WINDOW,
                       "application", application,
                       "settings", burrow_application_get_settings (application),
                       "worker", burrow_application_get_worker (application),
                       NULL);
}
