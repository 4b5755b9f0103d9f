/* Compiling the JSON Schema subset (see json-schema.h). */
#include "run/json-schema.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "burrow-engine.h"
#include "run/json-matcher.h"

#define MAX_SCHEMA_DEPTH 32
#define MAX_SCHEMA_NODES 20000

typedef struct {
  BwJsonSchema *s;
  int any;                   /* the node of any value, or -1 until first needed */
} Compiler;

static const char *const annotations[] = {
  "title", "description", "default", "examples", "$schema", "$id", "$comment", NULL
};
static const char *const constraints[] = {
  "type", "properties", "required", "additionalProperties", "enum", "const", "items",
  "minItems", "maxItems", "anyOf", "minLength", "maxLength", "minimum", "maximum", NULL
};

static void
prop_clear (gpointer p)
{
  g_free (((BwJsonProp *) p)->key);
}

static gboolean G_GNUC_PRINTF (3, 4)
fail (GError **error, const char *path, const char *format, ...)
{
  va_list ap;
  va_start (ap, format);
  g_autofree char *text = g_strdup_vprintf (format, ap);
  va_end (ap);
  g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT, "%s at %s",
               text, path);
  return FALSE;
}

static int
add_node (Compiler *c, const BwJsonNode *n)
{
  g_array_append_vals (c->s->nodes, n, 1);
  return (int) c->s->nodes->len - 1;
}

static BwJsonNode *
node_at (Compiler *c, int i)
{
  return &g_array_index (c->s->nodes, BwJsonNode, i);
}

static BwJsonNode
new_node (BwJsonKind kind)
{
  BwJsonNode n = { .kind = kind, .minimum = -INFINITY, .maximum = INFINITY,
                   .max_count = G_MAXUINT, .additional = -1, .items = -1 };
  memset (n.branch, 0xff, sizeof n.branch);
  return n;
}

static int
add_literals (Compiler *c, const char *const *texts, guint n)
{
  BwJsonNode node = new_node (BW_JSON_LITERALS);
  node.first = c->s->literals->len;
  node.n = n;
  node.min_bytes = G_MAXUINT;
  for (guint i = 0; i < n; i++)
    {
      g_ptr_array_add (c->s->literals, g_strdup (texts[i]));
      node.min_bytes = MIN (node.min_bytes, (guint) strlen (texts[i]));
    }
  return add_node (c, &node);
}

static void
first_bytes (Compiler *c, int i, gboolean set[256])
{
  const BwJsonNode *n = node_at (c, i);
  memset (set, 0, 256 * sizeof (gboolean));
  switch (n->kind)
    {
    case BW_JSON_OBJECT: set['{'] = TRUE; break;
    case BW_JSON_ARRAY: set['['] = TRUE; break;
    case BW_JSON_STRING: set['"'] = TRUE; break;
    case BW_JSON_NUMBER:
      set['-'] = TRUE;
      for (int d = '0'; d <= '9'; d++)
        set[d] = TRUE;
      break;
    case BW_JSON_LITERALS:
      for (guint k = 0; k < n->n; k++)
        set[(guint8) ((const char *) c->s->literals->pdata[n->first + k])[0]] = TRUE;
      break;
    case BW_JSON_ANY_OF:
      for (int b = 0; b < 256; b++)
        set[b] = n->branch[b] >= 0;
      break;
    }
}

/* One node choosing among branches by first byte. Literal branches merge into one. */
static int
make_any_of (Compiler *c, const int *branches, guint n, const char *path, GError **error)
{
  g_autoptr (GPtrArray) texts = g_ptr_array_new ();
  g_autoptr (GArray) kept = g_array_new (FALSE, FALSE, sizeof (int));
  for (guint i = 0; i < n; i++)
    {
      const BwJsonNode *b = node_at (c, branches[i]);
      if (b->kind != BW_JSON_LITERALS)
        {
          g_array_append_val (kept, branches[i]);
          continue;
        }
      for (guint k = 0; k < b->n; k++)
        g_ptr_array_add (texts, c->s->literals->pdata[b->first + k]);
    }
  if (texts->len > BW_JSON_MAX_PROPS)
    return fail (error, path, "more than 64 enum or const values in '%s'", "anyOf"), -1;
  if (texts->len > 0)
    {
      int lit = add_literals (c, (const char *const *) texts->pdata, texts->len);
      g_array_append_val (kept, lit);
    }
  BwJsonNode any = new_node (BW_JSON_ANY_OF);
  any.min_bytes = G_MAXUINT;
  for (guint i = 0; i < kept->len; i++)
    {
      int b = g_array_index (kept, int, i);
      gboolean set[256];
      first_bytes (c, b, set);
      const BwJsonNode *bn = node_at (c, b);
      any.min_bytes = MIN (any.min_bytes, bn->min_bytes);
      for (int x = 0; x < 256; x++)
        {
          if (!set[x])
            continue;
          if (any.branch[x] >= 0)
            {
              char what[2] = { (char) x, 0 };
              return fail (error, path, "two 'anyOf' branches start with '%s' (branches must "
                           "differ in JSON type or value)", what), -1;
            }
          /* A nested anyOf is flattened: its own choice for that byte. */
          any.branch[x] = (gint16) (bn->kind == BW_JSON_ANY_OF ? bn->branch[x] : b);
        }
    }
  return add_node (c, &any);
}

