/* The engine worker: one long-lived thread that owns the engine, and the local
 * implementation of BurrowBackend.
 *
 * Requests go in through a queue and run one at a time, in order. Everything a request
 * produces comes back on the main context captured at construction, through one coalesced
 * source, in the order it was produced. */
#pragma once

#include <gio/gio.h>

#include "burrow-backend.h"
#include "burrow-engine.h"
#include "burrow-perf-snapshot.h"

G_BEGIN_DECLS

#define BURROW_TYPE_ENGINE_WORKER (burrow_engine_worker_get_type ())
G_DECLARE_FINAL_TYPE (BurrowEngineWorker, burrow_engine_worker, BURROW, ENGINE_WORKER, GObject)

typedef struct _BurrowWorkerJob BurrowWorkerJob;

/* Runs on the worker thread. Returns the request's final result, or NULL with @error set.
 * A NULL result without an error is a success that carries no data. @cancellable fires when
 * the caller cancels, when the owner goes away, or when the worker shuts down. */
typedef gpointer (*BurrowWorkerFunc) (BurrowWorkerJob  *job,
                                      gpointer          payload,
                                      GCancellable     *cancellable,
                                      GError          **error);

/* What kind of work a request does: one static constant per kind. */
typedef struct {
  const char *name;
  BurrowWorkerFunc run;
  GDestroyNotify result_free;   /* frees what run returns; may be NULL */
} BurrowWorkerRequestKind;

/* One delivery on the main context, as for every backend (burrow-backend.h): a request
 * gets any number of posted results (done == FALSE), then exactly one final call
 * (done == TRUE) with its result or error. */
typedef BurrowBackendResult BurrowWorkerResult;
typedef BurrowBackendCallback BurrowWorkerCallback;

BurrowEngineWorker *burrow_engine_worker_new (void);

/* Queues a request and returns its id (never 0). @payload is freed with @payload_free on
 * either thread once the request is over. @owner is held weakly: once it is finalized the
 * request is cancelled and nothing more is delivered. After @cancellable is cancelled, no
 * more posted results are delivered and the final call carries G_IO_ERROR_CANCELLED. */
guint64 burrow_engine_worker_submit (BurrowEngineWorker            *self,
                                     const BurrowWorkerRequestKind *kind,
                                     gpointer                       payload,
                                     GDestroyNotify                 payload_free,
                                     GCancellable                  *cancellable,
                                     GObject                       *owner,
                                     BurrowWorkerCallback           callback,
                                     gpointer                       user_data);

/* For BurrowWorkerFunc implementations, on the worker thread: hands @data to the main
 * context as a posted result. Dropped at once if the request is already cancelled. */
void burrow_worker_job_post (BurrowWorkerJob *job,
                             gpointer         data,
                             GDestroyNotify   data_free);

/* What the worker thread keeps between requests: the engine and its loaded model. One
 * request sets it, later ones use it; only the worker thread ever touches it, and it is
 * freed there (with @state_free) when replaced or when the worker shuts down. */
gpointer burrow_worker_job_get_state (BurrowWorkerJob *job);
void burrow_worker_job_set_state (BurrowWorkerJob *job,
                                  gpointer         state,
                                  GDestroyNotify   state_free);

/* Work the state carries on while no request waits (the engine's background reads): the
 * worker thread calls it with the state between requests while it returns TRUE, and takes
 * any request that arrived after each call. It must return within a few tens of
 * milliseconds. Cleared when the state is replaced. */
typedef gboolean (*BurrowWorkerIdleFunc) (gpointer state);
void burrow_worker_job_set_idle (BurrowWorkerJob     *job,
                                 BurrowWorkerIdleFunc idle);

/* Requests the app makes. Each lives in burrow-engine-worker-<kind>.c. */

/* What an inspect request found: the folder's headers (burrow_inspect), and the quality
 * report of a compact copy (NULL for a folder without quality.json, or one that does not
 * parse). */
typedef struct {
  BurrowModelInfo info;
  BurrowQualityReport *quality;
} BurrowInspectResult;

/* Reads a checkpoint folder's headers and quality report. The final result's data is a
 * BurrowInspectResult *. */
guint64 burrow_engine_worker_inspect (BurrowEngineWorker   *self,
                                      const char           *dir,
                                      GCancellable         *cancellable,
                                      GObject              *owner,
                                      BurrowWorkerCallback  callback,
                                      gpointer              user_data);

/* Loads a model folder, replacing (and first freeing) the model loaded before; when it
 * fails or is cancelled, no model is loaded. With no RAM budget in @options and
 * @expert_share > 0, the expert cache gets that share of all the experts' bytes (the demo
 * model is small enough to fit whole, and should still stream). Posted results are
 * BurrowLoadProgress *; the final result is a BurrowLoadResult *. */

/* The translation of one of burrow_engine_load_phases(), or NULL for a phase the app does
 * not know (shown as the engine wrote it). */
const char *burrow_load_phase_translate (const char *phase);

guint64 burrow_engine_worker_load (BurrowEngineWorker        *self,
                                   const char                *dir,
                                   const BurrowEngineOptions *options,
                                   double                     expert_share,
                                   GCancellable              *cancellable,
                                   GObject                   *owner,
                                   BurrowWorkerCallback       callback,
                                   gpointer                   user_data);

/* One assistant reply from the loaded model (BurrowGenerateRequest, burrow-backend.h). The
 * worker keeps the engine conversation between turns of the same chat. */
/* Takes @request. Posted results are BurrowGenerateUpdate *; the final result is a
 * BurrowGenerateResult *. Cancelling stops within one layer's time; the engine keeps the
 * reply so far in its conversation. */
guint64 burrow_engine_worker_generate (BurrowEngineWorker    *self,
                                       BurrowGenerateRequest *request,
                                       GCancellable          *cancellable,
                                       GObject               *owner,
                                       BurrowWorkerCallback   callback,
                                       gpointer               user_data);

G_END_DECLS
