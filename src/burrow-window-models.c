/* The window's models: open a folder and show what it holds (inspect), start a chat with
 * it, and show the session's model (loading with progress and Cancel, loaded, failed). */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-actionable.h"
#include "burrow-compact-dialog.h"
#include "burrow-error-text.h"
#include "burrow-window-private.h"

static void
on_inspected (GObject            *owner,
              BurrowWorkerResult *result,
              gpointer            user_data)
{
  BurrowWindow *self = BURROW_WINDOW (owner);
  const BurrowInspectResult *inspected = result->data;
  const BurrowModelInfo *info = inspected != NULL ? &inspected->info : NULL;

  /* Only the newest request is not cancelled; older ones have nothing left to show. */
  if (!result->done || g_error_matches (result->error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  g_clear_object (&self->inspect_cancellable);

  if (result->error != NULL)
    {
      g_autofree char *summary = burrow_error_summary (result->error,
                                                       _("This folder does not hold a model Burrow can read."));
      g_autofree char *markup = g_markup_escape_text (summary, -1);

      adw_status_page_set_title (self->error_page, _("Could Not Read Model Folder"));
      adw_status_page_set_description (self->error_page, markup);
      gtk_label_set_text (self->error_details, result->error->message);
      gtk_widget_set_visible (GTK_WIDGET (self->error_details_expander), TRUE);
      gtk_expander_set_expanded (self->error_details_expander, FALSE);
      _burrow_window_show_page (self, "error");
      return;
    }

  {
    g_autofree char *chosen = burrow_settings_dup_model_tokenizer (self->settings, self->inspect_dir);

    self->inspect_has_tokenizer = info->tokenizer != NULL || chosen != NULL;
  }
  burrow_model_view_set_info (self->model_view, info);
  burrow_model_view_set_quality (self->model_view, inspected->quality);
  burrow_settings_add_recent_model (self->settings, self->inspect_dir);
  _burrow_window_show_page (self, "model");
}

/* The file's local path; NULL, with the error page saying why, for a file elsewhere. */
static char *
local_path (BurrowWindow *self,
            GFile        *file)
{
  char *path = g_file_get_path (file);

  if (path == NULL)
    {
      adw_status_page_set_title (self->error_page, _("Could Not Read the Model"));
      adw_status_page_set_description (self->error_page,
                                       _("Burrow can only read models stored on this computer."));
      gtk_widget_set_visible (GTK_WIDGET (self->error_details_expander), FALSE);
      _burrow_window_show_page (self, "error");
    }
  return path;
}

void
burrow_window_open_model (BurrowWindow *self,
                          GFile        *folder)
{
  g_autofree char *path = NULL;
  g_autofree char *markup = NULL;

  g_return_if_fail (BURROW_IS_WINDOW (self));
  g_return_if_fail (G_IS_FILE (folder));

  path = local_path (self, folder);
  if (path == NULL)
    return;

  g_cancellable_cancel (self->inspect_cancellable);
  g_clear_object (&self->inspect_cancellable);
  self->inspect_cancellable = g_cancellable_new ();
  g_free (self->inspect_dir);
  self->inspect_dir = g_strdup (path);
  self->inspect_has_tokenizer = FALSE;

  markup = g_markup_escape_text (path, -1);
  adw_status_page_set_description (self->loading_page, markup);
  _burrow_window_show_page (self, "loading");

  burrow_engine_worker_inspect (self->worker, path, self->inspect_cancellable,
                                G_OBJECT (self), on_inspected, NULL);
}

void
_burrow_window_start_chat (BurrowWindow *self,
                           const char   *dir)
{
  if (_burrow_window_new_chat (self, dir) != NULL)
    burrow_settings_add_recent_model (self->settings, dir);
}

gboolean
_burrow_window_set_model_tokenizer (BurrowWindow *self,
                                    const char   *dir,
                                    const char   *file)
{
  g_autoptr(GError) error = NULL;

  if (dir == NULL)
    return FALSE;
  if (file != NULL && !burrow_check_tokenizer (file, &error))
    {
      /* Translators: the engine's own words on why a chosen file is not a tokenizer */
      g_autofree char *text = g_strdup_printf (_("Not a tokenizer Burrow can read: %s"),
                                               error->message);

      _burrow_window_toast (self, text);
      return FALSE;
    }
  burrow_settings_set_model_tokenizer (self->settings, dir, file);
  if (g_strcmp0 (dir, self->inspect_dir) == 0)
    self->inspect_has_tokenizer = file != NULL;
  if (g_strcmp0 (dir, burrow_session_get_model_dir (self->session)) == 0 &&
      burrow_session_get_model_state (self->session) == BURROW_MODEL_FAILED)
    burrow_session_load_model (self->session, dir);
  _burrow_window_update_state (self);
  return TRUE;
}

void
burrow_window_chat_with (BurrowWindow *self,
                         GFile        *model)
{
  g_autofree char *path = NULL;

  g_return_if_fail (BURROW_IS_WINDOW (self));
  g_return_if_fail (G_IS_FILE (model));

  path = local_path (self, model);
  if (path != NULL)
    _burrow_window_start_chat (self, path);
}

void
_burrow_window_set_tokenizer (BurrowWindow *self,
                              const char   *file)
{
  _burrow_window_set_model_tokenizer (self, self->inspect_dir, file);
}

/* The failed bar's one button, for what went wrong. */
static void
set_load_fix (BurrowWindow *self,
              const char   *dir)
{
  g_autofree char *url = NULL;

  switch (burrow_session_get_load_fix (self->session))
    {
    case BURROW_ERROR_FIX_SERVER_KEY:
      burrow_remote_model_id_parse (dir, &url, NULL);
      burrow_chat_view_set_model_bar_fix (self->chat_view, _("_Edit Server…"), "win.edit-server",
                                          g_variant_new_string (url));
      break;
    case BURROW_ERROR_FIX_UNLOCK:
      /* Loading again asks the keyring for the key, which asks to unlock it. */
      burrow_chat_view_set_model_bar_fix (self->chat_view, _("_Unlock Keyring…"),
                                          "win.reload-chat-model", NULL);
      break;
    case BURROW_ERROR_FIX_RETRY:
      burrow_chat_view_set_model_bar_fix (self->chat_view, _("_Try Again"), "win.reload-chat-model",
                                          NULL);
      break;
    case BURROW_ERROR_FIX_TEMPLATE:
      burrow_chat_view_set_model_bar_fix (self->chat_view, _("_Use the Model’s Template"),
                                          "win.reset-chat-template", NULL);
      break;
    case BURROW_ERROR_FIX_TOKENIZER:
      burrow_chat_view_set_model_bar_fix (self->chat_view, _("Choose Another _Tokenizer…"),
                                          "win.choose-chat-tokenizer", NULL);
      break;
    case BURROW_ERROR_FIX_FOLDER:
    default:
      break;
    }
}

void
_burrow_window_update_model_bar (BurrowWindow *self)
{
  const char *dir = self->chat ? burrow_chat_get_model_dir (self->chat) : "";
  g_autofree char *name = burrow_model_display_name (dir);
  g_autofree char *title = NULL;
  BurrowModelState state = burrow_session_get_model_state (self->session);
  gboolean ours = g_strcmp0 (dir, burrow_session_get_model_dir (self->session)) == 0;
  g_autofree char *host = burrow_remote_model_host (dir);
  g_autofree char *remote_name = NULL;

  /* A server's model is named once, its host said where the text goes. */
  burrow_remote_model_id_parse (dir, NULL, &remote_name);
  burrow_chat_view_set_model_name (self->chat_view, dir[0] != '\0' ? (remote_name ? remote_name : name) : NULL,
                                   host);
  if (dir[0] == '\0' || (ours && state == BURROW_MODEL_LOADED))
    {
      burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_HIDDEN, NULL, NULL, 0);
      return;
    }
  if (ours && state == BURROW_MODEL_LOADING)
    {
      /* Translators: the model's folder name */
      title = g_strdup_printf (_("Loading %s…"), name);
      burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_LOADING, title,
                                      burrow_session_get_load_phase (self->session),
                                      burrow_session_get_load_fraction (self->session));
      return;
    }
  if (ours && state == BURROW_MODEL_FAILED)
    {
      /* Translators: the model's folder name */
      title = g_strdup_printf (_("Could not load %s"), name);
      burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_FAILED, title,
                                      burrow_session_get_load_error (self->session), 0);
      burrow_chat_view_set_model_bar_details (self->chat_view,
                                              burrow_session_get_load_error_details (self->session));
      set_load_fix (self, dir);
      return;
    }
  /* Translators: the model's folder name */
  title = g_strdup_printf (_("%s is not loaded"), name);
  burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_UNLOADED, title, dir, 0);
}

