/* gpt-oss-20b / 120b (model_type "gpt_oss"): GQA with q/k/v/o biases, a learned sink logit
 * per head, alternating sliding-window and full layers (layer_types), split-half YaRN RoPE
 * whose attention factor scales cos and sin; every layer MoE with a biased router whose
 * top-k logits are softmaxed, and experts fused per layer (gate_up with interleaved gate and
 * up rows, biases, clamped SwiGLU) stored as released in MXFP4 _blocks / _scales, each
 * expert one contiguous byte range that the store streams on its own. */
#include "families/family.h"
#include "families/moe-layers.h"
#include "families/moe-synth.h"
#include "text/chat-template.h"

/* Layer kinds: layer_types "sliding_attention" or "full_attention". */
enum { OSS_FULL = 0, OSS_SLIDING = 1 };

typedef struct {
  BwGqaConfig gqa;
  double swiglu_limit;
} OssConfig;

static gboolean
oss_parse_config (const BwConfigFields *f, BwModelConfig *cfg, gpointer own, GError **error)
{
  OssConfig *c = own;
  gboolean listed;

  cfg->layer_kind = g_new0 (guint8, cfg->n_layers);
  return bw_moe_config_check (f, cfg, FALSE, error) && bw_gqa_config_parse (f, cfg, &c->gqa, error)
         && bw_config_fields_number (f, "swiglu_limit", 0.0, 1e6, 7.0, &c->swiglu_limit, error)
         && bw_layer_types_parse (f, cfg, "full_attention", "sliding_attention",
                                  cfg->layer_kind, &listed, error);
}

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} OssModel;

static gboolean
oss_load (BwModel *model, const BwModelConfig *cfg, GCancellable *cancellable, GError **error)
{
  const OssConfig *c = cfg->family_config;
  OssModel *om = bw_model_alloc (model, sizeof *om);
  BwDecoderFfn *f = &om->dec.ffn;

  bw_model_set_family_data (model, om);
  om->gqa.sinks = TRUE;
  if (!bw_decoder_init (&om->dec, cfg, error)
      || !bw_gqa_layers_init (model, &om->gqa, cfg, &c->gqa, cfg->layer_kind, error))
    return FALSE;
  f->router.kind = BW_ROUTER_TOPK_SOFTMAX;
  f->router_name = "router";
  f->router_bias = "router.bias";
  f->fused_gate_up = TRUE;
  f->expert_bias = TRUE;
  f->n_shared = 0;
  f->shared_inter = 0;
  /* the reference's constant */
  f->act = (BwActivation) { .kind = BW_ACT_CLAMPED, .alpha = 1.702f,
                            .limit = (float) c->swiglu_limit };
  return bw_decoder_load (model, &om->dec, &bw_gqa_attention, &om->gqa, cancellable, error);
}

/* Pre-norm: x += GQA(norm(x)) (with sinks; sliding-window on alternate layers);
 * x += MoE(norm(x)); logits. */
static gboolean
oss_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
             gboolean all_logits, GCancellable *cancellable, GError **error)
{
  OssModel *om = bw_model_family_data (model);
  BwDecoder *dec = &om->dec;

  if (!bw_decoder_begin (model, dec, ids, n, error))
    return FALSE;
  for (int l = 0; l < dec->n_layers; l++)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      bw_decoder_attn_norm (dec, l, n);
      bw_gqa_layers_forward (model, &om->gqa, state, l, dec->h, n, dec->a, dec->scratch);
      bw_decoder_residual (dec, n);
      bw_decoder_ffn_norm (model, dec, l, n);
      if (!bw_decoder_ffn (model, dec, l, dec->h, n, dec->a, error))
        return FALSE;
      bw_decoder_residual (dec, n);
    }
  bw_decoder_lm_head (model, dec, dec->x, n, logits, all_logits);
  return TRUE;
}

static const BwFamilyOps oss_ops = {
  .load = oss_load,
  .forward = oss_forward,
};

