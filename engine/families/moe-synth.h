/* What the synthetic checkpoints of the GQA / MLA MoE families share (the synth
 * hooks of Qwen3-MoE, DeepSeek-V3, gpt-oss, GLM-4.5 and Qwen3-Next): their shape with the
 * release's widths as defaults and --hidden etc. as overrides, the model skeleton
 * (embedding, layers, final norm, LM head), grouped-query attention tensors and the common
 * config.json members. */
#pragma once

#include "synth/synth-blocks.h"

G_BEGIN_DECLS

typedef struct {
  int layers, dense, experts, topk, vocab, D, inter, dense_inter, shared_inter;
  int heads, kv_heads, head_dim;
  double skew;
  guint64 seed;
  BwDType dtype;           /* dense projections and per-expert experts: BF16 or F8_E4M3 */
  float norm_value;        /* RMSNorm weights: 1, or 0 where the family uses 1 + w */
  const void *family;      /* the family's own dimensions, for its layer hook */
} BwMoeSynthDims;

/* d = release with the options' overrides. A --hidden other than the release's scales the
 * widths the options leave unset: heads of head_dim (16 at small widths) in the release's
 * ratio to the hidden size, experts of about D / 2. Fails on widths the formats cannot hold
 * (multiple: what hidden and expert widths must divide by, e.g. 32 for MXFP4). */
gboolean bw_moe_synth_dims (const BwSynthOptions *o, const BwMoeSynthDims *release,
                            const char *what, int multiple, BwMoeSynthDims *d,
                            GError **error);

/* Adds layer l's tensors under "model.layers.<l>." (lp); group numbers the expert groups. */
typedef void (*BwMoeSynthLayer) (BwSynthPlan *p, const BwMoeSynthDims *d, int l,
                                 const char *lp, int *group);

/* embed_tokens, each layer's input / post-attention norms and add_layer, model.norm,
 * lm_head. */
void bw_moe_synth_model (BwSynthPlan *p, const BwMoeSynthDims *d, BwMoeSynthLayer add_layer);

/* Grouped-query attention under prefix ("model.layers.3.self_attn."). */
typedef struct {
  gboolean bias;           /* q/k/v biases */
  gboolean o_bias;
  gboolean qk_norm;        /* q_norm / k_norm over head_dim */
  gboolean sinks;          /* per-head sinks */
  gboolean output_gate;    /* q_proj yields [query | gate] per head */
} BwSynthGqa;

void bw_moe_synth_gqa (BwSynthPlan *p, const char *prefix, const BwMoeSynthDims *d,
                       const BwSynthGqa *g);

/* Routed experts of one layer, one tensor per expert and matrix (gate/up/down_proj). */
void bw_moe_synth_experts (BwSynthPlan *p, const char *prefix, const BwMoeSynthDims *d, int l,
                           int *group);

/* architectures, model_type, dtype, hidden_size, num_hidden_layers, vocab_size, the
 * attention heads, rms_norm_eps, the expert counts under the given names, tie_word_embeddings
 * false, num_nextn_predict_layers 0, bos 0 and eos_token_id: the release's ids where the
 * vocabulary holds them (real, n), else the last id. */
void bw_moe_synth_config (JsonBuilder *b, const BwMoeSynthDims *d, const char *arch,
                          const char *model_type, double eps, const char *n_experts_key,
                          const int *real_eos, int n_eos);

/* A family's synth hook body: fills plan with fill(d) (solving the expert count for
 * --size-gb) and plan->config with config(d). */
typedef JsonNode *(*BwMoeSynthConfig) (const BwMoeSynthDims *d);
void bw_moe_synth_run (const BwSynthOptions *o, BwMoeSynthDims *d, BwMoeSynthLayer add_layer,
                       BwMoeSynthConfig config, BwSynthPlan *plan);

G_END_DECLS
