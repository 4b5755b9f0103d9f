/* The tokenizer built from GGUF metadata: llama.cpp's ids for every string of the two
 * vocabulary fixtures (Qwen2.5, o200k as gpt-4o) with and without special-token parsing,
 * the byte-level vocabularies of the model fixtures, the chat template found in a file,
 * and clear errors for what the engine does not know. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "tmp-dir.h"
#include "core/checkpoint.h"
#include "text/model-template.h"
#include "text/tokenizer-gguf.h"
#include "json-ids.h"

static char *
fixture (const char *dir, const char *name)
{
  return g_build_filename (BURROW_FIXTURES, "gguf", dir, name, NULL);
}

static char *
ids_text (const gint32 *ids, gsize n)
{
  GString *s = g_string_new (NULL);

  for (gsize i = 0; i < n; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", ids[i]);
  return g_string_free (s, FALSE);
}

static char *
encode (const BwTokenizer *tok, const char *text, gboolean allow_special)
{
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) error = NULL;

  g_assert_true (bw_tokenizer_encode (tok, text, -1, allow_special, ids, &error));
  g_assert_no_error (error);
  return ids_text ((const gint32 *) (void *) ids->data, ids->len);
}

/* Every case of tokenize_ref.json: ids with special tokens parsed and without. */
static void
check_reference (gconstpointer data)
{
  const char *const *names = data;
  g_autofree char *gguf = fixture (names[0], names[1]);
  g_autofree char *ref = fixture (names[0], "tokenize_ref.json");
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (gguf, &error);
  JsonObject *root;
  JsonArray *cases;
  const BwTokenizerSpecials *sp;
  guint failures = 0;

  g_assert_no_error (error);
  g_assert_nonnull (tok);
  g_assert_true (json_parser_load_from_file (parser, ref, &error));
  g_assert_no_error (error);
  root = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpint (bw_tokenizer_kind (tok), ==, BW_TOKENIZER_GGUF);
  g_assert_cmpint (bw_tokenizer_vocab_size (tok), ==, json_object_get_int_member (root, "n_tokens"));
  sp = bw_tokenizer_specials (tok);
  g_assert_cmpint (sp->eos, ==, json_object_get_int_member (root, "eos_id"));
  g_assert_cmpint (sp->bos, ==, -1);
  g_assert_false (sp->add_bos);
  g_assert_false (sp->add_eos);
  cases = json_object_get_array_member (root, "cases");
  g_assert_cmpuint (json_array_get_length (cases), ==, 53);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *text = json_object_get_string_member (c, "text");
      g_autofree char *want = bw_test_json_ids (json_object_get_array_member (c, "ids"));
      g_autofree char *want_plain =
        bw_test_json_ids (json_object_get_array_member (c, "ids_no_parse_special"));
      g_autofree char *got = encode (tok, text, TRUE);
      g_autofree char *got_plain = encode (tok, text, FALSE);

      if (g_strcmp0 (got, want) != 0 || g_strcmp0 (got_plain, want_plain) != 0)
        {
          g_test_message ("case %u \"%s\":\n  want %s | %s\n  got  %s | %s", i, text, want,
                          want_plain, got, got_plain);
          failures++;
        }
    }
  g_assert_cmpuint (failures, ==, 0);
}

static const char *const qwen2_names[] = { "tokenizer-qwen2", "qwen2_5-vocab.gguf" };
static const char *const gpt4o_names[] = { "tokenizer-gpt-4o", "o200k_base-vocab.gguf" };

/* Decoding what was encoded gives the text back, special tokens included. */
static void
test_round_trip (void)
{
  static const char *const texts[] = {
    "mixed 中文 English 日本語 123 🙂", "<|im_start|>user\nhi<|im_end|>", "  \t\r\n x",
  };
  g_autofree char *gguf = fixture (qwen2_names[0], qwen2_names[1]);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (gguf, &error);

  g_assert_no_error (error);
  g_assert_true (bw_tokenizer_is_special (tok, 151644));
  g_assert_false (bw_tokenizer_is_special (tok, 151657));   /* <tool_call>: user-defined */
  g_assert_cmpint (bw_tokenizer_special_id (tok, "<|im_end|>"), ==, 151645);
  g_assert_cmpint (bw_tokenizer_specials (tok)->eot, ==, 151645);
  g_assert_cmpint (bw_tokenizer_specials (tok)->pad, ==, 151643);
  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++)
    for (int special = 0; special < 2; special++)
      {
        g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
        g_autoptr (GByteArray) out = g_byte_array_new ();

        g_assert_true (bw_tokenizer_encode (tok, texts[i], -1, special, ids, &error));
        g_assert_true (bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len,
                                            out, &error));
        g_assert_no_error (error);
        g_assert_cmpmem (out->data, out->len, texts[i], strlen (texts[i]));
      }
}