/* Harmony: <|start|>role<|message|>...<|end|>; the reply's analysis channel is the reasoning,
 * the final channel the answer. */

/* The system message of gpt-oss's template: identity, knowledge cutoff, today's date and
 * the reasoning effort (the template's default, medium, unless asked; max is high). */
static void
render_system (BwChatRender *r, const BwChatOptions *opts)
{
  const char *effort = opts->thinking_effort ? opts->thinking_effort : "medium";
  g_autofree char *today = NULL, *text = NULL;

  if (g_strcmp0 (effort, "low") != 0 && g_strcmp0 (effort, "medium") != 0)
    effort = "high";
  if (opts->date == NULL)
    {
      g_autoptr (GDateTime) now = g_date_time_new_now_local ();
      today = g_date_time_format (now, "%Y-%m-%d");
    }
  text = g_strdup_printf ("<|start|>system<|message|>You are ChatGPT, a large language model "
                          "trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: %s\n\n"
                          "Reasoning: %s\n\n# Valid channels: analysis, commentary, final. "
                          "Channel must be included for every message.<|end|>",
                          today ? today : opts->date, effort);
  bw_chat_structure (r, text);
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  if (!opts->continuation)
    render_system (r, opts);
  for (gsize i = 0; i < n; i++)
    {
      const char *text = msgs[i].content ? msgs[i].content : "";
      switch (msgs[i].role)
        {
        case BW_CHAT_SYSTEM:
          if (*text == '\0')
            break;
          bw_chat_structure (r, "<|start|>developer<|message|># Instructions\n\n");
          bw_chat_content (r, text);
          bw_chat_structure (r, "\n\n<|end|>");
          break;
        case BW_CHAT_USER:
          bw_chat_structure (r, "<|start|>user<|message|>");
          bw_chat_content (r, text);
          bw_chat_structure (r, "<|end|>");
          break;
        case BW_CHAT_ASSISTANT:
          bw_chat_structure (r, "<|start|>assistant<|channel|>final<|message|>");
          bw_chat_content (r, text);
          /* <|return|> ends the conversation's last reply, <|end|> any other message. */
          bw_chat_structure (r, i + 1 == n && !opts->add_generation_prompt ? "<|return|>"
                                                                            : "<|end|>");
          break;
        }
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|start|>assistant"
                                         : "<|start|>assistant<|channel|>final<|message|>");
}

/* As generation_config.json: <|end|> closes the analysis message, after which the model
 * goes on to the final channel, so it is not a stop. */
static const char *const stop_tokens[] = { "<|return|>", "<|call|>", NULL };
static const char *const reply_markup[] = { "<|channel|>", "<|message|>", "<|end|>",
                                            "<|start|>", NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_open = "<|channel|>analysis<|message|>",
  .reasoning_end = "<|end|>",
  .answer_open = "<|start|>assistant<|channel|>final<|message|>",
  .reply_markup = reply_markup,
};

/* Synthetic checkpoint: gpt-oss-120b as released (D 2880, 64 query / 8 KV heads of 64 with
 * biases and sinks, sliding-window layers of 128 alternating with full ones, 128 experts of
 * 2880, top-4, biased router, experts fused per layer in MXFP4 _blocks / _scales with BF16
 * biases, everything else BF16). */

static void
synth_layer (BwSynthPlan *p, const BwMoeSynthDims *d, int l, const char *lp, int *group)
{
  g_autofree char *at = g_strconcat (lp, "self_attn.", NULL);
  g_autofree char *ex = g_strconcat (lp, "mlp.experts.", NULL);
  int64_t E = d->experts;

  bw_moe_synth_gqa (p, at, d, &(BwSynthGqa) { .bias = TRUE, .o_bias = TRUE, .sinks = TRUE });
  bw_synth_add_linear (p, BW_DTYPE_BF16, 0, E, d->D, "%smlp.router.weight", lp);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.1f, 0, E, "%smlp.router.bias", lp);
  ++*group;
  bw_synth_add_mxfp4_fused (p, *group, d->experts, 2 * (int64_t) d->inter, d->D,
                            "%sgate_up_proj", ex);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.02f, 0, E * 2 * d->inter,
                       "%sgate_up_proj_bias", ex);
  bw_synth_add_mxfp4_fused (p, *group, d->experts, d->D, d->inter, "%sdown_proj", ex);
  bw_synth_add_vector (p, BW_DTYPE_BF16, BW_SYNTH_NORMAL, 0.02f, 0, E * d->D,
                       "%sdown_proj_bias", ex);
}

