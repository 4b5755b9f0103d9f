/* The decoder every MoE family shares around its own attention: embeddings, per-layer
 * norms, the FFN of each layer (dense MLP, or routed MoE with its router, correction bias,
 * shared experts, optional latent projection and routed experts in every stored format),
 * router lookahead, phase timing, the final norm and the LM head, and the load skeleton
 * that binds them in order with progress and cancellation. A family shapes BwDecoder from
 * its config (bw_decoder_init, then its own settings), hands in the binding of its attention
 * through BwDecoderAttention, calls bw_decoder_load, and writes its forward pass from the
 * steps below and its attention blocks. */
#pragma once

#include "blocks/latent-moe.h"
#include "blocks/mlp.h"
#include "blocks/moe.h"
#include "model/family-api.h"

G_BEGIN_DECLS

/* The FFN shape, as the family's config gives it. */
typedef struct {
  int inter;                 /* dense MLP width */
  int moe_inter;             /* routed expert width */
  int n_experts;
  int n_shared;              /* shared experts: one MLP of width n_shared * moe_inter */
  int latent;                /* routed experts' input width (LatentMoE); 0 = hidden */
  gboolean latent_norm;      /* LatentMoE's routed_expert_norm */
  BwRouterConfig router;
  BwActivation act;
  gboolean correction_bias;  /* the router has gate.e_score_correction_bias */
  const char *router_name;   /* the router inside the MoE block: "gate" when NULL */
  const char *router_bias;   /* another router bias inside the MoE block (gpt-oss
                              * "router.bias"), or NULL */
  const char *shared_name;   /* shared experts inside the MoE block: "shared_experts." when
                              * NULL */
  int shared_inter;          /* shared MLP width when not n_shared * moe_inter; 0 = that */
  gboolean shared_gate;      /* the shared MLP is scaled by sigmoid(shared_expert_gate x) */
  /* gpt-oss: the family's experts are fused per layer (BwFamily.fused_experts), the gate
   * tensor holds gate and up as interleaved rows ([2 moe_inter, hidden] per expert, the up
   * name NULL), and "<experts_prefix><name>_bias" tensors ([experts][rows]) are added to the
   * gate_up and down products. */
  gboolean fused_gate_up;
  gboolean split_experts;    /* set at load: the fused family's experts are stored one tensor
                              * per matrix and expert (a GGUF file's slices), gate and up
                              * apart; fused_gate_up is then cleared */
  gboolean expert_bias;
  const char *mlp_prefix;    /* dense MLP inside a layer, e.g. "mlp." */
  const char *moe_prefix;    /* MoE block inside a layer, e.g. "mlp." */
} BwDecoderFfn;

typedef struct {
  const float *in_norm, *post_norm;  /* input_layernorm, post_attention_layernorm */
  gboolean moe;
  BwMlp mlp;                 /* dense layers */
  BwLatentMoe moe_w;         /* MoE layers; .moe alone when latent is 0 */
} BwDecoderLayer;

typedef struct {
  /* The shape, set by the family before bw_decoder_load. */
  int hidden, vocab, n_layers;
  float eps;
  gboolean embed_exact;      /* never requantise the embedding table */
  gboolean tied;             /* the LM head is the embedding table */
  gboolean norm_plus_one;    /* the residual-stream RMSNorms are zero-centred: weight 1 + w */
  const guint8 *is_moe;      /* [n_layers] */
  BwDecoderFfn ffn;
  /* Bound by bw_decoder_load. */
  BwDecoderLayer *layers;
  BwMatrix embed, lm_head;
  /* An untied embedding table stays in the checkpoint and each token's row is read from
   * there: a row per token is all it is used for, and its bytes are left to the expert
   * cache. NULL where the table is in memory (tied to the LM head, or stored in a format
   * read only whole). */
  const BwTensorInfo *embed_file;
  const float *final_norm;
  float *x, *h, *a;          /* [max_batch][hidden] each */
  void *scratch;             /* shared by attention and FFN, sized for max_batch */
  gsize scratch_bytes;
  int first_moe;             /* the first MoE layer when the lookahead is on, or -1 */
  guint64 t;                 /* the running phase's start, while a forward runs */
} BwDecoder;

