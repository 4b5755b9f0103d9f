/* The worker's load request: a model folder into memory, replacing the one loaded before,
 * with progress on the way. */
#include "burrow-config.h"

#include "burrow-engine-worker.h"
#include "burrow-engine-worker-state.h"

#include <glib/gi18n.h>

/* Progress posts at most this often; the engine may report far more often. */
#define PROGRESS_INTERVAL_USEC 40000

typedef struct {
  char *dir;
  BurrowEngineOptions options;
  char *io_backend;
  char *tokenizer;
  char *chat_template;
  double expert_share;
} LoadPayload;

typedef struct {
  BurrowWorkerJob *job;
  gint64 last_post;
} LoadProgress;

void
burrow_worker_model_free (gpointer data)
{
  BurrowWorkerModel *model = data;

  g_clear_pointer (&model->conv, burrow_conversation_free);
  g_clear_pointer (&model->engine, burrow_engine_unref);
  g_free (model->dir);
  g_free (model);
}

/* Between requests: the warm start reads on while the user types. */
static gboolean
worker_model_idle (gpointer data)
{
  BurrowWorkerModel *model = data;

  return burrow_engine_idle (model->engine, 20);
}

static void
load_payload_free (gpointer data)
{
  LoadPayload *payload = data;

  g_free (payload->dir);
  g_free (payload->io_backend);
  g_free (payload->tokenizer);
  g_free (payload->chat_template);
  g_free (payload);
}

/* The engine's load phases, for xgettext; the test-engine-worker suite checks that every
 * phase the engine can report is here. */
static const char *const load_phases[] = {
  /* Translators: loading a model: opening the checkpoint's list of tensors */
  N_("Reading the checkpoint index"),
  /* Translators: loading a model: the weights that stay in memory (not the experts) */
  N_("Reading resident weights"),
  /* Translators: loading a model: setting aside memory for the experts read from disk */
  N_("Preparing the expert cache"),
  /* Translators: loading a model: done */
  N_("Ready"),
};

const char *
burrow_load_phase_translate (const char *phase)
{
  for (gsize i = 0; phase != NULL && i < G_N_ELEMENTS (load_phases); i++)
    if (g_str_equal (phase, load_phases[i]))
      return _(load_phases[i]);
  return NULL;
}

static void
on_progress (double      fraction,
             const char *phase,
             gpointer    user_data)
{
  LoadProgress *state = user_data;
  BurrowLoadProgress *progress;
  gint64 now = g_get_monotonic_time ();

  if (now - state->last_post < PROGRESS_INTERVAL_USEC && fraction < 1.0)
    return;
  state->last_post = now;

  progress = g_new0 (BurrowLoadProgress, 1);
  progress->fraction = CLAMP (fraction, 0.0, 1.0);
  const char *shown = burrow_load_phase_translate (phase);
  progress->phase = g_strdup (shown != NULL ? shown : phase);
  burrow_worker_job_post (state->job, progress, (GDestroyNotify) burrow_load_progress_free);
}

static gpointer
load_run (BurrowWorkerJob  *job,
          gpointer          data,
          GCancellable     *cancellable,
          GError          **error)
{
  LoadPayload *payload = data;
  LoadProgress progress = { job, 0 };
  BurrowModelInfo info = { 0 };
  BurrowWorkerModel *model;
  BurrowLoadResult *result;
  BurrowEngine *engine;

  /* A folder that cannot load at all leaves the old model in place. */
  if (!burrow_inspect (payload->dir, &info, error))
    return NULL;
  if (info.tokenizer == NULL && payload->options.tokenizer == NULL)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                   /* Translators: %s is the model folder; keep the file names as they are */
                   _("%s: no tokenizer.json or tiktoken.model in this folder"), payload->dir);
      burrow_model_info_clear (&info);
      return NULL;
    }
  /* The old model goes first: two large models rarely fit in memory together. */
  burrow_worker_job_set_state (job, NULL, NULL);
  gboolean capped = payload->options.ram_budget == 0 && payload->expert_share > 0 &&
                    info.expert_bytes > 0;
  if (capped)
    payload->options.ram_budget = MAX ((guint64) (payload->expert_share * (double) info.expert_bytes),
                                       info.read_per_token);

  engine = burrow_engine_load (payload->dir, &payload->options, on_progress, &progress,
                               cancellable, error);
  if (engine == NULL)
    {
      burrow_model_info_clear (&info);
      return NULL;
    }

  model = g_new0 (BurrowWorkerModel, 1);
  model->engine = engine;
  model->dir = g_strdup (payload->dir);
  model->bytes_per_expert = info.bytes_per_expert;
  burrow_worker_job_set_state (job, model, burrow_worker_model_free);
  burrow_worker_job_set_idle (job, worker_model_idle);

  result = g_new0 (BurrowLoadResult, 1);
  result->dir = g_strdup (payload->dir);
  result->name = g_strdup (burrow_engine_get_name (engine));
  result->family = g_strdup (burrow_engine_get_family (engine));
  result->supports_thinking = burrow_engine_supports_thinking (engine);
  result->bytes_per_expert = info.bytes_per_expert;
  result->snapshot = burrow_perf_snapshot_take (engine);
  if (capped)
    result->snapshot->cache_cap_share = payload->expert_share;
  burrow_model_info_clear (&info);

  return result;
}

static const BurrowWorkerRequestKind load_kind = {
  .name = "load",
  .run = load_run,
  .result_free = (GDestroyNotify) burrow_load_result_free,
};

guint64
burrow_engine_worker_load (BurrowEngineWorker        *self,
                           const char                *dir,
                           const BurrowEngineOptions *options,
                           double                     expert_share,
                           GCancellable              *cancellable,
                           GObject                   *owner,
                           BurrowWorkerCallback       callback,
                           gpointer                   user_data)
{
  LoadPayload *payload;

  g_return_val_if_fail (dir != NULL, 0);
  g_return_val_if_fail (options != NULL, 0);

  payload = g_new0 (LoadPayload, 1);
  payload->dir = g_strdup (dir);
  payload->options = *options;
  payload->io_backend = g_strdup (options->io_backend);
  payload->options.io_backend = payload->io_backend;
  payload->expert_share = expert_share;
  /* NULL: the model folder's own */
  payload->tokenizer = g_strdup (options->tokenizer);
  payload->options.tokenizer = payload->tokenizer;
  /* NULL: the checkpoint's own */
  payload->chat_template = g_strdup (options->chat_template);
  payload->options.chat_template = payload->chat_template;

  return burrow_engine_worker_submit (self, &load_kind, payload, load_payload_free,
                                      cancellable, owner, callback, user_data);
}
