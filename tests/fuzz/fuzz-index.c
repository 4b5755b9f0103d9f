/* Fuzz target: model.safetensors.index.json through the shard index parser. */
#include <stdlib.h>
#include <string.h>

#include "core/safetensors.h"
#include "fuzz.h"

const char bw_fuzz_label[] = "model.safetensors.index.json";

/* Accepted maps name only plain shard files, every tensor maps to one of them. */
static void
check_index (GHashTable *map, GPtrArray *shards)
{
  GHashTableIter iter;
  gpointer key, value;

  if (shards->len == 0)
    abort ();
  for (guint i = 0; i < shards->len; i++)
    {
      const char *shard = shards->pdata[i];
      if (shard[0] == '\0' || strchr (shard, '/') != NULL || strcmp (shard, "..") == 0
          || strcmp (shard, ".") == 0)
        abort ();
    }
  g_hash_table_iter_init (&iter, map);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      gboolean found = FALSE;
      if (key == NULL || value == NULL)
        abort ();
      for (guint i = 0; i < shards->len && !found; i++)
        found = strcmp (shards->pdata[i], value) == 0;
      if (!found)
        abort ();
    }
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  GPtrArray *shards = NULL;
  GHashTable *map = bw_safetensors_index_parse (bw_fuzz_label, (const char *) data, size,
                                                &shards, error);

  if (map == NULL)
    return FALSE;
  check_index (map, shards);
  g_ptr_array_unref (shards);
  g_hash_table_unref (map);
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
