/* DeepSeek-V3 / R1 and Kimi K2 (model_type "deepseek_v3", "kimi_k2" with
 * DeepseekV3ForCausalLM): MLA with Q-LoRA (or a direct q_proj), interleaved RoPE with YaRN on
 * the rope slices and the mscale^2 softmax factor, dense SwiGLU layers before
 * first_k_dense_replace, then sigmoid noaux_tc MoE with expert groups and shared experts.
 * BF16, or FP8 E4M3 128x128 block-scaled as released. MTP layers (index >=
 * num_hidden_layers) are never bound. */
#include <math.h>

#include "blocks/mla.h"
#include "blocks/rope.h"
#include "core/json-load.h"
#include "families/family.h"
#include "families/moe-layers.h"
#include "text/chat-template.h"

#define BIG 1048576
#define ROPE_TABLE_MAX 8192
#define ATT "model.layers.%d.self_attn."

typedef struct {
  BwDecoder dec;
  int H, dn, dr, dv, R, Q;
  BwRopeConfig rope;
  BwRopeTable *rope_table;
  BwMla *mla;              /* [n_layers] */
} DsModel;

static gboolean
parse_mla (BwModel *model, DsModel *dm, GError **error)
{
  int kv_heads, max_pos;
  gboolean bias, interleave;
  JsonNode *q_rank = json_object_get_member (model->ckpt->text_config, "q_lora_rank");

  if (!bw_config_get_int (model, "num_attention_heads", TRUE, 0, 1, &dm->H, error)
      || !bw_config_get_int (model, "num_key_value_heads", FALSE, dm->H, 1, &kv_heads, error)
      || !bw_config_get_int (model, "qk_nope_head_dim", TRUE, 0, 1, &dm->dn, error)
      || !bw_config_get_int (model, "qk_rope_head_dim", TRUE, 0, 2, &dm->dr, error)
      || !bw_config_get_int (model, "v_head_dim", TRUE, 0, 1, &dm->dv, error)
      || !bw_config_get_int (model, "kv_lora_rank", TRUE, 0, 1, &dm->R, error)
      || (!bw_json_node_is_missing (q_rank)
          && !bw_config_get_int (model, "q_lora_rank", FALSE, 0, 1, &dm->Q, error))
      || !bw_config_get_int (model, "max_position_embeddings", FALSE, 163840, 1, &max_pos, error)
      || !bw_config_bool (model, "attention_bias", FALSE, &bias, error)
      || !bw_config_bool (model, "rope_interleave", TRUE, &interleave, error))
    return FALSE;
  if (kv_heads != dm->H)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_CONFIG,
                               "num_key_value_heads (%d) must equal num_attention_heads (%d) "
                               "for MLA", kv_heads, dm->H);
  if (bias || !interleave)
    return bw_config_fail (model, error, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                               "attention_bias = true and rope_interleave = false are not "
                               "supported");
  g_autofree char *file = g_build_filename (model->ckpt->dir, "config.json", NULL);
  if (!bw_rope_config_parse (model->ckpt->text_config, file, dm->dr, &dm->rope, error))
    return FALSE;
  dm->rope.style = BW_ROPE_INTERLEAVED;
  dm->rope_table = bw_rope_new (&dm->rope, MIN (max_pos, ROPE_TABLE_MAX));
  return TRUE;
}

