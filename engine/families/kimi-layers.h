/* What the two Kimi families share: the text config (linear_attn_config, layer plan, MoE
 * settings), the binding of KDA / MLA / MLP / MoE weights under model.layers.N, the expert
 * layouts, and the per-layer attention + FFN steps. Kimi Linear uses it as is; K3 turns on
 * its extra features (Q-LoRA, output gates, bounded decay, SituAndMul, LatentMoE). */
#pragma once

#include "blocks/kda.h"
#include "blocks/latent-moe.h"
#include "blocks/mla.h"
#include "blocks/moe.h"
#include "model/family-api.h"

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
  gboolean kda, moe;
  const float *in_norm, *post_norm;
  BwKda kda_w;
  BwMla mla;
  BwMlp mlp;               /* dense FFN layers */
  BwLatentMoe moe_w;       /* .moe alone when cfg.latent == 0 */
  /* Attention residuals (K3) */
  const float *attn_res_norm, *attn_res_proj, *mlp_res_norm, *mlp_res_proj;
} BwKimiLayer;

typedef struct {
  BwKimiConfig cfg;
  BwKimiLayer *layers;
  BwMatrix embed, lm_head;
  const float *final_norm;
  const float *out_res_norm, *out_res_proj;
  /* Per-call buffers, sized for max_batch at load. */
  float *x, *h, *a;        /* [max_batch][D] each */
  void *scratch;
  gsize scratch_bytes;
} BwKimiModel;

/* Parses the config (the K3 feature fields when k3 is TRUE). */
gboolean bw_kimi_config_parse (BwModel *model, gboolean k3, BwKimiConfig *cfg, GError **error);

/* Binds every resident weight, creates the expert store, sizes scratch and the state
 * table. */
gboolean bw_kimi_model_bind (BwModel *model, BwKimiModel *km, GCancellable *cancellable,
                             GError **error);

/* a = attention of layer l over h ([n][D] normalised), advancing the state. */
void bw_kimi_attention (BwModel *model, BwKimiModel *km, BwState *state, int l, const float *h,
                        int n, float *a);
/* a = FFN of layer l over h ([n][D] normalised). */
gboolean bw_kimi_ffn (BwModel *model, BwKimiModel *km, int l, const float *h, int n, float *a,
                      GError **error);

/* Embedding rows of ids into x ([n][D]). */
void bw_kimi_embed (const BwKimiModel *km, const int32_t *ids, int n, float *x);
/* logits for the rows of x ([n][D], final-normed in place) as asked by the runtime. */
void bw_kimi_lm_head (BwModel *model, BwKimiModel *km, float *x, int n, float *logits,
                      gboolean all_logits);
