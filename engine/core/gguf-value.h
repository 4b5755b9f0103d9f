/* GGUF metadata values: the thirteen value types, arrays (nested ones too) and the typed
 * reads a caller makes of them, each failing with a GError that names the file and key. */
#pragma once

#include <glib.h>
#include <stdint.h>

typedef enum {
  BW_GGUF_U8 = 0,
  BW_GGUF_I8 = 1,
  BW_GGUF_U16 = 2,
  BW_GGUF_I16 = 3,
  BW_GGUF_U32 = 4,
  BW_GGUF_I32 = 5,
  BW_GGUF_F32 = 6,
  BW_GGUF_BOOL = 7,
  BW_GGUF_STRING = 8,
  BW_GGUF_ARRAY = 9,
  BW_GGUF_U64 = 10,
  BW_GGUF_I64 = 11,
  BW_GGUF_F64 = 12,
  BW_GGUF_VALUE_TYPE_COUNT = 13,
} BwGgufValueType;

typedef struct BwGgufValue BwGgufValue;

/* One value. Scalars are decoded; a string is NUL-terminated (its bytes may hold a NUL;
 * str_len is the stored length); an array of scalars points at its little-endian elements
 * in the parsed header, an array of strings at each element's (length, bytes) there, an
 * array of arrays has one BwGgufValue per item. Everything is owned by the parsed file. */
struct BwGgufValue {
  BwGgufValueType type;
  union {
    guint64 u;             /* U8 U16 U32 U64, BOOL (0 or 1) */
    gint64 i;              /* I8 I16 I32 I64 */
    double f;              /* F32 F64 */
  };
  char *str;               /* STRING */
  guint64 str_len;
  BwGgufValueType elem_type;  /* ARRAY */
  guint64 count;
  const guint8 *data;      /* ARRAY of scalars: count elements of elem_type */
  const guint8 **strings;  /* ARRAY of STRING: count pointers at each element's length */
  BwGgufValue *items;      /* ARRAY of ARRAY */
};

/* The value type's name in words: "uint32", "string", "array"... ("unknown" past the end). */
const char *bw_gguf_value_type_name (guint32 type);

/* Bytes of one scalar of this type; 0 for STRING, ARRAY and unknown types. */
gsize bw_gguf_scalar_size (BwGgufValueType type);

/* The typed reads. `file` and `key` name the value in errors (BW_CHECKPOINT_ERROR_CONFIG).
 * An integer read takes any integer type and checks [min, max]; a float read takes F32,
 * F64 or an integer; a bool read takes BOOL only. */
gboolean bw_gguf_value_int (const BwGgufValue *v, const char *file, const char *key,
                            gint64 min, gint64 max, gint64 *out, GError **error);
gboolean bw_gguf_value_float (const BwGgufValue *v, const char *file, const char *key,
                              double *out, GError **error);
gboolean bw_gguf_value_bool (const BwGgufValue *v, const char *file, const char *key,
                             gboolean *out, GError **error);
/* The string, owned by the value. */
const char *bw_gguf_value_string (const BwGgufValue *v, const char *file, const char *key,
                                  GError **error);
/* Checks that v is an array whose elements have elem_type (BW_GGUF_VALUE_TYPE_COUNT: any). */
gboolean bw_gguf_value_array (const BwGgufValue *v, const char *file, const char *key,
                              BwGgufValueType elem_type, GError **error);

/* Array elements, i < v->count (no check of i beyond a g_return_val_if_fail). */
gint64 bw_gguf_array_int (const BwGgufValue *v, guint64 i);       /* integer and BOOL arrays */
double bw_gguf_array_float (const BwGgufValue *v, guint64 i);     /* F32/F64 (and integers) */
const char *bw_gguf_array_string (const BwGgufValue *v, guint64 i, gsize *len); /* not
                                                                    * NUL-terminated */
