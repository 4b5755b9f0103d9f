/* tiktoken.model loading and encoding (see tiktoken.h). */
#include "text/tiktoken.h"

#include <stdlib.h>
#include <string.h>

#include "core/json-load.h"
#include "text/file-load.h"
#include "text/split-regex.h"
#include "text/tokenizer-private.h"

typedef struct {
  BwByteMap *ranks;        /* token bytes -> rank */
  gint32 byte_ids[256];    /* rank of each single byte, -1 if none */
  BwSplitRegex *regex;
} Tiktoken;

static void
tiktoken_free (gpointer impl)
{
  Tiktoken *tt = impl;

  bw_byte_map_free (tt->ranks);
  bw_split_regex_free (tt->regex);
  g_free (tt);
}

static gint32
pair_rank (gconstpointer model, const guint8 *piece, const BwBpeSymbol *left,
           const BwBpeSymbol *right, gint32 *merged_id)
{
  const Tiktoken *tt = model;
  gint32 rank = bw_byte_map_lookup (tt->ranks, piece + left->start,
                                    (gsize) (right->end - left->start));

  *merged_id = rank;
  return rank;
}

static gboolean
tiktoken_encode (gconstpointer impl, const BwTokenizer *tok, const char *text, gsize len,
                 BwEncodeScratch *scratch, GArray *ids, GError **error)
{
  const Tiktoken *tt = impl;

  g_array_set_size (scratch->spans, 0);
  if (!bw_split_regex_run (tt->regex, text, 0, len, BW_SPLIT_MATCHES, scratch->spans, error))
    return FALSE;
  for (guint i = 0; i < scratch->spans->len; i++)
    {
      const BwSpan *s = &g_array_index (scratch->spans, BwSpan, i);
      const guint8 *piece = (const guint8 *) text + s->start;
      gsize n = s->end - s->start;
      gint32 whole = bw_byte_map_lookup (tt->ranks, piece, n);

      if (whole >= 0)
        {
          g_array_append_val (ids, whole);
          continue;
        }
      if (!bw_bpe_merge (&scratch->bpe, piece, n, tt->byte_ids, pair_rank, tt, ids))
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_INPUT,
                       "%s: the text has a byte that no token covers", bw_tokenizer_path (tok));
          return FALSE;
        }
    }
  return TRUE;
}

static const BwTokenizerModel tiktoken_model = { tiktoken_encode, tiktoken_free };

/* Strict base64 (standard alphabet, padded): returns the decoded length or -1. */
static gssize
base64_decode (const char *s, gsize len, guint8 *out)
{
  gsize o = 0;

  if (len == 0 || len % 4 != 0)
    return -1;
  for (gsize i = 0; i < len; i += 4)
    {
      guint32 acc = 0;
      int pad = 0;
      for (int k = 0; k < 4; k++)
        {
          char c = s[i + k];
          int v;
          if (c >= 'A' && c <= 'Z')
            v = c - 'A';
          else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
          else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
          else if (c == '+')
            v = 62;
          else if (c == '/')
            v = 63;
          else if (c == '=' && i + 4 == len && k >= 2 && (k == 3 || s[i + 3] == '='))
            {
              v = 0;
              pad++;
            }
          else
            return -1;
          if (pad > 0 && c != '=')
            return -1;
          acc = (acc << 6) | (guint32) v;
        }
      out[o++] = (guint8) (acc >> 16);
      if (pad < 2)
        out[o++] = (guint8) (acc >> 8);
      if (pad < 1)
        out[o++] = (guint8) acc;
    }
  return (gssize) o;
}

static gboolean
line_error (const char *path, guint line, const char *why, GError **error)
{
  g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: line %u: %s", path, line, why);
  return FALSE;
}

