/* GLM-4.5 / 4.6 / 4.7 and Air (model_type "glm4_moe"): GQA with q/k/v biases (no o_proj
 * bias), per-head q/k RMSNorm when use_qk_norm, split-half RoPE on the first
 * head_dim * partial_rotary_factor dims, dense layers before first_k_dense_replace, then
 * DeepSeek-V3's sigmoid noaux_tc router with shared experts. */
#include "families/family.h"
#include "families/moe-layers.h"
#include "families/moe-synth.h"
#include "text/chat-template.h"

typedef struct {
  BwGqaConfig gqa;
  gboolean qk_norm;        /* use_qk_norm */
} Glm4Config;

static gboolean
glm4_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  Glm4Config *c = own;
  return bw_moe_config_check (f, cfg, TRUE, error) && bw_gqa_config_parse (f, cfg, &c->gqa, error)
         && bw_config_fields_bool (f, "use_qk_norm", FALSE, &c->qk_norm, error);
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} Glm4Model;

static gboolean
glm4_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  const Glm4Config *c = cfg->family_config;
  Glm4Model *gm = bw_model_alloc (model, sizeof *gm);

  bw_model_set_family_data (model, gm);
  gm->dec.ffn.router.kind = BW_ROUTER_SIGMOID;
  gm->dec.ffn.correction_bias = TRUE;
  gm->gqa.qk_norm = c->qk_norm;
  gm->gqa.no_o_bias = TRUE;
  return bw_decoder_init (&gm->dec, cfg, error)
         && bw_gqa_layers_init (model, &gm->gqa, cfg, &c->gqa, NULL, error)
         && bw_decoder_load (model, &gm->dec, &bw_gqa_attention, &gm->gqa, cancellable, error);
}

/* Pre-norm: x += GQA(norm(x)); x += MoE(norm(x)) (the dense MLP in the first layers);
 * logits. */
static gboolean
glm4_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  Glm4Model *gm = bw_model_family_data (model);
  BwDecoder *dec = &gm->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_gqa_layers_forward (model, &gm->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps glm4_ops = {
  .load = glm4_load,
  .forward = glm4_forward,
};

/* Chat format: GLM-4.6's. [gMASK]<sop>, then <|role|>\n tags with no closing tag; an
 * assistant turn carries its reasoning block (<think></think> when it has none or comes
 * before the last user message) and its stripped text; with thinking off every user message
 * ends with /nothink and the generation prompt closes an empty reasoning block. */

static gssize
last_user (const BwChatMessage *msgs, gsize n)
{
  for (gsize i = n; i > 0; i--)
    if (msgs[i - 1].role == BW_CHAT_USER)
      return (gssize) i - 1;
  return -1;
}

static void
render_assistant (BwChatRender *r, const BwChatMessage *m, gboolean latest)
{
  g_autofree char *reasoning = g_strstrip (g_strdup (m->reasoning ? m->reasoning : ""));
  g_autofree char *content = g_strstrip (g_strdup (m->content ? m->content : ""));

  if (latest && *reasoning != '\0')
    {
      bw_chat_structure (r, "\n<think>");
      bw_chat_content (r, reasoning);
      bw_chat_structure (r, "</think>");
    }
  else
    bw_chat_structure (r, "\n<think></think>");
  if (*content != '\0')
    {
      bw_chat_structure (r, "\n");
      bw_chat_content (r, content);
    }
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const tag[] = {
    [BW_CHAT_SYSTEM] = "<|system|>\n",
    [BW_CHAT_USER] = "<|user|>\n",
    [BW_CHAT_ASSISTANT] = "<|assistant|>",
  };
  gssize user = last_user (msgs, n);

  if (!opts->continuation)
    bw_chat_structure (r, "[gMASK]<sop>");
  for (gsize i = 0; i < n; i++)
    {
      const char *text = msgs[i].content ? msgs[i].content : "";
      bw_chat_structure (r, tag[msgs[i].role]);
      if (msgs[i].role == BW_CHAT_ASSISTANT)
        render_assistant (r, &msgs[i], (gssize) i > user);
      else
        bw_chat_content (r, text);
      if (msgs[i].role == BW_CHAT_USER && !opts->thinking && !g_str_has_suffix (text, "/nothink"))
        bw_chat_structure (r, "/nothink");
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|assistant|>" : "<|assistant|>\n<think></think>");
}

static const char *const stop_tokens[] = { "<|endoftext|>", "<|user|>", "<|observation|>", NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};

/* Synthetic checkpoint: GLM-4.6's widths (D 5120, 96 query / 8 KV heads of 128 with q/k/v
 * biases and q/k norms, RoPE on half of each head, 3 dense layers of 12288, 160 experts of
 * 1536, top-8, one shared expert, BF16). */

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *mlp = g_strconcat (lp, "mlp.", NULL);
  g_autofree char *sh = g_strconcat (lp, "mlp.shared_experts.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);

  bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .bias = TRUE, .qk_norm = TRUE });
  if (l < d->dense)
    {
      bw_synth_add_mlp (p, mlp, d->dtype, d->D, d->dense_inter);
      return;
    }
  bw_synth_add_router (p, mlp, d->experts, d->D, d->skew);
  bw_synth_add_mlp (p, sh, d->dtype, d->D, d->inter);
  bw_moe_synth_experts (p, ex, d, l, group);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[3] = { 151329, 151336, 151338 };

  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "Glm4MoeForCausalLM", "glm4_moe", 1e-5, "n_routed_experts", eos, 3);
  bw_synth_json_bool (b, "attention_bias", TRUE);
  bw_synth_json_bool (b, "use_qk_norm", TRUE);
  bw_synth_json_double (b, "partial_rotary_factor", 0.5);
  bw_synth_json_double (b, "rope_theta", 1000000.0);
  bw_synth_json_int (b, "max_position_embeddings", 202752);
  bw_synth_json_int (b, "first_k_dense_replace", d->dense);
  bw_synth_json_int (b, "n_shared_experts", 1);
  bw_synth_json_int (b, "n_group", 1);
  bw_synth_json_int (b, "topk_group", 1);
  bw_synth_json_bool (b, "norm_topk_prob", TRUE);
  bw_synth_json_double (b, "routed_scaling_factor", 2.5);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static gboolean
glm4_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 3, .experts = 160, .topk = 8, .vocab = 151552, .D = 5120,
    .inter = 1536, .dense_inter = 12288, .heads = 96, .kv_heads = 8, .head_dim = 128,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;

  if (!bw_moe_synth_dims (opts, &release, "GLM-4.5", 8, &d, error))
    return FALSE;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}

const BwFamily bw_glm4_moe_family = {
  .name = "glm4_moe",
  .display_name = "GLM-4.5",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "n_routed_experts", "num_experts_per_tok", "n_shared_experts", "n_group" },
  .parse_config = glm4_parse_config,
  .config_size = sizeof (Glm4Config),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &glm4_ops,
  .chat = &chat_format,
  .synth = glm4_synth,
};
