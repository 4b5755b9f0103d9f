/* safetensors header parsing and validation. */
#include "core/safetensors.h"

#include <string.h>

#include "core/json-load.h"

#define MAX_NAME_LEN 4096

static void
entry_clear (gpointer p)
{
  BwSafetensorsEntry *e = p;
  g_free (e->name);
}

gboolean
bw_safetensors_header_length (const char *file, const guint8 *prefix, guint64 file_size,
                              guint64 *header_len, GError **error)
{
  guint64 n = 0;

  if (file_size < 8)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_TRUNCATED,
                   "%s: file is %" G_GUINT64_FORMAT " bytes, too short for a safetensors "
                   "header", file, file_size);
      return FALSE;
    }
  for (int i = 7; i >= 0; i--)
    n = (n << 8) | prefix[i];
  if (n > BW_SAFETENSORS_MAX_HEADER)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: header length %" G_GUINT64_FORMAT " is larger than the %" G_GUINT64_FORMAT
                   "-byte limit", file, n, BW_SAFETENSORS_MAX_HEADER);
      return FALSE;
    }
  if (n > file_size - 8)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_TRUNCATED,
                   "%s: header length %" G_GUINT64_FORMAT " runs past the end of the "
                   "%" G_GUINT64_FORMAT "-byte file", file, n, file_size);
      return FALSE;
    }
  if (n < 2)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: header length %" G_GUINT64_FORMAT " is too short for a JSON object",
                   file, n);
      return FALSE;
    }
  *header_len = n;
  return TRUE;
}

static gboolean
parse_shape (const char *file, const char *name, JsonArray *shape, BwSafetensorsEntry *e,
             GError **error)
{
  guint n = json_array_get_length (shape);
  int64_t count = 1;

  if (n > BW_MAX_DIMS)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' has %u dimensions, more than the %d supported", file, name,
                   n, BW_MAX_DIMS);
      return FALSE;
    }
  e->n_dims = (int) n;
  for (guint i = 0; i < n; i++)
    {
      gint64 d;
      if (!bw_json_node_get_int (json_array_get_element (shape, i), &d) || d < 0)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: tensor '%s' shape entry %u is not a non-negative integer", file,
                       name, i);
          return FALSE;
        }
      e->shape[i] = d;
      if (__builtin_mul_overflow (count, d, &count))
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: tensor '%s' element count overflows", file, name);
          return FALSE;
        }
    }
  e->n_elements = count;
  return TRUE;
}

static gboolean
parse_offsets (const char *file, const char *name, JsonArray *offsets, guint64 data_size,
               BwSafetensorsEntry *e, GError **error)
{
  gint64 begin, end;
  guint64 nbytes;

  if (json_array_get_length (offsets) != 2
      || !bw_json_node_get_int (json_array_get_element (offsets, 0), &begin)
      || !bw_json_node_get_int (json_array_get_element (offsets, 1), &end)
      || begin < 0 || end < 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' data_offsets is not a pair of non-negative integers",
                   file, name);
      return FALSE;
    }
  if (begin > end || (guint64) end > data_size)
    {
      /* Past the end of the data: the file holds less than its header says. */
      g_set_error (error, BW_CHECKPOINT_ERROR,
                   begin > end ? BW_CHECKPOINT_ERROR_FORMAT : BW_CHECKPOINT_ERROR_TRUNCATED,
                   "%s: tensor '%s' data_offsets [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                   "] lie outside the %" G_GUINT64_FORMAT "-byte data section", file, name,
                   begin, end, data_size);
      return FALSE;
    }
  if (__builtin_mul_overflow ((guint64) e->n_elements, (guint64) bw_dtype_size (e->dtype),
                              &nbytes)
      || nbytes != (guint64) (end - begin))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' is %" G_GINT64_FORMAT " %s elements but its data_offsets "
                   "span %" G_GINT64_FORMAT " bytes", file, name, e->n_elements,
                   bw_dtype_name (e->dtype), end - begin);
      return FALSE;
    }
  e->begin = (guint64) begin;
  e->end = (guint64) end;
  return TRUE;
}

static gboolean
parse_entry (const char *file, const char *name, JsonNode *node, guint64 data_size,
             BwSafetensorsEntry *e, GError **error)
{
  JsonObject *obj = bw_json_node_get_object (node);
  JsonArray *shape, *offsets;
  const char *dtype;

  if (name[0] == '\0' || strlen (name) > MAX_NAME_LEN)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor name is empty or longer than %d bytes", file, MAX_NAME_LEN);
      return FALSE;
    }
  if (obj == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: entry '%s' is not an object", file, name);
      return FALSE;
    }
  dtype = bw_json_node_get_string (json_object_get_member (obj, "dtype"));
  shape = bw_json_node_get_array (json_object_get_member (obj, "shape"));
  offsets = bw_json_node_get_array (json_object_get_member (obj, "data_offsets"));
  if (dtype == NULL || shape == NULL || offsets == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' lacks a string dtype, an array shape or an array "
                   "data_offsets", file, name);
      return FALSE;
    }
  e->dtype = bw_dtype_from_string (dtype);
  if (e->dtype == BW_DTYPE_INVALID)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: tensor '%s' has unknown dtype '%s'", file, name, dtype);
      return FALSE;
    }
  return parse_shape (file, name, shape, e, error)
         && parse_offsets (file, name, offsets, data_size, e, error);
}

