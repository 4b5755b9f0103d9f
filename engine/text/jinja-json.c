/* JSON into interpreter values, and values out as Python's json.dumps writes them (the
 * tojson filter of transformers: ensure_ascii, indent, separators and sort_keys). */
#include "text/jinja-private.h"

#include <math.h>
#include <string.h>

/* JSON nests only as deep as json-glib parses; this bounds our recursion the same way. */
#define JSON_MAX_DEPTH 512

/* A string from JSON; client data is marked whole. */
static JjValue *
json_text (const char *text, gboolean client)
{
  JjValue *v = jj_string (text, -1);

  if (client && v->str.len > 0)
    {
      v->str.marks = g_array_sized_new (FALSE, FALSE, sizeof (JjSpan), 1);
      g_array_append_val (v->str.marks, ((JjSpan) { 0, v->str.len }));
    }
  return v;
}

static JjValue *
json_scalar (JsonNode *node, gboolean client)
{
  JjValue *v;

  switch (json_node_get_value_type (node))
    {
    case G_TYPE_BOOLEAN:
      v = jj_bool (json_node_get_boolean (node));
      break;
    case G_TYPE_INT64:
      v = jj_int (json_node_get_int (node));
      break;
    case G_TYPE_DOUBLE:
      v = jj_float (json_node_get_double (node));
      break;
    case G_TYPE_STRING:
      return json_text (json_node_get_string (node), client);
    default:
      v = jj_none ();
      break;
    }
  v->client = client;
  return v;
}

static JjValue *
from_json_depth (JsonNode *node, gboolean client, guint depth)
{
  JjValue *v;

  if (node == NULL || depth > JSON_MAX_DEPTH)
    {
      v = jj_none ();
      v->client = client;
      return v;
    }
  switch (json_node_get_node_type (node))
    {
    case JSON_NODE_OBJECT:
      {
        JsonObject *obj = json_node_get_object (node);
        JjValue *dict = jj_dict_new ();
        GList *members = json_object_get_members (obj);
        for (GList *m = members; m; m = m->next)
          jj_dict_set (dict, json_text (m->data, client),
                       from_json_depth (json_object_get_member (obj, m->data), client,
                                        depth + 1));
        g_list_free (members);
        return dict;
      }
    case JSON_NODE_ARRAY:
      {
        JsonArray *arr = json_node_get_array (node);
        JjValue *list = jj_list_new ();
        for (guint i = 0; i < json_array_get_length (arr); i++)
          jj_list_append (list, from_json_depth (json_array_get_element (arr, i), client,
                                                 depth + 1));
        return list;
      }
    case JSON_NODE_VALUE:
      return json_scalar (node, client);
    default:
      v = jj_none ();
      v->client = client;
      return v;
    }
}

JjValue *
jj_from_json (JsonNode *node, gboolean client)
{
  return from_json_depth (node, client, 0);
}

static void
append_u16 (GString *out, guint u)
{
  g_string_append_printf (out, "\\u%04x", u);
}

/* The escapes of a JSON string inside its quotes, one run of bytes at a time. */
static void
json_run (GString *out, const char *s, gsize len, gpointer data)
{
  gboolean ensure_ascii = *(const gboolean *) data;

  for (gsize i = 0; i < len; i++)
    {
      unsigned char c = (unsigned char) s[i];
      switch (c)
        {
        case '"': g_string_append (out, "\\\""); continue;
        case '\\': g_string_append (out, "\\\\"); continue;
        case '\n': g_string_append (out, "\\n"); continue;
        case '\r': g_string_append (out, "\\r"); continue;
        case '\t': g_string_append (out, "\\t"); continue;
        case '\b': g_string_append (out, "\\b"); continue;
        case '\f': g_string_append (out, "\\f"); continue;
        default: break;
        }
      if (c < 0x20 || (ensure_ascii && c == 0x7f))
        append_u16 (out, c);
      else if (c < 0x80 || !ensure_ascii)
        g_string_append_c (out, c);
      else
        {
          const char *next = g_utf8_find_next_char (s + i, s + len);
          gunichar u = g_utf8_get_char_validated (s + i, (next ? next : s + len) - (s + i));
          gsize step = (next ? next : s + len) - (s + i);
          if (u == (gunichar) -1 || u == (gunichar) -2)
            u = 0xfffd;
          if (u >= 0x10000)
            {
              append_u16 (out, 0xd800 + ((u - 0x10000) >> 10));
              append_u16 (out, 0xdc00 + ((u - 0x10000) & 0x3ff));
            }
          else
            append_u16 (out, u);
          i += step - 1;
        }
    }
}

static void
json_string (JjText *out, const JjValue *v, gboolean ensure_ascii)
{
  g_string_append_c (out->s, '"');
  jj_text_put_runs (out, v, json_run, &ensure_ascii);
  g_string_append_c (out->s, '"');
}

