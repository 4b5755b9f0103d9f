/* HF tokenizer.json byte-level BPE: loading and encoding (see bpe-hf.h). */
#include "text/bpe-hf.h"

#include <string.h>

#include "core/json-load.h"
#include "text/split-regex.h"
#include "text/tokenizer-private.h"

#define MAX_NORMALIZERS 8

typedef enum {
  STEP_SPLIT,
  STEP_BYTE_LEVEL,
} StepKind;

typedef struct {
  StepKind kind;
  BwSplitRegex *regex;        /* SPLIT, or BYTE_LEVEL with use_regex */
  BwSplitMode mode;
  gboolean add_prefix_space;  /* BYTE_LEVEL */
} Step;

struct _BwByteBpe {
  BwByteMap *vocab;           /* raw bytes of byte-level tokens -> id */
  BwByteMap *merges;          /* (left id, right id) -> rank */
  GArray *merged_ids;         /* rank -> id of the merged token */
  gint32 byte_ids[256];
  gint32 unk_id;
  gboolean ignore_merges;
  GNormalizeMode normalizers[MAX_NORMALIZERS];
  int n_normalizers;
  GArray *steps;              /* Step */
};

static void
step_clear (gpointer data)
{
  bw_split_regex_free (((Step *) data)->regex);
}

static void
hf_bpe_free (gpointer impl)
{
  BwByteBpe *m = impl;

  bw_byte_map_free (m->vocab);
  bw_byte_map_free (m->merges);
  if (m->merged_ids)
    g_array_unref (m->merged_ids);
  if (m->steps)
    g_array_unref (m->steps);
  g_free (m);
}

/* ---- The GPT-2 byte-level alphabet ---- */

/* Printable bytes stand for themselves; the other 68 map to U+0100.. in byte order. The
 * alphabet's highest character is U+0143. */
#define ALPHABET_END 0x144

typedef struct {
  gunichar byte_to_char[256];
  gint16 char_to_byte[ALPHABET_END];
} Alphabet;

static const Alphabet *
alphabet (void)
{
  static Alphabet a;
  static gsize once = 0;

  if (g_once_init_enter (&once))
    {
      gunichar next = 256;
      for (int c = 0; c < ALPHABET_END; c++)
        a.char_to_byte[c] = -1;
      for (int i = 0; i < 256; i++)
        {
          gboolean printable = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174;
          a.byte_to_char[i] = printable ? (gunichar) i : next++;
          a.char_to_byte[a.byte_to_char[i]] = (gint16) i;
        }
      g_once_init_leave (&once, 1);
    }
  return &a;
}

gunichar
bw_byte_bpe_char (guint8 byte)
{
  return alphabet ()->byte_to_char[byte];
}

/* The byte a character of the alphabet stands for, or -1. */
static int
char_to_byte (gunichar c)
{
  return c < ALPHABET_END ? alphabet ()->char_to_byte[c] : -1;
}

/* Decodes a vocabulary string written in the alphabet; FALSE if a character is not in it
 * (such tokens decode to their own UTF-8, as HF's ByteLevel decoder does). */
static gboolean
alphabet_to_bytes (const char *s, GByteArray *out)
{
  g_byte_array_set_size (out, 0);
  for (const char *p = s; *p; p = g_utf8_next_char (p))
    {
      int b = char_to_byte (g_utf8_get_char (p));
      guint8 byte = (guint8) b;
      if (b < 0)
        return FALSE;
      g_byte_array_append (out, &byte, 1);
    }
  return TRUE;
}

/* ---- Encoding ---- */

static gint32
pair_rank (gconstpointer model, const guint8 *piece, const BwBpeSymbol *left,
           const BwBpeSymbol *right, gint32 *merged_id)
{
  const BwByteBpe *m = model;
  guint8 key[8];
  gint32 rank;

  bw_byte_map_pair_key (key, left->id, right->id);
  rank = bw_byte_map_lookup (m->merges, key, 8);
  if (rank >= 0)
    *merged_id = g_array_index (m->merged_ids, gint32, rank);
  return rank;
}

