/* GGUF header parsing and validation (see gguf-file.h). */
#include "core/gguf-file.h"

#include <stdlib.h>
#include <string.h>

#include "core/checkpoint.h"

#define GGUF_MAGIC "GGUF"
#define MAX_KEY_LEN 65535
/* Arrays of arrays nest at most this deep (real files use none). */
#define MAX_ARRAY_DEPTH 4
#define MAX_ALIGNMENT ((guint64) 1 << 30)
/* Arrays inside arrays, over the whole file: each costs a BwGgufValue (about 80 bytes) for
 * 12 bytes of file, so they get a budget of their own. */
#define MAX_NESTED_ARRAYS ((guint64) 1 << 20)

/* The bytes parsed so far: reads check against both the buffer and the file's size. */
typedef struct {
  const char *file;
  const guint8 *p;
  gsize len;
  guint64 file_size;
  gsize pos;
  guint64 *need_len;
  guint64 nested_arrays;    /* arrays of arrays' items so far */
} Cursor;

static gboolean
fail (const Cursor *c, GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (const Cursor *c, GError **error, int code, const char *fmt, ...)
{
  g_autofree char *what = NULL;
  va_list ap;

  va_start (ap, fmt);
  what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, BW_CHECKPOINT_ERROR, code, "%s: %s", c->file, what);
  return FALSE;
}

/* Makes n bytes at the cursor available: a short buffer asks for more, the end of the file
 * is a truncated header. `what` says what was being read. */
static gboolean
need (Cursor *c, guint64 n, const char *what, GError **error)
{
  if (n <= c->len - c->pos)
    return TRUE;
  if ((guint64) c->pos + n <= c->file_size && c->len < c->file_size)
    {
      guint64 want = MAX ((guint64) c->len * 2, (guint64) c->pos + n);
      *c->need_len = MIN (want, c->file_size);
      return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT,
                   "header continues past the %" G_GSIZE_FORMAT " bytes read", c->len);
    }
  return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT,
               "file is truncated: it ends inside its header, at byte %" G_GSIZE_FORMAT
               " while reading %s (the file has %" G_GUINT64_FORMAT " bytes)",
               c->pos, what, c->file_size);
}

static guint64
load_le (const guint8 *p, gsize n)
{
  guint64 x = 0;
  for (gsize k = n; k-- > 0;)
    x = (x << 8) | p[k];
  return x;
}

static gboolean
read_uint (Cursor *c, gsize n, const char *what, guint64 *out, GError **error)
{
  if (!need (c, n, what, error))
    return FALSE;
  *out = load_le (c->p + c->pos, n);
  c->pos += n;
  return TRUE;
}

/* Bytes left in the file after the cursor: what bounds every count before allocation. */
static guint64
left_in_file (const Cursor *c)
{
  return c->file_size - c->pos;
}

/* A string's length and bytes; *s points into the buffer. */
static gboolean
read_string (Cursor *c, const char *what, const guint8 **s, guint64 *len, GError **error)
{
  if (!read_uint (c, 8, what, len, error))
    return FALSE;
  if (*len > left_in_file (c))
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT,
                 "%s claims %" G_GUINT64_FORMAT " bytes, more than the %" G_GUINT64_FORMAT
                 " left in the file (truncated or damaged file)", what, *len,
                 left_in_file (c));
  if (!need (c, *len, what, error))
    return FALSE;
  *s = c->p + c->pos;
  c->pos += (gsize) *len;
  return TRUE;
}

/* A key or tensor name: non-empty, at most max bytes, UTF-8 without NUL. */
static char *
read_name (Cursor *c, const char *what, guint64 max, GError **error)
{
  const guint8 *s;
  guint64 len;

  if (!read_string (c, what, &s, &len, error))
    return NULL;
  if (len == 0 || len > max)
    {
      fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "%s is %" G_GUINT64_FORMAT " bytes long "
            "(it must have 1 to %" G_GUINT64_FORMAT ")", what, len, max);
      return NULL;
    }
  if (memchr (s, '\0', (gsize) len) != NULL || !g_utf8_validate ((const char *) s, (gssize) len,
                                                                  NULL))
    {
      fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "%s is not valid UTF-8 text", what);
      return NULL;
    }
  return g_strndup ((const char *) s, (gsize) len);
}