/* The model fixtures hold a 512-token byte-level vocabulary (ids 0-255 the bytes, 256
 * "ĠĠ", the rest UNUSED padding) with pre "default". */
static void
test_model_vocabularies (void)
{
  static const char *const models[] = {
    "deepseek2-IQ2_XXS", "glm4moe-IQ4_XS", "gpt-oss-MXFP4", "qwen3moe-IQ3_XXS",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *dir = g_build_filename (BURROW_FIXTURES, "gguf", models[i], NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (dir, &error);
      g_autofree char *a = NULL, *b = NULL, *c = NULL;

      g_assert_no_error (error);
      g_assert_cmpint (bw_tokenizer_vocab_size (tok), ==, 512);
      g_assert_cmpint (bw_tokenizer_specials (tok)->bos, ==, 0);
      g_assert_cmpint (bw_tokenizer_specials (tok)->eos, ==, 1);
      a = encode (tok, "Hi  there", TRUE);
      g_assert_cmpstr (a, ==, "72,105,32,32,116,104,101,114,101");
      b = encode (tok, "x   ", TRUE);         /* a whitespace run merges "ĠĠ" */
      g_assert_cmpstr (b, ==, "120,256,32");
      c = encode (tok, "é!", TRUE);
      g_assert_cmpstr (c, ==, "195,169,33");
    }
}

/* ---- A small GGUF written here: metadata only ---- */

static void
put_u32 (GByteArray *b, guint32 v)
{
  g_byte_array_append (b, (const guint8 *) &v, 4);
}

static void
put_u64 (GByteArray *b, guint64 v)
{
  g_byte_array_append (b, (const guint8 *) &v, 8);
}

static void
put_str (GByteArray *b, const char *s)
{
  put_u64 (b, strlen (s));
  g_byte_array_append (b, (const guint8 *) s, (guint) strlen (s));
}

static void
kv_str (GByteArray *b, const char *key, const char *value)
{
  put_str (b, key);
  put_u32 (b, 8);
  put_str (b, value);
}

static void
kv_u32 (GByteArray *b, const char *key, guint32 value)
{
  put_str (b, key);
  put_u32 (b, 4);
  put_u32 (b, value);
}

static void
kv_bool (GByteArray *b, const char *key, gboolean value)
{
  guint8 v = value ? 1 : 0;

  put_str (b, key);
  put_u32 (b, 7);
  g_byte_array_append (b, &v, 1);
}

static void
kv_strs (GByteArray *b, const char *key, const char *const *values, guint64 n)
{
  put_str (b, key);
  put_u32 (b, 9);
  put_u32 (b, 8);
  put_u64 (b, n);
  for (guint64 i = 0; i < n; i++)
    put_str (b, values[i]);
}

typedef struct {
  const char *model;         /* tokenizer.ggml.model */
  const char *pre;           /* NULL: absent */
  const char *template;      /* NULL: absent */
  const char *tool_template; /* NULL: absent */
  gboolean duplicate;        /* a token listed twice */
  gboolean add_bos;
  gboolean bos;              /* write bos_token_id */
  gboolean empty;            /* token 257 empty instead of "</s>" */
  gboolean no_merges;        /* leave tokenizer.ggml.merges out */
} Spec;

/* 256 byte tokens (id = byte), "<s>" 256, "</s>" 257 and "ĠĠ" 258 with its merge. */
static char *
write_gguf (const char *dir, const char *name, const Spec *spec)
{
  g_autoptr (GByteArray) b = g_byte_array_new ();
  g_autoptr (GPtrArray) tokens = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GError) error = NULL;
  const char *merges[] = { "Ġ Ġ" };
  char *path = g_build_filename (dir, name, NULL);
  guint32 n_kv = spec->no_merges ? 4 : 5;
  gunichar next = 256;

  /* GPT-2's byte-to-unicode alphabet: printable bytes stand for themselves. */
  for (int i = 0; i < 256; i++)
    {
      gboolean printable = (i >= 33 && i <= 126) || (i >= 161 && i <= 172) || i >= 174;
      gunichar c;
      char buf[8] = { 0 };
      c = printable ? (gunichar) i : next++;
      g_unichar_to_utf8 (c, buf);
      g_ptr_array_add (tokens, g_strdup (buf));
    }
  g_ptr_array_add (tokens, g_strdup ("<s>"));
  g_ptr_array_add (tokens, g_strdup (spec->duplicate ? "a" : spec->empty ? "" : "</s>"));
  g_ptr_array_add (tokens, g_strdup ("ĠĠ"));
  n_kv += (spec->pre != NULL) + (spec->template != NULL) + (spec->tool_template != NULL) +
          (spec->add_bos) + (spec->bos);
  g_byte_array_append (b, (const guint8 *) "GGUF", 4);
  put_u32 (b, 3);
  put_u64 (b, 0);
  put_u64 (b, n_kv);
  kv_str (b, "general.architecture", "qwen3moe");
  kv_str (b, "tokenizer.ggml.model", spec->model);
  if (spec->pre != NULL)
    kv_str (b, "tokenizer.ggml.pre", spec->pre);
  kv_strs (b, "tokenizer.ggml.tokens", (const char *const *) tokens->pdata, tokens->len);
  if (!spec->no_merges)
    kv_strs (b, "tokenizer.ggml.merges", merges, 1);
  kv_u32 (b, "tokenizer.ggml.eos_token_id", 257);
  if (spec->bos)
    kv_u32 (b, "tokenizer.ggml.bos_token_id", 256);
  if (spec->add_bos)
    kv_bool (b, "tokenizer.ggml.add_bos_token", TRUE);
  if (spec->template != NULL)
    kv_str (b, "tokenizer.chat_template", spec->template);
  if (spec->tool_template != NULL)
    kv_str (b, "tokenizer.chat_template.tool_use", spec->tool_template);
  while (b->len % 32 != 0)
    g_byte_array_append (b, (const guint8 *) "", 1);
  g_assert_true (g_file_set_contents (path, (const char *) b->data, b->len, &error));
  g_assert_no_error (error);
  return path;
}

