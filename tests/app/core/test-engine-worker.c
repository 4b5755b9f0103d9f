/* The engine worker: ordering, a 10,000-result burst through one coalesced source,
 * cancellation before and during a run, owners that go away, and dispose while busy. */
#include "burrow-config.h"

#include "burrow-engine-worker.h"

#define WAIT_USEC (20 * G_USEC_PER_SEC)

#include "../iterate.h"

/* Waits for the worker thread without running the main context. */
#define SLEEP_UNTIL(cond)                                                    \
  G_STMT_START {                                                             \
    gint64 end_ = g_get_monotonic_time () + WAIT_USEC;                       \
    while (!(cond))                                                          \
      {                                                                      \
        g_assert_cmpint (g_get_monotonic_time (), <, end_);                  \
        g_usleep (200);                                                      \
      }                                                                      \
  } G_STMT_END

static gint n_count_runs;
static gint n_payloads_freed;
static gint n_results_freed;

/* ---- Request kinds used by the tests ---- */

typedef struct {
  guint n;          /* results to post */
  guint tag;        /* returned as the final result */
  gint *finished;   /* set when run returns, if not NULL */
} CountJob;

static void
count_job_free (gpointer data)
{
  g_atomic_int_inc (&n_payloads_freed);
  g_free (data);
}

static void
count_result_free (gpointer data)
{
  g_atomic_int_inc (&n_results_freed);
}

static gpointer
count_run (BurrowWorkerJob  *job,
           gpointer          payload,
           GCancellable     *cancellable,
           GError          **error)
{
  CountJob *c = payload;

  g_atomic_int_inc (&n_count_runs);
  for (guint i = 0; i < c->n; i++)
    burrow_worker_job_post (job, GUINT_TO_POINTER (i + 1), NULL);
  if (c->finished != NULL)
    g_atomic_int_set (c->finished, 1);

  return GUINT_TO_POINTER (c->tag);
}

static const BurrowWorkerRequestKind count_kind = { "count", count_run, count_result_free };

static guint64
submit_count (BurrowEngineWorker   *worker,
              guint                 n,
              guint                 tag,
              gint                 *finished,
              GCancellable         *cancellable,
              GObject              *owner,
              BurrowWorkerCallback  callback,
              gpointer              user_data)
{
  CountJob *c = g_new0 (CountJob, 1);

  c->n = n;
  c->tag = tag;
  c->finished = finished;
  return burrow_engine_worker_submit (worker, &count_kind, c, count_job_free, cancellable,
                                      owner, callback, user_data);
}

/* Blocks until opened or cancelled; posts one result every millisecond if asked to. */
typedef struct {
  GMutex mutex;
  GCond cond;
  gboolean open;
  gboolean post;
  gint running;
  gint saw_cancel;
  gint exited;
  gint n_posted;
} Gate;

static gpointer
gate_run (BurrowWorkerJob  *job,
          gpointer          payload,
          GCancellable     *cancellable,
          GError          **error)
{
  Gate *gate = payload;
  gpointer result = GUINT_TO_POINTER (1);

  g_atomic_int_set (&gate->running, 1);
  g_mutex_lock (&gate->mutex);
  while (!gate->open && !g_cancellable_is_cancelled (cancellable))
    {
      g_cond_wait_until (&gate->cond, &gate->mutex, g_get_monotonic_time () + 1000);
      if (gate->post)
        {
          g_atomic_int_inc (&gate->n_posted);
          burrow_worker_job_post (job, GUINT_TO_POINTER (1), NULL);
        }
    }
  g_mutex_unlock (&gate->mutex);

  if (g_cancellable_set_error_if_cancelled (cancellable, error))
    {
      g_atomic_int_set (&gate->saw_cancel, 1);
      result = NULL;
    }
  g_atomic_int_set (&gate->exited, 1);

  return result;
}

static const BurrowWorkerRequestKind gate_kind = { "gate", gate_run, NULL };

static void
gate_open (Gate *gate)
{
  g_mutex_lock (&gate->mutex);
  gate->open = TRUE;
  g_cond_signal (&gate->cond);
  g_mutex_unlock (&gate->mutex);
}

/* Thread-owned state: each run adds one to a counter kept between requests. */
typedef struct {
  guint count;
  GThread **freed_on_out;
} Counter;

