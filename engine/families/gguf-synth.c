/* Shared pieces of the families' synthetic GGUF files (gguf-synth.h). */
#include "families/gguf-synth.h"

#include <math.h>

#include "core/gguf-types.h"
#include "text/bpe-hf.h"

int
bw_gguf_synth_type (int type, int64_t ne0)
{
  const BwGgmlTypeInfo *info = bw_ggml_type_info ((guint32) type);
  if (info != NULL && ne0 % info->block_elements == 0)
    return type;
  return ne0 % 32 == 0 ? BW_GGML_Q8_0 : BW_GGML_F32;
}

void
bw_gguf_synth_matrix (BwSynthGguf *g, int type, int n_dims, const int64_t *ne,
                      const char *fmt, ...)
{
  g_autofree char *name = NULL;
  va_list ap;
  float std = 1.0f / sqrtf ((float) ne[0]);

  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  type = bw_gguf_synth_type (type, ne[0]);
  bw_synth_gguf_add (g, type, BW_SYNTH_NORMAL, std, n_dims, ne, "%s", name);
}

void
bw_gguf_synth_ones (BwSynthGguf *g, int64_t n, float v, const char *fmt, ...)
{
  g_autofree char *name = NULL;
  va_list ap;

  va_start (ap, fmt);
  name = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  bw_synth_gguf_add (g, BW_GGML_F32, BW_SYNTH_CONST, v, 1, &n, "%s", name);
}

/* The alphabet's text of byte b, appended. */
static void
append_byte (GString *s, int b)
{
  g_string_append_unichar (s, bw_byte_bpe_char ((guint8) b));
}

gboolean
bw_gguf_synth_vocab (BwSynthGguf *g, int n, const char *const *specials, int n_specials,
                     const char *pre, const char *chat_template, GError **error)
{
  int first_merged = n_specials + 256, n_merges = n - first_merged;
  g_autoptr (GPtrArray) tokens = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (GPtrArray) merges = g_ptr_array_new_with_free_func (g_free);
  g_autofree gint32 *types = g_new (gint32, MAX (n, 1));

  if (n_specials < 3 || n_merges < 0 || n_merges > 256 * 256 + 256 * 256 * 256)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "synthetic GGUF: a vocabulary of %d tokens cannot hold the %d special "
                   "tokens and the 256 bytes", n, n_specials);
      return FALSE;
    }
  for (int i = 0; i < n_specials; i++)
    g_ptr_array_add (tokens, g_strdup (specials[i]));
  for (int b = 0; b < 256; b++)
    {
      GString *s = g_string_new (NULL);
      append_byte (s, b);
      g_ptr_array_add (tokens, g_string_free (s, FALSE));
    }
  /* Merge k < 65536 joins bytes k / 256 and k % 256, then merges join pair (k - 65536) / 256
   * with byte k % 256, so a merge's parts exist before it. Bytes count from the space (32):
   * the first merges are GPT-2's word starts, " a", " b"... */
  for (int k = 0; k < n_merges; k++)
    {
      int left = k < 65536 ? n_specials + (k / 256 + 32) % 256
                           : first_merged + (k - 65536) / 256;
      const char *l = g_ptr_array_index (tokens, left);
      const char *r = g_ptr_array_index (tokens, n_specials + (k % 256 + 32) % 256);
      g_ptr_array_add (merges, g_strconcat (l, " ", r, NULL));
      g_ptr_array_add (tokens, g_strconcat (l, r, NULL));
    }
  for (int i = 0; i < n; i++)
    types[i] = i < n_specials ? 3 : 1;   /* control, normal */
  bw_synth_gguf_string (g, "tokenizer.ggml.model", "gpt2");
  bw_synth_gguf_string (g, "tokenizer.ggml.pre", pre);
  bw_synth_gguf_strings (g, "tokenizer.ggml.tokens", (const char *const *) tokens->pdata,
                         tokens->len);
  bw_synth_gguf_i32s (g, "tokenizer.ggml.token_type", types, (guint64) n);
  bw_synth_gguf_strings (g, "tokenizer.ggml.merges", (const char *const *) merges->pdata,
                         merges->len);
  bw_synth_gguf_u32 (g, "tokenizer.ggml.bos_token_id", 0);
  bw_synth_gguf_u32 (g, "tokenizer.ggml.eos_token_id", 1);
  bw_synth_gguf_u32 (g, "tokenizer.ggml.padding_token_id", 2);
  bw_synth_gguf_bool (g, "tokenizer.ggml.add_bos_token", TRUE);
  bw_synth_gguf_bool (g, "tokenizer.ggml.add_eos_token", FALSE);
  bw_synth_gguf_string (g, "tokenizer.chat_template", chat_template);
  return TRUE;
}