/* A model on a server: the dashboard says its figures are the server's, and a server
 * other than Burrow has its speed only. */
static void
update_source_note (BurrowWindow *self)
{
  const char *dir = burrow_session_get_model_dir (self->session);
  BurrowBackendFlags flags = burrow_backend_get_flags (burrow_session_get_backend (self->session));
  g_autofree char *host = NULL;
  g_autofree char *note = NULL;
  gboolean on_server = FALSE;

  if (burrow_session_get_model_state (self->session) == BURROW_MODEL_LOADED &&
      (host = burrow_remote_model_host (dir)) != NULL)
    {
      on_server = TRUE;
      if (flags & BURROW_BACKEND_PERF_NUMBERS)
        /* Translators: %s is the server's host name */
        note = g_strdup_printf (_("Figures reported by the server at %s: its speed, its expert "
                                  "cache and its disk. The time to the first token is as it "
                                  "reached this computer."), host);
      else
        /* Translators: %s is the server's host name */
        note = g_strdup_printf (_("The server at %s reports its speed only: tokens per second "
                                  "and the time to the first token. Its expert cache, disk "
                                  "reads and time per token are not available."), host);
    }
  burrow_dashboard_set_on_server (self->panel, on_server);
  burrow_dashboard_set_on_server (self->performance, on_server);
  burrow_dashboard_set_source_note (self->panel, note);
  burrow_dashboard_set_source_note (self->performance, note);
}

