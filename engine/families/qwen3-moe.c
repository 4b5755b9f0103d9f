/* Qwen3-MoE (model_type "qwen3_moe": Qwen3-30B-A3B, 235B-A22B): GQA with per-head q/k
 * RMSNorm before split-half RoPE, softmax top-k router (norm_topk_prob), no shared expert,
 * dense layers from mlp_only_layers / decoder_sparse_step. */
#include "model/moe-decoder.h"

typedef struct {
  BwMoeDecoder dec;        /* first: the decoder's callbacks get this pointer */
  BwMoeDecoderConfig cfg;
  BwMoeGqa gqa;
} QwenModel;

static gboolean
qwen_bind_attention (BwModel *model, BwMoeDecoder *dec, int l, gsize *scratch, GError **error)
{
  QwenModel *qm = (QwenModel *) dec;
  return bw_moe_decoder_gqa_bind (model, &qm->cfg, &qm->gqa, l, scratch, error);
}

static void
qwen_attention (BwModel *model, BwMoeDecoder *dec, BwState *state, int l, const float *h, int n,
                int64_t pos0, float *out)
{
  QwenModel *qm = (QwenModel *) dec;
  bw_moe_decoder_gqa_forward (model, dec, &qm->gqa, state, l, h, n, pos0, out);
}

static void
qwen_free (gpointer data)
{
  QwenModel *qm = data;
  if (qm == NULL)
    return;
  bw_moe_decoder_gqa_clear (&qm->gqa);
  g_free (qm);
}

static gboolean
qwen_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = g_new0 (QwenModel, 1);

  model->family_data = qm;
  qm->cfg.router_kind = BW_ROUTER_SOFTMAX;
  qm->gqa.qk_norm = TRUE;
  if (!bw_moe_decoder_parse (model, &qm->cfg, error)
      || !bw_moe_decoder_gqa_parse (model, &qm->cfg, &qm->gqa, error))
    return FALSE;
  qm->dec.bind_attention = qwen_bind_attention;
  qm->dec.attention = qwen_attention;
  return bw_moe_decoder_load (model, &qm->dec, &qm->cfg, cancellable, error);
}

static gboolean
qwen_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = model->family_data;
  return bw_moe_decoder_forward (model, &qm->dec, state, ids, n, logits, all_logits,
                                 cancellable, error);
}

static const BwFamilyOps family_ops = {
  .load = qwen_load,
  .free = qwen_free,
  .forward = qwen_forward,
};

const BwFamily bw_qwen3_moe_family = {
  .name = "qwen3_moe",
  .display_name = "Qwen3-MoE",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .ops = &family_ops,
};
