/* An incremental matcher for JSON text against a compiled schema (json-schema.h): fed byte
 * by byte, it says whether the text so far is a prefix of a document the schema accepts,
 * whether the document is complete, and how many bytes at least would complete it. Its
 * state is a small fixed-size struct (a stack of frames, one per open value), so testing a
 * token is a copy of the live frames and a feed; nothing allocates.
 *
 * Whitespace may surround values, keys, colons and commas, up to 12 bytes in a row; none
 * may follow the closed document (decoding stops there). */
#pragma once

#include <glib.h>

#include "run/json-schema.h"

G_BEGIN_DECLS

#define BW_JSON_MAX_DEPTH 32     /* open values (objects, arrays, strings, ...) */

typedef struct {
  guint8 kind;       /* what the frame matches (json-matcher.c) */
  guint8 phase;
  guint8 esc;        /* strings and keys: 1 after '\', 2-5 inside \uXXXX */
  guint8 utf8;       /* strings and keys: continuation bytes still due */
  guint8 neg;        /* numbers: after '-' */
  int node;          /* the schema node */
  int pending;       /* objects: the node of the value after the key */
  guint count;       /* strings: characters; arrays: items; keys, literals: bytes */
  guint64 seen;      /* objects: properties given */
  guint64 cand;      /* keys, literals: properties or values still matching */
  double mag;        /* numbers: the magnitude so far */
  double scale;      /* numbers: the worth of the next fraction digit */
} BwJsonFrame;

typedef struct {
  const BwJsonSchema *schema;
  guint depth;       /* frames in use */
  gboolean done;     /* the document is closed */
  guint ws;          /* whitespace bytes in a row */
  BwJsonFrame frames[BW_JSON_MAX_DEPTH];
} BwJsonMatcher;

void bw_json_matcher_init (BwJsonMatcher *m, const BwJsonSchema *schema);
/* Copies the state (the live frames only). */
void bw_json_matcher_copy (BwJsonMatcher *dst, const BwJsonMatcher *src);
/* FALSE when the bytes make the text no prefix of an accepted document; the state is then
 * unusable (feed a copy to test). */
gboolean bw_json_matcher_feed (BwJsonMatcher *m, const guint8 *bytes, gsize n);
/* The text is an accepted document (it may still go on, as a number can). */
gboolean bw_json_matcher_complete (const BwJsonMatcher *m);
/* The document is closed: nothing may follow. */
gboolean bw_json_matcher_closed (const BwJsonMatcher *m);
/* The fewest bytes that complete the document (0 when complete); G_MAXUINT: none. */
guint bw_json_matcher_min_close (const BwJsonMatcher *m);

/* The shortest text of a number node (its range and integer flag); G_MAXUINT when none
 * fits. */
guint bw_json_number_min_bytes (const BwJsonNode *node);

G_END_DECLS
