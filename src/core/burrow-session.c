/* The session: the model's state, loads on the backend, and a turn from the user's message
 * to the saved reply. Windows only show it. */
#include "burrow-config.h"

#include <glib/gi18n.h>

#include "burrow-error-text.h"
#include "burrow-memory-advice.h"
#include "burrow-session.h"

/* Longest reply a turn asks for. */
#define MAX_REPLY_TOKENS 2048
/* Seconds between dashboard snapshots while a reply streams in. */
#define SNAPSHOT_INTERVAL 0.2
/* The most characters of a first message a chat's automatic title keeps. */
#define CHAT_TITLE_CHARS 40

struct _BurrowSession {
  GObject parent_instance;

  BurrowBackend *backend;
  BurrowChatStore *store;
  BurrowSettings *settings;
  BurrowPerfMonitor *monitor;
  GHashTable *lists;            /* chat id -> GListStore of its messages (not held) */

  /* The model: model_dir is loaded, loading or failed, as state says. */
  BurrowModelState state;
  char *model_dir;
  GCancellable *load_cancellable;
  double load_fraction;
  char *load_phase;
  char *load_error;
  char *load_error_details;
  BurrowErrorFix load_fix;
  gboolean supports_thinking;
  char *memory_warning;         /* burrow-memory-advice.h, or NULL */
  const char *memory_setting;   /* the preference that would help */

  /* The turn. */
  GCancellable *generate_cancellable;
  guint64 generate_id;
  BurrowChat *reply_chat;
  GListStore *reply_list;
  BurrowChatMessage *reply;
  BurrowChatMessage *replaced;  /* the reply being regenerated, or NULL */
  int reply_tokens;

  BurrowChat *pending_chat;
  char *pending_prompt;
};

G_DEFINE_FINAL_TYPE (BurrowSession, burrow_session, G_TYPE_OBJECT)
G_DEFINE_ENUM_TYPE (BurrowModelState, burrow_model_state,
                    G_DEFINE_ENUM_VALUE (BURROW_MODEL_NONE, "none"),
                    G_DEFINE_ENUM_VALUE (BURROW_MODEL_LOADING, "loading"),
                    G_DEFINE_ENUM_VALUE (BURROW_MODEL_LOADED, "loaded"),
                    G_DEFINE_ENUM_VALUE (BURROW_MODEL_FAILED, "failed"))
G_DEFINE_QUARK (burrow-turn-error-quark, burrow_turn_error)

enum {
  PROP_0,
  PROP_BACKEND,
  PROP_STORE,
  PROP_SETTINGS,
  PROP_MODEL_STATE,
  PROP_MODEL_DIR,
  PROP_LOAD_FRACTION,
  PROP_LOAD_PHASE,
  PROP_LOAD_ERROR,
  PROP_LOAD_ERROR_DETAILS,
  PROP_SUPPORTS_THINKING,
  PROP_MEMORY_WARNING,
  PROP_GENERATING,
  N_PROPS
};

enum {
  REPLY_STARTED,
  REPLY_DELTA,
  REPLY_FINISHED,
  ERROR,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

static void
emit_error (BurrowSession *self,
            BurrowChat    *chat,
            const GError  *error,
            const char    *fallback)
{
  g_signal_emit (self, signals[ERROR], 0, chat, error, fallback);
}

/* ---- the model ---- */

static void
set_model (BurrowSession    *self,
           BurrowModelState  state,
           const char       *dir)
{
  g_object_freeze_notify (G_OBJECT (self));
  if (self->state != state)
    {
      self->state = state;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL_STATE]);
    }
  if (g_strcmp0 (self->model_dir, dir) != 0)
    {
      g_free (self->model_dir);
      self->model_dir = g_strdup (dir);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODEL_DIR]);
    }
  g_object_thaw_notify (G_OBJECT (self));
}

/* The loaded model's memory advice; NULL clears it. */
static void
set_memory_warning (BurrowSession *self,
                    char          *warning,
                    const char    *setting)
{
  self->memory_setting = setting;
  if (g_strcmp0 (self->memory_warning, warning) == 0)
    {
      g_free (warning);
      return;
    }
  g_free (self->memory_warning);
  self->memory_warning = warning;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MEMORY_WARNING]);
}

