/* Chat prompts, stop tokens and the reasoning split through a family's format (see
 * chat-template.h). */
#include "text/chat-template.h"

#include <string.h>

static const char *
text_of (const char *s)
{
  return s ? s : "";
}

/* The prompt being rendered and, when asked for, its segments. */
struct BwChatRender {
  GString *out;
  GArray *segments;     /* BwChatSegment, or NULL */
};

static void
put (BwChatRender *r, const char *text, gboolean structure)
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

void
bw_chat_structure (BwChatRender *r, const char *text)
{
  put (r, text, TRUE);
}

void
bw_chat_content (BwChatRender *r, const char *text)
{
  put (r, text_of (text), FALSE);
}

char *
bw_chat_render_segments (const BwChatOptions *opts, const BwChatMessage *messages, gsize n,
                         GArray *segments)
{
  BwChatRender r = { g_string_new (NULL), segments };

  for (gsize i = 0; i < n; i++)
    g_return_val_if_fail (messages[i].role <= BW_CHAT_ASSISTANT, g_string_free (r.out, TRUE));
  opts->format->render (&r, opts, messages, n);
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
  for (gsize i = 0; names != NULL && names[i] != NULL; i++)
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
bw_chat_stop_ids (const BwChatFormat *format, const BwTokenizer *tok, GArray *ids,
                  GError **error)
{
  return append_ids (tok, format->stop_tokens, TRUE, ids, error)
         && append_ids (tok, format->role_tokens, FALSE, ids, error);
}

const char *const *
bw_chat_reply_markup (const BwChatFormat *format)
{
  static const char *const none[] = { NULL };
  return format->reply_markup ? format->reply_markup : none;
}

/* ---- Reasoning and answer ---- */

/* The text before `tag` (all of s if absent or NULL); *rest points after the tag, or is
 * NULL. */
static char *
cut_at (const char *s, const char *tag, const char **rest)
{
  const char *at = tag ? strstr (s, tag) : NULL;

  *rest = at ? at + strlen (tag) : NULL;
  return at ? g_strndup (s, (gsize) (at - s)) : g_strdup (s);
}

/* Removes the text of markup tokens left after the split (tags of a kind replies do not
 * use). */
static void
drop_markup (const BwChatFormat *format, char **s)
{
  const char *const *markup = bw_chat_reply_markup (format);
  if (markup[0] == NULL || strstr (*s, "<|") == NULL)
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
  return prefix && g_str_has_prefix (s, prefix) ? s + strlen (prefix) : s;
}

void
bw_chat_split_reasoning (const BwChatOptions *opts, const char *generated, char **reasoning,
                         char **answer)
{
  const BwChatFormat *f = opts->format;
  const char *rest = generated = text_of (generated);

  if (opts->thinking && f->thinking && f->reasoning_end != NULL)
    {
      *reasoning = cut_at (skip_prefix (generated, f->reasoning_open), f->reasoning_end, &rest);
      drop_markup (f, reasoning);
      if (rest == NULL)
        {
          *answer = g_strdup ("");
          return;
        }
    }
  else
    *reasoning = g_strdup ("");
  *answer = cut_at (skip_prefix (rest, f->answer_open), f->answer_close, &rest);
  drop_markup (f, answer);
}

void
bw_chat_split_tags (const BwChatFormat *format, const char *tags[5])
{
  const char *all[] = { format->reasoning_open, format->reasoning_end, format->answer_open,
                        format->answer_close };
  int n = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    if (all[i] != NULL)
      tags[n++] = all[i];
  tags[n] = NULL;
}
