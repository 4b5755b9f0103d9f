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

/* What Kimi reads beyond the shared fields (BwModelConfig.family_config). */
typedef struct {
  gboolean k3;
  gboolean mla_gate;       /* mla_use_output_gate */
  /* KDA: linear_attn_config */
  int Hk, d, Kc;
  gboolean full_rank_gate, bounded;
  float lower_bound;
  /* FFN */
  BwActivation act;
  int latent;              /* routed_expert_hidden_size; 0 = plain MoE */
  gboolean latent_norm;
  int attn_res_block;      /* 0 = no attention residuals */
} BwKimiConfig;

typedef struct {
  gboolean kda;
  BwKda kda_w;
  BwMla mla;
  /* Attention residuals (K3) */
  const float *attn_res_norm, *attn_res_proj, *mlp_res_norm, *mlp_res_proj;
} BwKimiLayer;

typedef struct {
  const BwModelConfig *mc;
  const BwKimiConfig *cfg;
  BwKimiLayer *layers;     /* attention per layer; norms and FFN live in dec */
  BwDecoder dec;
  const float *out_res_norm, *out_res_proj;
} BwKimiModel;

/* a = layer l's attention over h ([n][hidden], normalised): KDA or MLA, advancing the
 * state. */
void bw_kimi_attention (BwModel *model, BwKimiModel *km, BwState *state, int l, const float *h,
                        int n, float *a);

/* Layer kinds in the checkpoint config's layer_kind. */
enum { BW_KIMI_LAYER_KDA = 1, BW_KIMI_LAYER_MLA = 2 };

/* The checkpoint config hooks of the two descriptors (core/family-desc.h). */
gboolean bw_kimi_linear_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own,
                                      GError **error);
gboolean bw_kimi_k3_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own,
                                  GError **error);

/* Binds every resident weight through the shared decoder, with the K3 attention
 * residuals when the config has them. */
gboolean bw_kimi_model_bind (BwModel *model, const BwModelConfig *cfg, BwKimiModel *km,
                             GCancellable *cancellable, GError **error);