static void
encode_piece (const BwByteBpe *m, const guint8 *piece, gsize n, BwEncodeScratch *scratch,
              GArray *ids)
{
  guint first = ids->len, kept = first;
  gint32 whole;

  if (m->ignore_merges && (whole = bw_byte_map_lookup (m->vocab, piece, n)) >= 0)
    {
      g_array_append_val (ids, whole);
      return;
    }
  if (bw_bpe_merge (&scratch->bpe, piece, n, m->byte_ids, pair_rank, m, ids))
    return;
  /* Bytes the vocabulary lacks become the unknown token, or vanish without one. */
  for (guint i = first; i < ids->len; i++)
    {
      gint32 id = g_array_index (ids, gint32, i);
      if (id < 0)
        id = m->unk_id;
      if (id >= 0)
        g_array_index (ids, gint32, kept++) = id;
    }
  g_array_set_size (ids, kept);
}

static gboolean
run_step (const Step *step, GString *work, const BwSpan *span, GArray *out, GError **error)
{
  BwSpan s = *span;

  if (step->kind == STEP_SPLIT)
    return bw_split_regex_run (step->regex, work->str, s.start, s.end, step->mode, out, error);
  if (step->add_prefix_space && work->str[s.start] != ' ')
    {
      gsize start = work->len;
      g_string_append_c (work, ' ');
      g_string_append_len (work, work->str + s.start, (gssize) (s.end - s.start));
      s = (BwSpan) { start, work->len };
    }
  if (step->regex != NULL)
    return bw_split_regex_run (step->regex, work->str, s.start, s.end, BW_SPLIT_ISOLATED,
                               out, error);
  g_array_append_val (out, s);
  return TRUE;
}

static gboolean
hf_bpe_encode (gconstpointer impl, const BwTokenizer *tok, const char *text, gsize len,
               BwEncodeScratch *scratch, GArray *ids, GError **error)
{
  const BwByteBpe *m = impl;
  GString *work = scratch->work;
  BwSpan all;

  g_string_truncate (work, 0);
  g_string_append_len (work, text, (gssize) len);
  for (int i = 0; i < m->n_normalizers; i++)
    {
      g_autofree char *norm = g_utf8_normalize (work->str, (gssize) work->len, m->normalizers[i]);
      g_string_assign (work, norm != NULL ? norm : "");
    }
  if (work->len == 0)
    return TRUE;
  all = (BwSpan) { 0, work->len };
  g_array_set_size (scratch->spans, 0);
  g_array_append_val (scratch->spans, all);
  for (guint k = 0; k < m->steps->len; k++)
    {
      GArray *tmp;
      g_array_set_size (scratch->spans_next, 0);
      for (guint i = 0; i < scratch->spans->len; i++)
        if (!run_step (&g_array_index (m->steps, Step, k), work,
                       &g_array_index (scratch->spans, BwSpan, i), scratch->spans_next, error))
          return FALSE;
      tmp = scratch->spans;
      scratch->spans = scratch->spans_next;
      scratch->spans_next = tmp;
    }
  for (guint i = 0; i < scratch->spans->len; i++)
    {
      const BwSpan *s = &g_array_index (scratch->spans, BwSpan, i);
      encode_piece (m, (const guint8 *) work->str + s->start, s->end - s->start, scratch, ids);
    }
  return TRUE;
}

static const BwTokenizerModel hf_bpe_model = { hf_bpe_encode, hf_bpe_free };

/* ---- Building (shared by tokenizer.json and GGUF vocabularies) ---- */

BwByteBpe *
bw_byte_bpe_attach (BwTokenizer *tok, gsize n_vocab)
{
  BwByteBpe *m = g_new0 (BwByteBpe, 1);

  bw_tokenizer_set_model (tok, &hf_bpe_model, m);
  m->vocab = bw_byte_map_new (MAX (n_vocab, 256));
  m->unk_id = -1;
  m->steps = g_array_new (FALSE, TRUE, sizeof (Step));
  g_array_set_clear_func (m->steps, step_clear);
  return m;
}

