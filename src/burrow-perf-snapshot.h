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
  guint8 *flash;               /* [n_layers * n_experts] 1: routed by the latest token */
} BurrowPerfSnapshot;

/* Engine thread. @prev_uses (may be NULL) are the uses as they were before the latest
 * token; where they differ from now, the expert flashes. */
BurrowPerfSnapshot *burrow_perf_snapshot_take (BurrowEngine   *engine,
                                               const guint32  *prev_uses);
void burrow_perf_snapshot_free (BurrowPerfSnapshot *snapshot);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowPerfSnapshot, burrow_perf_snapshot_free)

/* Experts in each tier: counts[BURROW_EXPERT_ON_DISK] and so on. */
void burrow_perf_snapshot_count_tiers (const BurrowPerfSnapshot *snapshot,
                                       guint64                   counts[3]);

G_END_DECLS
