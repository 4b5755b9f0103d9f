/* Typed reads of GGUF metadata values (see gguf-value.h). */
#include "core/gguf-value.h"

#include <math.h>
#include <string.h>

#include "core/checkpoint.h"

static const char *const type_names[BW_GGUF_VALUE_TYPE_COUNT] = {
  "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string",
  "array", "uint64", "int64", "float64",
};

static const guint8 scalar_sizes[BW_GGUF_VALUE_TYPE_COUNT] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0,
                                                               8, 8, 8 };

const char *
bw_gguf_value_type_name (guint32 type)
{
  return type < BW_GGUF_VALUE_TYPE_COUNT ? type_names[type] : "unknown";
}

gsize
bw_gguf_scalar_size (BwGgufValueType type)
{
  return (guint32) type < BW_GGUF_VALUE_TYPE_COUNT ? scalar_sizes[type] : 0;
}

static gboolean
is_unsigned (BwGgufValueType t)
{
  return t == BW_GGUF_U8 || t == BW_GGUF_U16 || t == BW_GGUF_U32 || t == BW_GGUF_U64;
}

static gboolean
is_signed (BwGgufValueType t)
{
  return t == BW_GGUF_I8 || t == BW_GGUF_I16 || t == BW_GGUF_I32 || t == BW_GGUF_I64;
}

static gboolean
wrong_type (const BwGgufValue *v, const char *file, const char *key, const char *wanted,
            GError **error)
{
  if (v == NULL)
    g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                 "%s: metadata key '%s' is missing", file, key);
  else
    g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                 "%s: metadata key '%s' has type %s, expected %s", file, key,
                 bw_gguf_value_type_name (v->type), wanted);
  return FALSE;
}

gboolean
bw_gguf_value_int (const BwGgufValue *v, const char *file, const char *key, gint64 min,
                   gint64 max, gint64 *out, GError **error)
{
  if (v == NULL || (!is_unsigned (v->type) && !is_signed (v->type)))
    return wrong_type (v, file, key, "an integer", error);
  if (is_unsigned (v->type) ? (v->u > (guint64) G_MAXINT64 || (gint64) v->u < min
                               || (gint64) v->u > max)
                            : (v->i < min || v->i > max))
    {
      g_autofree char *text = is_unsigned (v->type)
                                ? g_strdup_printf ("%" G_GUINT64_FORMAT, v->u)
                                : g_strdup_printf ("%" G_GINT64_FORMAT, v->i);
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: metadata key '%s' is %s, outside [%" G_GINT64_FORMAT ", %"
                   G_GINT64_FORMAT "]", file, key, text, min, max);
      return FALSE;
    }
  *out = is_unsigned (v->type) ? (gint64) v->u : v->i;
  return TRUE;
}

gboolean
bw_gguf_value_float (const BwGgufValue *v, const char *file, const char *key, double *out,
                     GError **error)
{
  if (v != NULL && (v->type == BW_GGUF_F32 || v->type == BW_GGUF_F64))
    *out = v->f;
  else if (v != NULL && is_unsigned (v->type))
    *out = (double) v->u;
  else if (v != NULL && is_signed (v->type))
    *out = (double) v->i;
  else
    return wrong_type (v, file, key, "a number", error);
  return TRUE;
}

gboolean
bw_gguf_value_bool (const BwGgufValue *v, const char *file, const char *key, gboolean *out,
                    GError **error)
{
  if (v == NULL || v->type != BW_GGUF_BOOL)
    return wrong_type (v, file, key, "a bool", error);
  *out = v->u != 0;
  return TRUE;
}

const char *
bw_gguf_value_string (const BwGgufValue *v, const char *file, const char *key,
                      GError **error)
{
  if (v == NULL || v->type != BW_GGUF_STRING)
    {
      wrong_type (v, file, key, "a string", error);
      return NULL;
    }
  return v->str;
}

gboolean
bw_gguf_value_array (const BwGgufValue *v, const char *file, const char *key,
                     BwGgufValueType elem_type, GError **error)
{
  if (v == NULL || v->type != BW_GGUF_ARRAY)
    return wrong_type (v, file, key, "an array", error);
  if (elem_type != BW_GGUF_VALUE_TYPE_COUNT && v->elem_type != elem_type && v->count > 0)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                   "%s: metadata key '%s' is an array of %s, expected an array of %s", file,
                   key, bw_gguf_value_type_name (v->elem_type),
                   bw_gguf_value_type_name (elem_type));
      return FALSE;
    }
  return TRUE;
}

/* Little-endian loads of unaligned bytes. */
static guint64
load_le (const guint8 *p, gsize n)
{
  guint64 x = 0;
  for (gsize k = n; k-- > 0;)
    x = (x << 8) | p[k];
  return x;
}

gint64
bw_gguf_array_int (const BwGgufValue *v, guint64 i)
{
  g_return_val_if_fail (v->type == BW_GGUF_ARRAY && i < v->count && v->data != NULL, 0);
  gsize size = bw_gguf_scalar_size (v->elem_type);
  guint64 x = load_le (v->data + i * size, size);
  switch (v->elem_type)
    {
    case BW_GGUF_I8: return (gint8) x;
    case BW_GGUF_I16: return (gint16) x;
    case BW_GGUF_I32: return (gint32) x;
    case BW_GGUF_I64: return (gint64) x;
    case BW_GGUF_F32:
    case BW_GGUF_F64:
      {
        /* saturate: a float out of range (or NaN) has no integer value */
        double f = bw_gguf_array_float (v, i);
        if (!(f > -9.2e18))
          return isnan (f) ? 0 : G_MININT64;
        return f < 9.2e18 ? (gint64) f : G_MAXINT64;
      }
    default: return (gint64) x;
    }
}

double
bw_gguf_array_float (const BwGgufValue *v, guint64 i)
{
  g_return_val_if_fail (v->type == BW_GGUF_ARRAY && i < v->count && v->data != NULL, 0);
  if (v->elem_type == BW_GGUF_F32)
    {
      guint32 bits = (guint32) load_le (v->data + i * 4, 4);
      float f;
      memcpy (&f, &bits, sizeof f);
      return f;
    }
  if (v->elem_type == BW_GGUF_F64)
    {
      guint64 bits = load_le (v->data + i * 8, 8);
      double d;
      memcpy (&d, &bits, sizeof d);
      return d;
    }
  return (double) bw_gguf_array_int (v, i);
}

const char *
bw_gguf_array_string (const BwGgufValue *v, guint64 i, gsize *len)
{
  g_return_val_if_fail (v->type == BW_GGUF_ARRAY && i < v->count && v->strings != NULL,
                        NULL);
  *len = (gsize) load_le (v->strings[i], 8);
  return (const char *) v->strings[i] + 8;
}
