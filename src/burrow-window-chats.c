/* The window's conversations: the sidebar list, switching, new chats, rename, delete with
 * undo, and a turn: send, stream the reply in, stop, regenerate, edit and resend. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-chat-settings-window.h"
#include "burrow-window-private.h"

/* Longest reply a turn asks for. */
#define MAX_REPLY_TOKENS 2048
/* Seconds between dashboard snapshots while a reply streams in. */
#define SNAPSHOT_INTERVAL 0.2

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
  g_autofree char *model = g_path_get_basename (burrow_chat_get_model_dir (chat));
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
  GtkWidget *menu_button = gtk_menu_button_new ();
  g_autoptr(GMenu) menu = g_menu_new ();
  g_autoptr(GMenuItem) rename = g_menu_item_new (_("_Rename…"), NULL);
  g_autoptr(GMenuItem) settings = g_menu_item_new (_("Chat _Settings…"), NULL);
  g_autoptr(GMenuItem) delete = g_menu_item_new (_("_Delete"), NULL);
  gint64 id = burrow_chat_get_id (chat);

  gtk_label_set_xalign (GTK_LABEL (title), 0);
  gtk_label_set_ellipsize (GTK_LABEL (title), PANGO_ELLIPSIZE_END);
  gtk_label_set_xalign (GTK_LABEL (subtitle), 0);
  gtk_label_set_ellipsize (GTK_LABEL (subtitle), PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class (subtitle, "caption");
  gtk_widget_add_css_class (subtitle, "dim-label");
  gtk_widget_set_hexpand (labels, TRUE);
  gtk_box_append (GTK_BOX (labels), title);
  gtk_box_append (GTK_BOX (labels), subtitle);
  g_object_bind_property_full (chat, "title", title, "label", G_BINDING_SYNC_CREATE,
                               title_or_default, NULL, NULL, NULL);
  g_object_bind_property_full (chat, "updated", subtitle, "label", G_BINDING_SYNC_CREATE,
                               model_and_time, NULL, NULL, NULL);

  g_menu_item_set_action_and_target (rename, "win.rename-chat", "x", id);
  g_menu_item_set_action_and_target (delete, "win.delete-chat", "x", id);
  g_menu_item_set_action_and_target (settings, "win.chat-settings", "x", id);
  g_menu_append_item (menu, rename);
  g_menu_append_item (menu, settings);
  g_menu_append_item (menu, delete);
  gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (menu_button), G_MENU_MODEL (menu));
  gtk_menu_button_set_icon_name (GTK_MENU_BUTTON (menu_button), "view-more-symbolic");
  gtk_widget_add_css_class (menu_button, "flat");
  gtk_widget_set_valign (menu_button, GTK_ALIGN_CENTER);
  gtk_widget_set_tooltip_text (menu_button, _("Chat Menu"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (menu_button), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Chat Menu"), -1);

  gtk_box_append (GTK_BOX (box), labels);
  gtk_box_append (GTK_BOX (box), menu_button);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  g_object_set_data_full (G_OBJECT (row), "chat", g_object_ref (chat), g_object_unref);
  return row;
}

/* Highlights the open chat's row (rows are rebuilt when the list reorders). */
static void
sync_selection (BurrowWindow *self)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->store));

  gtk_stack_set_visible_child_name (self->sidebar_stack, n > 0 ? "chats" : "no-chats");
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(BurrowChat) chat = g_list_model_get_item (G_LIST_MODEL (self->store), i);

      if (chat == self->chat)
        {
          gtk_list_box_select_row (self->chat_list, gtk_list_box_get_row_at_index (self->chat_list, (int) i));
          return;
        }
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

  gtk_list_box_bind_model (self->chat_list, G_LIST_MODEL (self->store), create_chat_row, NULL, NULL);
  g_signal_connect_object (self->store, "items-changed", G_CALLBACK (sync_selection), self,
                           G_CONNECT_SWAPPED | G_CONNECT_AFTER);
  g_signal_connect_object (self->chat_list, "row-activated", G_CALLBACK (on_row_activated), self,
                           G_CONNECT_SWAPPED);
  burrow_chat_view_set_messages (self->chat_view, G_LIST_MODEL (self->messages));

  /* Back where the last session left off, its model loading (as after a click on it). */
  latest = g_list_model_get_item (G_LIST_MODEL (self->store), 0);
  if (latest != NULL)
    {
      _burrow_window_select_chat (self, latest);
      _burrow_window_ensure_chat_model (self);
    }
  sync_selection (self);
}

