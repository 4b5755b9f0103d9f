/* Constrained decoding to a JSON schema (see json-constraint.h). */
#include "run/json-constraint.h"

#include <math.h>

void
bw_json_constraint_init (BwJsonConstraint *c, const BwJsonSchema *schema,
                         const BwTokenizer *tok, const guint8 *hidden, const GArray *stop_ids,
                         int vocab)
{
  bw_json_matcher_init (&c->state, schema);
  c->tok = tok;
  c->hidden = hidden;
  c->stop_ids = stop_ids;
  c->vocab = vocab;
}

static gboolean
is_stop (const BwJsonConstraint *c, gint32 id)
{
  for (guint i = 0; c->stop_ids && i < c->stop_ids->len; i++)
    if (g_array_index (c->stop_ids, gint32, i) == id)
      return TRUE;
  return FALSE;
}

/* The token's bytes keep the document possible, and leave room to close it: within
 * left - 1 more tokens counting a byte per token (a byte-level vocabulary has every byte
 * as a token), or, where even that is too tight, by a token that is all progress along a
 * shortest completion, so the document closes as fast as the vocabulary allows. */
static gboolean
fits (BwJsonConstraint *c, gint32 id, int left, gboolean check_first)
{
  gsize len;
  if (is_stop (c, id))
    return bw_json_matcher_complete (&c->state);
  if (id < 0 || id >= c->vocab || c->hidden[id])
    return FALSE;
  const guint8 *bytes = bw_tokenizer_token_bytes (c->tok, id, &len);
  if (bytes == NULL || len == 0 || (check_first && !c->first[bytes[0]]))
    return FALSE;
  bw_json_matcher_copy (&c->probe, &c->state);
  if (!bw_json_matcher_feed (&c->probe, bytes, len))
    return FALSE;
  guint after = bw_json_matcher_min_close (&c->probe);
  return after <= (guint) MAX (left - 1, 0)
         || (guint64) after + len <= c->now;
}

gboolean
bw_json_constraint_allows (BwJsonConstraint *c, gint32 id, int left)
{
  c->now = bw_json_matcher_min_close (&c->state);
  return fits (c, id, left, FALSE);
}

int
bw_json_constraint_mask (BwJsonConstraint *c, float *logits, int left)
{
  int allowed = 0;
  c->now = bw_json_matcher_min_close (&c->state);
  for (int b = 0; b < 256; b++)
    {
      guint8 byte = (guint8) b;
      bw_json_matcher_copy (&c->probe, &c->state);
      c->first[b] = bw_json_matcher_feed (&c->probe, &byte, 1);
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
  if (bytes && !c->hidden[id])
    bw_json_matcher_feed (&c->state, bytes, len);
}

gboolean
bw_json_constraint_closed (const BwJsonConstraint *c)
{
  return bw_json_matcher_closed (&c->state);
}
