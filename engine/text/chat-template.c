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

/* The prompt being rendered and, when asked for, its segments. */
typedef struct {
  GString *out;
  GArray *segments;     /* BwChatSegment, or NULL */
} Render;

static void
put (Render *r, const char *text, gboolean structure)
{
  gsize len = strlen (text);
  if (len == 0)
    return;
  if (r->segments)
    {
      BwChatSegment *last = r->segments->len
                              ? &g_array_index (r->segments, BwChatSegment, r->segments->len - 1)
                              : NULL;
      if (last && last->structure == structure && last->offset + last->len == r->out->len)
        last->len += len;
      else
        {
          BwChatSegment seg = { r->out->len, len, structure };
          g_array_append_val (r->segments, seg);
        }
    }
  g_string_append_len (r->out, text, (gssize) len);
}

/* The format's own text: its special tokens' text is read as those tokens. */
static void
structure (Render *r, const char *text)
{
  put (r, text, TRUE);
}

/* Message text: always plain text, whatever it holds. */
static void
content (Render *r, const char *text)
{
  put (r, text_of (text), FALSE);
}

/* ---- Kimi Linear ---- */

static void
render_kimi_linear (Render *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const open[] = {
    [BW_CHAT_SYSTEM] = "<|im_system|>system<|im_middle|>",
    [BW_CHAT_USER] = "<|im_user|>user<|im_middle|>",
    [BW_CHAT_ASSISTANT] = "<|im_assistant|>assistant<|im_middle|>",
  };

  for (gsize i = 0; i < n; i++)
    {
      structure (r, open[msgs[i].role]);
      content (r, msgs[i].content);
      structure (r, "<|im_end|>");
    }
  if (opts->add_generation_prompt)
    structure (r, open[BW_CHAT_ASSISTANT]);
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
k3_open (Render *r, const char *name, const char *const *attrs)
{
  g_autoptr (GString) tag = g_string_new (NULL);
  bw_chat_k3_open_tag (tag, name, attrs);
  structure (r, tag->str);
}

static void
k3_close_tag (Render *r, const char *name)
{
  g_autofree char *tag = g_strdup_printf ("<|close|>%s<|sep|>", name);
  structure (r, tag);
}

/* One whole tag around plain content. */
static void
k3_tag (Render *r, const char *name, const char *const *attrs, const char *text)
{
  k3_open (r, name, attrs);
  content (r, text);
  k3_close_tag (r, name);
}

static void
k3_message (Render *r, const char *const *attrs, const char *text)
{
  k3_tag (r, "message", attrs, text);
  structure (r, "<|end_of_msg|>");
}

static void
render_kimi_k3 (Render *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
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
      k3_message (r, attrs, preamble);
    }
  for (gsize i = 0; i < n; i++)
    {
      if (msgs[i].role != BW_CHAT_ASSISTANT)
        {
          k3_message (r, role_attrs[msgs[i].role], msgs[i].content);
          continue;
        }
      k3_open (r, "message", role_attrs[BW_CHAT_ASSISTANT]);
      if (opts->thinking)
        k3_tag (r, "think", NULL, msgs[i].reasoning);
      k3_tag (r, "response", NULL, msgs[i].content);
      k3_close_tag (r, "message");
      structure (r, "<|end_of_msg|>");
    }
  if (opts->add_generation_prompt)
    {
      k3_open (r, "message", role_attrs[BW_CHAT_ASSISTANT]);
      k3_open (r, opts->thinking ? "think" : "response", NULL);
    }
}

/* ---- GLM-5.2 ---- */

static void
render_glm (Render *r, const BwChatOptions *opts, const BwChatMessage *msgs, gsize n)
{
  static const char *const tag[] = {
    [BW_CHAT_SYSTEM] = "<|system|>",
    [BW_CHAT_USER] = "<|user|>",
    [BW_CHAT_ASSISTANT] = "<|assistant|>",
  };

  if (!opts->continuation)
    structure (r, "[gMASK]<sop>");
  for (gsize i = 0; i < n; i++)
    {
      structure (r, tag[msgs[i].role]);
      content (r, msgs[i].content);
    }
  if (opts->add_generation_prompt)
    structure (r, opts->thinking ? "<|assistant|><think>" : "<|assistant|><think></think>");
}

