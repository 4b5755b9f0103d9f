/* Rewrites a GGUF file's vocabulary tail; see gguf-tokens.h. */
#include "gguf-tokens.h"

#include <string.h>

#define TYPE_STRING 8
#define TYPE_ARRAY 9
#define TOKEN_CONTROL 3

typedef struct {
  const guint8 *d;
  gsize len, at;
} Reader;

static guint64
take (Reader *r, gsize n)
{
  guint64 v = 0;
  g_assert_cmpuint (r->at + n, <=, r->len);
  memcpy (&v, r->d + r->at, n);   /* GGUF is little-endian, as are the hosts tests run on */
  r->at += n;
  return v;
}

static gsize
scalar_size (guint32 type)
{
  static const gsize sizes[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
  g_assert_cmpuint (type, <, G_N_ELEMENTS (sizes));
  g_assert_true (type != TYPE_STRING && type != TYPE_ARRAY);
  return sizes[type];
}

static void
skip_value (Reader *r, guint32 type)
{
  if (type == TYPE_STRING)
    r->at += take (r, 8);
  else if (type == TYPE_ARRAY)
    {
      guint32 elem = (guint32) take (r, 4);
      guint64 n = take (r, 8);
      for (guint64 i = 0; i < n; i++)
        skip_value (r, elem);
    }
  else
    r->at += scalar_size (type);
  g_assert_cmpuint (r->at, <=, r->len);
}

static void
put (GByteArray *out, guint64 v, gsize n)
{
  g_byte_array_append (out, (const guint8 *) &v, (guint) n);
}

static void
put_string (GByteArray *out, const char *s, gsize n)
{
  put (out, n, 8);
  g_byte_array_append (out, (const guint8 *) s, (guint) n);
}

/* The array value at r (type already read) rewritten: strings from `tokens` or the type
 * CONTROL over the last n_tokens elements. */
static void
rewrite_array (Reader *r, GByteArray *out, gboolean is_tokens, const char *const *tokens,
               guint n_tokens)
{
  guint32 elem = (guint32) take (r, 4);
  guint64 n = take (r, 8);

  g_assert_cmpuint (n, >, n_tokens);
  put (out, elem, 4);
  put (out, n, 8);
  for (guint64 i = 0; i < n; i++)
    {
      gsize start = r->at;
      gboolean replace = i >= n - n_tokens;
      skip_value (r, elem);
      if (!replace)
        g_byte_array_append (out, r->d + start, (guint) (r->at - start));
      else if (is_tokens)
        put_string (out, tokens[i - (n - n_tokens)], strlen (tokens[i - (n - n_tokens)]));
      else
        put (out, TOKEN_CONTROL, scalar_size (elem));
    }
}

char *
bw_test_gguf_with_tokens (const char *src, const char *dir, const char *const *tokens)
{
  return bw_test_gguf_with_chat (src, dir, tokens, NULL);
}

char *
bw_test_gguf_with_chat (const char *src, const char *dir, const char *const *tokens,
                        const char *chat_template)
{
  g_autofree guint8 *data = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GByteArray) out = g_byte_array_new ();
  g_autofree char *base = g_path_get_basename (src);
  char *path = g_build_filename (dir, base, NULL);
  guint n_tokens = g_strv_length ((char **) tokens);
  guint64 alignment = 32, n_tensors, n_kv;
  gsize len;
  Reader r;

  g_file_get_contents (src, (char **) &data, &len, &error);
  g_assert_no_error (error);
  r = (Reader) { data, len, 0 };
  g_assert_cmpmem (data, 4, "GGUF", 4);
  r.at = 8;
  n_tensors = take (&r, 8);
  n_kv = take (&r, 8);
  g_byte_array_append (out, data, 16);
  put (out, n_kv + (chat_template != NULL), 8);
  for (guint64 k = 0; k < n_kv; k++)
    {
      gsize key_at = r.at;
      guint64 key_len = take (&r, 8);
      g_autofree char *key = g_strndup ((const char *) data + r.at, key_len);
      r.at += key_len;
      guint32 type = (guint32) take (&r, 4);
      gsize value_at = r.at;
      gboolean is_tokens = strcmp (key, "tokenizer.ggml.tokens") == 0;
      g_byte_array_append (out, data + key_at, (guint) (value_at - key_at));
      if (type == TYPE_ARRAY && (is_tokens || strcmp (key, "tokenizer.ggml.token_type") == 0))
        {
          rewrite_array (&r, out, is_tokens, tokens, n_tokens);
          continue;
        }
      skip_value (&r, type);
      if (strcmp (key, "general.alignment") == 0)
        {
          guint32 a;
          memcpy (&a, data + value_at, 4);
          alignment = a;
        }
      g_byte_array_append (out, data + value_at, (guint) (r.at - value_at));
    }
  if (chat_template != NULL)
    {
      static const char key[] = "tokenizer.chat_template";
      put_string (out, key, strlen (key));
      put (out, TYPE_STRING, 4);
      put_string (out, chat_template, strlen (chat_template));
    }
  gsize infos_at = r.at;
  for (guint64 t = 0; t < n_tensors; t++)
    {
      r.at += take (&r, 8);
      guint32 n_dims = (guint32) take (&r, 4);
      r.at += 8 * (gsize) n_dims + 4 + 8;
    }
  g_byte_array_append (out, data + infos_at, (guint) (r.at - infos_at));
  gsize data_at = (r.at + alignment - 1) / alignment * alignment;
  while (out->len % alignment != 0)
    put (out, 0, 1);
  g_byte_array_append (out, data + data_at, (guint) (len - data_at));
  g_file_set_contents (path, (const char *) out->data, out->len, &error);
  g_assert_no_error (error);
  return path;
}
