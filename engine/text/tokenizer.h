/* One tokenizer interface over tiktoken.model files (Kimi Linear, K3) and HF
 * tokenizer.json byte-level BPE files (GLM-5.2 and others).
 *
 * Input text that is not well-formed UTF-8 is repaired first (each maximal ill-formed
 * subpart becomes U+FFFD, as JavaScript's TextDecoder does), which is what the reference
 * implementations see when handed the same bytes as a string. Encoding never fails on
 * text; it fails only if the file's pattern cannot run on it. */
#pragma once

#include <glib.h>

#include "text/text-error.h"
#include "text/utf8.h"

G_BEGIN_DECLS

typedef struct _BwTokenizer BwTokenizer;

typedef enum {
  BW_TOKENIZER_TIKTOKEN,
  BW_TOKENIZER_HF_BPE,
  BW_TOKENIZER_GGUF,      /* byte-level BPE from a GGUF file's metadata (tokenizer-gguf.h) */
} BwTokenizerKind;

/* The ids a model's own metadata names (-1: none) and whether a prompt starts with BOS or
 * ends with EOS. Filled for GGUF vocabularies; tokenizer files leave every id -1 and both
 * flags FALSE (their checkpoints name them in config files read elsewhere). */
typedef struct {
  gint32 bos, eos, eot, eom, pad, unk;
  gboolean add_bos, add_eos;
} BwTokenizerSpecials;

typedef struct {
  /* tiktoken.model only: the pre-tokenizer pattern, a name from bw_split_regex_named
   * ("kimi", "o200k", "cl100k") or a pattern in Rust regex syntax; NULL means "kimi". */
  const char *pattern;
  /* tiktoken.model only: how many special ids follow the base ranks when the specials
   * start right after them (Kimi's layout; unnamed ones are <|reserved_token_{id}|>).
   * 0 means max(256, highest id named in tokenizer_config.json + 1 - base): 258 for Kimi
   * Linear's file. A positive value is exact (K3: 256); named ids past it are dropped. */
  int n_reserved_specials;
} BwTokenizerOptions;

/* Opens a tokenizer file: tokenizer.json (a JSON object) or tiktoken.model (anything
 * else), either optionally gzip-compressed. For tiktoken.model the special tokens come
 * from tokenizer_config.json in the same folder, when present. opts may be NULL. */
BwTokenizer *bw_tokenizer_open (const char *path, const BwTokenizerOptions *opts,
                                GError **error);
/* The tokenizer file bw_tokenizer_open_dir opens in @dir (tokenizer.json, else
 * tiktoken.model), or NULL when there is none. */
char *bw_tokenizer_find_in_dir (const char *dir);
/* Opens dir/tokenizer.json, else dir/tiktoken.model. */
BwTokenizer *bw_tokenizer_open_dir (const char *dir, const BwTokenizerOptions *opts,
                                    GError **error);
void bw_tokenizer_free (BwTokenizer *tok);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwTokenizer, bw_tokenizer_free)

BwTokenizerKind bw_tokenizer_kind (const BwTokenizer *tok);
const char *bw_tokenizer_path (const BwTokenizer *tok);
const BwTokenizerSpecials *bw_tokenizer_specials (const BwTokenizer *tok);
/* One past the highest token id, specials included. */
gint32 bw_tokenizer_vocab_size (const BwTokenizer *tok);

/* Appends the ids of text[0..len) (len -1: NUL-terminated) to ids (gint32).
 * allow_special: the text of special tokens becomes their ids (longest match first);
 * otherwise it is encoded as ordinary text. Added tokens that are not special
 * (tokenizer.json "special": false) are always matched, as HF does. */
gboolean bw_tokenizer_encode (const BwTokenizer *tok, const char *text, gssize len,
                              gboolean allow_special, GArray *ids, GError **error);

/* The bytes of one token (specials: their text), or NULL for an id with no token. */
const guint8 *bw_tokenizer_token_bytes (const BwTokenizer *tok, gint32 id, gsize *len);
/* Appends the concatenated bytes of ids; fails on an id with no token. The bytes need not
 * be UTF-8 (a character can straddle a cut); see BwTokenStream for text. */
gboolean bw_tokenizer_decode (const BwTokenizer *tok, const gint32 *ids, gsize n_ids,
                              GByteArray *out, GError **error);

/* The id of the special or added token whose text is `name`, or -1. */
gint32 bw_tokenizer_special_id (const BwTokenizer *tok, const char *name);
/* TRUE for special tokens (tiktoken specials; tokenizer.json "special": true). */
gboolean bw_tokenizer_is_special (const BwTokenizer *tok, gint32 id);

/* Streaming decode for generation: each token's text appears as soon as its UTF-8 is
 * complete; a character split across tokens is held back until it is. */
typedef struct {
  const BwTokenizer *tok;
  BwUtf8Stream utf8;
} BwTokenStream;

void bw_token_stream_init (BwTokenStream *stream, const BwTokenizer *tok);
/* Appends the newly complete text to out. Fails on an id with no token. */
gboolean bw_token_stream_push (BwTokenStream *stream, gint32 id, GString *out, GError **error);
/* Appends what is still held back, an incomplete character becoming U+FFFD. */
void bw_token_stream_finish (BwTokenStream *stream, GString *out);

G_END_DECLS
