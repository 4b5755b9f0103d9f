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
  BW_JSON_BAD_ESCAPE,   /* an escape JSON does not allow, or half a surrogate pair */
  BW_JSON_STRAY_CHAR,   /* outside strings, a character JSON does not have ('x', a comment) */
} BwJsonTextProblem;

/* What must be refused before json-glib (1.6) sees a text: nesting deep enough to
 * overflow its recursive parser's stack, a second top-level value and a broken surrogate
 * pair, which it leaks, and the extensions it reads (single quotes, comments) through
 * which either could pass unseen. */
BwJsonTextProblem bw_json_check_text (const char *data, gsize len, int max_depth);
/* The problem in words, for an error message ("it nests deeper than 64 levels"). */
const char *bw_json_text_problem_text (BwJsonTextProblem problem);

/* The value in text (len bytes, or up to its NUL when len < 0) once bw_json_check_text
 * passes, or NULL. For JSON inside other data (a tool call's arguments); owned by the
 * caller. */
JsonNode *bw_json_from_text (const char *text, gssize len);

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
