/* A GGUF file's tokenizer written out as Hugging Face files (see tokenizer-gguf-export.h):
 * the BPE vocabulary and merges with the pre-tokenizer's patterns as Split steps before a
 * regex-free ByteLevel step, added tokens as bw_tokenizer_open_gguf makes them, and the
 * chat template and special tokens' texts in tokenizer_config.json. */
#include "text/tokenizer-gguf-export.h"

#include <string.h>

#include "core/gguf-value.h"
#include "core/safetensors-writer.h"
#include "text/tokenizer-gguf.h"

typedef struct {
  const BwGguf *g;
  const BwGgufVocab *v;
  GHashTable *normal;        /* text -> id + 1, plain BPE tokens only */
  GString *scratch;
} Export;

/* The ByteLevel step, as the pre-tokenizer's last and as the decoder: bytes to and from
 * GPT-2's printable characters, the split left to the steps before it. */
static void
add_byte_level (JsonBuilder *b)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "type");
  json_builder_add_string_value (b, "ByteLevel");
  json_builder_set_member_name (b, "add_prefix_space");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "trim_offsets");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "use_regex");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_end_object (b);
}

static void
add_pre_tokenizer (JsonBuilder *b, const BwGgufVocab *v)
{
  json_builder_set_member_name (b, "pre_tokenizer");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "type");
  json_builder_add_string_value (b, "Sequence");
  json_builder_set_member_name (b, "pretokenizers");
  json_builder_begin_array (b);
  for (int i = 0; i < (int) G_N_ELEMENTS (v->splits) && v->splits[i] != NULL; i++)
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "type");
      json_builder_add_string_value (b, "Split");
      json_builder_set_member_name (b, "pattern");
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "Regex");
      json_builder_add_string_value (b, v->splits[i]);
      json_builder_end_object (b);
      json_builder_set_member_name (b, "behavior");
      json_builder_add_string_value (b, "Isolated");
      json_builder_set_member_name (b, "invert");
      json_builder_add_boolean_value (b, FALSE);
      json_builder_end_object (b);
    }
  add_byte_level (b);
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static gint32
normal_id (const Export *ex, const char *text, gsize len)
{
  g_autofree char *key = g_strndup (text, len);
  return GPOINTER_TO_INT (g_hash_table_lookup (ex->normal, key)) - 1;
}

/* The merges in file order, as [left, right] pairs (a token may hold a space). A merge
 * whose halves or result are not all plain BPE tokens is left out: tokenizer.json names
 * merges by vocab entries, and the GGUF tokenizer never uses one with a half missing (one
 * that makes an added or special token, which no released vocabulary has, is lost). A pair
 * listed twice keeps its first place, as there. */
static gboolean
add_merges (Export *ex, JsonBuilder *b, GError **error)
{
  const BwGgufValue *merges = bw_gguf_get_array (ex->g, "tokenizer.ggml.merges",
                                                 BW_GGUF_STRING, error);
  g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  if (merges == NULL)
    return FALSE;
  json_builder_set_member_name (b, "merges");
  json_builder_begin_array (b);
  for (guint64 r = 0; r < merges->count; r++)
    {
      gsize len;
      const char *s = bw_gguf_array_string (merges, r, &len);
      const char *space = len > 1 ? memchr (s + 1, ' ', len - 1) : NULL;
      if (space == NULL)
        continue;
      gsize la = (gsize) (space - s), lb = len - la - 1;
      g_autofree char *a = g_strndup (s, la), *bb = g_strndup (space + 1, lb);
      g_autofree char *joined = g_strconcat (a, bb, NULL);
      if (normal_id (ex, a, la) < 0 || normal_id (ex, bb, lb) < 0
          || normal_id (ex, joined, la + lb) < 0
          || !g_hash_table_add (seen, g_strndup (s, len)))
        continue;
      json_builder_begin_array (b);
      json_builder_add_string_value (b, a);
      json_builder_add_string_value (b, bb);
      json_builder_end_array (b);
    }
  json_builder_end_array (b);
  return TRUE;
}

