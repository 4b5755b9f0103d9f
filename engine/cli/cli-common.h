/* Pieces every burrow-cli command shares: the bundled demo model as the default model, the
 * size and id-list parsers, and one-line error output. The model options live in
 * engine-options.h. */
#pragma once

#include <glib.h>

#include "engine-options.h"
#include "model/model.h"

G_BEGIN_DECLS

/* Without --model, points args at the demo model (burrow_demo_model_dir) and says so in
 * one line on stderr; fails when there is no demo model either. */
gboolean bw_cli_resolve_model (BwCliModelArgs *args, GError **error);

/* "8G", "512M", "1.5G", "64KiB", "1048576" -> bytes. */
gboolean bw_cli_parse_size (const char *text, guint64 *out, GError **error);

/* "3,14, 25" -> ids appended to out (gint32); at least one, each in [0, G_MAXINT32]. */
gboolean bw_cli_parse_ids (const char *text, GArray *out, GError **error);

int bw_cli_argmax (const float *v, int n);

/* Prints "prefix: message" as one line on stderr and returns status. */
int bw_cli_fail (int status, const char *prefix, const char *message);

/* Reads one line of stdin without its newline (or a trailing \r), prompting "> " on stderr
 * when @prompt; NULL at the end of input. */
char *bw_cli_read_line (gboolean prompt);

G_END_DECLS
