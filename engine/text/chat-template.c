/* Chat prompts, stop tokens and the reasoning split through a family's format (see
 * chat-template.h). */
#include "text/chat-template.h"

#include <string.h>

static const char *
text_of (const char *s)
{
  return s ? s : "";
}

char *
bw_chat_render (const BwChatOptions *opts, const BwChatMessage *messages, gsize n)
{
  GString *out = g_string_new (NULL);

  for (gsize i = 0; i < n; i++)
    g_return_val_if_fail (messages[i].role <= BW_CHAT_ASSISTANT, g_string_free (out, TRUE));
  opts->format->render (out, opts, messages, n);
  return g_string_free (out, FALSE);
}

gboolean
bw_chat_stop_ids (const BwChatFormat *format, const BwTokenizer *tok, GArray *ids,
                  GError **error)
{
  const char *const *names = format->stop_tokens;

  for (gsize i = 0; names != NULL && names[i] != NULL; i++)
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

/* The text before `tag` (all of s if absent or NULL); *rest points after the tag, or is
 * NULL. */
static char *
cut_at (const char *s, const char *tag, const char **rest)
{
  const char *at = tag ? strstr (s, tag) : NULL;

  *rest = at ? at + strlen (tag) : NULL;
  return at ? g_strndup (s, (gsize) (at - s)) : g_strdup (s);
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
      *reasoning = cut_at (generated, f->reasoning_end, &rest);
      if (rest == NULL)
        {
          *answer = g_strdup ("");
          return;
        }
    }
  else
    *reasoning = g_strdup ("");
  *answer = cut_at (skip_prefix (rest, f->answer_open), f->answer_close, &rest);
}

void
bw_chat_split_tags (const BwChatFormat *format, const char *tags[4])
{
  const char *all[] = { format->reasoning_end, format->answer_open, format->answer_close };
  int n = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (all); i++)
    if (all[i] != NULL)
      tags[n++] = all[i];
  tags[n] = NULL;
}
