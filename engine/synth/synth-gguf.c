/* Writing synthetic GGUF files (synth-gguf.h). */
#include "synth/synth-gguf.h"

#include <string.h>

#include "core/atomic-file.h"
#include "core/gguf-types.h"
#include "core/gguf-value.h"
#include "synth/synth-ggml.h"

#define ALIGNMENT 32
#define CHUNK_BYTES ((gsize) 16 << 20)

void
bw_synth_gguf_init (BwSynthGguf *g)
{
  g->kv = g_byte_array_new ();
  g->n_kv = 0;
  g->tensors = g_array_new (FALSE, TRUE, sizeof (BwSynthGgufTensor));
}

void
bw_synth_gguf_clear (BwSynthGguf *g)
{
  if (g->tensors != NULL)
    {
      for (guint i = 0; i < g->tensors->len; i++)
        g_free (g_array_index (g->tensors, BwSynthGgufTensor, i).t.name);
      g_clear_pointer (&g->tensors, g_array_unref);
    }
  g_clear_pointer (&g->kv, g_byte_array_unref);
}

/* GGUF is little-endian, as are the hosts the engine builds for. */
static void
put (GByteArray *b, guint64 v, guint n)
{
  g_byte_array_append (b, (const guint8 *) &v, n);
}

static void
put_str (GByteArray *b, const char *s)
{
  gsize n = strlen (s);
  put (b, n, 8);
  g_byte_array_append (b, (const guint8 *) s, (guint) n);
}

static void
key (BwSynthGguf *g, const char *k, BwGgufValueType type)
{
  put_str (g->kv, k);
  put (g->kv, type, 4);
  g->n_kv++;
}

void
bw_synth_gguf_u32 (BwSynthGguf *g, const char *k, guint32 v)
{
  key (g, k, BW_GGUF_U32);
  put (g->kv, v, 4);
}

void
bw_synth_gguf_f32 (BwSynthGguf *g, const char *k, float v)
{
  guint32 bits;
  memcpy (&bits, &v, 4);
  key (g, k, BW_GGUF_F32);
  put (g->kv, bits, 4);
}

void
bw_synth_gguf_bool (BwSynthGguf *g, const char *k, gboolean v)
{
  key (g, k, BW_GGUF_BOOL);
  put (g->kv, v ? 1 : 0, 1);
}

void
bw_synth_gguf_string (BwSynthGguf *g, const char *k, const char *v)
{
  key (g, k, BW_GGUF_STRING);
  put_str (g->kv, v);
}

void
bw_synth_gguf_strings (BwSynthGguf *g, const char *k, const char *const *v, guint64 n)
{
  key (g, k, BW_GGUF_ARRAY);
  put (g->kv, BW_GGUF_STRING, 4);
  put (g->kv, n, 8);
  for (guint64 i = 0; i < n; i++)
    put_str (g->kv, v[i]);
}

void
bw_synth_gguf_i32s (BwSynthGguf *g, const char *k, const gint32 *v, guint64 n)
{
  key (g, k, BW_GGUF_ARRAY);
  put (g->kv, BW_GGUF_I32, 4);
  put (g->kv, n, 8);
  g_byte_array_append (g->kv, (const guint8 *) v, (guint) (n * 4));
}

void
bw_synth_gguf_add (BwSynthGguf *g, int type, BwSynthInit init, float a, int n_dims,
                   const int64_t *ne, const char *fmt, ...)
{
  BwSynthGgufTensor t = { { 0 }, type };
  va_list ap;

  va_start (ap, fmt);
  t.t.name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  t.t.dtype = BW_DTYPE_F32;
  t.t.init = init;
  t.t.a = a;
  t.t.n_dims = n_dims;
  memcpy (t.t.shape, ne, (gsize) n_dims * sizeof *ne);
  g_array_append_val (g->tensors, t);
}

guint64
bw_synth_gguf_tensor_bytes (const BwSynthGgufTensor *t)
{
  guint64 n = 1, bytes = 0;
  for (int d = 0; d < t->t.n_dims; d++)
    n *= (guint64) t->t.shape[d];
  return bw_ggml_type_bytes ((guint32) t->type, n, &bytes) ? bytes : 0;
}

static guint64
aligned (guint64 n)
{
  return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
}

guint64
bw_synth_gguf_data_bytes (const BwSynthGguf *g)
{
  guint64 total = 0;
  for (guint i = 0; i < g->tensors->len; i++)
    total = aligned (total)
            + bw_synth_gguf_tensor_bytes (&g_array_index (g->tensors, BwSynthGgufTensor, i));
  return total;
}