/* Any JSON value: an object of any values, an array of them, a string, number, boolean or
 * null. Made once per schema. */
static int
any_node (Compiler *c)
{
  if (c->any >= 0)
    return c->any;
  static const char *const bools[] = { "true", "false", "null" };
  BwJsonNode object = new_node (BW_JSON_OBJECT), array = new_node (BW_JSON_ARRAY);
  BwJsonNode string = new_node (BW_JSON_STRING), number = new_node (BW_JSON_NUMBER);
  object.min_bytes = array.min_bytes = string.min_bytes = 2;
  number.min_bytes = 1;
  int b[5] = { add_node (c, &object), add_node (c, &array), add_node (c, &string),
               add_node (c, &number), add_literals (c, bools, 3) };
  c->any = make_any_of (c, b, 5, "$", NULL);
  node_at (c, b[0])->additional = c->any;
  node_at (c, b[1])->items = c->any;
  return c->any;
}

static int compile (Compiler *c, JsonNode *n, const char *path, const char *type, guint depth,
                    GError **error);

static JsonNode *
get (JsonObject *o, const char *name)
{
  return json_object_has_member (o, name) ? json_object_get_member (o, name) : NULL;
}

static gboolean
get_count (JsonObject *o, const char *name, const char *path, guint *out, GError **error)
{
  JsonNode *v = get (o, name);
  if (v == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (v) || json_node_get_value_type (v) != G_TYPE_INT64
      || json_node_get_int (v) < 0 || json_node_get_int (v) > G_MAXINT32)
    return fail (error, path, "'%s' must be a non-negative integer", name);
  *out = (guint) json_node_get_int (v);
  return TRUE;
}

static gboolean
get_bound (JsonObject *o, const char *name, const char *path, double *out, GError **error)
{
  JsonNode *v = get (o, name);
  if (v == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (v) || (json_node_get_value_type (v) != G_TYPE_INT64
                                     && json_node_get_value_type (v) != G_TYPE_DOUBLE))
    return fail (error, path, "'%s' must be a number", name);
  *out = json_node_get_double (v);
  return TRUE;
}