/* The memory for experts changed while a warning about it shows: the warning's figures
 * are the old setting's, and the new one takes effect only when the model loads again. */
static void
on_memory_setting (BurrowSession *self)
{
  if (self->state != BURROW_MODEL_LOADED || self->memory_warning == NULL ||
      self->memory_setting == NULL)
    return;
  set_memory_warning (self, g_strdup (_("The memory for experts has changed. It takes effect "
                                        "when the model loads again.")), NULL);
}

static void
set_progress (BurrowSession *self,
              double         fraction,
              const char    *phase)
{
  self->load_fraction = fraction;
  g_free (self->load_phase);
  self->load_phase = g_strdup (phase);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOAD_FRACTION]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOAD_PHASE]);
}

static void
set_load_error (BurrowSession *self,
                const GError  *error)
{
  g_free (self->load_error);
  g_free (self->load_error_details);
  self->load_error = error ? burrow_error_summary (error, _("This model could not be loaded.")) : NULL;
  self->load_error_details = error ? g_strdup (error->message) : NULL;
  self->load_fix = BURROW_ERROR_FIX_FOLDER;
  if (error != NULL && self->model_dir != NULL)
    {
      g_autofree char *template_file = burrow_settings_dup_model_template (self->settings, self->model_dir);
      g_autofree char *tokenizer_file = burrow_settings_dup_model_tokenizer (self->settings, self->model_dir);

      self->load_fix = burrow_error_fix (error, template_file, tokenizer_file);
      /* The file chosen for the model is what failed, not the model. */
      if (self->load_fix == BURROW_ERROR_FIX_TEMPLATE)
        {
          g_free (self->load_error);
          self->load_error = g_strdup (_("The chat template chosen for this model cannot be used."));
        }
      else if (self->load_fix == BURROW_ERROR_FIX_TOKENIZER)
        {
          g_free (self->load_error);
          self->load_error = g_strdup (_("The tokenizer chosen for this model does not fit it."));
        }
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOAD_ERROR]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_LOAD_ERROR_DETAILS]);
}

