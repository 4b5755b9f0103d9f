/* The window's actions: what its buttons, menu items and shortcuts do. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-window-private.h"

static void
on_chooser_response (BurrowWindow         *self,
                     int                   response,
                     GtkFileChooserNative *chooser)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) folder = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser));

      if (folder != NULL)
        burrow_window_open_model (self, folder);
    }

  gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (chooser));
  if (self->chooser == chooser)
    g_clear_object (&self->chooser);
}

static void
open_model_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);

  if (self->chooser != NULL)
    {
      gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
      return;
    }

  self->chooser = gtk_file_chooser_native_new (_("Open Model Folder"), GTK_WINDOW (self),
                                               GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                               _("_Open"), _("_Cancel"));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);

  /* Start next to the last model: checkpoints usually sit side by side. */
  if (recent[0] != NULL)
    {
      g_autoptr(GFile) last = g_file_new_for_path (recent[0]);
      g_autoptr(GFile) parent = g_file_get_parent (last);

      if (parent != NULL)
        gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (self->chooser), parent, NULL);
    }

  g_signal_connect_object (self->chooser, "response",
                           G_CALLBACK (on_chooser_response), self, G_CONNECT_SWAPPED);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->chooser));
}

static void
open_recent_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  g_autoptr(GFile) folder = g_file_new_for_path (g_variant_get_string (param, NULL));

  burrow_window_open_model (BURROW_WINDOW (widget), folder);
}

static void
remove_recent_action (GtkWidget  *widget,
                      const char *action_name,
                      GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  burrow_settings_remove_recent_model (self->settings, g_variant_get_string (param, NULL));
}

void
_burrow_window_class_actions_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "win.open-model", NULL, open_model_action);
  gtk_widget_class_install_action (widget_class, "win.open-recent", "s", open_recent_action);
  gtk_widget_class_install_action (widget_class, "win.remove-recent", "s", remove_recent_action);

  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_o, GDK_CONTROL_MASK,
                                       "win.open-model", NULL);
}