gboolean
bw_byte_bpe_add_vocab (BwByteBpe *m, BwTokenizer *tok, gint32 id, const char *text,
                       GByteArray *scratch, GError **error)
{
  if (alphabet_to_bytes (text, scratch))
    bw_byte_map_insert (m->vocab, scratch->data, scratch->len, id);
  else
    g_byte_array_append (g_byte_array_set_size (scratch, 0), (const guint8 *) text,
                         (guint) strlen (text));
  return bw_tokenizer_set_token (tok, id, scratch->data, scratch->len, error);
}

void
bw_byte_bpe_index_bytes (BwByteBpe *m)
{
  for (int b = 0; b < 256; b++)
    {
      guint8 byte = (guint8) b;
      m->byte_ids[b] = bw_byte_map_lookup (m->vocab, &byte, 1);
    }
}

void
bw_byte_bpe_reserve_merges (BwByteBpe *m, guint n)
{
  m->merges = bw_byte_map_new (n);
  m->merged_ids = g_array_sized_new (FALSE, TRUE, sizeof (gint32), n);
  g_array_set_size (m->merged_ids, n);
}

gboolean
bw_byte_bpe_set_merge (BwByteBpe *m, guint rank, gint32 left, gint32 right, gint32 merged)
{
  guint8 key[8];

  g_return_val_if_fail (rank < m->merged_ids->len, FALSE);
  bw_byte_map_pair_key (key, left, right);
  if (!bw_byte_map_insert (m->merges, key, 8, (gint32) rank))
    return FALSE;
  g_array_index (m->merged_ids, gint32, rank) = merged;
  return TRUE;
}

gboolean
bw_byte_bpe_add_split (BwByteBpe *m, const char *pattern, const char *what, GError **error)
{
  Step step = { .kind = STEP_SPLIT, .mode = BW_SPLIT_ISOLATED };

  step.regex = bw_split_regex_new (pattern, what, error);
  if (step.regex == NULL)
    return FALSE;
  g_array_append_val (m->steps, step);
  return TRUE;
}

void
bw_byte_bpe_set_ignore_merges (BwByteBpe *m, gboolean ignore)
{
  m->ignore_merges = ignore;
}

/* ---- Loading ---- */

typedef struct {
  const char *path;
  BwTokenizer *tok;
  BwByteBpe *m;
  GHashTable *vocab_by_text;   /* vocab string (owned by the JSON) -> id */
} Loader;

static gboolean
unsupported (const Loader *ld, const char *what, const char *value, GError **error)
{
  g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_UNSUPPORTED,
               "%s: %s%s%s%s is not supported", ld->path, what, value ? " \"" : "",
               value ? value : "", value ? "\"" : "");
  return FALSE;
}

static gboolean
malformed (const Loader *ld, const char *what, GError **error)
{
  g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "%s: %s", ld->path, what);
  return FALSE;
}

static const char *
member_string (JsonObject *o, const char *name)
{
  return o ? bw_json_node_get_string (json_object_get_member (o, name)) : NULL;
}

/* A boolean member; absent or null gives fallback. FALSE return: not a boolean. */
static gboolean
member_bool (JsonObject *o, const char *name, gboolean fallback, gboolean *out)
{
  JsonNode *n = json_object_get_member (o, name);

  *out = fallback;
  if (bw_json_node_is_missing (n))
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_BOOLEAN)
    return FALSE;
  *out = json_node_get_boolean (n);
  return TRUE;
}

static gboolean
load_normalizer (Loader *ld, JsonNode *node, GError **error)
{
  static const struct { const char *name; GNormalizeMode mode; } forms[] = {
    { "NFC", G_NORMALIZE_NFC }, { "NFD", G_NORMALIZE_NFD },
    { "NFKC", G_NORMALIZE_NFKC }, { "NFKD", G_NORMALIZE_NFKD },
  };
  JsonObject *o;
  const char *type;

  if (bw_json_node_is_missing (node))
    return TRUE;
  o = bw_json_node_get_object (node);
  type = member_string (o, "type");
  if (type == NULL)
    return malformed (ld, "normalizer has no \"type\"", error);
  if (strcmp (type, "Sequence") == 0)
    {
      JsonArray *list = bw_json_node_get_array (json_object_get_member (o, "normalizers"));
      if (list == NULL)
        return malformed (ld, "normalizer Sequence has no \"normalizers\" list", error);
      for (guint i = 0; i < json_array_get_length (list); i++)
        if (!load_normalizer (ld, json_array_get_element (list, i), error))
          return FALSE;
      return TRUE;
    }
  for (gsize i = 0; i < G_N_ELEMENTS (forms); i++)
    if (strcmp (type, forms[i].name) == 0)
      {
        if (ld->m->n_normalizers == MAX_NORMALIZERS)
          return unsupported (ld, "a normalizer chain this long", NULL, error);
        ld->m->normalizers[ld->m->n_normalizers++] = forms[i].mode;
        return TRUE;
      }
  return unsupported (ld, "normalizer", type, error);
}

