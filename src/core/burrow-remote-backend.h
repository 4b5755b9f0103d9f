/* Models on OpenAI-compatible servers behind the backend interface. A remote model is
 * named "URL#MODEL" (the server's address as burrow_remote_client_get_url gives it, and
 * its name for the model), which is what chats store as their model, so that remote
 * conversations live in the same chat store as local ones. Keys come from the keyring;
 * the servers list (GSettings) says whether a key may go over plain http. No GTK. */
#pragma once

#include "burrow-backend.h"

G_BEGIN_DECLS

#define BURROW_TYPE_REMOTE_BACKEND (burrow_remote_backend_get_type ())
G_DECLARE_FINAL_TYPE (BurrowRemoteBackend, burrow_remote_backend, BURROW, REMOTE_BACKEND, GObject)

/* @settings: the app's (for remote-servers). */
BurrowRemoteBackend *burrow_remote_backend_new (GSettings *settings);

/* Seconds without a byte before a request gives up (default: the client's). */
void burrow_remote_backend_set_stall_timeout (BurrowRemoteBackend *self,
                                              double               seconds);
/* Forgets the connection to @url (its key changed, or it was removed). */
void burrow_remote_backend_forget (BurrowRemoteBackend *self,
                                   const char          *url);

/* The models the server at @url lists (GET /v1/models), asked with its key from the
 * keyring. */
void burrow_remote_backend_list_models_async (BurrowRemoteBackend *self,
                                              const char          *url,
                                              GCancellable        *cancellable,
                                              GAsyncReadyCallback  callback,
                                              gpointer             user_data);
GStrv burrow_remote_backend_list_models_finish (BurrowRemoteBackend  *self,
                                                GAsyncResult         *result,
                                                GError              **error);

/* "URL#MODEL" for @model on the server at @url (normalized). */
char *burrow_remote_model_id (const char *url,
                              const char *model);
/* TRUE when @id names a remote model; then @url and @model (both may be NULL) get its
 * parts. */
gboolean burrow_remote_model_id_parse (const char  *id,
                                       char       **url,
                                       char       **model);
/* The host name of the server a remote model id names (where its chats are sent), or
 * NULL for a local model. */
char *burrow_remote_model_host (const char *id);
/* What to call a model in the window: burrow_model_name's (a folder's or a GGUF file's
 * name), or "MODEL (host)". */
char *burrow_model_display_name (const char *model_dir);

G_END_DECLS