/* Whether the open chat's model is the one the session has loaded: the dashboards and the
 * memory banner speak of that model only. */
static gboolean
chat_model_loaded (BurrowWindow *self)
{
  return self->chat != NULL &&
         burrow_session_get_model_state (self->session) == BURROW_MODEL_LOADED &&
         g_strcmp0 (burrow_chat_get_model_dir (self->chat),
                    burrow_session_get_model_dir (self->session)) == 0;
}

void
_burrow_window_update_memory_banner (BurrowWindow *self)
{
  const char *setting = NULL;
  const char *warning = burrow_session_get_memory_warning (self->session, &setting);
  gboolean show = warning != NULL && chat_model_loaded (self);

  if (show)
    {
      gtk_label_set_text (self->memory_banner_label, warning);
      /* No setting: the new one waits for the model to load again. */
      gtk_button_set_label (GTK_BUTTON (self->memory_banner_button),
                            setting != NULL ? _("Memory Settings") : _("Load Again"));
      burrow_actionable_set (GTK_ACTIONABLE (self->memory_banner_button),
                             setting != NULL ? "app.preferences-at" : "win.reload-chat-model",
                             setting != NULL ? g_variant_new_string (setting) : NULL);
    }
  gtk_revealer_set_reveal_child (self->memory_banner, show);
}