/* Parses every "<base64> <rank>" line into tok and tt; *n_base = highest rank + 1. */
static gboolean
parse_ranks (BwTokenizer *tok, Tiktoken *tt, const char *path, const char *data, gsize len,
             gint32 *n_base, GError **error)
{
  g_autofree guint8 *buf = NULL;
  gsize buf_cap = 0, pos = 0;
  guint line = 0;
  gint32 max_rank = -1;

  while (pos < len)
    {
      const char *start = data + pos;
      const char *nl = memchr (start, '\n', len - pos);
      gsize n = nl ? (gsize) (nl - start) : len - pos;
      const char *space;
      gssize decoded;
      gint64 rank = 0;

      pos += n + (nl ? 1 : 0);
      line++;
      if (n > 0 && start[n - 1] == '\r')
        n--;
      if (n == 0)
        continue;
      space = memchr (start, ' ', n);
      if (space == NULL || space == start || space + 1 == start + n)
        return line_error (path, line, "expected \"<base64> <rank>\"", error);
      for (const char *d = space + 1; d < start + n; d++)
        {
          if (!g_ascii_isdigit (*d) || rank >= BW_TOKENIZER_MAX_ID)
            return line_error (path, line, "rank is not a number below 2^24", error);
          rank = rank * 10 + (*d - '0');
        }
      if (rank >= BW_TOKENIZER_MAX_ID)
        return line_error (path, line, "rank is not a number below 2^24", error);
      if (buf_cap < (gsize) (space - start))
        {
          buf_cap = (gsize) (space - start);
          buf = g_realloc (buf, buf_cap);
        }
      decoded = base64_decode (start, (gsize) (space - start), buf);
      if (decoded <= 0)
        return line_error (path, line, "token is not valid base64", error);
      if (bw_tokenizer_token_bytes (tok, (gint32) rank, &(gsize) { 0 }) != NULL)
        return line_error (path, line, "rank appears twice", error);
      if (!bw_byte_map_insert (tt->ranks, buf, (gsize) decoded, (gint32) rank))
        return line_error (path, line, "token appears twice", error);
      if (!bw_tokenizer_set_token (tok, (gint32) rank, buf, (gsize) decoded, error))
        return FALSE;
      if (decoded == 1)
        tt->byte_ids[buf[0]] = (gint32) rank;
      max_rank = MAX (max_rank, (gint32) rank);
    }
  if (max_rank < 0)
    {
      g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: no tokens", path);
      return FALSE;
    }
  *n_base = max_rank + 1;
  return TRUE;
}

/* Reads added_tokens_decoder from tokenizer_config.json's contents into names
 * (id -> content). */
static gboolean
parse_special_names (const char *config, const char *data, gsize len, gint32 n_base,
                     GHashTable *names, GError **error)
{
  g_autoptr (JsonNode) root = NULL;
  JsonObject *decoder;
  GList *members;

  root = bw_json_parse_object (config, data, len, error);
  if (root == NULL)
    return FALSE;
  decoder = bw_json_node_get_object (json_object_get_member (json_node_get_object (root),
                                                              "added_tokens_decoder"));
  if (decoder == NULL)
    return TRUE;
  members = json_object_get_members (decoder);
  for (GList *l = members; l != NULL; l = l->next)
    {
      const char *key = l->data;
      JsonObject *entry = bw_json_node_get_object (json_object_get_member (decoder, key));
      const char *content = entry ? bw_json_node_get_string (json_object_get_member (entry, "content")) : NULL;
      char *end = NULL;
      gint64 id = g_ascii_strtoll (key, &end, 10);

      if (end == key || *end != '\0' || id < n_base || id >= BW_TOKENIZER_MAX_ID ||
          content == NULL || *content == '\0')
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: added_tokens_decoder entry \"%s\" needs an id after the %d base "
                       "tokens and a non-empty \"content\"", config, key, n_base);
          g_list_free (members);
          return FALSE;
        }
      g_hash_table_insert (names, GINT_TO_POINTER ((gint) id), (gpointer) g_strdup (content));
    }
  g_list_free (members);
  return TRUE;
}

static gint
compare_ids (gconstpointer a, gconstpointer b)
{
  return GPOINTER_TO_INT (a) - GPOINTER_TO_INT (b);
}

