/* What the MoE families with GQA or MLA attention share beyond the decoder (model/decoder.h):
 * reading the MoE fields their configs spell differently into a BwDecoder, and grouped-query
 * attention layers bound from self_attn.* (Qwen3-MoE, GLM-4.5, gpt-oss, Qwen3-Next's full
 * layers). */
#pragma once

#include "blocks/gqa.h"
#include "blocks/rope.h"
#include "core/model-config.h"
#include "model/decoder.h"

G_BEGIN_DECLS

/* Fills dec's shape from the config: hidden_size, num_hidden_layers, vocab_size,
 * rms_norm_eps, tie_word_embeddings, the checkpoint's layer plan, the expert count, top-k and
 * widths under any of their spellings, shared experts (n_shared_experts, or
 * shared_expert_intermediate_size), n_group / topk_group, norm_topk_prob (default on for
 * the sigmoid router) and routed_scaling_factor. The router kind is dec->ffn.router.kind
 * as set by the caller. SwiGLU activation, "mlp." prefixes. */
gboolean bw_moe_layers_fill (BwModel *model, BwDecoder *dec, GError **error);

typedef struct {
  /* Set by the family before bw_gqa_layers_parse. */
  gboolean qk_norm;        /* self_attn.q_norm / k_norm */
  gboolean norm_plus_one;  /* q_norm / k_norm weights are used as 1 + w */
  gboolean sinks;          /* self_attn.sinks */
  gboolean output_gate;    /* q_proj yields [query | gate] per head */
  gboolean no_o_bias;      /* o_proj has no bias even with attention_bias */
  /* Parsed. */
  int H, Hkv, hd, window;
  gboolean bias;           /* attention_bias: q/k/v (and o unless no_o_bias) */
  gboolean *sliding;       /* [n_layers] from layer_types "sliding_attention" */
  BwRopeConfig rope;
  BwRopeTable *rope_table;
  BwGqa *layers;           /* [n_layers]; only the attention layers are bound */
} BwGqaLayers;

/* num_attention_heads, num_key_value_heads, head_dim (hidden / heads when absent),
 * attention_bias, the RoPE (split-half, partial_rotary_factor, YaRN), layer_types and
 * sliding_window. */
gboolean bw_gqa_layers_parse (BwModel *model, const BwDecoder *dec, BwGqaLayers *g,
                              GError **error);
/* Binds layer l's self_attn.* into g->layers[l] and sets its state size. */
gboolean bw_gqa_layers_bind (BwModel *model, const BwDecoder *dec, BwGqaLayers *g, int l,
                             GError **error);
gsize bw_gqa_layers_scratch (const BwGqaLayers *g, int l, int n);
void bw_gqa_layers_forward (BwModel *model, const BwDecoder *dec, const BwGqaLayers *g,
                            BwState *state, int l, const float *h, int n, float *out);
void bw_gqa_layers_clear (BwGqaLayers *g);

/* ChatML (<|im_start|>role ... <|im_end|>), Qwen3's format; defined in qwen3-moe.c. */
extern const struct BwChatFormat bw_chatml_format;

G_END_DECLS
