/* tiktoken.model files: one token per line, "<base64 of its bytes> <rank>", rank = id.
 * Special tokens follow the base ranks and are named by tokenizer_config.json's
 * added_tokens_decoder in the same folder (ARCHITECTURES.md 2.6, 3.6, 5.1). */
#pragma once

#include "text/tokenizer.h"

G_BEGIN_DECLS

/* tokenizer_config.json as read: data NULL when the folder has none. */
typedef struct {
  const char *path;
  const char *data;
  gsize len;
} BwTiktokenConfig;

/* Builds a tokenizer from the file's contents (data[len] must be NUL), reading
 * tokenizer_config.json from the same folder. */
BwTokenizer *bw_tiktoken_load (const char *path, const char *data, gsize len,
                               const BwTokenizerOptions *opts, GError **error);

/* The same with tokenizer_config.json's contents given. */
BwTokenizer *bw_tiktoken_load_with_config (const char *path, const char *data, gsize len,
                                           const BwTiktokenConfig *config,
                                           const BwTokenizerOptions *opts, GError **error);

G_END_DECLS