static int
compile_object (Compiler *c, JsonObject *o, const char *path, guint depth, GError **error)
{
  JsonNode *props = get (o, "properties"), *req = get (o, "required");
  JsonNode *extra = get (o, "additionalProperties");
  BwJsonNode node = new_node (BW_JSON_OBJECT);
  g_autoptr (GArray) found = g_array_new (FALSE, FALSE, sizeof (BwJsonProp));
  g_autoptr (GList) names = NULL;

  g_array_set_clear_func (found, prop_clear);
  if (props && !JSON_NODE_HOLDS_OBJECT (props))
    return fail (error, path, "'%s' must be an object", "properties"), -1;
  if (props)
    names = json_object_get_members (json_node_get_object (props));
  if (g_list_length (names) > BW_JSON_MAX_PROPS)
    return fail (error, path, "more than 64 '%s'", "properties"), -1;
  for (GList *l = names; l; l = l->next)
    {
      g_autofree char *sub = g_strdup_printf ("%s.properties.%s", path, (char *) l->data);
      int child = compile (c, json_object_get_member (json_node_get_object (props), l->data),
                           sub, NULL, depth + 1, error);
      if (child < 0)
        return -1;
      g_autoptr (JsonNode) name = json_node_init_string (json_node_alloc (), l->data);
      g_autofree char *quoted = json_to_string (name, FALSE);
      BwJsonProp p = { g_strndup (quoted + 1, strlen (quoted) - 2), (guint) strlen (quoted) - 2,
                       child };
      g_array_append_val (found, p);
    }
  if (req && !JSON_NODE_HOLDS_ARRAY (req))
    return fail (error, path, "'%s' must be an array of property names", "required"), -1;
  for (guint i = 0; req && i < json_array_get_length (json_node_get_array (req)); i++)
    {
      JsonNode *r = json_array_get_element (json_node_get_array (req), i);
      const char *name = JSON_NODE_HOLDS_VALUE (r) && json_node_get_value_type (r) == G_TYPE_STRING
                           ? json_node_get_string (r) : NULL;
      GList *at = name ? g_list_find_custom (names, name, (GCompareFunc) strcmp) : NULL;
      if (at == NULL)
        return fail (error, path, "'%s' names a property that 'properties' does not "
                       "define (only listed properties can be enforced)", "required"), -1;
      node.required |= G_GUINT64_CONSTANT (1) << g_list_position (names, at);
    }
  if (extra && JSON_NODE_HOLDS_VALUE (extra) && json_node_get_value_type (extra) == G_TYPE_BOOLEAN)
    node.additional = json_node_get_boolean (extra) ? any_node (c) : -1;
  else if (extra)
    {
      g_autofree char *sub = g_strdup_printf ("%s.additionalProperties", path);
      node.additional = compile (c, extra, sub, NULL, depth + 1, error);
      if (node.additional < 0)
        return -1;
    }
  else
    node.additional = props ? -1 : any_node (c);
  node.first = c->s->props->len;
  node.n = found->len;
  node.min_bytes = 2;
  for (guint i = 0; i < found->len; i++)
    if (node.required & (G_GUINT64_CONSTANT (1) << i))
      {
        const BwJsonProp *p = &g_array_index (found, BwJsonProp, i);
        node.min_bytes += p->key_len + 3 + node_at (c, p->node)->min_bytes
                          + (node.min_bytes > 2 ? 1 : 0);
      }
  g_array_append_vals (c->s->props, found->data, found->len);
  g_free (g_array_steal (found, NULL));   /* the keys are the schema's now */
  return add_node (c, &node);
}

static int
compile_typed (Compiler *c, JsonObject *o, const char *type, const char *path, guint depth,
               GError **error)
{
  static const char *const bools[] = { "true", "false" }, *const null[] = { "null" };
  BwJsonNode node;

  if (strcmp (type, "object") == 0)
    return compile_object (c, o, path, depth, error);
  if (strcmp (type, "boolean") == 0)
    return add_literals (c, bools, 2);
  if (strcmp (type, "null") == 0)
    return add_literals (c, null, 1);
  if (strcmp (type, "string") == 0)
    {
      node = new_node (BW_JSON_STRING);
      if (!get_count (o, "minLength", path, &node.min_count, error)
          || !get_count (o, "maxLength", path, &node.max_count, error))
        return -1;
      node.min_bytes = 2 + node.min_count;
    }
  else if (strcmp (type, "array") == 0)
    {
      JsonNode *items = get (o, "items");
      node = new_node (BW_JSON_ARRAY);
      if (!get_count (o, "minItems", path, &node.min_count, error)
          || !get_count (o, "maxItems", path, &node.max_count, error))
        return -1;
      g_autofree char *sub = g_strdup_printf ("%s.items", path);
      node.items = items ? compile (c, items, sub, NULL, depth + 1, error) : any_node (c);
      if (node.items < 0)
        return -1;
      node.min_bytes = 2 + node.min_count * node_at (c, node.items)->min_bytes
                       + (node.min_count > 0 ? node.min_count - 1 : 0);
    }
  else if (strcmp (type, "number") == 0 || strcmp (type, "integer") == 0)
    {
      node = new_node (BW_JSON_NUMBER);
      node.integer = type[0] == 'i';
      if (!get_bound (o, "minimum", path, &node.minimum, error)
          || !get_bound (o, "maximum", path, &node.maximum, error))
        return -1;
      node.ranged = get (o, "minimum") || get (o, "maximum");
      node.min_bytes = bw_json_number_min_bytes (&node);
      if (node.min_bytes == G_MAXUINT)
        return fail (error, path, "no %s lies between minimum and maximum", type), -1;
    }
  else
    return fail (error, path, "unknown type '%s'", type), -1;
  if (node.min_count > node.max_count)
    return fail (error, path, "the minimum %s is above the maximum", "length"), -1;
  return add_node (c, &node);
}