static gboolean
load_split (Loader *ld, JsonObject *o, Step *step, GError **error)
{
  JsonObject *pattern = bw_json_node_get_object (json_object_get_member (o, "pattern"));
  const char *regex = member_string (pattern, "Regex");
  const char *literal = member_string (pattern, "String");
  const char *behavior = member_string (o, "behavior");
  gboolean invert;

  if (regex == NULL && literal == NULL)
    return malformed (ld, "Split pre-tokenizer has no Regex or String pattern", error);
  if (!member_bool (o, "invert", FALSE, &invert) || invert)
    return unsupported (ld, "Split pre-tokenizer with invert", NULL, error);
  if (g_strcmp0 (behavior, "Isolated") == 0)
    step->mode = BW_SPLIT_ISOLATED;
  else if (g_strcmp0 (behavior, "Removed") == 0)
    step->mode = BW_SPLIT_REMOVED;
  else
    return unsupported (ld, "Split behavior", behavior ? behavior : "(none)", error);
  step->kind = STEP_SPLIT;
  step->regex = regex ? bw_split_regex_new (regex, ld->path, error)
                      : bw_split_regex_new_literal (literal, ld->path, error);
  return step->regex != NULL;
}

static gboolean
load_pre_tokenizer (Loader *ld, JsonNode *node, GError **error)
{
  JsonObject *o = bw_json_node_get_object (node);
  const char *type = member_string (o, "type");
  Step step = { 0 };

  if (type == NULL)
    return unsupported (ld, "a tokenizer.json without a ByteLevel pre-tokenizer", NULL, error);
  if (strcmp (type, "Sequence") == 0)
    {
      JsonArray *list = bw_json_node_get_array (json_object_get_member (o, "pretokenizers"));
      if (list == NULL)
        return malformed (ld, "pre_tokenizer Sequence has no \"pretokenizers\" list", error);
      for (guint i = 0; i < json_array_get_length (list); i++)
        if (!load_pre_tokenizer (ld, json_array_get_element (list, i), error))
          return FALSE;
      return TRUE;
    }
  if (ld->m->steps->len > 0 &&
      g_array_index (ld->m->steps, Step, ld->m->steps->len - 1).kind == STEP_BYTE_LEVEL)
    return unsupported (ld, "a pre-tokenizer after ByteLevel", NULL, error);
  if (strcmp (type, "Split") == 0)
    {
      gboolean ok = load_split (ld, o, &step, error);
      g_array_append_val (ld->m->steps, step);
      return ok;
    }
  if (strcmp (type, "ByteLevel") == 0)
    {
      gboolean use_regex;
      step.kind = STEP_BYTE_LEVEL;
      if (!member_bool (o, "add_prefix_space", FALSE, &step.add_prefix_space) ||
          !member_bool (o, "use_regex", TRUE, &use_regex))
        return malformed (ld, "ByteLevel options are not booleans", error);
      if (use_regex)
        step.regex = bw_split_regex_new (bw_split_regex_named ("gpt2"), ld->path, error);
      g_array_append_val (ld->m->steps, step);
      return !use_regex || step.regex != NULL;
    }
  return unsupported (ld, "pre-tokenizer", type, error);
}

