/* Binding and running the layers both Kimi families share. */
#include "families/kimi-layers.h"

#include <math.h>
#include <string.h>

#include "blocks/norm.h"
#include "blocks/scratch.h"

#define L "model.layers.%d."
#define ATT "model.layers.%d.self_attn."
#define MOE "model.layers.%d.block_sparse_moe."

static gboolean
bind_kda (BwModel *model, const BwKimiConfig *c, int l, BwKda *k, GError **error)
{
  int D = c->D, d = c->d, P = c->Hk * c->d;
  float *convs[3];
  const char *names[3] = { "q", "k", "v" };
  BwMatrix *projs[3] = { &k->q_proj, &k->k_proj, &k->v_proj };

  *k = (BwKda) { .n_heads = c->Hk, .head_dim = d, .conv = c->Kc, .eps = c->eps, .l2_eps = 1e-6f,
                 .bounded = c->bounded, .lower_bound = c->lower_bound,
                 .full_rank_gate = c->full_rank_gate };
  for (int i = 0; i < 3; i++)
    if (!bw_model_bind_matrix (model, projs[i], P, D, error, ATT "%s_proj.weight", l, names[i])
        || !bw_model_bind_vector (model, &convs[i], (int64_t) P * c->Kc, FALSE, error,
                                  ATT "%s_conv1d.weight", l, names[i]))
      return FALSE;
  k->q_conv = convs[0];
  k->k_conv = convs[1];
  k->v_conv = convs[2];
  float *dt, *alog, *onorm;
  if (!bw_model_bind_matrix (model, &k->f_a, d, D, error, ATT "f_a_proj.weight", l)
      || !bw_model_bind_matrix (model, &k->f_b, P, d, error, ATT "f_b_proj.weight", l)
      || !bw_model_bind_vector (model, &dt, P, FALSE, error, ATT "dt_bias", l)
      || !bw_model_bind_vector (model, &alog, c->Hk, TRUE, error, ATT "A_log", l)
      || !bw_model_bind_matrix (model, &k->b_proj, c->Hk, D, error, ATT "b_proj.weight", l)
      || !bw_model_bind_vector (model, &onorm, d, FALSE, error, ATT "o_norm.weight", l)
      || !bw_model_bind_matrix (model, &k->o_proj, D, P, error, ATT "o_proj.weight", l))
    return FALSE;
  k->dt_bias = dt;
  k->a_log = alog;
  k->o_norm = onorm;
  if (c->full_rank_gate)
    return bw_model_bind_matrix (model, &k->g_proj, P, D, error, ATT "g_proj.weight", l);
  return bw_model_bind_matrix (model, &k->g_a, d, D, error, ATT "g_a_proj.weight", l)
         && bw_model_bind_matrix (model, &k->g_b, P, d, error, ATT "g_b_proj.weight", l);
}