static gboolean read_value (Cursor *c, const char *key, guint32 type, int depth,
                            BwGgufValue *v, GError **error);

static void
value_clear (BwGgufValue *v)
{
  if (v->type == BW_GGUF_ARRAY && v->items != NULL)
    for (guint64 i = 0; i < v->count; i++)
      value_clear (&v->items[i]);
  g_free (v->items);
  g_free (v->strings);
  g_free (v->str);
}

static gboolean
read_array (Cursor *c, const char *key, int depth, BwGgufValue *v, GError **error)
{
  guint64 elem_type, count, min_size;

  if (!read_uint (c, 4, "an array's element type", &elem_type, error)
      || !read_uint (c, 8, "an array's length", &count, error))
    return FALSE;
  if (elem_type >= BW_GGUF_VALUE_TYPE_COUNT)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' is an array of "
                 "unknown value type %" G_GUINT64_FORMAT, key, elem_type);
  if (elem_type == BW_GGUF_ARRAY && depth >= MAX_ARRAY_DEPTH)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' nests arrays "
                 "deeper than %d levels", key, MAX_ARRAY_DEPTH);
  v->elem_type = (BwGgufValueType) elem_type;
  /* every element takes at least this many bytes of the file */
  min_size = elem_type == BW_GGUF_STRING ? 8 : elem_type == BW_GGUF_ARRAY ? 12
             : bw_gguf_scalar_size (v->elem_type);
  if (count > left_in_file (c) / min_size)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' claims %"
                 G_GUINT64_FORMAT " array elements, more than the file's %" G_GUINT64_FORMAT
                 " remaining bytes can hold (truncated or damaged file)", key, count,
                 left_in_file (c));
  v->count = count;
  if (elem_type == BW_GGUF_STRING)
    {
      v->strings = g_new (const guint8 *, MAX (count, 1));
      for (guint64 i = 0; i < count; i++)
        {
          const guint8 *s;
          guint64 len;
          v->strings[i] = c->p + c->pos;
          if (!read_string (c, "a string in an array", &s, &len, error))
            return FALSE;
        }
      return TRUE;
    }
  if (elem_type == BW_GGUF_ARRAY)
    {
      if (count > MAX_NESTED_ARRAYS - c->nested_arrays)
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' holds more than "
                     "%" G_GUINT64_FORMAT " arrays inside arrays", key, MAX_NESTED_ARRAYS);
      c->nested_arrays += count;
      v->items = g_new0 (BwGgufValue, MAX (count, 1));
      for (guint64 i = 0; i < count; i++)
        {
          v->items[i].type = BW_GGUF_ARRAY;
          if (!read_array (c, key, depth + 1, &v->items[i], error))
            return FALSE;
        }
      return TRUE;
    }
  if (!need (c, count * min_size, "an array's elements", error))
    return FALSE;
  v->data = c->p + c->pos;
  c->pos += (gsize) (count * min_size);
  return TRUE;
}

static gboolean
read_value (Cursor *c, const char *key, guint32 type, int depth, BwGgufValue *v,
            GError **error)
{
  const guint8 *s;
  guint64 x, len;

  v->type = (BwGgufValueType) type;
  switch (v->type)
    {
    case BW_GGUF_STRING:
      if (!read_string (c, "a string value", &s, &len, error))
        return FALSE;
      v->str = g_strndup ((const char *) s, (gsize) len);
      v->str_len = len;
      return TRUE;
    case BW_GGUF_ARRAY:
      return read_array (c, key, depth, v, error);
    case BW_GGUF_U8: case BW_GGUF_U16: case BW_GGUF_U32: case BW_GGUF_U64:
      return read_uint (c, bw_gguf_scalar_size (v->type), "a value", &v->u, error);
    case BW_GGUF_I8: case BW_GGUF_I16: case BW_GGUF_I32: case BW_GGUF_I64:
      {
        gsize n = bw_gguf_scalar_size (v->type);
        if (!read_uint (c, n, "a value", &x, error))
          return FALSE;
        /* sign-extend from n bytes */
        v->i = n == 8 ? (gint64) x : (gint64) (x ^ ((guint64) 1 << (8 * n - 1)))
                                       - ((gint64) 1 << (8 * n - 1));
        return TRUE;
      }
    case BW_GGUF_BOOL:
      if (!read_uint (c, 1, "a bool value", &x, error))
        return FALSE;
      if (x > 1)
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' is a bool "
                     "stored as %" G_GUINT64_FORMAT " (must be 0 or 1)", key, x);
      v->u = x;
      return TRUE;
    case BW_GGUF_F32:
      {
        float f;
        guint32 bits;
        if (!read_uint (c, 4, "a value", &x, error))
          return FALSE;
        bits = (guint32) x;
        memcpy (&f, &bits, sizeof f);
        v->f = f;
        return TRUE;
      }
    case BW_GGUF_F64:
      if (!read_uint (c, 8, "a value", &x, error))
        return FALSE;
      memcpy (&v->f, &x, sizeof v->f);
      return TRUE;
    case BW_GGUF_VALUE_TYPE_COUNT:
    default:
      return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' has unknown "
                   "value type %u", key, type);
    }
}

