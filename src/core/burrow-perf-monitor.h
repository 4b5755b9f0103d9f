/* The dashboard's model: the last tokens' times and expert-cache numbers, the read rate
 * now (falling to zero when nothing is read), and the latest engine snapshot, fed from the
 * worker's updates on the main loop. Widgets draw from it when it emits "updated" (at most
 * once per update batch). No GTK. */
#pragma once

#include <glib-object.h>

#include "burrow-perf-snapshot.h"

G_BEGIN_DECLS

/* Tokens the per-token charts keep. */
#define BURROW_PERF_TOKENS 100
/* "Disk reads now" is the rate over at least this long a window ending now, so it falls to
 * zero this long after the last read (longer for tokens slower than a third of it). */
#define BURROW_PERF_RATE_WINDOW G_USEC_PER_SEC

#define BURROW_TYPE_PERF_MONITOR (burrow_perf_monitor_get_type ())
G_DECLARE_FINAL_TYPE (BurrowPerfMonitor, burrow_perf_monitor, BURROW, PERF_MONITOR, GObject)

typedef enum {
  BURROW_PERF_HIT_RATE,       /* share of the token's expert lookups served from memory;
                               * NAN for a token without lookups */
  BURROW_PERF_READ_RATE,      /* expert bytes read from disk per second during the token */
  BURROW_PERF_DECODE_RATE,    /* tokens per second: 1 / the token's wall time */
  BURROW_PERF_N_SERIES
} BurrowPerfSeries;

/* One charted token. */
typedef struct {
  guint64 number;             /* tokens generated since the model was loaded, this one too */
  gboolean reply_start;       /* the first charted token of a reply */
  double phase_seconds[BURROW_N_PHASES];
  double values[BURROW_PERF_N_SERIES];
} BurrowTokenTimes;

/* Monotonic microseconds, like g_get_monotonic_time (); tests give their own. */
typedef gint64 (*BurrowPerfClock) (gpointer user_data);

BurrowPerfMonitor *burrow_perf_monitor_new (void);

/* NULL: g_get_monotonic_time. */
void burrow_perf_monitor_set_clock (BurrowPerfMonitor *self,
                                    BurrowPerfClock    clock,
                                    gpointer           user_data);

/* Forgets everything: a new model was loaded. @bytes_per_expert sizes the on-disk tier. */
void burrow_perf_monitor_reset (BurrowPerfMonitor *self,
                                guint64            bytes_per_expert);
/* A generated token. The first token of a reply carries the prefill and is not charted;
 * it starts the next token's interval. */
void burrow_perf_monitor_add_token (BurrowPerfMonitor       *self,
                                    const BurrowTokenSample *sample);
/* Takes @snapshot. */
void burrow_perf_monitor_add_snapshot (BurrowPerfMonitor  *self,
                                       BurrowPerfSnapshot *snapshot);
/* Emits "updated" now if anything changed since the last emission. Callers feed a batch of
 * updates, then call this once. While the read rate is falling to zero, a timer keeps
 * emitting "updated" a few times a second until it is there. */
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
/* What the idle timer does: emits "updated" if the rate now differs from the one last
 * shown. */
void burrow_perf_monitor_tick (BurrowPerfMonitor *self);

/* The latest snapshot, or NULL before the first. */
const BurrowPerfSnapshot *burrow_perf_monitor_get_snapshot (BurrowPerfMonitor *self);
/* Tokens charted so far (at most BURROW_PERF_TOKENS); index 0 is the oldest. */
guint burrow_perf_monitor_get_n_tokens (BurrowPerfMonitor *self);
const BurrowTokenTimes *burrow_perf_monitor_get_token (BurrowPerfMonitor *self,
                                                       guint              index);

/* Expert bytes read from disk per second over the last BURROW_PERF_RATE_WINDOW (by the
 * monitor's clock); 0 once that long has passed without a token. */
double burrow_perf_monitor_get_read_rate (BurrowPerfMonitor *self);

/* Experts and their bytes in each BurrowExpertTier (on disk, cached, pinned). */
void burrow_perf_monitor_get_tiers (BurrowPerfMonitor *self,
                                    guint64            counts[3],
                                    guint64            bytes[3]);

/* > 0: the loaded model's expert cache was capped on purpose to this share of its experts
 * (the demo model). */
double burrow_perf_monitor_get_cache_cap (BurrowPerfMonitor *self);

/* The number of times "updated" was emitted. */
guint burrow_perf_monitor_get_n_updates (BurrowPerfMonitor *self);

G_END_DECLS
