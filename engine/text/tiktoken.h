/* tiktoken.model files: one token per line, "<base64 of its bytes> <rank>", rank = id.
 * Special tokens follow the base ranks and are named by tokenizer_config.json's
 * added_tokens_decoder in the same folder (ARCHITECTURES.md 2.6, 3.6, 5.1). */
#pragma once

#include "text/tokenizer.h"

G_BEGIN_DECLS

/* Builds a tokenizer from the file's contents (data[len] must be NUL). */
BwTokenizer *bw_tiktoken_load (const char *path, const char *data, gsize len,
                               const BwTokenizerOptions *opts, GError **error);

G_END_DECLS
