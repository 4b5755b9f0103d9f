/* Special-token layouts the real checkpoints use, on small synthetic tokenizer files:
 * Kimi Linear (258 specials, two beyond the usual 256), K3 (exactly 256), GLM-5.2's
 * tokenizer.json added tokens; stop ids; chat prompts encoded with their specials. */
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "chat-formats.h"
#include "text/tokenizer.h"

/* A tiktoken.model with the 256 single bytes plus a few merges. */
#define N_BASE 262
static const char *const merges[] = { "he", "ll", "hell", "hello", "us", "user" };

typedef struct {
  char *dir;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;

  f->dir = bw_test_tmp_dir ("burrow-text-XXXXXX");
  g_assert_no_error (error);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  const char *names[] = { "tiktoken.model", "tokenizer_config.json", "tokenizer.json" };

  for (gsize i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *p = g_build_filename (f->dir, names[i], NULL);
      g_remove (p);
    }
  g_rmdir (f->dir);
  g_free (f->dir);
}

static char *
write_file (Fixture *f, const char *name, const char *contents)
{
  g_autoptr (GError) error = NULL;
  char *path = g_build_filename (f->dir, name, NULL);

  g_assert_true (g_file_set_contents (path, contents, -1, &error));
  g_assert_no_error (error);
  return path;
}

static char *
write_tiktoken (Fixture *f, const char *const *special_names, const int *special_ids, gsize n)
{
  g_autoptr (GString) model = g_string_new (NULL);
  g_autoptr (GString) config = g_string_new ("{\"added_tokens_decoder\": {");
  g_autofree char *config_path = NULL;

  for (int b = 0; b < 256; b++)
    {
      guint8 byte = (guint8) b;
      g_autofree char *b64 = g_base64_encode (&byte, 1);
      g_string_append_printf (model, "%s %d\n", b64, b);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (merges); i++)
    {
      g_autofree char *b64 = g_base64_encode ((const guchar *) merges[i], strlen (merges[i]));
      g_string_append_printf (model, "%s %d\n", b64, 256 + (int) i);
    }
  for (gsize i = 0; i < n; i++)
    g_string_append_printf (config, "%s\"%d\": {\"content\": \"%s\", \"special\": true}",
                            i ? ", " : "", special_ids[i], special_names[i]);
  g_string_append (config, "}}");
  config_path = write_file (f, "tokenizer_config.json", config->str);
  return write_file (f, "tiktoken.model", model->str);
}

static GArray *
encode (BwTokenizer *tok, const char *text, gboolean allow_special)
{
  g_autoptr (GError) error = NULL;
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (gint32));

  g_assert_true (bw_tokenizer_encode (tok, text, -1, allow_special, ids, &error));
  g_assert_no_error (error);
  return ids;
}

static void
assert_ids (GArray *ids, const gint32 *want, gsize n)
{
  g_assert_cmpuint (ids->len, ==, n);
  for (gsize i = 0; i < n; i++)
    g_assert_cmpint (g_array_index (ids, gint32, i), ==, want[i]);
}

static void
assert_round_trip (BwTokenizer *tok, GArray *ids, const char *text)
{
  g_autoptr (GByteArray) out = g_byte_array_new ();
  g_autoptr (GError) error = NULL;

  g_assert_true (bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, out, &error));
  g_assert_no_error (error);
  g_assert_cmpmem (out->data, out->len, text, strlen (text));
}

