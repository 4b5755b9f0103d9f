/* A GGUF file's tokenizer from its metadata (see tokenizer-gguf.h). The facts about which
 * tokens are special, which regexes run for which pre-tokenizer name, and the defaults,
 * follow llama.cpp's llama-vocab.cpp, whose output is the reference. */
#include "text/tokenizer-gguf.h"

#include <string.h>

#include "core/gguf-value.h"
#include "text/bpe-hf.h"
#include "text/byte-map.h"
#include "text/split-regex.h"
#include "text/tokenizer-private.h"

/* tokenizer.ggml.token_type values. */
enum {
  TYPE_NORMAL = 1,
  TYPE_UNKNOWN = 2,
  TYPE_CONTROL = 3,
  TYPE_USER_DEFINED = 4,
  TYPE_UNUSED = 5,
  TYPE_BYTE = 6,
};

/* Token attributes as llama.cpp derives them from the types (bits, since the text-based
 * rules below add CONTROL to a token of another type). */
enum {
  ATTR_UNKNOWN = 1 << 0,
  ATTR_CONTROL = 1 << 1,
  ATTR_USER_DEFINED = 1 << 2,
};

#define MAX_NAMES 8
#define MAX_SPLITS 7

/* A tokenizer.ggml.pre value and the named patterns (split-regex.c) that run, in order. */
typedef struct {
  const char *names[MAX_NAMES];
  const char *splits[MAX_SPLITS];
  gboolean ignore_merges;
  gboolean add_bos;          /* when tokenizer.ggml.add_bos_token is absent */
} PreTokenizer;

