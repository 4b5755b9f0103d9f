/* What the MoE families with GQA or MLA attention share beyond the decoder (model/decoder.h):
 * the checks of their config fields, and grouped-query attention layers bound from
 * self_attn.* (Qwen3-MoE, GLM-4.5, gpt-oss, Qwen3-Next's full layers). */
#pragma once

#include "blocks/gqa.h"
#include "blocks/rope.h"
#include "core/model-config.h"
#include "model/decoder.h"

G_BEGIN_DECLS

/* What a GQA family reads beyond the shared fields: the RoPE (split-half; partial rotary,
 * YaRN). Filled by bw_gqa_config_parse from the family's parse hook. */
typedef struct {
  BwRopeConfig rope;
} BwGqaConfig;

/* Checks num_attention_heads / num_key_value_heads / head_dim for grouped-query attention
 * and reads the RoPE. */
gboolean bw_gqa_config_parse (const BwConfigFields *f, const BwModelConfig *cfg,
                              BwGqaConfig *out, GError **error);
/* The checks every MoE family on the shared decoder makes of the shared fields in its
 * parse hook: SwiGLU (hidden_act "silu"); norm_topk_prob defaults to renorm_default. */
gboolean bw_moe_config_check (const BwConfigFields *f, BwModelConfig *cfg,
                              gboolean renorm_default, GError **error);

/* layer_types: out[l] = 1 where the entry of main layer l is word1, 0 where it is word0;
 * entries past num_hidden_layers (layers a checkpoint holds but the config does not run)
 * are not read. *present tells whether the list was there. */
gboolean bw_layer_types_parse (const BwConfigFields *f, const BwModelConfig *cfg,
                               const char *word0, const char *word1, guint8 *out,
                               gboolean *present, GError **error);

typedef struct {
  /* Set by the family before bw_gqa_layers_init. */
  gboolean qk_norm;        /* self_attn.q_norm / k_norm */
  gboolean norm_plus_one;  /* q_norm / k_norm weights are used as 1 + w */
  gboolean sinks;          /* self_attn.sinks */
  gboolean output_gate;    /* q_proj yields [query | gate] per head */
  gboolean no_o_bias;      /* o_proj has no bias even with attention_bias */
  /* From the config. */
  int H, Hkv, hd, window;
  float eps;               /* of the q / k norms */
  gboolean bias;           /* attention_bias: q/k/v (and o unless no_o_bias) */
  const guint8 *sliding;   /* [n_layers]: a sliding-window layer, or NULL for none */
  BwRopeTable *rope_table;
  BwGqa *layers;           /* [n_layers]; only the attention layers are bound */
} BwGqaLayers;

/* Shapes g from the typed config (heads, head_dim, attention_bias, sliding_window) and
 * the RoPE, with sliding marking the sliding-window layers (NULL: none). The RoPE table
 * is the model's. */
gboolean bw_gqa_layers_init (BwModel *model, BwGqaLayers *g, const BwModelConfig *cfg,
                             const BwGqaConfig *gc, const guint8 *sliding, GError **error);
/* Binds layer l's self_attn.* into g->layers[l] and sets its state size. */
gboolean bw_gqa_layers_bind (BwModel *model, BwGqaLayers *g, int l, GError **error);
gsize bw_gqa_layers_scratch (const BwGqaLayers *g, int l, int n);
/* a = the attention of layer l over h ([n][hidden], normalised), advancing the state. */
void bw_gqa_layers_forward (BwModel *model, const BwGqaLayers *g, BwState *state, int l,
                            const float *h, int n, float *a, void *scratch);
/* Binding and scratch of GQA on every layer, for bw_decoder_load with g as self. */
extern const BwDecoderAttention bw_gqa_attention;

G_END_DECLS