static gboolean
bind_mla (BwModel *model, const BwKimiConfig *c, int l, BwMla *m, GError **error)
{
  int D = c->D, dq = c->dn + c->dr;
  float *kvn, *qn;
  *m = (BwMla) { .n_heads = c->H, .nope = c->dn, .rope = c->dr, .v_dim = c->dv,
                 .kv_rank = c->R, .q_rank = c->Q, .latent_eps = 1e-6f,
                 .scale = 1.0f / sqrtf ((float) dq), .has_gate = c->mla_gate };
  m->absorb_max_tokens = bw_mla_absorb_crossover (m);
  if (c->Q)
    {
      if (!bw_model_bind_matrix (model, &m->q_a, c->Q, D, error, ATT "q_a_proj.weight", l)
          || !bw_model_bind_vector (model, &qn, c->Q, FALSE, error, ATT "q_a_layernorm.weight", l)
          || !bw_model_bind_matrix (model, &m->q_b, (int64_t) c->H * dq, c->Q, error,
                                    ATT "q_b_proj.weight", l))
        return FALSE;
      m->q_a_norm = qn;
    }
  else if (!bw_model_bind_matrix (model, &m->q_proj, (int64_t) c->H * dq, D, error,
                                  ATT "q_proj.weight", l))
    return FALSE;
  if (!bw_model_bind_matrix (model, &m->kv_a, c->R + c->dr, D, error,
                             ATT "kv_a_proj_with_mqa.weight", l)
      || !bw_model_bind_vector (model, &kvn, c->R, FALSE, error, ATT "kv_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_b, (int64_t) c->H * (c->dn + c->dv), c->R, error,
                                ATT "kv_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->o_proj, D, (int64_t) c->H * c->dv, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  m->kv_a_norm = kvn;
  return !c->mla_gate || bw_model_bind_matrix (model, &m->g_proj, (int64_t) c->H * c->dv, D,
                                               error, ATT "g_proj.weight", l);
}

static gboolean
bind_mlp (BwModel *model, BwMlp *mlp, int64_t width, int64_t inter, const BwActivation *act,
          const char *prefix, int l, GError **error)
{
  mlp->act = *act;
  return bw_model_bind_matrix (model, &mlp->gate, inter, width, error, "model.layers.%d.%sgate_proj.weight", l, prefix)
         && bw_model_bind_matrix (model, &mlp->up, inter, width, error, "model.layers.%d.%sup_proj.weight", l, prefix)
         && bw_model_bind_matrix (model, &mlp->down, width, inter, error, "model.layers.%d.%sdown_proj.weight", l, prefix);
}

/* One routed expert matrix: plain (.weight, F32/BF16/F16) or MXFP4 (.weight_packed +
 * .weight_scale). */
static gboolean
expert_tensor (BwModel *model, int l, int e, const char *w, int64_t rows, int64_t cols,
               BwExpertTensor *out, GError **error)
{
  const BwCheckpoint *ck = model->ckpt;
  const BwTensorInfo *t = bw_checkpoint_findf (ck, MOE "experts.%d.%s.weight", l, e, w);
  memset (out, 0, sizeof *out);
  out->rows = rows;
  out->cols = cols;
  if (t)
    {
      out->fmt = t->dtype == BW_DTYPE_F32 ? BW_FMT_F32 : t->dtype == BW_DTYPE_BF16 ? BW_FMT_BF16
                 : t->dtype == BW_DTYPE_F16 ? BW_FMT_F16 : BW_FMT_COUNT;
      if (out->fmt == BW_FMT_COUNT || t->n_elements != rows * cols)
        goto bad;
      out->data = t;
      return TRUE;
    }
  t = bw_checkpoint_findf (ck, MOE "experts.%d.%s.weight_packed", l, e, w);
  const BwTensorInfo *s = bw_checkpoint_findf (ck, MOE "experts.%d.%s.weight_scale", l, e, w);
  if (t == NULL || s == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor %s" MOE "experts.%d.%s.weight (or weight_packed + weight_scale) "
                   "is missing", ck->dir, ck->tensor_prefix, l, e, w);
      return FALSE;
    }
  if (t->dtype != BW_DTYPE_U8 || s->dtype != BW_DTYPE_U8 || cols % 32 != 0
      || t->n_elements != rows * cols / 2 || s->n_elements != rows * cols / 32)
    goto bad;
  out->fmt = BW_FMT_MXFP4;
  out->group = 32;
  out->data = t;
  out->scales = s;
  return TRUE;

bad:
  g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
               "%s: tensor %s" MOE "experts.%d.%s has an unsupported dtype or shape (expected [%"
               G_GINT64_FORMAT ", %" G_GINT64_FORMAT "])",
               ck->dir, ck->tensor_prefix, l, e, w, rows, cols);
  return FALSE;
}

static gboolean
bind_experts (BwModel *model, const BwKimiConfig *c, GError **error)
{
  int width = c->latent ? c->latent : c->D, E = c->E;
  gsize n = (gsize) c->n_layers * E;
  g_autofree BwExpertLayout *layouts = g_new0 (BwExpertLayout, n);
  for (int l = 0; l < c->n_layers; l++)
    for (int e = 0; e < E && c->is_moe[l]; e++)
      {
        BwExpertLayout *x = &layouts[(gsize) l * E + e];
        if (!expert_tensor (model, l, e, "w1", c->moe_inter, width, &x->gate, error)
            || !expert_tensor (model, l, e, "w3", c->moe_inter, width, &x->up, error)
            || !expert_tensor (model, l, e, "w2", width, c->moe_inter, &x->down, error))
          return FALSE;
      }
  return bw_model_create_store (model, E, layouts, error);
}

