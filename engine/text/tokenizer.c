/* The tokenizer interface: id table, added/special token matching, decoding, streaming. */
#include "text/tokenizer.h"

#include <string.h>

#include "text/bpe-hf.h"
#include "text/file-load.h"
#include "text/split-regex.h"
#include "text/tiktoken.h"
#include "text/tokenizer-private.h"

typedef struct {
  gsize offset;    /* into bytes */
  gint32 len;      /* -1: no token with this id */
} TokenRef;

typedef struct {
  gint32 id;
  gboolean special;
  gboolean lstrip;
  gboolean rstrip;
} AddedToken;

struct _BwTokenizer {
  BwTokenizerKind kind;
  char *path;
  GByteArray *bytes;          /* every token's bytes, back to back */
  GArray *tokens;             /* TokenRef, indexed by id */
  GArray *added;              /* AddedToken */
  BwByteMap *added_by_text;   /* text -> index into added */
  GArray *added_lengths;      /* distinct text lengths, longest first */
  guint8 added_first[256];    /* first bytes of added texts */
  const BwTokenizerModel *model;
  gpointer impl;
  BwTokenizerSpecials specials;
};

BwTokenizer *
bw_tokenizer_new (BwTokenizerKind kind, const char *path)
{
  BwTokenizer *tok = g_new0 (BwTokenizer, 1);

  tok->kind = kind;
  tok->path = g_strdup (path);
  tok->bytes = g_byte_array_new ();
  tok->tokens = g_array_new (FALSE, FALSE, sizeof (TokenRef));
  tok->added = g_array_new (FALSE, FALSE, sizeof (AddedToken));
  tok->added_by_text = bw_byte_map_new (64);
  tok->added_lengths = g_array_new (FALSE, FALSE, sizeof (gsize));
  tok->specials = (BwTokenizerSpecials) { -1, -1, -1, -1, -1, -1, FALSE, FALSE };
  return tok;
}

void
bw_tokenizer_set_specials (BwTokenizer *tok, const BwTokenizerSpecials *specials)
{
  tok->specials = *specials;
}

void
bw_tokenizer_free (BwTokenizer *tok)
{
  if (tok == NULL)
    return;
  if (tok->model != NULL && tok->impl != NULL)
    tok->model->free (tok->impl);
  g_byte_array_unref (tok->bytes);
  g_array_unref (tok->tokens);
  g_array_unref (tok->added);
  bw_byte_map_free (tok->added_by_text);
  g_array_unref (tok->added_lengths);
  g_free (tok->path);
  g_free (tok);
}

void
bw_tokenizer_set_model (BwTokenizer *tok, const BwTokenizerModel *model, gpointer impl)
{
  tok->model = model;
  tok->impl = impl;
}

gboolean
bw_tokenizer_set_token (BwTokenizer *tok, gint32 id, const void *bytes, gsize len,
                        GError **error)
{
  TokenRef ref;

  if (id < 0 || id >= BW_TOKENIZER_MAX_ID || len > G_MAXINT32 || tok->bytes->len + len > G_MAXINT32)
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                   "%s: token id %d is out of range", tok->path, id);
      return FALSE;
    }
  if ((guint) id >= tok->tokens->len)
    {
      guint old = tok->tokens->len;
      g_array_set_size (tok->tokens, (guint) id + 1);
      for (guint i = old; i <= (guint) id; i++)
        g_array_index (tok->tokens, TokenRef, i).len = -1;
    }
  ref.offset = tok->bytes->len;
  ref.len = (gint32) len;
  g_byte_array_append (tok->bytes, bytes, (guint) len);
  g_array_index (tok->tokens, TokenRef, id) = ref;
  return TRUE;
}

gboolean
bw_tokenizer_add_token (BwTokenizer *tok, gint32 id, const char *text, gboolean special,
                        gboolean lstrip, gboolean rstrip, GError **error)
{
  gsize len = strlen (text);
  AddedToken added = { id, special, lstrip, rstrip };
  guint i;

  if (len == 0 || !g_utf8_validate (text, (gssize) len, NULL))
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                   "%s: added token %d has empty or non-UTF-8 text", tok->path, id);
      return FALSE;
    }
  if (!bw_tokenizer_set_token (tok, id, text, len, error))
    return FALSE;
  if (!bw_byte_map_insert (tok->added_by_text, text, len, (gint32) tok->added->len))
    return TRUE;
  g_array_append_val (tok->added, added);
  tok->added_first[(guint8) text[0]] = 1;
  for (i = 0; i < tok->added_lengths->len; i++)
    {
      gsize l = g_array_index (tok->added_lengths, gsize, i);
      if (l == len)
        return TRUE;
      if (l < len)
        break;
    }
  g_array_insert_val (tok->added_lengths, i, len);
  return TRUE;
}

