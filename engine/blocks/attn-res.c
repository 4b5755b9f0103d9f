#include "blocks/attn-res.h"

#include <math.h>
#include <string.h>

#define MAX_CANDIDATES 64

void
bw_attn_res_pool (const float *const *rows, int n_rows, int d, const float *norm_w,
                  const float *proj_w, float eps, float *out)
{
  float score[MAX_CANDIDATES];
  g_return_if_fail (n_rows >= 1 && n_rows <= MAX_CANDIDATES);

  if (n_rows == 1)
    {
      memcpy (out, rows[0], d * sizeof (float));
      return;
    }
  float best = -INFINITY;
  for (int b = 0; b < n_rows; b++)
    {
      const float *v = rows[b];
      double ss = 0.0, dot = 0.0;
      for (int c = 0; c < d; c++)
        {
          ss += (double) v[c] * v[c];
          dot += (double) v[c] * norm_w[c] * proj_w[c];
        }
      score[b] = (float) (dot / sqrt (ss / d + eps));
      best = fmaxf (best, score[b]);
    }
  double sum = 0.0;
  for (int b = 0; b < n_rows; b++)
    {
      score[b] = expf (score[b] - best);
      sum += score[b];
    }
  memset (out, 0, d * sizeof (float));
  for (int b = 0; b < n_rows; b++)
    {
      float p = (float) (score[b] / sum);
      for (int c = 0; c < d; c++)
        out[c] += p * rows[b][c];
    }
}