static gboolean
bind_moe (BwModel *model, const BwKimiConfig *c, int l, BwLatentMoe *lm, GError **error)
{
  BwMoe *m = &lm->moe;
  float *bias, *norm;
  memset (lm, 0, sizeof *lm);
  m->router = c->router;
  m->layer = l;
  m->expert_width = c->latent ? c->latent : c->D;
  m->expert_inter = c->moe_inter;
  m->act = c->act;
  m->has_shared = c->n_shared > 0;
  if (!bw_model_bind_matrix_exact (model, &m->gate, c->E, c->D, error, MOE "gate.weight", l)
      || !bw_model_bind_vector (model, &bias, c->E, FALSE, error,
                                MOE "gate.e_score_correction_bias", l))
    return FALSE;
  m->bias = bias;
  if (m->has_shared && !bind_mlp (model, &m->shared, c->D, (int64_t) c->moe_inter * c->n_shared,
                                  &c->act, "block_sparse_moe.shared_experts.", l, error))
    return FALSE;
  if (!c->latent)
    return TRUE;
  lm->eps = c->eps;
  if (!bw_model_bind_matrix (model, &lm->down, c->latent, c->D, error,
                             MOE "routed_expert_down_proj.weight", l)
      || !bw_model_bind_matrix (model, &lm->up, c->D, c->latent, error,
                                MOE "routed_expert_up_proj.weight", l))
    return FALSE;
  if (c->latent_norm)
    {
      if (!bw_model_bind_vector (model, &norm, c->latent, FALSE, error,
                                 MOE "routed_expert_norm.weight", l))
        return FALSE;
      lm->norm = norm;
    }
  return TRUE;
}

static gboolean
bind_attn_res (BwModel *model, const BwKimiConfig *c, int l, BwKimiLayer *ly, GError **error)
{
  float *v[4];
  const char *names[4] = { "self_attention_res_norm", "self_attention_res_proj", "mlp_res_norm",
                           "mlp_res_proj" };
  for (int i = 0; i < 4; i++)
    if (!bw_model_bind_vector (model, &v[i], c->D, FALSE, error, L "%s.weight", l, names[i]))
      return FALSE;
  ly->attn_res_norm = v[0];
  ly->attn_res_proj = v[1];
  ly->mlp_res_norm = v[2];
  ly->mlp_res_proj = v[3];
  return TRUE;
}

static gboolean
bind_layer (BwModel *model, BwKimiModel *km, int l, GError **error)
{
  const BwKimiConfig *c = &km->cfg;
  BwKimiLayer *ly = &km->layers[l];
  float *in, *post;
  ly->kda = c->is_kda[l];
  ly->moe = c->is_moe[l];
  if (!bw_model_bind_vector (model, &in, c->D, FALSE, error, L "input_layernorm.weight", l)
      || !bw_model_bind_vector (model, &post, c->D, FALSE, error,
                                L "post_attention_layernorm.weight", l))
    return FALSE;
  ly->in_norm = in;
  ly->post_norm = post;
  if (ly->kda ? !bind_kda (model, c, l, &ly->kda_w, error) : !bind_mla (model, c, l, &ly->mla, error))
    return FALSE;
  if (ly->moe ? !bind_moe (model, c, l, &ly->moe_w, error)
              : !bind_mlp (model, &ly->mlp, c->D, c->inter, &c->act, "mlp.", l, error))
    return FALSE;
  if (c->attn_res_block && !bind_attn_res (model, c, l, ly, error))
    return FALSE;

  BwLayerStateSize *sz = &model->state_sizes[l];
  sz->fixed = ly->kda ? bw_kda_state_floats (&ly->kda_w) : 0;
  sz->per_pos = ly->kda ? 0 : bw_mla_cache_floats (&ly->mla);
  return TRUE;
}

static gsize
layer_scratch (const BwKimiLayer *ly, int n, int threads)
{
  gsize att = ly->kda ? bw_kda_scratch_bytes (&ly->kda_w, n)
                      : bw_mla_scratch_bytes (&ly->mla, n, threads);
  gsize ffn = !ly->moe ? bw_mlp_scratch_bytes (&ly->mlp, n)
              : ly->moe_w.down.rows ? bw_latent_moe_scratch_bytes (&ly->moe_w, n)
                                    : bw_moe_scratch_bytes (&ly->moe_w.moe, n);
  return MAX (att, ffn);
}

static gboolean
bind_globals (BwModel *model, BwKimiModel *km, GError **error)
{
  const BwKimiConfig *c = &km->cfg;
  float *norm;
  if (!bw_model_bind_matrix (model, &km->embed, c->vocab, c->D, error,
                                   "model.embed_tokens.weight")
      || !bw_model_bind_vector (model, &norm, c->D, FALSE, error, "model.norm.weight")
      || !bw_model_bind_matrix (model, &km->lm_head, c->vocab, c->D, error, "lm_head.weight"))
    return FALSE;
  km->final_norm = norm;
  if (c->attn_res_block)
    {
      float *rn, *rp;
      if (!bw_model_bind_vector (model, &rn, c->D, FALSE, error,
                                 "model.output_attn_res_norm.weight")
          || !bw_model_bind_vector (model, &rp, c->D, FALSE, error,
                                    "model.output_attn_res_proj.weight"))
        return FALSE;
      km->out_res_norm = rn;
      km->out_res_proj = rp;
    }
  return TRUE;
}

