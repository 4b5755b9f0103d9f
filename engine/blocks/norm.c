#include "blocks/norm.h"

#include <math.h>

void
bw_rmsnorm (float *y, const float *x, const float *w, int n, float eps)
{
  double ss = 0.0;
  for (int i = 0; i < n; i++)
    ss += (double) x[i] * x[i];
  float inv = (float) (1.0 / sqrt (ss / n + eps));
  if (w)
    for (int i = 0; i < n; i++)
      y[i] = w[i] * (x[i] * inv);
  else
    for (int i = 0; i < n; i++)
      y[i] = x[i] * inv;
}

void
bw_rmsnorm_rows (float *y, const float *x, const float *w, int rows, int n, float eps)
{
  for (int r = 0; r < rows; r++)
    bw_rmsnorm (y + (int64_t) r * n, x + (int64_t) r * n, w, n, eps);
}

void
bw_l2norm (float *x, int n, float eps)
{
  double ss = 0.0;
  for (int i = 0; i < n; i++)
    ss += (double) x[i] * x[i];
  float inv = (float) (1.0 / sqrt (ss + eps));
  for (int i = 0; i < n; i++)
    x[i] *= inv;
}
