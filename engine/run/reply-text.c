/* Streaming reply text: stop strings, held-back tags and the reasoning split (see
 * reply-text.h). The split is recomputed over the final prefix whenever it grows; both of
 * its parts only ever grow, so what was handed out stays valid. */
#include "run/reply-text.h"

#include <string.h>

void
bw_reply_text_init (BwReplyText *reply, const BwChatOptions *chat, const char *const *stops)
{
  memset (reply, 0, sizeof *reply);
  reply->text = g_string_new (NULL);
  reply->stops = g_ptr_array_new_with_free_func (g_free);
  for (gsize i = 0; stops != NULL && stops[i] != NULL; i++)
    if (stops[i][0] != '\0')
      g_ptr_array_add (reply->stops, g_strdup (stops[i]));
  reply->tags[0] = NULL;
  if (chat != NULL)
    {
      reply->chat = *chat;
      reply->split = TRUE;
      bw_chat_split_tags (chat->format, reply->tags);
    }
  reply->reasoning = g_strdup ("");
  reply->answer = g_strdup ("");
}

void
bw_reply_text_clear (BwReplyText *reply)
{
  if (reply->text)
    g_string_free (reply->text, TRUE);
  if (reply->stops)
    g_ptr_array_unref (reply->stops);
  g_free (reply->reasoning);
  g_free (reply->answer);
  memset (reply, 0, sizeof *reply);
}

/* Length of the longest suffix of s[0..len) that is a proper prefix of m. */
static gsize
partial_suffix (const char *s, gsize len, const char *m)
{
  gsize mlen = strlen (m);
  for (gsize k = MIN (mlen - 1, len); k > 0; k--)
    if (memcmp (s + len - k, m, k) == 0)
      return k;
  return 0;
}

static gsize
held_back (const BwReplyText *reply)
{
  const char *s = reply->text->str;
  gsize len = reply->text->len, hold = 0;
  for (guint i = 0; i < reply->stops->len; i++)
    hold = MAX (hold, partial_suffix (s, len, g_ptr_array_index (reply->stops, i)));
  for (gsize i = 0; reply->tags[i] != NULL; i++)
    hold = MAX (hold, partial_suffix (s, len, reply->tags[i]));
  return hold;
}

/* Earliest complete stop string at or after `from`; -1 if none. */
static gssize
find_stop (const BwReplyText *reply, gsize from)
{
  gssize best = -1;
  for (guint i = 0; i < reply->stops->len; i++)
    {
      const char *at = strstr (reply->text->str + from, g_ptr_array_index (reply->stops, i));
      if (at != NULL && (best < 0 || at - reply->text->str < best))
        best = at - reply->text->str;
    }
  return best;
}

static void
append_new (GString *delta, const char *part, gsize *sent)
{
  gsize len = strlen (part);
  if (len > *sent)
    {
      if (delta)
        g_string_append_len (delta, part + *sent, (gssize) (len - *sent));
      *sent = len;
    }
}

/* Moves the final prefix to new_safe and hands out what the split gained. */
static void
advance (BwReplyText *reply, gsize new_safe, GString *reasoning_delta, GString *answer_delta)
{
  if (new_safe <= reply->safe)
    return;
  reply->safe = new_safe;
  g_free (reply->reasoning);
  g_free (reply->answer);
  if (reply->split)
    {
      g_autofree char *prefix = g_strndup (reply->text->str, new_safe);
      bw_chat_split_reasoning (&reply->chat, prefix, &reply->reasoning, &reply->answer);
    }
  else
    {
      reply->reasoning = g_strdup ("");
      reply->answer = g_strndup (reply->text->str, new_safe);
    }
  append_new (reasoning_delta, reply->reasoning, &reply->reasoning_sent);
  append_new (answer_delta, reply->answer, &reply->answer_sent);
}

gboolean
bw_reply_text_push (BwReplyText *reply, const char *piece, gsize len, GString *reasoning_delta,
                    GString *answer_delta)
{
  if (reply->stopped)
    return TRUE;
  gsize old = reply->text->len, longest = 0;
  for (guint i = 0; i < reply->stops->len; i++)
    longest = MAX (longest, strlen (g_ptr_array_index (reply->stops, i)));
  g_string_append_len (reply->text, piece, (gssize) len);
  gssize stop = find_stop (reply, old > longest ? old - longest : 0);
  if (stop >= 0)
    {
      g_string_truncate (reply->text, (gsize) stop);
      reply->stopped = TRUE;
      advance (reply, (gsize) stop, reasoning_delta, answer_delta);
      return TRUE;
    }
  advance (reply, reply->text->len - held_back (reply), reasoning_delta, answer_delta);
  return FALSE;
}

void
bw_reply_text_finish (BwReplyText *reply, GString *reasoning_delta, GString *answer_delta)
{
  advance (reply, reply->text->len, reasoning_delta, answer_delta);
}
