/* DeepSeek-V3 / R1 and Kimi K2 (model_type "deepseek_v3", "kimi_k2" with
 * DeepseekV3ForCausalLM): MLA with Q-LoRA (or a direct q_proj), interleaved RoPE with YaRN on
 * the rope slices and the mscale^2 softmax factor, dense SwiGLU layers before
 * first_k_dense_replace, then sigmoid noaux_tc MoE with expert groups and shared experts.
 * BF16, or FP8 E4M3 128x128 block-scaled as released. MTP layers (index >=
 * num_hidden_layers) are never bound. */
#include <math.h>

#include "blocks/mla.h"
#include "blocks/rope.h"
#include "families/family.h"
#include "families/moe-layers.h"
#include "families/moe-synth.h"
#include "text/chat-template.h"

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
      || !bw_model_bind_matrix (model, &m->kv_b, (int64_t) H * (dn + dv), R, error,
                                ATT "kv_b_proj.weight", l)
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

/* Chat format: DeepSeek-V3.1's. The system messages lead, joined by blank lines, right
 * after the BOS; each user turn is <｜User｜>text; the assistant's reply follows
 * <｜Assistant｜><think></think> and ends with <｜end▁of▁sentence｜>; a thinking turn
 * opens with <think> and its reasoning ends at </think>. */

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  gboolean first_system = TRUE, after_user = FALSE;

  if (!opts->continuation)
    bw_chat_structure (r, "<｜begin▁of▁sentence｜>");
  for (gsize i = 0; i < n; i++)
    if (msgs[i].role == BW_CHAT_SYSTEM)
      {
        if (!first_system)
          bw_chat_structure (r, "\n\n");
        bw_chat_content (r, msgs[i].content);
        first_system = FALSE;
      }
  for (gsize i = 0; i < n; i++)
    {
      if (msgs[i].role == BW_CHAT_USER)
        {
          bw_chat_structure (r, "<｜User｜>");
          bw_chat_content (r, msgs[i].content);
        }
      else if (msgs[i].role == BW_CHAT_ASSISTANT)
        {
          if (after_user)
            bw_chat_structure (r, "<｜Assistant｜><think></think>");
          bw_chat_content (r, msgs[i].content);
          bw_chat_structure (r, "<｜end▁of▁sentence｜>");
        }
      after_user = msgs[i].role == BW_CHAT_USER || (msgs[i].role == BW_CHAT_SYSTEM && after_user);
    }
  if (opts->add_generation_prompt && after_user)
    bw_chat_structure (r, opts->thinking ? "<｜Assistant｜><think>"
                                         : "<｜Assistant｜><think></think>");
}

static void
close_turn (GString *out, const char *reply, gboolean thinking)
{
  g_string_append (out, "<｜end▁of▁sentence｜>");
}

static const char *const stop_tokens[] = { "<｜end▁of▁sentence｜>", NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};

static const BwFamilyName aliases[] = {
  { "kimi_k2", "DeepseekV3ForCausalLM" },
  { NULL },
};

/* Synthetic checkpoint: DeepSeek-V3's FP8 release (D 7168, MLA with 128 heads, q / kv LoRA
 * 1536 / 512, 3 dense layers of 18432, 256 experts of 2048, top-8 in 8 groups, one shared
 * expert; 128 x 128 block scales on every projection). */

typedef struct {
  int nope, rope, v, q_lora, kv_lora, n_group, topk_group;
} DsSynth;

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  const DsSynth *s = d->family;
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *sh = g_strconcat (lp, "mlp.shared_experts.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);
  BwSynthMla mla = { d->heads, s->nope, s->rope, s->v, s->q_lora, s->kv_lora, FALSE, d->dtype };

  bw_synth_add_mla (p, at, d->D, &mla);
  if (l < d->dense)
    {
      bw_synth_add_mlp (p, mlp, d->dtype, d->D, d->dense_inter);
      return;
    }
  bw_synth_add_router (p, mlp, d->experts, d->D, d->skew);
  bw_synth_add_mlp (p, sh, d->dtype, d->D, d->inter);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static void
synth_rope (JsonBuilder *b, const char *member)
{
  json_builder_set_member_name (b, member);
  json_builder_begin_object (b);
  bw_synth_json_double (b, "beta_fast", 32.0);
  bw_synth_json_double (b, "beta_slow", 1.0);
  bw_synth_json_double (b, "factor", 40.0);
  bw_synth_json_double (b, "mscale", 1.0);
  bw_synth_json_double (b, "mscale_all_dim", 1.0);
  bw_synth_json_int (b, "original_max_position_embeddings", 4096);
  bw_synth_json_double (b, "rope_theta", 10000.0);
  bw_synth_json_string (b, "rope_type", "yarn");
  json_builder_end_object (b);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[1] = { 1 };
  static const int block[2] = { 128, 128 };
  const DsSynth *s = d->family;

  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "DeepseekV3ForCausalLM", "deepseek_v3", 1e-6, "n_routed_experts",
                       eos, 1);
  bw_synth_json_bool (b, "attention_bias", FALSE);
  bw_synth_json_int (b, "first_k_dense_replace", d->dense);
  bw_synth_json_int (b, "moe_layer_freq", 1);
  bw_synth_json_int (b, "n_shared_experts", 1);
  bw_synth_json_int (b, "n_group", s->n_group);
  bw_synth_json_int (b, "topk_group", s->topk_group);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_double (b, "routed_scaling_factor", 2.5);
  bw_synth_json_string (b, "scoring_func", "sigmoid");
  bw_synth_json_string (b, "topk_method", "noaux_tc");
  bw_synth_json_int (b, "q_lora_rank", s->q_lora);
  bw_synth_json_int (b, "kv_lora_rank", s->kv_lora);
  bw_synth_json_int (b, "qk_nope_head_dim", s->nope);
  bw_synth_json_int (b, "qk_rope_head_dim", s->rope);
  bw_synth_json_int (b, "qk_head_dim", s->nope + s->rope);
  bw_synth_json_int (b, "v_head_dim", s->v);
  bw_synth_json_bool (b, "rope_interleave", TRUE);
  bw_synth_json_int (b, "max_position_embeddings", 163840);
  bw_synth_json_double (b, "rope_theta", 10000.0);
  synth_rope (b, "rope_scaling");
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  bw_synth_json_string (b, "activation_scheme", "dynamic");
  bw_synth_json_string (b, "fmt", "e4m3");
  bw_synth_json_string (b, "quant_method", "fp8");
  bw_synth_json_ints (b, "weight_block_size", block, 2);
  json_builder_end_object (b);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static gboolean
ds_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 3, .experts = 256, .topk = 8, .vocab = 129280, .D = 7168,
    .inter = 2048, .dense_inter = 18432, .heads = 128, .kv_heads = 128, .head_dim = 128,
    .dtype = BW_DTYPE_F8_E4M3, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;
  DsSynth s;

  if (!bw_moe_synth_dims (opts, &release, "DeepSeek-V3", 8, &d, error))
    return FALSE;
  gboolean own = d.D == release.D;
  s.nope = d.head_dim;
  s.rope = d.head_dim / 2;
  s.v = d.head_dim;
  s.q_lora = own ? 1536 : MAX (16, bw_synth_round_up (d.D * 3 / 14, 8));
  s.kv_lora = own ? 512 : MAX (16, bw_synth_round_up (d.D / 14, 8));
  s.n_group = d.experts % 8 == 0 ? 8 : 1;
  s.topk_group = s.n_group == 8 ? 4 : 1;
  d.kv_heads = d.heads;
  d.family = &s;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}

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
  .chat = &chat_format,
  .synth = ds_synth,
};