static const PreTokenizer pre_tokenizers[] = {
  { { "default" },
    { "llama-punct", "llama-gpt2", "llama-digits", "llama-ascii-digits3" }, FALSE, FALSE },
  { { "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral" },
    { "llama3" }, TRUE, TRUE },
  { { "dbrx", "smaug-bpe", "glm4", "chatglm-bpe" }, { "llama3" }, FALSE, FALSE },
  { { "deepseek-llm" },
    { "deepseek-newline", "deepseek-llm-letters", "deepseek-llm-punct",
      "deepseek-llm-trailing-space", "deepseek-cjk", "llama-digits" }, FALSE, FALSE },
  { { "deepseek-coder" },
    { "deepseek-newline", "deepseek-coder-letters", "deepseek-coder-punct", "deepseek-cjk",
      "llama-digit" }, FALSE, FALSE },
  { { "deepseek-v3", "hunyuan-dense" },
    { "llama-digits3", "deepseek-v3-cjk", "deepseek-v3" }, FALSE, FALSE },
  { { "gpt-2", "phi-2", "mpt", "olmo", "jais", "exaone4" }, { "llama-gpt2" }, FALSE, FALSE },
  { { "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b" },
    { "llama-digit", "llama-gpt2" }, FALSE, FALSE },
  { { "qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "megrez", "grok-2" },
    { "qwen2" }, FALSE, FALSE },
  { { "qwen35" }, { "qwen35" }, FALSE, FALSE },
  { { "tekken" }, { "tekken" }, TRUE, TRUE },
  { { "gpt-4o", "llama4", "minimax-m2" }, { "gpt-4o" }, FALSE, FALSE },
  { { "kimi-k2" }, { "kimi" }, FALSE, FALSE },
};

static const PreTokenizer *
find_pre_tokenizer (const char *name)
{
  for (gsize i = 0; i < G_N_ELEMENTS (pre_tokenizers); i++)
    for (int j = 0; j < MAX_NAMES && pre_tokenizers[i].names[j] != NULL; j++)
      if (strcmp (pre_tokenizers[i].names[j], name) == 0)
        return &pre_tokenizers[i];
  return NULL;
}

/* Texts llama.cpp makes control tokens whatever their stored type: those ending a turn
 * (its end-of-generation list), and fill-in-the-middle markers when the file names no id
 * for that role. */
static const char *const eog_texts[] = {
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
  "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]",
  "[EOS]", "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
  "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[", NULL,
};

/* Texts of an end-of-turn token (special_eot_id) for a file that names none; the first
 * one the vocabulary has is taken. */
static const char *const eot_texts[] = {
  "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
  "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
  "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "<end_of_utterance>",
  NULL,
};

static const struct {
  const char *key;
  const char *texts[9];
} fim_roles[] = {
  { "tokenizer.ggml.fim_pre_token_id",
    { "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
      "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>", "\xe2\x96\x81<PRE>",
      "<|code_prefix|>", "<|prefix|>" } },
  { "tokenizer.ggml.fim_suf_token_id",
    { "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
      "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "<SUF>", "\xe2\x96\x81<SUF>",
      "<|code_suffix|>", "<|suffix|>" } },
  { "tokenizer.ggml.fim_mid_token_id",
    { "<|fim_middle|>", "<fim-middle>", "<fim_middle>",
      "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>", "\xe2\x96\x81<MID>",
      "<|code_middle|>", "<|middle|>" } },
  { "tokenizer.ggml.fim_pad_token_id",
    { "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]" } },
  { "tokenizer.ggml.fim_rep_token_id",
    { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>" } },
  { "tokenizer.ggml.fim_sep_token_id", { "<|file_sep|>" } },
};

/* gpt-oss's harmony format tokens, which llama.cpp always renders and always matches. */
static const char *const harmony_texts[] = {
  "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL,
};

typedef struct {
  const BwGguf *g;
  const char *file;
  const BwGgufValue *tokens;
  gint32 n;
  BwByteMap *by_text;        /* token text -> id */
  guint8 *attrs;             /* per id */
  BwTokenizer *tok;
  BwByteBpe *bpe;
} Loader;

static gboolean
fail (const Loader *ld, BwTextError code, GError **error, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (const Loader *ld, BwTextError code, GError **error, const char *fmt, ...)
{
  g_autofree char *msg = NULL;
  va_list args;

  va_start (args, fmt);
  msg = g_strdup_vprintf (fmt, args);
  va_end (args);
  g_set_error (error, BW_TEXT_ERROR, code, "%s: %s", ld->file, msg);
  return FALSE;
}

static gint32
id_of (const Loader *ld, const char *text)
{
  return bw_byte_map_lookup (ld->by_text, text, strlen (text));
}

/* Adds CONTROL to the tokens of these texts (up to n_texts, or a NULL entry). */
static void
make_control (Loader *ld, const char *const *texts, gsize n_texts)
{
  for (gsize i = 0; i < n_texts && texts[i] != NULL; i++)
    {
      gint32 id = id_of (ld, texts[i]);
      if (id >= 0)
        ld->attrs[id] |= ATTR_CONTROL;
    }
}

/* llama.cpp's text-based corrections of the stored types. */
static void
apply_text_rules (Loader *ld)
{
  gint32 end = id_of (ld, "<|end|>");

  for (gsize i = 0; i < G_N_ELEMENTS (fim_roles); i++)
    if (bw_gguf_lookup (ld->g, fim_roles[i].key) == NULL)
      make_control (ld, fim_roles[i].texts, G_N_ELEMENTS (fim_roles[i].texts));
  make_control (ld, eog_texts, G_N_ELEMENTS (eog_texts));
  for (gsize i = 0; harmony_texts[i] != NULL; i++)
    {
      gint32 id = id_of (ld, harmony_texts[i]);
      if (id >= 0)
        ld->attrs[id] = ATTR_USER_DEFINED;
    }
  /* Harmony (and solar-open) end a message with <|end|> but keep generating. */
  if (end >= 0 &&
      ((id_of (ld, "<|return|>") >= 0 && id_of (ld, "<|call|>") >= 0) ||
       (id_of (ld, "<|calls|>") >= 0 && id_of (ld, "<|flush|>") >= 0)))
    ld->attrs[end] = ATTR_USER_DEFINED;
}

/* Token i's text; an empty one is named "[EMPTY_i]", as llama.cpp names it. */
static const char *
token_at (const Loader *ld, gint32 i, GString *empty_name, gsize *len)
{
  const char *text = bw_gguf_array_string (ld->tokens, (guint64) i, len);

  if (*len > 0)
    return text;
  g_string_printf (empty_name, "[EMPTY_%d]", i);
  *len = empty_name->len;
  return empty_name->str;
}

static guint8
attr_of_type (gint64 type)
{
  switch (type)
    {
    case TYPE_UNKNOWN: return ATTR_UNKNOWN;
    case TYPE_CONTROL: return ATTR_CONTROL;
    case TYPE_USER_DEFINED: return ATTR_USER_DEFINED;
    default: return 0;
    }
}

/* Indexes the token texts and their types. */
static gboolean
read_tokens (Loader *ld, GError **error)
{
  const BwGgufValue *types = NULL;
  g_autoptr (GString) empty_name = g_string_new (NULL);

  if (bw_gguf_lookup (ld->g, "tokenizer.ggml.token_type") != NULL)
    {
      types = bw_gguf_get_array (ld->g, "tokenizer.ggml.token_type", BW_GGUF_I32, error);
      if (types == NULL)
        return FALSE;
      if (types->count < (guint64) ld->n)
        return fail (ld, BW_TEXT_ERROR_FORMAT, error,
                     "tokenizer.ggml.token_type has %" G_GUINT64_FORMAT " entries for %d tokens",
                     types->count, ld->n);
    }
  for (gint32 i = 0; i < ld->n; i++)
    {
      gsize len;
      const char *text = token_at (ld, i, empty_name, &len);

      if (memchr (text, '\0', len) != NULL || !g_utf8_validate (text, (gssize) len, NULL))
        return fail (ld, BW_TEXT_ERROR_FORMAT, error,
                     "tokenizer.ggml.tokens[%d] holds a NUL byte or is not UTF-8", i);
      if (!bw_byte_map_insert (ld->by_text, text, len, i))
        return fail (ld, BW_TEXT_ERROR_FORMAT, error,
                     "tokenizer.ggml.tokens has \"%.*s\" twice (ids %d and %d)", (int) len, text,
                     bw_byte_map_lookup (ld->by_text, text, len), i);
      ld->attrs[i] = types ? attr_of_type (bw_gguf_array_int (types, (guint64) i)) : 0;
    }
  apply_text_rules (ld);
  return TRUE;
}

/* Gives every id its bytes: special and user-defined tokens as added tokens (matched in the
 * text before BPE), the others as the BPE vocabulary. */
static gboolean
add_tokens (Loader *ld, GError **error)
{
  g_autoptr (GString) text = g_string_new (NULL);
  g_autoptr (GString) empty_name = g_string_new (NULL);
  g_autoptr (GByteArray) scratch = g_byte_array_new ();

  for (gint32 i = 0; i < ld->n; i++)
    {
      gsize len;
      const char *s = token_at (ld, i, empty_name, &len);
      guint8 attr = ld->attrs[i];

      g_string_truncate (text, 0);
      g_string_append_len (text, s, (gssize) len);
      if (attr != 0)
        {
          gboolean special = (attr & (ATTR_CONTROL | ATTR_UNKNOWN)) != 0;
          if (!bw_tokenizer_add_token (ld->tok, i, text->str, special, FALSE, FALSE, error))
            return FALSE;
        }
      else if (!bw_byte_bpe_add_vocab (ld->bpe, ld->tok, i, text->str, scratch, error))
        return FALSE;
    }
  bw_byte_bpe_index_bytes (ld->bpe);
  return TRUE;
}

/* Ranks the merges in file order. A pair listed twice keeps its first rank, as llama.cpp's
 * map does; a merge whose halves or result are not tokens can never produce a token and is
 * left out. */
static gboolean
add_merges (Loader *ld, GError **error)
{
  const BwGgufValue *merges = bw_gguf_get_array (ld->g, "tokenizer.ggml.merges",
                                                 BW_GGUF_STRING, error);
  g_autoptr (GByteArray) joined = g_byte_array_new ();

  if (merges == NULL)
    return FALSE;
  if (merges->count > G_MAXINT32)
    return fail (ld, BW_TEXT_ERROR_FORMAT, error, "tokenizer.ggml.merges is too long");
  bw_byte_bpe_reserve_merges (ld->bpe, (guint) merges->count);
  for (guint r = 0; r < merges->count; r++)
    {
      gsize len;
      const char *s = bw_gguf_array_string (merges, r, &len);
      const char *space = len > 1 ? memchr (s + 1, ' ', len - 1) : NULL;
      gsize la, lb;
      gint32 a, b, ab;

      if (space == NULL)
        continue;
      la = (gsize) (space - s);
      lb = len - la - 1;
      g_byte_array_set_size (joined, 0);
      g_byte_array_append (joined, (const guint8 *) s, (guint) la);
      g_byte_array_append (joined, (const guint8 *) space + 1, (guint) lb);
      a = bw_byte_map_lookup (ld->by_text, s, la);
      b = bw_byte_map_lookup (ld->by_text, space + 1, lb);
      ab = bw_byte_map_lookup (ld->by_text, joined->data, joined->len);
      if (a >= 0 && b >= 0 && ab >= 0)
        bw_byte_bpe_set_merge (ld->bpe, r, a, b, ab);
    }
  return TRUE;
}

/* An id key: -1 when absent or outside the vocabulary (llama.cpp ignores those too). */
static gboolean
read_id (const Loader *ld, const char *key, gint32 *out, GError **error)
{
  const BwGgufValue *v = bw_gguf_lookup (ld->g, key);
  gint64 id;

  *out = -1;
  if (v == NULL)
    return TRUE;
  if (!bw_gguf_value_int (v, ld->file, key, 0, G_MAXUINT32, &id, error))
    return FALSE;
  if (id < ld->n)
    *out = (gint32) id;
  return TRUE;
}

static gboolean
read_flag (const Loader *ld, const char *key, gboolean fallback, gboolean *out, GError **error)
{
  *out = fallback;
  return bw_gguf_lookup (ld->g, key) == NULL || bw_gguf_get_bool (ld->g, key, out, error);
}

/* The first token of texts that the vocabulary has, or -1. */
static gint32
first_present (const Loader *ld, const char *const *texts)
{
  for (gsize i = 0; texts[i] != NULL; i++)
    {
      gint32 id = id_of (ld, texts[i]);
      if (id >= 0)
        return id;
    }
  return -1;
}

static gboolean
compute_specials (Loader *ld, const PreTokenizer *pre, BwTokenizerSpecials *out,
                  GError **error)
{
  BwTokenizerSpecials sp;

  if (!read_id (ld, "tokenizer.ggml.bos_token_id", &sp.bos, error) ||
      !read_id (ld, "tokenizer.ggml.eos_token_id", &sp.eos, error) ||
      !read_id (ld, "tokenizer.ggml.eot_token_id", &sp.eot, error) ||
      !read_id (ld, "tokenizer.ggml.eom_token_id", &sp.eom, error) ||
      !read_id (ld, "tokenizer.ggml.padding_token_id", &sp.pad, error) ||
      !read_id (ld, "tokenizer.ggml.unknown_token_id", &sp.unk, error) ||
      !read_flag (ld, "tokenizer.ggml.add_bos_token", pre->add_bos, &sp.add_bos, error) ||
      !read_flag (ld, "tokenizer.ggml.add_eos_token", FALSE, &sp.add_eos, error))
    return FALSE;
  if (sp.eot < 0)
    sp.eot = first_present (ld, eot_texts);
  if (sp.eom < 0)
    sp.eom = id_of (ld, "<|eom_id|>");
  if (sp.add_bos && sp.bos < 0)
    return fail (ld, BW_TEXT_ERROR_FORMAT, error,
                 "tokenizer.ggml.add_bos_token is true, but tokenizer.ggml.bos_token_id is not set");
  if (sp.add_eos && sp.eos < 0)
    return fail (ld, BW_TEXT_ERROR_FORMAT, error,
                 "tokenizer.ggml.add_eos_token is true, but tokenizer.ggml.eos_token_id is not set");
  *out = sp;
  return TRUE;
}

static gboolean
read_specials (Loader *ld, const PreTokenizer *pre, GError **error)
{
  BwTokenizerSpecials sp;

  if (!compute_specials (ld, pre, &sp, error))
    return FALSE;
  bw_tokenizer_set_specials (ld->tok, &sp);
  return TRUE;
}

static gboolean
add_splits (Loader *ld, const PreTokenizer *pre, GError **error)
{
  g_autofree char *what = g_strdup_printf ("%s: tokenizer.ggml.pre", ld->file);

  for (int i = 0; i < MAX_SPLITS && pre->splits[i] != NULL; i++)
    if (!bw_byte_bpe_add_split (ld->bpe, bw_split_regex_named (pre->splits[i]), what, error))
      return FALSE;
  bw_byte_bpe_set_ignore_merges (ld->bpe, pre->ignore_merges);
  return TRUE;
}

/* The model and pre-tokenizer the file names; NULL with an error when unsupported. */
static const PreTokenizer *
check_kind (Loader *ld, GError **error)
{
  const char *model = bw_gguf_get_string (ld->g, "tokenizer.ggml.model", error);
  const BwGgufValue *pre_v = bw_gguf_lookup (ld->g, "tokenizer.ggml.pre");
  const char *pre_name = "default";
  const PreTokenizer *pre;

  if (model == NULL)
    return NULL;
  if (strcmp (model, "gpt2") != 0)
    {
      fail (ld, BW_TEXT_ERROR_UNSUPPORTED, error,
            "tokenizer.ggml.model \"%s\" is not supported (only \"gpt2\", byte-level BPE)", model);
      return NULL;
    }
  /* A file without the key is split as llama.cpp does then, with its default. */
  if (pre_v != NULL &&
      (pre_name = bw_gguf_value_string (pre_v, ld->file, "tokenizer.ggml.pre", error)) == NULL)
    return NULL;
  pre = find_pre_tokenizer (pre_name);
  if (pre == NULL)
    fail (ld, BW_TEXT_ERROR_UNSUPPORTED, error,
          "tokenizer.ggml.pre \"%s\" is not a pre-tokenizer this engine knows", pre_name);
  return pre;
}

/* The tokenizer's kind and its token list, checked; NULL with an error. */
static const PreTokenizer *
begin_loading (Loader *ld, GError **error)
{
  const PreTokenizer *pre = check_kind (ld, error);

  if (pre == NULL)
    return NULL;
  ld->tokens = bw_gguf_get_array (ld->g, "tokenizer.ggml.tokens", BW_GGUF_STRING, error);
  if (ld->tokens == NULL)
    return NULL;
  if (ld->tokens->count == 0 || ld->tokens->count > BW_TOKENIZER_MAX_ID)
    {
      fail (ld, BW_TEXT_ERROR_FORMAT, error,
            "tokenizer.ggml.tokens has %" G_GUINT64_FORMAT " tokens (1 to 2^21 expected)",
            ld->tokens->count);
      return NULL;
    }
  ld->n = (gint32) ld->tokens->count;
  return pre;
}

BwTokenizer *
bw_tokenizer_open_gguf (const BwGguf *g, GError **error)
{
  g_autoptr (BwTokenizer) tok = NULL;
  g_autoptr (BwByteMap) by_text = NULL;
  g_autofree guint8 *attrs = NULL;
  const PreTokenizer *pre;
  Loader ld = { .g = g, .file = g->path };

  if ((pre = begin_loading (&ld, error)) == NULL)
    return NULL;
  ld.by_text = by_text = bw_byte_map_new ((gsize) ld.n);
  ld.attrs = attrs = g_new0 (guint8, (gsize) ld.n);
  ld.tok = tok = bw_tokenizer_new (BW_TOKENIZER_GGUF, g->path);
  ld.bpe = bw_byte_bpe_attach (tok, (gsize) ld.n);
  if (!read_tokens (&ld, error) || !add_tokens (&ld, error) || !add_merges (&ld, error) ||
      !add_splits (&ld, pre, error) || !read_specials (&ld, pre, error))
    return NULL;
  return g_steal_pointer (&tok);
}

BwTokenizer *
bw_tokenizer_open_gguf_path (const char *path, GError **error)
{
  g_autoptr (BwGguf) g = bw_gguf_open (path, error);

  return g != NULL ? bw_tokenizer_open_gguf (g, error) : NULL;
}

void
bw_gguf_vocab_clear (BwGgufVocab *v)
{
  g_clear_pointer (&v->kinds, g_free);
}

gboolean
bw_gguf_vocab_describe (const BwGguf *g, BwGgufVocab *v, GError **error)
{
  g_autoptr (BwByteMap) by_text = NULL;
  const PreTokenizer *pre;
  Loader ld = { .g = g, .file = g->path };

  memset (v, 0, sizeof *v);
  if ((pre = begin_loading (&ld, error)) == NULL)
    return FALSE;
  ld.by_text = by_text = bw_byte_map_new ((gsize) ld.n);
  ld.attrs = g_new0 (guint8, (gsize) ld.n);
  v->kinds = ld.attrs;
  v->n = ld.n;
  if (!read_tokens (&ld, error) || !compute_specials (&ld, pre, &v->specials, error))
    {
      bw_gguf_vocab_clear (v);
      return FALSE;
    }
  for (gint32 i = 0; i < ld.n; i++)
    v->kinds[i] = ld.attrs[i] == 0 ? BW_GGUF_TOKEN_NORMAL
                  : (ld.attrs[i] & (ATTR_CONTROL | ATTR_UNKNOWN)) != 0 ? BW_GGUF_TOKEN_SPECIAL
                  : BW_GGUF_TOKEN_ADDED;
  for (int i = 0; i < MAX_SPLITS && pre->splits[i] != NULL; i++)
    v->splits[i] = bw_split_regex_named (pre->splits[i]);
  v->ignore_merges = pre->ignore_merges;
  return TRUE;
}

const char *
bw_gguf_vocab_token (const BwGguf *g, gint32 id, GString *scratch)
{
  Loader ld = { .g = g, .tokens = bw_gguf_lookup (g, "tokenizer.ggml.tokens") };
  gsize len;
  const char *text = token_at (&ld, id, scratch, &len);
  if (text != scratch->str)
    {
      g_string_truncate (scratch, 0);
      g_string_append_len (scratch, text, (gssize) len);
    }
  return scratch->str;
}
