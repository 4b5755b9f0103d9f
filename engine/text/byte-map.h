/* A hash map from byte strings to non-negative 32-bit values: tiktoken ranks, HF vocab
 * entries and HF merge pairs (two ids packed as 8 bytes). Open addressing; keys are copied
 * into one arena, so lookups touch no per-entry allocation. */
#pragma once

#include <glib.h>
#include <string.h>

G_BEGIN_DECLS

typedef struct _BwByteMap BwByteMap;

BwByteMap *bw_byte_map_new (gsize expected);
void bw_byte_map_free (BwByteMap *map);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwByteMap, bw_byte_map_free)

/* Inserts key -> value (value >= 0). Returns FALSE, leaving the map unchanged, if the key
 * is already present. */
gboolean bw_byte_map_insert (BwByteMap *map, const void *key, gsize len, gint32 value);
/* The value stored for key, or -1. */
gint32 bw_byte_map_lookup (const BwByteMap *map, const void *key, gsize len);
gsize bw_byte_map_size (const BwByteMap *map);

/* Packs two ids into the 8-byte key used for merge pairs. */
static inline void
bw_byte_map_pair_key (guint8 key[8], gint32 a, gint32 b)
{
  memcpy (key, &a, 4);
  memcpy (key + 4, &b, 4);
}

G_END_DECLS
