#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-chat-settings-window.h"
#include "burrow-engine.h"
#include "burrow-remote-backend.h"
#include "burrow-spin-text.h"
#include "burrow-toast.h"

struct _BurrowChatSettingsWindow {
  AdwPreferencesWindow parent_instance;

  BurrowChat *chat;
  BurrowSettings *defaults;
  gboolean syncing;             /* the fields are being filled from the chat */

  AdwActionRow *model_row;
  AdwActionRow *template_row;
  GtkButton *choose_template_button;
  GtkButton *reset_template_button;
  GtkFileChooserNative *template_chooser;
  gboolean template_changed;
  GtkTextView *system_prompt_view;
  GtkButton *defaults_button;
  GtkSpinButton *temperature_spin;
  GtkSpinButton *top_p_spin;
  GtkSpinButton *top_k_spin;
  GtkSpinButton *min_p_spin;
  GtkSpinButton *repetition_penalty_spin;
  GtkSpinButton *max_tokens_spin;
  GtkSpinButton *seed_spin;
};

G_DEFINE_FINAL_TYPE (BurrowChatSettingsWindow, burrow_chat_settings_window,
                     ADW_TYPE_PREFERENCES_WINDOW)

/* Which template builds this model's prompts: the file chosen here, else the checkpoint's
 * own, else the family's built-in format. */
static void
show_template (BurrowChatSettingsWindow *self)
{
  const char *dir = burrow_chat_get_model_dir (self->chat);
  g_autofree char *chosen = NULL;
  g_autofree char *own = NULL;
  g_autofree char *subtitle = NULL;

  /* A model on a server: the server builds its prompts with its own template. */
  gtk_widget_set_visible (GTK_WIDGET (self->template_row),
                          !burrow_remote_model_id_parse (dir, NULL, NULL));
  if (dir[0] != '\0')
    chosen = burrow_settings_dup_model_template (self->defaults, dir);
  if (chosen != NULL)
    /* Translators: the chat template file the user chose instead of the model's own */
    subtitle = g_strdup_printf (_("Chosen: %s"), chosen);
  else if (dir[0] != '\0' && (own = burrow_chat_template_find (dir)) != NULL)
    /* Translators: the model folder's own chat template file */
    subtitle = g_strdup_printf (_("The model's own: %s"), own);
  else
    subtitle = g_strdup (_("The built-in format of the model's family"));
  adw_action_row_set_subtitle (self->template_row, subtitle);
  gtk_widget_set_visible (GTK_WIDGET (self->reset_template_button), chosen != NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->choose_template_button), dir[0] != '\0');
}

void
burrow_chat_settings_window_choose_template_file (BurrowChatSettingsWindow *self,
                                                  GFile                    *file)
{
  const char *dir;
  g_autofree char *path = NULL;
  g_autoptr(GError) error = NULL;

  g_return_if_fail (BURROW_IS_CHAT_SETTINGS_WINDOW (self));

  dir = burrow_chat_get_model_dir (self->chat);
  if (dir[0] == '\0')
    return;
  path = file ? g_file_get_path (file) : NULL;
  /* Checked now, not at the next load: a template that does not parse is not kept. */
  if (path != NULL && !burrow_check_chat_template (path, &error))
    {
      /* Translators: the engine's own words on why a chosen file is not a chat template */
      g_autofree char *text = g_strdup_printf (_("Not a chat template Burrow can use: %s"),
                                               error->message);

      adw_preferences_window_add_toast (ADW_PREFERENCES_WINDOW (self), burrow_toast_new (text));
      return;
    }
  burrow_settings_set_model_template (self->defaults, dir, path);
  self->template_changed = TRUE;
  show_template (self);
}

static void
on_template_chooser_response (BurrowChatSettingsWindow *self,
                              int                       response,
                              GtkFileChooserNative     *chooser)
{
  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser));

      if (file != NULL)
        burrow_chat_settings_window_choose_template_file (self, file);
    }
  g_clear_object (&self->template_chooser);
}