static gboolean
read_header_start (Cursor *c, BwGgufFile *f, guint64 *n_tensors, guint64 *n_kv,
                   GError **error)
{
  guint64 version;

  if (!need (c, 4, "the magic number", error))
    return FALSE;
  if (memcmp (c->p, GGUF_MAGIC, 4) != 0)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "not a GGUF file (it does not start "
                 "with \"GGUF\")");
  c->pos = 4;
  if (!read_uint (c, 4, "the version", &version, error))
    return FALSE;
  /* a big-endian file's version reads byte-swapped here */
  if (version >= 0x10000 && GUINT32_SWAP_LE_BE ((guint32) version) <= 3)
    return fail (c, error, BW_CHECKPOINT_ERROR_UNSUPPORTED, "is a big-endian GGUF file; "
                 "only little-endian files are supported");
  if (version != 2 && version != 3)
    return fail (c, error, BW_CHECKPOINT_ERROR_UNSUPPORTED, "GGUF version %" G_GUINT64_FORMAT
                 " is not supported (versions 2 and 3 are)", version);
  f->version = (guint32) version;
  if (!read_uint (c, 8, "the tensor count", n_tensors, error)
      || !read_uint (c, 8, "the metadata count", n_kv, error))
    return FALSE;
  /* the smallest tensor info is 25 bytes, the smallest key-value 13 */
  if (*n_tensors > BW_GGUF_MAX_TENSORS || *n_tensors > left_in_file (c) / 25)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "claims %" G_GUINT64_FORMAT " tensors, "
                 "more than the file can describe (at most %d, and 25 bytes each; truncated or "
                 "damaged file)",
                 *n_tensors, BW_GGUF_MAX_TENSORS);
  if (*n_kv > BW_GGUF_MAX_KV || *n_kv > left_in_file (c) / 13)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "claims %" G_GUINT64_FORMAT " metadata "
                 "entries, more than the file can hold (at most %d, and 13 bytes each; truncated or "
                 "damaged file)",
                 *n_kv, BW_GGUF_MAX_KV);
  return TRUE;
}

static gboolean
read_metadata (Cursor *c, BwGgufFile *f, guint64 n_kv, GError **error)
{
  f->kv = g_new0 (BwGgufKv, MAX (n_kv, 1));
  for (guint64 i = 0; i < n_kv; i++)
    {
      BwGgufKv *kv = &f->kv[i];
      g_autofree char *what = g_strdup_printf ("metadata key %" G_GUINT64_FORMAT, i);
      guint64 type;

      kv->key = read_name (c, what, MAX_KEY_LEN, error);
      if (kv->key == NULL)
        return FALSE;
      f->n_kv = i + 1;
      if (g_hash_table_contains (f->kv_by_key, kv->key))
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' appears twice",
                     kv->key);
      if (!read_uint (c, 4, "a value type", &type, error))
        return FALSE;
      if (type >= BW_GGUF_VALUE_TYPE_COUNT)
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "metadata key '%s' has unknown "
                     "value type %" G_GUINT64_FORMAT, kv->key, type);
      if (!read_value (c, kv->key, (guint32) type, 0, &kv->value, error))
        return FALSE;
      g_hash_table_insert (f->kv_by_key, kv->key, &kv->value);
    }
  return TRUE;
}