void
_burrow_window_update_figures (BurrowWindow *self)
{
  BurrowPerfMonitor *monitor = chat_model_loaded (self) ? burrow_session_get_monitor (self->session)
                                                        : NULL;

  /* Another model's chat shows no figures rather than the loaded model's. */
  burrow_dashboard_set_monitor (self->panel, monitor);
  burrow_dashboard_set_monitor (self->performance, monitor);
  update_source_note (self);
  _burrow_window_update_memory_banner (self);
}

void
_burrow_window_on_model_state (BurrowWindow *self)
{
  /* A new chat whose model could not load is dropped for the error page, unless the chat's
   * bar offers the fix (a server's key, the keyring, a chosen template or tokenizer). */
  if (self->fresh_chat != NULL && self->fresh_chat == self->chat &&
      burrow_session_get_model_state (self->session) == BURROW_MODEL_FAILED &&
      burrow_session_get_load_fix (self->session) == BURROW_ERROR_FIX_FOLDER &&
      g_strcmp0 (burrow_session_get_model_dir (self->session),
                 burrow_chat_get_model_dir (self->chat)) == 0 &&
      g_list_model_get_n_items (self->messages) == 0)
    _burrow_window_drop_failed_chat (self);

  _burrow_window_update_figures (self);
  _burrow_window_update_model_bar (self);
  _burrow_window_update_state (self);
  if (self->chat != NULL &&
      burrow_session_is_ready_for (self->session, burrow_chat_get_model_dir (self->chat)))
    burrow_chat_view_focus_composer (self->chat_view);
}

void
burrow_window_send_when_ready (BurrowWindow *self,
                               const char   *text)
{
  g_return_if_fail (BURROW_IS_WINDOW (self));

  if (self->chat != NULL)
    burrow_session_send_when_ready (self->session, self->chat, text);
}

void
_burrow_window_ensure_chat_model (BurrowWindow *self)
{
  if (self->chat != NULL)
    burrow_session_ensure_model (self->session, burrow_chat_get_model_dir (self->chat));
}

static void
on_copy_ready (BurrowWindow *self,
               const char   *dir)
{
  burrow_settings_add_recent_model (self->settings, dir);
}

static void
on_open_copy (BurrowWindow *self,
              const char   *dir)
{
  g_autoptr(GFile) folder = g_file_new_for_path (dir);

  burrow_window_open_model (self, folder);
}

void
_burrow_window_compact_copy (BurrowWindow *self)
{
  BurrowCompactDialog *dialog;

  if (self->inspect_dir == NULL)
    return;
  if (self->compact_dialog != NULL)
    {
      gtk_window_present (self->compact_dialog);
      return;
    }
  dialog = burrow_compact_dialog_new (GTK_WINDOW (self), self->inspect_dir);
  g_signal_connect_object (dialog, "copy-ready", G_CALLBACK (on_copy_ready), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (dialog, "open-copy", G_CALLBACK (on_open_copy), self, G_CONNECT_SWAPPED);
  self->compact_dialog = GTK_WINDOW (dialog);
  g_object_add_weak_pointer (G_OBJECT (dialog), (gpointer *) &self->compact_dialog);
  gtk_window_present (GTK_WINDOW (dialog));
}

void
_burrow_window_models_dispose (BurrowWindow *self)
{
  if (self->compact_dialog != NULL)
    {
      g_object_remove_weak_pointer (G_OBJECT (self->compact_dialog), (gpointer *) &self->compact_dialog);
      gtk_window_destroy (g_steal_pointer (&self->compact_dialog));
    }
  g_cancellable_cancel (self->inspect_cancellable);
  g_clear_object (&self->inspect_cancellable);
  if (self->chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);
  if (self->tokenizer_chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->tokenizer_chooser));
  g_clear_object (&self->tokenizer_chooser);
  g_clear_pointer (&self->inspect_dir, g_free);
}
