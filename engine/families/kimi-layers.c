/* Binding and running the layers both Kimi families share. */
#include "families/kimi-layers.h"

#include <math.h>

#include "blocks/norm.h"
#include "blocks/scratch.h"

#define L "model.layers.%d."
#define ATT "model.layers.%d.self_attn."

static gboolean
bind_kda (BwModel *model, const BwKimiModel *km, int l, BwKda *k, GError **error)
{
  const BwKimiConfig *c = km->cfg;
  int D = km->mc->hidden_size, d = c->d, P = c->Hk * c->d;
  float *convs[3];
  const char *names[3] = { "q", "k", "v" };
  BwMatrix *projs[3] = { &k->q_proj, &k->k_proj, &k->v_proj };

  *k = (BwKda) { .n_heads = c->Hk, .head_dim = d, .conv = c->Kc, .eps = km->dec.eps,
                 .l2_eps = 1e-6f,
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
bind_mla (BwModel *model, const BwKimiModel *km, int l, BwMla *m, GError **error)
{
  const BwModelConfig *mc = km->mc;
  int D = mc->hidden_size, H = mc->n_heads, dn = mc->qk_nope_head_dim;
  int dr = mc->qk_rope_head_dim, dv = mc->v_head_dim, R = mc->kv_lora_rank;
  int Q = mc->q_lora_rank, dq = dn + dr;
  gboolean gate = km->cfg->mla_gate;
  float *kvn, *qn;
  *m = (BwMla) { .n_heads = H, .nope = dn, .rope = dr, .v_dim = dv, .kv_rank = R, .q_rank = Q,
                 .latent_eps = 1e-6f, .scale = 1.0f / sqrtf ((float) dq), .has_gate = gate };
  m->absorb_max_tokens = bw_mla_absorb_crossover (m);
  if (Q)
    {
      if (!bw_model_bind_matrix (model, &m->q_a, Q, D, error, ATT "q_a_proj.weight", l)
          || !bw_model_bind_vector (model, &qn, Q, FALSE, error, ATT "q_a_layernorm.weight", l)
          || !bw_model_bind_matrix (model, &m->q_b, (int64_t) H * dq, Q, error,
                                    ATT "q_b_proj.weight", l))
        return FALSE;
      m->q_a_norm = qn;
    }
  else if (!bw_model_bind_matrix (model, &m->q_proj, (int64_t) H * dq, D, error,
                                  ATT "q_proj.weight", l))
    return FALSE;
  if (!bw_model_bind_matrix (model, &m->kv_a, R + dr, D, error,
                             ATT "kv_a_proj_with_mqa.weight", l)
      || !bw_model_bind_vector (model, &kvn, R, FALSE, error, ATT "kv_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_b, (int64_t) H * (dn + dv), R, error,
                                ATT "kv_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->o_proj, D, (int64_t) H * dv, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  m->kv_a_norm = kvn;
  return !gate || bw_model_bind_matrix (model, &m->g_proj, (int64_t) H * dv, D,
                                               error, ATT "g_proj.weight", l);
}

static gboolean
bind_attn_res (BwModel *model, const BwModelConfig *c, int l, BwKimiLayer *ly, GError **error)
{
  float *v[4];
  const char *names[4] = { "self_attention_res_norm", "self_attention_res_proj", "mlp_res_norm",
                           "mlp_res_proj" };
  for (int i = 0; i < 4; i++)
    if (!bw_model_bind_vector (model, &v[i], c->hidden_size, FALSE, error, L "%s.weight", l,
                               names[i]))
      return FALSE;
  ly->attn_res_norm = v[0];
  ly->attn_res_proj = v[1];
  ly->mlp_res_norm = v[2];
  ly->mlp_res_proj = v[3];
  return TRUE;
}

static gboolean
bind_layer (BwModel *model, gpointer self, int l, GError **error)
{
  BwKimiModel *km = self;
  BwKimiLayer *ly = &km->layers[l];
  BwLayerStateSize size = { 0 };

  ly->kda = km->mc->layer_kind[l] == BW_KIMI_LAYER_KDA;
  if (ly->kda ? !bind_kda (model, km, l, &ly->kda_w, error)
              : !bind_mla (model, km, l, &ly->mla, error))
    return FALSE;
  if (km->cfg->attn_res_block && !bind_attn_res (model, km->mc, l, ly, error))
    return FALSE;
  if (ly->kda)
    size.fixed = bw_kda_state_floats (&ly->kda_w);
  else
    size.per_pos = bw_mla_cache_floats (&ly->mla);
  bw_model_set_layer_state (model, l, size);
  return TRUE;
}

static gsize
attention_scratch (gpointer self, int l, int n, int threads)
{
  const BwKimiLayer *ly = &((BwKimiModel *) self)->layers[l];
  return ly->kda ? bw_kda_scratch_bytes (&ly->kda_w, n)
                 : bw_mla_scratch_bytes (&ly->mla, n, threads);
}

void
bw_kimi_attention (BwModel *model, BwKimiModel *km, BwState *state, int l, const float *h,
                   int n, float *a)
{
  BwKimiLayer *ly = &km->layers[l];
  BwPool *pool = bw_model_pool (model);
  if (ly->kda)
    bw_kda_forward (&ly->kda_w, h, n, bw_state_fixed (state, l), a, km->dec.scratch, pool);
  else
    bw_mla_forward (&ly->mla, h, n, bw_state_position (state), bw_state_cache (state, l),
                    bw_mla_cache_floats (&ly->mla), a, km->dec.scratch, pool);
}

static const BwDecoderAttention kimi_attention = {
  .bind = bind_layer,
  .scratch_bytes = attention_scratch,
};

static gboolean
bind_out_res (BwModel *model, BwKimiModel *km, GError **error)
{
  float *rn, *rp;
  int D = km->mc->hidden_size;
  if (!bw_model_bind_vector (model, &rn, D, FALSE, error, "model.output_attn_res_norm.weight")
      || !bw_model_bind_vector (model, &rp, D, FALSE, error,
                                "model.output_attn_res_proj.weight"))
    return FALSE;
  km->out_res_norm = rn;
  km->out_res_proj = rp;
  return TRUE;
}

gboolean
bw_kimi_model_bind (BwModel *model, const BwModelConfig *cfg, BwKimiModel *km,
                    GCancellable *cancellable, GError **error)
{
  const BwKimiConfig *c = cfg->family_config;
  BwDecoder *dec = &km->dec;
  BwRouterConfig *r = &dec->ffn.router;

  km->mc = cfg;
  km->cfg = c;
  if (!bw_decoder_init (dec, cfg, error))
    return FALSE;
  dec->embed_exact = FALSE;
  dec->ffn.latent = c->latent;
  dec->ffn.latent_norm = c->latent_norm;
  dec->ffn.act = c->act;
  dec->ffn.correction_bias = TRUE;
  dec->ffn.moe_prefix = "block_sparse_moe.";
  dec->ffn.shared_inter = 0;
  r->kind = BW_ROUTER_SIGMOID;
  r->renormalize = cfg->norm_topk_prob && r->top_k > 1;
  /* Kimi Linear's reference adds the bias in place, so its weights carry it (ARCH 2.3). */
  r->biased_weights = !c->k3;
  r->group_mask_zero = !c->k3;
  km->layers = bw_model_alloc (model, cfg->n_layers * sizeof (BwKimiLayer));
  return (!c->attn_res_block || bind_out_res (model, km, error))
         && bw_decoder_load (model, dec, &kimi_attention, km, cancellable, error);
}
