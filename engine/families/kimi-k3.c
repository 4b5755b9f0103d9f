/* Kimi K3 (model_type "kimi_k3", ARCHITECTURES 3): the Kimi Linear decoder with Q-LoRA and
 * output-gated MLA, full-rank-gated bounded-decay KDA, SituAndMul, LatentMoE, and Attention
 * Residuals: each layer's input is a softmax pool over block snapshots and the running
 * partial sum, per token, rebuilt from empty on every call. */
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
kimi_k3_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  KimiK3 *k3 = g_new0 (KimiK3, 1);
  model->family_data = k3;
  if (!bw_kimi_config_parse (model, TRUE, &k3->km.cfg, error))
    return FALSE;
  const BwKimiConfig *c = &k3->km.cfg;
  if (c->attn_res_block < 1)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s/config.json: text_config.attn_res_block_size is missing", model->ckpt->dir);
      return FALSE;
    }
  if (!bw_kimi_model_bind (model, &k3->km, cancellable, error))
    return FALSE;
  gsize row = (gsize) model->opts.max_batch * c->D * sizeof (float);
  k3->max_blocks = (c->n_layers + c->attn_res_block - 1) / c->attn_res_block;
  k3->blocks = bw_model_alloc (model, k3->max_blocks * row);
  k3->pooled = bw_model_alloc (model, row);
  model->resident_bytes += (k3->max_blocks + 1) * row;
  return TRUE;
}

/* out[t] = Pool(blocks[0..nb)[t] + [ps[t]]) for every token of the call. */
static void
pool_rows (const KimiK3 *k3, int nb, const float *ps, int n, const float *norm_w,
           const float *proj_w, float *out)
{
  int D = k3->km.cfg.D;
  gsize stride = (gsize) n * D;
  const float *rows[k3->max_blocks + 1];
  for (int t = 0; t < n; t++)
    {
      for (int b = 0; b < nb; b++)
        rows[b] = k3->blocks + b * stride + (gsize) t * D;
      rows[nb] = ps + (gsize) t * D;
      bw_attn_res_pool (rows, nb + 1, D, norm_w, proj_w, k3->km.cfg.eps, out + (gsize) t * D);
    }
}

static gboolean
kimi_k3_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                 gboolean all_logits, GCancellable *cancellable, GError **error)
{
  KimiK3 *k3 = model->family_data;
  BwKimiModel *km = &k3->km;
  int D = km->cfg.D, nb = 0;
  gsize len = (gsize) n * D;
  float *ps = km->x;
  guint64 t = bw_now_ns ();

  bw_kimi_embed (km, ids, n, ps);
  for (int l = 0; l < km->cfg.n_layers; l++)
    {
      const BwKimiLayer *ly = &km->layers[l];
      gboolean boundary = l % km->cfg.attn_res_block == 0;
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      pool_rows (k3, nb, ps, n, ly->attn_res_norm, ly->attn_res_proj, k3->pooled);
      if (boundary)
        memcpy (k3->blocks + nb++ * len, ps, len * sizeof (float));
      bw_rmsnorm_rows (km->h, k3->pooled, ly->in_norm, n, D, km->cfg.eps);
      bw_model_tick (model, BW_PHASE_OTHER, &t);
      bw_kimi_attention (model, km, state, l, km->h, n, km->a);
      for (gsize i = 0; i < len; i++)
        ps[i] = boundary ? km->a[i] : ps[i] + km->a[i];
      bw_model_tick (model, BW_PHASE_ATTENTION, &t);
      pool_rows (k3, nb, ps, n, ly->mlp_res_norm, ly->mlp_res_proj, k3->pooled);
      bw_rmsnorm_rows (km->h, k3->pooled, ly->post_norm, n, D, km->cfg.eps);
      bw_model_tick (model, BW_PHASE_OTHER, &t);
      if (!bw_kimi_ffn (model, km, l, km->h, n, km->a, error))
        return FALSE;
      for (gsize i = 0; i < len; i++)
        ps[i] += km->a[i];
      t = bw_now_ns ();
    }
  pool_rows (k3, nb, ps, n, km->out_res_norm, km->out_res_proj, k3->pooled);
  bw_kimi_lm_head (model, km, k3->pooled, n, logits, all_logits);
  bw_model_tick (model, BW_PHASE_LM_HEAD, &t);
  return TRUE;
}

const BwFamilyOps bw_kimi_k3_ops = {
  .family = BW_FAMILY_KIMI_K3,
  .load = kimi_k3_load,
  .free = g_free,
  .forward = kimi_k3_forward,
};
