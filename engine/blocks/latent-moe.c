#include "blocks/latent-moe.h"

#include "blocks/norm.h"
#include "blocks/scratch.h"

/* The latent input and the mixed latent output [n][latent width], the routed part's own
 * scratch, the shared experts' scratch. */
typedef struct {
  float *z, *y;
  BwScratch routed;
  void *shared;
} LatentScratch;

static void
carve (const BwLatentMoe *lm, int n, BwScratch *cur, LatentScratch *s)
{
  gsize lw = (gsize) n * lm->down.rows * sizeof (float);
  s->z = bw_scratch_take (cur, lw);
  s->y = bw_scratch_take (cur, lw);
  s->routed = bw_scratch_sub (cur, bw_moe_routed_scratch_bytes (&lm->moe, n));
  s->shared = lm->moe.has_shared
              ? bw_scratch_take (cur, bw_mlp_scratch_bytes (&lm->moe.shared, n)) : NULL;
}

gsize
bw_latent_moe_scratch_bytes (const BwLatentMoe *lm, int n)
{
  BwScratch m = bw_scratch_measure ();
  LatentScratch s;
  carve (lm, n, &m, &s);
  return bw_scratch_used (&m);
}

gboolean
bw_latent_moe_forward (const BwLatentMoe *lm, BwExpertStore *store, const float *x, int n,
                       float *out, void *scratch, BwPool *pool, BwMoeTimes *times,
                       GError **error)
{
  int64_t lw = lm->down.rows;
  BwScratch cur = bw_scratch_init (scratch, bw_latent_moe_scratch_bytes (lm, n));
  LatentScratch s;
  carve (lm, n, &cur, &s);
  float *z = s.z, *y = s.y;
  BwMoeRoute route;

  bw_moe_route (&lm->moe, x, n, &route, &s.routed, pool, times);
  guint64 t0 = g_get_monotonic_time ();
  bw_matmul (&lm->down, x, n, z, pool);
  if (times)
    times->matmul_ns += (guint64) (g_get_monotonic_time () - t0) * 1000u;
  if (!bw_moe_mix (&lm->moe, store, &route, z, n, y, &s.routed, pool, times, error))
    return FALSE;
  t0 = g_get_monotonic_time ();
  if (lm->norm)
    bw_rmsnorm_rows (y, y, lm->norm, n, (int) lw, lm->eps);
  bw_matmul (&lm->up, y, n, out, pool);
  if (lm->moe.has_shared)
    bw_mlp_forward (&lm->moe.shared, x, n, out, TRUE, s.shared, pool);
  if (times)
    times->matmul_ns += (guint64) (g_get_monotonic_time () - t0) * 1000u;
  return TRUE;
}
