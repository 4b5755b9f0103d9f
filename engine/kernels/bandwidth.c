/* Read bandwidth by a streaming sum, with the widest loads the CPU has. */
#include <stdint.h>

#include "kernels/bandwidth.h"
#include "kernels/dispatch.h"

#define ITEMS_PER_THREAD 4
#define MAX_ITEMS 1024
/* Bytes per work item: small enough that when another process preempts one thread the
 * others take over its share, as they do in the kernels (a few huge items left the pass
 * waiting for the preempted thread and under-measured the machine under load). */
#define ITEM_BYTES (1u << 20)

typedef struct {
  const uint8_t *buf;
  gsize bytes;
  gsize per_item; /* a multiple of 64 */
  BwStreamSum sum;
  uint64_t sums[MAX_ITEMS];
} SumJob;

static void
sum_item (void *ctx, int index, int thread_id)
{
  SumJob *job = ctx;
  gsize start = (gsize) index * job->per_item;
  gsize end = MIN (job->bytes, start + job->per_item);

  if (end > start)
    job->sums[index] = job->sum (job->buf + start, end - start);
}

double
bw_read_bandwidth (BwPool *pool, const void *buf, gsize bytes, double seconds)
{
  g_autofree SumJob *job = g_new0 (SumJob, 1);
  int items = (int) MIN ((gsize) MAX_ITEMS,
                         MAX ((gsize) bw_pool_size (pool) * ITEMS_PER_THREAD, bytes / ITEM_BYTES));
  gint64 t0, elapsed;
  double total = 0;
  volatile uint64_t sink = 0;

  job->buf = buf;
  job->bytes = bytes / 64 * 64;
  job->per_item = (job->bytes / (gsize) items + 63) / 64 * 64;
  job->sum = bw_kernels_stream_sum (bw_kernels_table (BW_ISA_AUTO));
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
