#include "blocks/mlp.h"

#include "blocks/scratch.h"

gsize
bw_mlp_scratch_bytes (const BwMlp *mlp, int n)
{
  return 2 * bw_scratch_size ((gsize) n * mlp->gate.rows * sizeof (float))
         + bw_scratch_size ((gsize) n * mlp->down.rows * sizeof (float));
}

void
bw_mlp_forward (const BwMlp *mlp, const float *x, int n, float *out, gboolean accumulate,
                void *scratch, BwPool *pool)
{
  int64_t inter = mlp->gate.rows, width = mlp->down.rows;
  BwScratch cur = bw_scratch_init (scratch, bw_mlp_scratch_bytes (mlp, n));
  float *g = bw_scratch_take (&cur, (gsize) n * inter * sizeof (float));
  float *u = bw_scratch_take (&cur, (gsize) n * inter * sizeof (float));
  float *d = bw_scratch_take (&cur, (gsize) n * width * sizeof (float));

  bw_matmul (&mlp->gate, x, n, g, pool);
  bw_matmul (&mlp->up, x, n, u, pool);
  bw_gated_act (&mlp->act, g, g, u, (int) (n * inter));
  bw_matmul (&mlp->down, g, n, accumulate ? d : out, pool);
  if (accumulate)
    for (int64_t i = 0; i < n * width; i++)
      out[i] += d[i];
}
