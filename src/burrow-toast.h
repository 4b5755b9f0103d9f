/* Toasts that show their text as written: an AdwToast's title is Pango markup, so a chat
 * called "Q&A" or a server called "<b>" would otherwise be parsed (and dropped). */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

AdwToast *burrow_toast_new (const char *text);

G_END_DECLS
