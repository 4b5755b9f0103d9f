/* Disk bandwidth probe through the expert store. */
#include "stream/store-probe.h"

static guint64
now_ns (void)
{
  return (guint64) g_get_monotonic_time () * 1000u;
}

/* Picks up to n distinct non-resident experts of the layer; returns how many. */
static int
pick_experts (BwExpertStore *s, int layer, int n, GRand *rng, int *out)
{
  int E = bw_expert_store_layer_experts (s, layer), got = 0;
  for (int tries = 0; tries < 8 * E && got < n; tries++)
    {
      int e = g_rand_int_range (rng, 0, E), dup = 0;
      for (int j = 0; j < got; j++)
        dup |= out[j] == e;
      if (!dup && !bw_expert_store_is_resident (s, layer, e))
        out[got++] = e;
    }
  return got;
}

gboolean
bw_store_probe_disk (BwExpertStore *s, int batch, guint64 max_bytes, double max_seconds,
                     guint64 seed, double *gbps, guint64 *bytes, GError **error)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) seed);
  int ids[BW_MAX_BATCH_EXPERTS];
  BwStoreStats before, after;
  guint64 t0 = now_ns (), elapsed = 0;
  int layer = 0, idle = 0, n_layers = bw_expert_store_n_layers (s);

  batch = CLAMP (batch, 1, BW_MAX_BATCH_EXPERTS);
  bw_expert_store_stats (s, &before);
  while (idle < n_layers)
    {
      BwExpertBatch b;
      int n;
      layer = (layer + 1) % n_layers;
      if (bw_expert_store_layer_experts (s, layer) == 0)
        {
          idle++;
          continue;
        }
      n = pick_experts (s, layer, MIN (batch, bw_expert_store_batch_limit (s, layer)), rng, ids);
      if (n == 0)
        {
          idle++;
          continue;
        }
      idle = 0;
      if (!bw_expert_store_request (s, layer, ids, n, &b, error))
        return FALSE;
      for (int i = 0; i < n; i++)
        if (bw_expert_batch_wait (&b, i, error) == NULL)
          {
            bw_expert_batch_release (&b);
            return FALSE;
          }
      bw_expert_batch_release (&b);
      bw_expert_store_stats (s, &after);
      elapsed = now_ns () - t0;
      if (after.bytes_read - before.bytes_read >= max_bytes || (double) elapsed / 1e9 >= max_seconds)
        break;
    }
  bw_expert_store_stats (s, &after);
  *bytes = after.bytes_read - before.bytes_read;
  *gbps = elapsed > 0 ? (double) *bytes / (double) elapsed : 0.0;
  return TRUE;
}