char *
bw_chat_render_segments (const BwChatOptions *opts, const BwChatMessage *messages, gsize n,
                         GArray *segments)
{
  Render r = { g_string_new (NULL), segments };

  for (gsize i = 0; i < n; i++)
    g_return_val_if_fail (messages[i].role <= BW_CHAT_ASSISTANT, g_string_free (r.out, TRUE));
  switch (opts->format)
    {
    case BW_CHAT_KIMI_LINEAR:
      render_kimi_linear (&r, opts, messages, n);
      break;
    case BW_CHAT_KIMI_K3:
      render_kimi_k3 (&r, opts, messages, n);
      break;
    case BW_CHAT_GLM:
      render_glm (&r, opts, messages, n);
      break;
    }
  return g_string_free (r.out, FALSE);
}

char *
bw_chat_render (const BwChatOptions *opts, const BwChatMessage *messages, gsize n)
{
  return bw_chat_render_segments (opts, messages, n, NULL);
}

gboolean
bw_chat_encode_segments (const BwTokenizer *tok, const char *text, const GArray *segments,
                         GArray *ids, GError **error)
{
  for (guint i = 0; i < segments->len; i++)
    {
      const BwChatSegment *seg = &g_array_index (segments, BwChatSegment, i);
      if (!bw_tokenizer_encode (tok, text + seg->offset, (gssize) seg->len, seg->structure, ids,
                                error))
        return FALSE;
    }
  return TRUE;
}

gboolean
bw_chat_encode (const BwChatOptions *opts, const BwChatMessage *messages, gsize n,
                const BwTokenizer *tok, GArray *ids, GError **error)
{
  g_autoptr (GArray) segments = g_array_new (FALSE, FALSE, sizeof (BwChatSegment));
  g_autofree char *text = bw_chat_render_segments (opts, messages, n, segments);
  return bw_chat_encode_segments (tok, text, segments, ids, error);
}

static gboolean
append_ids (const BwTokenizer *tok, const char *const *names, gboolean required, GArray *ids,
            GError **error)
{
  for (gsize i = 0; names[i] != NULL; i++)
    {
      gint32 id = bw_tokenizer_special_id (tok, names[i]);
      if (id < 0 && required)
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: the stop token %s is missing", bw_tokenizer_path (tok), names[i]);
          return FALSE;
        }
      if (id >= 0)
        g_array_append_val (ids, id);
    }
  return TRUE;
}

gboolean
bw_chat_stop_ids (BwChatFormat format, const BwTokenizer *tok, GArray *ids, GError **error)
{
  static const char *const kimi_linear[] = { "<|im_end|>", NULL };
  static const char *const kimi_linear_roles[] = { "<|im_user|>", "<|im_assistant|>",
                                                   "<|im_system|>", NULL };
  static const char *const kimi_k3[] = { "<|end_of_msg|>", NULL };
  static const char *const glm[] = { "<|endoftext|>", "<|user|>", "<|observation|>", NULL };
  static const char *const glm_roles[] = { "<|system|>", "<|assistant|>", NULL };
  static const char *const none[] = { NULL };
  const char *const *end = format == BW_CHAT_KIMI_LINEAR ? kimi_linear
                         : format == BW_CHAT_KIMI_K3     ? kimi_k3
                                                         : glm;
  const char *const *roles = format == BW_CHAT_KIMI_LINEAR ? kimi_linear_roles
                           : format == BW_CHAT_GLM         ? glm_roles
                                                           : none;

  return append_ids (tok, end, TRUE, ids, error) && append_ids (tok, roles, FALSE, ids, error);
}

const char *const *
bw_chat_reply_markup (BwChatFormat format)
{
  static const char *const k3[] = { "<|open|>", "<|close|>", "<|sep|>", NULL };
  static const char *const none[] = { NULL };
  return format == BW_CHAT_KIMI_K3 ? k3 : none;
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

/* Removes K3 markup tokens' text left after the split (tags of a kind replies do not use). */
static void
drop_markup (char **s)
{
  const char *const *markup = bw_chat_reply_markup (BW_CHAT_KIMI_K3);
  if (strstr (*s, "<|") == NULL)
    return;
  GString *out = g_string_new (*s);
  for (gsize i = 0; markup[i] != NULL; i++)
    for (char *at; (at = strstr (out->str, markup[i])) != NULL;)
      g_string_erase (out, at - out->str, (gssize) strlen (markup[i]));
  g_free (*s);
  *s = g_string_free (out, FALSE);
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
          drop_markup (reasoning);
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
      drop_markup (answer);
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
