/* The slow part of the expert store's creation: its buffers are touched up front, and the
 * learned pins are read into them as they become ready, so that a session starts with the
 * experts past sessions used most. */
#include <string.h>

#include "stream/expert-plan.h"
#include "stream/expert-store-private.h"

/* Most of the memory room the up-front fill may take: a budget set larger than the process
 * can hold fills the rest on demand instead of being killed while loading. */
#define PREFAULT_FRACTION 0.9
/* Prefaulted buffers, or pins landed, between progress reports. */
#define PROGRESS_STEP 16
/* How long creation waits for the pins' reads still in flight once the buffers are ready.
 * Nearly every pin is needed within a reply's first tokens: read now, many at a time with
 * nothing else waiting, they cost less than as idle reads squeezed between the first
 * reply's products, which they would delay (a DeepSeek-V3 GGUF whose last 5 GB of pins
 * went on as idle reads: 0.18 s a token against 0.11-0.14). Past WARM_FINISH_US, it waits
 * on while the rest would land within WARM_FINISH_US more at the rate they have landed so
 * far, up to WARM_FINISH_MAX_US; on a disk too slow for that, or stalled, the rest go on as
 * idle reads. */
#define WARM_FINISH_US (5 * G_USEC_PER_SEC)
#define WARM_FINISH_MAX_US (15 * G_USEC_PER_SEC)

/* The warm start: the learned pins, most used first, read into the room the cache has free
 * as idle reads, so that a session starts with the experts past sessions used most instead
 * of meeting each one on first use. `next` is the first pin not read yet. */
typedef struct {
  guint32 *order;
  gsize n, next;
  gboolean stopped;   /* no more reads: the cache is full, or the load was cancelled */
  gboolean cancelled;
  guint64 buffers;    /* the prefault's count (0: none), for progress */
  double reported;    /* the last fraction reported */
} WarmStart;

/* Progress over both halves of the work, a buffer touched or a pin landed each, since the
 * disk and the CPU do them side by side; only when it moved. FALSE: the load was
 * cancelled. */
static gboolean
report (BwExpertStore *s, WarmStart *w, guint64 buffers_done, guint64 pins)
{
  const guint64 total = w->buffers + pins;
  const double done = total > 0 ? (double) (buffers_done + MIN (s->warm_landed, pins))
                                   / (double) total
                                 : 1.0;
  if (s->opts.prefault_progress == NULL || done <= w->reported)
    return TRUE;
  w->reported = done;
  if (s->opts.prefault_progress (done, s->opts.prefault_progress_data))
    return TRUE;
  w->stopped = w->cancelled = TRUE;
  return FALSE;
}

static void
warm_start_plan (BwExpertStore *s, WarmStart *w)
{
  memset (w, 0, sizeof *w);
  if (s->sticky == NULL || s->past == NULL)
    return;
  w->order = g_new (guint32, MAX (s->n_slots, 1));
  w->n = bw_policy_warm_order (s->past->counts, s->sticky, s->n_slots, w->order);
}

/* Starts the reads of the next pins while the cache has room; with `ready_only` (while the
 * cache is prefaulted), only as many as there are buffers ready. */
static void
warm_start_more (BwExpertStore *s, WarmStart *w, gboolean ready_only)
{
  Slot *fresh[BW_MAX_BATCH_EXPERTS];
  int n_fresh = 0;

  for (; w->next < w->n && !w->stopped; w->next++)
    {
      const guint32 i = w->order[w->next];
      const int layer = (int) (i / (guint32) s->n_experts), e = (int) (i % (guint32) s->n_experts);
      if (s->table[i] != NULL)
        continue;
      if (ready_only && bw_buffer_pool_reserved (s->spares) == 0)
        break;
      Slot *slot = s->bytes_used + s->layers[layer].max_buf > s->budget
                     ? NULL : bw_store_slot_create (s, layer, e, FALSE, NULL);
      if (slot == NULL)
        {
          w->stopped = TRUE;
          break;
        }
      slot->warming = slot->speculative = TRUE;
      fresh[n_fresh++] = slot;
      atomic_fetch_add (&s->warm_issued, 1);
      if (n_fresh == BW_MAX_BATCH_EXPERTS)
        {
          bw_store_start_reads (s, fresh, n_fresh, BW_IO_IDLE);
          n_fresh = 0;
        }
    }
  bw_store_start_reads (s, fresh, n_fresh, BW_IO_IDLE);
}

