/* A fast 64-bit checksum for session files: four multiply-rotate lanes over 8-byte words,
 * fed in pieces of any size (the same bytes in any split give the same sum). It detects
 * corruption and truncation; it is not a cryptographic hash. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint64 lane[4];
  guint8 buf[32];
  gsize n_buf;
  guint64 total;
} BwChecksum;

void bw_checksum_init (BwChecksum *sum);
void bw_checksum_update (BwChecksum *sum, const void *data, gsize len);
guint64 bw_checksum_finish (const BwChecksum *sum);
/* One call over a buffer. */
guint64 bw_checksum64 (const void *data, gsize len);

G_END_DECLS
