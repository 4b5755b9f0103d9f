/* The engine's own error domains as the public one (BURROW_ENGINE_ERROR), for the public
 * entry points of convert and run: the codes say what a caller can act on (a folder that
 * is not there, a file cut short), the message stays as it was. GIO and file errors stay
 * as they are. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

void bw_error_publish (GError **error);

G_END_DECLS