static gboolean
load_vocab (Loader *ld, JsonObject *vocab, GError **error)
{
  g_autoptr (GByteArray) bytes = g_byte_array_new ();
  g_autoptr (GList) names = json_object_get_members (vocab);

  for (GList *l = names; l != NULL; l = l->next)
    {
      const char *name = l->data;
      gint64 id;

      if (!bw_json_node_get_int (json_object_get_member (vocab, name), &id) || id < 0 ||
          id >= BW_TOKENIZER_MAX_ID || *name == '\0' || !g_utf8_validate (name, -1, NULL))
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: vocab entry \"%s\" needs an id in [0, 2^21) and non-empty text",
                       ld->path, name);
          return FALSE;
        }
      g_hash_table_insert (ld->vocab_by_text, (gpointer) name, GINT_TO_POINTER ((gint) id));
      if (!bw_byte_bpe_add_vocab (ld->m, ld->tok, (gint32) id, name, bytes, error))
        return FALSE;
    }
  bw_byte_bpe_index_bytes (ld->m);
  return TRUE;
}

static gint32
vocab_id (const Loader *ld, const char *text)
{
  gpointer value;

  if (!g_hash_table_lookup_extended (ld->vocab_by_text, text, NULL, &value))
    return -1;
  return GPOINTER_TO_INT (value);
}

/* One merge as its two halves: "a b" or ["a", "b"]. */
static gboolean
merge_parts (JsonNode *node, char **a, char **b)
{
  const char *s = bw_json_node_get_string (node);
  JsonArray *pair = bw_json_node_get_array (node);

  if (s != NULL)
    {
      const char *space = strchr (s, ' ');
      if (space == NULL || space == s || space[1] == '\0' || strchr (space + 1, ' ') != NULL)
        return FALSE;
      *a = g_strndup (s, (gsize) (space - s));
      *b = g_strdup (space + 1);
      return TRUE;
    }
  if (pair == NULL || json_array_get_length (pair) != 2)
    return FALSE;
  *a = g_strdup (bw_json_node_get_string (json_array_get_element (pair, 0)));
  *b = g_strdup (bw_json_node_get_string (json_array_get_element (pair, 1)));
  if (*a == NULL || *b == NULL)
    {
      g_clear_pointer (a, g_free);
      g_clear_pointer (b, g_free);
      return FALSE;
    }
  return TRUE;
}

static gboolean
load_merges (Loader *ld, JsonArray *merges, GError **error)
{
  guint n = json_array_get_length (merges);

  bw_byte_bpe_reserve_merges (ld->m, n);
  /* Backwards, so that a pair listed twice keeps its last rank, as HF's map does. */
  for (guint r = n; r-- > 0;)
    {
      g_autofree char *a = NULL, *b = NULL, *ab = NULL;
      gint32 ia, ib, iab;

      if (!merge_parts (json_array_get_element (merges, r), &a, &b))
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: merge %u is neither \"a b\" nor [\"a\", \"b\"]", ld->path, r);
          return FALSE;
        }
      ab = g_strconcat (a, b, NULL);
      ia = vocab_id (ld, a);
      ib = vocab_id (ld, b);
      iab = vocab_id (ld, ab);
      if (ia < 0 || ib < 0 || iab < 0)
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: merge %u (\"%s\" + \"%s\") uses a token missing from the vocab",
                       ld->path, r, a, b);
          return FALSE;
        }
      bw_byte_bpe_set_merge (ld->m, r, ia, ib, iab);
    }
  return TRUE;
}