/* ---- Opening ---- */

static gboolean
looks_like_json (const char *data, gsize len)
{
  for (gsize i = 0; i < len; i++)
    {
      if (g_ascii_isspace (data[i]))
        continue;
      return data[i] == '{';
    }
  return FALSE;
}

BwTokenizer *
bw_tokenizer_open (const char *path, const BwTokenizerOptions *opts, GError **error)
{
  static const BwTokenizerOptions defaults = { NULL, 0 };
  g_autofree char *data = NULL;
  gsize len = 0;

  if (opts == NULL)
    opts = &defaults;
  data = bw_text_file_load (path, &len, error);
  if (data == NULL)
    return NULL;
  if (looks_like_json (data, len))
    return bw_hf_bpe_load (path, data, len, error);
  return bw_tiktoken_load (path, data, len, opts, error);
}

char *
bw_tokenizer_find_in_dir (const char *dir)
{
  static const char *const names[] = { "tokenizer.json", "tiktoken.model" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      char *path = g_build_filename (dir, names[i], NULL);

      if (g_file_test (path, G_FILE_TEST_EXISTS))
        return path;
      g_free (path);
    }
  return NULL;
}

BwTokenizer *
bw_tokenizer_open_dir (const char *dir, const BwTokenizerOptions *opts, GError **error)
{
  g_autofree char *path = bw_tokenizer_find_in_dir (dir);

  if (path != NULL)
    return bw_tokenizer_open (path, opts, error);
  g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
               "%s: no tokenizer.json or tiktoken.model in this folder", dir);
  return NULL;
}

BwTokenizerKind
bw_tokenizer_kind (const BwTokenizer *tok)
{
  return tok->kind;
}

const char *
bw_tokenizer_path (const BwTokenizer *tok)
{
  return tok->path;
}

const BwTokenizerSpecials *
bw_tokenizer_specials (const BwTokenizer *tok)
{
  return &tok->specials;
}

gint32
bw_tokenizer_vocab_size (const BwTokenizer *tok)
{
  return (gint32) tok->tokens->len;
}

/* ---- Encoding ---- */

/* The added token at text[pos..], longest first, or -1; its length in *len. */
static gint32
match_added (const BwTokenizer *tok, const char *text, gsize pos, gsize n,
             gboolean allow_special, gsize *len)
{
  if (!tok->added_first[(guint8) text[pos]])
    return -1;
  for (guint i = 0; i < tok->added_lengths->len; i++)
    {
      gsize l = g_array_index (tok->added_lengths, gsize, i);
      gint32 idx;
      if (l > n - pos)
        continue;
      idx = bw_byte_map_lookup (tok->added_by_text, text + pos, l);
      if (idx >= 0 && (allow_special || !g_array_index (tok->added, AddedToken, idx).special))
        {
          *len = l;
          return idx;
        }
    }
  return -1;
}

static gboolean
is_space_at (const char *s)
{
  return g_unichar_isspace (g_utf8_get_char (s));
}

static gboolean
encode_chunk (const BwTokenizer *tok, const char *text, gsize start, gsize end,
              BwEncodeScratch *scratch, GArray *ids, GError **error)
{
  if (end <= start)
    return TRUE;
  return tok->model->encode_ordinary (tok->impl, tok, text + start, end - start, scratch,
                                      ids, error);
}

