/* MoE routers over the logits gate.weight . x (top-k: lowest id wins ties):
 * - sigmoid "noaux_tc" (DeepSeek-V3, GLM, Kimi): choose with sigmoid + correction bias,
 *   optional expert groups, weight with the sigmoid, renormalise, scale (ARCHITECTURES 1.4);
 * - softmax (Qwen3-MoE, Qwen3-Next): softmax over every expert, top-k of the probabilities,
 *   optionally renormalised to sum 1 (norm_topk_prob);
 * - top-k softmax (gpt-oss): logits + router bias, top-k of the logits, softmax over those k. */
#pragma once

#include <glib.h>

typedef enum {
  BW_ROUTER_SIGMOID = 0,
  BW_ROUTER_SOFTMAX,
  BW_ROUTER_TOPK_SOFTMAX,
} BwRouterKind;

typedef struct {
  BwRouterKind kind;
  int n_experts;
  int top_k;
  int n_group;            /* sigmoid: <= 1 = no grouping */
  int topk_group;
  gboolean renormalize;   /* w /= sum(w) + 1e-20 */
  float scaling;          /* routed_scaling_factor */
  gboolean biased_weights;  /* Kimi Linear reference: weights are s + bias (in-place add) */
  gboolean group_mask_zero; /* Kimi Linear reference: dropped groups score 0 instead of -inf */
} BwRouterConfig;

/* Floats of scratch bw_router_select needs. */
gsize bw_router_scratch_floats (const BwRouterConfig *cfg);

/* logits = gate.weight . x ([n_experts]); bias (the sigmoid router's correction bias or
 * the top-k softmax router's logit bias) may be NULL. Writes the chosen experts to
 * ids[top_k] in descending choice-score order and their weights to weights[top_k]. */
void bw_router_select (const BwRouterConfig *cfg, const float *logits, const float *bias,
                       int *ids, float *weights, float *scratch);
