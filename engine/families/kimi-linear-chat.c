/* Kimi Linear's chat format, beside kimi-linear.c. */
#include "families/family-parts.h"

#include "text/chat-template.h"

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

const BwChatFormat bw_kimi_linear_chat = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .role_tokens = role_tokens,
};
