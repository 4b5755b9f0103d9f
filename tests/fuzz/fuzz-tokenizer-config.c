/* Fuzz target: tokenizer_config.json bytes as the special tokens of a tiktoken tokenizer
 * (a fixed base of the 256 single bytes), then a few texts through it when it loads. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/tiktoken.h"
#include "tokenizer-check.h"

const char bw_fuzz_label[] = "/nonexistent/";

/* "<base64 of byte b> b" for every byte. */
static const char *
byte_ranks (void)
{
  static char *ranks;

  if (ranks == NULL)
    {
      GString *s = g_string_new (NULL);
      for (int b = 0; b < 256; b++)
        {
          guchar byte = (guchar) b;
          g_autofree char *enc = g_base64_encode (&byte, 1);
          g_string_append_printf (s, "%s %d\n", enc, b);
        }
      ranks = g_string_free (s, FALSE);
    }
  return ranks;
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  static const BwTokenizerOptions opts = { BW_FUZZ_SPLIT_PATTERN, 0 };
  const char *ranks = byte_ranks ();
  g_autofree char *copy = g_malloc (size + 1);
  BwTiktokenConfig config = { "/nonexistent/tokenizer_config.json", copy, size };
  g_autoptr (BwTokenizer) tok = NULL;

  memcpy (copy, data, size);
  copy[size] = '\0';
  tok = bw_tiktoken_load_with_config ("/nonexistent/tiktoken.model", ranks, strlen (ranks),
                                      &config, &opts, error);
  if (tok == NULL)
    return FALSE;
  if (bw_tokenizer_vocab_size (tok) < 256)
    abort ();
  bw_fuzz_exercise_tokenizer (tok);
  return TRUE;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GError *error = NULL;

  if (!bw_fuzz_parse (data, size, &error))
    {
      if (error == NULL || strstr (error->message, bw_fuzz_label) == NULL)
        abort ();
      g_error_free (error);
    }
  return 0;
}
