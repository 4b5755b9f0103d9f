/* Reads a tokenizer file whole, gunzipping it when it is gzip-compressed (the test
 * fixtures ship that way; real checkpoints do not). */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Largest tokenizer file accepted, compressed or not. */
#define BW_TEXT_FILE_MAX (1024u * 1024u * 1024u)

/* Returns the file's bytes (NUL-terminated, length in *len). Errors name the file. */
char *bw_text_file_load (const char *path, gsize *len, GError **error);

G_END_DECLS
