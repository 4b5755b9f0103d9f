/* GLM-4.5's chat format, beside glm4-moe.c. */
#include "families/family-parts.h"

#include "text/chat-template.h"

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

const BwChatFormat bw_glm4_moe_chat = {
  .render = render_chat,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "</think>",
};
