/* The window's conversations: the sidebar list, switching, new chats, rename, delete with
 * undo, and the session's turn as this window starts and shows it: send, regenerate, edit
 * and resend. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-chat-settings-window.h"
#include "burrow-toast.h"
#include "burrow-window-private.h"

static void on_reply_started (BurrowWindow      *self,
                              BurrowChat        *chat,
                              BurrowChatMessage *reply);
static void on_session_error (BurrowWindow *self,
                              BurrowChat   *chat,
                              const GError *error,
                              const char   *fallback);

/* ---- the sidebar ---- */

static gboolean
title_or_default (GBinding     *binding,
                  const GValue *from,
                  GValue       *to,
                  gpointer      user_data)
{
  const char *title = g_value_get_string (from);

  g_value_set_string (to, title != NULL && title[0] != '\0' ? title : _("New Chat"));
  return TRUE;
}

static gboolean
model_and_time (GBinding     *binding,
                const GValue *from,
                GValue       *to,
                gpointer      user_data)
{
  BurrowChat *chat = BURROW_CHAT (g_binding_dup_source (binding));
  g_autoptr(GDateTime) when = g_date_time_new_from_unix_local (g_value_get_int64 (from) / G_USEC_PER_SEC);
  g_autoptr(GDateTime) now = g_date_time_new_now_local ();
  g_autofree char *model = burrow_model_display_name (burrow_chat_get_model_dir (chat));
  g_autofree char *time = NULL;

  /* Today shows the time; earlier days the date. */
  if (g_date_time_get_year (when) == g_date_time_get_year (now) &&
      g_date_time_get_day_of_year (when) == g_date_time_get_day_of_year (now))
    time = g_date_time_format (when, "%H:%M");
  else
    time = g_date_time_format (when, "%x");
  g_value_take_string (to, g_strdup_printf ("%s · %s", model, time));
  g_object_unref (chat);
  return TRUE;
}

