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

/* The chooser for a model folder, or for a GGUF file (a split set opens from any part). */
static void
show_model_chooser (BurrowWindow *self,
                    gboolean      gguf)
{
  g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);

  if (self->chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);

  self->chooser = gtk_file_chooser_native_new (gguf ? _("Open GGUF Model") : _("Open Model Folder"),
                                               GTK_WINDOW (self),
                                               gguf ? GTK_FILE_CHOOSER_ACTION_OPEN
                                                    : GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                                               _("_Open"), _("_Cancel"));
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->chooser), TRUE);
  if (gguf)
    {
      g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();

      gtk_file_filter_set_name (filter, _("GGUF Models"));
      gtk_file_filter_add_pattern (filter, "*.gguf");
      gtk_file_filter_add_mime_type (filter, "application/x-gguf");
      gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (self->chooser), filter);
    }

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
open_model_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *param)
{
  show_model_chooser (BURROW_WINDOW (widget), FALSE);
}

static void
open_gguf_action (GtkWidget  *widget,
                  const char *action_name,
                  GVariant   *param)
{
  show_model_chooser (BURROW_WINDOW (widget), TRUE);
}

static void
on_tokenizer_chooser_response (BurrowWindow         *self,
                               int                   response,
                               GtkFileChooserNative *chooser)
{
  const char *dir = g_object_get_data (G_OBJECT (chooser), "model-dir");

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (chooser));
      g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;

      if (path != NULL)
        _burrow_window_set_model_tokenizer (self, dir, path);
    }

  gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (chooser));
  if (self->tokenizer_chooser == chooser)
    g_clear_object (&self->tokenizer_chooser);
}

/* A file chooser for the tokenizer of the model folder @dir. */
static void
choose_tokenizer_for (BurrowWindow *self,
                      const char   *dir)
{
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  g_autoptr(GFile) folder = NULL;

  if (self->tokenizer_chooser != NULL)
    {
      gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->tokenizer_chooser));
      g_clear_object (&self->tokenizer_chooser);
    }

  self->tokenizer_chooser = gtk_file_chooser_native_new (_("Choose Tokenizer File"), GTK_WINDOW (self),
                                                         GTK_FILE_CHOOSER_ACTION_OPEN,
                                                         _("_Choose"), _("_Cancel"));
  g_object_set_data_full (G_OBJECT (self->tokenizer_chooser), "model-dir", g_strdup (dir), g_free);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (self->tokenizer_chooser), TRUE);
  gtk_file_filter_set_name (filter, _("Tokenizers (tokenizer.json, tiktoken.model)"));
  gtk_file_filter_add_pattern (filter, "*.json");
  gtk_file_filter_add_pattern (filter, "*.model");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (self->tokenizer_chooser), filter);
  /* The tokenizer usually sits beside the model, in the folder the weights came from. */
  folder = g_file_new_for_path (dir);
  gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (self->tokenizer_chooser), folder, NULL);
  g_signal_connect_object (self->tokenizer_chooser, "response",
                           G_CALLBACK (on_tokenizer_chooser_response), self, G_CONNECT_SWAPPED);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (self->tokenizer_chooser));
}

static void
choose_tokenizer_action (GtkWidget  *widget,
                         const char *action_name,
                         GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  if (self->inspect_dir != NULL)
    choose_tokenizer_for (self, self->inspect_dir);
}

/* The open chat's model failed to load with the tokenizer chosen for it. */
static void
choose_chat_tokenizer_action (GtkWidget  *widget,
                              const char *action_name,
                              GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  if (self->chat != NULL)
    choose_tokenizer_for (self, burrow_chat_get_model_dir (self->chat));
}

/* The open chat's model failed to load with the chat template chosen for it: back to the
 * model's own, and load again. */
static void
reset_chat_template_action (GtkWidget  *widget,
                            const char *action_name,
                            GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  const char *dir;

  if (self->chat == NULL)
    return;
  dir = burrow_chat_get_model_dir (self->chat);
  burrow_settings_set_model_template (self->settings, dir, NULL);
  burrow_session_load_model (self->session, dir);
}

/* The open chat's model again, also after a failed load (a server that was down). */
static void
reload_chat_model_action (GtkWidget  *widget,
                          const char *action_name,
                          GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  if (self->chat != NULL)
    burrow_session_load_model (self->session, burrow_chat_get_model_dir (self->chat));
}

static void
open_recent_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  const char *dir = g_variant_get_string (param, NULL);
  g_autoptr(GFile) folder = NULL;

  /* A model on a server has no folder to show: its chat starts at once. */
  if (burrow_remote_model_id_parse (dir, NULL, NULL))
    {
      _burrow_window_start_chat (BURROW_WINDOW (widget), dir);
      return;
    }
  folder = g_file_new_for_path (dir);
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

static void
open_demo_action (GtkWidget  *widget,
                  const char *action_name,
                  GVariant   *param)
{
  burrow_window_open_demo (BURROW_WINDOW (widget));
}

