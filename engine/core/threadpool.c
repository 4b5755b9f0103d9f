/* A persistent worker pool. Workers spin briefly on a generation counter (decode issues
 * many small jobs back to back), then sleep on a condition variable so an idle pool costs
 * nothing. Work items are claimed with one CAS on a word holding (generation, next index),
 * so a worker that wakes late can never run an item of a job that has moved on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "core/threadpool.h"

/* How long a thread polls before sleeping: long enough to span the gaps between the
 * kernels of one decode step, short enough not to steal a shared core for long. */
#define SPIN_US 50
/* Index part of a claim word while the job fields are being written. */
#define CLOSED 0xFFFFFFFFu

struct BwPool {
  int n_threads; /* including the caller */
  pthread_t *threads;

  _Atomic uint64_t claim;    /* generation << 32 | next index */
  _Atomic uint32_t generation;
  _Atomic int done;          /* items finished in this generation */
  _Atomic(BwPoolFn) fn;
  _Atomic(void *) ctx;
  _Atomic int n;
  atomic_bool stop;

  pthread_mutex_t lock;
  pthread_cond_t wake;       /* workers wait here for a new generation */
  pthread_cond_t finished;   /* the caller waits here for the last item */
  _Atomic int sleepers;      /* workers on `wake` (or about to be) */
  atomic_bool caller_sleeping;
};

typedef struct {
  BwPool *pool;
  int id;
} WorkerArg;

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

/* Polls: TRUE while still within SPIN_US of the first call (start = 0 initially). */
static inline gboolean
keep_spinning (int *polls, gint64 *start)
{
  cpu_relax ();
  if ((++*polls & 255) != 0)
    return TRUE;
  gint64 now = g_get_monotonic_time ();
  if (*start == 0)
    *start = now;
  return now - *start < SPIN_US;
}

/* The pool whose item this thread is running, if any: a bw_pool_run from inside an item
 * (e.g. the expert store re-encoding a landed expert for a job that took it) runs inline. */
static _Thread_local const BwPool *running_in;

/* Claims and runs items of generation gen until none are left. The job fields are read
 * after the claim word and only used once a CAS on that word proves the job is current. */
static void
run_items (BwPool *pool, uint32_t gen, int tid)
{
  for (;;)
    {
      uint64_t cur = atomic_load_explicit (&pool->claim, memory_order_acquire);
      uint32_t idx = (uint32_t) cur;

      if ((uint32_t) (cur >> 32) != gen)
        return;
      BwPoolFn fn = atomic_load_explicit (&pool->fn, memory_order_acquire);
      void *ctx = atomic_load_explicit (&pool->ctx, memory_order_acquire);
      int n = atomic_load_explicit (&pool->n, memory_order_acquire);
      if (idx >= (uint32_t) n)
        return;
      if (!atomic_compare_exchange_strong_explicit (&pool->claim, &cur, cur + 1,
                                                    memory_order_acq_rel, memory_order_acquire))
        continue;
      const BwPool *outer = running_in;
      running_in = pool;
      fn (ctx, (int) idx, tid);
      running_in = outer;
      if (atomic_fetch_add (&pool->done, 1) + 1 == n
          && atomic_load (&pool->caller_sleeping))
        {
          pthread_mutex_lock (&pool->lock);
          pthread_cond_signal (&pool->finished);
          pthread_mutex_unlock (&pool->lock);
        }
    }
}

static void *
worker_main (void *data)
{
  WorkerArg *arg = data;
  BwPool *pool = arg->pool;
  int id = arg->id;
  uint32_t seen = 0;

  g_free (arg);
  for (;;)
    {
      uint32_t gen;
      int polls = 0;
      gint64 start = 0;

      while ((gen = atomic_load_explicit (&pool->generation, memory_order_acquire)) == seen
             && !atomic_load (&pool->stop))
        {
          if (keep_spinning (&polls, &start))
            continue;
          atomic_fetch_add (&pool->sleepers, 1);
          pthread_mutex_lock (&pool->lock);
          while (atomic_load (&pool->generation) == seen && !atomic_load (&pool->stop))
            pthread_cond_wait (&pool->wake, &pool->lock);
          pthread_mutex_unlock (&pool->lock);
          atomic_fetch_sub (&pool->sleepers, 1);
          polls = 0;
          start = 0;
        }
      if (atomic_load (&pool->stop))
        return NULL;
      seen = gen;
      run_items (pool, gen, id);
    }
}