static GtkWidget *
create_chat_row (gpointer item,
                 gpointer user_data)
{
  BurrowChat *chat = item;
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *labels = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *title = gtk_label_new (NULL);
  GtkWidget *subtitle = gtk_label_new (NULL);
  GtkWidget *snippet = gtk_label_new (NULL);
  GtkWidget *menu_button = gtk_menu_button_new ();
  g_autoptr(GMenu) menu = g_menu_new ();
  g_autoptr(GMenuItem) rename = g_menu_item_new (_("_Rename…"), NULL);
  g_autoptr(GMenuItem) settings = g_menu_item_new (_("Chat _Settings…"), NULL);
  g_autoptr(GMenuItem) export_md = g_menu_item_new (_("Export as _Markdown…"), NULL);
  g_autoptr(GMenuItem) export_json = g_menu_item_new (_("Export as _JSON…"), NULL);
  g_autoptr(GMenuItem) delete = g_menu_item_new (_("_Delete"), NULL);
  gint64 id = burrow_chat_get_id (chat);

  gtk_label_set_xalign (GTK_LABEL (title), 0);
  gtk_label_set_ellipsize (GTK_LABEL (title), PANGO_ELLIPSIZE_END);
  gtk_label_set_xalign (GTK_LABEL (subtitle), 0);
  gtk_label_set_ellipsize (GTK_LABEL (subtitle), PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class (subtitle, "caption");
  gtk_widget_add_css_class (subtitle, "dim-label");
  gtk_widget_set_hexpand (labels, TRUE);
  /* What a search found in the chat's messages. */
  gtk_label_set_xalign (GTK_LABEL (snippet), 0);
  gtk_label_set_ellipsize (GTK_LABEL (snippet), PANGO_ELLIPSIZE_END);
  gtk_label_set_lines (GTK_LABEL (snippet), 2);
  gtk_label_set_wrap (GTK_LABEL (snippet), TRUE);
  gtk_widget_add_css_class (snippet, "caption");
  gtk_widget_set_visible (snippet, FALSE);
  gtk_box_append (GTK_BOX (labels), title);
  gtk_box_append (GTK_BOX (labels), subtitle);
  gtk_box_append (GTK_BOX (labels), snippet);
  g_object_bind_property_full (chat, "title", title, "label", G_BINDING_SYNC_CREATE,
                               title_or_default, NULL, NULL, NULL);
  g_object_bind_property_full (chat, "updated", subtitle, "label", G_BINDING_SYNC_CREATE,
                               model_and_time, NULL, NULL, NULL);

  g_menu_item_set_action_and_target (rename, "win.rename-chat", "x", id);
  g_menu_item_set_action_and_target (delete, "win.delete-chat", "x", id);
  g_menu_item_set_action_and_target (settings, "win.chat-settings", "x", id);
  g_menu_item_set_action_and_target (export_md, "win.export-markdown", "x", id);
  g_menu_item_set_action_and_target (export_json, "win.export-json", "x", id);
  g_menu_append_item (menu, rename);
  g_menu_append_item (menu, settings);
  g_menu_append_item (menu, export_md);
  g_menu_append_item (menu, export_json);
  g_menu_append_item (menu, delete);
  gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (menu_button), G_MENU_MODEL (menu));
  gtk_menu_button_set_icon_name (GTK_MENU_BUTTON (menu_button), "view-more-symbolic");
  gtk_widget_add_css_class (menu_button, "flat");
  gtk_widget_set_valign (menu_button, GTK_ALIGN_CENTER);
  gtk_widget_set_tooltip_text (menu_button, _("Chat Menu"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (menu_button), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Chat Menu"), -1);

  {
    g_autofree char *host = burrow_remote_model_host (burrow_chat_get_model_dir (chat));

    /* A chat whose words leave this computer says so in the list. */
    if (host != NULL)
      {
        GtkWidget *mark = gtk_image_new_from_icon_name ("network-server-symbolic");
        /* Translators: shown on a chat in the list whose model runs on a server; %s is its host */
        g_autofree char *where = g_strdup_printf (_("On the server at %s"), host);

        gtk_widget_set_name (mark, "remote-mark");
        gtk_widget_add_css_class (mark, "dim-label");
        gtk_widget_set_tooltip_text (mark, where);
        gtk_accessible_update_property (GTK_ACCESSIBLE (mark), GTK_ACCESSIBLE_PROPERTY_LABEL, where, -1);
        gtk_box_append (GTK_BOX (box), mark);
      }
  }
  gtk_box_append (GTK_BOX (box), labels);
  gtk_box_append (GTK_BOX (box), menu_button);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  g_object_set_data_full (G_OBJECT (row), "chat", g_object_ref (chat), g_object_unref);
  g_object_set_data (G_OBJECT (row), "snippet", snippet);
  _burrow_window_search_update_row (user_data, GTK_LIST_BOX_ROW (row));
  return row;
}

/* Rows are rebuilt when the list reorders: the highlight is set again each time. */
void
_burrow_window_sync_selection (BurrowWindow *self)
{
  GtkListBoxRow *row;
  gboolean shown = g_strcmp0 (gtk_stack_get_visible_child_name (self->stack), "chat") == 0;

  _burrow_window_search_sync_page (self);
  for (int i = 0; shown && (row = gtk_list_box_get_row_at_index (self->chat_list, i)) != NULL; i++)
    if (g_object_get_data (G_OBJECT (row), "chat") == (gpointer) self->chat)
      {
        gtk_list_box_select_row (self->chat_list, row);
        return;
      }
  gtk_list_box_unselect_all (self->chat_list);
}

static void
on_row_activated (BurrowWindow  *self,
                  GtkListBoxRow *row,
                  GtkListBox    *list)
{
  BurrowChat *chat = g_object_get_data (G_OBJECT (row), "chat");

  _burrow_window_select_chat (self, chat);
  _burrow_window_ensure_chat_model (self);
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
}

void
_burrow_window_chats_init (BurrowWindow *self)
{
  g_autoptr(BurrowChat) latest = NULL;

  self->drafts = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, g_free);
  /* The list shows the store through the search's filter. */
  gtk_list_box_bind_model (self->chat_list, G_LIST_MODEL (self->listed_chats), create_chat_row,
                           self, NULL);
  g_signal_connect_object (self->listed_chats, "items-changed", G_CALLBACK (_burrow_window_sync_selection), self,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);
  g_signal_connect_object (self->chat_list, "row-activated", G_CALLBACK (on_row_activated), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "reply-started", G_CALLBACK (on_reply_started), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "error", G_CALLBACK (on_session_error), self,
                           G_CONNECT_SWAPPED);
  burrow_chat_view_set_messages (self->chat_view, self->messages);

  /* Back where the last session left off, its model loading (as after a click on it). */
  latest = g_list_model_get_item (G_LIST_MODEL (self->store), 0);
  if (latest != NULL)
    {
      _burrow_window_select_chat (self, latest);
      _burrow_window_ensure_chat_model (self);
    }
  _burrow_window_sync_selection (self);
}

/* ---- switching and creating ---- */

/* The open chat's composer text, kept for when it is opened again. */
static void
keep_draft (BurrowWindow *self)
{
  g_autofree char *draft = NULL;
  gint64 id;

  if (self->chat == NULL || self->drafts == NULL)
    return;
  id = burrow_chat_get_id (self->chat);
  draft = burrow_chat_view_dup_draft (self->chat_view);
  if (draft[0] == '\0')
    g_hash_table_remove (self->drafts, &id);
  else
    g_hash_table_insert (self->drafts, g_memdup2 (&id, sizeof id), g_steal_pointer (&draft));
}

void
_burrow_window_select_chat (BurrowWindow *self,
                            BurrowChat   *chat)
{
  g_autoptr(GListModel) messages = NULL;
  g_autoptr(GError) error = NULL;

  if (chat == self->chat && chat != NULL)
    {
      _burrow_window_show_page (self, "chat");
      return;
    }

  _burrow_window_stop_own (self);
  _burrow_window_cancel_edit (self);
  keep_draft (self);
  g_set_object (&self->chat, chat);
  if (chat != self->fresh_chat)
    g_clear_object (&self->fresh_chat);
  {
    gint64 id = chat != NULL ? burrow_chat_get_id (chat) : 0;
    const char *draft = chat != NULL && self->drafts != NULL
                        ? g_hash_table_lookup (self->drafts, &id) : NULL;

    burrow_chat_view_set_draft (self->chat_view, draft);
  }

  if (chat != NULL)
    {
      messages = burrow_session_dup_messages (self->session, chat, &error);
      if (messages == NULL)
        _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
    }
  if (messages == NULL)
    messages = G_LIST_MODEL (g_list_store_new (BURROW_TYPE_CHAT_MESSAGE));
  g_set_object (&self->messages, messages);
  burrow_chat_view_set_messages (self->chat_view, self->messages);

  _burrow_window_sync_selection (self);
  _burrow_window_update_model_bar (self);
  _burrow_window_update_figures (self);
  _burrow_window_show_page (self, chat != NULL ? "chat" : "empty");
}

BurrowChat *
_burrow_window_new_chat (BurrowWindow *self,
                         const char   *model_dir)
{
  g_autofree char *system_prompt = NULL;
  g_autofree char *fallback = NULL;
  g_autoptr(GError) error = NULL;
  BurrowSampling sampling;
  BurrowChat *chat;

  if (model_dir == NULL)
    {
      g_auto(GStrv) recent = burrow_settings_dup_recent_models (self->settings);

      if (burrow_session_get_model_state (self->session) == BURROW_MODEL_LOADED)
        model_dir = burrow_session_get_model_dir (self->session);
      if (model_dir == NULL && self->chat != NULL)
        model_dir = burrow_chat_get_model_dir (self->chat);
      if (model_dir == NULL && recent[0] != NULL)
        model_dir = fallback = g_strdup (recent[0]);
    }
  if (model_dir == NULL || model_dir[0] == '\0')
    {
      _burrow_window_select_chat (self, NULL);
      return NULL;
    }

  /* An untouched new chat with the same model is reused, not stacked up. */
  if (self->chat != NULL && g_list_model_get_n_items (self->messages) == 0 &&
      g_strcmp0 (burrow_chat_get_model_dir (self->chat), model_dir) == 0)
    {
      chat = self->chat;
    }
  else
    {
      burrow_sampling_init (&sampling);
      g_object_get (self->settings,
                    "temperature", &sampling.temperature,
                    "top-p", &sampling.top_p,
                    "top-k", &sampling.top_k,
                    "system-prompt", &system_prompt,
                    NULL);
      chat = burrow_chat_store_create_chat (self->store, model_dir, system_prompt, &sampling, &error);
      if (chat == NULL)
        {
          _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
          return NULL;
        }
    }

  g_set_object (&self->fresh_chat, chat);
  _burrow_window_select_chat (self, chat);
  _burrow_window_ensure_chat_model (self);
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  adw_view_stack_set_visible_child_name (self->view_stack, "chat");
  burrow_chat_view_focus_composer (self->chat_view);
  return chat;
}

void
_burrow_window_drop_failed_chat (BurrowWindow *self)
{
  g_autoptr(BurrowChat) chat = g_steal_pointer (&self->fresh_chat);
  g_autofree char *markup = g_markup_escape_text (burrow_session_get_load_error (self->session), -1);
  const char *details = burrow_session_get_load_error_details (self->session);
  g_autoptr(GError) error = NULL;

  /* Into the trash, which is emptied later: this window's Undo stays with its own chat. */
  if (!burrow_chat_store_trash_chat (self->store, chat, &error))
    {
      _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
      return;
    }
  _burrow_window_select_chat (self, NULL);
  adw_status_page_set_title (self->error_page, _("Could Not Load the Model"));
  adw_status_page_set_description (self->error_page, markup);
  gtk_label_set_text (self->error_details, details != NULL ? details : "");
  gtk_widget_set_visible (GTK_WIDGET (self->error_details_expander), details != NULL);
  gtk_expander_set_expanded (self->error_details_expander, FALSE);
  _burrow_window_show_page (self, "error");
}

/* ---- rename ---- */

static void
on_rename_response (AdwMessageDialog *dialog,
                    const char       *response,
                    BurrowWindow     *self)
{
  BurrowChat *chat = g_object_get_data (G_OBJECT (dialog), "chat");
  GtkEditable *entry = g_object_get_data (G_OBJECT (dialog), "entry");
  g_autoptr(GError) error = NULL;
  g_autofree char *title = g_strstrip (g_strdup (gtk_editable_get_text (entry)));

  if (!g_str_equal (response, "rename") || title[0] == '\0')
    return;
  burrow_chat_set_title (chat, title);
  if (!burrow_chat_store_save_chat (self->store, chat, &error))
    _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
  _burrow_window_update_state (self);
}

/* A name of only spaces is no name: Rename waits for one. */
static void
on_rename_changed (GtkEditable      *entry,
                   AdwMessageDialog *dialog)
{
  g_autofree char *title = g_strstrip (g_strdup (gtk_editable_get_text (entry)));

  adw_message_dialog_set_response_enabled (dialog, "rename", title[0] != '\0');
}

void
_burrow_window_rename_chat (BurrowWindow *self,
                            BurrowChat   *chat)
{
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Rename Chat"), NULL);
  GtkWidget *entry = gtk_entry_new ();

  gtk_editable_set_text (GTK_EDITABLE (entry), burrow_chat_get_title (chat));
  gtk_entry_set_activates_default (GTK_ENTRY (entry), TRUE);
  gtk_accessible_update_property (GTK_ACCESSIBLE (entry), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Chat Name"), -1);
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), entry);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    "cancel", _("_Cancel"),
                                    "rename", _("_Rename"),
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "rename",
                                              ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "rename");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_object_set_data_full (G_OBJECT (dialog), "chat", g_object_ref (chat), g_object_unref);
  g_object_set_data (G_OBJECT (dialog), "entry", entry);
  g_signal_connect_object (dialog, "response", G_CALLBACK (on_rename_response), self, 0);
  g_signal_connect (entry, "changed", G_CALLBACK (on_rename_changed), dialog);
  on_rename_changed (GTK_EDITABLE (entry), ADW_MESSAGE_DIALOG (dialog));
  gtk_window_present (GTK_WINDOW (dialog));
}