static void
start_chat_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  if (self->inspect_dir != NULL && self->inspect_has_tokenizer)
    _burrow_window_start_chat (self, self->inspect_dir);
}

static void
compact_copy_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *param)
{
  _burrow_window_compact_copy (BURROW_WINDOW (widget));
}

static void
load_chat_model_action (GtkWidget  *widget,
                        const char *action_name,
                        GVariant   *param)
{
  _burrow_window_ensure_chat_model (BURROW_WINDOW (widget));
}

/* A chat with the model chosen in the menu beside New Chat: a folder, or a server's. */
static void
new_chat_with_action (GtkWidget  *widget,
                      const char *action_name,
                      GVariant   *param)
{
  _burrow_window_start_chat (BURROW_WINDOW (widget), g_variant_get_string (param, NULL));
}

static void
cancel_load_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  burrow_session_cancel_load (BURROW_WINDOW (widget)->session);
}

static void
new_chat_action (GtkWidget  *widget,
                 const char *action_name,
                 GVariant   *param)
{
  _burrow_window_new_chat (BURROW_WINDOW (widget), NULL);
}

static BurrowChat *
chat_for_param (BurrowWindow *self,
                GVariant     *param)
{
  if (param == NULL)
    return self->chat;
  return burrow_chat_store_find_chat (self->store, g_variant_get_int64 (param));
}

static void
select_chat_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  BurrowChat *chat = chat_for_param (self, param);

  if (chat == NULL)
    return;
  _burrow_window_select_chat (self, chat);
  _burrow_window_ensure_chat_model (self);
}

static void
rename_chat_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  BurrowChat *chat = chat_for_param (self, param);

  if (chat != NULL)
    _burrow_window_rename_chat (self, chat);
}

static void
chat_settings_action (GtkWidget  *widget,
                      const char *action_name,
                      GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  BurrowChat *chat = chat_for_param (self, param);

  if (chat != NULL)
    _burrow_window_chat_settings (self, chat);
}

static void
delete_chat_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  BurrowChat *chat = chat_for_param (self, param);

  if (chat != NULL)
    _burrow_window_trash_chat (self, chat);
}

static void
export_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  BurrowChat *chat = chat_for_param (self, param);

  if (chat != NULL)
    _burrow_window_export_chat (self, chat, g_str_equal (action_name, "win.export-json"));
}

static void
import_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *param)
{
  _burrow_window_import_chat (BURROW_WINDOW (widget));
}

static void
undo_delete_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  _burrow_window_undo_trash (BURROW_WINDOW (widget), g_variant_get_int64 (param));
}

static void
send_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *param)
{
  _burrow_window_send (BURROW_WINDOW (widget));
}

static void
stop_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *param)
{
  burrow_session_stop (BURROW_WINDOW (widget)->session);
}

static void
regenerate_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *param)
{
  _burrow_window_regenerate (BURROW_WINDOW (widget));
}

static void
edit_message_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *param)
{
  _burrow_window_edit_message (BURROW_WINDOW (widget), g_variant_get_uint32 (param));
}

static void
cancel_edit_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *param)
{
  _burrow_window_cancel_edit (BURROW_WINDOW (widget));
}

static void
error_details_action (GtkWidget  *widget,
                      const char *action_name,
                      GVariant   *param)
{
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (widget), _("Error Details"),
                                              g_variant_get_string (param, NULL));

  adw_message_dialog_add_response (ADW_MESSAGE_DIALOG (dialog), "close", _("_Close"));
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
copy_text_action (GtkWidget  *widget,
                  const char *action_name,
                  GVariant   *param)
{
  gdk_clipboard_set_text (gtk_widget_get_clipboard (widget), g_variant_get_string (param, NULL));
  _burrow_window_toast (BURROW_WINDOW (widget), _("Copied"));
}

static void
copy_last_reply_action (GtkWidget  *widget,
                        const char *action_name,
                        GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  guint n = g_list_model_get_n_items (self->messages);

  for (guint i = n; i > 0; i--)
    {
      g_autoptr(BurrowChatMessage) m = g_list_model_get_item (self->messages, i - 1);

      if (burrow_chat_message_get_role (m) == BURROW_ROLE_ASSISTANT)
        {
          gtk_widget_activate_action (widget, "win.copy-text", "s",
                                      burrow_chat_message_get_content (m));
          return;
        }
    }
}

static void
show_performance_action (GtkWidget  *widget,
                         const char *action_name,
                         GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);
  gboolean on_page = g_strcmp0 (adw_view_stack_get_visible_child_name (self->view_stack),
                                "performance") == 0;

  adw_view_stack_set_visible_child_name (self->view_stack, on_page ? "chat" : "performance");
}

static void
toggle_panel_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  gtk_widget_set_visible (GTK_WIDGET (self->panel),
                          !gtk_widget_get_visible (GTK_WIDGET (self->panel)));
}

