/* generation_config.json's end-of-turn ids. */
#include "run/stop-config.h"

#include "burrow-engine.h"
#include "core/json-load.h"

/* Larger than any generation_config.json or tokenizer_config.json we read. */
#define STOP_CONFIG_FILE_MAX (16u << 20)

void
bw_stop_ids_add (GArray *ids, gint32 id, int vocab)
{
  if (id < 0 || id >= vocab)
    return;
  for (guint i = 0; i < ids->len; i++)
    if (g_array_index (ids, gint32, i) == id)
      return;
  g_array_append_val (ids, id);
}

gboolean
bw_stop_config_load (const char *path, JsonNode **root, GError **error)
{
  *root = NULL;
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &text, &len, &local))
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT, "%s",
                   local->message);
      return FALSE;
    }
  if (len > STOP_CONFIG_FILE_MAX)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                   "%s: too large (%" G_GSIZE_FORMAT " bytes) for a configuration file", path,
                   len);
      return FALSE;
    }
  *root = bw_json_parse_object (path, text, len, &local);
  if (*root == NULL)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT, "%s",
                   local->message);
      return FALSE;
    }
  return TRUE;
}

static gboolean
add_eos (JsonNode *node, int vocab, GArray *ids)
{
  if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  bw_stop_ids_add (ids, (gint32) CLAMP (json_node_get_int (node), -1, G_MAXINT32), vocab);
  return TRUE;
}

gboolean
bw_generation_config_stops (const char *path, int vocab, GArray *ids, GError **error)
{
  g_autoptr (JsonNode) root = NULL;
  if (!bw_stop_config_load (path, &root, error))
    return FALSE;
  JsonNode *eos = root ? json_object_get_member (json_node_get_object (root), "eos_token_id")
                       : NULL;
  if (eos == NULL || add_eos (eos, vocab, ids))
    return TRUE;
  JsonArray *arr = JSON_NODE_HOLDS_ARRAY (eos) ? json_node_get_array (eos) : NULL;
  if (arr == NULL)
    return TRUE;  /* a value of another type names no id */
  if (json_array_get_length (arr) > BW_STOP_CONFIG_MAX_IDS)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                   "%s: eos_token_id lists %u ids, more than %d", path,
                   json_array_get_length (arr), BW_STOP_CONFIG_MAX_IDS);
      return FALSE;
    }
  for (guint i = 0; i < json_array_get_length (arr); i++)
    add_eos (json_array_get_element (arr, i), vocab, ids);
  return TRUE;
}
