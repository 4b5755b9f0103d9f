/* One backend for the session that answers with the local engine or a remote server,
 * whichever holds the model loaded last: remote models are named "URL#MODEL"
 * (burrow-remote-backend.h), everything else is a local folder. No GTK. */
#pragma once

#include "burrow-backend.h"

G_BEGIN_DECLS

#define BURROW_TYPE_REMOTE_ROUTER (burrow_remote_router_get_type ())
G_DECLARE_FINAL_TYPE (BurrowRemoteRouter, burrow_remote_router, BURROW, REMOTE_ROUTER, GObject)

BurrowRemoteRouter *burrow_remote_router_new (BurrowBackend *local,
                                              BurrowBackend *remote);
BurrowBackend *burrow_remote_router_get_remote (BurrowRemoteRouter *self);

G_END_DECLS
