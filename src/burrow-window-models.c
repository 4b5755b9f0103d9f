/* The window's models: open a folder and show what it holds (inspect), start a chat with
 * it, and load a chat's model on the worker with progress and Cancel. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-demo.h"
#include "burrow-error-text.h"
#include "burrow-window-private.h"

static void
on_inspected (GObject            *owner,
              BurrowWorkerResult *result,
              gpointer            user_data)
{
  BurrowWindow *self = BURROW_WINDOW (owner);
  const BurrowModelInfo *info = result->data;

  /* Only the newest request is not cancelled; older ones have nothing left to show. */
  if (!result->done || g_error_matches (result->error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  g_clear_object (&self->inspect_cancellable);

  if (result->error != NULL)
    {
      g_autofree char *summary = burrow_error_summary (result->error,
                                                       _("This folder does not hold a model Burrow can read."));
      g_autofree char *markup = g_markup_escape_text (summary, -1);

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
  burrow_settings_add_recent_model (self->settings, self->inspect_dir);
  _burrow_window_show_page (self, "model");
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
      gtk_widget_set_visible (GTK_WIDGET (self->error_details_expander), FALSE);
      _burrow_window_show_page (self, "error");
      return;
    }

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

void
_burrow_window_set_tokenizer (BurrowWindow *self,
                              const char   *file)
{
  if (self->inspect_dir == NULL)
    return;
  burrow_settings_set_model_tokenizer (self->settings, self->inspect_dir, file);
  self->inspect_has_tokenizer = file != NULL;
  _burrow_window_update_state (self);
}

static int
format_bits (const char *format)
{
  if (g_strcmp0 (format, "int8") == 0)
    return 8;
  if (g_strcmp0 (format, "int4") == 0)
    return 4;
  if (g_strcmp0 (format, "int2") == 0)
    return 2;
  return 0;
}

/* The engine's options from the preferences. @io_backend, @tokenizer and @chat_template
 * receive the strings the options point to; free them after the load request has copied
 * them. */
static void
options_from_settings (BurrowWindow        *self,
                       const char          *dir,
                       BurrowEngineOptions *options,
                       char               **io_backend,
                       char               **tokenizer,
                       char               **chat_template)
{
  g_autofree char *io = NULL;
  g_autofree char *dense = NULL;
  g_autofree char *experts = NULL;
  guint threads;

  burrow_engine_options_init (options);
  g_object_get (self->settings,
                "threads", &threads,
                "ram-budget", &options->ram_budget,
                "io-backend", &io,
                "direct-io", &options->direct_io,
                "pinning", &options->pinning,
                "prefetch", &options->prefetch,
                "int8-activations", &options->int8_activations,
                "dense-format", &dense,
                "expert-format", &experts,
                NULL);
  /* The switches force a choice one way; the other way leaves it to the engine, which
   * bypasses the page cache when the experts do not fit in it and pauses the lookahead
   * while it mostly wastes reads. */
  if (!options->direct_io)
    options->direct_io = BURROW_AUTO;
  if (options->prefetch)
    options->prefetch = BURROW_AUTO;
  options->threads = (int) threads;
  options->dense_bits = format_bits (dense);
  options->expert_bits = format_bits (experts);
  /* GSettings names it like a key; the engine like the kernel interface. */
  *io_backend = g_strdup (g_strcmp0 (io, "io-uring") == 0 ? "io_uring" : io);
  options->io_backend = *io_backend;
  /* NULL for a folder with a tokenizer of its own */
  *tokenizer = burrow_settings_dup_model_tokenizer (self->settings, dir);
  options->tokenizer = *tokenizer;
  /* NULL: the checkpoint's own (Chat Settings can choose another) */
  *chat_template = burrow_settings_dup_model_template (self->settings, dir);
  options->chat_template = *chat_template;
}

void
_burrow_window_update_model_bar (BurrowWindow *self)
{
  const char *dir = self->chat ? burrow_chat_get_model_dir (self->chat) : "";
  g_autofree char *name = g_path_get_basename (dir);
  g_autofree char *title = NULL;

  burrow_chat_view_set_model_name (self->chat_view, dir[0] != '\0' ? name : NULL);
  if (dir[0] == '\0' || g_strcmp0 (dir, self->loaded_dir) == 0)
    {
      burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_HIDDEN, NULL, NULL, 0);
      return;
    }
  if (g_strcmp0 (dir, self->loading_dir) == 0)
    {
      /* Translators: the model's folder name */
      title = g_strdup_printf (_("Loading %s…"), name);
      burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_LOADING, title,
                                      self->load_phase, self->load_fraction);
      return;
    }
  if (g_strcmp0 (dir, self->failed_dir) == 0)
    {
      /* Translators: the model's folder name */
      title = g_strdup_printf (_("Could not load %s"), name);
      burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_FAILED, title,
                                      self->load_error, 0);
      burrow_chat_view_set_model_bar_details (self->chat_view, self->load_error_details);
      return;
    }
  /* Translators: the model's folder name */
  title = g_strdup_printf (_("%s is not loaded"), name);
  burrow_chat_view_set_model_bar (self->chat_view, BURROW_MODEL_BAR_UNLOADED, title, dir, 0);
}

