/* API keys of remote servers in the desktop keyring (the Secret Service, through
 * libsecret), one per server address. Keys live nowhere else: not in GSettings, the chat
 * database or any log. GTK-free. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define BURROW_REMOTE_KEYRING_ERROR (burrow_remote_keyring_error_quark ())
GQuark burrow_remote_keyring_error_quark (void);

typedef enum {
  BURROW_REMOTE_KEYRING_ERROR_LOCKED,   /* the key is there, in a keyring left locked */
} BurrowRemoteKeyringError;

/* Stores (or replaces) the key for @url, labelled with the server's @name. */
void burrow_remote_keyring_store_async (const char          *url,
                                        const char          *name,
                                        const char          *key,
                                        GCancellable        *cancellable,
                                        GAsyncReadyCallback  callback,
                                        gpointer             user_data);
gboolean burrow_remote_keyring_store_finish (GAsyncResult  *result,
                                             GError       **error);

/* The key for @url: NULL without an error when there is none; NULL with
 * BURROW_REMOTE_KEYRING_ERROR_LOCKED when it is in a keyring that stayed locked (its
 * unlock prompt dismissed), so that the server is not asked without it. Free with
 * burrow_remote_keyring_free_key (it wipes the memory). */
void burrow_remote_keyring_lookup_async (const char          *url,
                                         GCancellable        *cancellable,
                                         GAsyncReadyCallback  callback,
                                         gpointer             user_data);
char *burrow_remote_keyring_lookup_finish (GAsyncResult  *result,
                                           GError       **error);

/* Forgets the key for @url (TRUE also when there was none). */
void burrow_remote_keyring_clear_async (const char          *url,
                                        GCancellable        *cancellable,
                                        GAsyncReadyCallback  callback,
                                        gpointer             user_data);
gboolean burrow_remote_keyring_clear_finish (GAsyncResult  *result,
                                             GError       **error);

void burrow_remote_keyring_free_key (char *key);

G_END_DECLS
