/* What went wrong, in words for the person using Burrow: a one-line summary for the
 * screen, the error's own (technical) message kept for a Details expander. Pure
 * functions of a GError, so tests check them without a display. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* A sentence that says what happened and, where it can, what to do; @fallback when the
 * error is not one it knows. Never contains file paths, SQL or engine internals. */
char *burrow_error_summary (const GError *error,
                            const char   *fallback);

/* What a person can do about a model that failed to load, for the one button beside the
 * error. */
typedef enum {
  BURROW_ERROR_FIX_FOLDER,      /* choose another model folder */
  BURROW_ERROR_FIX_SERVER_KEY,  /* the server refused the key: edit the server */
  BURROW_ERROR_FIX_RETRY,       /* the server failed or could not be reached: try again */
  BURROW_ERROR_FIX_UNLOCK,      /* the keyring with the server's key is locked: unlock it */
  BURROW_ERROR_FIX_TEMPLATE,    /* the chosen chat template: go back to the model's own */
  BURROW_ERROR_FIX_TOKENIZER,   /* the chosen tokenizer: choose another */
} BurrowErrorFix;

/* The fix for @error from loading a model with the chat template @template_file and the
 * tokenizer @tokenizer_file chosen for it (either NULL when none is): the engine's
 * messages name the file at fault. */
BurrowErrorFix burrow_error_fix (const GError *error,
                                 const char   *template_file,
                                 const char   *tokenizer_file);

G_END_DECLS
