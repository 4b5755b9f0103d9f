/* The engine worker: a request queue into one thread, a result queue out of it.
 *
 * The worker thread never touches GTK or the owner objects. Results are appended to a queue
 * under a mutex; the first result after the queue was emptied arms the one result source by
 * setting its ready time, so a burst of results costs one main-loop wakeup, not one each. */
#include "burrow-config.h"

#include "burrow-demo.h"
#include "burrow-engine-worker.h"

/* Longest stretch one dispatch spends in callbacks before yielding to drawing and input. */
#define DISPATCH_BUDGET_USEC 8000

typedef struct {
  const BurrowWorkerRequestKind *kind;   /* NULL for the quit sentinel */
  guint64 id;
  gpointer payload;
  GDestroyNotify payload_free;
  GCancellable *caller_cancellable;
  gulong caller_handler;
  GCancellable *cancellable;             /* ours: caller cancel, owner gone, or shutdown */
  gboolean has_owner;
  GWeakRef owner;
  BurrowWorkerCallback callback;
  gpointer user_data;
} Request;

typedef struct {
  Request *request;
  gboolean done;
  gpointer data;
  GDestroyNotify data_free;
  GError *error;
} Item;

struct _BurrowWorkerJob {
  BurrowEngineWorker *worker;
  Request *request;
};

typedef struct {
  GSource source;
  BurrowEngineWorker *worker;
} ResultSource;

struct _BurrowEngineWorker {
  GObject parent_instance;

  GMainContext *context;
  GSource *source;
  GThread *thread;
  GAsyncQueue *requests;
  guint64 last_id;

  /* Worker thread only. */
  gpointer state;
  GDestroyNotify state_free;
  BurrowWorkerIdleFunc state_idle;

  GMutex lock;              /* guards the fields below */
  GQueue results;
  gboolean dispatch_pending;
  Request *current;
  gboolean shutting_down;
};