/* ---- switching and creating ---- */

void
_burrow_window_select_chat (BurrowWindow *self,
                            BurrowChat   *chat)
{
  g_autoptr(GPtrArray) messages = NULL;
  g_autoptr(GError) error = NULL;

  if (chat == self->chat && chat != NULL)
    {
      _burrow_window_show_page (self, "chat");
      return;
    }

  _burrow_window_stop (self);
  _burrow_window_cancel_edit (self);
  g_set_object (&self->chat, chat);

  if (chat != NULL)
    {
      messages = burrow_chat_store_load_messages (self->store, chat, &error);
      if (messages == NULL)
        _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
    }
  g_list_store_splice (self->messages, 0, g_list_model_get_n_items (G_LIST_MODEL (self->messages)),
                       messages ? messages->pdata : NULL, messages ? messages->len : 0);
  burrow_chat_view_scroll_to_bottom (self->chat_view);

  sync_selection (self);
  _burrow_window_update_model_bar (self);
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

      model_dir = self->loaded_dir;
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
  if (self->chat != NULL && g_list_model_get_n_items (G_LIST_MODEL (self->messages)) == 0 &&
      g_strcmp0 (burrow_chat_get_model_dir (self->chat), model_dir) == 0)
    {
      chat = self->chat;
    }
  else
    {
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

  _burrow_window_select_chat (self, chat);
  _burrow_window_ensure_chat_model (self);
  adw_leaflet_navigate (self->leaflet, ADW_NAVIGATION_DIRECTION_FORWARD);
  adw_view_stack_set_visible_child_name (self->view_stack, "chat");
  burrow_chat_view_focus_composer (self->chat_view);
  return chat;
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

  if (!g_str_equal (response, "rename"))
    return;
  burrow_chat_set_title (chat, gtk_editable_get_text (entry));
  if (!burrow_chat_store_save_chat (self->store, chat, &error))
    _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
  _burrow_window_update_state (self);
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
  gtk_window_present (GTK_WINDOW (dialog));
}

/* ---- a chat's own settings ---- */

static gboolean
on_chat_settings_close (BurrowWindow             *self,
                        BurrowChatSettingsWindow *dialog)
{
  g_autoptr(GError) error = NULL;

  BurrowChat *chat = burrow_chat_settings_window_get_chat (dialog);
  const char *dir = burrow_chat_get_model_dir (chat);

  if (!burrow_chat_store_save_chat (self->store, chat, &error))
    _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
  /* Another chat template for the model in use: it takes effect on loading again. */
  if (burrow_chat_settings_window_get_template_changed (dialog) &&
      (g_strcmp0 (dir, self->loaded_dir) == 0 || g_strcmp0 (dir, self->loading_dir) == 0))
    _burrow_window_load_model (self, dir);
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

  if (chat == self->reply_chat)
    _burrow_window_stop (self);
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
  self->undo_toast = adw_toast_new (text);
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

/* The dashboard follows at most three times a second, however many tokens came in, on a
 * timer rather than a per-frame tick so that idle frames cost nothing. */
static void
queue_monitor_flush (BurrowWindow *self)
{
  if (!gtk_widget_get_mapped (GTK_WIDGET (self)))
    burrow_perf_monitor_flush (self->monitor);
  else
    burrow_perf_monitor_flush_later (self->monitor);
}

static void
reply_stats_from_turn (const BurrowTurnStats *turn,
                       int                    n_tokens,
                       BurrowFinishReason     finish,
                       BurrowReplyStats      *out)
{
  out->n_tokens = MAX (n_tokens, turn->generated_tokens);
  out->tokens_per_second = turn->decode_tokens_per_second;
  out->ttft_seconds = turn->ttft_seconds;
  out->finish = finish;
}

/* The reply is over (done, stopped or failed): keep it if it says anything. */
static void
finish_reply (BurrowWindow           *self,
              const BurrowReplyStats *stats,
              const GError           *error)
{
  g_autoptr(BurrowChatMessage) reply = g_steal_pointer (&self->reply);
  g_autoptr(BurrowChat) chat = g_steal_pointer (&self->reply_chat);
  g_autoptr(GError) save_error = NULL;
  gboolean empty;
  guint pos;

  g_clear_object (&self->generate_cancellable);
  self->generate_id = 0;
  if (reply == NULL)
    return;

  burrow_chat_message_set_stats (reply, stats);
  burrow_chat_message_set_streaming (reply, FALSE);
  empty = burrow_chat_message_get_content (reply)[0] == '\0' &&
          burrow_chat_message_get_reasoning (reply)[0] == '\0';
  if (empty)
    {
      if (chat == self->chat && g_list_store_find (self->messages, reply, &pos))
        g_list_store_remove (self->messages, pos);
    }
  else if (!burrow_chat_store_add_message (self->store, chat, reply, &save_error))
    _burrow_window_toast_error (self, save_error, _("Your chats could not be saved or read."));

  if (error != NULL && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    _burrow_window_toast_error (self, error, _("The reply stopped because of an error."));
  queue_monitor_flush (self);
  _burrow_window_update_state (self);
}

static void
on_generated (GObject            *owner,
              BurrowWorkerResult *result,
              gpointer            user_data)
{
  BurrowWindow *self = BURROW_WINDOW (owner);

  /* A stopped reply was finished when Stop was pressed. */
  if (result->request_id != self->generate_id)
    return;

  if (!result->done)
    {
      BurrowGenerateUpdate *update = result->data;

      burrow_chat_message_append (self->reply, update->answer, update->reasoning);
      if (update->has_token)
        {
          self->reply_tokens = update->n_tokens;
          burrow_perf_monitor_add_token (self->monitor, &update->sample);
        }
      if (update->snapshot != NULL)
        burrow_perf_monitor_add_snapshot (self->monitor, g_steal_pointer (&update->snapshot));
      queue_monitor_flush (self);
      return;
    }

  if (result->error == NULL)
    {
      BurrowGenerateResult *generated = result->data;
      BurrowReplyStats stats;

      reply_stats_from_turn (&generated->stats, self->reply_tokens, generated->stats.finish, &stats);
      if (generated->snapshot != NULL)
        burrow_perf_monitor_add_snapshot (self->monitor, g_steal_pointer (&generated->snapshot));
      finish_reply (self, &stats, NULL);
    }
  else
    {
      const BurrowPerfSnapshot *s = burrow_perf_monitor_get_snapshot (self->monitor);
      BurrowTurnStats none = { 0 };
      BurrowReplyStats stats;

      reply_stats_from_turn (s ? &s->turn : &none, self->reply_tokens, BURROW_FINISH_ERROR, &stats);
      finish_reply (self, &stats, result->error);
    }
}

static void
start_reply (BurrowWindow *self)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->messages));
  BurrowGenerateRequest *request;
  BurrowGenerateOptions *options;
  BurrowSampling sampling;

  request = burrow_generate_request_new (burrow_chat_get_id (self->chat),
                                         burrow_chat_get_session_path (self->chat),
                                         burrow_chat_get_system_prompt (self->chat));
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(BurrowChatMessage) m = g_list_model_get_item (G_LIST_MODEL (self->messages), i);

      burrow_generate_request_add_message (request, burrow_chat_message_get_role (m),
                                           burrow_chat_message_get_content (m),
                                           burrow_chat_message_get_reasoning (m));
    }

  burrow_chat_get_sampling (self->chat, &sampling);
  options = burrow_generate_request_get_options (request);
  options->max_tokens = MAX_REPLY_TOKENS;
  options->temperature = (float) sampling.temperature;
  options->top_p = (float) sampling.top_p;
  options->top_k = (int) sampling.top_k;
  options->seed = g_random_int ();
  /* Families that can reason do; the reasoning shows folded above the answer. */
  options->thinking = self->supports_thinking;
  burrow_generate_request_set_snapshot_interval (request, SNAPSHOT_INTERVAL);

  self->reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "");
  burrow_chat_message_set_streaming (self->reply, TRUE);
  self->reply_chat = g_object_ref (self->chat);
  self->reply_tokens = 0;
  g_list_store_append (self->messages, self->reply);

  self->generate_cancellable = g_cancellable_new ();
  self->generate_id = burrow_engine_worker_generate (self->worker, request,
                                                     self->generate_cancellable,
                                                     G_OBJECT (self), on_generated, NULL);

  /* The panel shows while the model works, where there is room for it beside the chat. */
  if (!adw_leaflet_get_folded (self->leaflet))
    gtk_widget_set_visible (GTK_WIDGET (self->panel), TRUE);
  burrow_chat_view_scroll_to_bottom (self->chat_view);
  _burrow_window_update_state (self);
}