static void
test_kimi_linear_layout (Fixture *f, gconstpointer data)
{
  static const char *const names[] = {
    "[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>",
    "<|im_middle|>", "<|beyond_a|>", "<|beyond_b|>",
  };
  static const int ids[] = {
    N_BASE, N_BASE + 1, N_BASE + 2, N_BASE + 3, N_BASE + 4, N_BASE + 5, N_BASE + 6,
    N_BASE + 256, N_BASE + 257,
  };
  g_autofree char *path = write_tiktoken (f, names, ids, G_N_ELEMENTS (names));
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open (path, NULL, &error);
  g_autoptr (GArray) stop = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GArray) prompt_ids = NULL, plain = NULL;
  g_autofree char *reserved = g_strdup_printf ("<|reserved_token_%d|>", N_BASE + 100);
  BwChatOptions opts = { BW_CHAT_KIMI_LINEAR, FALSE, NULL, TRUE, FALSE };
  const BwChatMessage msg = { BW_CHAT_USER, "hello", NULL };
  g_autofree char *prompt = bw_chat_render (&opts, &msg, 1);
  g_assert_no_error (error);
  /* 256 + 2 specials: the block is as long as its highest named id requires. */
  g_assert_cmpint (bw_tokenizer_vocab_size (tok), ==, N_BASE + 258);
  g_assert_cmpint (bw_tokenizer_special_id (tok, "<|beyond_b|>"), ==, N_BASE + 257);
  g_assert_cmpint (bw_tokenizer_special_id (tok, reserved), ==, N_BASE + 100);
  g_assert_true (bw_tokenizer_is_special (tok, N_BASE + 2));
  g_assert_false (bw_tokenizer_is_special (tok, 'a'));
  g_assert_true (bw_chat_stop_ids (BW_CHAT_KIMI_LINEAR, tok, stop, &error));
  /* <|im_end|>, then the role starts <|im_user|>, <|im_assistant|>, <|im_system|>. */
  assert_ids (stop, (const gint32[]) { N_BASE + 2, N_BASE + 3, N_BASE + 4, N_BASE + 5 }, 4);

  /* "<|im_user|>user<|im_middle|>hello<|im_end|><|im_assistant|>assistant<|im_middle|>":
   * "user" and "hello" are whole ranks (261, 259); "assistant" has no merges. */
  prompt_ids = encode (tok, prompt, TRUE);
  {
    const gint32 want[] = {
      N_BASE + 3, 256 + 5, N_BASE + 6, 256 + 3, N_BASE + 2, N_BASE + 4,
      'a', 's', 's', 'i', 's', 't', 'a', 'n', 't', N_BASE + 6,
    };
    assert_ids (prompt_ids, want, G_N_ELEMENTS (want));
  }
  assert_round_trip (tok, prompt_ids, prompt);
  /* Without specials the same text is only bytes and merges. */
  plain = encode (tok, "<|im_end|>", FALSE);
  g_assert_cmpuint (plain->len, >, 1);
  for (guint i = 0; i < plain->len; i++)
    g_assert_cmpint (g_array_index (plain, gint32, i), <, N_BASE);
  assert_round_trip (tok, plain, "<|im_end|>");
}

static void
test_k3_layout (Fixture *f, gconstpointer data)
{
  static const char *const names[] = {
    "[BOS]", "[EOS]", "<|end_of_msg|>", "<|open|>", "<|close|>", "<|sep|>", "[PAD]", "<|past|>",
  };
  static const int ids[] = {
    N_BASE, N_BASE + 1, N_BASE + 2, N_BASE + 3, N_BASE + 4, N_BASE + 5, N_BASE + 255, N_BASE + 256,
  };
  g_autofree char *path = write_tiktoken (f, names, ids, G_N_ELEMENTS (names));
  g_autoptr (GError) error = NULL;
  /* K3 asks for exactly 256: a named id past the block is dropped. */
  BwTokenizerOptions k3 = { NULL, 256 };
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open (path, &k3, &error);
  g_autoptr (GArray) stop = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GArray) prompt_ids = NULL;
  BwChatOptions opts = { BW_CHAT_KIMI_K3, FALSE, NULL, TRUE, FALSE };
  const BwChatMessage msg = { BW_CHAT_USER, "hello", NULL };
  g_autofree char *prompt = bw_chat_render (&opts, &msg, 1);
  gsize len = 0;

  g_assert_no_error (error);
  /* Exactly 256 specials: 163840 has no token in the real K3. */
  g_assert_cmpint (bw_tokenizer_vocab_size (tok), ==, N_BASE + 256);
  g_assert_null (bw_tokenizer_token_bytes (tok, N_BASE + 256, &len));
  g_assert_cmpint (bw_tokenizer_special_id (tok, "[PAD]"), ==, N_BASE + 255);
  g_assert_cmpint (bw_tokenizer_special_id (tok, "<|past|>"), ==, -1);
  g_assert_true (bw_chat_stop_ids (BW_CHAT_KIMI_K3, tok, stop, &error));
  assert_ids (stop, (const gint32[]) { N_BASE + 2 }, 1);

  prompt_ids = encode (tok, prompt, TRUE);
  g_assert_cmpint (g_array_index (prompt_ids, gint32, 0), ==, N_BASE + 3);
  g_assert_cmpint (g_array_index (prompt_ids, gint32, prompt_ids->len - 1), ==, N_BASE + 5);
  assert_round_trip (tok, prompt_ids, prompt);
  /* No stop token for another family. */
  g_assert_false (bw_chat_stop_ids (BW_CHAT_GLM, tok, stop, &error));
  g_assert_error (error, BW_TEXT_ERROR, BW_TEXT_ERROR_FORMAT);
  g_assert_nonnull (strstr (error->message, path));
}

/* The GPT-2 byte alphabet, written independently of engine/text for this test. */
static void
append_byte_char (GString *s, int b)
{
  static int map[256];
  static gboolean ready = FALSE;

  if (!ready)
    {
      int n = 0;
      for (int i = 0; i < 256; i++)
        map[i] = ((i >= '!' && i <= '~') || (i >= 0xa1 && i <= 0xac) || i >= 0xae) ? i : 256 + n++;
      ready = TRUE;
    }
  g_string_append_unichar (s, (gunichar) map[b]);
}

