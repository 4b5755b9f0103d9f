/* The dashboard's live views (burrow-engine.h): thin reads of the expert store and the
 * model's phase clocks behind a BurrowEngine. */
#include "run/run-private.h"

#include <string.h>

void
burrow_engine_get_expert_grid (BurrowEngine *engine, int *n_layers, int *n_experts)
{
  BwExpertStore *store = bw_model_expert_store (engine->model);
  int experts = 0;

  *n_layers = store ? bw_expert_store_n_layers (store) : 0;
  for (int l = 0; l < *n_layers; l++)
    experts = MAX (experts, bw_expert_store_layer_experts (store, l));
  *n_experts = experts;
  if (experts == 0)
    *n_layers = 0;
}

int
burrow_engine_get_layer_experts (BurrowEngine *engine, int layer)
{
  BwExpertStore *store = bw_model_expert_store (engine->model);

  return store ? bw_expert_store_layer_experts (store, layer) : 0;
}

void
burrow_engine_get_expert_map (BurrowEngine *engine, guint8 *tiers, guint32 *uses)
{
  BwExpertStore *store = bw_model_expert_store (engine->model);

  G_STATIC_ASSERT ((int) BURROW_EXPERT_PINNED == (int) BW_EXPERT_PINNED);
  G_STATIC_ASSERT ((int) BURROW_PINS_DROPPED == (int) BW_PINS_DROPPED);
  if (store)
    bw_expert_store_expert_map (store, tiers, uses);
}

void
burrow_engine_get_expert_ages (BurrowEngine *engine, guint32 *ages)
{
  BwExpertStore *store = bw_model_expert_store (engine->model);

  if (store)
    bw_expert_store_expert_ages (store, ages);
}

void
burrow_engine_get_layer_hits (BurrowEngine *engine, guint64 *hits, guint64 *misses)
{
  BwExpertStore *store = bw_model_expert_store (engine->model);
  int n = store ? bw_expert_store_n_layers (store) : 0;

  for (int l = 0; l < n; l++)
    {
      BwStoreLayerStats st;

      bw_expert_store_layer_stats (store, l, &st);
      hits[l] = st.hits;
      misses[l] = st.misses;
    }
}

void
burrow_engine_get_phase_seconds (BurrowEngine *engine, double seconds[BURROW_N_PHASES])
{
  BwModelStats ms;

  bw_model_stats (engine->model, &ms);
  for (int p = 0; p < BURROW_N_PHASES; p++)
    seconds[p] = (double) ms.ns[p] / 1e9;
}
