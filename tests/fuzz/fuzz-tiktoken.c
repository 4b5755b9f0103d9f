/* Fuzz target: tiktoken.model bytes (no tokenizer_config.json beside them), then a few
 * texts through the tokenizer when it loads. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "text/tiktoken.h"
#include "tokenizer-check.h"

const char bw_fuzz_label[] = "/nonexistent/tiktoken.model";

gboolean
bw_fuzz_parse (const uint8_t *data, size_t size, GError **error)
{
  static const BwTokenizerOptions opts = { BW_FUZZ_SPLIT_PATTERN, 0 };
  static const BwTiktokenConfig none = { "/nonexistent/tokenizer_config.json", NULL, 0 };
  g_autofree char *copy = g_malloc (size + 1);
  g_autoptr (BwTokenizer) tok = NULL;

  memcpy (copy, data, size);
  copy[size] = '\0';
  tok = bw_tiktoken_load_with_config (bw_fuzz_label, copy, size, &none, &opts, error);
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
