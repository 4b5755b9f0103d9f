/* Kimi Linear 48B (model_type "kimi_linear", ARCHITECTURES 2): KDA and MLA layers with a
 * pre-norm residual stream, a dense first layer and sigmoid-routed MoE after it. */
#include "families/kimi-layers.h"

#include "text/chat-template.h"

static gboolean
kimi_linear_load (BwModel *model, GCancellable *cancellable, GError **error)
{
  BwKimiModel *km = g_new0 (BwKimiModel, 1);
  model->family_data = km;
  return bw_kimi_config_parse (model, FALSE, &km->cfg, error)
         && bw_kimi_model_bind (model, km, cancellable, error);
}

static gboolean
kimi_linear_forward (BwModel *model, BwState *state, const int32_t *ids, int n, float *logits,
                     gboolean all_logits, GCancellable *cancellable, GError **error)
{
  BwKimiModel *km = model->family_data;
  return bw_decoder_forward (model, &km->dec, &bw_kimi_attention_ops, km, state, ids, n, logits,
                             all_logits, cancellable, error);
}

static const BwFamilyOps kimi_linear_ops = {
  .load = kimi_linear_load,
  .free = g_free,
  .forward = kimi_linear_forward,
};

/* Chat format (ARCHITECTURES 2.6): no thinking mode, <|im_end|> closes every turn. */

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const open[] = {
    [BW_CHAT_SYSTEM] = "<|im_system|>system<|im_middle|>",
    [BW_CHAT_USER] = "<|im_user|>user<|im_middle|>",
    [BW_CHAT_ASSISTANT] = "<|im_assistant|>assistant<|im_middle|>",
  };

  for (gsize i = 0; i < n; i++)
    {
      bw_chat_structure (r, open[msgs[i].role]);
      bw_chat_content (r, msgs[i].content);
      bw_chat_structure (r, "<|im_end|>");
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, open[BW_CHAT_ASSISTANT]);
}

static void
close_turn (GString *out, const char *reply, gboolean thinking)
{
  g_string_append (out, "<|im_end|>");
}

static const char *const stop_tokens[] = { "<|im_end|>", NULL };
static const char *const role_tokens[] = { "<|im_user|>", "<|im_assistant|>", "<|im_system|>",
                                           NULL };

static const BwChatFormat chat_format = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .role_tokens = role_tokens,
};

const BwFamily bw_kimi_linear_family = {
  .name = "kimi_linear",
  .file_id = 1,
  .display_name = "Kimi Linear",
  .experts_prefix = "block_sparse_moe.experts.",
  .expert_names = { "w1", "w3", "w2" },
  .keys = { "num_experts", "num_experts_per_token", "num_shared_experts", "num_expert_group" },
  .parse_config = bw_kimi_parse_config,
  .ops = &kimi_linear_ops,
  .chat = &chat_format,
  .synth = bw_kimi_linear_synth,
};