void
_burrow_window_send (BurrowWindow *self)
{
  g_autofree char *draft = burrow_chat_view_dup_draft (self->chat_view);
  g_autoptr(BurrowChatMessage) message = NULL;
  g_autoptr(GError) error = NULL;
  char *text = g_strstrip (draft);

  int editing = burrow_chat_view_get_editing (self->chat_view);

  if (_burrow_window_is_generating (self) || self->chat == NULL || text[0] == '\0' ||
      g_strcmp0 (burrow_chat_get_model_dir (self->chat), self->loaded_dir) != 0 ||
      self->loading_dir != NULL)
    return;

  /* An edited message replaces the original and what followed it, only now. */
  if (editing >= 0)
    {
      guint n = g_list_model_get_n_items (G_LIST_MODEL (self->messages));

      if (!burrow_chat_store_truncate (self->store, self->chat, (guint) editing, &error))
        {
          _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
          return;
        }
      g_list_store_splice (self->messages, (guint) editing, n - (guint) editing, NULL, 0);
      burrow_chat_view_set_editing (self->chat_view, -1);
      g_clear_pointer (&self->draft_before_edit, g_free);
    }

  message = burrow_chat_message_new (BURROW_ROLE_USER, text);
  if (!burrow_chat_store_add_message (self->store, self->chat, message, &error))
    {
      _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
      return;
    }
  g_list_store_append (self->messages, message);
  burrow_chat_view_set_draft (self->chat_view, "");

  if (burrow_chat_get_title (self->chat)[0] == '\0')
    {
      g_autofree char *title = burrow_chat_title_from_text (text, 40);

      burrow_chat_set_title (self->chat, title);
      if (!burrow_chat_store_save_chat (self->store, self->chat, &error))
        _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
    }

  start_reply (self);
}

