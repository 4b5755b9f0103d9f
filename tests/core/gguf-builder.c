/* GGUF files for tests (see gguf-builder.h). */
#include "gguf-builder.h"

#include <string.h>

enum { T_U16 = 2, T_U32 = 4, T_I32 = 5, T_F32 = 6, T_BOOL = 7, T_STRING = 8, T_ARRAY = 9 };
enum { G_F32 = 0, G_Q8_0 = 8 };

static gsize
put (GByteArray *b, const void *p, gsize n)
{
  gsize at = b->len;
  g_byte_array_append (b, p, (guint) n);
  return at;
}

static gsize
put_u32 (GByteArray *b, guint32 v)
{
  guint8 le[4];
  for (int i = 0; i < 4; i++)
    le[i] = (guint8) (v >> (8 * i));
  return put (b, le, 4);
}

static gsize
put_u64 (GByteArray *b, guint64 v)
{
  guint8 le[8];
  for (int i = 0; i < 8; i++)
    le[i] = (guint8) (v >> (8 * i));
  return put (b, le, 8);
}

/* Returns the position of the length field. */
static gsize
put_str (GByteArray *b, const char *s)
{
  gsize at = put_u64 (b, strlen (s));
  put (b, s, strlen (s));
  return at;
}

static gsize
put_key (GByteArray *b, const char *key, guint32 type)
{
  gsize at = put_str (b, key);
  put_u32 (b, type);
  return at;
}

void
ggb_patch_u32 (GByteArray *b, gsize at, guint32 v)
{
  for (int i = 0; i < 4; i++)
    b->data[at + i] = (guint8) (v >> (8 * i));
}

void
ggb_patch_u64 (GByteArray *b, gsize at, guint64 v)
{
  for (int i = 0; i < 8; i++)
    b->data[at + i] = (guint8) (v >> (8 * i));
}

static int
put_metadata (GByteArray *b, const GgbOptions *o, GgbLayout *l)
{
  int n = 0;
  float half = 0.5f;
  guint32 half_bits;
  guint8 one = 1;

  l->first_key_len = put_key (b, "general.architecture", T_STRING);
  l->first_key_byte = l->first_key_len + 8;
  l->arch_len = put_str (b, o->arch != NULL ? o->arch : "deepseek2");
  n++;
  put_key (b, "general.alignment", T_U32);
  l->alignment = put_u32 (b, 32);
  n++;
  put_key (b, "deepseek2.block_count", T_U32);
  put_u32 (b, 2);
  n++;
  put_key (b, "tokenizer.ggml.tokens", T_ARRAY);
  put_u32 (b, T_STRING);
  l->tokens_count = put_u64 (b, 3);
  put_str (b, "a");
  put_str (b, "bc");
  put_str (b, "def");
  n++;
  put_key (b, "test.nested", T_ARRAY);
  put_u32 (b, T_ARRAY);
  put_u64 (b, 2);
  put_u32 (b, T_I32);
  l->nested_count = put_u64 (b, 2);
  put_u32 (b, 1);
  put_u32 (b, 2);
  put_u32 (b, T_I32);
  put_u64 (b, 1);
  put_u32 (b, (guint32) -3);
  n++;
  l->float_type = put_key (b, "test.f", T_F32) + 8 + strlen ("test.f");
  memcpy (&half_bits, &half, 4);
  put_u32 (b, half_bits);
  n++;
  put_key (b, "test.flag", T_BOOL);
  l->flag_value = put (b, &one, 1);
  n++;
  if (o->split_no >= 0 && o->split_count > 0)
    {
      put_key (b, "split.no", T_U16);
      put (b, (guint8[]) { (guint8) o->split_no, 0 }, 2);
      put_key (b, "split.count", T_U16);
      put (b, (guint8[]) { (guint8) o->split_count, 0 }, 2);
      put_key (b, "split.tensors.count", T_I32);
      put_u32 (b, (guint32) o->split_tensors);
      n += 3;
    }
  if (o->dup_key)
    {
      put_key (b, "general.architecture", T_STRING);
      put_str (b, "qwen3moe");
      n++;
    }
  return n;
}

static void
put_tensor (GByteArray *b, GgbLayout *l, int i, const char *name, int n_dims,
            const guint64 *ne, guint32 type, guint64 offset)
{
  l->name_len[i] = put_str (b, name);
  l->n_dims[i] = put_u32 (b, (guint32) n_dims);
  for (int d = 0; d < n_dims; d++)
    {
      gsize at = put_u64 (b, ne[d]);
      if (d == 0)
        l->ne0[i] = at;
      if (d == 1)
        l->ne1[i] = at;
    }
  l->type[i] = put_u32 (b, type);
  l->offset[i] = put_u64 (b, offset);
}

GByteArray *
ggb_build (const GgbOptions *opts, GgbLayout *layout)
{
  GgbOptions o = { 0 };
  GgbLayout l = { 0 };
  GByteArray *b = g_byte_array_new ();
  const char *prefix;
  g_autofree char *n0 = NULL, *n1 = NULL, *n2 = NULL;
  int n_kv;

  if (opts != NULL)
    o = *opts;
  else
    o.split_no = -1;
  prefix = o.name_prefix != NULL ? o.name_prefix : "";
  n0 = g_strdup_printf ("%stoken_embd.weight", prefix);
  n1 = o.long_name ? g_strnfill (64, 'x') : g_strdup_printf ("%sblk.0.ffn_up_exps.weight", prefix);
  n2 = o.dup_tensor ? g_strdup (n0) : g_strdup_printf ("%sblk.0.attn_norm.weight", prefix);

  put (b, "GGUF", 4);
  l.version = put_u32 (b, o.version ? o.version : 3);
  l.n_tensors = put_u64 (b, 3);
  l.n_kv = put_u64 (b, 0);
  n_kv = put_metadata (b, &o, &l);
  ggb_patch_u64 (b, l.n_kv, (guint64) n_kv);
  put_tensor (b, &l, 0, n0, 2, (guint64[]) { 4, 2 }, G_F32, 0);
  put_tensor (b, &l, 1, n1, 3, (guint64[]) { 32, 2, 2 }, G_Q8_0, 32);
  put_tensor (b, &l, 2, n2, 1, (guint64[]) { 8 }, G_F32, 192);
  l.header_end = b->len;
  while (b->len % 32 != 0)
    put (b, "", 1);
  l.data_offset = b->len;
  for (guint i = 0; i < 224; i++)
    {
      guint8 x = (guint8) (i * 7 + 1);
      put (b, &x, 1);
    }
  if (layout != NULL)
    *layout = l;
  return b;
}

char *
ggb_write (const char *dir, const char *name, const guint8 *data, gsize len)
{
  char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GError) error = NULL;

  /* no fsync: hundreds of these per test */
  g_file_set_contents_full (path, (const char *) data, (gssize) len, G_FILE_SET_CONTENTS_NONE,
                            0644, &error);
  g_assert_no_error (error);
  return path;
}
