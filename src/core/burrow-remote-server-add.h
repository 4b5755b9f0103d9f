/* Adding a remote server, as one transaction: its API key goes to the keyring first (with no
 * key, an old one is cleared), then the address and name to GSettings, then the backend drops
 * a connection that still holds an old key. A key the keyring does not take leaves the
 * server out, so that no server is listed whose key is lost. GTK-free. */
#pragma once

#include <gio/gio.h>

#include "burrow-remote-backend.h"

G_BEGIN_DECLS

/* @url as burrow_remote_client_get_url gives it; @name may be ""; @key NULL or "" for
 * none; @allow_plain_http: the person agreed to send the key over http:// (asked by the
 * caller before). @remote may be NULL (no connection to drop). */
void burrow_remote_server_add_async (BurrowRemoteBackend *remote,
                                     GSettings           *settings,
                                     const char          *url,
                                     const char          *name,
                                     const char          *key,
                                     gboolean             allow_plain_http,
                                     GCancellable        *cancellable,
                                     GAsyncReadyCallback  callback,
                                     gpointer             user_data);
/* FALSE with the keyring's error when the key could not be kept (nothing was added). */
gboolean burrow_remote_server_add_finish (GAsyncResult  *result,
                                          GError       **error);

/* Asks the server at @url for its models (GET /v1/models) with @key (NULL or "" for none),
 * before anything is kept: FALSE with BURROW_REMOTE_ERROR_UNAUTHORIZED or _FORBIDDEN when
 * the server refuses the key, or with a bad address; TRUE otherwise, also when the server
 * cannot be reached now (the list of servers says so later). */
void burrow_remote_server_check_key_async (const char          *url,
                                           const char          *key,
                                           GCancellable        *cancellable,
                                           GAsyncReadyCallback  callback,
                                           gpointer             user_data);
gboolean burrow_remote_server_check_key_finish (GAsyncResult  *result,
                                                GError       **error);

G_END_DECLS
