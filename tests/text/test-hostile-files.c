/* Hostile input: truncated, corrupted and random tokenizer files must fail with an error
 * naming the file, never crash; random text must encode and decode back to itself. */
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "text/file-load.h"
#include "text/tokenizer.h"

typedef struct {
  char *dir;
  char *path;       /* the file each test case writes and opens */
  GRand *rand;
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;

  f->dir = bw_test_tmp_dir ("burrow-hostile-XXXXXX");
  g_assert_no_error (error);
  f->path = g_build_filename (f->dir, "tokenizer.bin", NULL);
  f->rand = g_rand_new_with_seed (20240601);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  g_autofree char *config = g_build_filename (f->dir, "tokenizer_config.json", NULL);

  g_remove (f->path);
  g_remove (config);
  g_rmdir (f->dir);
  g_free (f->path);
  g_free (f->dir);
  g_rand_free (f->rand);
}

static char *
load_fixture (const char *name, gsize *len)
{
  g_autofree char *path = g_build_filename (BURROW_FIXTURES, "text", name, NULL);
  g_autoptr (GError) error = NULL;
  char *data = bw_text_file_load (path, len, &error);

  g_assert_no_error (error);
  return data;
}

/* Writes bytes to f->path and opens them; a failure must be a GError naming the file.
 * Returns the tokenizer when the bytes happened to be a valid file. */
static BwTokenizer *
open_bytes (Fixture *f, const void *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  BwTokenizer *tok;

  g_assert_true (g_file_set_contents (f->path, data, (gssize) len, &error));
  tok = bw_tokenizer_open (f->path, NULL, &error);
  if (tok == NULL)
    {
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error->message, f->dir));
    }
  return tok;
}

static void
expect_failure (Fixture *f, const char *contents)
{
  g_autoptr (BwTokenizer) tok = open_bytes (f, contents, strlen (contents));
  g_assert_null (tok);
}

static void
test_malformed (Fixture *f, gconstpointer data)
{
  static const char *const bad[] = {
    "",
    "\n\n",
    "IQ==\n",                          /* no rank */
    "IQ== x\n",                        /* rank not a number */
    "!!!! 0\n",                        /* not base64 */
    "IQ= 0\n",                         /* base64 length */
    "I=Q= 0\n",                        /* padding inside */
    "IQ== 0\nIQ== 1\n",                /* token twice */
    "IQ== 0\nIg== 0\n",                /* rank twice */
    "IQ== 99999999999999999999\n",     /* rank overflow */
    "{",
    "{}",
    "{\"model\": 5}",
    "{\"model\": {\"type\": \"Unigram\"}}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b\"]}}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a\"]}}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [], \"byte_fallback\": true}}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}",   /* no ByteLevel */
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
    " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"decoder\": {\"type\": \"ByteLevel\"},"
    " \"added_tokens\": [{\"id\": 1}]}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
    " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"[\"}, \"behavior\": \"Isolated\"}}",
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
    " \"normalizer\": {\"type\": \"Lowercase\"}, \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}",
    "\x1f\x8b\x08\x00garbage",         /* gzip magic, bad stream */
  };

  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    expect_failure (f, bad[i]);

  {
    /* JSON nested far deeper than any tokenizer: refused before json-glib recurses. */
    g_autoptr (GString) deep = g_string_new ("{\"model\": ");
    for (int i = 0; i < 100000; i++)
      g_string_append_c (deep, '[');
    expect_failure (f, deep->str);
  }
  {
    /* A bad tokenizer_config.json beside a good tiktoken.model is named in the error. */
    g_autofree char *config = g_build_filename (f->dir, "tokenizer_config.json", NULL);
    g_autoptr (GError) error = NULL;
    g_autoptr (BwTokenizer) tok = NULL;
    g_assert_true (g_file_set_contents (config, "{\"added_tokens_decoder\": {\"x\": 1}}", -1, NULL));
    g_assert_true (g_file_set_contents (f->path, "IQ== 0\n", -1, NULL));
    tok = bw_tokenizer_open (f->path, NULL, &error);
    g_assert_null (tok);
    g_assert_nonnull (strstr (error->message, "tokenizer_config.json"));
    g_remove (config);
  }
  {
    g_autoptr (GError) error = NULL;
    g_autoptr (BwTokenizer) tok = bw_tokenizer_open (f->dir, NULL, &error);
    g_assert_null (tok);
    g_assert_nonnull (strstr (error->message, f->dir));
  }
}

static void
test_truncated (Fixture *f, gconstpointer data)
{
  gsize tt_len = 0, hf_len = 0;
  g_autofree char *tt = load_fixture ("cl100k_base/tiktoken.model.gz", &tt_len);
  g_autofree char *hf = load_fixture ("deepseek_v3/tokenizer.json.gz", &hf_len);

  for (int i = 0; i < 6; i++)
    {
      gsize cut = (gsize) g_rand_int_range (f->rand, 1, (gint32) MIN (tt_len, 300000));
      g_autoptr (BwTokenizer) tok = open_bytes (f, tt, cut);
      (void) tok;   /* a cut at a line end is a valid, smaller file */
    }
  for (int i = 0; i < 4; i++)
    {
      gsize cut = (gsize) g_rand_int_range (f->rand, 1, (gint32) MIN (hf_len, 200000));
      g_autoptr (BwTokenizer) tok = open_bytes (f, hf, cut);
      g_assert_null (tok);
    }
}

/* A small valid tokenizer.json to mutate. */
static const char small_json[] =
  "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"\xc4\xa0\": 3},"
  " \"merges\": [\"a b\"]}, \"normalizer\": {\"type\": \"NFC\"},"
  " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\","
  " \"pattern\": {\"Regex\": \"\\\\s+|\\\\p{L}+\"}, \"behavior\": \"Isolated\"},"
  " {\"type\": \"ByteLevel\", \"use_regex\": false}]},"
  " \"decoder\": {\"type\": \"ByteLevel\"},"
  " \"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true}]}";

static void
exercise (BwTokenizer *tok, GRand *rand)
{
  guint8 text[64];
  gsize n = (gsize) g_rand_int_range (rand, 0, sizeof text);
  g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  g_autoptr (GByteArray) out = g_byte_array_new ();

  for (gsize i = 0; i < n; i++)
    text[i] = (guint8) g_rand_int_range (rand, 0, 256);
  if (bw_tokenizer_encode (tok, (const char *) text, (gssize) n, TRUE, ids, NULL))
    bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, out, NULL);
}

