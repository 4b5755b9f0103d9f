#include "blocks/router.h"

#include <math.h>

#include "blocks/activation.h"

gsize
bw_router_scratch_floats (const BwRouterConfig *cfg)
{
  return 2 * (gsize) cfg->n_experts + (cfg->n_group > 1 ? cfg->n_group : 1);
}

/* Index of the largest value among the unmasked entries; the first one on ties. */
static int
argmax_unmasked (const float *v, const gboolean *masked, int n)
{
  int best = -1;
  for (int i = 0; i < n; i++)
    if (!masked[i] && (best < 0 || v[i] > v[best]))
      best = i;
  return best;
}

static void
mask_groups (const BwRouterConfig *cfg, float *choice, float *group_score)
{
  int per = cfg->n_experts / cfg->n_group;
  for (int g = 0; g < cfg->n_group; g++)
    {
      const float *c = choice + g * per;
      float a = -INFINITY, b = -INFINITY;
      for (int i = 0; i < per; i++)
        if (c[i] > a)
          {
            b = a;
            a = c[i];
          }
        else if (c[i] > b)
          b = c[i];
      group_score[g] = per > 1 ? a + b : a;
    }

  gboolean kept[cfg->n_group];
  for (int g = 0; g < cfg->n_group; g++)
    kept[g] = FALSE;
  for (int j = 0; j < cfg->topk_group && j < cfg->n_group; j++)
    {
      int best = -1;
      for (int g = 0; g < cfg->n_group; g++)
        if (!kept[g] && (best < 0 || group_score[g] > group_score[best]))
          best = g;
      kept[best] = TRUE;
    }
  for (int g = 0; g < cfg->n_group; g++)
    if (!kept[g])
      for (int i = 0; i < per; i++)
        choice[g * per + i] = cfg->group_mask_zero ? 0.0f : -INFINITY;
}

/* Softmax over every expert (max-subtracted, f64 sums), then top-k of the probabilities. */
static void
select_softmax (const BwRouterConfig *cfg, const float *logits, int *ids, float *weights,
                float *prob)
{
  int E = cfg->n_experts;
  gboolean taken[E];
  float mx = -INFINITY;
  double sum = 0.0, kept = 0.0;

  for (int e = 0; e < E; e++)
    mx = fmaxf (mx, logits[e]);
  for (int e = 0; e < E; e++)
    {
      prob[e] = expf (logits[e] - mx);
      sum += prob[e];
      taken[e] = FALSE;
    }
  for (int e = 0; e < E; e++)
    prob[e] = (float) (prob[e] / sum);
  for (int j = 0; j < cfg->top_k; j++)
    {
      int e = argmax_unmasked (prob, taken, E);
      taken[e] = TRUE;
      ids[j] = e;
      weights[j] = prob[e];
      kept += prob[e];
    }
  for (int j = 0; j < cfg->top_k; j++)
    weights[j] = (float) ((cfg->renormalize ? weights[j] / kept : weights[j]) * cfg->scaling);
}

/* Top-k of logits + bias, softmax over the k chosen logits only. */
static void
select_topk_softmax (const BwRouterConfig *cfg, const float *logits, const float *bias,
                     int *ids, float *weights, float *biased)
{
  int E = cfg->n_experts;
  gboolean taken[E];
  double sum = 0.0;

  for (int e = 0; e < E; e++)
    {
      biased[e] = logits[e] + (bias ? bias[e] : 0.0f);
      taken[e] = FALSE;
    }
  for (int j = 0; j < cfg->top_k; j++)
    {
      int e = argmax_unmasked (biased, taken, E);
      taken[e] = TRUE;
      ids[j] = e;
    }
  /* ids[0] holds the largest logit */
  for (int j = 0; j < cfg->top_k; j++)
    {
      weights[j] = expf (biased[ids[j]] - biased[ids[0]]);
      sum += weights[j];
    }
  for (int j = 0; j < cfg->top_k; j++)
    weights[j] = (float) (weights[j] / sum * cfg->scaling);
}

void
bw_router_select (const BwRouterConfig *cfg, const float *logits, const float *bias,
                  int *ids, float *weights, float *scratch)
{
  if (cfg->kind == BW_ROUTER_SOFTMAX)
    {
      select_softmax (cfg, logits, ids, weights, scratch);
      return;
    }
  if (cfg->kind == BW_ROUTER_TOPK_SOFTMAX)
    {
      select_topk_softmax (cfg, logits, bias, ids, weights, scratch);
      return;
    }

  int E = cfg->n_experts;
  float *score = scratch;       /* unbiased sigmoid */
  float *choice = scratch + E;  /* selection score */
  float *group_score = choice + E;
  gboolean taken[E];

  for (int e = 0; e < E; e++)
    {
      score[e] = bw_sigmoid (logits[e]);
      choice[e] = score[e] + (bias ? bias[e] : 0.0f);
      taken[e] = FALSE;
    }
  /* The biased variant gathers its weights from the scores before group masking. */
  for (int e = 0; e < E && cfg->biased_weights; e++)
    score[e] = choice[e];

  if (cfg->n_group > 1 && E % cfg->n_group == 0)
    mask_groups (cfg, choice, group_score);

  double sum = 0.0;
  for (int j = 0; j < cfg->top_k; j++)
    {
      int e = argmax_unmasked (choice, taken, E);
      taken[e] = TRUE;
      ids[j] = e;
      weights[j] = score[e];
      sum += score[e];
    }
  for (int j = 0; j < cfg->top_k; j++)
    {
      if (cfg->renormalize)
        weights[j] = (float) (weights[j] / (sum + 1e-20));
      weights[j] *= cfg->scaling;
    }
}