static int
format_bits (const char *format)
{
  if (g_strcmp0 (format, "auto") == 0)
    return BURROW_AUTO;
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
options_from_settings (BurrowSession       *self,
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

static void send_pending (BurrowSession *self);

static void
on_loaded (GObject             *owner,
           BurrowBackendResult *result,
           gpointer             user_data)
{
  BurrowSession *self = BURROW_SESSION (owner);

  if (g_error_matches (result->error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;

  if (!result->done)
    {
      BurrowLoadProgress *progress = result->data;

      set_progress (self, progress->fraction, progress->phase);
      return;
    }

  g_clear_object (&self->load_cancellable);
  if (result->error != NULL)
    {
      set_load_error (self, result->error);
      set_model (self, BURROW_MODEL_FAILED, self->model_dir);
      return;
    }
  else
    {
      BurrowLoadResult *loaded = result->data;

      if (self->supports_thinking != loaded->supports_thinking)
        {
          self->supports_thinking = loaded->supports_thinking;
          g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_SUPPORTS_THINKING]);
        }
      burrow_perf_monitor_reset (self->monitor, loaded->bytes_per_expert);
      /* the demo's cache is capped on purpose, so that its experts stream */
      if (loaded->snapshot != NULL && loaded->snapshot->cache_cap_share <= 0)
        {
          const char *setting = NULL;
          guint64 budget = 0;
          g_object_get (self->settings, "ram-budget", &budget, NULL);
          char *advice = burrow_memory_advice (&loaded->snapshot->cache, budget != 0, &setting);
          set_memory_warning (self, advice, setting);
        }
      if (loaded->snapshot != NULL)
        burrow_perf_monitor_add_snapshot (self->monitor, g_steal_pointer (&loaded->snapshot));
      burrow_perf_monitor_flush (self->monitor);
      burrow_settings_add_recent_model (self->settings, self->model_dir);
      set_model (self, BURROW_MODEL_LOADED, self->model_dir);
    }
  send_pending (self);
}

void
burrow_session_load_model (BurrowSession *self,
                           const char    *dir)
{
  g_autofree char *io_backend = NULL;
  g_autofree char *tokenizer = NULL;
  g_autofree char *chat_template = NULL;
  BurrowEngineOptions options;

  g_return_if_fail (BURROW_IS_SESSION (self));
  g_return_if_fail (dir != NULL && dir[0] != '\0');

  /* The backend frees the old model before it reads the new one. */
  burrow_session_stop (self);
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  set_progress (self, 0, _("Reading the model folder"));
  set_memory_warning (self, NULL, NULL);
  burrow_perf_monitor_reset (self->monitor, 0);
  burrow_perf_monitor_flush (self->monitor);

  options_from_settings (self, dir, &options, &io_backend, &tokenizer, &chat_template);
  self->load_cancellable = g_cancellable_new ();
  set_model (self, BURROW_MODEL_LOADING, dir);
  burrow_backend_load (self->backend, dir, &options, self->load_cancellable,
                       G_OBJECT (self), on_loaded, NULL);
}

void
burrow_session_cancel_load (BurrowSession *self)
{
  g_return_if_fail (BURROW_IS_SESSION (self));

  if (self->state != BURROW_MODEL_LOADING)
    return;
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  set_model (self, BURROW_MODEL_NONE, NULL);
}

void
burrow_session_ensure_model (BurrowSession *self,
                             const char    *dir)
{
  g_return_if_fail (BURROW_IS_SESSION (self));

  if (dir == NULL || dir[0] == '\0' ||
      (self->state != BURROW_MODEL_NONE && g_strcmp0 (dir, self->model_dir) == 0))
    return;
  burrow_session_load_model (self, dir);
}

gboolean
burrow_session_is_ready_for (BurrowSession *self,
                             const char    *model_dir)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), FALSE);

  return self->state == BURROW_MODEL_LOADED && model_dir != NULL &&
         g_strcmp0 (model_dir, self->model_dir) == 0;
}

/* ---- the messages of chats ---- */

static void
on_list_finalized (gpointer  data,
                   GObject  *where_the_list_was)
{
  BurrowSession *self = data;
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, self->lists);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    if (value == (gpointer) where_the_list_was)
      g_hash_table_iter_remove (&iter);
}

GListModel *
burrow_session_dup_messages (BurrowSession  *self,
                             BurrowChat     *chat,
                             GError        **error)
{
  gint64 id;
  GListStore *list;
  g_autoptr(GPtrArray) messages = NULL;

  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), NULL);

  id = burrow_chat_get_id (chat);
  list = g_hash_table_lookup (self->lists, &id);
  if (list != NULL)
    return g_object_ref (G_LIST_MODEL (list));

  messages = burrow_chat_store_load_messages (self->store, chat, error);
  if (messages == NULL)
    return NULL;
  list = g_list_store_new (BURROW_TYPE_CHAT_MESSAGE);
  g_list_store_splice (list, 0, 0, messages->pdata, messages->len);
  g_hash_table_insert (self->lists, g_memdup2 (&id, sizeof id), list);
  g_object_weak_ref (G_OBJECT (list), on_list_finalized, self);
  return G_LIST_MODEL (list);
}

/* ---- a turn ---- */