/* ---- a chat's own settings ---- */

static gboolean
on_chat_settings_close (BurrowWindow             *self,
                        BurrowChatSettingsWindow *dialog)
{
  BurrowChat *chat = burrow_chat_settings_window_get_chat (dialog);
  const char *dir = burrow_chat_get_model_dir (chat);
  g_autoptr(GError) error = NULL;

  if (!burrow_chat_store_save_chat (self->store, chat, &error))
    _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
  /* Another chat template for the model in use (or that failed to load with the last
   * one): it takes effect on loading again. */
  if (burrow_chat_settings_window_get_template_changed (dialog) &&
      g_strcmp0 (dir, burrow_session_get_model_dir (self->session)) == 0)
    burrow_session_load_model (self->session, dir);
  return FALSE;
}

void
_burrow_window_chat_settings (BurrowWindow *self,
                              BurrowChat   *chat)
{
  GtkWidget *dialog = burrow_chat_settings_window_new (chat, self->settings);

  gtk_window_set_transient_for (GTK_WINDOW (dialog), GTK_WINDOW (self));
  g_signal_connect_object (dialog, "close-request", G_CALLBACK (on_chat_settings_close), self,
                           G_CONNECT_SWAPPED);
  gtk_window_present (GTK_WINDOW (dialog));
}