static void
test_chat_template (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-gguf-tok-XXXXXX");
  const char *tmpl = "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}"
                     "{% endfor %}{{ eos_token }}";
  Spec spec = { "gpt2", "qwen2", tmpl, "tools: {{ tools | length }}", FALSE, FALSE, TRUE };
  g_autofree char *path = write_gguf (dir, "with-template.gguf", &spec);
  g_autofree char *bare_path = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (path, &error);
  g_autoptr (BwGguf) bare = NULL;
  g_autoptr (BwModelTemplate) mt = NULL, tools = NULL, none = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (JsonObject) vars = NULL;
  g_autofree char *out = NULL;

  g_assert_no_error (error);
  mt = bw_model_template_from_gguf (g, FALSE, &error);
  g_assert_no_error (error);
  g_assert_nonnull (mt);
  g_assert_cmpstr (mt->source, ==, tmpl);
  g_assert_cmpstr (mt->bos_token, ==, "<s>");
  g_assert_cmpstr (mt->eos_token, ==, "</s>");
  g_assert_nonnull (strstr (mt->origin, "tokenizer.chat_template"));
  g_assert_true (json_parser_load_from_data (parser, "[{\"role\":\"user\",\"content\":\"hi\"}]",
                                             -1, &error));
  vars = bw_chat_template_vars (mt, json_node_get_array (json_parser_get_root (parser)), NULL,
                                FALSE, NULL);
  out = bw_model_template_render (mt, vars, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (out, ==, "<s><user>hi</s>");

  tools = bw_model_template_from_gguf (g, TRUE, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (tools->source, ==, "tools: {{ tools | length }}");

  spec.template = spec.tool_template = NULL;
  bare_path = write_gguf (dir, "bare.gguf", &spec);
  bare = bw_gguf_open (bare_path, &error);
  g_assert_no_error (error);
  none = bw_model_template_from_gguf (bare, TRUE, &error);
  g_assert_no_error (error);
  g_assert_null (none);
}

/* A file without tokenizer.ggml.pre is split with llama.cpp's default; add_bos_token is
 * honoured; control tokens are special. */
static void
test_small_file (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-gguf-tok-XXXXXX");
  Spec spec = { "gpt2", NULL, NULL, NULL, FALSE, TRUE, TRUE };
  g_autofree char *path = write_gguf (dir, "small.gguf", &spec);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (path, &error);
  g_autofree char *ids = NULL;

  g_assert_no_error (error);
  g_assert_true (bw_tokenizer_specials (tok)->add_bos);
  g_assert_cmpint (bw_tokenizer_specials (tok)->bos, ==, 256);
  ids = encode (tok, "a  b", TRUE);
  g_assert_cmpstr (ids, ==, "97,32,32,98");
}

/* An empty token is named as llama.cpp names it rather than refused. */
static void
test_empty_token (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-gguf-tok-XXXXXX");
  Spec spec = { "gpt2", "qwen2", NULL, NULL, FALSE, FALSE, TRUE, TRUE };
  g_autofree char *path = write_gguf (dir, "empty.gguf", &spec);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (path, &error);
  const guint8 *bytes;
  gsize len = 0;

  g_assert_no_error (error);
  bytes = bw_tokenizer_token_bytes (tok, 257, &len);
  g_assert_cmpmem (bytes, len, "[EMPTY_257]", 11);
}

/* Every pre-tokenizer name compiles and splits text that decodes back whole; with this
 * byte vocabulary only two spaces kept in one piece merge (one "ĠĠ" id for two bytes). */
static void
test_every_pre_tokenizer (void)
{
  static const char *const pres[] = {
    "default", "llama3", "llama-bpe", "dbrx", "glm4", "chatglm-bpe", "deepseek-llm",
    "deepseek-coder", "deepseek-v3", "gpt-2", "starcoder", "qwen2", "qwen35", "grok-2",
    "tekken", "gpt-4o", "llama4", "kimi-k2",
  };
  const char *text = "a   1234 \xe4\xb8\xad\xe6\x96\x87 I'm Caf\xc3\xa9!! \r\n x";
  g_autofree char *dir = bw_test_tmp_dir ("burrow-gguf-tok-XXXXXX");

  for (gsize i = 0; i < G_N_ELEMENTS (pres); i++)
    {
      Spec spec = { "gpt2", pres[i], NULL, NULL, FALSE, FALSE, TRUE };
      g_autofree char *name = g_strdup_printf ("pre-%s.gguf", pres[i]);
      g_autofree char *path = write_gguf (dir, name, &spec);
      g_autoptr (GError) error = NULL;
      g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (path, &error);
      g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
      g_autoptr (GByteArray) out = g_byte_array_new ();

      g_assert_no_error (error);
      g_assert_true (bw_tokenizer_encode (tok, text, -1, TRUE, ids, &error));
      g_assert_true (bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len,
                                          out, &error));
      g_assert_no_error (error);
      g_assert_cmpmem (out->data, out->len, text, strlen (text));
      g_assert_cmpuint (ids->len, <, strlen (text));
    }
}

static void
expect_error (const Spec *spec, GQuark domain, int code, const char *needle)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-gguf-tok-XXXXXX");
  g_autofree char *path = write_gguf (dir, "bad.gguf", spec);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open_gguf_path (path, &error);

  g_assert_null (tok);
  g_assert_error (error, domain, code);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "bad.gguf"));
  g_assert_nonnull (strstr (error->message, needle));
}