static void
set_generating (BurrowSession *self,
                GCancellable  *cancellable)
{
  gboolean was = self->generate_cancellable != NULL;

  g_set_object (&self->generate_cancellable, cancellable);
  if (was != (cancellable != NULL))
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_GENERATING]);
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
finish_reply (BurrowSession          *self,
              const BurrowReplyStats *stats,
              const GError           *error)
{
  g_autoptr(BurrowChatMessage) reply = g_steal_pointer (&self->reply);
  g_autoptr(BurrowChatMessage) replaced = g_steal_pointer (&self->replaced);
  g_autoptr(BurrowChat) chat = g_steal_pointer (&self->reply_chat);
  g_autoptr(GListStore) list = g_steal_pointer (&self->reply_list);
  g_autoptr(GError) save_error = NULL;
  gboolean saved = FALSE;
  guint pos;

  self->generate_id = 0;
  if (reply == NULL)
    {
      set_generating (self, NULL);
      return;
    }

  burrow_chat_message_set_stats (reply, stats);
  burrow_chat_message_set_streaming (reply, FALSE);
  if (burrow_chat_message_get_content (reply)[0] == '\0' &&
      burrow_chat_message_get_reasoning (reply)[0] == '\0')
    {
      /* Nothing came: a regenerated turn keeps the reply it had. */
      if (g_list_store_find (list, reply, &pos))
        {
          if (replaced != NULL)
            g_list_store_splice (list, pos, 1, (gpointer *) &replaced, 1);
          else
            g_list_store_remove (list, pos);
        }
    }
  else if (replaced != NULL
           ? burrow_chat_store_add_alternative (self->store, chat, replaced, reply, &save_error)
           : burrow_chat_store_add_message (self->store, chat, reply, &save_error))
    saved = TRUE;
  else
    emit_error (self, chat, save_error, _("Your chats could not be saved or read."));

  if (error != NULL && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    emit_error (self, chat, error, _("The reply stopped because of an error."));
  burrow_perf_monitor_flush (self->monitor);
  set_generating (self, NULL);
  g_signal_emit (self, signals[REPLY_FINISHED], 0, chat, reply, saved);
}

static void
on_generated (GObject             *owner,
              BurrowBackendResult *result,
              gpointer             user_data)
{
  BurrowSession *self = BURROW_SESSION (owner);
  BurrowTurnStats none = { 0 };
  BurrowReplyStats stats;

  /* A stopped reply was finished when it was stopped. */
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
      /* The dashboard follows at most a few times a second, however many tokens came. */
      burrow_perf_monitor_flush_later (self->monitor);
      g_signal_emit (self, signals[REPLY_DELTA], 0, self->reply_chat, self->reply,
                     update->answer, update->reasoning);
      return;
    }

  if (result->error == NULL)
    {
      BurrowGenerateResult *generated = result->data;

      reply_stats_from_turn (&generated->stats, self->reply_tokens, generated->stats.finish, &stats);
      if (generated->snapshot != NULL)
        burrow_perf_monitor_add_snapshot (self->monitor, g_steal_pointer (&generated->snapshot));
      finish_reply (self, &stats, NULL);
    }
  else
    {
      const BurrowPerfSnapshot *s = burrow_perf_monitor_get_snapshot (self->monitor);

      reply_stats_from_turn (s ? &s->turn : &none, self->reply_tokens, BURROW_FINISH_ERROR, &stats);
      finish_reply (self, &stats, result->error);
    }
}

static void
start_reply (BurrowSession *self,
             BurrowChat    *chat,
             GListStore    *list)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (list));
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  BurrowGenerateRequest *request;
  BurrowGenerateOptions *options;
  BurrowSampling sampling;

  request = burrow_generate_request_new (burrow_chat_get_id (chat),
                                         burrow_chat_get_session_path (chat),
                                         burrow_chat_get_system_prompt (chat));
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(BurrowChatMessage) m = g_list_model_get_item (G_LIST_MODEL (list), i);

      burrow_generate_request_add_message (request, burrow_chat_message_get_role (m),
                                           burrow_chat_message_get_content (m),
                                           burrow_chat_message_get_reasoning (m));
    }

  burrow_chat_get_sampling (chat, &sampling);
  options = burrow_generate_request_get_options (request);
  burrow_session_sampling_options (&sampling, options);
  /* Families that can reason do; the reasoning shows folded above the answer. */
  options->thinking = self->supports_thinking;
  burrow_generate_request_set_snapshot_interval (request, SNAPSHOT_INTERVAL);

  self->reply = burrow_chat_message_new (BURROW_ROLE_ASSISTANT, "");
  burrow_chat_message_set_streaming (self->reply, TRUE);
  self->reply_chat = g_object_ref (chat);
  self->reply_list = g_object_ref (list);
  self->reply_tokens = 0;
  g_list_store_append (list, self->reply);

  set_generating (self, cancellable);
  self->generate_id = burrow_backend_generate (self->backend, request, cancellable,
                                               G_OBJECT (self), on_generated, NULL);
  g_signal_emit (self, signals[REPLY_STARTED], 0, chat, self->reply);
}

