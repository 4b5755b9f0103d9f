/* Binding and running the layers both Kimi families share. */
#include "families/kimi-layers.h"

#include <math.h>
#include <string.h>

#include "blocks/norm.h"
#include "blocks/scratch.h"

#define L "model.layers.%d."
#define ATT "model.layers.%d.self_attn."

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
bind_layer (BwModel *model, gpointer self, int l, GError **error)
{
  BwKimiModel *km = self;
  const BwKimiConfig *c = &km->cfg;
  BwKimiLayer *ly = &km->layers[l];

  ly->kda = c->is_kda[l];
  if (ly->kda ? !bind_kda (model, c, l, &ly->kda_w, error) : !bind_mla (model, c, l, &ly->mla, error))
    return FALSE;
  if (c->attn_res_block && !bind_attn_res (model, c, l, ly, error))
    return FALSE;
  BwLayerStateSize *sz = &model->state_sizes[l];
  sz->fixed = ly->kda ? bw_kda_state_floats (&ly->kda_w) : 0;
  sz->per_pos = ly->kda ? 0 : bw_mla_cache_floats (&ly->mla);
  return TRUE;
}

static gsize
attention_scratch (gpointer self, int l, int n, int threads)
{
  const BwKimiLayer *ly = &((BwKimiModel *) self)->layers[l];
  return ly->kda ? bw_kda_scratch_bytes (&ly->kda_w, n)
                 : bw_mla_scratch_bytes (&ly->mla, n, threads);
}

static void
attention (BwModel *model, gpointer self, BwState *state, int l, const float *h, int n,
           float *a)
{
  BwKimiModel *km = self;
  BwKimiLayer *ly = &km->layers[l];
  if (ly->kda)
    bw_kda_forward (&ly->kda_w, h, n, bw_state_fixed (state, l), a, km->dec.scratch,
                    model->pool);
  else
    bw_mla_forward (&ly->mla, h, n, state->pos, bw_state_cache (state, l),
                    bw_mla_cache_floats (&ly->mla), a, km->dec.scratch, model->pool);
}

const BwDecoderAttention bw_kimi_attention_ops = {
  .bind = bind_layer,
  .scratch_bytes = attention_scratch,
  .forward = attention,
};

static gboolean
bind_out_res (BwModel *model, BwKimiModel *km, GError **error)
{
  float *rn, *rp;
  if (!bw_model_bind_vector (model, &rn, km->cfg.D, FALSE, error,
                             "model.output_attn_res_norm.weight")
      || !bw_model_bind_vector (model, &rp, km->cfg.D, FALSE, error,
                                "model.output_attn_res_proj.weight"))
    return FALSE;
  km->out_res_norm = rn;
  km->out_res_proj = rp;
  return TRUE;
}

gboolean
bw_kimi_model_bind (BwModel *model, BwKimiModel *km, GCancellable *cancellable, GError **error)
{
  const BwKimiConfig *c = &km->cfg;
  BwDecoder *dec = &km->dec;

  *dec = (BwDecoder) {
    .hidden = c->D, .vocab = c->vocab, .n_layers = c->n_layers, .eps = c->eps,
    .is_moe = c->is_moe,
    .ffn = { .inter = c->inter, .moe_inter = c->moe_inter, .n_experts = c->E,
             .n_shared = c->n_shared, .latent = c->latent, .latent_norm = c->latent_norm,
             .router = c->router, .act = c->act, .correction_bias = TRUE,
             .mlp_prefix = "mlp.", .moe_prefix = "block_sparse_moe." },
  };
  km->layers = bw_model_alloc (model, c->n_layers * sizeof (BwKimiLayer));
  return (!c->attn_res_block || bind_out_res (model, km, error))
         && bw_decoder_load (model, dec, &bw_kimi_attention_ops, km, cancellable, error);
}