static gboolean
add_specials (BwTokenizer *tok, const BwTiktokenConfig *config, gint32 n_base,
              const BwTokenizerOptions *opts, GError **error)
{
  g_autoptr (GHashTable) names = g_hash_table_new_full (NULL, NULL, NULL, g_free);
  gint32 lowest = G_MAXINT32, highest = -1, n_reserved;
  GHashTableIter iter;
  gpointer key, value;

  if (config->data != NULL
      && !parse_special_names (config->path, config->data, config->len, n_base, names, error))
    return FALSE;
  g_hash_table_iter_init (&iter, names);
  while (g_hash_table_iter_next (&iter, &key, &value))
    {
      if (opts->n_reserved_specials > 0 &&
          GPOINTER_TO_INT (key) - n_base >= opts->n_reserved_specials)
        {
          g_hash_table_iter_remove (&iter);
          continue;
        }
      lowest = MIN (lowest, GPOINTER_TO_INT (key));
      highest = MAX (highest, GPOINTER_TO_INT (key));
    }
  /* Kimi's layout: a block of specials right after the ranks, unnamed ones reserved. */
  if (g_hash_table_size (names) == 0 || lowest == n_base)
    {
      n_reserved = opts->n_reserved_specials > 0 ? opts->n_reserved_specials
                                                 : MAX (256, highest + 1 - n_base);
      if (n_reserved > BW_TOKENIZER_MAX_ID - n_base)
        n_reserved = BW_TOKENIZER_MAX_ID - n_base;
      for (gint32 id = n_base; id < n_base + n_reserved; id++)
        if (!g_hash_table_contains (names, GINT_TO_POINTER (id)))
          g_hash_table_insert (names, GINT_TO_POINTER (id),
                               g_strdup_printf ("<|reserved_token_%d|>", id));
    }
  {
    g_autoptr (GList) ids = g_list_sort (g_hash_table_get_keys (names), compare_ids);
    for (GList *l = ids; l != NULL; l = l->next)
      if (!bw_tokenizer_add_token (tok, GPOINTER_TO_INT (l->data),
                                   g_hash_table_lookup (names, l->data), TRUE, FALSE, FALSE,
                                   error))
        return FALSE;
  }
  return TRUE;
}

BwTokenizer *
bw_tiktoken_load_with_config (const char *path, const char *data, gsize len,
                              const BwTiktokenConfig *config, const BwTokenizerOptions *opts,
                              GError **error)
{
  g_autoptr (BwTokenizer) tok = bw_tokenizer_new (BW_TOKENIZER_TIKTOKEN, path);
  Tiktoken *tt = g_new0 (Tiktoken, 1);
  const char *pattern = opts->pattern ? opts->pattern : "kimi";
  const char *named = bw_split_regex_named (pattern);
  gint32 n_base = 0;

  bw_tokenizer_set_model (tok, &tiktoken_model, tt);
  tt->ranks = bw_byte_map_new (len / 12);
  for (int b = 0; b < 256; b++)
    tt->byte_ids[b] = -1;
  if (!parse_ranks (tok, tt, path, data, len, &n_base, error))
    return NULL;
  if (!add_specials (tok, config, n_base, opts, error))
    return NULL;
  tt->regex = bw_split_regex_new (named ? named : pattern, path, error);
  if (tt->regex == NULL)
    return NULL;
  return g_steal_pointer (&tok);
}

BwTokenizer *
bw_tiktoken_load (const char *path, const char *data, gsize len,
                  const BwTokenizerOptions *opts, GError **error)
{
  g_autofree char *dir = g_path_get_dirname (path);
  g_autofree char *config_path = g_build_filename (dir, "tokenizer_config.json", NULL);
  g_autofree char *config_data = NULL;
  BwTiktokenConfig config = { config_path, NULL, 0 };

  if (g_file_test (config_path, G_FILE_TEST_EXISTS))
    {
      config_data = bw_text_file_load (config_path, &config.len, error);
      if (config_data == NULL)
        return NULL;
      config.data = config_data;
    }
  return bw_tiktoken_load_with_config (path, data, len, &config, opts, error);
}