static gboolean
add_model (Export *ex, JsonBuilder *b, GError **error)
{
  json_builder_set_member_name (b, "model");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "type");
  json_builder_add_string_value (b, "BPE");
  json_builder_set_member_name (b, "dropout");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "unk_token");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "continuing_subword_prefix");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "end_of_word_suffix");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "fuse_unk");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "byte_fallback");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "ignore_merges");
  json_builder_add_boolean_value (b, ex->v->ignore_merges);
  json_builder_set_member_name (b, "vocab");
  json_builder_begin_object (b);
  for (gint32 i = 0; i < ex->v->n; i++)
    if (ex->v->kinds[i] == BW_GGUF_TOKEN_NORMAL)
      {
        const char *text = bw_gguf_vocab_token (ex->g, i, ex->scratch);
        json_builder_set_member_name (b, text);
        json_builder_add_int_value (b, i);
        g_hash_table_insert (ex->normal, g_strdup (text), GINT_TO_POINTER (i + 1));
      }
  json_builder_end_object (b);
  if (!add_merges (ex, b, error))
    return FALSE;
  json_builder_end_object (b);
  return TRUE;
}

static void
add_token_flags (JsonBuilder *b, const char *text, gboolean special)
{
  json_builder_set_member_name (b, "content");
  json_builder_add_string_value (b, text);
  json_builder_set_member_name (b, "single_word");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "lstrip");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "rstrip");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "normalized");
  json_builder_add_boolean_value (b, FALSE);
  json_builder_set_member_name (b, "special");
  json_builder_add_boolean_value (b, special);
}

static void
add_added_tokens (Export *ex, JsonBuilder *b)
{
  json_builder_set_member_name (b, "added_tokens");
  json_builder_begin_array (b);
  for (gint32 i = 0; i < ex->v->n; i++)
    if (ex->v->kinds[i] != BW_GGUF_TOKEN_NORMAL)
      {
        json_builder_begin_object (b);
        json_builder_set_member_name (b, "id");
        json_builder_add_int_value (b, i);
        add_token_flags (b, bw_gguf_vocab_token (ex->g, i, ex->scratch),
                         ex->v->kinds[i] == BW_GGUF_TOKEN_SPECIAL);
        json_builder_end_object (b);
      }
  json_builder_end_array (b);
}

static gboolean
write_tokenizer_json (Export *ex, const char *dir, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autofree char *path = g_build_filename (dir, "tokenizer.json", NULL);

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "version");
  json_builder_add_string_value (b, "1.0");
  json_builder_set_member_name (b, "truncation");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "padding");
  json_builder_add_null_value (b);
  add_added_tokens (ex, b);
  json_builder_set_member_name (b, "normalizer");
  json_builder_add_null_value (b);
  add_pre_tokenizer (b, ex->v);
  json_builder_set_member_name (b, "post_processor");
  json_builder_add_null_value (b);
  json_builder_set_member_name (b, "decoder");
  add_byte_level (b);
  if (!add_model (ex, b, error))
    return FALSE;
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return bw_json_save_file (root, path, error);
}

/* The text of the token `id` names, as a member (null when there is none). */
static void
add_token_text (Export *ex, JsonBuilder *b, const char *name, gint32 id)
{
  json_builder_set_member_name (b, name);
  if (id >= 0 && id < ex->v->n)
    json_builder_add_string_value (b, bw_gguf_vocab_token (ex->g, id, ex->scratch));
  else
    json_builder_add_null_value (b);
}

