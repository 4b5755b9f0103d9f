#include "burrow-config.h"

#include <math.h>
#include <string.h>

#include "burrow-perf-monitor.h"

/* Samples kept for the read rate now: a window's worth at up to this many tokens. */
#define RATE_SAMPLES 256
/* How often the idle timer refreshes a falling rate. */
#define TICK_MSEC 250

struct _BurrowPerfMonitor {
  GObject parent_instance;

  BurrowTokenTimes tokens[BURROW_PERF_TOKENS];   /* ring */
  guint token_head;                              /* next slot to write */
  guint n_tokens;
  guint64 n_generated;

  BurrowTokenSample samples[RATE_SAMPLES];       /* ring, every token */
  guint sample_head;
  guint n_samples;

  BurrowPerfClock clock;
  gpointer clock_data;

  BurrowPerfSnapshot *snapshot;
  guint64 bytes_per_expert;
  double cache_cap;
  gboolean dirty;
  guint n_updates;
  double shown_rate;            /* the read rate at the last emission */
  gint64 last_flush;            /* when "updated" was last emitted */
  guint flush_timer;            /* flush_later's pending timeout */
  guint tick_timer;
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
  g_clear_handle_id (&self->tick_timer, g_source_remove);
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

static gint64
now_usec (BurrowPerfMonitor *self)
{
  return self->clock != NULL ? self->clock (self->clock_data) : g_get_monotonic_time ();
}

void
burrow_perf_monitor_set_clock (BurrowPerfMonitor *self,
                               BurrowPerfClock    clock,
                               gpointer           user_data)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  self->clock = clock;
  self->clock_data = user_data;
}

void
burrow_perf_monitor_reset (BurrowPerfMonitor *self,
                           guint64            bytes_per_expert)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  self->token_head = self->n_tokens = 0;
  self->sample_head = self->n_samples = 0;
  self->n_generated = 0;
  g_clear_pointer (&self->snapshot, burrow_perf_snapshot_free);
  self->bytes_per_expert = bytes_per_expert;
  self->cache_cap = 0;
  self->dirty = TRUE;
}

static const BurrowTokenSample *
sample_at (BurrowPerfMonitor *self,
           guint              back)
{
  return &self->samples[(self->sample_head + RATE_SAMPLES - 1 - back) % RATE_SAMPLES];
}

void
burrow_perf_monitor_add_token (BurrowPerfMonitor       *self,
                               const BurrowTokenSample *sample)
{
  const BurrowTokenSample *prev;
  BurrowTokenTimes *t;
  double seconds;
  guint64 hits, misses;

  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));
  g_return_if_fail (sample != NULL);

  prev = self->n_samples > 0 ? sample_at (self, 0) : NULL;
  self->samples[self->sample_head] = *sample;
  self->sample_head = (self->sample_head + 1) % RATE_SAMPLES;
  self->n_samples = MIN (self->n_samples + 1, RATE_SAMPLES);
  self->n_generated++;
  self->dirty = TRUE;
  /* The first token's time is the prefill's; it only starts the next one's interval. */
  if (sample->first || prev == NULL)
    return;

  t = &self->tokens[self->token_head];
  memset (t, 0, sizeof *t);
  t->number = self->n_generated;
  t->reply_start = prev->first;
  memcpy (t->phase_seconds, sample->phase_seconds, sizeof t->phase_seconds);
  seconds = (double) MAX (sample->time - prev->time, 1) / G_USEC_PER_SEC;
  hits = sample->hits - MIN (sample->hits, prev->hits);
  misses = sample->misses - MIN (sample->misses, prev->misses);
  t->values[BURROW_PERF_HIT_RATE] = hits + misses > 0 ? (double) hits / (double) (hits + misses)
                                                      : NAN;
  t->values[BURROW_PERF_READ_RATE] =
    (double) (sample->bytes_read - MIN (sample->bytes_read, prev->bytes_read)) / seconds;
  t->values[BURROW_PERF_DECODE_RATE] = 1.0 / seconds;
  self->token_head = (self->token_head + 1) % BURROW_PERF_TOKENS;
  self->n_tokens = MIN (self->n_tokens + 1, BURROW_PERF_TOKENS);
}

void
burrow_perf_monitor_add_snapshot (BurrowPerfMonitor  *self,
                                  BurrowPerfSnapshot *snapshot)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));
  g_return_if_fail (snapshot != NULL);

  if (snapshot->cache_cap_share > 0)
    self->cache_cap = snapshot->cache_cap_share;
  burrow_perf_snapshot_free (self->snapshot);
  self->snapshot = snapshot;
  self->dirty = TRUE;
}

double
burrow_perf_monitor_get_read_rate (BurrowPerfMonitor *self)
{
  const BurrowTokenSample *last, *base;
  gint64 now, window;

  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);

  if (self->n_samples < 2)
    return 0;
  now = now_usec (self);
  last = sample_at (self, 0);
  window = BURROW_PERF_RATE_WINDOW;
  if (!last->first)
    window = MAX (window, 3 * (last->time - sample_at (self, 1)->time));
  if (now - last->time >= window)
    return 0;

  /* From the last token at or before the window's start, but never from before the
   * reply's first token: what the prefill read is not a rate. */
  base = last;
  for (guint back = 1; back < self->n_samples && !base->first && base->time > now - window; back++)
    base = sample_at (self, back);
  if (base == last || now <= base->time)
    return 0;
  return (double) (last->bytes_read - MIN (last->bytes_read, base->bytes_read)) /
         ((double) (now - base->time) / G_USEC_PER_SEC);
}

static gboolean
on_tick (gpointer user_data)
{
  BurrowPerfMonitor *self = user_data;

  self->tick_timer = 0;
  burrow_perf_monitor_tick (self);
  return G_SOURCE_REMOVE;
}

void
burrow_perf_monitor_tick (BurrowPerfMonitor *self)
{
  g_return_if_fail (BURROW_IS_PERF_MONITOR (self));

  if (burrow_perf_monitor_get_read_rate (self) != self->shown_rate)
    self->dirty = TRUE;
  burrow_perf_monitor_flush (self);
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
  self->shown_rate = burrow_perf_monitor_get_read_rate (self);
  g_signal_emit (self, signals[UPDATED], 0);
  /* Nothing new comes when generation stops: the timer takes the rate down to zero. */
  if (self->shown_rate > 0 && self->tick_timer == 0)
    self->tick_timer = g_timeout_add (TICK_MSEC, on_tick, self);
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

double
burrow_perf_monitor_get_cache_cap (BurrowPerfMonitor *self)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);
  return self->cache_cap;
}

guint
burrow_perf_monitor_get_n_updates (BurrowPerfMonitor *self)
{
  g_return_val_if_fail (BURROW_IS_PERF_MONITOR (self), 0);
  return self->n_updates;
}