BwPool *
bw_pool_new (int n_threads)
{
  BwPool *pool = g_new0 (BwPool, 1);

  if (n_threads <= 0)
    {
      long online = sysconf (_SC_NPROCESSORS_ONLN);
      n_threads = online > 0 ? (int) online : 1;
    }
  pool->n_threads = n_threads;
  pthread_mutex_init (&pool->lock, NULL);
  pthread_cond_init (&pool->wake, NULL);
  pthread_cond_init (&pool->finished, NULL);
  pool->threads = g_new0 (pthread_t, n_threads);
  for (int i = 1; i < n_threads; i++)
    {
      WorkerArg *arg = g_new (WorkerArg, 1);
      arg->pool = pool;
      arg->id = i;
      if (pthread_create (&pool->threads[i], NULL, worker_main, arg) != 0)
        g_error ("bw_pool_new: cannot create worker thread %d", i);
    }
  return pool;
}

void
bw_pool_free (BwPool *pool)
{
  if (pool == NULL)
    return;
  pthread_mutex_lock (&pool->lock);
  atomic_store (&pool->stop, true);
  pthread_cond_broadcast (&pool->wake);
  pthread_mutex_unlock (&pool->lock);
  for (int i = 1; i < pool->n_threads; i++)
    pthread_join (pool->threads[i], NULL);
  pthread_cond_destroy (&pool->finished);
  pthread_cond_destroy (&pool->wake);
  pthread_mutex_destroy (&pool->lock);
  g_free (pool->threads);
  g_free (pool);
}

int
bw_pool_size (const BwPool *pool)
{
  return pool ? pool->n_threads : 1;
}

static void
wait_done (BwPool *pool, int n)
{
  int polls = 0;
  gint64 start = 0;

  while (atomic_load_explicit (&pool->done, memory_order_acquire) < n)
    {
      if (keep_spinning (&polls, &start))
        continue;
      pthread_mutex_lock (&pool->lock);
      atomic_store (&pool->caller_sleeping, true);
      while (atomic_load (&pool->done) < n)
        pthread_cond_wait (&pool->finished, &pool->lock);
      atomic_store (&pool->caller_sleeping, false);
      pthread_mutex_unlock (&pool->lock);
    }
}

void
bw_pool_run (BwPool *pool, BwPoolFn fn, void *ctx, int n)
{
  if (n <= 0)
    return;
  if (pool == NULL || pool->n_threads <= 1 || n == 1 || running_in == pool)
    {
      for (int i = 0; i < n; i++)
        fn (ctx, i, 0);
      return;
    }

  uint32_t gen = atomic_load (&pool->generation) + 1;
  if (gen == 0)
    gen = 1; /* 0 is every worker's initial "seen" */

  /* Close the claim word first: a worker that sees the new job fields then fails its CAS
   * on the old generation instead of running a new item under an old index. */
  atomic_store (&pool->claim, ((uint64_t) gen << 32) | CLOSED);
  atomic_thread_fence (memory_order_release);
  atomic_store_explicit (&pool->fn, fn, memory_order_relaxed);
  atomic_store_explicit (&pool->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit (&pool->n, n, memory_order_relaxed);
  atomic_store_explicit (&pool->done, 0, memory_order_relaxed);
  atomic_store_explicit (&pool->claim, (uint64_t) gen << 32, memory_order_release);
  atomic_store (&pool->generation, gen);
  if (atomic_load (&pool->sleepers) > 0)
    {
      pthread_mutex_lock (&pool->lock);
      pthread_cond_broadcast (&pool->wake);
      pthread_mutex_unlock (&pool->lock);
    }

  run_items (pool, gen, 0);
  wait_done (pool, n);
}
