#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-chat-settings-window.h"
#include "burrow-remote-backend.h"

struct _BurrowChatSettingsWindow {
  AdwPreferencesWindow parent_instance;

  BurrowChat *chat;
  BurrowSettings *defaults;
  gboolean syncing;             /* the fields are being filled from the chat */

  AdwActionRow *model_row;
  GtkTextView *system_prompt_view;
  GtkButton *defaults_button;
  GtkSpinButton *temperature_spin;
  GtkSpinButton *top_p_spin;
  GtkSpinButton *top_k_spin;
};

G_DEFINE_FINAL_TYPE (BurrowChatSettingsWindow, burrow_chat_settings_window,
                     ADW_TYPE_PREFERENCES_WINDOW)

/* The fields say what the chat holds. */
static void
fill_from_chat (BurrowChatSettingsWindow *self)
{
  const char *dir = burrow_chat_get_model_dir (self->chat);
  g_autofree char *name = burrow_model_display_name (dir);
  BurrowSampling sampling;

  self->syncing = TRUE;
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (self->model_row), name);
  adw_action_row_set_subtitle (self->model_row, dir);
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->system_prompt_view),
                            burrow_chat_get_system_prompt (self->chat), -1);
  burrow_chat_get_sampling (self->chat, &sampling);
  gtk_spin_button_set_value (self->temperature_spin, sampling.temperature);
  gtk_spin_button_set_value (self->top_p_spin, sampling.top_p);
  gtk_spin_button_set_value (self->top_k_spin, sampling.top_k);
  self->syncing = FALSE;
}

static void
on_sampling_changed (BurrowChatSettingsWindow *self)
{
  BurrowSampling sampling;

  if (self->syncing)
    return;
  sampling.temperature = gtk_spin_button_get_value (self->temperature_spin);
  sampling.top_p = gtk_spin_button_get_value (self->top_p_spin);
  sampling.top_k = (guint) MAX (gtk_spin_button_get_value_as_int (self->top_k_spin), 0);
  burrow_chat_set_sampling (self->chat, &sampling);
}

static void
on_prompt_changed (BurrowChatSettingsWindow *self,
                   GtkTextBuffer            *buffer)
{
  g_autofree char *text = NULL;
  GtkTextIter start, end;

  if (self->syncing)
    return;
  gtk_text_buffer_get_bounds (buffer, &start, &end);
  text = gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
  burrow_chat_set_system_prompt (self->chat, text);
}

static void
on_use_defaults (BurrowChatSettingsWindow *self)
{
  g_autofree char *prompt = NULL;
  BurrowSampling sampling;

  g_object_get (self->defaults,
                "temperature", &sampling.temperature,
                "top-p", &sampling.top_p,
                "top-k", &sampling.top_k,
                "system-prompt", &prompt,
                NULL);
  burrow_chat_set_sampling (self->chat, &sampling);
  burrow_chat_set_system_prompt (self->chat, prompt);
  fill_from_chat (self);
}

static void
burrow_chat_settings_window_dispose (GObject *object)
{
  BurrowChatSettingsWindow *self = BURROW_CHAT_SETTINGS_WINDOW (object);

  g_clear_object (&self->chat);
  g_clear_object (&self->defaults);

  G_OBJECT_CLASS (burrow_chat_settings_window_parent_class)->dispose (object);
}

static void
burrow_chat_settings_window_class_init (BurrowChatSettingsWindowClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->dispose = burrow_chat_settings_window_dispose;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/burrow/Burrow/burrow-chat-settings-window.ui");
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, model_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, system_prompt_view);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, defaults_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, temperature_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, top_p_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, top_k_spin);
}

static void
burrow_chat_settings_window_init (BurrowChatSettingsWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

GtkWidget *
burrow_chat_settings_window_new (BurrowChat     *chat,
                                 BurrowSettings *defaults)
{
  BurrowChatSettingsWindow *self;

  g_return_val_if_fail (BURROW_IS_CHAT (chat), NULL);
  g_return_val_if_fail (BURROW_IS_SETTINGS (defaults), NULL);

  self = g_object_new (BURROW_TYPE_CHAT_SETTINGS_WINDOW, NULL);
  self->chat = g_object_ref (chat);
  self->defaults = g_object_ref (defaults);
  fill_from_chat (self);

  g_signal_connect_object (gtk_text_view_get_buffer (self->system_prompt_view), "changed",
                           G_CALLBACK (on_prompt_changed), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->temperature_spin, "value-changed",
                           G_CALLBACK (on_sampling_changed), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->top_p_spin, "value-changed",
                           G_CALLBACK (on_sampling_changed), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->top_k_spin, "value-changed",
                           G_CALLBACK (on_sampling_changed), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->defaults_button, "clicked",
                           G_CALLBACK (on_use_defaults), self, G_CONNECT_SWAPPED);
  return GTK_WIDGET (self);
}

BurrowChat *
burrow_chat_settings_window_get_chat (BurrowChatSettingsWindow *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_SETTINGS_WINDOW (self), NULL);
  return self->chat;
}