static void
show_sidebar_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *param)
{
  adw_leaflet_navigate (BURROW_WINDOW (widget)->leaflet, ADW_NAVIGATION_DIRECTION_BACK);
}

static void
focus_composer_action (GtkWidget  *widget,
                       const char *action_name,
                       GVariant   *param)
{
  BurrowWindow *self = BURROW_WINDOW (widget);

  /* from the Performance page too: the composer is on the chat page */
  adw_view_stack_set_visible_child_name (self->view_stack, "chat");
  burrow_chat_view_focus_composer (self->chat_view);
}

static void
show_alternative_action (GtkWidget  *widget,
                         const char *action_name,
                         GVariant   *parameter)
{
  guint index, alternative;

  g_variant_get (parameter, "(uu)", &index, &alternative);
  _burrow_window_show_alternative (BURROW_WINDOW (widget), index, alternative);
}

static void
search_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  _burrow_window_search (BURROW_WINDOW (widget));
}

void
_burrow_window_class_actions_init (GtkWidgetClass *widget_class)
{
  const struct {
    const char *name;
    const char *type;
    GtkWidgetActionActivateFunc activate;
  } actions[] = {
    { "win.open-model", NULL, open_model_action },
    { "win.open-gguf", NULL, open_gguf_action },
    { "win.open-recent", "s", open_recent_action },
    { "win.remove-recent", "s", remove_recent_action },
    { "win.open-demo", NULL, open_demo_action },
    { "win.start-chat", NULL, start_chat_action },
    { "win.compact-copy", NULL, compact_copy_action },
    { "win.choose-tokenizer", NULL, choose_tokenizer_action },
    { "win.load-chat-model", NULL, load_chat_model_action },
    { "win.reload-chat-model", NULL, reload_chat_model_action },
    { "win.reset-chat-template", NULL, reset_chat_template_action },
    { "win.choose-chat-tokenizer", NULL, choose_chat_tokenizer_action },
    { "win.cancel-load", NULL, cancel_load_action },
    { "win.new-chat", NULL, new_chat_action },
    { "win.new-chat-with", "s", new_chat_with_action },
    { "win.select-chat", "x", select_chat_action },
    { "win.rename-chat", "x", rename_chat_action },
    { "win.delete-chat", "x", delete_chat_action },
    { "win.export-markdown", "x", export_action },
    { "win.export-json", "x", export_action },
    { "win.import-chat", NULL, import_action },
    { "win.rename-current", NULL, rename_chat_action },
    { "win.chat-settings", "x", chat_settings_action },
    { "win.current-chat-settings", NULL, chat_settings_action },
    { "win.delete-current", NULL, delete_chat_action },
    { "win.undo-delete", "x", undo_delete_action },
    { "win.send", NULL, send_action },
    { "win.stop", NULL, stop_action },
    { "win.regenerate", NULL, regenerate_action },
    { "win.edit-message", "u", edit_message_action },
    { "win.cancel-edit", NULL, cancel_edit_action },
    { "win.copy-text", "s", copy_text_action },
    { "win.error-details", "s", error_details_action },
    { "win.copy-last-reply", NULL, copy_last_reply_action },
    { "win.show-performance", NULL, show_performance_action },
    { "win.toggle-panel", NULL, toggle_panel_action },
    { "win.show-sidebar", NULL, show_sidebar_action },
    { "win.focus-composer", NULL, focus_composer_action },
    { "win.search", NULL, search_action },
    { "win.show-alternative", "(uu)", show_alternative_action },
  };
  /* Ctrl+O and Ctrl+N are the application's accelerators (burrow-application.c), which
   * menus show; they are not bound here a second time. */
  const struct {
    guint key;
    GdkModifierType mods;
    const char *action;
  } bindings[] = {
    { GDK_KEY_Escape, 0, "win.stop" },
    { GDK_KEY_r, GDK_CONTROL_MASK, "win.regenerate" },
    { GDK_KEY_c, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.copy-last-reply" },
    { GDK_KEY_F2, 0, "win.rename-current" },
    { GDK_KEY_i, GDK_CONTROL_MASK, "win.current-chat-settings" },
    { GDK_KEY_Delete, GDK_CONTROL_MASK, "win.delete-current" },
    { GDK_KEY_F9, 0, "win.toggle-panel" },
    { GDK_KEY_p, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "win.show-performance" },
    { GDK_KEY_l, GDK_CONTROL_MASK, "win.focus-composer" },
    { GDK_KEY_k, GDK_CONTROL_MASK, "win.search" },
    { GDK_KEY_f, GDK_CONTROL_MASK, "win.search" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (actions); i++)
    gtk_widget_class_install_action (widget_class, actions[i].name, actions[i].type,
                                     actions[i].activate);
  for (guint i = 0; i < G_N_ELEMENTS (bindings); i++)
    gtk_widget_class_add_binding_action (widget_class, bindings[i].key, bindings[i].mods,
                                         bindings[i].action, NULL);
}