static gboolean
ds_bind (BwModel *model, gpointer self, int l, GError **error)
{
  DsModel *dm = self;
  BwMla *m = &dm->mla[l];
  int D = dm->dec.hidden, dq = dm->dn + dm->dr;
  float *qn = NULL, *kvn;

  *m = (BwMla) { .n_heads = dm->H, .nope = dm->dn, .rope = dm->dr, .v_dim = dm->dv,
                 .kv_rank = dm->R, .q_rank = dm->Q, .latent_eps = 1e-6f,
                 .scale = (float) (pow (dq, -0.5) * dm->rope.softmax_mscale2),
                 .absorb_max_tokens = 4,
                 .rope_hook = { .apply = bw_rope_hook, .ctx = dm->rope_table } };
  if (dm->Q > 0)
    {
      if (!bw_model_bind_matrix (model, &m->q_a, dm->Q, D, error, ATT "q_a_proj.weight", l)
          || !bw_model_bind_vector (model, &qn, dm->Q, FALSE, error,
                                    ATT "q_a_layernorm.weight", l)
          || !bw_model_bind_matrix (model, &m->q_b, (int64_t) dm->H * dq, dm->Q, error,
                                    ATT "q_b_proj.weight", l))
        return FALSE;
    }
  else if (!bw_model_bind_matrix (model, &m->q_proj, (int64_t) dm->H * dq, D, error,
                                  ATT "q_proj.weight", l))
    return FALSE;
  if (!bw_model_bind_matrix (model, &m->kv_a, dm->R + dm->dr, D, error,
                             ATT "kv_a_proj_with_mqa.weight", l)
      || !bw_model_bind_vector (model, &kvn, dm->R, FALSE, error, ATT "kv_a_layernorm.weight", l)
      || !bw_model_bind_matrix (model, &m->kv_b, (int64_t) dm->H * (dm->dn + dm->dv), dm->R,
                                error, ATT "kv_b_proj.weight", l)
      || !bw_model_bind_matrix (model, &m->o_proj, D, (int64_t) dm->H * dm->dv, error,
                                ATT "o_proj.weight", l))
    return FALSE;
  m->q_a_norm = qn;
  m->kv_a_norm = kvn;
  model->state_sizes[l] = (BwLayerStateSize) { .per_pos = bw_mla_cache_floats (m) };
  return TRUE;
}

static gsize
ds_scratch (gpointer self, int l, int n, int threads)
{
  DsModel *dm = self;
  return bw_mla_scratch_bytes (&dm->mla[l], n, threads);
}

static void
ds_attention (BwModel *model, gpointer self, BwState *state, int l, const float *h, int n,
              float *a)
{
  DsModel *dm = self;
  const BwMla *m = &dm->mla[l];
  bw_mla_forward (m, h, n, bw_state_position (state), bw_state_cache (state, l),
                  bw_mla_cache_floats (m), a, dm->dec.scratch, model->pool);
}

static const BwDecoderAttention ds_attention_ops = {
  .bind = ds_bind,
  .scratch_bytes = ds_scratch,
  .forward = ds_attention,
};

static void
ds_free (gpointer data)
{
  DsModel *dm = data;
  if (dm == NULL)
    return;
  bw_rope_free (dm->rope_table);
  g_free (dm);
}

static gboolean
ds_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  DsModel *dm = g_new0 (DsModel, 1);

  model->family_data = dm;
  dm->dec.ffn.router.kind = BW_ROUTER_SIGMOID;
  dm->dec.ffn.correction_bias = TRUE;
  if (!bw_moe_layers_fill (model, &dm->dec, error) || !parse_mla (model, dm, error))
    return FALSE;
  dm->mla = bw_model_alloc (model, dm->dec.n_layers * sizeof (BwMla));
  return bw_decoder_load (model, &dm->dec, &ds_attention_ops, dm, cancellable, error);
}

static gboolean
ds_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
            gboolean all_logits, GCancellable *cancellable, GError **error)
{
  DsModel *dm = model->family_data;
  return bw_decoder_forward (model, &dm->dec, &ds_attention_ops, dm, state, ids, n, logits,
                             all_logits, cancellable, error);
}

static const BwFamilyOps ds_ops = {
  .load = ds_load,
  .free = ds_free,
  .forward = ds_forward,
};

/* Chat format: DeepSeek-V3's full-width-bar role tags; R1-style reasoning ends at </think>. */

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  if (!opts->continuation)
    bw_chat_structure (r, "<｜begin▁of▁sentence｜>");
  for (gsize i = 0; i < n; i++)
    {
      if (msgs[i].role == BW_CHAT_USER)
        bw_chat_structure (r, "<｜User｜>");
      else if (msgs[i].role == BW_CHAT_ASSISTANT)
        bw_chat_structure (r, "<｜Assistant｜>");
      bw_chat_content (r, msgs[i].content);
      if (msgs[i].role == BW_CHAT_ASSISTANT)
        bw_chat_structure (r, "<｜end▁of▁sentence｜>");
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<｜Assistant｜><think>\n" : "<｜Assistant｜>");
}

static const char *const stop_tokens[] = { "<｜end▁of▁sentence｜>", NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
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
  .ops = &ds_ops,
  .chat = &chat_format,
};