static gboolean
type_matches (JsonNode *v, const char *type)
{
  if (type == NULL)
    return TRUE;
  if (JSON_NODE_HOLDS_OBJECT (v))
    return strcmp (type, "object") == 0;
  if (JSON_NODE_HOLDS_ARRAY (v))
    return strcmp (type, "array") == 0;
  if (JSON_NODE_HOLDS_NULL (v))
    return strcmp (type, "null") == 0;
  switch (json_node_get_value_type (v))
    {
    case G_TYPE_STRING: return strcmp (type, "string") == 0;
    case G_TYPE_BOOLEAN: return strcmp (type, "boolean") == 0;
    case G_TYPE_INT64: return strcmp (type, "integer") == 0 || strcmp (type, "number") == 0;
    default: return strcmp (type, "number") == 0;
    }
}

/* enum or const: the values of the right type, as compact JSON. */
static int
compile_literals (Compiler *c, JsonObject *o, const char *type, const char *path,
                  GError **error)
{
  JsonNode *en = get (o, "enum"), *cn = get (o, "const");
  g_autoptr (GPtrArray) texts = g_ptr_array_new_with_free_func (g_free);
  if (en && (!JSON_NODE_HOLDS_ARRAY (en) || json_array_get_length (json_node_get_array (en)) == 0))
    return fail (error, path, "'%s' must be a non-empty array", "enum"), -1;
  guint n = en ? json_array_get_length (json_node_get_array (en)) : 1;
  if (n > BW_JSON_MAX_PROPS)
    return fail (error, path, "more than 64 values in '%s'", "enum"), -1;
  for (guint i = 0; i < n; i++)
    {
      JsonNode *v = en ? json_array_get_element (json_node_get_array (en), i) : cn;
      if (cn && en && !json_node_equal (v, cn))
        continue;
      if (type_matches (v, type))
        g_ptr_array_add (texts, json_to_string (v, FALSE));
    }
  if (texts->len == 0)
    return fail (error, path, "no value of '%s' fits the schema's type", en ? "enum" : "const"), -1;
  return add_literals (c, (const char *const *) texts->pdata, texts->len);
}

static const char *
implied_type (JsonObject *o)
{
  if (get (o, "properties") || get (o, "required") || get (o, "additionalProperties"))
    return "object";
  if (get (o, "items") || get (o, "minItems") || get (o, "maxItems"))
    return "array";
  if (get (o, "minLength") || get (o, "maxLength"))
    return "string";
  if (get (o, "minimum") || get (o, "maximum"))
    return "number";
  return NULL;
}

static int
compile_any_of (Compiler *c, JsonObject *o, const char *path, guint depth, GError **error)
{
  JsonNode *list = get (o, "anyOf");
  g_autoptr (GArray) branches = g_array_new (FALSE, FALSE, sizeof (int));
  for (const char *const *k = constraints; *k; k++)
    if (strcmp (*k, "anyOf") != 0 && get (o, *k))
      return fail (error, path, "'%s' beside 'anyOf' is not supported (move it into the "
                   "branches)", *k), -1;
  if (!JSON_NODE_HOLDS_ARRAY (list) || json_array_get_length (json_node_get_array (list)) == 0)
    return fail (error, path, "'%s' must be a non-empty array of schemas", "anyOf"), -1;
  for (guint i = 0; i < json_array_get_length (json_node_get_array (list)); i++)
    {
      g_autofree char *sub = g_strdup_printf ("%s.anyOf[%u]", path, i);
      int b = compile (c, json_array_get_element (json_node_get_array (list), i), sub, NULL,
                       depth + 1, error);
      if (b < 0)
        return -1;
      g_array_append_val (branches, b);
    }
  return make_any_of (c, (const int *) branches->data, branches->len, path, error);
}

