/* DeepSeek-V3 / R1 and Kimi K2 (model_type "deepseek_v3", "kimi_k2" with
 * DeepseekV3ForCausalLM): MLA with Q-LoRA (or a direct q_proj), interleaved RoPE with YaRN on
 * the rope slices and the mscale^2 softmax factor, dense SwiGLU layers before
 * first_k_dense_replace, then sigmoid noaux_tc MoE with expert groups and shared experts.
 * BF16, or FP8 E4M3 128x128 block-scaled as released. MTP layers (index >=
 * num_hidden_layers) are never bound. */
#include <math.h>

#include "blocks/mla.h"
#include "blocks/rope.h"
#include "families/family-parts.h"
#include "families/moe-layers.h"

#define ROPE_TABLE_MAX 8192
#define ATT "model.layers.%d.self_attn."

/* MLA needs its widths; RoPE is interleaved, with YaRN and its softmax factor. */
static gboolean
ds_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  BwRopeConfig *rope = own;
  gboolean interleave;
  static const char *const widths[] = { "qk_nope_head_dim", "v_head_dim", "kv_lora_rank" };
  const int values[] = { cfg->qk_nope_head_dim, cfg->v_head_dim, cfg->kv_lora_rank };

  if (!bw_moe_config_check (f, cfg, TRUE, error)
      || !bw_config_fields_bool (f, "rope_interleave", TRUE, &interleave, error))
    return FALSE;
  for (gsize i = 0; i < G_N_ELEMENTS (widths); i++)
    if (values[i] < 1)
      return bw_config_fields_fail (f, widths[i], "is missing", error);
  if (cfg->qk_rope_head_dim < 2)
    return bw_config_fields_fail (f, "qk_rope_head_dim", "is missing or below 2", error);
  if (cfg->n_kv_heads != cfg->n_heads)
    return bw_config_fields_fail (f, "num_key_value_heads", "must equal num_attention_heads "
                                  "for MLA", error);
  if (cfg->attention_bias || !interleave)
    return bw_model_config_fail (cfg, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                                 "attention_bias = true and rope_interleave = false are not "
                                 "supported");
  if (!bw_rope_config_parse (f->obj, f->file, cfg->qk_rope_head_dim, rope, error))
    return FALSE;
  rope->style = BW_ROPE_INTERLEAVED;
  return TRUE;
}

typedef struct {
  BwDecoder dec;
  BwRopeTable *rope;
  BwMla *mla;              /* [n_layers] */
} DsModel;

/* kv_b_proj, or its two halves as a GGUF file stores them (families/gguf-checkpoint.c):
 * k_b_proj [H kv_rank, nope] (each head's keys transposed) and v_b_proj [H v, kv_rank],
 * held as stored (requantising would only lose), their products with f32 activations
 * (act_bits 32): llama.cpp rounds the query and the merged state to its int8 blocks
 * here, but the rest of its attention also rounds (an f16 cache), and the int8 blocks
 * alone moved the fixtures' logprobs further from its own than f32 does. */
static gboolean
bind_kv_b (BwModel *model, BwMla *m, int l, GError **error)
{
  int64_t H = m->n_heads, R = m->kv_rank;
  if (bw_checkpoint_findf (bw_model_checkpoint (model), ATT "k_b_proj.weight", l) == NULL)
    return bw_model_bind_matrix (model, &m->kv_b, H * (m->nope + m->v_dim), R, error,
                                 ATT "kv_b_proj.weight", l);
  if (!bw_model_bind_matrix_exact (model, &m->k_b, H * R, m->nope, error,
                                   ATT "k_b_proj.weight", l)
      || !bw_model_bind_matrix_exact (model, &m->v_b, H * m->v_dim, R, error,
                                      ATT "v_b_proj.weight", l))
    return FALSE;
  m->k_b.act_bits = 32;
  m->v_b.act_bits = 32;
  return TRUE;
}

