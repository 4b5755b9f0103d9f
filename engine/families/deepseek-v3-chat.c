/* DeepSeek-V3's chat format, beside deepseek-v3.c. */
#include "families/family-parts.h"

#include "text/chat-template.h"

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

const BwChatFormat bw_deepseek_v3_chat = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};
