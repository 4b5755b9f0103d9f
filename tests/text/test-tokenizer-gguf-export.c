/* A GGUF file's tokenizer written out as tokenizer.json (tokenizer-gguf-export.h) and read
 * back by the tokenizer.json loader: for the two real vocabularies (Qwen2.5 with its
 * user-defined and control tokens, o200k as gpt-4o with its lookahead pattern), every case
 * of tokenize_ref.json and a few more strings give the same ids as the GGUF tokenizer and
 * llama.cpp, with special tokens parsed and without; the same tokens are special; the
 * side files name the specials. */
#include <json-glib/json-glib.h>
#include <string.h>

#include "tmp-dir.h"
#include "text/tokenizer-gguf-export.h"
#include "text/tokenizer-gguf.h"
#include "json-file.h"
#include "json-ids.h"

static char *
encode (const BwTokenizer *tok, const char *text, gboolean allow_special)
{
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GError) error = NULL;
  GString *s = g_string_new (NULL);

  g_assert_true (bw_tokenizer_encode (tok, text, -1, allow_special, ids, &error));
  g_assert_no_error (error);
  for (guint i = 0; i < ids->len; i++)
    g_string_append_printf (s, "%s%d", i ? "," : "", g_array_index (ids, gint32, i));
  return g_string_free (s, FALSE);
}

static void
check_same (const BwTokenizer *gguf, const BwTokenizer *copy, const char *text,
            const char *want, const char *want_plain, guint *failures)
{
  g_autofree char *a = encode (gguf, text, TRUE), *b = encode (copy, text, TRUE);
  g_autofree char *pa = encode (gguf, text, FALSE), *pb = encode (copy, text, FALSE);
  if (strcmp (a, b) != 0 || strcmp (pa, pb) != 0 || (want != NULL && strcmp (b, want) != 0)
      || (want_plain != NULL && strcmp (pb, want_plain) != 0))
    {
      g_test_message ("\"%s\":\n  gguf %s | %s\n  copy %s | %s", text, a, pa, b, pb);
      (*failures)++;
    }
}

static void
check_vocabulary (gconstpointer data)
{
  const char *const *names = data;
  g_autofree char *gguf_path = g_build_filename (BURROW_FIXTURES, "gguf", names[0], names[1],
                                                 NULL);
  g_autofree char *ref_path = g_build_filename (BURROW_FIXTURES, "gguf", names[0],
                                                "tokenize_ref.json", NULL);
  g_autofree char *dir = bw_test_tmp_dir ("burrow-tok-export-XXXXXX");
  g_autoptr (GError) error = NULL;
  g_autoptr (BwGguf) g = bw_gguf_open (gguf_path, &error);
  g_assert_no_error (error);
  g_assert_true (bw_tokenizer_gguf_export (g, dir, &error));
  g_assert_no_error (error);
  g_autoptr (BwTokenizer) gguf = bw_tokenizer_open_gguf (g, &error);
  g_assert_no_error (error);
  g_autoptr (BwTokenizer) copy = bw_tokenizer_open_dir (dir, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (bw_tokenizer_kind (copy), ==, BW_TOKENIZER_HF_BPE);
  g_assert_cmpint (bw_tokenizer_vocab_size (copy), ==, bw_tokenizer_vocab_size (gguf));
  for (gint32 id = 0; id < bw_tokenizer_vocab_size (gguf); id++)
    g_assert_cmpint (bw_tokenizer_is_special (copy, id), ==, bw_tokenizer_is_special (gguf, id));

  g_autoptr (JsonParser) p = json_parser_new ();
  JsonArray *cases = json_object_get_array_member (bw_test_load_object (p, ref_path), "cases");
  guint failures = 0;
  g_assert_cmpuint (json_array_get_length (cases), >, 40);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      g_autofree char *want = bw_test_json_ids (json_object_get_array_member (c, "ids"));
      g_autofree char *plain = bw_test_json_ids (json_object_get_array_member (c,
                                                                        "ids_no_parse_special"));
      check_same (gguf, copy, json_object_get_string_member (c, "text"), want, plain,
                  &failures);
    }
  static const char *const more[] = {
    "<|im_start|>user\nhi<|im_end|>", "<tool_call>{}</tool_call>", "   leading and trailing   ",
    "tab\tnew\nline\r\ncr", "ÄÖÜ äöü ß Ελληνικά Русский", "2024-12-07 12:34:56.789",
    "don't WON'T it's", "🙂🙃 emoji 👍🏽", "<|endoftext|><|endoftext|>",
  };
  for (gsize i = 0; i < G_N_ELEMENTS (more); i++)
    check_same (gguf, copy, more[i], NULL, NULL, &failures);
  g_assert_cmpuint (failures, ==, 0);

  g_autofree char *cfg_path = g_build_filename (dir, "tokenizer_config.json", NULL);
  g_autofree char *gen_path = g_build_filename (dir, "generation_config.json", NULL);
  g_autoptr (JsonParser) q = json_parser_new ();
  g_autoptr (JsonParser) r = json_parser_new ();
  JsonObject *cfg = bw_test_load_object (q, cfg_path);
  JsonObject *gen = bw_test_load_object (r, gen_path);
  gint32 eos = bw_tokenizer_specials (gguf)->eos;
  gsize len;
  const guint8 *eos_text = bw_tokenizer_token_bytes (gguf, eos, &len);
  g_autofree char *eos_str = g_strndup ((const char *) eos_text, len);
  g_assert_cmpstr (json_object_get_string_member (cfg, "eos_token"), ==, eos_str);
  g_assert_false (json_object_get_boolean_member (cfg, "add_bos_token"));
  g_assert_cmpint (json_array_get_int_element (json_object_get_array_member (gen,
                                                                             "eos_token_id"), 0),
                   ==, eos);
}

static const char *const qwen2_names[] = { "tokenizer-qwen2", "qwen2_5-vocab.gguf" };
static const char *const gpt4o_names[] = { "tokenizer-gpt-4o", "o200k_base-vocab.gguf" };

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/tokenizer-gguf-export/qwen2", qwen2_names, check_vocabulary);
  g_test_add_data_func ("/tokenizer-gguf-export/gpt-4o", gpt4o_names, check_vocabulary);
  return g_test_run ();
}
