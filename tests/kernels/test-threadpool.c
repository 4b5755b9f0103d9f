/* The worker pool runs every index exactly once, on valid thread ids, with or without
 * sleeping workers; a NULL pool runs inline, and so does a run started from inside one of
 * the pool's own items. */
#include <glib.h>
#include <stdatomic.h>

#include "core/threadpool.h"

#define MAX_ITEMS 1000

typedef struct {
  _Atomic int hits[MAX_ITEMS];
  _Atomic int bad_tid;
  int size;
} Count;

static void
count_fn (void *ctx, int index, int tid)
{
  Count *c = ctx;
  atomic_fetch_add (&c->hits[index], 1);
  if (tid < 0 || tid >= c->size)
    atomic_store (&c->bad_tid, 1);
}

static void
run_and_check (BwPool *pool, int n)
{
  static Count c;

  for (int i = 0; i < MAX_ITEMS; i++)
    atomic_store (&c.hits[i], 0);
  atomic_store (&c.bad_tid, 0);
  c.size = bw_pool_size (pool);
  bw_pool_run (pool, count_fn, &c, n);
  for (int i = 0; i < MAX_ITEMS; i++)
    g_assert_cmpint (atomic_load (&c.hits[i]), ==, i < n ? 1 : 0);
  g_assert_cmpint (atomic_load (&c.bad_tid), ==, 0);
}

static void
test_null_pool (void)
{
  g_assert_cmpint (bw_pool_size (NULL), ==, 1);
  run_and_check (NULL, 0);
  run_and_check (NULL, 17);
}

static void
test_many_runs (void)
{
  for (int threads = 1; threads <= 4; threads++)
    {
      BwPool *pool = bw_pool_new (threads);
      g_assert_cmpint (bw_pool_size (pool), ==, threads);
      for (int iter = 0; iter < 3000; iter++)
        run_and_check (pool, iter % 37);
      run_and_check (pool, MAX_ITEMS);
      bw_pool_free (pool);
    }
}

/* Gaps between runs long enough for workers to fall asleep exercise the wake-up path. */
static void
test_sleeping_workers (void)
{
  BwPool *pool = bw_pool_new (3);

  for (int iter = 0; iter < 20; iter++)
    {
      g_usleep (3000);
      run_and_check (pool, 1 + iter * 7);
    }
  bw_pool_free (pool);
}

typedef struct {
  BwPool *pool;
  _Atomic int inner[8][16];
  _Atomic int outer_tid_ok;
} Nested;

static void
inner_fn (void *ctx, int index, int tid)
{
  Nested *n = ctx;
  /* inline: the same thread as the item that started it, reported as thread 0 */
  if (tid != 0)
    atomic_store (&n->outer_tid_ok, 0);
  atomic_fetch_add (&n->inner[0][index], 1);
}

static void
outer_fn (void *ctx, int index, int tid)
{
  Nested *n = ctx;
  bw_pool_run (n->pool, inner_fn, n, 16);
  atomic_fetch_add (&n->inner[1 + index][0], 1);
}

static void
test_nested_run (void)
{
  static Nested n;
  n.pool = bw_pool_new (3);
  atomic_store (&n.outer_tid_ok, 1);
  bw_pool_run (n.pool, outer_fn, &n, 7);
  for (int i = 0; i < 16; i++)
    g_assert_cmpint (atomic_load (&n.inner[0][i]), ==, 7);
  for (int k = 0; k < 7; k++)
    g_assert_cmpint (atomic_load (&n.inner[1 + k][0]), ==, 1);
  g_assert_cmpint (atomic_load (&n.outer_tid_ok), ==, 1);
  /* and the pool still runs jobs in parallel afterwards */
  run_and_check (n.pool, 500);
  bw_pool_free (n.pool);
}

static void
test_default_size (void)
{
  BwPool *pool = bw_pool_new (0);
  g_assert_cmpint (bw_pool_size (pool), >=, 1);
  run_and_check (pool, 100);
  bw_pool_free (pool);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/threadpool/null-pool", test_null_pool);
  g_test_add_func ("/threadpool/many-runs", test_many_runs);
  g_test_add_func ("/threadpool/sleeping-workers", test_sleeping_workers);
  g_test_add_func ("/threadpool/default-size", test_default_size);
  g_test_add_func ("/threadpool/nested-run", test_nested_run);
  return g_test_run ();
}
