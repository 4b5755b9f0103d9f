/* The dashboard's model: the last tokens' phase times, the cache's hit rate and read rate
 * over time, and the latest engine snapshot, fed from the worker's updates on the main
 * loop. Widgets draw from it when it emits "updated" (at most once per update batch).
 * No GTK. */
#pragma once

#include <glib-object.h>

#include "burrow-perf-snapshot.h"

G_BEGIN_DECLS

/* Tokens the per-token chart keeps. */
#define BURROW_PERF_TOKENS 100
/* Snapshot intervals the history charts keep. */
#define BURROW_PERF_HISTORY 150

#define BURROW_TYPE_PERF_MONITOR (burrow_perf_monitor_get_type ())
G_DECLARE_FINAL_TYPE (BurrowPerfMonitor, burrow_perf_monitor, BURROW, PERF_MONITOR, GObject)

typedef struct {
  double phase_seconds[BURROW_N_PHASES];
} BurrowTokenTimes;

BurrowPerfMonitor *burrow_perf_monitor_new (void);

/* Forgets everything: a new model was loaded. @bytes_per_expert sizes the on-disk tier. */
void burrow_perf_monitor_reset (BurrowPerfMonitor *self,
                                guint64            bytes_per_expert);
/* A generated token's time per phase. The first token of a reply carries the prefill and
 * is not charted. */
void burrow_perf_monitor_add_token (BurrowPerfMonitor *self,
                                    const double       phase_seconds[BURROW_N_PHASES],
                                    gboolean           first);
/* Takes @snapshot. */
void burrow_perf_monitor_add_snapshot (BurrowPerfMonitor  *self,
                                       BurrowPerfSnapshot *snapshot);
/* Emits "updated" now if anything changed since the last emission. Callers feed a batch of
 * updates, then call this once. */
void burrow_perf_monitor_flush (BurrowPerfMonitor *self);
/* Flushes as above unless the last emission was less than BURROW_PERF_FLUSH_INTERVAL
 * before @now (monotonic microseconds): the dashboard redraws at most three times a second
 * however fast tokens come, so that drawing it with the software renderer takes under 1 %
 * of two cores from decoding (PERFORMANCE.md). Returns TRUE once nothing is left to flush; FALSE asks to be
 * called again later. */
#define BURROW_PERF_FLUSH_INTERVAL (G_USEC_PER_SEC / 3)
gboolean burrow_perf_monitor_flush_at (BurrowPerfMonitor *self,
                                       gint64             now);
/* The same limit kept by a timer: flushes now if the interval has passed, else once it
 * has. Unlike calling flush_at from a tick callback, it wakes the main loop only when
 * there is something to draw, not on every frame of the interval. */
void burrow_perf_monitor_flush_later (BurrowPerfMonitor *self);

/* The latest snapshot, or NULL before the first. */
const BurrowPerfSnapshot *burrow_perf_monitor_get_snapshot (BurrowPerfMonitor *self);
/* Tokens charted so far (at most BURROW_PERF_TOKENS); index 0 is the oldest. */
guint burrow_perf_monitor_get_n_tokens (BurrowPerfMonitor *self);
const BurrowTokenTimes *burrow_perf_monitor_get_token (BurrowPerfMonitor *self,
                                                       guint              index);

typedef enum {
  BURROW_PERF_HIT_RATE,       /* share of expert lookups served from memory, 0 to 1 */
  BURROW_PERF_READ_RATE,      /* expert bytes read from disk per second */
  BURROW_PERF_DECODE_RATE,    /* tokens per second over the interval */
  BURROW_PERF_N_SERIES
} BurrowPerfSeries;

/* Points of a series (at most BURROW_PERF_HISTORY); index 0 is the oldest. */
guint burrow_perf_monitor_get_n_points (BurrowPerfMonitor *self);
double burrow_perf_monitor_get_point (BurrowPerfMonitor *self,
                                      BurrowPerfSeries   series,
                                      guint              index);

/* Experts and their bytes in each BurrowExpertTier (on disk, cached, pinned). */
void burrow_perf_monitor_get_tiers (BurrowPerfMonitor *self,
                                    guint64            counts[3],
                                    guint64            bytes[3]);

/* The number of times "updated" was emitted. */
guint burrow_perf_monitor_get_n_updates (BurrowPerfMonitor *self);

G_END_DECLS