static gboolean
encode_clean (const BwTokenizer *tok, const char *text, gsize n, gboolean allow_special,
              BwEncodeScratch *scratch, GArray *ids, GError **error)
{
  gsize pos = 0, chunk = 0;

  while (pos < n)
    {
      gsize len = 0, chunk_end = pos;
      gint32 idx = match_added (tok, text, pos, n, allow_special, &len);
      const AddedToken *added;

      if (idx < 0)
        {
          pos++;
          continue;
        }
      added = &g_array_index (tok->added, AddedToken, idx);
      /* lstrip/rstrip: the token swallows the white space beside it. */
      if (added->lstrip)
        while (chunk_end > chunk)
          {
            const char *prev = g_utf8_find_prev_char (text + chunk, text + chunk_end);
            if (prev == NULL || !is_space_at (prev))
              break;
            chunk_end = (gsize) (prev - text);
          }
      if (!encode_chunk (tok, text, chunk, chunk_end, scratch, ids, error))
        return FALSE;
      g_array_append_val (ids, added->id);
      pos += len;
      if (added->rstrip)
        while (pos < n && is_space_at (text + pos))
          pos = (gsize) (g_utf8_next_char (text + pos) - text);
      chunk = pos;
    }
  return encode_chunk (tok, text, chunk, n, scratch, ids, error);
}

gboolean
bw_tokenizer_encode (const BwTokenizer *tok, const char *text, gssize len,
                     gboolean allow_special, GArray *ids, GError **error)
{
  g_autoptr (GString) clean = NULL;
  BwEncodeScratch scratch;
  gsize n = len < 0 ? strlen (text) : (gsize) len;
  gboolean ok;

  if (!g_utf8_validate_len (text, n, NULL))
    {
      clean = g_string_sized_new (n + 16);
      bw_utf8_repair (text, n, clean);
      text = clean->str;
      n = clean->len;
    }
  scratch.spans = g_array_new (FALSE, FALSE, sizeof (BwSpan));
  scratch.spans_next = g_array_new (FALSE, FALSE, sizeof (BwSpan));
  scratch.work = g_string_new (NULL);
  bw_bpe_scratch_init (&scratch.bpe);
  ok = encode_clean (tok, text, n, allow_special, &scratch, ids, error);
  g_array_unref (scratch.spans);
  g_array_unref (scratch.spans_next);
  g_string_free (scratch.work, TRUE);
  bw_bpe_scratch_clear (&scratch.bpe);
  return ok;
}

/* ---- Decoding ---- */

const guint8 *
bw_tokenizer_token_bytes (const BwTokenizer *tok, gint32 id, gsize *len)
{
  const TokenRef *ref;

  if (id < 0 || (guint) id >= tok->tokens->len)
    return NULL;
  ref = &g_array_index (tok->tokens, TokenRef, id);
  if (ref->len < 0)
    return NULL;
  *len = (gsize) ref->len;
  return tok->bytes->data + ref->offset;
}

static gboolean
no_such_id (const BwTokenizer *tok, gint32 id, GError **error)
{
  g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_INVALID_ID,
               "%s: no token has id %d", tok->path, id);
  return FALSE;
}

gboolean
bw_tokenizer_decode (const BwTokenizer *tok, const gint32 *ids, gsize n_ids,
                     GByteArray *out, GError **error)
{
  for (gsize i = 0; i < n_ids; i++)
    {
      gsize len = 0;
      const guint8 *bytes = bw_tokenizer_token_bytes (tok, ids[i], &len);
      if (bytes == NULL)
        return no_such_id (tok, ids[i], error);
      g_byte_array_append (out, bytes, (guint) len);
    }
  return TRUE;
}

gint32
bw_tokenizer_special_id (const BwTokenizer *tok, const char *name)
{
  gint32 idx = bw_byte_map_lookup (tok->added_by_text, name, strlen (name));

  return idx < 0 ? -1 : g_array_index (tok->added, AddedToken, idx).id;
}

gboolean
bw_tokenizer_is_special (const BwTokenizer *tok, gint32 id)
{
  for (guint i = 0; i < tok->added->len; i++)
    if (g_array_index (tok->added, AddedToken, i).id == id)
      return g_array_index (tok->added, AddedToken, i).special;
  return FALSE;
}

void
bw_token_stream_init (BwTokenStream *stream, const BwTokenizer *tok)
{
  stream->tok = tok;
  bw_utf8_stream_init (&stream->utf8);
}

gboolean
bw_token_stream_push (BwTokenStream *stream, gint32 id, GString *out, GError **error)
{
  gsize len = 0;
  const guint8 *bytes = bw_tokenizer_token_bytes (stream->tok, id, &len);

  if (bytes == NULL)
    return no_such_id (stream->tok, id, error);
  bw_utf8_stream_push (&stream->utf8, bytes, len, out);
  return TRUE;
}

void
bw_token_stream_finish (BwTokenStream *stream, GString *out)
{
  bw_utf8_stream_finish (&stream->utf8, out);
}