static JsonNode *
synth_config (const BwMoeSynthDims *d)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  static const int eos[3] = { 200002, 199999, 200012 };
  static const char *const skip[] = { "model.layers.*.self_attn", "model.layers.*.mlp.router",
                                      "model.embed_tokens", "lm_head" };
  g_autofree const char **types = g_new (const char *, d->layers);

  for (int l = 0; l < d->layers; l++)
    types[l] = l % 2 == 0 ? "sliding_attention" : "full_attention";
  json_builder_begin_object (b);
  bw_moe_synth_config (b, d, "GptOssForCausalLM", "gpt_oss", 1e-5, "num_local_experts", eos, 3);
  bw_synth_json_int (b, "experts_per_token", d->topk);
  bw_synth_json_bool (b, "attention_bias", TRUE);
  bw_synth_json_strings (b, "layer_types", types, d->layers);
  bw_synth_json_int (b, "sliding_window", 128);
  bw_synth_json_double (b, "swiglu_limit", 7.0);
  bw_synth_json_int (b, "max_position_embeddings", 131072);
  bw_synth_json_int (b, "initial_context_length", 4096);
  bw_synth_json_double (b, "rope_theta", 150000.0);
  json_builder_set_member_name (b, "rope_scaling");
  json_builder_begin_object (b);
  bw_synth_json_double (b, "beta_fast", 32.0);
  bw_synth_json_double (b, "beta_slow", 1.0);
  bw_synth_json_double (b, "factor", 32.0);
  bw_synth_json_int (b, "original_max_position_embeddings", 4096);
  bw_synth_json_string (b, "rope_type", "yarn");
  bw_synth_json_bool (b, "truncate", FALSE);
  json_builder_end_object (b);
  json_builder_set_member_name (b, "quantization_config");
  json_builder_begin_object (b);
  bw_synth_json_strings (b, "modules_to_not_convert", skip, G_N_ELEMENTS (skip));
  bw_synth_json_string (b, "quant_method", "mxfp4");
  json_builder_end_object (b);
  json_builder_end_object (b);
  return json_builder_get_root (b);
}

static gboolean
oss_synth (const BwSynthOptions *opts, BwSynthPlan *plan, GError **error)
{
  static const BwMoeSynthDims release = {
    .layers = 4, .dense = 0, .experts = 128, .topk = 4, .vocab = 201088, .D = 2880,
    .inter = 2880, .dense_inter = 2880, .heads = 64, .kv_heads = 8, .head_dim = 64,
    .dtype = BW_DTYPE_BF16, .norm_value = 1.0f,
  };
  BwMoeSynthDims d;

  if (!bw_moe_synth_dims (opts, &release, "gpt-oss", 32, &d, error))
    return FALSE;
  d.dense = 0;
  d.dense_inter = d.inter;
  bw_moe_synth_run (opts, &d, synth_layer, synth_config, plan);
  return TRUE;
}

const BwFamily bw_gpt_oss_family = {
  .name = "gpt_oss",
  .display_name = "gpt-oss",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_up_proj", NULL, "down_proj" },
  .fused_experts = TRUE,
  .keys = { "num_local_experts", "num_experts_per_tok", NULL, NULL },
  .parse_config = oss_parse_config,
  .config_size = sizeof (OssConfig),
  .quant_schemes = BW_QUANT_FP8_BLOCK | BW_QUANT_MXFP4 | BW_QUANT_CT_PACKED,
  .ops = &oss_ops,
  .chat = &chat_format,
  .synth = oss_synth,
};