gboolean
bw_kimi_model_bind (BwModel *model, BwKimiModel *km, GCancellable *cancellable, GError **error)
{
  BwKimiConfig *c = &km->cfg;
  model->vocab = c->vocab;
  model->n_layers = c->n_layers;
  model->hidden = c->D;
  model->state_sizes = bw_model_alloc (model, c->n_layers * sizeof (BwLayerStateSize));
  km->layers = bw_model_alloc (model, c->n_layers * sizeof (BwKimiLayer));

  if (!bind_globals (model, km, error))
    return FALSE;
  for (int l = 0; l < c->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_model_progress (model, 0.05 + 0.85 * l / c->n_layers, BW_PHASE_WEIGHTS);
      if (!bind_layer (model, km, l, error))
        return FALSE;
    }
  bw_model_progress (model, 0.9, BW_PHASE_EXPERT_CACHE);
  if (!bind_experts (model, c, error) || g_cancellable_set_error_if_cancelled (cancellable, error))
    return FALSE;
  /* Router lookahead: each MoE layer predicts the next one's experts during decode. */
  for (int l = 0, prev = -1; l < c->n_layers && model->opts.store.prefetch; l++)
    if (km->layers[l].moe)
      {
        if (prev >= 0)
          bw_moe_set_lookahead (&km->layers[prev].moe_w.moe, &km->layers[l].moe_w.moe,
                                model->opts.store.prefetch_top);
        prev = l;
      }

  int n = model->opts.max_batch, threads = bw_pool_size (model->pool);
  for (int l = 0; l < c->n_layers; l++)
    km->scratch_bytes = MAX (km->scratch_bytes, layer_scratch (&km->layers[l], n, threads));
  km->scratch = bw_model_alloc (model, km->scratch_bytes);
  km->x = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  km->h = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  km->a = bw_model_alloc (model, (gsize) n * c->D * sizeof (float));
  model->resident_bytes += km->scratch_bytes + 3 * (gsize) n * c->D * sizeof (float);
  return TRUE;
}

void
bw_kimi_attention (BwModel *model, BwKimiModel *km, BwState *state, int l, const float *h,
                   int n, float *a)
{
  BwKimiLayer *ly = &km->layers[l];
  if (ly->kda)
    bw_kda_forward (&ly->kda_w, h, n, bw_state_fixed (state, l), a, km->scratch, model->pool);
  else
    bw_mla_forward (&ly->mla, h, n, state->pos, bw_state_cache (state, l),
                    bw_mla_cache_floats (&ly->mla), a, km->scratch, model->pool);
}

gboolean
bw_kimi_ffn (BwModel *model, BwKimiModel *km, int l, const float *h, int n, float *a,
             GError **error)
{
  BwKimiLayer *ly = &km->layers[l];
  BwMoeTimes t = { 0 };
  gboolean ok = TRUE;
  guint64 t0 = bw_now_ns ();

  if (!ly->moe)
    bw_mlp_forward (&ly->mlp, h, n, a, FALSE, km->scratch, model->pool);
  else if (km->cfg.latent)
    ok = bw_latent_moe_forward (&ly->moe_w, model->store, h, n, a, km->scratch, model->pool, &t,
                                error);
  else
    ok = bw_moe_forward (&ly->moe_w.moe, model->store, h, n, a, km->scratch, model->pool, &t,
                         error);
  if (!ly->moe)
    model->stats.ns[BW_PHASE_EXPERT_MATMUL] += bw_now_ns () - t0;
  model->stats.ns[BW_PHASE_OTHER] += t.route_ns;
  model->stats.ns[BW_PHASE_EXPERT_WAIT] += t.wait_ns;
  model->stats.ns[BW_PHASE_EXPERT_MATMUL] += t.matmul_ns;
  return ok;
}

void
bw_kimi_embed (const BwKimiModel *km, const int32_t *ids, int n, float *x)
{
  for (int t = 0; t < n; t++)
    bw_matrix_dequant_row (&km->embed, ids[t], x + (gsize) t * km->cfg.D);
}

void
bw_kimi_lm_head (BwModel *model, BwKimiModel *km, float *x, int n, float *logits,
                 gboolean all_logits)
{
  int D = km->cfg.D;
  if (logits == NULL)
    return;
  if (!all_logits)
    {
      x += (gsize) (n - 1) * D;
      n = 1;
    }
  bw_rmsnorm_rows (x, x, km->final_norm, n, D, km->cfg.eps);
  bw_matmul (&km->lm_head, x, n, logits, model->pool);
}
