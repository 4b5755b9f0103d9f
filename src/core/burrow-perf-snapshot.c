#include "burrow-config.h"

#include "burrow-perf-snapshot.h"

BurrowPerfSnapshot *
burrow_perf_snapshot_take (BurrowEngine *engine)
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
  snapshot->ages = g_new (guint32, MAX (n_cells, 1));
  snapshot->ages[0] = G_MAXUINT32;
  if (n_cells == 0)
    return snapshot;

  for (int l = 0; l < snapshot->n_layers; l++)
    snapshot->layer_experts[l] = burrow_engine_get_layer_experts (engine, l);
  burrow_engine_get_layer_hits (engine, snapshot->layer_hits, snapshot->layer_misses);
  burrow_engine_get_expert_map (engine, snapshot->tiers, snapshot->uses);
  burrow_engine_get_expert_ages (engine, snapshot->ages);

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
  g_free (snapshot->ages);
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

double
burrow_perf_snapshot_recency (const BurrowPerfSnapshot *snapshot,
                              int                       layer,
                              int                       expert)
{
  guint32 age;

  if (layer < 0 || layer >= snapshot->n_layers || expert < 0 ||
      expert >= snapshot->layer_experts[layer])
    return 0;
  age = snapshot->ages[(gsize) layer * (gsize) snapshot->n_experts + (gsize) expert];
  return age >= BURROW_PERF_FADE_TOKENS ? 0 : 1.0 - (double) age / BURROW_PERF_FADE_TOKENS;
}

void
burrow_token_sample_take (BurrowEngine      *engine,
                          BurrowTokenSample *sample)
{
  BurrowCacheStats cache;

  burrow_engine_get_cache_stats (engine, &cache);
  sample->time = g_get_monotonic_time ();
  sample->hits = cache.hits;
  sample->misses = cache.misses;
  sample->bytes_read = cache.bytes_read;
}
