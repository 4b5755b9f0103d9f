/* The error domain of engine/text: every message names the file (or the input) at fault. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define BW_TEXT_ERROR (bw_text_error_quark ())
GQuark bw_text_error_quark (void);

typedef enum {
  BW_TEXT_ERROR_FORMAT,        /* malformed tokenizer file */
  BW_TEXT_ERROR_UNSUPPORTED,   /* well-formed, but a feature this engine does not implement */
  BW_TEXT_ERROR_INVALID_ID,    /* a token id outside the vocabulary */
  BW_TEXT_ERROR_REGEX,         /* the pre-tokenizer pattern failed to compile or match */
  BW_TEXT_ERROR_INPUT,         /* text the tokenizer cannot encode */
} BwTextError;

G_END_DECLS