static void
test_random_and_mutated (Fixture *f, gconstpointer data)
{
  guint opened = 0;

  for (int i = 0; i < 300; i++)
    {
      guint8 buf[256];
      gsize n = (gsize) g_rand_int_range (f->rand, 0, sizeof buf);
      g_autoptr (BwTokenizer) tok = NULL;

      for (gsize k = 0; k < n; k++)
        buf[k] = (guint8) g_rand_int_range (f->rand, 0, 256);
      if (i % 3 == 0 && n >= 2)
        {
          buf[0] = 0x1f;   /* pretend to be gzip */
          buf[1] = 0x8b;
        }
      tok = open_bytes (f, buf, n);
      if (tok != NULL)
        exercise (tok, f->rand);
    }
  for (int i = 0; i < 400; i++)
    {
      g_autofree char *copy = g_memdup2 (small_json, sizeof small_json - 1);
      g_autoptr (BwTokenizer) tok = NULL;
      int flips = g_rand_int_range (f->rand, 1, 4);

      for (int k = 0; k < flips; k++)
        copy[g_rand_int_range (f->rand, 0, sizeof small_json - 1)] = (char) g_rand_int_range (f->rand, 0, 256);
      tok = open_bytes (f, copy, sizeof small_json - 1);
      if (tok != NULL)
        {
          opened++;
          exercise (tok, f->rand);
        }
    }
  /* Some mutations leave a valid file (a flipped letter in a token), which gets used. */
  g_test_message ("mutated tokenizer.json files that still opened: %u of 400", opened);
  g_assert_cmpuint (opened, >, 0);
}

/* decode(encode(x)) gives x back, after U+FFFD repair, for random bytes and texts. */
static void
test_round_trip (Fixture *f, gconstpointer data)
{
  static const char *const files[] = { "cl100k_base/tiktoken.model.gz", "deepseek_v3/tokenizer.json.gz" };
  static const char *const pool[] = {
    "a", "Z", " ", "\n", "\t", "1", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "'s", "<|", "|>",
    "<|endoftext|>", "\xff", "\x80", "\xe4\xb8", "\xcc\x81", "  ", "\r\n", ".", "x", "\xc2\xa0",
  };

  for (gsize fi = 0; fi < G_N_ELEMENTS (files); fi++)
    {
      g_autofree char *path = g_build_filename (BURROW_FIXTURES, "text", files[fi], NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (BwTokenizer) tok = bw_tokenizer_open (path, NULL, &error);

      g_assert_no_error (error);
      for (int i = 0; i < 300; i++)
        {
          g_autoptr (GString) text = g_string_new (NULL), want = g_string_new (NULL);
          g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
          g_autoptr (GByteArray) out = g_byte_array_new ();
          int parts = g_rand_int_range (f->rand, 0, 40);

          for (int k = 0; k < parts; k++)
            g_string_append (text, pool[g_rand_int_range (f->rand, 0, G_N_ELEMENTS (pool))]);
          bw_utf8_repair (text->str, text->len, want);
          g_assert_true (bw_tokenizer_encode (tok, text->str, (gssize) text->len, i % 2, ids, &error));
          g_assert_true (bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, out, &error));
          g_assert_no_error (error);
          g_assert_cmpmem (out->data, out->len, want->str, want->len);
        }
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/text/hostile/malformed", Fixture, NULL, fixture_setup, test_malformed, fixture_teardown);
  g_test_add ("/text/hostile/truncated", Fixture, NULL, fixture_setup, test_truncated, fixture_teardown);
  g_test_add ("/text/hostile/random-and-mutated", Fixture, NULL, fixture_setup,
              test_random_and_mutated, fixture_teardown);
  g_test_add ("/text/hostile/round-trip", Fixture, NULL, fixture_setup, test_round_trip,
              fixture_teardown);
  return g_test_run ();
}