static void
on_loaded (GObject            *owner,
           BurrowWorkerResult *result,
           gpointer            user_data)
{
  BurrowWindow *self = BURROW_WINDOW (owner);

  if (g_error_matches (result->error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  if (!result->done)
    {
      BurrowLoadProgress *progress = result->data;

      self->load_fraction = progress->fraction;
      g_free (self->load_phase);
      self->load_phase = g_strdup (progress->phase);
      _burrow_window_update_model_bar (self);
      return;
    }

  g_clear_object (&self->load_cancellable);
  if (result->error != NULL)
    {
      g_free (self->failed_dir);
      self->failed_dir = g_steal_pointer (&self->loading_dir);
      g_free (self->load_error);
      self->load_error = burrow_error_summary (result->error,
                                               _("This model could not be loaded."));
      g_free (self->load_error_details);
      self->load_error_details = g_strdup (result->error->message);
    }
  else
    {
      BurrowLoadResult *loaded = result->data;

      g_free (self->loaded_dir);
      self->loaded_dir = g_steal_pointer (&self->loading_dir);
      self->supports_thinking = loaded->supports_thinking;
      burrow_perf_monitor_reset (self->monitor, loaded->bytes_per_expert);
      burrow_perf_monitor_add_snapshot (self->monitor, g_steal_pointer (&loaded->snapshot));
      burrow_perf_monitor_flush (self->monitor);
      burrow_settings_add_recent_model (self->settings, self->loaded_dir);
    }

  _burrow_window_update_model_bar (self);
  _burrow_window_update_state (self);
  if (result->error == NULL && self->chat != NULL &&
      g_strcmp0 (burrow_chat_get_model_dir (self->chat), self->loaded_dir) == 0)
    {
      burrow_chat_view_focus_composer (self->chat_view);
      if (self->pending_prompt != NULL)
        {
          g_autofree char *prompt = g_steal_pointer (&self->pending_prompt);

          burrow_chat_view_set_draft (self->chat_view, prompt);
          _burrow_window_send (self);
        }
    }
}

void
burrow_window_send_when_ready (BurrowWindow *self,
                               const char   *text)
{
  g_return_if_fail (BURROW_IS_WINDOW (self));

  g_free (self->pending_prompt);
  self->pending_prompt = g_strdup (text);
  if (self->chat != NULL && self->loading_dir == NULL &&
      g_strcmp0 (burrow_chat_get_model_dir (self->chat), self->loaded_dir) == 0)
    {
      g_autofree char *prompt = g_steal_pointer (&self->pending_prompt);

      burrow_chat_view_set_draft (self->chat_view, prompt);
      _burrow_window_send (self);
    }
}

void
_burrow_window_load_model (BurrowWindow *self,
                           const char   *dir)
{
  g_autofree char *io_backend = NULL;
  g_autofree char *tokenizer = NULL;
  g_autofree char *chat_template = NULL;
  BurrowEngineOptions options;

  g_return_if_fail (dir != NULL && dir[0] != '\0');

  /* The worker frees the old model before it reads the new one. */
  _burrow_window_stop (self);
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_pointer (&self->loaded_dir, g_free);
  g_clear_pointer (&self->failed_dir, g_free);
  g_free (self->loading_dir);
  self->loading_dir = g_strdup (dir);
  self->load_fraction = 0;
  g_free (self->load_phase);
  self->load_phase = g_strdup (_("Reading the model folder"));
  burrow_perf_monitor_reset (self->monitor, 0);
  burrow_perf_monitor_flush (self->monitor);

  options_from_settings (self, dir, &options, &io_backend, &tokenizer, &chat_template);
  self->load_cancellable = g_cancellable_new ();
  burrow_engine_worker_load (self->worker, dir, &options,
                             burrow_is_demo_model (dir) ? BURROW_DEMO_EXPERT_SHARE : 0,
                             self->load_cancellable, G_OBJECT (self), on_loaded, NULL);

  _burrow_window_update_model_bar (self);
  _burrow_window_update_state (self);
}

void
_burrow_window_cancel_load (BurrowWindow *self)
{
  if (self->loading_dir == NULL)
    return;

  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_pointer (&self->loading_dir, g_free);
  _burrow_window_update_model_bar (self);
  _burrow_window_update_state (self);
}

void
_burrow_window_ensure_chat_model (BurrowWindow *self)
{
  const char *dir = self->chat ? burrow_chat_get_model_dir (self->chat) : "";

  if (dir[0] == '\0' || g_strcmp0 (dir, self->loaded_dir) == 0 ||
      g_strcmp0 (dir, self->loading_dir) == 0 || g_strcmp0 (dir, self->failed_dir) == 0)
    return;
  _burrow_window_load_model (self, dir);
}

void
_burrow_window_models_dispose (BurrowWindow *self)
{
  g_cancellable_cancel (self->inspect_cancellable);
  g_clear_object (&self->inspect_cancellable);
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  if (self->chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->chooser));
  g_clear_object (&self->chooser);
  if (self->tokenizer_chooser != NULL)
    gtk_native_dialog_destroy (GTK_NATIVE_DIALOG (self->tokenizer_chooser));
  g_clear_object (&self->tokenizer_chooser);
  g_clear_pointer (&self->inspect_dir, g_free);
  g_clear_pointer (&self->loaded_dir, g_free);
  g_clear_pointer (&self->loading_dir, g_free);
  g_clear_pointer (&self->failed_dir, g_free);
  g_clear_pointer (&self->load_error, g_free);
  g_clear_pointer (&self->load_error_details, g_free);
  g_clear_pointer (&self->load_phase, g_free);
  g_clear_pointer (&self->pending_prompt, g_free);
}