static void
on_choose_template (BurrowChatSettingsWindow *self)
{
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  g_autoptr(GFile) folder = NULL;
  const char *dir = burrow_chat_get_model_dir (self->chat);

  if (self->template_chooser != NULL)
    {
      gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->template_chooser));
      return;
    }
  self->template_chooser = gtk_file_chooser_native_new (_("Choose Chat Template"), GTK_WINDOW (self),
                                                        GTK_FILE_CHOOSER_ACTION_OPEN, _("_Open"),
                                                        _("_Cancel"));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->template_chooser), TRUE);
  gtk_file_filter_set_name (filter, _("Jinja chat templates (*.jinja, *.j2)"));
  gtk_file_filter_add_pattern (filter, "*.jinja");
  gtk_file_filter_add_pattern (filter, "*.j2");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (self->template_chooser), filter);
  if (dir[0] != '\0')
    {
      folder = g_file_new_for_path (dir);
      gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (self->template_chooser), folder, NULL);
    }
  g_signal_connect_object (self->template_chooser, "response",
                           G_CALLBACK (on_template_chooser_response), self, G_CONNECT_SWAPPED);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->template_chooser));
}

static void
on_reset_template (BurrowChatSettingsWindow *self)
{
  burrow_chat_settings_window_choose_template_file (self, NULL);
}

gboolean
burrow_chat_settings_window_get_template_changed (BurrowChatSettingsWindow *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_SETTINGS_WINDOW (self), FALSE);
  return self->template_changed;
}

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
  gtk_spin_button_set_value (self->min_p_spin, sampling.min_p);
  gtk_spin_button_set_value (self->repetition_penalty_spin,
                             sampling.repetition_penalty > 0 ? sampling.repetition_penalty : 1);
  gtk_spin_button_set_value (self->max_tokens_spin, sampling.max_tokens);
  gtk_spin_button_set_value (self->seed_spin, (double) MAX (sampling.seed, 0));
  show_template (self);
  self->syncing = FALSE;
}

static void
on_sampling_changed (BurrowChatSettingsWindow *self)
{
  BurrowSampling sampling;

  if (self->syncing)
    return;
  burrow_sampling_init (&sampling);
  sampling.temperature = gtk_spin_button_get_value (self->temperature_spin);
  sampling.top_p = gtk_spin_button_get_value (self->top_p_spin);
  sampling.top_k = (guint) MAX (gtk_spin_button_get_value_as_int (self->top_k_spin), 0);
  sampling.min_p = gtk_spin_button_get_value (self->min_p_spin);
  sampling.repetition_penalty = gtk_spin_button_get_value (self->repetition_penalty_spin);
  sampling.max_tokens = (guint) MAX (gtk_spin_button_get_value_as_int (self->max_tokens_spin), 0);
  sampling.seed = (gint64) MAX (gtk_spin_button_get_value (self->seed_spin), 0);
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

  burrow_sampling_init (&sampling);
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

  if (self->template_chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->template_chooser));
  g_clear_object (&self->template_chooser);
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
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, template_row);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, choose_template_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, reset_template_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, system_prompt_view);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, defaults_button);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, temperature_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, top_p_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, top_k_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, min_p_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, repetition_penalty_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, max_tokens_spin);
  gtk_widget_class_bind_template_child (widget_class, BurrowChatSettingsWindow, seed_spin);
}

static void
burrow_chat_settings_window_init (BurrowChatSettingsWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  /* Translators: a reply's length left to Burrow (2,048 tokens) */
  burrow_spin_text_init (self->max_tokens_spin, _("Automatic"), NULL);
  /* Translators: a new sampling seed for every reply */
  burrow_spin_text_init (self->seed_spin, _("Random"), NULL);
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
  {
    GtkSpinButton *spins[] = { self->top_k_spin, self->min_p_spin, self->repetition_penalty_spin,
                               self->max_tokens_spin, self->seed_spin };

    for (guint i = 0; i < G_N_ELEMENTS (spins); i++)
      g_signal_connect_object (spins[i], "value-changed", G_CALLBACK (on_sampling_changed), self,
                               G_CONNECT_SWAPPED);
  }
  g_signal_connect_object (self->defaults_button, "clicked",
                           G_CALLBACK (on_use_defaults), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->choose_template_button, "clicked",
                           G_CALLBACK (on_choose_template), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->reset_template_button, "clicked",
                           G_CALLBACK (on_reset_template), self, G_CONNECT_SWAPPED);
  return GTK_WIDGET (self);
}

BurrowChat *
burrow_chat_settings_window_get_chat (BurrowChatSettingsWindow *self)
{
  g_return_val_if_fail (BURROW_IS_CHAT_SETTINGS_WINDOW (self), NULL);
  return self->chat;
}