/* ---- delete with undo ---- */

static void
empty_trash (BurrowWindow *self)
{
  g_autoptr(GError) error = NULL;

  if (self->trashed == NULL)
    return;
  /* Gone for good: so is its draft. */
  if (self->drafts != NULL)
    {
      gint64 id = burrow_chat_get_id (self->trashed);

      g_hash_table_remove (self->drafts, &id);
    }
  g_clear_object (&self->trashed);
  if (!burrow_chat_store_empty_trash (self->store, &error))
    g_warning ("%s", error->message);
}

static void
on_undo_toast_dismissed (BurrowWindow *self,
                         AdwToast     *toast)
{
  if (self->undo_toast != toast)
    return;
  self->undo_toast = NULL;
  empty_trash (self);
}

void
_burrow_window_trash_chat (BurrowWindow *self,
                           BurrowChat   *chat)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  const char *title = burrow_chat_get_title (chat);

  /* One undo at a time: an earlier deletion becomes final now (its toast's Undo names
   * that chat, so it can no longer bring back this one). */
  self->undo_toast = NULL;
  empty_trash (self);

  if (chat == burrow_session_get_reply_chat (self->session))
    burrow_session_stop (self->session);
  self->trashed = g_object_ref (chat);
  if (!burrow_chat_store_trash_chat (self->store, chat, &error))
    {
      g_clear_object (&self->trashed);
      _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
      return;
    }

  if (chat == self->chat)
    {
      g_autoptr(BurrowChat) next = g_list_model_get_item (G_LIST_MODEL (self->store), 0);

      _burrow_window_select_chat (self, next);
    }

  /* Translators: a chat's name */
  text = g_strdup_printf (_("“%s” deleted"), title[0] != '\0' ? title : _("New Chat"));
  self->undo_toast = burrow_toast_new (text);
  adw_toast_set_button_label (self->undo_toast, _("_Undo"));
  adw_toast_set_action_target_value (self->undo_toast,
                                     g_variant_new_int64 (burrow_chat_get_id (chat)));
  adw_toast_set_action_name (self->undo_toast, "win.undo-delete");
  adw_toast_set_priority (self->undo_toast, ADW_TOAST_PRIORITY_HIGH);
  g_signal_connect_object (self->undo_toast, "dismissed", G_CALLBACK (on_undo_toast_dismissed),
                           self, G_CONNECT_SWAPPED);
  adw_toast_overlay_add_toast (self->toast_overlay, self->undo_toast);
}