/* type as a list: one branch per type. */
static int
compile_type_list (Compiler *c, JsonNode *n, JsonArray *types, const char *path, guint depth,
                   GError **error)
{
  g_autoptr (GArray) branches = g_array_new (FALSE, FALSE, sizeof (int));
  for (guint i = 0; i < json_array_get_length (types); i++)
    {
      JsonNode *t = json_array_get_element (types, i);
      if (!JSON_NODE_HOLDS_VALUE (t) || json_node_get_value_type (t) != G_TYPE_STRING)
        return fail (error, path, "'%s' must be a string or a list of strings", "type"), -1;
      int b = compile (c, n, path, json_node_get_string (t), depth, error);
      if (b < 0)
        return -1;
      g_array_append_val (branches, b);
    }
  if (branches->len == 0)
    return fail (error, path, "'%s' is an empty list", "type"), -1;
  return make_any_of (c, (const int *) branches->data, branches->len, path, error);
}

static int
compile (Compiler *c, JsonNode *n, const char *path, const char *type, guint depth,
         GError **error)
{
  if (depth > MAX_SCHEMA_DEPTH)
    return fail (error, path, "the schema nests deeper than 32 levels"), -1;
  /* anyOf's table keeps node indices in 16 bits. */
  if (c->s->nodes->len > MAX_SCHEMA_NODES)
    return fail (error, path, "the schema has more than %d parts", MAX_SCHEMA_NODES), -1;
  if (JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_BOOLEAN
      && json_node_get_boolean (n))
    return any_node (c);
  if (!JSON_NODE_HOLDS_OBJECT (n))
    return fail (error, path, "a schema must be an object"), -1;
  JsonObject *o = json_node_get_object (n);
  g_autoptr (GList) keys = json_object_get_members (o);
  for (GList *l = keys; l; l = l->next)
    if (!g_strv_contains (annotations, l->data) && !g_strv_contains (constraints, l->data))
      return fail (error, path, "the JSON Schema keyword '%s' is not supported", (const char *) l->data), -1;
  if (get (o, "anyOf"))
    return compile_any_of (c, o, path, depth, error);
  JsonNode *t = get (o, "type");
  if (type == NULL && t && JSON_NODE_HOLDS_ARRAY (t))
    return compile_type_list (c, n, json_node_get_array (t), path, depth, error);
  if (type == NULL && t)
    {
      if (!JSON_NODE_HOLDS_VALUE (t) || json_node_get_value_type (t) != G_TYPE_STRING)
        return fail (error, path, "'%s' must be a string or a list of strings", "type"), -1;
      type = json_node_get_string (t);
    }
  if (get (o, "enum") || get (o, "const"))
    return compile_literals (c, o, type, path, error);
  if (type == NULL)
    type = implied_type (o);
  return type ? compile_typed (c, o, type, path, depth, error) : any_node (c);
}

BwJsonSchema *
bw_json_schema_compile (JsonNode *schema, GError **error)
{
  g_autoptr (BwJsonSchema) s = g_new0 (BwJsonSchema, 1);
  Compiler c = { s, -1 };
  s->nodes = g_array_new (FALSE, FALSE, sizeof (BwJsonNode));
  s->props = g_array_new (FALSE, FALSE, sizeof (BwJsonProp));
  g_array_set_clear_func (s->props, prop_clear);
  s->literals = g_ptr_array_new_with_free_func (g_free);
  if (schema == NULL)
    {
      g_autoptr (JsonNode) object = json_from_string ("{\"type\": \"object\"}", NULL);
      s->root = compile (&c, object, "$", NULL, 0, error);
    }
  else
    s->root = compile (&c, schema, "$", NULL, 0, error);
  return s->root >= 0 ? g_steal_pointer (&s) : NULL;
}

void
bw_json_schema_free (BwJsonSchema *s)
{
  if (s == NULL)
    return;
  if (s->nodes)
    g_array_unref (s->nodes);
  if (s->props)
    g_array_unref (s->props);
  if (s->literals)
    g_ptr_array_unref (s->literals);
  g_free (s);
}

BurrowJsonSchema *
burrow_json_schema_new (const char *schema_json, GError **error)
{
  if (schema_json == NULL)
    return bw_json_schema_compile (NULL, error);
  g_autoptr (GError) local = NULL;
  g_autoptr (JsonNode) root = json_from_string (schema_json, &local);
  if (root == NULL)
    {
      g_set_error (error, BURROW_ENGINE_ERROR, BURROW_ENGINE_ERROR_INVALID_INPUT,
                   "the JSON schema does not parse: %s",
                   local ? local->message : "it is empty");
      return NULL;
    }
  return bw_json_schema_compile (root, error);
}

void
burrow_json_schema_free (BurrowJsonSchema *schema)
{
  bw_json_schema_free (schema);
}
