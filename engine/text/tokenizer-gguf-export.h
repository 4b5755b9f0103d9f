/* A GGUF file's tokenizer as the files a Hugging Face checkpoint keeps it in, for a folder
 * converted from the GGUF: tokenizer.json that bw_tokenizer_open reads into the same
 * tokenizer bw_tokenizer_open_gguf builds (the same ids for every text),
 * tokenizer_config.json with the chat template(s) and the special tokens' texts, and
 * generation_config.json with the ids that end a reply. */
#pragma once

#include "core/gguf.h"

G_BEGIN_DECLS

/* Writes the three files into dir (each atomically). Errors name the GGUF file and key. */
gboolean bw_tokenizer_gguf_export (const BwGguf *g, const char *dir, GError **error);

G_END_DECLS
