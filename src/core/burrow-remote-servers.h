/* The servers added in Burrow, kept in GSettings (remote-servers): address, name, and
 * whether the person allowed its key over plain http. Never the key (see
 * burrow-remote-keyring.h). GTK-free. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  char *url;                  /* as burrow_remote_client_get_url gives it */
  char *name;
  gboolean allow_plain_http;  /* asked once: its key may go over http:// */
} BurrowRemoteServer;

void burrow_remote_server_free (BurrowRemoteServer *server);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BurrowRemoteServer, burrow_remote_server_free)

/* BurrowRemoteServer *, in the order they were added. */
GPtrArray *burrow_remote_servers_load (GSettings *settings);
/* Adds a server or, for an address already there, replaces it. */
void burrow_remote_servers_put (GSettings  *settings,
                                const char *url,
                                const char *name,
                                gboolean    allow_plain_http);
void burrow_remote_servers_remove (GSettings  *settings,
                                   const char *url);
/* NULL when @url was not added. */
BurrowRemoteServer *burrow_remote_servers_find (GSettings  *settings,
                                                const char *url);

G_END_DECLS
