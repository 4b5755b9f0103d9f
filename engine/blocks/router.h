/* Sigmoid "noaux_tc" router: choose with sigmoid + correction bias, optional expert groups,
 * top-k (lowest id wins ties), weight, renormalise, scale (ARCHITECTURES 1.4). */
#pragma once

#include <glib.h>

typedef struct {
  int n_experts;
  int top_k;
  int n_group;            /* <= 1: no grouping */
  int topk_group;
  gboolean renormalize;   /* w /= sum(w) + 1e-20 */
  float scaling;          /* routed_scaling_factor */
  gboolean biased_weights;  /* Kimi Linear reference: weights are s + bias (in-place add) */
  gboolean group_mask_zero; /* Kimi Linear reference: dropped groups score 0 instead of -inf */
} BwRouterConfig;

/* Floats of scratch bw_router_select needs. */
gsize bw_router_scratch_floats (const BwRouterConfig *cfg);

/* logits = gate.weight . x ([n_experts]); bias may be NULL. Writes the chosen experts to
 * ids[top_k] in descending choice-score order and their weights to weights[top_k]. */
void bw_router_select (const BwRouterConfig *cfg, const float *logits, const float *bias,
                       int *ids, float *weights, float *scratch);
