#include "burrow-config.h"

#include <string.h>

#include "burrow-perf-monitor.h"

typedef struct {
  double values[BURROW_PERF_N_SERIES];
} Point;

struct _BurrowPerfMonitor {
  GObject parent_instance;

  BurrowTokenTimes tokens[BURROW_PERF_TOKENS];   /* ring */
  guint token_head;                              /* next slot to write */
  guint n_tokens;

  Point points[BURROW_PERF_HISTORY];             /* ring */
  guint point_head;
  guint n_points;

  BurrowPerfSnapshot *snapshot;
  guint64 bytes_per_expert;
  int generated_at_snapshot;
  gboolean dirty;
  guint n_updates;
  gint64 last_flush;            /* when "updated" was last emitted */
  guint flush_timer;            /* flush_later's pending timeout */
};

G_DEFINE_FINAL_TYPE (BurrowPerfMonitor, burrow_perf_monitor, G_TYPE_OBJECT)

enum {
  UPDATED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
burrow_perf_monitor_finalize (GObject *object)
{
  BurrowPerfMonitor *self = BURROW_PERF_MONITOR (object);

  g_clear_handle_id (&self->flush_timer, g_source_remove);
  burrow_perf_snapshot_free (self->snapshot);

  G_OBJECT_CLASS (burrow_perf_monitor_parent_class)->finalize (object);
}

static void
burrow_perf_monitor_class_init (BurrowPerfMonitorClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = burrow_perf_monitor_finalize;

  signals[UPDATED] = g_signal_new ("updated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                   0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void
burrow_perf_monitor_init (BurrowPerfMonitor *self)
{
}

BurrowPerfMonitor *
burrow_perf_monitor_new (void)
{
  return g_object_new (BURROW_TYPE_PERF_MONITOR, NULL);
}

void
burrow_perf_monitor_reset (BurrowPerfMonitor *self,
                           guint64            bytes_per_expert)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  self->token_head = self->n_tokens = 0;
  self->point_head = self->n_points = 0;
  g_clear_pointer (&self->snapshot, burrow_perf_snapshot_free);
  self->bytes_per_expert = bytes_per_expert;
  self->generated_at_snapshot = 0;
  self->dirty = TRUE;
}

void
burrow_perf_monitor_add_token (BurrowPerfMonitor *self,
                               const double       phase_seconds[BURROW_N_PHASES],
                               gboolean           first)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  if (first)
    return;
  memcpy (self->tokens[self->token_head].phase_seconds, phase_seconds,
          sizeof self->tokens[0].phase_seconds);
  self->token_head = (self->token_head + 1) % BURROW_PERF_TOKENS;
  self->n_tokens = MIN (self->n_tokens + 1, BURROW_PERF_TOKENS);
  self->dirty = TRUE;
}

/* The interval between the previous snapshot and @next, as one history point. */
static void
add_point (BurrowPerfMonitor        *self,
           const BurrowPerfSnapshot *prev,
           const BurrowPerfSnapshot *next)
{
  Point *point = &self->points[self->point_head];
  double seconds = (double) (next->time - prev->time) / G_USEC_PER_SEC;
  guint64 hits = next->cache.hits - MIN (next->cache.hits, prev->cache.hits);
  guint64 misses = next->cache.misses - MIN (next->cache.misses, prev->cache.misses);
  guint64 bytes = next->cache.bytes_read - MIN (next->cache.bytes_read, prev->cache.bytes_read);
  int tokens = next->turn.generated_tokens - prev->turn.generated_tokens;

  if (seconds <= 0)
    return;
  /* A new turn restarts the count; its first interval has no rate to show. */
  if (tokens < 0)
    tokens = 0;

  /* An interval without lookups keeps the rate it had, rather than dropping to zero. */
  if (hits + misses > 0)
    point->values[BURROW_PERF_HIT_RATE] = (double) hits / (double) (hits + misses);
  else if (self->n_points > 0)
    point->values[BURROW_PERF_HIT_RATE] =
      burrow_perf_monitor_get_point (self, BURROW_PERF_HIT_RATE, self->n_points - 1);
  else
    point->values[BURROW_PERF_HIT_RATE] = 0;
  point->values[BURROW_PERF_READ_RATE] = (double) bytes / seconds;
  point->values[BURROW_PERF_DECODE_RATE] = tokens / seconds;
  self->point_head = (self->point_head + 1) % BURROW_PERF_HISTORY;
  self->n_points = MIN (self->n_points + 1, BURROW_PERF_HISTORY);
}

void
burrow_perf_monitor_add_snapshot (BurrowPerfMonitor  *self,
                                  BurrowPerfSnapshot *snapshot)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));
  g_return_if_fail (snapshot != NULL);

  if (self->snapshot != NULL)
    add_point (self, self->snapshot, snapshot);
  burrow_perf_snapshot_free (self->snapshot);
  self->snapshot = snapshot;
  self->dirty = TRUE;
}