void
_burrow_window_undo_trash (BurrowWindow *self,
                           gint64        id)
{
  g_autoptr(BurrowChat) chat = NULL;
  g_autoptr(GError) error = NULL;

  if (self->trashed == NULL || burrow_chat_get_id (self->trashed) != id)
    return;
  chat = g_steal_pointer (&self->trashed);
  self->undo_toast = NULL;
  if (!burrow_chat_store_restore_chat (self->store, chat, &error))
    {
      _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
      return;
    }
  _burrow_window_select_chat (self, chat);
}

/* ---- a turn ---- */

static void
on_reply_started (BurrowWindow      *self,
                  BurrowChat        *chat,
                  BurrowChatMessage *reply)
{
  if (chat != self->chat)
    return;
  /* The panel shows while the model works, where there is room for it beside the chat. */
  if (!adw_leaflet_get_folded (self->leaflet))
    gtk_widget_set_visible (GTK_WIDGET (self->panel), TRUE);
  burrow_chat_view_scroll_to_bottom (self->chat_view);
}

static void
on_session_error (BurrowWindow *self,
                  BurrowChat   *chat,
                  const GError *error,
                  const char   *fallback)
{
  if (chat == NULL || chat == self->chat)
    _burrow_window_toast_error (self, error, fallback);
}

