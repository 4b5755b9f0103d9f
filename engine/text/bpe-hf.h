/* HF tokenizer.json byte-level BPE: model.type "BPE" with merges (either "a b" strings or
 * ["a", "b"] pairs), optional ignore_merges, NFC/NFD/NFKC/NFKD normalizers, pre-tokenizers
 * Split (Isolated or Removed) and ByteLevel (with or without its GPT-2 regex), added
 * tokens matched before everything else, decoder ByteLevel (ARCHITECTURES.md 5.2).
 * Anything else is refused with BW_TEXT_ERROR_UNSUPPORTED rather than encoded wrongly. */
#pragma once

#include "text/tokenizer.h"

G_BEGIN_DECLS

/* Builds a tokenizer from the file's contents (data[len] must be NUL). */
BwTokenizer *bw_hf_bpe_load (const char *path, const char *data, gsize len, GError **error);

/* The byte-level BPE model itself, for loaders of vocabularies held elsewhere (GGUF
 * metadata): one model, however its tokens, merges and splits were stored. */
typedef struct _BwByteBpe BwByteBpe;

/* A model without tokens, merges or pre-tokenizer splits, owned by tok from now on. */
BwByteBpe *bw_byte_bpe_attach (BwTokenizer *tok, gsize n_vocab);
/* The character of GPT-2's byte-to-unicode alphabet that stands for this byte. */
gunichar bw_byte_bpe_char (guint8 byte);
/* Sets token id from its text in GPT-2's byte-to-unicode alphabet; text outside the
 * alphabet is taken as its own UTF-8 and is never produced by merging. scratch is any
 * byte array, reused between calls. */
gboolean bw_byte_bpe_add_vocab (BwByteBpe *m, BwTokenizer *tok, gint32 id, const char *text,
                                GByteArray *scratch, GError **error);
/* Looks up the single-byte tokens merging starts from; call once every token is added. */
void bw_byte_bpe_index_bytes (BwByteBpe *m);
/* Room for n merges, ranks 0..n-1 (call once, before bw_byte_bpe_set_merge). */
void bw_byte_bpe_reserve_merges (BwByteBpe *m, guint n);
/* Merging tokens left and right, in that order, gives merged at this rank. FALSE (and no
 * change) when the pair already has a rank. */
gboolean bw_byte_bpe_set_merge (BwByteBpe *m, guint rank, gint32 left, gint32 right,
                                gint32 merged);
/* Appends a pre-tokenizer split (Rust/Oniguruma syntax, HF "Isolated": the matches and the
 * stretches between them are pieces); splits run in order, each over the previous pieces. */
gboolean bw_byte_bpe_add_split (BwByteBpe *m, const char *pattern, const char *what,
                                GError **error);
/* A piece that is a whole token becomes that token without merging (llama3, tekken). */
void bw_byte_bpe_set_ignore_merges (BwByteBpe *m, gboolean ignore);

G_END_DECLS
