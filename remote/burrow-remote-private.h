/* What the remote client's files share: the request builder and the watch that turns a
 * silent server into a timeout and the caller's cancellable into an aborted request. */
#pragma once

#include <libsoup/soup.h>

#include "burrow-remote-client.h"

G_BEGIN_DECLS

/* A request to @path ("/v1/..."), with the key and the Accept header set. */
SoupMessage *_burrow_remote_client_message (BurrowRemoteClient *self,
                                            const char         *method,
                                            const char         *path,
                                            const char         *accept);
SoupSession *_burrow_remote_client_get_session (BurrowRemoteClient *self);
guint _burrow_remote_client_get_stall_ms (BurrowRemoteClient *self);

/* One request's cancellation: @cancellable is what libsoup and the reads get; it fires
 * when the caller's cancellable does, or when nothing arrived for the stall time
 * (timed_out is then TRUE). */
typedef struct {
  GCancellable *cancellable;
  GCancellable *user;
  gulong handler;
  GSource *timer;
  guint stall_ms;
  gboolean timed_out;
} BurrowRemoteWatch;

void _burrow_remote_watch_start (BurrowRemoteWatch *watch,
                                 GCancellable      *user,
                                 guint              stall_ms);
/* Something arrived: the stall time starts again. */
void _burrow_remote_watch_touch (BurrowRemoteWatch *watch);
void _burrow_remote_watch_clear (BurrowRemoteWatch *watch);
/* @error (from a read or a send) as the caller should see it: a timeout when the watch
 * fired, else cancelled or a transport error naming @host. */
GError *_burrow_remote_watch_error (BurrowRemoteWatch *watch,
                                    const GError      *error,
                                    const char        *host);

/* Reads @stream to its end, at most @limit bytes (more is an error), under @watch. */
void _burrow_remote_read_all_async (GInputStream        *stream,
                                    gsize                limit,
                                    BurrowRemoteWatch   *watch,
                                    GAsyncReadyCallback  callback,
                                    gpointer             user_data);
GBytes *_burrow_remote_read_all_finish (GAsyncResult  *result,
                                        GError       **error);

G_END_DECLS