/* The chat's messages, when a turn can start in it now. */
static GListStore *
turn_list (BurrowSession  *self,
           BurrowChat     *chat,
           GError        **error)
{
  if (self->generate_cancellable != NULL)
    {
      g_set_error_literal (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_BUSY,
                           _("A reply is being written"));
      return NULL;
    }
  if (!burrow_session_is_ready_for (self, burrow_chat_get_model_dir (chat)))
    {
      g_set_error_literal (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOT_READY,
                           _("The chat’s model is not loaded"));
      return NULL;
    }
  return G_LIST_STORE (burrow_session_dup_messages (self, chat, error));
}

void
burrow_session_sampling_options (const BurrowSampling  *sampling,
                                 BurrowGenerateOptions *options)
{
  options->max_tokens = sampling->max_tokens > 0 ? (int) MIN (sampling->max_tokens, G_MAXINT)
                                                 : MAX_REPLY_TOKENS;
  options->temperature = (float) sampling->temperature;
  options->top_p = (float) sampling->top_p;
  options->top_k = (int) sampling->top_k;
  options->min_p = (float) sampling->min_p;
  options->repetition_penalty = sampling->repetition_penalty > 0
                                ? (float) sampling->repetition_penalty : 1;
  options->seed = sampling->seed > 0 ? (guint64) sampling->seed
                                     : g_random_int () | (guint64) g_random_int () << 32;
}

static gboolean
send_at (BurrowSession  *self,
         BurrowChat     *chat,
         int             replace_from,
         const char     *text,
         GError        **error)
{
  g_autoptr(GListStore) list = NULL;
  g_autoptr(BurrowChatMessage) message = NULL;
  g_autoptr(GError) title_error = NULL;
  gboolean automatic_title;

  g_return_val_if_fail (BURROW_IS_SESSION (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);

  if (text == NULL || text[0] == '\0')
    {
      g_set_error_literal (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOTHING,
                           _("There is nothing to send"));
      return FALSE;
    }
  if ((list = turn_list (self, chat, error)) == NULL)
    return FALSE;

  automatic_title = burrow_chat_get_title (chat)[0] == '\0';
  if (replace_from >= 0)
    {
      guint n = g_list_model_get_n_items (G_LIST_MODEL (list));
      g_autoptr(BurrowChatMessage) old = (guint) replace_from < n
        ? g_list_model_get_item (G_LIST_MODEL (list), (guint) replace_from) : NULL;

      if (old == NULL || burrow_chat_message_get_role (old) != BURROW_ROLE_USER)
        {
          g_set_error_literal (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOTHING,
                               _("There is no message of the user’s there"));
          return FALSE;
        }
      if (replace_from == 0)
        {
          g_autofree char *from_old =
            burrow_chat_title_from_text (burrow_chat_message_get_content (old), CHAT_TITLE_CHARS);

          /* Named after the first message by the app, not by the user: follows it. */
          automatic_title = automatic_title || g_str_equal (burrow_chat_get_title (chat), from_old);
        }
      if (!burrow_chat_store_truncate (self->store, chat, (guint) replace_from, error))
        return FALSE;
      g_list_store_splice (list, (guint) replace_from, n - (guint) replace_from, NULL, 0);
    }

  message = burrow_chat_message_new (BURROW_ROLE_USER, text);
  if (!burrow_chat_store_add_message (self->store, chat, message, error))
    return FALSE;
  g_list_store_append (list, message);

  if (automatic_title)
    {
      g_autofree char *title = burrow_chat_title_from_text (text, CHAT_TITLE_CHARS);

      burrow_chat_set_title (chat, title);
      if (!burrow_chat_store_save_chat (self->store, chat, &title_error))
        emit_error (self, chat, title_error, _("Your chats could not be saved or read."));
    }

  start_reply (self, chat, list);
  return TRUE;
}

gboolean
burrow_session_send (BurrowSession  *self,
                     BurrowChat     *chat,
                     const char     *text,
                     GError        **error)
{
  return send_at (self, chat, -1, text, error);
}

gboolean
burrow_session_edit (BurrowSession  *self,
                     BurrowChat     *chat,
                     guint           index,
                     const char     *text,
                     GError        **error)
{
  g_return_val_if_fail (index <= G_MAXINT, FALSE);

  return send_at (self, chat, (int) index, text, error);
}

gboolean
burrow_session_regenerate (BurrowSession  *self,
                           BurrowChat     *chat,
                           GError        **error)
{
  g_autoptr(GListStore) list = NULL;
  g_autoptr(BurrowChatMessage) last = NULL;
  guint n;

  g_return_val_if_fail (BURROW_IS_SESSION (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT (chat), FALSE);

  if ((list = turn_list (self, chat, error)) == NULL)
    return FALSE;
  n = g_list_model_get_n_items (G_LIST_MODEL (list));
  last = n > 0 ? g_list_model_get_item (G_LIST_MODEL (list), n - 1) : NULL;
  if (last == NULL || burrow_chat_message_get_role (last) != BURROW_ROLE_ASSISTANT)
    {
      g_set_error_literal (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOTHING,
                           _("The chat does not end with a reply"));
      return FALSE;
    }
  /* The old reply stays saved until the new one joins it as an alternative. */
  g_list_store_remove (list, n - 1);
  self->replaced = g_steal_pointer (&last);
  start_reply (self, chat, list);
  return TRUE;
}

gboolean
burrow_session_show_alternative (BurrowSession      *self,
                                 BurrowChatMessage  *message,
                                 guint               alternative,
                                 GError            **error)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), FALSE);
  g_return_val_if_fail (BURROW_IS_CHAT_MESSAGE (message), FALSE);

  if (self->generate_cancellable != NULL)
    {
      g_set_error_literal (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_BUSY,
                           _("A reply is being written"));
      return FALSE;
    }
  return burrow_chat_store_show_alternative (self->store, message, alternative, error);
}

