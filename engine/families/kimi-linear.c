/* Kimi Linear 48B (model_type "kimi_linear", ARCHITECTURES 2): KDA and MLA layers with a
 * pre-norm residual stream, a dense first layer and sigmoid-routed MoE after it. */
#include "families/family-parts.h"
#include "families/kimi-layers.h"


static gboolean
kimi_linear_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable,
                  GError **error)
{
  BwKimiModel *km = bw_model_alloc (model, sizeof *km);
  bw_model_set_family_data (model, km);
  return bw_kimi_model_bind (model, cfg, km, cancellable, error);
}

/* Pre-norm: x += attention(norm(x)), KDA or MLA by layer; x += MoE(norm(x)) (the dense MLP
 * in the first layer); logits. */
static gboolean
kimi_linear_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                     gboolean all_logits, GCancellable *cancellable, GError **error)
{
  BwKimiModel *km = bw_model_family_data (model);
  BwDecoder *dec = &km->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_kimi_attention (model, km, state, l, dec->h, n, dec->a);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps kimi_linear_ops = {
  .load = kimi_linear_load,
  .forward = kimi_linear_forward,
};

const BwFamily bw_kimi_linear_family = {
  .name = "kimi_linear",
  .file_id = 1,
  .display_name = "Kimi Linear",
  .experts_prefix = "block_sparse_moe.experts.",
  .expert_names = { "w1", "w3", "w2" },
  .keys = { "num_experts", "num_experts_per_token", "num_shared_experts", "num_expert_group" },
  .parse_config = bw_kimi_linear_parse_config,
  .config_size = sizeof (BwKimiConfig),
  .ops = &kimi_linear_ops,
  .chat = &bw_kimi_linear_chat,
  .synth = bw_kimi_linear_synth,
};
