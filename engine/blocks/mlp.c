#include "blocks/mlp.h"

#include "blocks/scratch.h"

/* The gate and up products [n][inter], the down product [n][width]. */
typedef struct {
  float *g, *u, *d;
} MlpScratch;

static void
carve (const BwMlp *mlp, int n, BwScratch *cur, MlpScratch *s)
{
  s->g = bw_scratch_take (cur, (gsize) n * mlp->gate.rows * sizeof (float));
  s->u = bw_scratch_take (cur, (gsize) n * mlp->gate.rows * sizeof (float));
  s->d = bw_scratch_take (cur, (gsize) n * mlp->down.rows * sizeof (float));
}

gsize
bw_mlp_scratch_bytes (const BwMlp *mlp, int n)
{
  BwScratch m = bw_scratch_measure ();
  MlpScratch s;
  carve (mlp, n, &m, &s);
  return bw_scratch_used (&m);
}

void
bw_mlp_forward (const BwMlp *mlp, const float *x, int n, float *out, gboolean accumulate,
                void *scratch, BwPool *pool)
{
  int64_t inter = mlp->gate.rows, width = mlp->down.rows;
  BwScratch cur = bw_scratch_init (scratch, bw_mlp_scratch_bytes (mlp, n));
  MlpScratch s;
  carve (mlp, n, &cur, &s);
  float *g = s.g, *u = s.u, *d = s.d;

  bw_matmul (&mlp->gate, x, n, g, pool);
  bw_matmul (&mlp->up, x, n, u, pool);
  bw_gated_act (&mlp->act, g, g, u, (int) (n * inter));
  bw_matmul (&mlp->down, g, n, accumulate ? d : out, pool);
  if (accumulate)
    for (int64_t i = 0; i < n * width; i++)
      out[i] += d[i];
}