void
burrow_session_stop (BurrowSession *self)
{
  const BurrowPerfSnapshot *s;
  BurrowTurnStats none = { 0 };
  BurrowReplyStats stats;

  g_return_if_fail (BURROW_IS_SESSION (self));

  if (self->generate_cancellable == NULL)
    return;

  /* The backend stops within a layer's time; the reply is final from here. */
  g_cancellable_cancel (self->generate_cancellable);
  s = burrow_perf_monitor_get_snapshot (self->monitor);
  reply_stats_from_turn (s ? &s->turn : &none, self->reply_tokens, BURROW_FINISH_CANCELLED, &stats);
  finish_reply (self, &stats, NULL);
}

static void
send_pending (BurrowSession *self)
{
  g_autoptr(BurrowChat) chat = NULL;
  g_autofree char *prompt = NULL;
  g_autoptr(GError) error = NULL;

  if (self->pending_chat == NULL ||
      !burrow_session_is_ready_for (self, burrow_chat_get_model_dir (self->pending_chat)))
    return;
  chat = g_steal_pointer (&self->pending_chat);
  prompt = g_steal_pointer (&self->pending_prompt);
  if (!burrow_session_send (self, chat, prompt, &error) &&
      !g_error_matches (error, BURROW_TURN_ERROR, BURROW_TURN_ERROR_NOTHING))
    emit_error (self, chat, error, _("Your message could not be sent."));
}

void
burrow_session_send_when_ready (BurrowSession *self,
                                BurrowChat    *chat,
                                const char    *text)
{
  g_return_if_fail (BURROW_IS_SESSION (self));
  g_return_if_fail (BURROW_IS_CHAT (chat));

  g_set_object (&self->pending_chat, chat);
  g_free (self->pending_prompt);
  self->pending_prompt = g_strdup (text);
  send_pending (self);
}

const char *
burrow_session_get_pending_prompt (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->pending_prompt;
}

/* ---- the object ---- */

