/* Qwen3-MoE (model_type "qwen3_moe": Qwen3-30B-A3B, 235B-A22B): GQA with per-head q/k
 * RMSNorm before split-half RoPE, softmax top-k router (norm_topk_prob), no shared expert,
 * dense layers from mlp_only_layers / decoder_sparse_step. Its chat format (qwen3-chat.c)
 * is also Qwen3-Next's. */
#include "families/family-parts.h"
#include "families/moe-layers.h"

static gboolean
qwen_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  BwGqaConfig *gqa = own;
  return bw_moe_config_check (f, cfg, FALSE, error) && bw_gqa_config_parse (f, cfg, gqa, error);
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} QwenModel;

static gboolean
qwen_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = bw_model_alloc (model, sizeof *qm);

  bw_model_set_family_data (model, qm);
  qm->dec.ffn.router.kind = BW_ROUTER_SOFTMAX;
  qm->gqa.qk_norm = TRUE;
  return bw_decoder_init (&qm->dec, cfg, error)
         && bw_gqa_layers_init (model, &qm->gqa, cfg, cfg->family_config, NULL, error)
         && bw_decoder_load (model, &qm->dec, &bw_gqa_attention, &qm->gqa, cancellable, error);
}

/* Pre-norm: x += GQA(norm(x)); x += MoE(norm(x)) (or the dense MLP); logits. */
static gboolean
qwen_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = bw_model_family_data (model);
  BwDecoder *dec = &qm->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_gqa_layers_forward (model, &qm->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps qwen_ops = {
  .load = qwen_load,
  .forward = qwen_forward,
};

const BwFamily bw_qwen3_moe_family = {
  .name = "qwen3_moe",
  .display_name = "Qwen3-MoE",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "num_experts", "num_experts_per_tok", NULL, NULL },
  .parse_config = qwen_parse_config,
  .config_size = sizeof (BwGqaConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &qwen_ops,
  .chat = &bw_chatml_format,
  .synth = bw_qwen3_moe_synth,
};