static gboolean
load_model (Loader *ld, JsonObject *model, GError **error)
{
  const char *type = member_string (model, "type");
  const char *prefix = member_string (model, "continuing_subword_prefix");
  const char *suffix = member_string (model, "end_of_word_suffix");
  const char *unk = member_string (model, "unk_token");
  JsonObject *vocab = bw_json_node_get_object (json_object_get_member (model, "vocab"));
  JsonArray *merges = bw_json_node_get_array (json_object_get_member (model, "merges"));
  JsonNode *dropout = json_object_get_member (model, "dropout");
  gboolean byte_fallback;
  double p = 0;

  if (type != NULL && strcmp (type, "BPE") != 0)
    return unsupported (ld, "model type", type, error);
  if (vocab == NULL || merges == NULL)
    return malformed (ld, "model needs a \"vocab\" object and a \"merges\" list", error);
  if (!member_bool (model, "byte_fallback", FALSE, &byte_fallback) ||
      !member_bool (model, "ignore_merges", FALSE, &ld->m->ignore_merges))
    return malformed (ld, "model options are not booleans", error);
  if (byte_fallback)
    return unsupported (ld, "byte_fallback", NULL, error);
  if ((prefix && *prefix) || (suffix && *suffix))
    return unsupported (ld, "a subword prefix or suffix", NULL, error);
  if (!bw_json_node_is_missing (dropout) && (!bw_json_node_get_number (dropout, &p) || p != 0))
    return unsupported (ld, "BPE dropout", NULL, error);
  if (!load_vocab (ld, vocab, error) || !load_merges (ld, merges, error))
    return FALSE;
  ld->m->unk_id = unk ? vocab_id (ld, unk) : -1;
  return TRUE;
}

static gboolean
load_added_tokens (Loader *ld, JsonArray *added, GError **error)
{
  for (guint i = 0; added != NULL && i < json_array_get_length (added); i++)
    {
      JsonObject *o = bw_json_node_get_object (json_array_get_element (added, i));
      const char *content = member_string (o, "content");
      gboolean special, lstrip, rstrip, single_word;
      gint64 id;

      if (content == NULL || !bw_json_node_get_int (json_object_get_member (o, "id"), &id) ||
          id < 0 || id >= BW_TOKENIZER_MAX_ID ||
          !member_bool (o, "special", FALSE, &special) ||
          !member_bool (o, "lstrip", FALSE, &lstrip) ||
          !member_bool (o, "rstrip", FALSE, &rstrip) ||
          !member_bool (o, "single_word", FALSE, &single_word))
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: added token %u needs an id, a content and boolean flags",
                       ld->path, i);
          return FALSE;
        }
      if (single_word)
        return unsupported (ld, "single_word added token", content, error);
      if (!bw_tokenizer_add_token (ld->tok, (gint32) id, content, special, lstrip, rstrip, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
load_decoder (Loader *ld, JsonNode *node, GError **error)
{
  const char *type = member_string (bw_json_node_get_object (node), "type");

  if (g_strcmp0 (type, "ByteLevel") != 0)
    return unsupported (ld, "decoder", type ? type : "(none)", error);
  return TRUE;
}

BwTokenizer *
bw_hf_bpe_load (const char *path, const char *data, gsize len, GError **error)
{
  g_autoptr (JsonNode) root = bw_json_parse_object (path, data, len, error);
  g_autoptr (BwTokenizer) tok = NULL;
  g_autoptr (GHashTable) vocab_by_text = NULL;
  JsonObject *o, *model;
  BwByteBpe *m;
  Loader ld;

  if (root == NULL)
    return NULL;
  o = json_node_get_object (root);
  tok = bw_tokenizer_new (BW_TOKENIZER_HF_BPE, path);
  m = bw_byte_bpe_attach (tok, 1024);
  vocab_by_text = g_hash_table_new (g_str_hash, g_str_equal);
  ld = (Loader) { path, tok, m, vocab_by_text };

  model = bw_json_node_get_object (json_object_get_member (o, "model"));
  if (model == NULL)
    {
      malformed (&ld, "no \"model\" object", error);
      return NULL;
    }
  if (!load_model (&ld, model, error) ||
      !load_normalizer (&ld, json_object_get_member (o, "normalizer"), error) ||
      !load_pre_tokenizer (&ld, json_object_get_member (o, "pre_tokenizer"), error) ||
      !load_decoder (&ld, json_object_get_member (o, "decoder"), error) ||
      !load_added_tokens (&ld, bw_json_node_get_array (json_object_get_member (o, "added_tokens")), error))
    return NULL;
  if (m->steps->len == 0 ||
      g_array_index (m->steps, Step, m->steps->len - 1).kind != STEP_BYTE_LEVEL)
    {
      unsupported (&ld, "a tokenizer.json without a ByteLevel pre-tokenizer last", NULL, error);
      return NULL;
    }
  return g_steal_pointer (&tok);
}
