/* The worker's generate request: one assistant reply for a conversation, streamed back a
 * token at a time with the dashboard's numbers. The engine conversation stays on the worker
 * between turns, so the next turn of the same chat prefills only the new message; a chat
 * reopened later comes back warm from its session file. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>
#include <time.h>

#include "burrow-engine-worker.h"
#include "burrow-engine-worker-state.h"

typedef struct {
  BurrowWorkerJob *job;
  BurrowEngine *engine;
  gint64 interval_usec;         /* 0: no dashboard numbers */
  gint64 last_snapshot;
  double phases[BURROW_N_PHASES];
  int n_tokens;
  gint64 dashboard_usec;        /* spent on the dashboard's reads */
  gint64 dashboard_cpu_nsec;    /* the same in this thread's CPU time */
} Stream;

static gint64
thread_cpu_nsec (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* TRUE if the conversation's messages are the first of the wanted ones and at least the
 * last wanted one (the new user message) is still to be added. */
static gboolean
continues (BurrowConversation          *conv,
           const BurrowGenerateRequest *request)
{
  guint n = burrow_conversation_get_n_messages (conv);
  guint n_wanted;
  const BurrowGenerateMessage *wanted = burrow_generate_request_get_messages (request, &n_wanted);

  if (n >= n_wanted)
    return FALSE;
  for (guint i = 0; i < n; i++)
    {
      const BurrowGenerateMessage *m = &wanted[i];
      const char *content, *reasoning;

      if (burrow_conversation_get_message (conv, i, &content, &reasoning) != m->role ||
          g_strcmp0 (content, m->content) != 0 || g_strcmp0 (reasoning, m->reasoning) != 0)
        return FALSE;
    }
  return TRUE;
}

static void
add_rest (BurrowConversation          *conv,
          const BurrowGenerateRequest *request)
{
  guint n_wanted;
  const BurrowGenerateMessage *wanted = burrow_generate_request_get_messages (request, &n_wanted);

  for (guint i = burrow_conversation_get_n_messages (conv); i < n_wanted; i++)
    {
      const BurrowGenerateMessage *m = &wanted[i];

      burrow_conversation_add_message (conv, m->role, m->content,
                                       m->role == BURROW_ROLE_ASSISTANT ? m->reasoning : NULL);
    }
}

/* The engine conversation for this turn: the one kept from the chat's last turn, the one
 * in its session file, or (when the chat was edited, regenerated or its file is unusable)
 * a new one that prefills every message. */
static gboolean
prepare_conversation (BurrowWorkerModel      *model,
                      BurrowGenerateRequest  *request,
                      GCancellable           *cancellable,
                      GError                **error)
{
  const char *session_path = burrow_generate_request_get_session_path (request);
  BurrowConversation *conv;

  if (model->conv != NULL && model->chat_id == burrow_generate_request_get_chat_id (request) &&
      continues (model->conv, request))
    {
      add_rest (model->conv, request);
      return TRUE;
    }

  g_clear_pointer (&model->conv, burrow_conversation_free);
  model->chat_id = burrow_generate_request_get_chat_id (request);
  conv = burrow_conversation_new (model->engine);

  if (session_path != NULL)
    {
      g_autoptr(GError) session_error = NULL;

      /* An unusable file keeps what could be trusted; the prefix check decides the rest. */
      if (!burrow_conversation_open_session (conv, session_path, cancellable,
                                             &session_error) &&
          g_error_matches (session_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          burrow_conversation_free (conv);
          g_propagate_error (error, g_steal_pointer (&session_error));
          return FALSE;
        }

      if (!continues (conv, request))
        {
          g_autoptr(GError) fresh_error = NULL;

          burrow_conversation_free (conv);
          g_unlink (session_path);
          conv = burrow_conversation_new (model->engine);
          /* A file that cannot be written costs only the warm reopen, not the reply. */
          if (!burrow_conversation_open_session (conv, session_path, cancellable,
                                                 &fresh_error))
            {
              burrow_conversation_free (conv);
              if (g_error_matches (fresh_error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                {
                  g_propagate_error (error, g_steal_pointer (&fresh_error));
                  return FALSE;
                }
              conv = burrow_conversation_new (model->engine);
            }
        }
    }

  add_rest (conv, request);
  model->conv = conv;
  return TRUE;
}

/* A snapshot is due: the engine's numbers and every expert's tier and recency. */
static void
read_dashboard (Stream               *s,
                BurrowGenerateUpdate *update,
                gint64                t)
{
  gint64 cpu = thread_cpu_nsec ();

  update->snapshot = burrow_perf_snapshot_take (s->engine);
  s->last_snapshot = t;
  s->dashboard_cpu_nsec += thread_cpu_nsec () - cpu;
  s->dashboard_usec += g_get_monotonic_time () - t;
}

static void
on_token (const BurrowToken *token,
          gpointer           user_data)
{
  Stream *s = user_data;
  BurrowGenerateUpdate *update = g_new0 (BurrowGenerateUpdate, 1);
  double now[BURROW_N_PHASES];

  update->answer = g_strdup (token->answer);
  update->reasoning = g_strdup (token->reasoning);

  if (token->id >= 0)
    {
      update->has_token = TRUE;
      update->sample.first = s->n_tokens == 0;
      update->n_tokens = ++s->n_tokens;

      burrow_engine_get_phase_seconds (s->engine, now);
      for (int p = 0; p < BURROW_N_PHASES; p++)
        update->sample.phase_seconds[p] = now[p] - s->phases[p];
      memcpy (s->phases, now, sizeof now);
      burrow_token_sample_take (s->engine, &update->sample);

      if (s->interval_usec > 0)
        {
          gint64 t = g_get_monotonic_time ();

          if (t - s->last_snapshot >= s->interval_usec)
            read_dashboard (s, update, t);
        }
    }

  burrow_worker_job_post (s->job, update, (GDestroyNotify) burrow_generate_update_free);
}

static gpointer
generate_run (BurrowWorkerJob  *job,
              gpointer          data,
              GCancellable     *cancellable,
              GError          **error)
{
  BurrowGenerateRequest *request = data;
  BurrowWorkerModel *model = burrow_worker_job_get_state (job);
  BurrowGenerateResult *result;
  Stream s = { job };
  guint n_messages;
  const BurrowGenerateMessage *messages = burrow_generate_request_get_messages (request, &n_messages);
  gint64 cpu_start;
  gboolean ok;

  if (model == NULL)
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           _("No model is loaded"));
      return NULL;
    }
  if (n_messages == 0 || messages[n_messages - 1].role == BURROW_ROLE_ASSISTANT)
    {
      g_set_error_literal (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                           _("The conversation does not end with a message to answer"));
      return NULL;
    }

  if (!prepare_conversation (model, request, cancellable, error))
    return NULL;

  s.engine = model->engine;
  s.interval_usec = (gint64) (burrow_generate_request_get_snapshot_interval (request) * G_USEC_PER_SEC);
  burrow_engine_get_phase_seconds (model->engine, s.phases);

  result = g_new0 (BurrowGenerateResult, 1);
  cpu_start = thread_cpu_nsec ();
  ok = burrow_conversation_generate (model->conv, burrow_generate_request_get_options (request), on_token, &s,
                                     &result->stats, cancellable, error);
  if (ok && s.interval_usec > 0)
    result->snapshot = burrow_perf_snapshot_take (model->engine);
  result->dashboard_seconds = (double) s.dashboard_usec / G_USEC_PER_SEC;
  result->dashboard_cpu_seconds = (double) s.dashboard_cpu_nsec / 1e9;
  result->thread_cpu_seconds = (double) (thread_cpu_nsec () - cpu_start) / 1e9;

  if (!ok)
    {
      burrow_generate_result_free (result);
      return NULL;
    }
  return result;
}

static const BurrowWorkerRequestKind generate_kind = {
  .name = "generate",
  .run = generate_run,
  .result_free = (GDestroyNotify) burrow_generate_result_free,
};

guint64
burrow_engine_worker_generate (BurrowEngineWorker    *self,
                               BurrowGenerateRequest *request,
                               GCancellable          *cancellable,
                               GObject               *owner,
                               BurrowWorkerCallback   callback,
                               gpointer               user_data)
{
  g_return_val_if_fail (request != NULL, 0);

  return burrow_engine_worker_submit (self, &generate_kind, request,
                                      (GDestroyNotify) burrow_generate_request_free,
                                      cancellable, owner, callback, user_data);
}