static int
compare_by_offset (gconstpointer a, gconstpointer b)
{
  const BwSafetensorsEntry *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return 0;
}

static gboolean
check_no_overlap (const char *file, GArray *entries, GError **error)
{
  for (guint i = 1; i < entries->len; i++)
    {
      const BwSafetensorsEntry *prev = &g_array_index (entries, BwSafetensorsEntry, i - 1);
      const BwSafetensorsEntry *cur = &g_array_index (entries, BwSafetensorsEntry, i);
      if (cur->begin < prev->end)
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: tensors '%s' and '%s' overlap in the data section", file,
                       prev->name, cur->name);
          return FALSE;
        }
    }
  return TRUE;
}

GArray *
bw_safetensors_parse (const char *file, const guint8 *head, gsize head_len,
                      guint64 file_size, GError **error)
{
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (GArray) entries = NULL;
  JsonObjectIter iter;
  const char *name;
  JsonNode *node;
  guint64 header_len, data_size;

  if (head_len < 8 || head_len > file_size)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_TRUNCATED,
                   "%s: file is too short for a safetensors header", file);
      return NULL;
    }
  if (!bw_safetensors_header_length (file, head, file_size, &header_len, error))
    return NULL;
  if (header_len > head_len - 8)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_TRUNCATED,
                   "%s: header is truncated", file);
      return NULL;
    }
  data_size = file_size - 8 - header_len;

  root = bw_json_parse_object (file, (const char *) head + 8, (gsize) header_len, error);
  if (root == NULL)
    return NULL;

  entries = g_array_new (FALSE, TRUE, sizeof (BwSafetensorsEntry));
  g_array_set_clear_func (entries, entry_clear);
  json_object_iter_init (&iter, json_node_get_object (root));
  while (json_object_iter_next (&iter, &name, &node))
    {
      BwSafetensorsEntry e = { 0 };
      if (strcmp (name, "__metadata__") == 0)
        {
          if (!JSON_NODE_HOLDS_OBJECT (node))
            {
              g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                           "%s: __metadata__ is not an object", file);
              return NULL;
            }
          continue;
        }
      if (!parse_entry (file, name, node, data_size, &e, error))
        return NULL;
      e.name = g_strdup (name);
      g_array_append_val (entries, e);
    }

  g_array_sort (entries, compare_by_offset);
  if (!check_no_overlap (file, entries, error))
    return NULL;
  return g_steal_pointer (&entries);
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static gboolean
shard_name_ok (const char *s)
{
  return s[0] != '\0' && strchr (s, '/') == NULL && strcmp (s, ".") != 0
         && strcmp (s, "..") != 0;
}

GHashTable *
bw_safetensors_index_parse (const char *file, const char *data, gsize len, GPtrArray **shards,
                            GError **error)
{
  g_autoptr (JsonNode) root = NULL;
  g_autoptr (GHashTable) map = NULL;
  g_autoptr (GHashTable) distinct = NULL;
  JsonObject *weight_map;
  JsonObjectIter iter;
  const char *name;
  JsonNode *node;
  GHashTableIter it;
  gpointer key;

  root = bw_json_parse_object (file, data, len, error);
  if (root == NULL)
    return NULL;
  weight_map = bw_json_node_get_object (json_object_get_member (json_node_get_object (root),
                                                                "weight_map"));
  if (weight_map == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: weight_map is missing or not an object", file);
      return NULL;
    }

  map = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  distinct = g_hash_table_new (g_str_hash, g_str_equal);
  json_object_iter_init (&iter, weight_map);
  while (json_object_iter_next (&iter, &name, &node))
    {
      const char *shard = bw_json_node_get_string (node);
      if (shard == NULL || !shard_name_ok (shard))
        {
          g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                       "%s: weight_map entry '%s' is not a plain shard file name", file, name);
          return NULL;
        }
      g_hash_table_insert (map, g_strdup (name), g_strdup (shard));
    }
  if (g_hash_table_size (map) == 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: weight_map is empty", file);
      return NULL;
    }
  g_hash_table_iter_init (&it, map);
  while (g_hash_table_iter_next (&it, NULL, &key))
    g_hash_table_add (distinct, key);

  *shards = g_ptr_array_new_with_free_func (g_free);
  g_hash_table_iter_init (&it, distinct);
  while (g_hash_table_iter_next (&it, &key, NULL))
    g_ptr_array_add (*shards, g_strdup (key));
  g_ptr_array_sort (*shards, compare_strings);
  return g_steal_pointer (&map);
}
