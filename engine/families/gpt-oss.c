/* gpt-oss-20b / 120b (model_type "gpt_oss"): GQA with q/k/v/o biases, a learned sink logit
 * per head, alternating sliding-window and full layers (layer_types), split-half YaRN RoPE
 * whose attention factor scales cos and sin; every layer MoE with a biased router whose
 * top-k logits are softmaxed, and experts fused per layer (gate_up with interleaved gate and
 * up rows, biases, clamped SwiGLU) stored as released in MXFP4 _blocks / _scales, each
 * expert one contiguous byte range that the store streams on its own. */
#include "families/family-parts.h"
#include "families/moe-layers.h"

/* Layer kinds: layer_types "sliding_attention" or "full_attention". */
enum { OSS_FULL = 0, OSS_SLIDING = 1 };

typedef struct {
  BwGqaConfig gqa;
  double swiglu_limit;
} OssConfig;

static gboolean
oss_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  OssConfig *c = own;
  gboolean listed;

  cfg->layer_kind = g_new0 (guint8, cfg->n_layers);
  return bw_moe_config_check (f, cfg, FALSE, error)
         && bw_gqa_config_parse (f, cfg, &c->gqa, error)
         && bw_config_fields_number (f, "swiglu_limit", 0.0, 1e6, 7.0, &c->swiglu_limit, error)
         && bw_layer_types_parse (f, cfg, "full_attention", "sliding_attention",
                                  cfg->layer_kind, &listed, error);
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} OssModel;

static gboolean
oss_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  const OssConfig *c = cfg->family_config;
  OssModel *om = bw_model_alloc (model, sizeof *om);
  BwDecoderFfn *f = &om->dec.ffn;

  bw_model_set_family_data (model, om);
  om->gqa.sinks = TRUE;
  if (!bw_decoder_init (&om->dec, cfg, error)
      || !bw_gqa_layers_init (model, &om->gqa, cfg, &c->gqa, cfg->layer_kind, error))
    return FALSE;
  f->router.kind = BW_ROUTER_TOPK_SOFTMAX;
  f->router_name = "router";
  f->router_bias = "router.bias";
  f->fused_gate_up = TRUE;
  f->expert_bias = TRUE;
  f->n_shared = 0;
  f->shared_inter = 0;
  /* the reference's constant */
  f->act = (BwActivation) { .kind = BW_ACT_CLAMPED, .alpha = 1.702f,
                            .limit = (float) c->swiglu_limit };
  return bw_decoder_load (model, &om->dec, &bw_gqa_attention, &om->gqa, cancellable, error);
}

/* Pre-norm: x += GQA(norm(x)) (with sinks; sliding-window on alternate layers);
 * x += MoE(norm(x)); logits. */
static gboolean
oss_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
             gboolean all_logits, GCancellable *cancellable, GError **error)
{
  OssModel *om = bw_model_family_data (model);
  BwDecoder *dec = &om->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_gqa_layers_forward (model, &om->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps oss_ops = {
  .load = oss_load,
  .forward = oss_forward,
};

const BwFamily bw_gpt_oss_family = {
  .name = "gpt_oss",
  .display_name = "gpt-oss",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_up_proj", NULL, "down_proj" },
  .fused_experts = TRUE,
  .keys = { "num_local_experts", "num_experts_per_tok", NULL, NULL },
  .parse_config = oss_parse_config,
  .config_size = sizeof (OssConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &oss_ops,
  .chat = &bw_gpt_oss_chat,
  .synth = bw_gpt_oss_synth,
};
