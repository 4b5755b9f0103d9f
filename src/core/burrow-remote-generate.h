/* A reply from a remote server, delivered exactly as the engine worker delivers a local
 * one (burrow_engine_worker_generate): posted BurrowGenerateUpdate *, then one final
 * BurrowGenerateResult * or error, through a BurrowBackendCallback on the main context. So
 * the chat view, history, regenerate, edit, stop and the stats line need not know which
 * backend answered. */
#pragma once

#include "burrow-backend.h"
#include "burrow-remote-client.h"

G_BEGIN_DECLS

/* Takes @chat. Returns the request's id (never 0, and never one the worker hands out).
 * @owner is held weakly: once it is finalized the request is cancelled and nothing more
 * is delivered. Cancelling @cancellable aborts the request; the final call then carries
 * G_IO_ERROR_CANCELLED. A failed reply's text so far was posted before its error. */
guint64 burrow_remote_generate (BurrowRemoteClient   *client,
                                BurrowRemoteChat     *chat,
                                GCancellable         *cancellable,
                                GObject              *owner,
                                BurrowBackendCallback callback,
                                gpointer              user_data);

G_END_DECLS
