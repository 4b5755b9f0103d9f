/* The worker's inspect request: read a checkpoint folder's headers off the main loop. */
#include "burrow-config.h"

#include "burrow-engine-worker.h"

static void
model_info_free (gpointer data)
{
  burrow_model_info_clear (data);
  g_free (data);
}

static gpointer
inspect_run (BurrowWorkerJob  *job,
             gpointer          payload,
             GCancellable     *cancellable,
             GError          **error)
{
  BurrowModelInfo *info = g_new0 (BurrowModelInfo, 1);

  if (!burrow_inspect (payload, info, error))
    {
      model_info_free (info);
      return NULL;
    }

  return info;
}

static const BurrowWorkerRequestKind inspect_kind = {
  .name = "inspect",
  .run = inspect_run,
  .result_free = model_info_free,
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
