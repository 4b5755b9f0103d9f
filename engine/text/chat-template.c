/* Chat prompts, stop tokens and reasoning split per family (see chat-template.h). */
#include "text/chat-template.h"

#include <string.h>

gboolean
bw_chat_format_for_model_type (const char *model_type, BwChatFormat *format)
{
  if (g_strcmp0 (model_type, "kimi_linear") == 0)
    *format = BW_CHAT_KIMI_LINEAR;
  else if (g_strcmp0 (model_type, "kimi_k3") == 0)
    *format = BW_CHAT_KIMI_K3;
  else if (g_strcmp0 (model_type, "glm_moe_dsa") == 0)
    *format = BW_CHAT_GLM;
  else
    return FALSE;
  return TRUE;
}

static const char *
text_of (const char *s)
{
  return s ? s : "";
}

/* ---- Kimi Linear ---- */

static void
render_kimi_linear (GString *out, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const open[] = {
    [BW_CHAT_SYSTEM] = "<|im_system|>system<|im_middle|>",
    [BW_CHAT_USER] = "<|im_user|>user<|im_middle|>",
    [BW_CHAT_ASSISTANT] = "<|im_assistant|>assistant<|im_middle|>",
  };

  for (gsize i = 0; i < n; i++)
    g_string_append_printf (out, "%s%s<|im_end|>", open[msgs[i].role], text_of (msgs[i].content));
  if (opts->add_generation_prompt)
    g_string_append (out, open[BW_CHAT_ASSISTANT]);
}

/* ---- Kimi K3: nested tags ---- */

void
bw_chat_k3_open_tag (GString *out, const char *name, const char *const *attrs)
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
k3_close_tag (GString *out, const char *name)
{
  g_string_append_printf (out, "<|close|>%s<|sep|>", name);
}

/* One whole tag around plain content. */
static void
k3_tag (GString *out, const char *name, const char *const *attrs, const char *content)
{
  bw_chat_k3_open_tag (out, name, attrs);
  g_string_append (out, text_of (content));
  k3_close_tag (out, name);
}

static void
k3_message (GString *out, const char *const *attrs, const char *content)
{
  k3_tag (out, "message", attrs, content);
  g_string_append (out, "<|end_of_msg|>");
}

static void
render_kimi_k3 (GString *out, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
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
      k3_message (out, attrs, preamble);
    }
  for (gsize i = 0; i < n; i++)
    {
      if (msgs[i].role != BW_CHAT_ASSISTANT)
        {
          k3_message (out, role_attrs[msgs[i].role], msgs[i].content);
          continue;
        }
      bw_chat_k3_open_tag (out, "message", role_attrs[BW_CHAT_ASSISTANT]);
      if (opts->thinking)
        k3_tag (out, "think", NULL, msgs[i].reasoning);
      k3_tag (out, "response", NULL, msgs[i].content);
      k3_close_tag (out, "message");
      g_string_append (out, "<|end_of_msg|>");
    }
  if (opts->add_generation_prompt)
    {
      bw_chat_k3_open_tag (out, "message", role_attrs[BW_CHAT_ASSISTANT]);
      bw_chat_k3_open_tag (out, opts->thinking ? "think" : "response", NULL);
    }
}

/* ---- GLM-5.2 ---- */

static void
render_glm (GString *out, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const tag[] = {
    [BW_CHAT_SYSTEM] = "<|system|>",
    [BW_CHAT_USER] = "<|user|>",
    [BW_CHAT_ASSISTANT] = "<|assistant|>",
  };

  if (!opts->continuation)
    g_string_append (out, "[gMASK]<sop>");
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (out, "%s%s", tag[msgs[i].role], text_of (msgs[i].content));
  if (opts->add_generation_prompt)
    g_string_append (out, opts->thinking ? "<|assistant|><think>" : "<|assistant|><think></think>");
}

char *
bw_chat_render (const BwChatOptions *opts, const BwChatMessage *messages, gsize n)
{
  GString *out = g_string_new (NULL);

  for (gsize i = 0; i < n; i++)
    g_return_val_if_fail (messages[i].role <= BW_CHAT_ASSISTANT, g_string_free (out, TRUE));
  switch (opts->format)
    {
    case BW_CHAT_KIMI_LINEAR:
      render_kimi_linear (out, opts, messages, n);
      break;
    case BW_CHAT_KIMI_K3:
      render_kimi_k3 (out, opts, messages, n);
      break;
    case BW_CHAT_GLM:
      render_glm (out, opts, messages, n);
      break;
    }
  return g_string_free (out, FALSE);
}

gboolean
bw_chat_stop_ids (BwChatFormat format, const BwTokenizer *tok, GArray *ids, GError **error)
{
  static const char *const kimi_linear[] = { "<|im_end|>", NULL };
  static const char *const kimi_k3[] = { "<|end_of_msg|>", NULL };
  static const char *const glm[] = { "<|endoftext|>", "<|user|>", "<|observation|>", NULL };
  const char *const *names = format == BW_CHAT_KIMI_LINEAR ? kimi_linear
                           : format == BW_CHAT_KIMI_K3     ? kimi_k3
                                                           : glm;

  for (gsize i = 0; names[i] != NULL; i++)
    {
      gint32 id = bw_tokenizer_special_id (tok, names[i]);
      if (id < 0)
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: the stop token %s is missing", bw_tokenizer_path (tok), names[i]);
          return FALSE;
        }
      g_array_append_val (ids, id);
    }
  return TRUE;
}

/* ---- Reasoning and answer ---- */

/* The text before `tag` (all of s if absent); *rest points after the tag, or is NULL. */
static char *
cut_at (const char *s, const char *tag, const char **rest)
{
  const char *at = strstr (s, tag);

  *rest = at ? at + strlen (tag) : NULL;
  return at ? g_strndup (s, (gsize) (at - s)) : g_strdup (s);
}

static const char *
skip_prefix (const char *s, const char *prefix)
{
  return g_str_has_prefix (s, prefix) ? s + strlen (prefix) : s;
}

void
bw_chat_split_reasoning (const BwChatOptions *opts, const char *generated, char **reasoning,
                         char **answer)
{
  const char *rest = generated;

  generated = text_of (generated);
  switch (opts->format)
    {
    case BW_CHAT_KIMI_LINEAR:
      *reasoning = g_strdup ("");
      *answer = g_strdup (generated);
      return;
    case BW_CHAT_KIMI_K3:
      if (opts->thinking)
        {
          *reasoning = cut_at (generated, "<|close|>think<|sep|>", &rest);
          if (rest == NULL)
            {
              *answer = g_strdup ("");
              return;
            }
        }
      else
        {
          *reasoning = g_strdup ("");
          rest = generated;
        }
      *answer = cut_at (skip_prefix (rest, "<|open|>response<|sep|>"), "<|close|>response<|sep|>",
                        &rest);
      return;
    case BW_CHAT_GLM:
      if (!opts->thinking)
        {
          *reasoning = g_strdup ("");
          *answer = g_strdup (generated);
          return;
        }
      *reasoning = cut_at (generated, "</think>", &rest);
      *answer = g_strdup (rest ? rest : "");
      return;
    }
  *reasoning = g_strdup ("");
  *answer = g_strdup (generated);
}