/* What went wrong in a turn the window asked for; the session's refusals are the window's
 * own state (its actions are disabled then), not something to tell. */
static void
turn_failed (BurrowWindow *self,
             const GError *error)
{
  if (error->domain != BURROW_TURN_ERROR)
    _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
}

void
_burrow_window_send (BurrowWindow *self)
{
  g_autofree char *draft = burrow_chat_view_dup_draft (self->chat_view);
  g_autoptr(GError) error = NULL;
  char *text = g_strstrip (draft);
  int editing = burrow_chat_view_get_editing (self->chat_view);
  gboolean sent;

  if (self->chat == NULL || text[0] == '\0')
    return;

  /* An edited message replaces the original and what followed it, only now. */
  if (editing >= 0)
    sent = burrow_session_edit (self->session, self->chat, (guint) editing, text, &error);
  else
    sent = burrow_session_send (self->session, self->chat, text, &error);
  if (!sent)
    {
      turn_failed (self, error);
      return;
    }
  if (editing >= 0)
    {
      burrow_chat_view_set_editing (self->chat_view, -1);
      g_clear_pointer (&self->draft_before_edit, g_free);
    }
  burrow_chat_view_set_draft (self->chat_view, "");
}

void
_burrow_window_stop_own (BurrowWindow *self)
{
  if (self->chat != NULL && self->chat == burrow_session_get_reply_chat (self->session))
    burrow_session_stop (self->session);
}

void
_burrow_window_regenerate (BurrowWindow *self)
{
  g_autoptr(GError) error = NULL;

  if (self->chat == NULL || burrow_session_get_generating (self->session))
    return;
  _burrow_window_cancel_edit (self);
  if (!burrow_session_regenerate (self->session, self->chat, &error))
    turn_failed (self, error);
}

void
_burrow_window_show_alternative (BurrowWindow *self,
                                 guint         index,
                                 guint         alternative)
{
  g_autoptr(BurrowChatMessage) message = NULL;
  g_autoptr(GError) error = NULL;

  if (self->messages == NULL || (message = g_list_model_get_item (self->messages, index)) == NULL)
    return;
  if (!burrow_session_show_alternative (self->session, message, alternative, &error))
    turn_failed (self, error);
}

void
_burrow_window_edit_message (BurrowWindow *self,
                             guint         index)
{
  g_autoptr(BurrowChatMessage) message = NULL;
  guint n = g_list_model_get_n_items (self->messages);

  if (burrow_session_get_generating (self->session) || index >= n)
    return;
  message = g_list_model_get_item (self->messages, index);
  if (burrow_chat_message_get_role (message) != BURROW_ROLE_USER)
    return;

  /* Its text waits in the composer; the message and what followed it stay, dimmed, until
   * the edit is sent (Cancel brings back what the composer held). */
  if (burrow_chat_view_get_editing (self->chat_view) < 0)
    self->draft_before_edit = burrow_chat_view_dup_draft (self->chat_view);
  burrow_chat_view_set_editing (self->chat_view, (int) index);
  burrow_chat_view_set_draft (self->chat_view, burrow_chat_message_get_content (message));
  burrow_chat_view_focus_composer (self->chat_view);
  _burrow_window_update_state (self);
}

void
_burrow_window_cancel_edit (BurrowWindow *self)
{
  if (burrow_chat_view_get_editing (self->chat_view) < 0)
    return;
  burrow_chat_view_set_editing (self->chat_view, -1);
  burrow_chat_view_set_draft (self->chat_view, self->draft_before_edit);
  g_clear_pointer (&self->draft_before_edit, g_free);
  _burrow_window_update_state (self);
}

void
_burrow_window_chats_dispose (BurrowWindow *self)
{
  g_clear_pointer (&self->draft_before_edit, g_free);
  g_clear_pointer (&self->drafts, g_hash_table_unref);
  empty_trash (self);
  g_clear_object (&self->fresh_chat);
  g_clear_object (&self->chat);
  g_clear_object (&self->messages);
}