static void burrow_engine_worker_backend_init (BurrowBackendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (BurrowEngineWorker, burrow_engine_worker, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (BURROW_TYPE_BACKEND,
                                                      burrow_engine_worker_backend_init))

static void
request_clear (gpointer data)
{
  Request *r = data;

  if (r->caller_handler != 0)
    g_cancellable_disconnect (r->caller_cancellable, r->caller_handler);
  g_clear_object (&r->caller_cancellable);
  g_clear_object (&r->cancellable);
  if (r->payload != NULL && r->payload_free != NULL)
    r->payload_free (r->payload);
  g_weak_ref_clear (&r->owner);
}

static Request *
request_ref (Request *r)
{
  return g_atomic_rc_box_acquire (r);
}

static void
request_unref (Request *r)
{
  g_atomic_rc_box_release_full (r, request_clear);
}

static void
item_free (Item *item)
{
  if (item->data != NULL && item->data_free != NULL)
    item->data_free (item->data);
  g_clear_error (&item->error);
  request_unref (item->request);
  g_free (item);
}

/* Any thread. Takes over the reference to @r. */
static void
post_item (BurrowEngineWorker *self,
           Request            *r,
           gboolean            done,
           gpointer            data,
           GDestroyNotify      data_free,
           GError             *error)
{
  Item *item = g_new0 (Item, 1);
  gboolean wake;

  item->request = r;
  item->done = done;
  item->data = data;
  item->data_free = data_free;
  item->error = error;

  g_mutex_lock (&self->lock);
  g_queue_push_tail (&self->results, item);
  wake = !self->dispatch_pending;
  self->dispatch_pending = TRUE;
  g_mutex_unlock (&self->lock);

  if (wake)
    g_source_set_ready_time (self->source, 0);
}

static void
run_request (BurrowEngineWorker *self,
             Request            *r)
{
  BurrowWorkerJob job = { self, r };
  GError *error = NULL;
  gpointer result = NULL;
  gboolean shutting_down;

  g_mutex_lock (&self->lock);
  shutting_down = self->shutting_down;
  if (!shutting_down)
    self->current = r;
  g_mutex_unlock (&self->lock);

  if (shutting_down)
    g_cancellable_cancel (r->cancellable);

  if (!g_cancellable_set_error_if_cancelled (r->cancellable, &error))
    {
      result = r->kind->run (&job, r->payload, r->cancellable, &error);
      if (error != NULL && result != NULL && r->kind->result_free != NULL)
        g_clear_pointer (&result, r->kind->result_free);
    }

  g_mutex_lock (&self->lock);
  self->current = NULL;
  g_mutex_unlock (&self->lock);

  post_item (self, r, TRUE, result, r->kind->result_free, error);
}

/* The next request; until one arrives, the state's idle work in short slices. */
static Request *
next_request (BurrowEngineWorker *self)
{
  while (self->state != NULL && self->state_idle != NULL && self->state_idle (self->state))
    {
      Request *r = g_async_queue_try_pop (self->requests);
      if (r != NULL)
        return r;
    }
  return g_async_queue_pop (self->requests);
}

static gpointer
worker_thread (gpointer data)
{
  BurrowEngineWorker *self = data;

  for (;;)
    {
      Request *r = next_request (self);

      if (r->kind == NULL)
        {
          request_unref (r);
          break;
        }
      run_request (self, r);
    }

  if (self->state != NULL && self->state_free != NULL)
    self->state_free (self->state);
  self->state = NULL;

  return NULL;
}

/* Main context. */
static void
deliver_item (Item *item)
{
  Request *r = item->request;
  g_autoptr(GObject) owner = NULL;
  BurrowWorkerResult result = { r->id, item->done, item->data, NULL };
  gboolean cancelled;

  if (r->has_owner)
    {
      owner = g_weak_ref_get (&r->owner);
      if (owner == NULL)
        {
          g_cancellable_cancel (r->cancellable);
          return;
        }
    }

  cancelled = r->caller_cancellable != NULL && g_cancellable_is_cancelled (r->caller_cancellable);
  if (cancelled && !item->done)
    return;

  if (cancelled && !g_error_matches (item->error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      if (item->data != NULL && item->data_free != NULL)
        item->data_free (item->data);
      item->data = result.data = NULL;
      g_clear_error (&item->error);
      g_cancellable_set_error_if_cancelled (r->caller_cancellable, &item->error);
    }

  result.error = item->error;
  r->callback (owner, &result, r->user_data);
  item->data = result.data;
}

static void
requeue_front (BurrowEngineWorker *self,
               GQueue             *batch)
{
  Item *item;

  g_mutex_lock (&self->lock);
  while ((item = g_queue_pop_tail (batch)) != NULL)
    g_queue_push_head (&self->results, item);
  self->dispatch_pending = TRUE;
  g_mutex_unlock (&self->lock);

  g_source_set_ready_time (self->source, 0);
}

static void
deliver_results (BurrowEngineWorker *self)
{
  GQueue batch;
  gint64 deadline;
  Item *item;

  /* Disarm before taking the queue: a post racing with us re-arms after we unlock. */
  g_source_set_ready_time (self->source, -1);

  g_mutex_lock (&self->lock);
  batch = self->results;
  g_queue_init (&self->results);
  self->dispatch_pending = FALSE;
  g_mutex_unlock (&self->lock);

  /* A callback may drop what was the last reference to the worker: then nobody wants the
   * rest of the batch, and the worker is disposed once this loop lets go of it. */
  g_object_ref (self);
  deadline = g_get_monotonic_time () + DISPATCH_BUDGET_USEC;

  while (self->source != NULL && G_OBJECT (self)->ref_count > 1 &&
         (item = g_queue_pop_head (&batch)) != NULL)
    {
      deliver_item (item);
      item_free (item);

      if (!g_queue_is_empty (&batch) && g_get_monotonic_time () > deadline)
        {
          if (self->source != NULL && G_OBJECT (self)->ref_count > 1)
            requeue_front (self, &batch);
          break;
        }
    }

  g_queue_clear_full (&batch, (GDestroyNotify) item_free);
  g_object_unref (self);
}

static gboolean
result_source_dispatch (GSource     *source,
                        GSourceFunc  callback,
                        gpointer     user_data)
{
  deliver_results (((ResultSource *) source)->worker);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs result_source_funcs = {
  .dispatch = result_source_dispatch,
};

static void
on_caller_cancelled (GCancellable *caller,
                     gpointer      ours)
{
  g_cancellable_cancel (ours);
}

guint64
burrow_engine_worker_submit (BurrowEngineWorker            *self,
                             const BurrowWorkerRequestKind *kind,
                             gpointer                       payload,
                             GDestroyNotify                 payload_free,
                             GCancellable                  *cancellable,
                             GObject                       *owner,
                             BurrowWorkerCallback           callback,
                             gpointer                       user_data)
{
  Request *r;

  g_return_val_if_fail (BURROW_IS_ENGINE_WORKER (self), 0);
  g_return_val_if_fail (kind != NULL && kind->run != NULL, 0);
  g_return_val_if_fail (callback != NULL, 0);
  g_return_val_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable), 0);
  g_return_val_if_fail (owner == NULL || G_IS_OBJECT (owner), 0);
  g_return_val_if_fail (self->thread != NULL, 0);

  r = g_atomic_rc_box_new0 (Request);
  r->kind = kind;
  r->id = ++self->last_id;
  r->payload = payload;
  r->payload_free = payload_free;
  r->cancellable = g_cancellable_new ();
  r->has_owner = owner != NULL;
  g_weak_ref_init (&r->owner, owner);
  r->callback = callback;
  r->user_data = user_data;

  if (cancellable != NULL)
    {
      r->caller_cancellable = g_object_ref (cancellable);
      r->caller_handler = g_cancellable_connect (cancellable,
                                                 G_CALLBACK (on_caller_cancelled),
                                                 g_object_ref (r->cancellable),
                                                 g_object_unref);
    }

  g_async_queue_push (self->requests, r);

  return r->id;
}

void
burrow_worker_job_post (BurrowWorkerJob *job,
                        gpointer         data,
                        GDestroyNotify   data_free)
{
  g_return_if_fail (job != NULL);

  if (g_cancellable_is_cancelled (job->request->cancellable))
    {
      if (data != NULL && data_free != NULL)
        data_free (data);
      return;
    }

  post_item (job->worker, request_ref (job->request), FALSE, data, data_free, NULL);
}

gpointer
burrow_worker_job_get_state (BurrowWorkerJob *job)
{
  g_return_val_if_fail (job != NULL, NULL);

  return job->worker->state;
}

void
burrow_worker_job_set_state (BurrowWorkerJob *job,
                             gpointer         state,
                             GDestroyNotify   state_free)
{
  BurrowEngineWorker *self;

  g_return_if_fail (job != NULL);

  self = job->worker;
  if (self->state != NULL && self->state != state && self->state_free != NULL)
    self->state_free (self->state);
  self->state = state;
  self->state_free = state_free;
  self->state_idle = NULL;
}

void
burrow_worker_job_set_idle (BurrowWorkerJob     *job,
                            BurrowWorkerIdleFunc idle)
{
  g_return_if_fail (job != NULL);

  job->worker->state_idle = idle;
}

/* ---- BurrowBackend ---- */

static BurrowBackendFlags
worker_get_flags (BurrowBackend *backend)
{
  return BURROW_BACKEND_LOCAL_FOLDERS | BURROW_BACKEND_PERF_NUMBERS;
}

static guint64
worker_load (BurrowBackend             *backend,
             const char                *model,
             const BurrowEngineOptions *options,
             GCancellable              *cancellable,
             GObject                   *owner,
             BurrowBackendCallback      callback,
             gpointer                   user_data)
{
  return burrow_engine_worker_load (BURROW_ENGINE_WORKER (backend), model, options,
                                    burrow_is_demo_model (model) ? BURROW_DEMO_EXPERT_SHARE : 0,
                                    cancellable, owner, callback, user_data);
}

static guint64
worker_generate (BurrowBackend         *backend,
                 BurrowGenerateRequest *request,
                 GCancellable          *cancellable,
                 GObject               *owner,
                 BurrowBackendCallback  callback,
                 gpointer               user_data)
{
  return burrow_engine_worker_generate (BURROW_ENGINE_WORKER (backend), request, cancellable,
                                        owner, callback, user_data);
}

static void
burrow_engine_worker_backend_init (BurrowBackendInterface *iface)
{
  iface->get_flags = worker_get_flags;
  iface->load = worker_load;
  iface->generate = worker_generate;
}

BurrowEngineWorker *
burrow_engine_worker_new (void)
{
  return g_object_new (BURROW_TYPE_ENGINE_WORKER, NULL);
}

static void
burrow_engine_worker_dispose (GObject *object)
{
  BurrowEngineWorker *self = BURROW_ENGINE_WORKER (object);

  if (self->thread != NULL)
    {
      g_autoptr(GCancellable) running = NULL;
      Request *sentinel = g_atomic_rc_box_new0 (Request);

      g_weak_ref_init (&sentinel->owner, NULL);

      g_mutex_lock (&self->lock);
      self->shutting_down = TRUE;
      if (self->current != NULL)
        running = g_object_ref (self->current->cancellable);
      g_mutex_unlock (&self->lock);

      if (running != NULL)
        g_cancellable_cancel (running);

      /* Requests queued ahead of the sentinel are skipped, not run. */
      g_async_queue_push (self->requests, sentinel);
      g_thread_join (self->thread);
      self->thread = NULL;
    }

  g_mutex_lock (&self->lock);
  g_queue_clear_full (&self->results, (GDestroyNotify) item_free);
  g_mutex_unlock (&self->lock);

  if (self->source != NULL)
    {
      g_source_destroy (self->source);
      g_clear_pointer (&self->source, g_source_unref);
    }

  G_OBJECT_CLASS (burrow_engine_worker_parent_class)->dispose (object);
}

static void
burrow_engine_worker_finalize (GObject *object)
{
  BurrowEngineWorker *self = BURROW_ENGINE_WORKER (object);

  g_async_queue_unref (self->requests);
  g_mutex_clear (&self->lock);
  g_main_context_unref (self->context);

  G_OBJECT_CLASS (burrow_engine_worker_parent_class)->finalize (object);
}

static void
burrow_engine_worker_class_init (BurrowEngineWorkerClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = burrow_engine_worker_dispose;
  object_class->finalize = burrow_engine_worker_finalize;
}

static void
burrow_engine_worker_init (BurrowEngineWorker *self)
{
  g_mutex_init (&self->lock);
  g_queue_init (&self->results);
  self->context = g_main_context_ref_thread_default ();
  self->requests = g_async_queue_new ();

  self->source = g_source_new (&result_source_funcs, sizeof (ResultSource));
  ((ResultSource *) self->source)->worker = self;
  g_source_set_static_name (self->source, "BurrowEngineWorker results");
  g_source_attach (self->source, self->context);

  self->thread = g_thread_new ("burrow-engine", worker_thread, self);
}
