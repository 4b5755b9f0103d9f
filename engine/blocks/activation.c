#include "blocks/activation.h"

#include <stddef.h>

void
bw_gated_act (const BwActivation *act, float *h, const float *g, const float *u, int n)
{
  if (act->kind == BW_ACT_CLAMPED)
    {
      size_t step = u == NULL ? 2 : 1;
      const float *up = u == NULL ? g + 1 : u;
      for (int i = 0; i < n; i++)
        {
          float gate = fminf (g[i * step], act->limit);
          float lin = fminf (fmaxf (up[i * step], -act->limit), act->limit);
          h[i] = (lin + 1.0f) * (gate * bw_sigmoid (gate * act->alpha));
        }
      return;
    }
  if (act->kind == BW_ACT_SWIGLU)
    {
      for (int i = 0; i < n; i++)
        h[i] = bw_silu (g[i]) * u[i];
      return;
    }

  float beta = act->beta > 0.0f ? act->beta : 1.0f;
  float lam = act->linear_beta;
  for (int i = 0; i < n; i++)
    {
      float gate = beta * tanhf (g[i] / beta) * bw_sigmoid (g[i]);
      float up = lam > 0.0f ? lam * tanhf (u[i] / lam) : u[i];
      h[i] = gate * up;
    }
}
