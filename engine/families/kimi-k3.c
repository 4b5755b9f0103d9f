/* Kimi K3 (model_type "kimi_k3", ARCHITECTURES 3): the Kimi Linear decoder with Q-LoRA and
 * output-gated MLA, full-rank-gated bounded-decay KDA, SituAndMul, LatentMoE, and Attention
 * Residuals: each layer's input is a softmax pool over block snapshots and the running
 * partial sum, per token, rebuilt from empty on every call. */
#include "families/family-parts.h"
#include "families/kimi-layers.h"

#include <string.h>

#include "blocks/attn-res.h"
#include "blocks/norm.h"

typedef struct {
  BwKimiModel km;
  int max_blocks;
  float *blocks;          /* [max_blocks][max_batch][D] snapshots of this call */
  float *pooled;          /* [max_batch][D] */
} KimiK3;

static gboolean
kimi_k3_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable,
              GError **error)
{
  const BwKimiConfig *c = cfg->family_config;
  KimiK3 *k3 = bw_model_alloc (model, sizeof *k3);
  gsize row = (gsize) bw_model_options (model)->max_batch * cfg->hidden_size * sizeof (float);

  bw_model_set_family_data (model, k3);
  if (!bw_kimi_model_bind (model, cfg, &k3->km, cancellable, error))
    return FALSE;
  k3->max_blocks = (cfg->n_layers + c->attn_res_block - 1) / c->attn_res_block;
  k3->blocks = bw_model_alloc (model, k3->max_blocks * row);
  k3->pooled = bw_model_alloc (model, row);
  bw_model_add_resident (model, (k3->max_blocks + 1) * row);
  return TRUE;
}

/* out[t] = Pool(blocks[0..nb)[t] + [ps[t]]) for every token of the call. */
static void
pool_rows (const KimiK3 *k3, int nb, const float *ps, int n, const float *norm_w,
           const float *proj_w, float *out)
{
  int D = k3->km.dec.hidden;
  gsize stride = (gsize) n * D;
  const float *rows[k3->max_blocks + 1];
  for (int t = 0; t < n; t++)
    {
      for (int b = 0; b < nb; b++)
        rows[b] = k3->blocks + b * stride + (gsize) t * D;
      rows[nb] = ps + (gsize) t * D;
      bw_attn_res_pool (rows, nb + 1, D, norm_w, proj_w, k3->km.dec.eps, out + (gsize) t * D);
    }
}

/* Attention Residuals: the residual stream ps is a running partial sum that restarts at
 * every block boundary (a snapshot of it kept first); each norm reads a softmax pool of the
 * snapshots and ps instead of ps alone. Per layer: x' = pool; ps (+)= attention(norm(x'));
 * x' = pool; ps += FFN(norm(x')); logits from the final pool. */
static gboolean
kimi_k3_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                 gboolean all_logits, GCancellable *cancellable, GError **error)
{
  KimiK3 *k3 = bw_model_family_data (model);
  BwKimiModel *km = &k3->km;
  BwDecoder *dec = &km->dec;
  int D = dec->hidden, nb = 0;
  gsize len = (gsize) n * D;
  float *ps = dec->x;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      const BwKimiLayer *ly = &km->layers[l];
      const BwDecoderLayer *dl = &dec->layers[l];
      gboolean boundary = l % km->cfg->attn_res_block == 0;
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      pool_rows (k3, nb, ps, n, ly->attn_res_norm, ly->attn_res_proj, k3->pooled);
      if (boundary)
        memcpy (k3->blocks + nb++ * len, ps, len * sizeof (float));
      bw_rmsnorm_rows (dec->h, k3->pooled, dl->in_norm, n, D, dec->eps);
      bw_model_tick (model, BW_PHASE_OTHER, &dec->t);
      bw_kimi_attention (model, km, state, l, dec->h, n, dec->a);
      for (gsize i = 0; i < len; i++)
        ps[i] = boundary ? dec->a[i] : ps[i] + dec->a[i];
      bw_model_tick (model, BW_PHASE_ATTENTION, &dec->t);
      pool_rows (k3, nb, ps, n, ly->mlp_res_norm, ly->mlp_res_proj, k3->pooled);
      bw_rmsnorm_rows (dec->h, k3->pooled, dl->post_norm, n, D, dec->eps);
      bw_model_tick (model, BW_PHASE_OTHER, &dec->t);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  pool_rows (k3, nb, ps, n, km->out_res_norm, km->out_res_proj, k3->pooled);
  bw_decoder_lm_head (model, dec, k3->pooled, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps kimi_k3_ops = {
  .load = kimi_k3_load,
  .forward = kimi_k3_forward,
};

const BwFamily bw_kimi_k3_family = {
  .name = "kimi_k3",
  .file_id = 2,
  .display_name = "Kimi K3",
  .text_config = "text_config",
  .tensor_prefix = "language_model.",
  .experts_prefix = "block_sparse_moe.experts.",
  .expert_names = { "w1", "w3", "w2" },
  .keys = { "num_experts", "num_experts_per_token", "num_shared_experts", "num_expert_group" },
  .parse_config = bw_kimi_k3_parse_config,
  .config_size = sizeof (BwKimiConfig),
  .ops = &kimi_k3_ops,
  .chat = &bw_kimi_k3_chat,
  .synth = bw_kimi_k3_synth,
};
