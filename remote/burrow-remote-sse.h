/* A parser for server-sent events (the text/event-stream format of the WHATWG HTML
 * standard), as OpenAI-compatible servers stream chat replies. Bytes go in as they arrive,
 * in chunks split anywhere; each complete event comes out through a callback. Plain GLib. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define BURROW_REMOTE_SSE_ERROR (burrow_remote_sse_error_quark ())
GQuark burrow_remote_sse_error_quark (void);

typedef enum {
  BURROW_REMOTE_SSE_ERROR_TOO_LONG,   /* a line or an event past the size limit */
} BurrowRemoteSseError;

/* One event: @event is its "event:" field ("message" when it had none), @data its "data:"
 * lines joined by "\n". Returns FALSE to stop parsing (feed then returns FALSE without an
 * error). */
typedef gboolean (*BurrowRemoteSseFunc) (const char *event,
                                         const char *data,
                                         gpointer    user_data);

typedef struct _BurrowRemoteSse BurrowRemoteSse;

/* @max_bytes bounds one event's data and one line (0: 16 MiB). */
BurrowRemoteSse *burrow_remote_sse_new (gsize               max_bytes,
                                        BurrowRemoteSseFunc func,
                                        gpointer            user_data);
void burrow_remote_sse_free (BurrowRemoteSse *sse);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowRemoteSse, burrow_remote_sse_free)

/* Parses @len more bytes. FALSE when the callback asked to stop or, with @error set, when
 * a line or event is too long; the parser takes no more bytes after that. */
gboolean burrow_remote_sse_feed (BurrowRemoteSse  *sse,
                                 const char       *bytes,
                                 gsize             len,
                                 GError          **error);

/* TRUE while part of an event (a line, or lines without their closing blank line) is
 * buffered: at the end of the stream that part is dropped, as the standard says. */
gboolean burrow_remote_sse_has_partial (const BurrowRemoteSse *sse);

G_END_DECLS