BurrowSession *
burrow_session_new (BurrowBackend   *backend,
                    BurrowChatStore *store,
                    BurrowSettings  *settings)
{
  g_return_val_if_fail (BURROW_IS_BACKEND (backend), NULL);
  g_return_val_if_fail (BURROW_IS_CHAT_STORE (store), NULL);
  g_return_val_if_fail (BURROW_IS_SETTINGS (settings), NULL);

  return g_object_new (BURROW_TYPE_SESSION,
                       "backend", backend,
                       "store", store,
                       "settings", settings,
                       NULL);
}

BurrowBackend *
burrow_session_get_backend (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->backend;
}

BurrowChatStore *
burrow_session_get_store (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->store;
}

BurrowPerfMonitor *
burrow_session_get_monitor (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->monitor;
}

BurrowModelState
burrow_session_get_model_state (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), BURROW_MODEL_NONE);
  return self->state;
}

const char *
burrow_session_get_model_dir (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->model_dir;
}

double
burrow_session_get_load_fraction (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), 0);
  return self->load_fraction;
}

const char *
burrow_session_get_load_phase (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->load_phase;
}

const char *
burrow_session_get_load_error (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->load_error;
}

BurrowErrorFix
burrow_session_get_load_fix (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), BURROW_ERROR_FIX_FOLDER);
  return self->load_fix;
}

const char *
burrow_session_get_load_error_details (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->load_error_details;
}

const char *
burrow_session_get_memory_warning (BurrowSession *self,
                                   const char   **setting)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  if (setting != NULL)
    *setting = self->memory_setting;
  return self->memory_warning;
}

gboolean
burrow_session_get_supports_thinking (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), FALSE);
  return self->supports_thinking;
}

gboolean
burrow_session_get_generating (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), FALSE);
  return self->generate_cancellable != NULL;
}

BurrowChat *
burrow_session_get_reply_chat (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->reply_chat;
}

BurrowChatMessage *
burrow_session_get_reply (BurrowSession *self)
{
  g_return_val_if_fail (BURROW_IS_SESSION (self), NULL);
  return self->reply;
}

static void
burrow_session_dispose (GObject *object)
{
  BurrowSession *self = BURROW_SESSION (object);
  GHashTableIter iter;
  gpointer list;

  /* A reply cut short here is kept like a stopped one. */
  if (self->store != NULL)
    burrow_session_stop (self);
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_object (&self->pending_chat);

  if (self->lists != NULL)
    {
      g_hash_table_iter_init (&iter, self->lists);
      while (g_hash_table_iter_next (&iter, NULL, &list))
        g_object_weak_unref (list, on_list_finalized, self);
      g_clear_pointer (&self->lists, g_hash_table_unref);
    }

  g_clear_object (&self->backend);
  g_clear_object (&self->store);
  g_clear_object (&self->settings);
  g_clear_object (&self->monitor);

  G_OBJECT_CLASS (burrow_session_parent_class)->dispose (object);
}

static void
burrow_session_finalize (GObject *object)
{
  BurrowSession *self = BURROW_SESSION (object);

  g_free (self->model_dir);
  g_free (self->load_phase);
  g_free (self->load_error);
  g_free (self->load_error_details);
  g_free (self->memory_warning);
  g_free (self->pending_prompt);

  G_OBJECT_CLASS (burrow_session_parent_class)->finalize (object);
}