void
burrow_perf_monitor_flush (BurrowPerfMonitor *self)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  if (!self->dirty)
    return;
  self->dirty = FALSE;
  self->n_updates++;
  self->last_flush = g_get_monotonic_time ();
  g_signal_emit (self, signals[UPDATED], 0);
}

gboolean
burrow_perf_monitor_flush_at (BurrowPerfMonitor *self,
                              gint64             now)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), TRUE);

  if (!self->dirty)
    return TRUE;
  if (self->last_flush != 0 && now - self->last_flush < BURROW_PERF_FLUSH_INTERVAL)
    return FALSE;
  burrow_perf_monitor_flush (self);
  self->last_flush = now;
  return TRUE;
}

static gboolean
on_flush_timer (gpointer user_data)
{
  BurrowPerfMonitor *self = user_data;

  self->flush_timer = 0;
  burrow_perf_monitor_flush (self);
  return G_SOURCE_REMOVE;
}

void
burrow_perf_monitor_flush_later (BurrowPerfMonitor *self)
{
  gint64 wait;

  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  if (!self->dirty || self->flush_timer != 0)
    return;
  wait = self->last_flush + BURROW_PERF_FLUSH_INTERVAL - g_get_monotonic_time ();
  if (self->last_flush == 0 || wait <= 0)
    burrow_perf_monitor_flush (self);
  else
    self->flush_timer = g_timeout_add_full (G_PRIORITY_DEFAULT, (guint) ((wait + 999) / 1000),
                                            on_flush_timer, self, NULL);
}

const BurrowPerfSnapshot *
burrow_perf_monitor_get_snapshot (BurrowPerfMonitor *self)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), NULL);
  return self->snapshot;
}

guint
burrow_perf_monitor_get_n_tokens (BurrowPerfMonitor *self)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);
  return self->n_tokens;
}

const BurrowTokenTimes *
burrow_perf_monitor_get_token (BurrowPerfMonitor *self,
                               guint              index)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), NULL);
  g_return_val_if_fail (index < self->n_tokens, NULL);

  return &self->tokens[(self->token_head + BURROW_PERF_TOKENS - self->n_tokens + index) %
                       BURROW_PERF_TOKENS];
}

guint
burrow_perf_monitor_get_n_points (BurrowPerfMonitor *self)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);
  return self->n_points;
}

double
burrow_perf_monitor_get_point (BurrowPerfMonitor *self,
                               BurrowPerfSeries   series,
                               guint              index)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);
  g_return_val_if_fail (index < self->n_points && series < BURROW_PERF_N_SERIES, 0);

  return self->points[(self->point_head + BURROW_PERF_HISTORY - self->n_points + index) %
                      BURROW_PERF_HISTORY].values[series];
}

void
burrow_perf_monitor_get_tiers (BurrowPerfMonitor *self,
                               guint64            counts[3],
                               guint64            bytes[3])
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  memset (counts, 0, 3 * sizeof *counts);
  memset (bytes, 0, 3 * sizeof *bytes);
  if (self->snapshot == NULL)
    return;

  burrow_perf_snapshot_count_tiers (self->snapshot, counts);
  /* The store counts resident bytes exactly; on disk is by the stored size of one. */
  bytes[BURROW_EXPERT_CACHED] = self->snapshot->cache.bytes_cached;
  bytes[BURROW_EXPERT_PINNED] = self->snapshot->cache.bytes_pinned;
  bytes[BURROW_EXPERT_ON_DISK] = counts[BURROW_EXPERT_ON_DISK] * self->bytes_per_expert;
}

guint
burrow_perf_monitor_get_n_updates (BurrowPerfMonitor *self)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);
  return self->n_updates;
}