static gboolean
ds_bind (BwModel *model, gpointer self, int l, GError **error)
{
  DsModel *dm = self;
  const BwModelConfig *c = bw_model_config (model);
  const BwRopeConfig *rope = c->family_config;
  BwMla *m = &dm->mla[l];
  int D = dm->dec.hidden, H = c->n_heads, dn = c->qk_nope_head_dim, dr = c->qk_rope_head_dim;
  int dv = c->v_head_dim, R = c->kv_lora_rank, Q = c->q_lora_rank, dq = dn + dr;
  float *qn = NULL, *kvn;

  *m = (BwMla) { .n_heads = H, .nope = dn, .rope = dr, .v_dim = dv, .kv_rank = R, .q_rank = Q,
                 .latent_eps = 1e-6f, .scale = (float) (pow (dq, -0.5) * rope->softmax_mscale2),
                 .absorb_max_tokens = 4,
                 .rope_hook = { .apply = bw_rope_hook, .ctx = dm->rope } };
  if (Q > 0)
    {
      if (!bw_model_bind_matrix (model, &m->q_a, Q, D, error, ATT "q_a_proj.weight", l)
          || !bw_model_bind_vector (model, &qn, Q, FALSE, error, ATT "q_a_layernorm.weight", l)
          || !bw_model_bind_matrix (model, &m->q_b, (int64_t) H * dq, Q, error,
                                    ATT "q_b_proj.weight", l))
        return FALSE;
    }
  else if (!bw_model_bind_matrix (model, &m->q_proj, (int64_t) H * dq, D, error,
                                  ATT "q_proj.weight", l))
    return FALSE;
  if (!bw_model_bind_matrix (model, &m->kv_a, R + dr, D, error,
                             ATT "kv_a_proj_with_mqa.weight", l)
      || !bw_model_bind_vector (model, &kvn, R, FALSE, error, ATT "kv_a_layernorm.weight", l)
      || !bind_kv_b (model, m, l, error)
      || !bw_model_bind_matrix (model, &m->o_proj, D, (int64_t) H * dv, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  m->q_a_norm = qn;
  m->kv_a_norm = kvn;
  bw_model_set_layer_state (model, l, (BwLayerStateSize) { .per_pos = bw_mla_cache_floats (m) });
  return TRUE;
}

static gsize
ds_scratch (gpointer self, int l, int n, int threads)
{
  DsModel *dm = self;
  return bw_mla_scratch_bytes (&dm->mla[l], n, threads);
}

static const BwDecoderAttention ds_attention = {
  .bind = ds_bind,
  .scratch_bytes = ds_scratch,
};

static gboolean
ds_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  DsModel *dm = bw_model_alloc (model, sizeof *dm);
  int max_pos = cfg->max_position_embeddings ? cfg->max_position_embeddings : 163840;

  bw_model_set_family_data (model, dm);
  dm->dec.ffn.router.kind = BW_ROUTER_SIGMOID;
  dm->dec.ffn.correction_bias = TRUE;
  dm->rope = bw_model_own (model, bw_rope_new (cfg->family_config, MIN (max_pos, ROPE_TABLE_MAX)),
                           (GDestroyNotify) bw_rope_free);
  dm->mla = bw_model_alloc (model, cfg->n_layers * sizeof (BwMla));
  return bw_decoder_init (&dm->dec, cfg, error)
         && bw_decoder_load (model, &dm->dec, &ds_attention, dm, cancellable, error);
}

/* Pre-norm: x += MLA(norm(x)); x += MoE(norm(x)) (the dense MLP in the first layers);
 * logits. */
static gboolean
ds_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
            gboolean all_logits, GCancellable *cancellable, GError **error)
{
  DsModel *dm = bw_model_family_data (model);
  BwDecoder *dec = &dm->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      const BwMla *m = &dm->mla[l];
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_mla_forward (m, dec->h, n, bw_state_position (state), bw_state_cache (state, l),
                      bw_mla_cache_floats (m), dec->a, dec->scratch, bw_model_pool (model));
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps ds_ops = {
  .load = ds_load,
  .forward = ds_forward,
};

static const BwFamilyName aliases[] = {
  { "kimi_k2", "DeepseekV3ForCausalLM" },
  { NULL },
};

const BwFamily bw_deepseek_v3_family = {
  .name = "deepseek_v3",
  .display_name = "DeepSeek-V3",
  .aliases = aliases,
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group" },
  .parse_config = ds_parse_config,
  .config_size = sizeof (BwRopeConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &ds_ops,
  .chat = &bw_deepseek_v3_chat,
  .synth = bw_deepseek_v3_synth,
  .synth_gguf = bw_deepseek_v3_synth_gguf,
};