/* chat_template: the one template, or the named list when the file has a tool_use one. */
static gboolean
add_chat_template (Export *ex, JsonBuilder *b, GError **error)
{
  static const char *const keys[] = { "tokenizer.chat_template",
                                      "tokenizer.chat_template.tool_use" };
  const char *texts[2] = { NULL, NULL };

  for (int i = 0; i < 2; i++)
    {
      const BwGgufValue *val = bw_gguf_lookup (ex->g, keys[i]);
      if (val != NULL
          && (texts[i] = bw_gguf_value_string (val, ex->g->path, keys[i], error)) == NULL)
        return FALSE;
      if (texts[i] != NULL && (strlen (texts[i]) != val->str_len
                               || !g_utf8_validate (texts[i], -1, NULL)))
        {
          g_set_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT,
                       "%s: %s is not UTF-8 text", ex->g->path, keys[i]);
          return FALSE;
        }
    }
  if (texts[0] == NULL)
    return TRUE;
  json_builder_set_member_name (b, "chat_template");
  if (texts[1] == NULL)
    {
      json_builder_add_string_value (b, texts[0]);
      return TRUE;
    }
  json_builder_begin_array (b);
  for (int i = 0; i < 2; i++)
    {
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "name");
      json_builder_add_string_value (b, i == 0 ? "default" : "tool_use");
      json_builder_set_member_name (b, "template");
      json_builder_add_string_value (b, texts[i]);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  return TRUE;
}

static gboolean
write_tokenizer_config (Export *ex, const char *dir, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autofree char *path = g_build_filename (dir, "tokenizer_config.json", NULL);
  const BwTokenizerSpecials *sp = &ex->v->specials;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "tokenizer_class");
  json_builder_add_string_value (b, "PreTrainedTokenizerFast");
  json_builder_set_member_name (b, "add_bos_token");
  json_builder_add_boolean_value (b, sp->add_bos);
  json_builder_set_member_name (b, "add_eos_token");
  json_builder_add_boolean_value (b, sp->add_eos);
  add_token_text (ex, b, "bos_token", sp->bos);
  add_token_text (ex, b, "eos_token", sp->eos);
  add_token_text (ex, b, "pad_token", sp->pad);
  add_token_text (ex, b, "unk_token", sp->unk);
  json_builder_set_member_name (b, "added_tokens_decoder");
  json_builder_begin_object (b);
  for (gint32 i = 0; i < ex->v->n; i++)
    if (ex->v->kinds[i] != BW_GGUF_TOKEN_NORMAL)
      {
        g_autofree char *key = g_strdup_printf ("%d", i);
        json_builder_set_member_name (b, key);
        json_builder_begin_object (b);
        add_token_flags (b, bw_gguf_vocab_token (ex->g, i, ex->scratch),
                         ex->v->kinds[i] == BW_GGUF_TOKEN_SPECIAL);
        json_builder_end_object (b);
      }
  json_builder_end_object (b);
  if (!add_chat_template (ex, b, error))
    return FALSE;
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return bw_json_save_file (root, path, error);
}

/* generation_config.json: where a reply ends (eos, end of turn, end of message). */
static gboolean
write_generation_config (Export *ex, const char *dir, GError **error)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autofree char *path = g_build_filename (dir, "generation_config.json", NULL);
  const BwTokenizerSpecials *sp = &ex->v->specials;
  gint32 ends[3] = { sp->eos, sp->eot, sp->eom };

  json_builder_begin_object (b);
  if (sp->bos >= 0)
    {
      json_builder_set_member_name (b, "bos_token_id");
      json_builder_add_int_value (b, sp->bos);
    }
  json_builder_set_member_name (b, "eos_token_id");
  json_builder_begin_array (b);
  for (int i = 0; i < 3; i++)
    if (ends[i] >= 0 && (i == 0 || (ends[i] != ends[0] && (i == 1 || ends[i] != ends[1]))))
      json_builder_add_int_value (b, ends[i]);
  json_builder_end_array (b);
  json_builder_end_object (b);
  g_autoptr (JsonNode) root = json_builder_get_root (b);
  return bw_json_save_file (root, path, error);
}

gboolean
bw_tokenizer_gguf_export (const BwGguf *g, const char *dir, GError **error)
{
  BwGgufVocab v;
  gboolean ok;

  if (!bw_gguf_vocab_describe (g, &v, error))
    return FALSE;
  Export ex = { g, &v, g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL),
                g_string_new (NULL) };
  ok = write_tokenizer_json (&ex, dir, error) && write_tokenizer_config (&ex, dir, error)
       && write_generation_config (&ex, dir, error);
  g_hash_table_unref (ex.normal);
  g_string_free (ex.scratch, TRUE);
  bw_gguf_vocab_clear (&v);
  return ok;
}