/* Loading the family's attention, called with its own data. */
typedef struct {
  /* Binds layer l's attention weights and sets its state size (bw_model_set_layer_state). */
  gboolean (*bind) (BwModel *model, gpointer self, int l, GError **error);
  /* Scratch bytes layer l's attention needs for n tokens (it runs in dec->scratch). */
  gsize (*scratch_bytes) (gpointer self, int l, int n, int threads);
} BwDecoderAttention;

/* The shape from the typed config: widths, layer plan, tied embeddings, the FFN with a
 * SwiGLU MoE under "mlp." and its router settings (the router kind is the family's to set),
 * checked for what the decoder can run. */
gboolean bw_decoder_init (BwDecoder *dec, const BwModelConfig *cfg, GError **error);

/* Binds the embedding, final norm and LM head, then every layer (norms, the family's
 * attention, the FFN) with progress and cancellation, the routed experts into the expert
 * store, the router lookahead, scratch and the per-call buffers. Sets model->vocab,
 * n_layers, hidden and state_sizes. */
gboolean bw_decoder_load (BwModel *model, BwDecoder *dec, const BwDecoderAttention *attn,
                          gpointer self, GCancellable *cancellable, GError **error);

/* A dense SwiGLU-style MLP: "model.layers.<l>.<prefix>{gate,up,down}_proj.weight". */
gboolean bw_decoder_bind_mlp (BwModel *model, BwMlp *mlp, int l, const char *prefix,
                              int64_t width, int64_t inter, const BwActivation *act,
                              GError **error);

/* One routed expert matrix [rows, cols] as stored under base (its full name less the
 * suffix), described for the store: <base>.weight in F32, BF16, F16, or F8_E4M3 with its F32
 * <base>.weight_scale_inv grid of 128 x 128 block scales; or compressed-tensors MXFP4,
 * <base>.weight_packed + <base>.weight_scale. Errors name the tensor and the shape. */
gboolean bw_decoder_expert_tensor (BwModel *model, const char *base, int64_t rows,
                                   int64_t cols, BwExpertTensor *out, GError **error);

/* The steps of a forward pass over n tokens, in the decoder's buffers x (the residual
 * stream), h (a normalised copy) and a (a block's output), each [n][hidden]. Each step
 * counts its time in the model's phases. */

/* x = the embedding rows of ids; starts the router lookahead of a decode step. */
gboolean bw_decoder_begin (BwModel *model, BwDecoder *dec, const int32_t *ids, int n,
                           GError **error);
/* h = RMSNorm(x) by layer l's input_layernorm. */
void bw_decoder_attn_norm (BwDecoder *dec, int l, int n);
/* x += a. */
void bw_decoder_residual (BwDecoder *dec, int n);
/* h = RMSNorm(x) by layer l's post_attention_layernorm; ends the attention phase. */
void bw_decoder_ffn_norm (BwModel *model, BwDecoder *dec, int l, int n);
/* a = FFN of layer l over h ([n][hidden], normalised): the routed MoE or the dense MLP. */
gboolean bw_decoder_ffn (BwModel *model, BwDecoder *dec, int l, const float *h, int n, float *a,
                         GError **error);
/* logits for the rows of x ([n][hidden], final-normed in place) as the runtime asked. */
void bw_decoder_lm_head (BwModel *model, BwDecoder *dec, float *x, int n, float *logits,
                         gboolean all_logits);

/* Embedding rows of ids into x ([n][hidden]); FALSE where the checkpoint cannot be read. */
gboolean bw_decoder_embed (BwModel *model, const BwDecoder *dec, const int32_t *ids, int n,
                           float *x, GError **error);
/* A decode step (n == 1) with the lookahead on: prefetches the first MoE layer's likeliest
 * experts by its router on x, the token's embedding, before the layers ahead of it run. */
void bw_decoder_lookahead_start (BwModel *model, BwDecoder *dec, const float *x, int n);

G_END_DECLS
