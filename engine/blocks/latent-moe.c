#include "blocks/latent-moe.h"

#include "blocks/norm.h"
#include "blocks/scratch.h"

gsize
bw_latent_moe_scratch_bytes (const BwLatentMoe *lm, int n)
{
  gsize lw = bw_scratch_size ((gsize) n * lm->down.rows * sizeof (float));
  return bw_moe_scratch_bytes (&lm->moe, n) + 2 * lw;
}

gboolean
bw_latent_moe_forward (const BwLatentMoe *lm, BwExpertStore *store, const float *x, int n,
                       float *out, void *scratch, BwPool *pool, BwMoeTimes *times,
                       GError **error)
{
  int64_t lw = lm->down.rows;
  BwScratch cur = bw_scratch_init (scratch, bw_latent_moe_scratch_bytes (lm, n));
  float *z = bw_scratch_take (&cur, (gsize) n * lw * sizeof (float));
  float *y = bw_scratch_take (&cur, (gsize) n * lw * sizeof (float));
  BwMoeRoute route;

  bw_moe_route (&lm->moe, x, n, &route, &cur, pool, times);
  guint64 t0 = g_get_monotonic_time ();
  bw_matmul (&lm->down, x, n, z, pool);
  if (times)
    times->matmul_ns += (guint64) (g_get_monotonic_time () - t0) * 1000u;
  if (!bw_moe_mix (&lm->moe, store, &route, z, n, y, &cur, pool, times, error))
    return FALSE;
  t0 = g_get_monotonic_time ();
  if (lm->norm)
    bw_rmsnorm_rows (y, y, lm->norm, n, (int) lw, lm->eps);
  bw_matmul (&lm->up, y, n, out, pool);
  if (lm->moe.has_shared)
    bw_mlp_forward (&lm->moe.shared, x, n, out, TRUE, cur.cursor, pool);
  if (times)
    times->matmul_ns += (guint64) (g_get_monotonic_time () - t0) * 1000u;
  return TRUE;
}
