/* Constrained decoding to a JSON schema: at each step only the tokens whose bytes keep the
 * reply a prefix of `before`, then a document the schema accepts (json-matcher.h), then
 * `after` (literal texts, such as a tool call's markers; may be empty), and that leave room
 * to finish it within the tokens left, may be drawn; an end-of-turn token only once all of
 * it is complete. Special tokens count only where their text is part of before or after.
 * Testing a token copies the cursor's live state and feeds the token's bytes; tokens whose
 * first byte cannot come next are ruled out without a feed. Nothing allocates after init. */
#pragma once

#include <glib.h>

#include "run/json-matcher.h"
#include "text/tokenizer.h"

G_BEGIN_DECLS

typedef struct {
  guint before;              /* bytes of before read */
  guint after;               /* bytes of after read */
  BwJsonMatcher doc;
} BwJsonCursor;

typedef struct {
  BwJsonCursor state, probe;
  const char *before, *after;   /* borrowed, never NULL */
  guint before_len, after_len;
  const BwTokenizer *tok;
  const guint8 *hidden;      /* [vocab]: special tokens */
  const GArray *stop_ids;    /* gint32 end-of-turn ids, or NULL (ignore_eos) */
  int vocab;
  gboolean first[256];       /* bytes that may come next */
  guint now;                 /* the shortest completion before the token tested */
} BwJsonConstraint;

/* before and after may be NULL (nothing); they must outlive the constraint. */
void bw_json_constraint_init (BwJsonConstraint *c, const BwJsonSchema *schema,
                              const char *before, const char *after, const BwTokenizer *tok,
                              const guint8 *hidden, const GArray *stop_ids, int vocab);

/* May id come next, with left tokens (this one included) to finish? */
gboolean bw_json_constraint_allows (BwJsonConstraint *c, gint32 id, int left);

/* Sets every token that may not come next to -infinity; returns how many may. */
int bw_json_constraint_mask (BwJsonConstraint *c, float *logits, int left);

/* The reply goes on with id (one that was allowed). */
void bw_json_constraint_accept (BwJsonConstraint *c, gint32 id);

/* All of it was read: the reply is over. */
gboolean bw_json_constraint_closed (const BwJsonConstraint *c);

G_END_DECLS
