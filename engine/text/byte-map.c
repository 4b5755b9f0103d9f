/* Open-addressing hash map from byte strings to values (see byte-map.h). */
#include <string.h>

#include "text/byte-map.h"

typedef struct {
  gsize key_offset;
  guint32 key_len;
  guint32 hash;
  gint32 value;
} Entry;

struct _BwByteMap {
  GByteArray *keys;     /* arena of all keys, back to back */
  GArray *entries;      /* Entry, in insertion order */
  guint32 *slots;       /* 0 = empty, else entry index + 1 */
  gsize n_slots;        /* power of two, at least twice the number of entries */
};

static guint32
hash_bytes (const guint8 *p, gsize len)
{
  guint64 h = 0x9e3779b97f4a7c15ull ^ len;

  while (len >= 8)
    {
      guint64 k;
      memcpy (&k, p, 8);
      h = (h ^ k) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
      p += 8;
      len -= 8;
    }
  if (len > 0)
    {
      guint64 k = 0;
      memcpy (&k, p, len);
      h = (h ^ k) * 0xc4ceb9fe1a85ec53ull;
    }
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  return (guint32) h;
}

BwByteMap *
bw_byte_map_new (gsize expected)
{
  BwByteMap *map = g_new0 (BwByteMap, 1);

  map->keys = g_byte_array_sized_new ((guint) MIN (expected * 8, G_MAXUINT / 2));
  map->entries = g_array_sized_new (FALSE, FALSE, sizeof (Entry), (guint) MIN (expected, G_MAXUINT / 2));
  map->n_slots = 16;
  while (map->n_slots < expected * 2)
    map->n_slots *= 2;
  map->slots = g_new0 (guint32, map->n_slots);
  return map;
}

void
bw_byte_map_free (BwByteMap *map)
{
  if (map == NULL)
    return;
  g_byte_array_unref (map->keys);
  g_array_unref (map->entries);
  g_free (map->slots);
  g_free (map);
}

static void
place (guint32 *slots, gsize n_slots, guint32 hash, guint32 index)
{
  gsize mask = n_slots - 1;
  gsize i = hash & mask;

  while (slots[i] != 0)
    i = (i + 1) & mask;
  slots[i] = index + 1;
}

static void
grow (BwByteMap *map)
{
  gsize n_slots = map->n_slots * 2;
  guint32 *slots = g_new0 (guint32, n_slots);

  for (guint i = 0; i < map->entries->len; i++)
    place (slots, n_slots, g_array_index (map->entries, Entry, i).hash, i);
  g_free (map->slots);
  map->slots = slots;
  map->n_slots = n_slots;
}

static gint64
find (const BwByteMap *map, const guint8 *key, gsize len, guint32 hash)
{
  gsize mask = map->n_slots - 1;
  gsize i = hash & mask;

  for (;;)
    {
      guint32 slot = map->slots[i];
      const Entry *e;

      if (slot == 0)
        return -1;
      e = &g_array_index (map->entries, Entry, slot - 1);
      if (e->hash == hash && e->key_len == len &&
          memcmp (map->keys->data + e->key_offset, key, len) == 0)
        return slot - 1;
      i = (i + 1) & mask;
    }
}

gboolean
bw_byte_map_insert (BwByteMap *map, const void *key, gsize len, gint32 value)
{
  guint32 hash = hash_bytes (key, len);
  Entry e;

  g_return_val_if_fail (value >= 0 && len <= G_MAXUINT32, FALSE);
  if (find (map, key, len, hash) >= 0)
    return FALSE;
  if ((map->entries->len + 1) * 2 > map->n_slots)
    grow (map);
  e.key_offset = map->keys->len;
  e.key_len = (guint32) len;
  e.hash = hash;
  e.value = value;
  g_byte_array_append (map->keys, key, (guint) len);
  g_array_append_val (map->entries, e);
  place (map->slots, map->n_slots, hash, map->entries->len - 1);
  return TRUE;
}

gint32
bw_byte_map_lookup (const BwByteMap *map, const void *key, gsize len)
{
  gint64 i = find (map, key, len, hash_bytes (key, len));

  return i < 0 ? -1 : g_array_index (map->entries, Entry, i).value;
}

gsize
bw_byte_map_size (const BwByteMap *map)
{
  return map->entries->len;
}
