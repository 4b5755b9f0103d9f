/* gpt-oss-20b / 120b (model_type "gpt_oss"): GQA with q/k/v/o biases, a learned sink logit
 * per head, alternating sliding-window and full layers (layer_types), split-half YaRN RoPE
 * whose attention factor scales cos and sin; every layer MoE with a biased router whose
 * top-k logits are softmaxed, and experts fused per layer (gate_up with interleaved gate and
 * up rows, biases, clamped SwiGLU) stored as released in MXFP4 _blocks / _scales, each
 * expert one contiguous byte range that the store streams on its own. */
#include "families/family.h"
#include "families/moe-layers.h"
#include "text/chat-template.h"

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} OssModel;

static gboolean
oss_bind (BwModel *model, gpointer self, int l, GError **error)
{
  OssModel *om = self;
  return bw_gqa_layers_bind (model, &om->dec, &om->gqa, l, error);
}

static gsize
oss_scratch (gpointer self, int l, int n, int threads)
{
  OssModel *om = self;
  return bw_gqa_layers_scratch (&om->gqa, l, n);
}

static void
oss_attention (BwModel *model, gpointer self, BwState *state, int l, const float *h, int n,
               float *a)
{
  OssModel *om = self;
  bw_gqa_layers_forward (model, &om->dec, &om->gqa, state, l, h, n, a);
}

static const BwDecoderAttention oss_attention_ops = {
  .bind = oss_bind,
  .scratch_bytes = oss_scratch,
  .forward = oss_attention,
};

static void
oss_free (gpointer data)
{
  OssModel *om = data;
  if (om == NULL)
    return;
  bw_gqa_layers_clear (&om->gqa);
  g_free (om);
}

static gboolean
oss_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  OssModel *om = g_new0 (OssModel, 1);
  BwDecoderFfn *f = &om->dec.ffn;
  double limit;

  model->family_data = om;
  f->router.kind = BW_ROUTER_TOPK_SOFTMAX;
  f->router_name = "router";
  f->router_bias = "router.bias";
  f->fused_gate_up = TRUE;
  f->expert_bias = TRUE;
  om->gqa.sinks = TRUE;
  if (!bw_moe_layers_fill (model, &om->dec, error)
      || !bw_gqa_layers_parse (model, &om->dec, &om->gqa, error)
      || !bw_config_double (model, "swiglu_limit", FALSE, 7.0, &limit, error))
    return FALSE;
  f->n_shared = 0;
  f->shared_inter = 0;
  /* the reference's constant */
  f->act = (BwActivation) { .kind = BW_ACT_CLAMPED, .alpha = 1.702f, .limit = (float) limit };
  return bw_decoder_load (model, &om->dec, &oss_attention_ops, om, cancellable, error);
}

static gboolean
oss_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
             gboolean all_logits, GCancellable *cancellable, GError **error)
{
  OssModel *om = model->family_data;
  return bw_decoder_forward (model, &om->dec, &oss_attention_ops, om, state, ids, n, logits,
                             all_logits, cancellable, error);
}

static const BwFamilyOps oss_ops = {
  .load = oss_load,
  .free = oss_free,
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

static const char *const stop_tokens[] = { "<|return|>", "<|call|>", "<|end|>", NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "<|end|>",
  .answer_open = "<|start|>assistant<|channel|>final<|message|>",
};

const BwFamily bw_gpt_oss_family = {
  .name = "gpt_oss",
  .display_name = "gpt-oss",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_up_proj", NULL, "down_proj" },
  .fused_experts = TRUE,
  .keys = { "num_local_experts", "num_experts_per_tok", NULL, NULL },
  .ops = &oss_ops,
  .chat = &chat_format,
};
