/* GLM-4.5 / 4.6 / 4.7 and Air (model_type "glm4_moe"): GQA with q/k/v biases (no o_proj
 * bias), per-head q/k RMSNorm when use_qk_norm, split-half RoPE on the first
 * head_dim * partial_rotary_factor dims, dense layers before first_k_dense_replace, then
 * DeepSeek-V3's sigmoid noaux_tc router with shared experts. */
#include "model/moe-decoder.h"

typedef struct {
  BwMoeDecoder dec;        /* first: the decoder's callbacks get this pointer */
  BwMoeDecoderConfig cfg;
  BwMoeGqa gqa;
} Glm4Model;

static gboolean
glm4_bind_attention (BwModel *model, BwMoeDecoder *dec, int l, gsize *scratch, GError **error)
{
  Glm4Model *gm = (Glm4Model *) dec;
  return bw_moe_decoder_gqa_bind (model, &gm->cfg, &gm->gqa, l, scratch, error);
}

static void
glm4_attention (BwModel *model, BwMoeDecoder *dec, BwState *state, int l, const float *h,
                int n, int64_t pos0, float *out)
{
  Glm4Model *gm = (Glm4Model *) dec;
  bw_moe_decoder_gqa_forward (model, dec, &gm->gqa, state, l, h, n, pos0, out);
}

static void
glm4_free (gpointer data)
{
  Glm4Model *gm = data;
  if (gm == NULL)
    return;
  bw_moe_decoder_gqa_clear (&gm->gqa);
  g_free (gm);
}

static gboolean
glm4_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  Glm4Model *gm = g_new0 (Glm4Model, 1);

  model->family_data = gm;
  gm->cfg.router_kind = BW_ROUTER_SIGMOID;
  gm->cfg.router_bias = "gate.e_score_correction_bias";
  gm->gqa.no_o_bias = TRUE;
  if (!bw_config_bool (model, "use_qk_norm", FALSE, &gm->gqa.qk_norm, error)
      || !bw_moe_decoder_parse (model, &gm->cfg, error)
      || !bw_moe_decoder_gqa_parse (model, &gm->cfg, &gm->gqa, error))
    return FALSE;
  gm->dec.bind_attention = glm4_bind_attention;
  gm->dec.attention = glm4_attention;
  return bw_moe_decoder_load (model, &gm->dec, &gm->cfg, cancellable, error);
}

static gboolean
glm4_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  Glm4Model *gm = model->family_data;
  return bw_moe_decoder_forward (model, &gm->dec, state, ids, n, logits, all_logits,
                                 cancellable, error);
}

static const BwFamilyOps family_ops = {
  .load = glm4_load,
  .free = glm4_free,
  .forward = glm4_forward,
};

const BwFamily bw_glm4_moe_family = {
  .name = "glm4_moe",
  .display_name = "GLM-4.5",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .ops = &family_ops,
};