static void
counter_free (gpointer data)
{
  Counter *counter = data;

  *counter->freed_on_out = g_thread_self ();
  g_free (counter);
}

static gpointer
tally_run (BurrowWorkerJob  *job,
           gpointer          payload,
           GCancellable     *cancellable,
           GError          **error)
{
  Counter *counter = burrow_worker_job_get_state (job);

  if (counter == NULL)
    {
      counter = g_new0 (Counter, 1);
      counter->freed_on_out = payload;
      burrow_worker_job_set_state (job, counter, counter_free);
    }
  counter->count++;

  return GUINT_TO_POINTER (counter->count);
}

static const BurrowWorkerRequestKind tally_kind = { "tally", tally_run, NULL };

/* State with idle work (the engine's background reads): each call takes 2 ms and says
 * whether more remains, while calls < limit. */
typedef struct {
  gint calls;
  gint limit;
  gint runs;
  GThread *thread;
} Idler;

static gboolean
idler_idle (gpointer data)
{
  Idler *idler = data;

  idler->thread = g_thread_self ();
  g_usleep (2000);
  return g_atomic_int_add (&idler->calls, 1) + 1 < g_atomic_int_get (&idler->limit);
}

static gpointer
idler_run (BurrowWorkerJob  *job,
           gpointer          payload,
           GCancellable     *cancellable,
           GError          **error)
{
  if (burrow_worker_job_get_state (job) == NULL)
    {
      burrow_worker_job_set_state (job, payload, NULL);
      burrow_worker_job_set_idle (job, idler_idle);
    }
  g_atomic_int_inc (&((Idler *) payload)->runs);

  return GUINT_TO_POINTER (1);
}

static const BurrowWorkerRequestKind idler_kind = { "idler", idler_run, NULL };

/* ---- What the main context sees ---- */

typedef struct {
  guint64 id;
  gboolean done;
  guint value;
} Event;

typedef struct {
  GArray *events;
  guint n_done;
  guint n_progress;
  GError *error;             /* of the last final call */
  GObject *last_owner;
  GCancellable *cancel_on_first;
  BurrowEngineWorker *drop_on_first;
} Recorder;

static void
recorder_init (Recorder *rec)
{
  memset (rec, 0, sizeof *rec);
  rec->events = g_array_new (FALSE, FALSE, sizeof (Event));
}

static void
recorder_clear (Recorder *rec)
{
  g_array_unref (rec->events);
  g_clear_error (&rec->error);
}

static void
record (GObject            *owner,
        BurrowWorkerResult *result,
        gpointer            user_data)
{
  Recorder *rec = user_data;
  Event ev = { result->request_id, result->done, GPOINTER_TO_UINT (result->data) };

  g_array_append_val (rec->events, ev);
  rec->last_owner = owner;
  if (result->done)
    {
      rec->n_done++;
      g_clear_error (&rec->error);
      if (result->error != NULL)
        rec->error = g_error_copy (result->error);
      return;
    }

  rec->n_progress++;
  if (rec->n_progress == 1 && rec->cancel_on_first != NULL)
    g_cancellable_cancel (rec->cancel_on_first);
  if (rec->n_progress == 1 && rec->drop_on_first != NULL)
    g_clear_object (&rec->drop_on_first);
}

static void
reset_counters (void)
{
  n_count_runs = 0;
  n_payloads_freed = 0;
  n_results_freed = 0;
}

/* ---- Tests ---- */

static void
test_order (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  const guint n_requests = 50;
  guint64 ids[50];
  Recorder rec;
  guint k = 0;

  reset_counters ();
  recorder_init (&rec);

  for (guint r = 0; r < n_requests; r++)
    ids[r] = submit_count (worker, r % 5, 1000 + r, NULL, NULL, NULL, record, &rec);
  ITERATE_UNTIL (rec.n_done == n_requests);

  /* Request by request: its posted results 1..n in order, then its final result. */
  for (guint r = 0; r < n_requests; r++)
    {
      g_assert_cmpuint (ids[r], >, r == 0 ? 0 : ids[r - 1]);
      for (guint i = 0; i < r % 5; i++, k++)
        {
          Event *ev = &g_array_index (rec.events, Event, k);

          g_assert_cmpuint (ev->id, ==, ids[r]);
          g_assert_false (ev->done);
          g_assert_cmpuint (ev->value, ==, i + 1);
        }
      g_assert_cmpuint (g_array_index (rec.events, Event, k).id, ==, ids[r]);
      g_assert_true (g_array_index (rec.events, Event, k).done);
      g_assert_cmpuint (g_array_index (rec.events, Event, k).value, ==, 1000 + r);
      k++;
    }
  g_assert_cmpuint (k, ==, rec.events->len);
  g_assert_null (rec.error);
  g_assert_cmpint (n_count_runs, ==, n_requests);
  g_assert_cmpint (n_payloads_freed, ==, n_requests);
  g_assert_cmpint (n_results_freed, ==, n_requests);

  recorder_clear (&rec);
}

