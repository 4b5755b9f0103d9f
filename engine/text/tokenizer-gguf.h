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

/* What bw_tokenizer_open_gguf builds, described for writing it out as tokenizer.json:
 * which ids are plain BPE tokens and which are added tokens (matched before BPE, special
 * ones only where encoding allows specials), after llama.cpp's text-based corrections of
 * token_type; the pre-tokenizer's patterns in order; the specials. */
typedef enum {
  BW_GGUF_TOKEN_NORMAL,
  BW_GGUF_TOKEN_ADDED,      /* user-defined: always matched */
  BW_GGUF_TOKEN_SPECIAL,    /* control or unknown */
} BwGgufTokenKind;

typedef struct {
  gint32 n;
  guint8 *kinds;                 /* BwGgufTokenKind per id */
  const char *splits[8];         /* split-regex.c patterns, NULL-terminated */
  gboolean ignore_merges;
  BwTokenizerSpecials specials;
} BwGgufVocab;

gboolean bw_gguf_vocab_describe (const BwGguf *g, BwGgufVocab *v, GError **error);
void bw_gguf_vocab_clear (BwGgufVocab *v);
/* Token id's text as the tokenizer names it (an empty one "[EMPTY_id]"), in scratch; id
 * must be below the count bw_gguf_vocab_describe accepted. */
const char *bw_gguf_vocab_token (const BwGguf *g, gint32 id, GString *scratch);

G_END_DECLS
