/* UTF-8 repair and streaming: ill-formed input becomes U+FFFD, one per maximal subpart
 * (Unicode 15 section 3.9, the WHATWG TextDecoder rule), so the tokenizers see exactly what
 * a JavaScript or Rust reference sees after decoding the same bytes with replacement. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Appends the repaired form of text[0..len) to out. Returns TRUE if the input was already
 * well-formed. */
gboolean bw_utf8_repair (const char *text, gsize len, GString *out);

/* Turns a stream of byte chunks (token bytes) into well-formed UTF-8, holding back an
 * incomplete trailing sequence until the next chunk completes or breaks it. */
typedef struct {
  guint8 pending[4];
  guint n_pending;
} BwUtf8Stream;

void bw_utf8_stream_init (BwUtf8Stream *stream);
void bw_utf8_stream_push (BwUtf8Stream *stream, const guint8 *bytes, gsize len, GString *out);
/* Ends the stream: a held-back incomplete sequence becomes U+FFFD. */
void bw_utf8_stream_finish (BwUtf8Stream *stream, GString *out);

G_END_DECLS