void
_burrow_window_stop (BurrowWindow *self)
{
  const BurrowPerfSnapshot *s;
  BurrowTurnStats none = { 0 };
  BurrowReplyStats stats;

  if (!_burrow_window_is_generating (self))
    return;

  /* The worker stops within a layer's time; the reply is final from here. */
  g_cancellable_cancel (self->generate_cancellable);
  s = burrow_perf_monitor_get_snapshot (self->monitor);
  reply_stats_from_turn (s ? &s->turn : &none, self->reply_tokens, BURROW_FINISH_CANCELLED, &stats);
  finish_reply (self, &stats, NULL);
}

void
_burrow_window_regenerate (BurrowWindow *self)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->messages));
  g_autoptr(BurrowChatMessage) last = n > 0 ? g_list_model_get_item (G_LIST_MODEL (self->messages), n - 1) : NULL;
  g_autoptr(GError) error = NULL;

  if (_burrow_window_is_generating (self) || last == NULL ||
      burrow_chat_message_get_role (last) != BURROW_ROLE_ASSISTANT)
    return;
  _burrow_window_cancel_edit (self);

  if (!burrow_chat_store_truncate (self->store, self->chat, n - 1, &error))
    {
      _burrow_window_toast_error (self, error, _("Your chats could not be saved or read."));
      return;
    }
  g_list_store_remove (self->messages, n - 1);
  start_reply (self);
}

void
_burrow_window_edit_message (BurrowWindow *self,
                             guint         index)
{
  g_autoptr(BurrowChatMessage) message = NULL;
  guint n = g_list_model_get_n_items (G_LIST_MODEL (self->messages));

  if (_burrow_window_is_generating (self) || index >= n)
    return;
  message = g_list_model_get_item (G_LIST_MODEL (self->messages), index);
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
  if (self->generate_cancellable != NULL)
    g_cancellable_cancel (self->generate_cancellable);
  g_clear_object (&self->generate_cancellable);
  g_clear_object (&self->reply);
  g_clear_object (&self->reply_chat);
  g_clear_pointer (&self->draft_before_edit, g_free);
  empty_trash (self);
  g_clear_object (&self->chat);
  g_clear_object (&self->messages);
}