/* Header, metadata, tensor infos, padded to the data section. */
static GByteArray *
header (const BwSynthGguf *g)
{
  GByteArray *b = g_byte_array_new ();
  guint64 offset = 0;

  g_byte_array_append (b, (const guint8 *) "GGUF", 4);
  put (b, 3, 4);
  put (b, g->tensors->len, 8);
  put (b, g->n_kv, 8);
  g_byte_array_append (b, g->kv->data, g->kv->len);
  for (guint i = 0; i < g->tensors->len; i++)
    {
      const BwSynthGgufTensor *t = &g_array_index (g->tensors, BwSynthGgufTensor, i);
      offset = aligned (offset);
      put_str (b, t->t.name);
      put (b, (guint64) t->t.n_dims, 4);
      for (int d = 0; d < t->t.n_dims; d++)
        put (b, (guint64) t->t.shape[d], 8);
      put (b, (guint64) t->type, 4);
      put (b, offset, 8);
      offset += bw_synth_gguf_tensor_bytes (t);
    }
  while (b->len % ALIGNMENT != 0)
    put (b, 0, 1);
  return b;
}

/* One tensor's data and the padding before the next, in chunks of whole blocks. */
static gboolean
write_tensor (BwAtomicFile *f, const BwSynthGgufTensor *t, BwSynthRng *rng, guint8 *chunk,
              GError **error)
{
  static const guint8 zeros[ALIGNMENT] = { 0 };
  guint64 total = bw_synth_gguf_tensor_bytes (t), done = 0;
  BwSynthGgml blocks = { 0 };

  if (t->type == BW_GGML_F32)
    {
      if (total > CHUNK_BYTES)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "synthetic GGUF: F32 tensor %s is larger than %zu bytes", t->t.name,
                       (size_t) CHUNK_BYTES);
          return FALSE;
        }
      bw_synth_fill (&t->t, rng, chunk, (gsize) total);
      done = total;
      if (!bw_atomic_file_write (f, chunk, (gsize) total, error))
        return FALSE;
    }
  else if (!bw_synth_ggml_init (&blocks, t->type, t->t.a, error))
    {
      g_prefix_error (error, "%s: ", t->t.name);
      return FALSE;
    }
  while (done < total)
    {
      gsize n = (gsize) MIN ((total - done) / blocks.block_bytes,
                             CHUNK_BYTES / blocks.block_bytes);
      bw_synth_ggml_fill (&blocks, rng, chunk, n);
      if (!bw_atomic_file_write (f, chunk, n * blocks.block_bytes, error))
        return FALSE;
      done += n * blocks.block_bytes;
    }
  return bw_atomic_file_write (f, zeros, (gsize) (aligned (total) - total), error);
}

gboolean
bw_synth_gguf_write (const BwSynthGguf *g, const char *path, guint64 seed,
                     BwSynthProgress progress, gpointer progress_data, GError **error)
{
  g_autoptr (GByteArray) head = header (g);
  g_autofree guint8 *chunk = g_malloc (CHUNK_BYTES);
  BwAtomicFile f = { 0 };
  guint64 total = bw_synth_gguf_data_bytes (g), done = 0;
  gboolean ok = FALSE;
  BwSynthRng rng;

  bw_synth_rng_seed (&rng, seed);
  if (!bw_atomic_file_open (&f, path, error)
      || !bw_atomic_file_write (&f, head->data, head->len, error))
    goto out;
  for (guint i = 0; i < g->tensors->len; i++)
    {
      const BwSynthGgufTensor *t = &g_array_index (g->tensors, BwSynthGgufTensor, i);
      if (!write_tensor (&f, t, &rng, chunk, error))
        goto out;
      done = aligned (done) + bw_synth_gguf_tensor_bytes (t);
      if (progress != NULL)
        progress (done, total, progress_data);
    }
  ok = bw_atomic_file_commit (&f, error);
out:
  bw_atomic_file_clear (&f);
  return ok;
}

gboolean
bw_synth_gguf (const BwSynthOptions *opts, const char *path, BwSynthProgress progress,
               gpointer progress_data, guint64 *bytes_out, GError **error)
{
  BwSynthGguf g;
  gboolean ok;

  if (opts->family == NULL || opts->family->synth_gguf == NULL)
    {
      g_set_error (error, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_UNSUPPORTED,
                   "synthetic GGUF files: family %s is not supported",
                   opts->family ? opts->family->name : "(none)");
      return FALSE;
    }
  bw_synth_gguf_init (&g);
  ok = opts->family->synth_gguf (opts, &g, error)
       && bw_synth_gguf_write (&g, path, opts->seed, progress, progress_data, error);
  if (ok && bytes_out != NULL)
    *bytes_out = bw_synth_gguf_data_bytes (&g);
  bw_synth_gguf_clear (&g);
  return ok;
}
