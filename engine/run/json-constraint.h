/* Constrained decoding to a JSON schema: at each step only the tokens whose bytes keep the
 * reply a prefix of a document the schema accepts (json-matcher.h), and that leave room to
 * finish it within the tokens left, may be drawn; an end-of-turn token only once the
 * document is complete. Testing a token copies the matcher's live state and feeds the
 * token's bytes; tokens whose first byte cannot come next are ruled out without a feed.
 * Nothing allocates after init. */
#pragma once

#include <glib.h>

#include "run/json-matcher.h"
#include "text/tokenizer.h"

G_BEGIN_DECLS

typedef struct {
  BwJsonMatcher state, probe;
  const BwTokenizer *tok;
  const guint8 *hidden;      /* [vocab]: special tokens, never allowed but as a stop */
  const GArray *stop_ids;    /* gint32 end-of-turn ids, or NULL (ignore_eos) */
  int vocab;
  gboolean first[256];       /* bytes that may come next */
  guint now;                 /* the shortest completion before the token tested */
} BwJsonConstraint;

void bw_json_constraint_init (BwJsonConstraint *c, const BwJsonSchema *schema,
                              const BwTokenizer *tok, const guint8 *hidden,
                              const GArray *stop_ids, int vocab);

/* May id come next, with left tokens (this one included) to finish the document? */
gboolean bw_json_constraint_allows (BwJsonConstraint *c, gint32 id, int left);

/* Sets every token that may not come next to -infinity; returns how many may. */
int bw_json_constraint_mask (BwJsonConstraint *c, float *logits, int left);

/* The reply goes on with id (one that was allowed). */
void bw_json_constraint_accept (BwJsonConstraint *c, gint32 id);

/* The document is closed: the reply is over. */
gboolean bw_json_constraint_closed (const BwJsonConstraint *c);

G_END_DECLS
