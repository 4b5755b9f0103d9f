/* GLM-4.5 / 4.6 / 4.7 and Air (model_type "glm4_moe"): GQA with q/k/v biases (no o_proj
 * bias), per-head q/k RMSNorm when use_qk_norm, split-half RoPE on the first
 * head_dim * partial_rotary_factor dims, dense layers before first_k_dense_replace, then
 * DeepSeek-V3's sigmoid noaux_tc router with shared experts. */
#include "families/family-parts.h"
#include "families/moe-layers.h"

typedef struct {
  BwGqaConfig gqa;
  gboolean qk_norm;        /* use_qk_norm */
} Glm4Config;

static gboolean
glm4_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  Glm4Config *c = own;
  return bw_moe_config_check (f, cfg, TRUE, error)
         && bw_gqa_config_parse (f, cfg, &c->gqa, error)
         && bw_config_fields_bool (f, "use_qk_norm", FALSE, &c->qk_norm, error);
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} Glm4Model;

static gboolean
glm4_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  const Glm4Config *c = cfg->family_config;
  Glm4Model *gm = bw_model_alloc (model, sizeof *gm);

  bw_model_set_family_data (model, gm);
  gm->dec.ffn.router.kind = BW_ROUTER_SIGMOID;
  gm->dec.ffn.correction_bias = TRUE;
  gm->gqa.qk_norm = c->qk_norm;
  gm->gqa.no_o_bias = TRUE;
  return bw_decoder_init (&gm->dec, cfg, error)
         && bw_gqa_layers_init (model, &gm->gqa, cfg, &c->gqa, NULL, error)
         && bw_decoder_load (model, &gm->dec, &bw_gqa_attention, &gm->gqa, cancellable, error);
}

/* Pre-norm: x += GQA(norm(x)); x += MoE(norm(x)) (the dense MLP in the first layers);
 * logits. */
static gboolean
glm4_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  Glm4Model *gm = bw_model_family_data (model);
  BwDecoder *dec = &gm->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_gqa_layers_forward (model, &gm->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps glm4_ops = {
  .load = glm4_load,
  .forward = glm4_forward,
};

const BwFamily bw_glm4_moe_family = {
  .name = "glm4_moe",
  .display_name = "GLM-4.5",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group" },
  .parse_config = glm4_parse_config,
  .config_size = sizeof (Glm4Config),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &glm4_ops,
  .chat = &bw_glm4_moe_chat,
  .synth = bw_glm4_moe_synth,
};
