/* What the families' synthetic GGUF files share: matrices in a chosen GGML type (with
 * llama-quantize's fallback where a row is not whole super-blocks) and a byte-level BPE
 * vocabulary that llama.cpp's "gpt2" tokenizer and the engine's both read. */
#pragma once

#include "synth/synth-gguf.h"

G_BEGIN_DECLS

/* The type a matrix with rows of ne0 gets when type is asked for: a 256-element type
 * where ne0 is a multiple of 256, else Q8_0 where it is a multiple of 32, else F32. */
int bw_gguf_synth_type (int type, int64_t ne0);

/* A matrix (2-D, or 3-D for experts) with weights of deviation 1 / sqrt(ne0), as the
 * safetensors synth keeps activations near unit scale. */
void bw_gguf_synth_matrix (BwSynthGguf *g, int type, int n_dims, const int64_t *ne,
                           const char *fmt, ...) G_GNUC_PRINTF (5, 6);

/* An F32 vector of n values all equal to v (norm weights). */
void bw_gguf_synth_ones (BwSynthGguf *g, int64_t n, float v, const char *fmt, ...)
  G_GNUC_PRINTF (4, 5);

/* tokenizer.ggml.* for a vocabulary of n tokens in GPT-2's byte alphabet: the special
 * tokens (control; bos specials[0] = id 0, eos specials[1], padding specials[2]), the 256
 * bytes, then tokens made by merges (every pair of bytes, those starting with a space
 * first, then a pair and a third byte), the merges in rank order; pre names the
 * pre-tokenizer. FALSE when n cannot hold the specials and the bytes, or needs more tokens
 * than pairs and triples give. */
gboolean bw_gguf_synth_vocab (BwSynthGguf *g, int n, const char *const *specials,
                              int n_specials, const char *pre, const char *chat_template,
                              GError **error);

G_END_DECLS
