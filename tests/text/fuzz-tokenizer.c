/* Fuzz target: bytes as a tokenizer file (tokenizer.json when they start with '{', else
 * tiktoken.model), then a few texts through any tokenizer that loads. Uses the replay and
 * libFuzzer harness of tests/fuzz. */
#include <stdlib.h>
#include <string.h>

#include "../fuzz/fuzz.h"
#include "text/bpe-hf.h"
#include "text/tiktoken.h"

const char bw_fuzz_label[] = "/nonexistent/fuzz-tokenizer";

/* Encoded ids must exist and decode without error. */
static void
exercise (const BwTokenizer *tok)
{
  static const char *const texts[] = {
    "Hello, world! 123", "\xe4\xb8\xad\xe6\x96\x87 <|endoftext|> \xf0\x9f\x98\x80", "\xff\xfe a\n\n b",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++)
    {
      g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
      g_autoptr (GByteArray) out = g_byte_array_new ();
      GError *error = NULL;

      if (!bw_tokenizer_encode (tok, texts[i], -1, i % 2 == 0, ids, &error))
        {
          if (error == NULL)
            abort ();
          g_error_free (error);
          continue;
        }
      for (guint k = 0; k < ids->len; k++)
        if (g_array_index (ids, gint32, k) < 0 ||
            g_array_index (ids, gint32, k) >= bw_tokenizer_vocab_size (tok))
          abort ();
      if (!bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, out, NULL))
        abort ();
    }
}

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  static const BwTokenizerOptions opts = { NULL, 0 };
  g_autofree char *copy = g_malloc (size + 1);
  g_autoptr (BwTokenizer) tok = NULL;

  memcpy (copy, data, size);
  copy[size] = '\0';
  if (size > 0 && data[0] == '{')
    tok = bw_hf_bpe_load (bw_fuzz_label, copy, size, error);
  else
    tok = bw_tiktoken_load (bw_fuzz_label, copy, size, &opts, error);
  if (tok == NULL)
    return FALSE;
  exercise (tok);
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