static void
newline_indent (GString *out, const JjJsonStyle *style, guint level)
{
  g_string_append_c (out, '\n');
  for (guint i = 0; i < level; i++)
    g_string_append (out, style->indent);
}

static int
compare_keys (gconstpointer a, gconstpointer b, gpointer data)
{
  const JjValue *dict = data;
  int order = 0;

  jj_compare (JJ_KEY (dict, *(const guint *) a), JJ_KEY (dict, *(const guint *) b), &order);
  return order;
}

static gboolean
json_key (JjText *out, const JjValue *key, const JjJsonStyle *style, GError **error)
{
  gsize before = out->s->len;

  switch (key->kind)
    {
    case JJ_STRING:
      json_string (out, key, style->ensure_ascii);
      return TRUE;
    case JJ_INT:
    case JJ_FLOAT:
    case JJ_BOOL:
    case JJ_NONE:
      /* json.dumps turns these keys into strings (digits and names need no escapes). */
      g_string_append_c (out->s, '"');
      if (key->kind == JJ_BOOL)
        g_string_append (out->s, key->b ? "true" : "false");
      else if (key->kind == JJ_NONE)
        g_string_append (out->s, "null");
      else
        jj_str (out, key);
      g_string_append_c (out->s, '"');
      if (key->client)
        jj_text_mark_from (out, before);
      return TRUE;
    default:
      g_set_error (error, BW_JINJA_ERROR, BW_JINJA_ERROR_RUNTIME,
                   "keys must be str, int, float, bool or None, not %s", jj_kind_name (key));
      return FALSE;
    }
}

static gboolean
json_dict (JjText *out, const JjValue *v, const JjJsonStyle *style, guint depth,
           GError **error)
{
  guint n = jj_dict_size (v);
  g_autofree guint *order = g_new (guint, MAX (n, 1));

  if (n == 0)
    {
      g_string_append (out->s, "{}");
      return TRUE;
    }
  for (guint i = 0; i < n; i++)
    order[i] = i;
  if (style->sort_keys)
    g_qsort_with_data (order, n, sizeof *order, compare_keys, (gpointer) v);
  g_string_append_c (out->s, '{');
  for (guint k = 0; k < n; k++)
    {
      if (k > 0)
        g_string_append (out->s, style->item_sep);
      if (style->indent)
        newline_indent (out->s, style, depth + 1);
      if (!json_key (out, JJ_KEY (v, order[k]), style, error))
        return FALSE;
      g_string_append (out->s, style->key_sep);
      if (!jj_to_json (out, JJ_VAL (v, order[k]), style, depth + 1, error))
        return FALSE;
    }
  if (style->indent)
    newline_indent (out->s, style, depth);
  g_string_append_c (out->s, '}');
  return TRUE;
}

static gboolean
json_list (JjText *out, const JjValue *v, const JjJsonStyle *style, guint depth,
           GError **error)
{
  if (v->list->len == 0)
    {
      g_string_append (out->s, "[]");
      return TRUE;
    }
  g_string_append_c (out->s, '[');
  for (guint i = 0; i < v->list->len; i++)
    {
      if (i > 0)
        g_string_append (out->s, style->item_sep);
      if (style->indent)
        newline_indent (out->s, style, depth + 1);
      if (!jj_to_json (out, JJ_ITEM (v, i), style, depth + 1, error))
        return FALSE;
    }
  if (style->indent)
    newline_indent (out->s, style, depth);
  g_string_append_c (out->s, ']');
  return TRUE;
}

gboolean
jj_to_json (JjText *out, const JjValue *v, const JjJsonStyle *style, guint depth,
            GError **error)
{
  gsize before = out->s->len;

  if (depth > JSON_MAX_DEPTH)
    {
      g_set_error (error, BW_JINJA_ERROR, BW_JINJA_ERROR_LIMIT,
                   "tojson: value nested deeper than %d", JSON_MAX_DEPTH);
      return FALSE;
    }
  switch (v->kind)
    {
    case JJ_NONE:
      g_string_append (out->s, "null");
      break;
    case JJ_BOOL:
      g_string_append (out->s, v->b ? "true" : "false");
      break;
    case JJ_INT:
      jj_str (out, v);
      return TRUE;
    case JJ_FLOAT:
      if (isnan (v->f))
        g_string_append (out->s, "NaN");
      else if (isinf (v->f))
        g_string_append (out->s, v->f < 0 ? "-Infinity" : "Infinity");
      else
        jj_float_repr (out->s, v->f);
      break;
    case JJ_STRING:
      json_string (out, v, style->ensure_ascii);
      return TRUE;
    case JJ_LIST:
      return json_list (out, v, style, depth, error);
    case JJ_DICT:
      return json_dict (out, v, style, depth, error);
    default:
      g_set_error (error, BW_JINJA_ERROR, BW_JINJA_ERROR_RUNTIME,
                   "Object of type %s is not JSON serializable", jj_kind_name (v));
      return FALSE;
    }
  if (v->client)
    jj_text_mark_from (out, before);
  return TRUE;
}