/* Buffers of the largest size any layer needs, allocated and touched while the store is
 * created: for as many experts as the budget holds, or with learned pins for theirs and a
 * tenth of the budget's (bw_policy_prefault_count); re-encoded experts get buffers of their
 * own size instead. Touching the memory is the CPU's work and the warm start's reads are
 * the disk's, so the pins are read into the buffers as they come: the disk is not left
 * idle while the memory is prepared. */
static void
prefault (BwExpertStore *s, WarmStart *warm)
{
  guint64 size = 0;
  for (int l = 0; l < s->n_layers; l++)
    size = MAX (size, s->layers[l].max_buf);
  if (s->opts.no_prefault || s->requant != NULL || size == 0)
    return;
  const guint64 room = (guint64) ((double) s->room * PREFAULT_FRACTION);
  const guint64 count = bw_policy_prefault_count (s->budget, room, size, s->n_total_experts,
                                                  warm->n);
  /* One buffer per thread a step, a few milliseconds: the reads in flight outlast it. */
  const int step = s->opts.pool != NULL ? MAX (1, bw_pool_size (s->opts.pool)) : 1;
  guint64 reported = 0;

  warm->buffers = count;
  s->spares = bw_buffer_pool_new (size, BW_PLAN_BUF_ALIGN);
  for (guint64 at = 0; at < count;)
    {
      const int n = (int) MIN ((guint64) step, count - at);
      /* pins of a layer with smaller experts took buffers of their own */
      if (s->bytes_used + bw_buffer_pool_reserved (s->spares) + (guint64) n * size > s->budget)
        break;
      const gint64 t0 = g_get_monotonic_time ();
      const int got = bw_buffer_pool_fill (s->spares, n, s->opts.pool);
      s->touch_us += g_get_monotonic_time () - t0;
      s->touched_bytes += (guint64) got * size;
      at += (guint64) n;
      warm_start_more (s, warm, TRUE);
      bw_expert_store_idle (s, 0);
      if (got < n)
        break;
      if (at - reported >= PROGRESS_STEP || at == count)
        {
          reported = at;
          if (!report (s, warm, at, warm->n))
            break;
        }
    }
}

/* Whether the pins still in flight would land within WARM_FINISH_US at the rate pins have
 * landed since `t0`, when `landed0` had. */
static gboolean
warm_rest_is_near (BwExpertStore *s, guint64 issued, gint64 t0, guint64 landed0, gint64 now)
{
  const guint64 landed = s->warm_landed - landed0;
  if (landed == 0 || now <= t0)
    return FALSE;
  const double per_us = (double) landed / (double) (now - t0);
  return (double) (issued - s->warm_landed) <= per_us * (double) WARM_FINISH_US;
}

/* The pins' reads still in flight, until they land, or WARM_FINISH_US has passed and the
 * rest would not land soon (see WARM_FINISH_US). Nothing else is in flight while the store
 * is created, so every read reaped here is the warm start's. */
static void
warm_start_finish (BwExpertStore *s, WarmStart *w)
{
  const guint64 issued = atomic_load (&s->warm_issued);
  const gint64 t0 = g_get_monotonic_time ();
  const guint64 landed0 = s->warm_landed;
  guint64 reported = s->warm_landed;

  for (gint64 now = t0; !w->cancelled && s->warm_landed < issued
                        && now - t0 < WARM_FINISH_MAX_US
                        && (now - t0 < WARM_FINISH_US
                            || warm_rest_is_near (s, issued, t0, landed0, now))
                        && bw_expert_store_idle (s, 20);
       now = g_get_monotonic_time ())
    if (s->warm_landed - reported >= PROGRESS_STEP)
      {
        reported = s->warm_landed;
        report (s, w, w->buffers, issued);
      }
  if (!w->cancelled)
    report (s, w, w->buffers, issued);
}

void
bw_store_warm_start (BwExpertStore *s)
{
  WarmStart warm;
  warm_start_plan (s, &warm);
  /* Nothing else reads while the store is created, and this disk's throughput grows with
   * the bytes in flight: the pins' reads fill the ring, where between turns a few go at
   * once for the next request's sake. */
  bw_io_set_quiet_depth (s->io, BW_IO_URING_DEPTH);
  prefault (s, &warm);
  warm_start_more (s, &warm, FALSE);
  warm_start_finish (s, &warm);
  bw_io_set_quiet_depth (s->io, BW_IO_QUIET_DEPTH);
  g_free (warm.order);
}