static gboolean
read_alignment (Cursor *c, BwGgufFile *f, GError **error)
{
  const BwGgufValue *v = bw_gguf_file_lookup (f, "general.alignment");
  gint64 a;

  f->alignment = BW_GGUF_DEFAULT_ALIGNMENT;
  if (v == NULL)
    return TRUE;
  if (!bw_gguf_value_int (v, c->file, "general.alignment", 1, MAX_ALIGNMENT, &a, error))
    return FALSE;
  if ((a & (a - 1)) != 0)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "general.alignment %" G_GINT64_FORMAT
                 " is not a power of two", a);
  f->alignment = (guint32) a;
  return TRUE;
}

/* One tensor info: name, dimensions, type, offset (relative to the data section yet). */
static gboolean
read_tensor_info (Cursor *c, BwGgufFile *f, guint64 i, GError **error)
{
  BwGgufTensor *t = &f->tensors[i];
  g_autofree char *what = g_strdup_printf ("the name of tensor %" G_GUINT64_FORMAT, i);
  guint64 n_dims, type, n = 1;
  char *name = read_name (c, what, BW_GGUF_MAX_NAME, error);

  if (name == NULL)
    return FALSE;
  t->name = name;
  f->n_tensors = i + 1;
  if (!read_uint (c, 4, "a tensor's dimension count", &n_dims, error))
    return FALSE;
  if (n_dims > BW_GGUF_MAX_DIMS)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensor '%s' has %" G_GUINT64_FORMAT
                 " dimensions, more than ggml's %d", name, n_dims, BW_GGUF_MAX_DIMS);
  t->n_dims = (int) n_dims;
  for (int d = 0; d < BW_GGUF_MAX_DIMS; d++)
    {
      guint64 ne = 1;
      if (d < t->n_dims && !read_uint (c, 8, "a tensor's dimension", &ne, error))
        return FALSE;
      if (ne > (guint64) G_MAXINT64 || __builtin_mul_overflow (n, ne, &n)
          || n > (guint64) G_MAXINT64)
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensor '%s' has dimensions whose "
                     "product overflows", name);
      t->ne[d] = (int64_t) ne;
    }
  t->n_elements = n;
  if (!read_uint (c, 4, "a tensor's type", &type, error)
      || !read_uint (c, 8, "a tensor's offset", &t->offset, error))
    return FALSE;
  if (bw_ggml_type_info ((guint32) type) == NULL)
    return fail (c, error, BW_CHECKPOINT_ERROR_UNSUPPORTED, "tensor '%s' has unknown ggml "
                 "type %" G_GUINT64_FORMAT, name, type);
  t->type = (BwGgmlType) type;
  if (t->ne[0] % bw_ggml_type_info (t->type)->block_elements != 0)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensor '%s' has rows of %"
                 G_GINT64_FORMAT " elements, not a whole number of %s blocks of %u", name,
                 t->ne[0], bw_ggml_type_name (t->type),
                 bw_ggml_type_info (t->type)->block_elements);
  if (!bw_ggml_type_bytes (t->type, n, &t->nbytes))
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensor '%s' is too large", name);
  return TRUE;
}

