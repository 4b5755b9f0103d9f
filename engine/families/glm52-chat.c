/* GLM-5.2's chat format, beside glm52.c. */
#include "families/family-parts.h"

#include "text/chat-template.h"

/* Chat format (ARCHITECTURES 4.8): role tags, reasoning inside <think>...</think>. */

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const tag[] = {
    [BW_CHAT_SYSTEM] = "<|system|>",
    [BW_CHAT_USER] = "<|user|>",
    [BW_CHAT_ASSISTANT] = "<|assistant|>",
  };

  if (!opts->continuation)
    bw_chat_structure (r, "[gMASK]<sop>");
  for (gsize i = 0; i < n; i++)
    {
      bw_chat_structure (r, tag[msgs[i].role]);
      bw_chat_content (r, msgs[i].content);
    }
  if (opts->add_generation_prompt)
    bw_chat_structure (r, opts->thinking ? "<|assistant|><think>"
                                         : "<|assistant|><think></think>");
}

static const char *const stop_tokens[] = { "<|endoftext|>", "<|user|>", "<|observation|>", NULL };
static const char *const role_tokens[] = { "<|system|>", "<|assistant|>", NULL };

/* No close_turn: the next role tag ends the turn. */
const BwChatFormat bw_glm52_chat = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .role_tokens = role_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};