static void
test_errors (void)
{
  Spec unknown_pre = { "gpt2", "no-such-pre", NULL, NULL, FALSE, FALSE, FALSE };
  Spec spm = { "llama", "default", NULL, NULL, FALSE, FALSE, FALSE };
  Spec duplicate = { "gpt2", "qwen2", NULL, NULL, TRUE, FALSE, FALSE };
  Spec bos_missing = { "gpt2", "qwen2", NULL, NULL, FALSE, TRUE, FALSE };

  Spec no_merges = { "gpt2", "qwen2", NULL, NULL, FALSE, FALSE, FALSE, FALSE, TRUE };

  expect_error (&unknown_pre, BW_TEXT_ERROR, BW_TEXT_ERROR_UNSUPPORTED,
                "tokenizer.ggml.pre \"no-such-pre\"");
  expect_error (&spm, BW_TEXT_ERROR, BW_TEXT_ERROR_UNSUPPORTED,
                "tokenizer.ggml.model \"llama\"");
  expect_error (&duplicate, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "\"a\" twice");
  expect_error (&bos_missing, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT, "bos_token_id is not set");
  expect_error (&no_merges, BW_CHECKPOINT_ERROR, BW_CHECKPOINT_ERROR_CONFIG,
                "tokenizer.ggml.merges");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/tokenizer-gguf/reference/qwen2", qwen2_names, check_reference);
  g_test_add_data_func ("/tokenizer-gguf/reference/gpt-4o", gpt4o_names, check_reference);
  g_test_add_func ("/tokenizer-gguf/round-trip", test_round_trip);
  g_test_add_func ("/tokenizer-gguf/model-vocabularies", test_model_vocabularies);
  g_test_add_func ("/tokenizer-gguf/chat-template", test_chat_template);
  g_test_add_func ("/tokenizer-gguf/small-file", test_small_file);
  g_test_add_func ("/tokenizer-gguf/empty-token", test_empty_token);
  g_test_add_func ("/tokenizer-gguf/every-pre-tokenizer", test_every_pre_tokenizer);
  g_test_add_func ("/tokenizer-gguf/errors", test_errors);
  return g_test_run ();
}
