/* The tokenizer a GGUF file carries in its metadata, built the way llama.cpp builds it:
 * tokenizer.ggml.model "gpt2" (byte-level BPE) from tokenizer.ggml.tokens, token_type and
 * merges, split by the pre-tokenizer tokenizer.ggml.pre names (its regexes are not in the
 * file; llama.cpp picks them by that name, and so does this). Control and unknown tokens
 * are special (their text becomes their id only when encoding allows special tokens);
 * user-defined tokens are always matched, as llama.cpp does with parse_special off. */
#pragma once

#include "core/gguf.h"
#include "text/tokenizer.h"

G_BEGIN_DECLS

/* Builds the tokenizer; bw_tokenizer_specials gives the file's bos/eos/eot/eom/pad/unk ids
 * and add_bos/add_eos. Errors (BW_TEXT_ERROR, or BW_CHECKPOINT_ERROR for a key of the wrong
 * type) name the file and the key or value: a tokenizer model or pre-tokenizer this engine
 * does not know is BW_TEXT_ERROR_UNSUPPORTED naming it. The tokenizer does not keep g. */
BwTokenizer *bw_tokenizer_open_gguf (const BwGguf *g, GError **error);

/* bw_gguf_open (a .gguf file, any part of a split set, or its folder), then the above. */
BwTokenizer *bw_tokenizer_open_gguf_path (const char *path, GError **error);

G_END_DECLS
