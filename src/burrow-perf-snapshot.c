#include "burrow-config.h"

#include "burrow-perf-snapshot.h"

BurrowPerfSnapshot *
burrow_perf_snapshot_take (BurrowEngine  *engine,
                           const guint32 *prev_uses)
{
  BurrowPerfSnapshot *snapshot = g_new0 (BurrowPerfSnapshot, 1);
  gsize n_cells;

  snapshot->time = g_get_monotonic_time ();
  burrow_engine_get_turn_stats (engine, &snapshot->turn);
  burrow_engine_get_cache_stats (engine, &snapshot->cache);
  burrow_engine_get_expert_grid (engine, &snapshot->n_layers, &snapshot->n_experts);

  n_cells = (gsize) snapshot->n_layers * (gsize) snapshot->n_experts;
  snapshot->layer_experts = g_new0 (int, MAX (snapshot->n_layers, 1));
  snapshot->layer_hits = g_new0 (guint64, MAX (snapshot->n_layers, 1));
  snapshot->layer_misses = g_new0 (guint64, MAX (snapshot->n_layers, 1));
  snapshot->tiers = g_new0 (guint8, MAX (n_cells, 1));
  snapshot->uses = g_new0 (guint32, MAX (n_cells, 1));
  snapshot->flash = g_new0 (guint8, MAX (n_cells, 1));
  if (n_cells == 0)
    return snapshot;

  for (int l = 0; l < snapshot->n_layers; l++)
    snapshot->layer_experts[l] = burrow_engine_get_layer_experts (engine, l);
  burrow_engine_get_layer_hits (engine, snapshot->layer_hits, snapshot->layer_misses);
  burrow_engine_get_expert_map (engine, snapshot->tiers, snapshot->uses);
  for (gsize i = 0; prev_uses != NULL && i < n_cells; i++)
    snapshot->flash[i] = snapshot->uses[i] != prev_uses[i];

  return snapshot;
}

void
burrow_perf_snapshot_free (BurrowPerfSnapshot *snapshot)
{
  if (snapshot == NULL)
    return;
  g_free (snapshot->layer_experts);
  g_free (snapshot->layer_hits);
  g_free (snapshot->layer_misses);
  g_free (snapshot->tiers);
  g_free (snapshot->uses);
  g_free (snapshot->flash);
  g_free (snapshot);
}

void
burrow_perf_snapshot_count_tiers (const BurrowPerfSnapshot *snapshot,
                                  guint64                   counts[3])
{
  counts[0] = counts[1] = counts[2] = 0;
  for (int l = 0; l < snapshot->n_layers; l++)
    for (int e = 0; e < snapshot->layer_experts[l]; e++)
      counts[MIN (snapshot->tiers[(gsize) l * (gsize) snapshot->n_experts + (gsize) e], 2)]++;
}