static int
compare_by_offset (gconstpointer a, gconstpointer b)
{
  const BwGgufTensor *x = *(const BwGgufTensor *const *) a, *y = *(const BwGgufTensor *const *) b;
  if (x->offset != y->offset)
    return x->offset < y->offset ? -1 : 1;
  return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

/* Places every tensor in the data section: aligned, inside the file, disjoint. */
static gboolean
place_tensors (Cursor *c, BwGgufFile *f, GError **error)
{
  g_autofree BwGgufTensor **sorted = g_new (BwGgufTensor *, MAX (f->n_tensors, 1));
  guint64 data_size;

  f->data_offset = ((guint64) c->pos + f->alignment - 1) / f->alignment * f->alignment;
  if (f->n_tensors > 0 && f->data_offset > f->file_size)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "file is truncated: its data section "
                 "would start at byte %" G_GUINT64_FORMAT ", past its end", f->data_offset);
  data_size = f->data_offset <= f->file_size ? f->file_size - f->data_offset : 0;
  for (guint64 i = 0; i < f->n_tensors; i++)
    {
      BwGgufTensor *t = &f->tensors[i];
      if (t->offset % f->alignment != 0)
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensor '%s' starts at offset %"
                     G_GUINT64_FORMAT ", not a multiple of the file's alignment %u", t->name,
                     t->offset, f->alignment);
      if (t->offset > data_size || t->nbytes > data_size - t->offset)
        return fail (c, error, BW_CHECKPOINT_ERROR_TRUNCATED, "tensor '%s' (%" G_GUINT64_FORMAT
                     " bytes at offset %" G_GUINT64_FORMAT ") runs past the end of the file's "
                     "%" G_GUINT64_FORMAT "-byte data section (the file may be truncated)",
                     t->name, t->nbytes, t->offset, data_size);
      t->offset += f->data_offset;
      sorted[i] = t;
    }
  qsort (sorted, f->n_tensors, sizeof *sorted, compare_by_offset);
  for (guint64 i = 1; i < f->n_tensors; i++)
    if (sorted[i]->offset < sorted[i - 1]->offset + sorted[i - 1]->nbytes)
      return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensors '%s' and '%s' overlap in "
                   "the data section", sorted[i - 1]->name, sorted[i]->name);
  return TRUE;
}

static gboolean
read_tensors (Cursor *c, BwGgufFile *f, guint64 n_tensors, GError **error)
{
  g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);

  f->tensors = g_new0 (BwGgufTensor, MAX (n_tensors, 1));
  for (guint64 i = 0; i < n_tensors; i++)
    {
      if (!read_tensor_info (c, f, i, error))
        return FALSE;
      if (!g_hash_table_add (names, (gpointer) f->tensors[i].name))
        return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "tensor name '%s' appears twice",
                     f->tensors[i].name);
    }
  if (c->pos > BW_GGUF_MAX_HEADER)
    return fail (c, error, BW_CHECKPOINT_ERROR_FORMAT, "header is %" G_GSIZE_FORMAT " bytes, "
                 "more than the %" G_GUINT64_FORMAT "-byte limit", c->pos, BW_GGUF_MAX_HEADER);
  return place_tensors (c, f, error);
}

BwGgufFile *
bw_gguf_file_parse (const char *file, GBytes *head, guint64 file_size, guint64 *need_len,
                    GError **error)
{
  g_autoptr (BwGgufFile) f = g_new0 (BwGgufFile, 1);
  guint64 n_tensors = 0, n_kv = 0, unused = 0;
  Cursor c = { 0 };

  c.file = file;
  c.p = g_bytes_get_data (head, &c.len);
  c.file_size = file_size;
  c.need_len = need_len != NULL ? need_len : &unused;
  *c.need_len = 0;
  if (c.len > file_size)
    c.len = (gsize) file_size;
  f->file = g_strdup (file);
  f->file_size = file_size;
  f->head = g_bytes_ref (head);
  f->kv_by_key = g_hash_table_new (g_str_hash, g_str_equal);

  if (!read_header_start (&c, f, &n_tensors, &n_kv, error)
      || !read_metadata (&c, f, n_kv, error)
      || !read_alignment (&c, f, error)
      || !read_tensors (&c, f, n_tensors, error))
    return NULL;
  return g_steal_pointer (&f);
}

void
bw_gguf_file_free (BwGgufFile *f)
{
  if (f == NULL)
    return;
  for (guint64 i = 0; i < f->n_kv; i++)
    {
      g_free (f->kv[i].key);
      value_clear (&f->kv[i].value);
    }
  for (guint64 i = 0; i < f->n_tensors; i++)
    g_free ((char *) f->tensors[i].name);
  g_free (f->kv);
  g_free (f->tensors);
  g_clear_pointer (&f->kv_by_key, g_hash_table_unref);
  g_clear_pointer (&f->head, g_bytes_unref);
  g_free (f->file);
  g_free (f);
}

const BwGgufValue *
bw_gguf_file_lookup (const BwGgufFile *f, const char *key)
{
  return g_hash_table_lookup (f->kv_by_key, key);
}
