/* Fuzz target: a whole GGUF file in memory through the header parser, then every accepted
 * value and tensor read back the way callers read them. */
#include <stdlib.h>
#include <string.h>

#include "core/gguf-file.h"
#include "fuzz.h"

const char bw_fuzz_label[] = "fuzz.gguf";

/* Touches every byte an accepted value points at, so a pointer past the buffer shows. */
static guint64
walk_value (const BwGgufValue *v, const guint8 *data, size_t size)
{
  guint64 sum = 0;
  gsize len;

  switch (v->type)
    {
    case BW_GGUF_STRING:
      if (v->str == NULL || strlen (v->str) > v->str_len)
        abort ();
      return v->str_len;
    case BW_GGUF_ARRAY:
      for (guint64 i = 0; i < v->count; i++)
        {
          if (v->elem_type == BW_GGUF_ARRAY)
            sum += walk_value (&v->items[i], data, size);
          else if (v->elem_type == BW_GGUF_STRING)
            {
              const char *s = bw_gguf_array_string (v, i, &len);
              if ((const guint8 *) s < data || (const guint8 *) s + len > data + size)
                abort ();
              sum += len ? (guint8) s[len - 1] : 0;
            }
          else
            sum += (guint64) bw_gguf_array_int (v, i) + (bw_gguf_array_float (v, i) != 0.0);
        }
      return sum;
    case BW_GGUF_BOOL:
      if (v->u > 1)
        abort ();
      return v->u;
    default:
      return v->u;
    }
}

static int
by_offset (const void *a, const void *b)
{
  const BwGgufTensor *x = *(const BwGgufTensor *const *) a, *y = *(const BwGgufTensor *const *) b;
  /* an empty tensor may share its offset with the next one */
  if (x->offset != y->offset)
    return (x->offset > y->offset) - (x->offset < y->offset);
  return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

/* Accepted tensors lie inside the file after the header, aligned, sized by their type,
 * disjoint; names are unique. */
static void
check_tensors (const BwGgufFile *f)
{
  g_autofree const BwGgufTensor **sorted = g_new (const BwGgufTensor *, f->n_tensors + 1);
  g_autoptr (GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  guint64 bytes;

  if (f->alignment == 0 || (f->alignment & (f->alignment - 1)) != 0)
    abort ();
  for (guint64 i = 0; i < f->n_tensors; i++)
    {
      const BwGgufTensor *t = &f->tensors[i];
      if (t->offset < f->data_offset || (t->offset - f->data_offset) % f->alignment != 0
          || t->offset > f->file_size || t->nbytes > f->file_size - t->offset
          || !bw_ggml_type_bytes (t->type, t->n_elements, &bytes) || bytes != t->nbytes
          || t->n_dims < 0 || t->n_dims > BW_GGUF_MAX_DIMS || strlen (t->name) == 0
          || strlen (t->name) > BW_GGUF_MAX_NAME || !g_hash_table_add (names, (char *) t->name))
        abort ();
      sorted[i] = t;
    }
  qsort (sorted, f->n_tensors, sizeof *sorted, by_offset);
  for (guint64 i = 1; i < f->n_tensors; i++)
    if (sorted[i]->offset < sorted[i - 1]->offset + sorted[i - 1]->nbytes)
      abort ();
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  g_autoptr (GBytes) head = g_bytes_new_static (data, size);
  g_autoptr (BwGgufFile) f = bw_gguf_file_parse (bw_fuzz_label, head, size, NULL, error);
  volatile guint64 sink = 0;

  if (f == NULL)
    return FALSE;
  for (guint64 i = 0; i < f->n_kv; i++)
    {
      if (bw_gguf_file_lookup (f, f->kv[i].key) != &f->kv[i].value)
        abort ();
      sink += walk_value (&f->kv[i].value, data, size);
    }
  check_tensors (f);
  (void) sink;
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
