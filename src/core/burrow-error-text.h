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

G_END_DECLS
