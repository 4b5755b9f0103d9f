/* The JSON Schema subset that constrained decoding enforces, compiled into a flat table of
 * nodes (json-matcher.h walks it byte by byte). The subset is the one llama.cpp and vLLM
 * enforce: type (one or a list), properties, required, additionalProperties, enum, const,
 * items, minItems/maxItems, nested objects and arrays, anyOf, minLength/maxLength,
 * minimum/maximum. Annotations (title, description, default, examples, $schema, $id,
 * $comment) are accepted; any other keyword fails the compile, naming it and where it is.
 *
 * Objects with properties and no additionalProperties allow no other keys (the output still
 * validates; llama.cpp does the same). anyOf branches must start with different bytes
 * (different JSON types, or enum/const values), so a reply never has to take back a choice. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define BW_JSON_MAX_PROPS 64     /* properties of one object; literals of one enum */

typedef enum {
  BW_JSON_OBJECT,
  BW_JSON_ARRAY,
  BW_JSON_STRING,
  BW_JSON_NUMBER,
  BW_JSON_LITERALS,   /* enum, const, true/false, null: the values' compact texts */
  BW_JSON_ANY_OF,     /* a branch per first byte */
} BwJsonKind;

typedef struct {
  BwJsonKind kind;
  gboolean integer;          /* NUMBER: digits only */
  gboolean ranged;           /* NUMBER: minimum or maximum set (then no exponent) */
  double minimum, maximum;   /* NUMBER */
  guint min_count, max_count;/* STRING: characters; ARRAY: items (G_MAXUINT: no limit) */
  guint first, n;            /* OBJECT: props[first..+n); LITERALS: literals[first..+n) */
  guint64 required;          /* OBJECT: bit i for props[first + i] */
  int additional;            /* OBJECT: the node of other keys' values, -1: none allowed */
  int items;                 /* ARRAY: the node of every item */
  gint16 branch[256];        /* ANY_OF: the node a value starting with that byte takes, -1 */
  guint min_bytes;           /* the shortest text of a value */
} BwJsonNode;

typedef struct {
  char *key;                 /* the name as JSON writes it inside quotes */
  guint key_len;
  int node;
} BwJsonProp;

/* BurrowJsonSchema in the public header. */
typedef struct _BurrowJsonSchema BwJsonSchema;
struct _BurrowJsonSchema {
  GArray *nodes;             /* BwJsonNode */
  GArray *props;             /* BwJsonProp */
  GPtrArray *literals;       /* char *: compact JSON texts */
  int root;
};

/* schema NULL: any JSON object (OpenAI's json_object mode). Fails with
 * BURROW_ENGINE_ERROR_INVALID_INPUT naming the keyword and its path ("$.properties.a"). */
BwJsonSchema *bw_json_schema_compile (JsonNode *schema, GError **error);
void bw_json_schema_free (BwJsonSchema *schema);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwJsonSchema, bw_json_schema_free)

static inline const BwJsonNode *
bw_json_schema_node (const BwJsonSchema *s, int i)
{
  return &g_array_index (s->nodes, BwJsonNode, i);
}

static inline const BwJsonProp *
bw_json_schema_prop (const BwJsonSchema *s, guint i)
{
  return &g_array_index (s->props, BwJsonProp, i);
}

G_END_DECLS