/* Runs the main context until @rec has its final result; returns how many iterations
 * delivered results. The worker's one result source is the only thing delivering, and an
 * iteration dispatches a source at most once, so this counts its dispatches. */
static guint
iterate_counting_dispatches (Recorder *rec)
{
  gint64 end = g_get_monotonic_time () + WAIT_USEC;
  guint dispatches = 0;

  while (rec->n_done == 0)
    {
      guint seen = rec->events->len;

      g_assert_cmpint (g_get_monotonic_time (), <, end);
      if (!g_main_context_iteration (NULL, FALSE))
        g_usleep (200);
      if (rec->events->len > seen)
        dispatches++;
    }
  return dispatches;
}

static void
check_burst (Recorder *rec,
             guint     n)
{
  g_assert_cmpuint (rec->events->len, ==, n + 1);
  for (guint i = 0; i < n; i++)
    {
      g_assert_false (g_array_index (rec->events, Event, i).done);
      g_assert_cmpuint (g_array_index (rec->events, Event, i).value, ==, i + 1);
    }
  g_assert_true (g_array_index (rec->events, Event, n).done);
  g_assert_cmpuint (g_array_index (rec->events, Event, n).value, ==, 7);
  g_assert_null (rec->error);
}

/* 10,000 results while the main loop keeps running: all arrive, in order, in far fewer
 * source dispatches than results. */
static void
test_burst_live (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  const guint n = 10000;
  guint dispatches;
  Recorder rec;

  recorder_init (&rec);
  submit_count (worker, n, 7, NULL, NULL, NULL, record, &rec);
  dispatches = iterate_counting_dispatches (&rec);

  check_burst (&rec, n);
  g_test_message ("%u results in %u dispatches", n + 1, dispatches);
  g_assert_cmpuint (dispatches, >=, 1);
  g_assert_cmpuint (dispatches, <, n / 10);

  recorder_clear (&rec);
}

/* 10,000 results queued while the main loop is not running: one wakeup delivers them
 * (a few if the time budget splits the batch). */
static void
test_burst_coalesced (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  const guint n = 10000;
  gint finished = 0;
  guint dispatches;
  Recorder rec;

  recorder_init (&rec);
  while (g_main_context_iteration (NULL, FALSE))
    ;
  submit_count (worker, n, 7, &finished, NULL, NULL, record, &rec);
  SLEEP_UNTIL (g_atomic_int_get (&finished));
  g_usleep (20000);   /* the final result is posted right after run returns */
  dispatches = iterate_counting_dispatches (&rec);

  check_burst (&rec, n);
  g_test_message ("%u queued results in %u dispatches", n + 1, dispatches);
  g_assert_cmpuint (dispatches, >=, 1);
  g_assert_cmpuint (dispatches, <=, 5);

  recorder_clear (&rec);
}

