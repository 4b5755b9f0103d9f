/* Qwen3-MoE (model_type "qwen3_moe": Qwen3-30B-A3B, 235B-A22B): GQA with per-head q/k
 * RMSNorm before split-half RoPE, softmax top-k router (norm_topk_prob), no shared expert,
 * dense layers from mlp_only_layers / decoder_sparse_step. Its ChatML format is also
 * Qwen3-Next's. */
#include <string.h>

#include "families/family.h"
#include "families/moe-layers.h"
#include "text/chat-template.h"

typedef struct {
  BwDecoder dec;
  BwGqaLayers gqa;
} QwenModel;

static gboolean
qwen_bind (BwModel *model, gpointer self, int l, GError **error)
{
  QwenModel *qm = self;
  return bw_gqa_layers_bind (model, &qm->dec, &qm->gqa, l, error);
}

static gsize
qwen_scratch (gpointer self, int l, int n, int threads)
{
  QwenModel *qm = self;
  return bw_gqa_layers_scratch (&qm->gqa, l, n);
}

static void
qwen_attention (BwModel *model, gpointer self, BwState *state, int l, const float *h, int n,
                float *a)
{
  QwenModel *qm = self;
  bw_gqa_layers_forward (model, &qm->dec, &qm->gqa, state, l, h, n, a);
}

static const BwDecoderAttention qwen_attention_ops = {
  .bind = qwen_bind,
  .scratch_bytes = qwen_scratch,
  .forward = qwen_attention,
};

static void
qwen_free (gpointer data)
{
  QwenModel *qm = data;
  if (qm == NULL)
    return;
  bw_gqa_layers_clear (&qm->gqa);
  g_free (qm);
}

static gboolean
qwen_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = g_new0 (QwenModel, 1);

  model->family_data = qm;
  qm->dec.ffn.router.kind = BW_ROUTER_SOFTMAX;
  qm->gqa.qk_norm = TRUE;
  if (!bw_moe_layers_fill (model, &qm->dec, error)
      || !bw_gqa_layers_parse (model, &qm->dec, &qm->gqa, error))
    return FALSE;
  return bw_decoder_load (model, &qm->dec, &qwen_attention_ops, qm, cancellable, error);
}

static gboolean
qwen_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
              gboolean all_logits, GCancellable *cancellable, GError **error)
{
  QwenModel *qm = model->family_data;
  return bw_decoder_forward (model, &qm->dec, &qwen_attention_ops, qm, state, ids, n, logits,
                             all_logits, cancellable, error);
}

static const BwFamilyOps qwen_ops = {
  .load = qwen_load,
  .free = qwen_free,
  .forward = qwen_forward,
};

/* ChatML: <|im_start|>role\n...<|im_end|>\n; reasoning inside <think>...</think>. As
 * Qwen3's template: an assistant turn after the last user message shows its reasoning
 * block (an empty one when it has none and ends the conversation); earlier turns drop it. */

static gssize
last_user (const BwChatMessage *msgs, gsize n)
{
  for (gsize i = n; i > 0; i--)
    if (msgs[i - 1].role == BW_CHAT_USER)
      return (gssize) i - 1;
  return (gssize) n - 1;
}

static void
render_think (BwChatRender *r, const char *reasoning, const char *content)
{
  const char *s = reasoning ? reasoning : "";
  gsize len = strlen (s);
  while (*s == '\n')
    s++, len--;
  while (len > 0 && s[len - 1] == '\n')
    len--;
  g_autofree char *inner = g_strndup (s, len);
  bw_chat_structure (r, "<think>\n");
  bw_chat_content (r, inner);
  bw_chat_structure (r, "\n</think>\n\n");
  for (content = content ? content : ""; *content == '\n'; content++)
    ;
  bw_chat_content (r, content);
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const open[] = {
    [BW_CHAT_SYSTEM] = "<|im_start|>system\n",
    [BW_CHAT_USER] = "<|im_start|>user\n",
    [BW_CHAT_ASSISTANT] = "<|im_start|>assistant\n",
  };
  gssize user = last_user (msgs, n);

  for (gsize i = 0; i < n; i++)
    {
      const BwChatMessage *m = &msgs[i];
      gboolean reasoning = m->reasoning != NULL && *m->reasoning != '\0';
      bw_chat_structure (r, open[m->role]);
      if (m->role == BW_CHAT_ASSISTANT && (gssize) i > user && (i + 1 == n || reasoning))
        render_think (r, m->reasoning, m->content);
      else
        bw_chat_content (r, m->content);
      bw_chat_structure (r, "<|im_end|>\n");
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|im_start|>assistant\n"
                                         : "<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

static void
close_turn (GString *out, const char *reply, gboolean thinking)
{
  g_string_append (out, "<|im_end|>\n");
}

static const char *const stop_tokens[] = { "<|im_end|>", "<|endoftext|>", NULL };

const BwChatFormat bw_chatml_format = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};

const BwFamily bw_qwen3_moe_family = {
  .name = "qwen3_moe",
  .display_name = "Qwen3-MoE",
  .experts_prefix = "mlp.experts.",
  .expert_names = { "gate_proj", "up_proj", "down_proj" },
  .keys = { "num_experts", "num_experts_per_tok", NULL, NULL },
  .ops = &qwen_ops,
  .chat = &bw_chatml_format,
};
