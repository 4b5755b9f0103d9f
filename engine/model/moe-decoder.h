/* The decoder skeleton the MoE families share (DeepSeek-V3, Qwen3-MoE, GLM-4.5, gpt-oss,
 * Qwen3-Next): config fields common to them, embeddings, per-layer pre-norms, the dense
 * SwiGLU MLP or the routed MoE (router, shared expert, routed experts streamed from the
 * store, router lookahead), the final norm and lm_head, and the forward loop with phase
 * timing. The family supplies the attention of each layer through two callbacks and may
 * replace the routed experts' description (fused or quantised layouts). */
#pragma once

#include "blocks/gqa.h"
#include "blocks/mlp.h"
#include "blocks/moe.h"
#include "model/family-api.h"

G_BEGIN_DECLS

typedef struct BwMoeDecoder BwMoeDecoder;

typedef struct {
  /* Set by the family before bw_moe_decoder_parse. */
  BwRouterKind router_kind;
  const char *router_name;     /* under mlp.: "gate" (default) or "router" */
  const char *router_bias;     /* under mlp.: NULL = none, e.g. "gate.e_score_correction_bias" */
  const char *shared_name;     /* under mlp.: "shared_experts." (default), "shared_expert." */
  gboolean shared_gate;        /* mlp.shared_expert_gate scales the shared expert */
  gboolean norm_plus_one;      /* RMSNorm weights are used as 1 + w */
  /* Parsed. */
  int D, n_layers, vocab;
  float eps;
  gboolean tied;
  int inter;                   /* dense MLP width (0 when no layer is dense) */
  int moe_inter, E, top_k;
  int shared_inter;            /* 0 = no shared expert */
  BwRouterConfig router;
  gboolean *is_moe;            /* [n_layers] */
} BwMoeDecoderConfig;

typedef struct {
  const float *in_norm, *post_norm;
  BwMlp mlp;                   /* dense layers */
  BwMoe moe;                   /* MoE layers */
} BwMoeDecoderLayer;

struct BwMoeDecoder {
  /* Binds layer l's attention weights, sets model->state_sizes[l] and the scratch bytes
   * its forward needs for max_batch tokens. */
  gboolean (*bind_attention) (BwModel *model, BwMoeDecoder *dec, int l, gsize *scratch,
                              GError **error);
  /* out = attention of layer l over h ([n][D], normalised) at positions pos0.., advancing
   * the layer's state; may use dec->scratch. */
  void (*attention) (BwModel *model, BwMoeDecoder *dec, BwState *state, int l, const float *h,
                     int n, int64_t pos0, float *out);
  /* Optional: describes routed expert e of layer l for the store (default: per-expert
   * mlp.experts.E.{gate,up,down}_proj.weight in BF16/F16/F32 or block FP8). */
  gboolean (*expert_layout) (BwModel *model, BwMoeDecoder *dec, int l, int e,
                             BwExpertLayout *out, GError **error);
  /* Optional: called on each MoE block after binding (expert biases, activation). */
  gboolean (*setup_moe) (BwModel *model, BwMoeDecoder *dec, int l, BwMoe *moe, GError **error);

  const BwMoeDecoderConfig *cfg;
  BwMoeDecoderLayer *layers;
  BwMatrix embed, lm_head;
  const float *final_norm;
  float *x, *h, *a;            /* [max_batch][D] */
  void *scratch;
  gsize scratch_bytes;
};

/* "<dir>/config.json: message" as a BW_CHECKPOINT_ERROR; returns FALSE. */
gboolean bw_moe_decoder_fail (BwModel *model, GError **error, int code, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);

/* Reads the shared fields into cfg (the family's settings above already set), sets
 * model->n_layers and the layer plan: a layer is dense when it is in mlp_only_layers, when
 * (l + 1) % decoder_sparse_step != 0, when l < first_k_dense_replace, or when
 * l % moe_layer_freq != 0. Accepts no quantization_config or the FP8 128x128 one. */
gboolean bw_moe_decoder_parse (BwModel *model, BwMoeDecoderConfig *cfg, GError **error);

/* Binds everything (attention through the callback), creates the expert store and the
 * router lookahead, sizes scratch and state. */
gboolean bw_moe_decoder_load (BwModel *model, BwMoeDecoder *dec, const BwMoeDecoderConfig *cfg,
                              GCancellable *cancellable, GError **error);

/* The runtime's forward (BwFamilyOps.forward) for a decoder. */
gboolean bw_moe_decoder_forward (BwModel *model, BwMoeDecoder *dec, BwState *state,
                                 const int32_t *ids, int n, float *logits, gboolean all_logits,
                                 GCancellable *cancellable, GError **error);

/* A per-expert tensor of the default layout: rows x cols in BF16/F16/F32, or F8_E4M3 with
 * its F32 `_scale_inv` block grid. name is the full tensor name without ".weight". */
gboolean bw_moe_decoder_expert_tensor (BwModel *model, const char *name, int64_t rows,
                                       int64_t cols, BwExpertTensor *out, GError **error);

/* w[i] = 1 + w[i] for n model-owned floats (zero-centred RMSNorm weights). */
void bw_moe_decoder_plus_one (float *w, int n);

/* Grouped-query attention layers (every family here but DeepSeek-V3). The family sets the
 * flags; bw_moe_decoder_gqa_parse reads num_attention_heads, num_key_value_heads, head_dim
 * (hidden / heads when absent), attention_bias (q/k/v, and o unless no_o_bias), the RoPE
 * (split-half, partial_rotary_factor, YaRN) and layer_types / sliding_window. */
typedef struct {
  gboolean qk_norm;        /* self_attn.q_norm / k_norm */
  gboolean sinks;          /* self_attn.sinks */
  gboolean output_gate;    /* q_proj yields [query | gate] per head */
  gboolean no_o_bias;      /* o_proj has no bias even with attention_bias */
  /* parsed */
  int H, Hkv, hd, window;
  gboolean bias;
  gboolean *sliding;       /* [n_layers] */
  BwRopeConfig rope;
  BwRopeTable *rope_table;
  BwGqa *layers;           /* [n_layers]; only attention layers are bound */
} BwMoeGqa;

gboolean bw_moe_decoder_gqa_parse (BwModel *model, const BwMoeDecoderConfig *c, BwMoeGqa *g,
                                   GError **error);
/* Binds layer l's self_attn.* into g->layers[l], its state size and scratch. */
gboolean bw_moe_decoder_gqa_bind (BwModel *model, const BwMoeDecoderConfig *c, BwMoeGqa *g,
                                  int l, gsize *scratch, GError **error);
void bw_moe_decoder_gqa_forward (BwModel *model, BwMoeDecoder *dec, const BwMoeGqa *g,
                                 BwState *state, int l, const float *h, int n, int64_t pos0,
                                 float *out);
void bw_moe_decoder_gqa_clear (BwMoeGqa *g);

G_END_DECLS
