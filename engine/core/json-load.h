/* Parsing untrusted JSON buffers: size, encoding and nesting are checked before json-glib
 * sees the bytes, and typed accessors refuse values of the wrong JSON type. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

/* Deepest nesting accepted; json-glib's parser recurses once per level. */
#define BW_JSON_MAX_DEPTH 64

typedef enum {
  BW_JSON_TEXT_OK,
  BW_JSON_TOO_DEEP,     /* nests deeper than the limit */
  BW_JSON_TRAILING,     /* more than whitespace after the first value */
} BwJsonTextProblem;

/* What must be refused before json-glib (1.6) sees a text: nesting deep enough to
 * overflow its recursive parser's stack, and a second top-level value, which it leaks. */
BwJsonTextProblem bw_json_check_text (const char *data, gsize len, int max_depth);

/* Parses len bytes of JSON whose root must be an object. `file` names the source in
 * errors (BW_CHECKPOINT_ERROR_FORMAT). Returns the root node, owned by the caller. */
JsonNode *bw_json_parse_object (const char *file, const char *data, gsize len,
                                GError **error);

/* TRUE when node holds a JSON integer; stores it in *out. */
gboolean bw_json_node_get_int (JsonNode *node, gint64 *out);
/* TRUE when node holds a JSON number (integer or not); stores it in *out. */
gboolean bw_json_node_get_number (JsonNode *node, double *out);
/* The string in node, or NULL when node is absent or not a string. */
const char *bw_json_node_get_string (JsonNode *node);
/* The object in node, or NULL when node is absent or not an object. */
JsonObject *bw_json_node_get_object (JsonNode *node);
/* The array in node, or NULL when node is absent or not an array. */
JsonArray *bw_json_node_get_array (JsonNode *node);
/* TRUE when node is absent or JSON null. */
gboolean bw_json_node_is_missing (JsonNode *node);
