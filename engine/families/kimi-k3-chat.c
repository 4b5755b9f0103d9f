/* Kimi K3's chat format, beside kimi-k3.c. */
#include "families/family-parts.h"

#include <string.h>

#include "text/chat-template.h"

/* Chat format (ARCHITECTURES 3.6): nested tags, a thinking channel before the response. */

void
bw_kimi_k3_open_tag (GString *out, const char *name, const char *const *attrs)
{
  g_string_append_printf (out, "<|open|>%s", name);
  for (gsize i = 0; attrs != NULL && attrs[i] != NULL && attrs[i + 1] != NULL; i += 2)
    {
      g_string_append_printf (out, " %s=\"", attrs[i]);
      for (const char *v = attrs[i + 1]; *v; v++)
        {
          if (*v == '&')
            g_string_append (out, "&amp;");
          else if (*v == '"')
            g_string_append (out, "&quot;");
          else
            g_string_append_c (out, *v);
        }
      g_string_append_c (out, '"');
    }
  g_string_append (out, "<|sep|>");
}

static void
open_tag (BwChatRender *r, const char *name, const char *const *attrs)
{
  g_autoptr (GString) tag = g_string_new (NULL);
  bw_kimi_k3_open_tag (tag, name, attrs);
  bw_chat_structure (r, tag->str);
}

static void
close_tag (BwChatRender *r, const char *name)
{
  g_autofree char *tag = g_strdup_printf ("<|close|>%s<|sep|>", name);
  bw_chat_structure (r, tag);
}

/* One whole tag around plain content. */
static void
whole_tag (BwChatRender *r, const char *name, const char *const *attrs, const char *content)
{
  open_tag (r, name, attrs);
  bw_chat_content (r, content);
  close_tag (r, name);
}

static void
message (BwChatRender *r, const char *const *attrs, const char *content)
{
  whole_tag (r, "message", attrs, content);
  bw_chat_structure (r, "<|end_of_msg|>");
}

static void
render_chat (BwChatRender *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const role_attrs[][3] = {
    [BW_CHAT_SYSTEM] = { "role", "system", NULL },
    [BW_CHAT_USER] = { "role", "user", NULL },
    [BW_CHAT_ASSISTANT] = { "role", "assistant", NULL },
  };

  if (opts->thinking && !opts->continuation)
    {
      static const char *const attrs[] = { "role", "system", "type", "thinking-effort", NULL };
      g_autofree char *preamble = g_strdup_printf (
        "`thinking_effort` guides on how much to think in your thinking channel (not "
        "including the response channel), supported values include `low`, `medium`, "
        "`high`, and `max`.\nNow the system is invoked with `thinking_effort=%s`.",
        opts->thinking_effort ? opts->thinking_effort : "max");
      message (r, attrs, preamble);
    }
  for (gsize i = 0; i < n; i++)
    {
      if (msgs[i].role != BW_CHAT_ASSISTANT)
        {
          message (r, role_attrs[msgs[i].role], msgs[i].content);
          continue;
        }
      open_tag (r, "message", role_attrs[BW_CHAT_ASSISTANT]);
      if (opts->thinking)
        whole_tag (r, "think", NULL, msgs[i].reasoning);
      whole_tag (r, "response", NULL, msgs[i].content);
      close_tag (r, "message");
      bw_chat_structure (r, "<|end_of_msg|>");
    }
  if (opts->add_generation_prompt)
    {
      open_tag (r, "message", role_attrs[BW_CHAT_ASSISTANT]);
      open_tag (r, opts->thinking ? "think" : "response", NULL);
    }
}

/* A reply cut short (length, Stop) lacks its closing tags; the stop token is never fed. */
static void
close_turn (GString *out, const char *reply, gboolean thinking)
{
  if (strstr (reply, "<|close|>message<|sep|>") == NULL)
    {
      if (thinking && strstr (reply, "<|close|>think<|sep|>") == NULL)
        g_string_append (out, "<|close|>think<|sep|><|open|>response<|sep|>");
      if (strstr (reply, "<|close|>response<|sep|>") == NULL)
        g_string_append (out, "<|close|>response<|sep|>");
      g_string_append (out, "<|close|>message<|sep|>");
    }
  g_string_append (out, "<|end_of_msg|>");
}

static const char *const stop_tokens[] = { "<|end_of_msg|>", NULL };
static const char *const reply_markup[] = { "<|open|>", "<|close|>", "<|sep|>", NULL };

const BwChatFormat bw_kimi_k3_chat = {
  .render = render_chat,
  .close_turn = close_turn,
  .stop_tokens = stop_tokens,
  .thinking = TRUE,
  .reasoning_end = "<|close|>think<|sep|>",
  .answer_open = "<|open|>response<|sep|>",
  .answer_close = "<|close|>response<|sep|>",
  .reply_markup = reply_markup,
};