static void
burrow_session_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  BurrowSession *self = BURROW_SESSION (object);

  switch (prop_id)
    {
    case PROP_BACKEND:
      g_value_set_object (value, self->backend);
      break;
    case PROP_STORE:
      g_value_set_object (value, self->store);
      break;
    case PROP_SETTINGS:
      g_value_set_object (value, self->settings);
      break;
    case PROP_MODEL_STATE:
      g_value_set_enum (value, self->state);
      break;
    case PROP_MODEL_DIR:
      g_value_set_string (value, self->model_dir);
      break;
    case PROP_LOAD_FRACTION:
      g_value_set_double (value, self->load_fraction);
      break;
    case PROP_LOAD_PHASE:
      g_value_set_string (value, self->load_phase);
      break;
    case PROP_LOAD_ERROR:
      g_value_set_string (value, self->load_error);
      break;
    case PROP_LOAD_ERROR_DETAILS:
      g_value_set_string (value, self->load_error_details);
      break;
    case PROP_SUPPORTS_THINKING:
      g_value_set_boolean (value, self->supports_thinking);
      break;
    case PROP_MEMORY_WARNING:
      g_value_set_string (value, self->memory_warning);
      break;
    case PROP_GENERATING:
      g_value_set_boolean (value, self->generate_cancellable != NULL);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
burrow_session_set_property (GObject      *object,
                             guint         prop_id,
                             const GValue *value,
                             GParamSpec   *pspec)
{
  BurrowSession *self = BURROW_SESSION (object);

  switch (prop_id)
    {
    case PROP_BACKEND:
      self->backend = g_value_dup_object (value);
      break;
    case PROP_STORE:
      self->store = g_value_dup_object (value);
      break;
    case PROP_SETTINGS:
      self->settings = g_value_dup_object (value);
      g_signal_connect_object (self->settings, "notify::ram-budget",
                               G_CALLBACK (on_memory_setting), self, G_CONNECT_SWAPPED);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static GParamSpec *
readable_string (const char *name)
{
  return g_param_spec_string (name, NULL, NULL, NULL,
                              G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
}

static void
burrow_session_class_init (BurrowSessionClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags construct = G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS;
  const GParamFlags readable = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->dispose = burrow_session_dispose;
  object_class->finalize = burrow_session_finalize;
  object_class->get_property = burrow_session_get_property;
  object_class->set_property = burrow_session_set_property;

  properties[PROP_BACKEND] =
    g_param_spec_object ("backend", NULL, NULL, BURROW_TYPE_BACKEND, construct);
  properties[PROP_STORE] =
    g_param_spec_object ("store", NULL, NULL, BURROW_TYPE_CHAT_STORE, construct);
  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, BURROW_TYPE_SETTINGS, construct);
  properties[PROP_MODEL_STATE] =
    g_param_spec_enum ("model-state", NULL, NULL, BURROW_TYPE_MODEL_STATE, BURROW_MODEL_NONE, readable);
  properties[PROP_MODEL_DIR] = readable_string ("model-dir");
  properties[PROP_LOAD_FRACTION] =
    g_param_spec_double ("load-fraction", NULL, NULL, 0, 1, 0, readable);
  properties[PROP_LOAD_PHASE] = readable_string ("load-phase");
  properties[PROP_LOAD_ERROR] = readable_string ("load-error");
  properties[PROP_LOAD_ERROR_DETAILS] = readable_string ("load-error-details");
  properties[PROP_SUPPORTS_THINKING] =
    g_param_spec_boolean ("supports-thinking", NULL, NULL, FALSE, readable);
  properties[PROP_MEMORY_WARNING] = readable_string ("memory-warning");
  properties[PROP_GENERATING] =
    g_param_spec_boolean ("generating", NULL, NULL, FALSE, readable);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* (chat, reply): the reply, empty and streaming, was appended to the chat's messages. */
  signals[REPLY_STARTED] =
    g_signal_new ("reply-started", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 2, BURROW_TYPE_CHAT, BURROW_TYPE_CHAT_MESSAGE);
  /* (chat, reply, answer, reasoning): text the reply grew by. */
  signals[REPLY_DELTA] =
    g_signal_new ("reply-delta", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 4, BURROW_TYPE_CHAT, BURROW_TYPE_CHAT_MESSAGE,
                  G_TYPE_STRING, G_TYPE_STRING);
  /* (chat, reply, saved): the reply is final; saved is FALSE when it was empty (and
   * removed) or could not be saved. */
  signals[REPLY_FINISHED] =
    g_signal_new ("reply-finished", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 3, BURROW_TYPE_CHAT, BURROW_TYPE_CHAT_MESSAGE,
                  G_TYPE_BOOLEAN);
  /* (chat or NULL, error, fallback): something went wrong outside a call that could say
   * so; windows show burrow_error_summary (error, fallback). */
  signals[ERROR] =
    g_signal_new ("error", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 3, BURROW_TYPE_CHAT, G_TYPE_ERROR, G_TYPE_STRING);
}

static void
burrow_session_init (BurrowSession *self)
{
  self->monitor = burrow_perf_monitor_new ();
  self->lists = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
}

