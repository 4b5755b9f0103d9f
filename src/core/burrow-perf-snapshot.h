/* A snapshot of everything the dashboard shows, taken on the engine worker's thread from
 * the engine's own counters and clocks, then handed to the main loop. Plain C + GLib. */
#pragma once

#include <glib.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef struct {
  gint64 time;                 /* g_get_monotonic_time () when taken */
  BurrowTurnStats turn;        /* the running turn so far, or the last one */
  BurrowCacheStats cache;      /* since load; backend is a static string */
  int n_layers;                /* expert grid; 0 x 0 without routed experts */
  int n_experts;
  int *layer_experts;          /* [n_layers] routed experts of each layer (0: dense) */
  guint64 *layer_hits;         /* [n_layers], since load */
  guint64 *layer_misses;
  guint8 *tiers;               /* [n_layers * n_experts] BurrowExpertTier */
  guint32 *uses;               /* [n_layers * n_experts] routings since load */
  double cache_cap_share;      /* > 0: the expert cache was capped on purpose to this share
                                * of all experts' bytes (the demo model), set at load */
  guint32 *ages;               /* [n_layers * n_experts] tokens since last routed to: 0 for
                                * the latest token's experts, G_MAXUINT32 never */
} BurrowPerfSnapshot;

/* Engine thread. */
BurrowPerfSnapshot *burrow_perf_snapshot_take (BurrowEngine *engine);
void burrow_perf_snapshot_free (BurrowPerfSnapshot *snapshot);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowPerfSnapshot, burrow_perf_snapshot_free)

/* Tokens over which an expert's highlight fades once newer tokens stop using it. */
#define BURROW_PERF_FADE_TOKENS 4

/* How strongly the expert map highlights a cell as used by the latest tokens: 1 for the
 * experts of the latest token, then less for each newer token that did not use it, 0 from
 * BURROW_PERF_FADE_TOKENS tokens back (and for cells outside the grid's layers). */
double burrow_perf_snapshot_recency (const BurrowPerfSnapshot *snapshot,
                                     int                       layer,
                                     int                       expert);

/* Experts in each tier: counts[BURROW_EXPERT_ON_DISK] and so on. */
void burrow_perf_snapshot_count_tiers (const BurrowPerfSnapshot *snapshot,
                                       guint64                   counts[3]);

/* One generated token, as the dashboard's per-token charts need it. */
typedef struct {
  gint64 time;                 /* g_get_monotonic_time () when it came */
  gboolean first;              /* the reply's first token: its time includes the prefill */
  double phase_seconds[BURROW_N_PHASES];  /* its time inside the model */
  guint64 hits, misses;        /* the expert store's counters since load, after it */
  guint64 bytes_read;
} BurrowTokenSample;

/* Any thread: fills the counters and the time; the caller sets first and the phases. */
void burrow_token_sample_take (BurrowEngine      *engine,
                               BurrowTokenSample *sample);

G_END_DECLS
