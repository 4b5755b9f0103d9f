/* What the two Kimi families share: the text config (linear_attn_config, layer plan, MoE
 * settings), the binding of KDA / MLA / MLP / MoE weights under model.layers.N, the expert
 * layouts, and the per-layer attention + FFN steps. Kimi Linear uses it as is; K3 turns on
 * its extra features (Q-LoRA, output gates, bounded decay, SituAndMul, LatentMoE). */
#pragma once

#include "blocks/kda.h"
#include "blocks/latent-moe.h"
#include "blocks/mla.h"
#include "blocks/moe.h"
#include "core/model-config.h"
#include "families/family.h"
#include "model/decoder.h"

typedef struct {
  int D, n_layers, vocab;
  float eps;
  /* MLA */
  int H, dn, dr, dv, R, Q;
  gboolean mla_gate;
  /* KDA */
  int Hk, d, Kc;
  gboolean full_rank_gate, bounded;
  float lower_bound;
  /* FFN */
  int inter, moe_inter, E, top_k, n_shared, first_dense, moe_freq;
  BwRouterConfig router;
  BwActivation act;
  int latent;              /* routed_expert_hidden_size; 0 = plain MoE */
  gboolean latent_norm;
  int attn_res_block;      /* 0 = no attention residuals */
  gboolean *is_kda, *is_moe;
} BwKimiConfig;

typedef struct {
  gboolean kda;
  BwKda kda_w;
  BwMla mla;
  /* Attention residuals (K3) */
  const float *attn_res_norm, *attn_res_proj, *mlp_res_norm, *mlp_res_proj;
} BwKimiLayer;

typedef struct {
  BwKimiConfig cfg;
  BwKimiLayer *layers;     /* attention per layer; norms and FFN live in dec */
  BwDecoder dec;
  const float *out_res_norm, *out_res_proj;
} BwKimiModel;

/* The attention both Kimi families run (KDA or MLA per layer), for the shared decoder. */
extern const BwDecoderAttention bw_kimi_attention_ops;

/* Layer kinds in the checkpoint config's layer_kind. */
enum { BW_KIMI_LAYER_KDA = 1, BW_KIMI_LAYER_MLA = 2 };

/* The checkpoint config hook both Kimi descriptors use (families/family.h). */
gboolean bw_kimi_parse_config (const BwConfigFields *text, BwModelConfig *cfg, GError **error);

/* Synthetic checkpoints at the releases' widths (kimi-synth.c). */
gboolean bw_kimi_linear_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);
gboolean bw_kimi_k3_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error);

/* K3's chat tag opener "<|open|>NAME a1="v1" a2="v2"<|sep|>", escaping & and " in the
 * values only. attrs: name, value pairs ending with NULL. */
void bw_kimi_k3_open_tag (GString *out, const char *name, const char *const *attrs);

/* Parses the config (the K3 feature fields when k3 is TRUE). */
gboolean bw_kimi_config_parse (BwModel *model, gboolean k3, BwKimiConfig *cfg, GError **error);

/* Binds every resident weight through the shared decoder, with the K3 attention
 * residuals when the config has them. */
gboolean bw_kimi_model_bind (BwModel *model, BwKimiModel *km, GCancellable *cancellable,
                             GError **error);
