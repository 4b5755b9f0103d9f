/* Read bandwidth by a streaming sum: eight independent 64-bit accumulators keep the
 * loads, not the adds, the limit. */
#include <stdint.h>

#include "kernels/bandwidth.h"

#define ITEMS_PER_THREAD 4
#define MAX_ITEMS 1024

typedef struct {
  const uint64_t *words;
  gsize n_words;
  gsize per_item;
  uint64_t sums[MAX_ITEMS];
} SumJob;

static void
sum_item (void *ctx, int index, int thread_id)
{
  SumJob *job = ctx;
  gsize start = (gsize) index * job->per_item;
  gsize end = MIN (job->n_words, start + job->per_item);
  const uint64_t *p = job->words;
  uint64_t s[8] = { 0 };

  for (gsize i = start; i + 8 <= end; i += 8)
    for (int k = 0; k < 8; k++)
      s[k] += p[i + k];
  job->sums[index] = s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

double
bw_read_bandwidth (BwPool *pool, const void *buf, gsize bytes, double seconds)
{
  g_autofree SumJob *job = g_new0 (SumJob, 1);
  int items = MIN (MAX_ITEMS, bw_pool_size (pool) * ITEMS_PER_THREAD);
  gint64 t0, elapsed;
  double total = 0;
  volatile uint64_t sink = 0;

  job->words = buf;
  job->n_words = bytes / 8;
  job->per_item = (job->n_words / (gsize) items + 7) / 8 * 8;
  t0 = g_get_monotonic_time ();
  do
    {
      bw_pool_run (pool, sum_item, job, items);
      sink += job->sums[0];
      total += (double) bytes;
      elapsed = g_get_monotonic_time () - t0;
    }
  while (elapsed < (gint64) (seconds * 1e6));
  (void) sink;
  return total / ((double) elapsed * 1e3);
}
