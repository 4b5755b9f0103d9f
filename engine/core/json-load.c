/* Guarded json-glib parsing and typed accessors. */
#include "core/json-load.h"

#include "core/checkpoint.h"

#include <string.h>

static gboolean
is_space (char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static gboolean
is_scalar_char (char c)
{
  return g_ascii_isalnum (c) || c == '-' || c == '+' || c == '.';
}

/* The UTF-16 unit of the u-escape (backslash, u, 4 hex digits) at data[at], or -1 when
 * there is none there. */
static int
u_escape (const char *data, gsize len, gsize at)
{
  if (at + 6 > len || data[at] != '\\' || data[at + 1] != 'u')
    return -1;
  int unit = 0;
  for (gsize k = at + 2; k < at + 6; k++)
    {
      int digit = g_ascii_xdigit_value (data[k]);
      if (digit < 0)
        return -1;
      unit = unit * 16 + digit;
    }
  return unit;
}

/* How many bytes the escape at data[at] (the backslash) takes: 2, 6 or 12 for a surrogate
 * pair; 0 when it is not one JSON allows or is half a surrogate pair. json-glib 1.6 leaks
 * its string buffer on a high surrogate followed by a broken u-escape (fixed in 1.10,
 * GNOME/json-glib f2b68af4), takes u-escapes of fewer than 4 hex digits, and turns a lone
 * surrogate into invalid UTF-8. */
static gsize
escape_length (const char *data, gsize len, gsize at)
{
  if (at + 1 < len && strchr ("\"\\/bfnrt", data[at + 1]) != NULL && data[at + 1] != '\0')
    return 2;
  int unit = u_escape (data, len, at);
  if (unit < 0 || (unit >= 0xdc00 && unit <= 0xdfff))
    return 0;
  if (unit < 0xd800 || unit > 0xdbff)
    return 6;
  int low = u_escape (data, len, at + 6);
  return low >= 0xdc00 && low <= 0xdfff ? 12 : 0;
}

/* One pass: the nesting stops early once past the limit, every escape in a string must be
 * one JSON allows (see escape_length), outside strings only JSON's own characters may
 * appear, and whatever follows the first complete value must be whitespace. json-glib 1.6
 * recurses once per level (a deep enough text overflows its stack) and leaks a second
 * top-level value; it also reads '...' strings and slash comments, which could hide a
 * quote from this scan and with it a second value or deep nesting. An incomplete first
 * value passes: json-glib reports it. */
BwJsonTextProblem
bw_json_check_text (const char *data, gsize len, int max_depth)
{
  int depth = 0;
  gboolean in_string = FALSE, in_scalar = FALSE;
  gsize i = 0, end = len;

  while (i < len && is_space (data[i]))
    i++;
  for (; i < len; i++)
    {
      char c = data[i];
      if (in_string)
        {
          if (c == '\\')
            {
              gsize n = escape_length (data, len, i);
              if (n == 0)
                return BW_JSON_BAD_ESCAPE;
              i += n - 1;
            }
          else if (c == '"')
            {
              in_string = FALSE;
              if (depth == 0)
                {
                  end = i + 1;
                  break;
                }
            }
          continue;
        }
      if (depth == 0 && in_scalar && !is_scalar_char (c))
        {
          end = i;
          break;
        }
      if (c == '"')
        in_string = TRUE;
      else if (c == '{' || c == '[')
        {
          if (++depth > max_depth)
            return BW_JSON_TOO_DEEP;
        }
      else if (c == '}' || c == ']')
        {
          if (depth > 0 && --depth == 0)
            {
              end = i + 1;
              break;
            }
        }
      else if (!is_space (c) && c != ':' && c != ',' && !is_scalar_char (c))
        return BW_JSON_STRAY_CHAR;
      else if (depth == 0)
        in_scalar = TRUE;
    }
  for (i = end; i < len && is_space (data[i]); i++)
    ;
  return i < len ? BW_JSON_TRAILING : BW_JSON_TEXT_OK;
}

const char *
bw_json_text_problem_text (BwJsonTextProblem problem)
{
  switch (problem)
    {
    case BW_JSON_TOO_DEEP:
      return "it nests deeper than " G_STRINGIFY (BW_JSON_MAX_DEPTH) " levels";
    case BW_JSON_TRAILING:
      return "more text follows the top-level value";
    case BW_JSON_BAD_ESCAPE:
      return "a string holds an invalid escape (\\u needs 4 hex digits, and a surrogate "
             "its pair)";
    case BW_JSON_STRAY_CHAR:
      return "a character that JSON allows only inside \"strings\" appears outside one";
    case BW_JSON_TEXT_OK:
    default:
      return "no problem";
    }
}

JsonNode *
bw_json_from_text (const char *text, gssize len)
{
  gsize n = len < 0 ? strlen (text) : (gsize) len;
  if (bw_json_check_text (text, n, BW_JSON_MAX_DEPTH) != BW_JSON_TEXT_OK)
    return NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  if (!json_parser_load_from_data (parser, text, (gssize) n, NULL))
    return NULL;
  JsonNode *root = json_parser_get_root (parser);
  return root ? json_node_ref (root) : NULL;
}

typedef struct {
  GHashTable *counts;     /* JsonObject * -> members parsed into it so far */
  char *repeated;         /* the first key seen twice in one object */
} MemberCheck;

/* json-glib emits this after storing the member, so an object that did not grow repeats a
 * key: the last value would silently win, and a header could hide a tensor behind another. */
static void
on_object_member (JsonParser *parser,
                  JsonObject *object,
                  const char *name,
                  gpointer    user_data)
{
  MemberCheck *check = user_data;
  guint seen = GPOINTER_TO_UINT (g_hash_table_lookup (check->counts, object)) + 1;

  (void) parser;
  g_hash_table_insert (check->counts, object, GUINT_TO_POINTER (seen));
  if (seen > json_object_get_size (object) && check->repeated == NULL)
    check->repeated = g_strdup (name);
}

JsonNode *
bw_json_parse_object (const char *file, const char *data, gsize len, GError **error)
{
  g_autoptr (JsonParser) parser = NULL;
  g_autoptr (GError) local = NULL;
  JsonNode *root;

  if (len > G_MAXSSIZE || !g_utf8_validate_len (data, len, NULL))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: JSON is not valid UTF-8 text", file);
      return NULL;
    }
  BwJsonTextProblem problem = bw_json_check_text (data, len, BW_JSON_MAX_DEPTH);
  switch (problem)
    {
    case BW_JSON_TOO_DEEP:
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: JSON nests deeper than %d levels", file, BW_JSON_MAX_DEPTH);
      return NULL;
    case BW_JSON_TRAILING:
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: malformed JSON: more text after the top-level value", file);
      return NULL;
    case BW_JSON_BAD_ESCAPE:
    case BW_JSON_STRAY_CHAR:
    default:
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: malformed JSON: %s", file, bw_json_text_problem_text (problem));
      return NULL;
    case BW_JSON_TEXT_OK:
      break;
    }

  parser = json_parser_new_immutable ();
  MemberCheck check = { g_hash_table_new (NULL, NULL), NULL };
  g_signal_connect (parser, "object-member", G_CALLBACK (on_object_member), &check);
  gboolean parsed = json_parser_load_from_data (parser, data, (gssize) len, &local);
  g_hash_table_unref (check.counts);
  if (!parsed)
    {
      g_free (check.repeated);
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: malformed JSON: %s", file, local->message);
      return NULL;
    }
  if (check.repeated != NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: JSON object repeats the key \"%s\"", file, check.repeated);
      g_free (check.repeated);
      return NULL;
    }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_FORMAT,
                   "%s: JSON top level is not an object", file);
      return NULL;
    }
  return json_node_ref (root);
}

gboolean
bw_json_node_get_int (JsonNode *node, gint64 *out)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_INT64)
    return FALSE;
  *out = json_node_get_int (node);
  return TRUE;
}

gboolean
bw_json_node_get_number (JsonNode *node, double *out)
{
  GType t;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node))
    return FALSE;
  t = json_node_get_value_type (node);
  if (t == G_TYPE_INT64)
    *out = (double) json_node_get_int (node);
  else if (t == G_TYPE_DOUBLE)
    *out = json_node_get_double (node);
  else
    return FALSE;
  return TRUE;
}

const char *
bw_json_node_get_string (JsonNode *node)
{
  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)
      || json_node_get_value_type (node) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (node);
}

JsonObject *
bw_json_node_get_object (JsonNode *node)
{
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT (node))
    return NULL;
  return json_node_get_object (node);
}

JsonArray *
bw_json_node_get_array (JsonNode *node)
{
  if (node == NULL || !JSON_NODE_HOLDS_ARRAY (node))
    return NULL;
  return json_node_get_array (node);
}

gboolean
bw_json_node_is_missing (JsonNode *node)
{
  return node == NULL || JSON_NODE_HOLDS_NULL (node);
}