static void
test_cancel_before_start (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Gate gate = { 0 };
  Recorder blocker, rec;

  reset_counters ();
  recorder_init (&blocker);
  recorder_init (&rec);

  burrow_engine_worker_submit (worker, &gate_kind, &gate, NULL, NULL, NULL, record, &blocker);
  SLEEP_UNTIL (g_atomic_int_get (&gate.running));
  submit_count (worker, 3, 1, NULL, cancellable, NULL, record, &rec);
  g_cancellable_cancel (cancellable);
  gate_open (&gate);

  ITERATE_UNTIL (blocker.n_done == 1 && rec.n_done == 1);
  g_assert_null (blocker.error);
  g_assert_cmpint (n_count_runs, ==, 0);
  g_assert_cmpuint (rec.n_progress, ==, 0);
  g_assert_error (rec.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (n_payloads_freed, ==, 1);

  recorder_clear (&blocker);
  recorder_clear (&rec);
}

/* Cancelling from a callback stops the running job and nothing it posts afterwards is
 * delivered. */
static void
test_cancel_while_running (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  Gate gate = { .post = TRUE };
  Recorder rec;

  recorder_init (&rec);
  rec.cancel_on_first = cancellable;
  burrow_engine_worker_submit (worker, &gate_kind, &gate, NULL, cancellable, NULL, record, &rec);

  ITERATE_UNTIL (rec.n_done == 1);
  g_assert_true (g_atomic_int_get (&gate.exited));
  g_assert_true (g_atomic_int_get (&gate.saw_cancel));
  g_assert_cmpuint (rec.n_progress, ==, 1);
  g_assert_error (rec.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_true (g_array_index (rec.events, Event, rec.events->len - 1).done);

  recorder_clear (&rec);
}

/* A request that succeeded on the worker but was cancelled before delivery ends as
 * cancelled, and its result is freed. */
static void
test_cancel_after_finish (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  gint finished = 0;
  Recorder rec;

  reset_counters ();
  recorder_init (&rec);
  submit_count (worker, 2, 5, &finished, cancellable, NULL, record, &rec);
  SLEEP_UNTIL (g_atomic_int_get (&finished));
  g_usleep (20000);
  g_cancellable_cancel (cancellable);

  ITERATE_UNTIL (rec.n_done == 1);
  g_assert_cmpuint (rec.n_progress, ==, 0);
  g_assert_error (rec.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpuint (g_array_index (rec.events, Event, 0).value, ==, 0);
  g_assert_cmpint (n_results_freed, ==, 1);

  recorder_clear (&rec);
}

/* Once the owner is finalized its request is cancelled and its callback never runs again. */
static void
test_owner_gone (void)
{
  g_autoptr(BurrowEngineWorker) worker = burrow_engine_worker_new ();
  GObject *owner = g_object_new (G_TYPE_OBJECT, NULL);
  Gate gate = { .post = TRUE };
  Recorder rec, after;

  recorder_init (&rec);
  recorder_init (&after);
  burrow_engine_worker_submit (worker, &gate_kind, &gate, NULL, NULL, owner, record, &rec);
  ITERATE_UNTIL (rec.n_progress >= 1);
  g_assert_true (rec.last_owner == owner);
  g_object_unref (owner);

  /* The next delivery finds the owner gone and cancels the job. */
  ITERATE_UNTIL (g_atomic_int_get (&gate.exited));
  g_assert_true (g_atomic_int_get (&gate.saw_cancel));

  /* The worker is free again, and the old request stays silent. */
  submit_count (worker, 1, 9, NULL, NULL, NULL, record, &after);
  ITERATE_UNTIL (after.n_done == 1);
  g_assert_cmpuint (rec.n_done, ==, 0);

  recorder_clear (&rec);
  recorder_clear (&after);
}

/* Dropping the last reference while a job runs and others wait: the running job is
 * cancelled, the waiting ones never run, the thread is joined, every payload is freed and
 * no callback runs afterwards. */
static void
test_dispose_while_busy (void)
{
  BurrowEngineWorker *worker = burrow_engine_worker_new ();
  Gate gate = { .post = TRUE };
  Recorder rec;

  reset_counters ();
  recorder_init (&rec);
  burrow_engine_worker_submit (worker, &gate_kind, &gate, NULL, NULL, NULL, record, &rec);
  for (guint i = 0; i < 3; i++)
    submit_count (worker, 10, i, NULL, NULL, NULL, record, &rec);
  SLEEP_UNTIL (g_atomic_int_get (&gate.n_posted) >= 3);

  g_object_unref (worker);

  g_assert_true (g_atomic_int_get (&gate.exited));
  g_assert_true (g_atomic_int_get (&gate.saw_cancel));
  g_assert_cmpint (n_count_runs, ==, 0);
  g_assert_cmpint (n_payloads_freed, ==, 3);
  for (guint i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_cmpuint (rec.events->len, ==, 0);

  recorder_clear (&rec);
}

/* A callback that drops the last reference to the worker mid-batch. */
static void
test_dispose_from_callback (void)
{
  BurrowEngineWorker *worker = burrow_engine_worker_new ();
  GWeakRef weak;
  gint finished = 0;
  Recorder rec;

  recorder_init (&rec);
  g_weak_ref_init (&weak, worker);
  rec.drop_on_first = worker;
  submit_count (worker, 100, 3, &finished, NULL, NULL, record, &rec);
  SLEEP_UNTIL (g_atomic_int_get (&finished));
  g_usleep (20000);

  ITERATE_UNTIL (rec.drop_on_first == NULL);
  for (guint i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_null (g_weak_ref_get (&weak));
  g_assert_cmpuint (rec.events->len, ==, 1);
  g_assert_cmpuint (rec.n_done, ==, 0);

  g_weak_ref_clear (&weak);
  recorder_clear (&rec);
}

/* State set by one request is seen by the next, and freed on the worker thread. */
static void
test_thread_state (void)
{
  BurrowEngineWorker *worker = burrow_engine_worker_new ();
  GThread *freed_on = NULL;
  Recorder rec;

  recorder_init (&rec);
  for (guint i = 0; i < 3; i++)
    burrow_engine_worker_submit (worker, &tally_kind, &freed_on, NULL, NULL, NULL, record, &rec);
  ITERATE_UNTIL (rec.n_done == 3);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpuint (g_array_index (rec.events, Event, i).value, ==, i + 1);
  g_assert_null (freed_on);

  g_object_unref (worker);
  g_assert_nonnull (freed_on);
  g_assert_true (freed_on != g_thread_self ());

  recorder_clear (&rec);
}

/* Between requests the worker thread runs the state's idle work while it reports more, and
 * still takes each request that arrives; once the work is done it waits without calling. */
static void
test_idle_work (void)
{
  BurrowEngineWorker *worker = burrow_engine_worker_new ();
  Idler idler = { 0, G_MAXINT, 0, NULL };
  Recorder rec;

  recorder_init (&rec);
  burrow_engine_worker_submit (worker, &idler_kind, &idler, NULL, NULL, NULL, record, &rec);
  ITERATE_UNTIL (rec.n_done == 1);
  SLEEP_UNTIL (g_atomic_int_get (&idler.calls) >= 3);
  g_assert_true (idler.thread != NULL && idler.thread != g_thread_self ());

  burrow_engine_worker_submit (worker, &idler_kind, &idler, NULL, NULL, NULL, record, &rec);
  ITERATE_UNTIL (rec.n_done == 2);
  g_assert_cmpint (g_atomic_int_get (&idler.runs), ==, 2);

  g_atomic_int_set (&idler.limit, 0);
  g_usleep (30000);
  gint calls = g_atomic_int_get (&idler.calls);
  g_usleep (50000);
  g_assert_cmpint (g_atomic_int_get (&idler.calls), ==, calls);

  g_object_unref (worker);
  recorder_clear (&rec);
}

/* Every phase the engine's load can report has a translatable text in the app, and an
 * unknown one is passed through untranslated. */
static void
test_load_phases (void)
{
  const char *const *phases = burrow_engine_load_phases ();
  int n = 0;
  for (; phases[n] != NULL; n++)
    g_assert_nonnull (burrow_load_phase_translate (phases[n]));
  g_assert_cmpint (n, >=, 4);
  g_assert_null (burrow_load_phase_translate ("Not a phase"));
  g_assert_null (burrow_load_phase_translate (NULL));
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/engine-worker/order", test_order);
  g_test_add_func ("/engine-worker/burst-live", test_burst_live);
  g_test_add_func ("/engine-worker/burst-coalesced", test_burst_coalesced);
  g_test_add_func ("/engine-worker/cancel-before-start", test_cancel_before_start);
  g_test_add_func ("/engine-worker/cancel-while-running", test_cancel_while_running);
  g_test_add_func ("/engine-worker/cancel-after-finish", test_cancel_after_finish);
  g_test_add_func ("/engine-worker/owner-gone", test_owner_gone);
  g_test_add_func ("/engine-worker/dispose-while-busy", test_dispose_while_busy);
  g_test_add_func ("/engine-worker/dispose-from-callback", test_dispose_from_callback);
  g_test_add_func ("/engine-worker/thread-state", test_thread_state);
  g_test_add_func ("/engine-worker/idle-work", test_idle_work);
  g_test_add_func ("/engine-worker/load-phases", test_load_phases);

  return g_test_run ();
}
