/* The tokenizer fuzz targets' shared exercise (see tokenizer-check.h). */
#include "tokenizer-check.h"

#include <stdlib.h>
#include <string.h>

void
bw_fuzz_exercise_tokenizer (const BwTokenizer *tok)
{
  static const char *const texts[] = {
    "Hello, world! 123", "\xe4\xb8\xad\xe6\x96\x87 <|endoftext|> \xf0\x9f\x98\x80",
    "\xff\xfe a\n\n b", "<|im_end|><|im_user|>user<|im_middle|>",
  };

  for (gsize i = 0; i < G_N_ELEMENTS (texts); i++)
    {
      g_autoptr (GArray) ids = g_array_new (FALSE, FALSE, sizeof (gint32));
      g_autoptr (GByteArray) out = g_byte_array_new ();
      g_autoptr (GString) text = g_string_new (NULL);
      BwTokenStream stream;
      GError *error = NULL;

      if (!bw_tokenizer_encode (tok, texts[i], -1, i % 2 == 0, ids, &error))
        {
          if (error == NULL)
            abort ();
          g_error_free (error);
          continue;
        }
      bw_token_stream_init (&stream, tok);
      for (guint k = 0; k < ids->len; k++)
        {
          gint32 id = g_array_index (ids, gint32, k);
          if (id < 0 || id >= bw_tokenizer_vocab_size (tok)
              || !bw_token_stream_push (&stream, id, text, NULL))
            abort ();
        }
      bw_token_stream_finish (&stream, text);
      if (!g_utf8_validate (text->str, (gssize) text->len, NULL))
        abort ();
      if (!bw_tokenizer_decode (tok, (const gint32 *) (void *) ids->data, ids->len, out, NULL))
        abort ();
    }
}
