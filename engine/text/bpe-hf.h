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

G_END_DECLS