static char *
write_glm_json (Fixture *f)
{
  g_autoptr (GString) j = g_string_new ("{\"model\": {\"type\": \"BPE\", \"ignore_merges\": true, \"vocab\": {");
  static const char *const added[][3] = {
    { "154820", "<|endoftext|>", "true" }, { "154822", "[gMASK]", "true" },
    { "154824", "<sop>", "true" }, { "154826", "<|system|>", "true" },
    { "154827", "<|user|>", "true" }, { "154828", "<|assistant|>", "true" },
    { "154829", "<|observation|>", "true" }, { "154841", "<think>", "false" },
    { "154842", "</think>", "false" },
  };

  for (int b = 0; b < 256; b++)
    {
      g_string_append (j, b ? ", \"" : "\"");
      if (b == '"' || b == '\\')
        g_string_append_c (j, '\\');
      append_byte_char (j, b);
      g_string_append_printf (j, "\": %d", b);
    }
  /* "Ġh" (space + h) and "Ġhi": merges spelled in both accepted forms. */
  g_string_append (j, ", \"\xc4\xa0h\": 256, \"\xc4\xa0hi\": 257, \"hi\": 258},"
                      " \"merges\": [\"\xc4\xa0 h\", [\"\xc4\xa0h\", \"i\"], \"h i\"]},");
  g_string_append (j, "\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
                      "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|"
                      "[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
                      "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false},"
                      "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": false}]},"
                      "\"decoder\": {\"type\": \"ByteLevel\"}, \"added_tokens\": [");
  for (gsize i = 0; i < G_N_ELEMENTS (added); i++)
    g_string_append_printf (j, "%s{\"id\": %s, \"content\": \"%s\", \"special\": %s}",
                            i ? ", " : "", added[i][0], added[i][1], added[i][2]);
  g_string_append (j, ", {\"id\": 300, \"content\": \"<mask>\", \"special\": true, \"lstrip\": true, \"rstrip\": true}]}");
  return write_file (f, "tokenizer.json", j->str);
}

static void
test_glm_added_tokens (Fixture *f, gconstpointer data)
{
  g_autofree char *path = write_glm_json (f);
  g_autoptr (GError) error = NULL;
  g_autoptr (BwTokenizer) tok = bw_tokenizer_open (path, NULL, &error);
  g_autoptr (GArray) stop = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GArray) ids = NULL, no_special = NULL, stripped = NULL;
  BwChatOptions opts = { BW_CHAT_GLM, TRUE, NULL, TRUE, FALSE };
  const BwChatMessage msg = { BW_CHAT_USER, " hi", NULL };
  g_autofree char *prompt = bw_chat_render (&opts, &msg, 1);

  g_assert_no_error (error);
  g_assert_cmpint (bw_tokenizer_kind (tok), ==, BW_TOKENIZER_HF_BPE);
  g_assert_cmpint (bw_tokenizer_vocab_size (tok), ==, 154843);
  g_assert_true (bw_chat_stop_ids (BW_CHAT_GLM, tok, stop, &error));
  assert_ids (stop, (const gint32[]) { 154820, 154827, 154829, 154826, 154828 }, 5);

  /* [gMASK]<sop><|user|> hi<|assistant|><think>: " hi" is one whole-piece token. */
  ids = encode (tok, prompt, TRUE);
  assert_ids (ids, (const gint32[]) { 154822, 154824, 154827, 257, 154828, 154841 }, 6);
  assert_round_trip (tok, ids, prompt);
  /* Without specials, the non-special <think> still matches; [gMASK] is text. */
  no_special = encode (tok, "[gMASK]<think>", FALSE);
  g_assert_cmpint (g_array_index (no_special, gint32, no_special->len - 1), ==, 154841);
  g_assert_cmpint (g_array_index (no_special, gint32, 0), ==, '[');
  /* lstrip and rstrip: the token swallows the spaces around it. */
  stripped = encode (tok, "hi  <mask>  hi", TRUE);
  assert_ids (stripped, (const gint32[]) { 258, 300, 258 }, 3);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/text/specials/kimi-linear-layout", Fixture, NULL, fixture_setup,
              test_kimi_linear_layout, fixture_teardown);
  g_test_add ("/text/specials/k3-layout", Fixture, NULL, fixture_setup, test_k3_layout,
              fixture_teardown);
  g_test_add ("/text/specials/glm-added-tokens", Fixture, NULL, fixture_setup,
              test_glm_added_tokens, fixture_teardown);
  return g_test_run ();
}
