/* Qwen3's chat format (ChatML, reasoning in <think>), used by qwen3-moe.c and qwen3-next.c. */
#include "families/family-parts.h"

#include <string.h>

#include "text/chat-template.h"

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
