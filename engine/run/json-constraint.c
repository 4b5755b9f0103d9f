/* Constrained decoding to a JSON schema (see json-constraint.h). */
#include "run/json-constraint.h"

#include <math.h>
#include <string.h>

void
bw_json_constraint_init (BwJsonConstraint *c, const BwJsonSchema *schema, const char *before,
                         const char *after, const BwTokenizer *tok, const guint8 *hidden,
                         const GArray *stop_ids, int vocab)
{
  c->state.before = c->state.after = 0;
  bw_json_matcher_init (&c->state.doc, schema);
  c->before = before ? before : "";
  c->after = after ? after : "";
  c->before_len = (guint) strlen (c->before);
  c->after_len = (guint) strlen (c->after);
  c->tok = tok;
  c->hidden = hidden;
  c->stop_ids = stop_ids;
  c->vocab = vocab;
}

static void
cursor_copy (BwJsonCursor *dst, const BwJsonCursor *src)
{
  dst->before = src->before;
  dst->after = src->after;
  bw_json_matcher_copy (&dst->doc, &src->doc);
}

/* Inside the document (not in the literal text around it). */
static gboolean
in_doc (const BwJsonConstraint *c, const BwJsonCursor *k)
{
  return k->before == c->before_len && !bw_json_matcher_closed (&k->doc);
}

static gboolean
cursor_feed (const BwJsonConstraint *c, BwJsonCursor *k, const guint8 *bytes, gsize n)
{
  for (gsize i = 0; i < n; i++)
    {
      if (k->before < c->before_len)
        {
          if ((guint8) c->before[k->before++] != bytes[i])
            return FALSE;
        }
      else if (!bw_json_matcher_closed (&k->doc))
        {
          if (!bw_json_matcher_feed (&k->doc, &bytes[i], 1))
            return FALSE;
        }
      else if (k->after >= c->after_len || (guint8) c->after[k->after++] != bytes[i])
        return FALSE;
    }
  return TRUE;
}

static guint
cursor_min_close (const BwJsonConstraint *c, const BwJsonCursor *k)
{
  guint doc = bw_json_matcher_min_close (&k->doc);
  guint64 sum = (guint64) (c->before_len - k->before) + doc + (c->after_len - k->after);
  return doc == G_MAXUINT || sum >= G_MAXUINT ? G_MAXUINT : (guint) sum;
}

static gboolean
cursor_complete (const BwJsonConstraint *c, const BwJsonCursor *k)
{
  return k->before == c->before_len && k->after == c->after_len
         && bw_json_matcher_complete (&k->doc);
}

static gboolean
is_stop (const BwJsonConstraint *c, gint32 id)
{
  for (guint i = 0; c->stop_ids && i < c->stop_ids->len; i++)
    if (g_array_index (c->stop_ids, gint32, i) == id)
      return TRUE;
  return FALSE;
}

/* The token's bytes keep the reply possible, and leave room to close it: within left - 1
 * more tokens counting a byte per token (a byte-level vocabulary has every byte as a
 * token), or, where even that is too tight, by a token that is all progress along a
 * shortest completion, so the reply closes as fast as the vocabulary allows. */
static gboolean
fits (BwJsonConstraint *c, gint32 id, int left, gboolean check_first)
{
  gsize len;
  if (is_stop (c, id))
    return cursor_complete (c, &c->state);
  if (id < 0 || id >= c->vocab || (c->hidden[id] && in_doc (c, &c->state)))
    return FALSE;
  const guint8 *bytes = bw_tokenizer_token_bytes (c->tok, id, &len);
  if (bytes == NULL || len == 0 || (check_first && !c->first[bytes[0]]))
    return FALSE;
  cursor_copy (&c->probe, &c->state);
  if (!cursor_feed (c, &c->probe, bytes, len))
    return FALSE;
  guint after = cursor_min_close (c, &c->probe);
  return after <= (guint) MAX (left - 1, 0) || (guint64) after + len <= c->now;
}

gboolean
bw_json_constraint_allows (BwJsonConstraint *c, gint32 id, int left)
{
  c->now = cursor_min_close (c, &c->state);
  return fits (c, id, left, FALSE);
}

int
bw_json_constraint_mask (BwJsonConstraint *c, float *logits, int left)
{
  int allowed = 0;
  c->now = cursor_min_close (c, &c->state);
  for (int b = 0; b < 256; b++)
    {
      guint8 byte = (guint8) b;
      cursor_copy (&c->probe, &c->state);
      c->first[b] = cursor_feed (c, &c->probe, &byte, 1);
    }
  for (int id = 0; id < c->vocab; id++)
    {
      if (logits[id] == -INFINITY)
        continue;
      if (fits (c, id, left, TRUE))
        allowed++;
      else
        logits[id] = -INFINITY;
    }
  return allowed;
}

void
bw_json_constraint_accept (BwJsonConstraint *c, gint32 id)
{
  gsize len;
  const guint8 *bytes = id >= 0 && id < c->vocab ? bw_tokenizer_token_bytes (c->tok, id, &len)
                                                 : NULL;
  if (bytes && !(c->hidden[id] && in_doc (c, &c->state)))
    cursor_feed (c, &c->state, bytes, len);
}

gboolean
bw_json_constraint_closed (const BwJsonConstraint *c)
{
  return c->state.before == c->before_len && c->state.after == c->after_len
         && bw_json_matcher_closed (&c->state.doc);
}
