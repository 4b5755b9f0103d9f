/* Fuzz target: tokenizer.json bytes through the HF byte-level BPE loader, then a few texts
 * through the tokenizer when it loads. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/bpe-hf.h"
#include "tokenizer-check.h"

const char bw_fuzz_label[] = "/nonexistent/tokenizer.json";

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  g_autofree char *copy = g_malloc (size + 1);
  g_autoptr (BwTokenizer) tok = NULL;

  memcpy (copy, data, size);
  copy[size] = '\0';
  tok = bw_hf_bpe_load (bw_fuzz_label, copy, size, error);
  if (tok == NULL)
    return FALSE;
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
