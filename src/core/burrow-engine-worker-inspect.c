/* The worker's inspect request: read a checkpoint folder's headers off the main loop. */
#include "burrow-config.h"

#include "burrow-engine-worker.h"

static void
inspect_result_free (gpointer data)
{
  BurrowInspectResult *result = data;

  burrow_model_info_clear (&result->info);
  if (result->quality != NULL)
    burrow_quality_report_clear (result->quality);
  g_free (result->quality);
  g_free (result);
}

static gpointer
inspect_run (BurrowWorkerJob  *job,
             gpointer          payload,
             GCancellable     *cancellable,
             GError          **error)
{
  BurrowInspectResult *result = g_new0 (BurrowInspectResult, 1);
  g_autoptr(GError) quality_error = NULL;

  if (!burrow_inspect (payload, &result->info, error))
    {
      inspect_result_free (result);
      return NULL;
    }
  result->quality = g_new0 (BurrowQualityReport, 1);
  if (!burrow_quality_report_load (payload, result->quality, &quality_error))
    {
      /* A report is extra: the model is shown without one it cannot read. */
      if (!g_error_matches (quality_error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND))
        g_debug ("%s", quality_error->message);
      g_clear_pointer (&result->quality, g_free);
    }

  return result;
}

static const BurrowWorkerRequestKind inspect_kind = {
  .name = "inspect",
  .run = inspect_run,
  .result_free = inspect_result_free,
};

guint64
burrow_engine_worker_inspect (BurrowEngineWorker   *self,
                              const char           *dir,
                              GCancellable         *cancellable,
                              GObject              *owner,
                              BurrowWorkerCallback  callback,
                              gpointer              user_data)
{
  g_return_val_if_fail (dir != NULL, 0);

  return burrow_engine_worker_submit (self, &inspect_kind, g_strdup (dir), g_free,
                                      cancellable, owner, callback, user_data);
}
