/* DeepSeek-V3 / R1 and Kimi K2 (model_type "deepseek_v3", "kimi_k2"): MLA with Q-LoRA (or a
 * direct q_proj), interleaved RoPE with YaRN on the rope slices and the mscale^2 softmax
 * factor, dense SwiGLU layers before first_k_dense_replace, then sigmoid noaux_tc MoE with
 * expert groups and shared experts. BF16, or FP8 E4M3 128x128 block-scaled as released.
 * MTP layers (index >= num_hidden_layers) are never bound. */
#include <math.h>
#include <string.h>

#include "blocks/mla.h"
#include "blocks/moe.h"
#include "blocks/norm.h"
#include "blocks/rope.h"
#include "core/json-load.h"
#include "model/moe-decoder.h"
#include "model/family-api.h"

#define BIG 1048576
#define ROPE_TABLE_MAX 8192
#define ATT "model.layers.%d.self_attn."

typedef struct {
  BwMoeDecoderConfig dec;
  int H, dn, dr, dv, R, Q;
  int max_pos;
  BwRopeConfig rope;
} DsConfig;

typedef struct {
  BwMoeDecoder dec;        /* first: the shared decoder's callbacks get this pointer */
  DsConfig cfg;
  BwMla *mla;              /* [n_layers] */
  BwRopeTable *rope;
} DsModel;

static gboolean
get_int (BwModel *model, const char *field, gboolean required, int def, int min, int *out,
         GError **error)
{
  int64_t v;
  if (!bw_config_int (model, field, required, def, min, BIG, &v, error))
    return FALSE;
  *out = (int) v;
  return TRUE;
}

static gboolean
parse_mla (BwModel *model, DsConfig *c, GError **error)
{
  int kv_heads;
  gboolean bias, interleave;
  JsonNode *q_rank = json_object_get_member (model->ckpt->text_config, "q_lora_rank");

  if (!get_int (model, "num_attention_heads", TRUE, 0, 1, &c->H, error)
      || !get_int (model, "num_key_value_heads", FALSE, c->H, 1, &kv_heads, error)
      || !get_int (model, "qk_nope_head_dim", TRUE, 0, 1, &c->dn, error)
      || !get_int (model, "qk_rope_head_dim", TRUE, 0, 2, &c->dr, error)
      || !get_int (model, "v_head_dim", TRUE, 0, 1, &c->dv, error)
      || !get_int (model, "kv_lora_rank", TRUE, 0, 1, &c->R, error)
      || (!bw_json_node_is_missing (q_rank)
          && !get_int (model, "q_lora_rank", FALSE, 0, 1, &c->Q, error))
      || !get_int (model, "max_position_embeddings", FALSE, 163840, 1, &c->max_pos, error)
      || !bw_config_bool (model, "attention_bias", FALSE, &bias, error)
      || !bw_config_bool (model, "rope_interleave", TRUE, &interleave, error))
    return FALSE;
  if (kv_heads != c->H)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                                "num_key_value_heads (%d) must equal num_attention_heads (%d) "
                                "for MLA", kv_heads, c->H);
  if (bias)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "attention_bias = true is not supported");
  if (!interleave)
    return bw_moe_decoder_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                "rope_interleave = false is not supported");
  g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
  if (!bw_rope_config_parse (model->ckpt->text_config, file, c->dr, &c->rope, error))
    return FALSE;
  c->rope.style = BW_ROPE_INTERLEAVED;
  return TRUE;
}

static gboolean
bind_mla (BwModel *model, const DsConfig *c, int l, BwMla *m, const BwRopeTable *rope,
          GError **error)
{
  int D = c->dec.D, dq = c->dn + c->dr;
  float *qn = NULL, *kvn;

  *m = (BwMla) { .n_heads = c->H, .nope = c->dn, .rope = c->dr, .v_dim = c->dv,
                 .kv_rank = c->R, .q_rank = c->Q, .latent_eps = 1e-6f,
                 .scale = (float) (pow (dq, -0.5) * c->rope.softmax_mscale2),
                 .absorb_max_tokens = 4,
                 .rope_hook = { .apply = bw_rope_hook, .ctx = rope } };
  if (c->Q > 0)
    {
      if (!bw_model_bind_matrix (model, &m->q_a, c->Q, D, error, ATT "q_a_proj.weight", l)
          || !bw_model_bind_vector (model, &qn, c->Q, FALSE, error,
                                    ATT "q_a_layernorm.weight", l)
          || !bw_model_bind_matrix (model, &m->q_b, (int64_t) c->H * dq, c->Q, error,
                                    ATT "q_b_proj.weight", l))
        return FALSE;
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
  m->q_a_norm = qn;
  m->kv_a_norm = kvn;
  return TRUE;
}

static gboolean
ds_bind_attention (BwModel *model, BwMoeDecoder *dec, int l, gsize *scratch, GError **error)
{
  DsModel *dm = (DsModel *) dec;
  BwMla *m = &dm->mla[l];
  if (!bind_mla (model, &dm->cfg, l, m, dm->rope, error))
    return FALSE;
  *scratch = bw_mla_scratch_bytes (m, model->opts.max_batch, bw_pool_size (model->pool));
  model->state_sizes[l] = (BwLayerStateSize) { .per_pos = bw_mla_cache_floats (m) };
  return TRUE;
}

static void
ds_attention (BwModel *model, BwMoeDecoder *dec, BwState *state, int l, const float *h, int n,
              int64_t pos0, float *out)
{
  DsModel *dm = (DsModel *) dec;
  const BwMla *m = &dm->mla[l];
  bw_mla_forward (m, h, n, pos0, bw_state_cache (state, l), bw_mla_cache_floats (m), out,
                  dec->scratch, model->pool);
}

static void
ds_free (gpointer data)
{
  DsModel *dm = data;
  if (dm == NULL)
    return;
  bw_rope_free (dm->rope);
  g_free (dm);
}

static gboolean
ds_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  DsModel *dm = g_new0 (DsModel, 1);
  DsConfig *c = &dm->cfg;

  model->family_data = dm;
  c->dec.router_kind = BW_ROUTER_SIGMOID;
  c->dec.router_bias = "gate.e_score_correction_bias";
  if (!bw_moe_decoder_parse (model, &c->dec, error) || !parse_mla (model, c, error))
    return FALSE;
  dm->mla = bw_model_alloc (model, c->dec.n_layers * sizeof (BwMla));
  dm->rope = bw_rope_new (&c->rope, MIN (c->max_pos, ROPE_TABLE_MAX));
  dm->dec.bind_attention = ds_bind_attention;
  dm->dec.attention = ds_attention;
  return bw_moe_decoder_load (model, &dm->dec, &c->dec, cancellable, error);
}

static gboolean
ds_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
            gboolean all_logits, GCancellable *cancellable, GError **error)
{
  DsModel *dm = model->family_data;
  return bw_moe_decoder_forward (model, &dm->dec, state, ids, n, logits, all_logits,
                                 cancellable, error);
}

static const BwFamilyOps family_ops = {
  .load = ds_load,
  .free = ds_free,
  .forward = ds_forward,
};

static const BwFamilyName aliases[] = {
  { "kimi_k2", "DeepseekV3ForCausalLM" },
  { NULL, NULL },
};

const BwFamily bw_deepseek_v3_family = {
  .name = "deepseek_v3",
  .display_name = "DeepSeek-V3",
  .aliases = aliases,
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .ops = &family_ops,
};
