/* Server keys in the Secret Service. One schema, one attribute: the server's address as
 * Burrow uses it, so that the same server added twice shares one key. */
#include "burrow-config.h"

#include "burrow-remote-keyring.h"

#include <glib/gi18n.h>
#include <libsecret/secret.h>

static const SecretSchema *
key_schema (void)
{
  static const SecretSchema schema = {
    "io.github.burrow.Burrow.ServerKey", SECRET_SCHEMA_NONE,
    {
      { "url", SECRET_SCHEMA_ATTRIBUTE_STRING },
      { NULL, 0 },
    }
  };
  return &schema;
}

void
burrow_remote_keyring_store_async (const char          *url,
                                   const char          *name,
                                   const char          *key,
                                   GCancellable        *cancellable,
                                   GAsyncReadyCallback  callback,
                                   gpointer             user_data)
{
  /* Translators: the name the keyring manager shows for a key; %s is the server's name */
  g_autofree char *label = g_strdup_printf (_("Burrow: API key for %s"),
                                            name && *name ? name : url);

  secret_password_store (key_schema (), SECRET_COLLECTION_DEFAULT, label, key, cancellable,
                         callback, user_data, "url", url, NULL);
}

gboolean
burrow_remote_keyring_store_finish (GAsyncResult  *result,
                                    GError       **error)
{
  return secret_password_store_finish (result, error);
}

void
burrow_remote_keyring_lookup_async (const char          *url,
                                    GCancellable        *cancellable,
                                    GAsyncReadyCallback  callback,
                                    gpointer             user_data)
{
  secret_password_lookup (key_schema (), cancellable, callback, user_data, "url", url, NULL);
}

char *
burrow_remote_keyring_lookup_finish (GAsyncResult  *result,
                                     GError       **error)
{
  return secret_password_lookup_finish (result, error);
}

void
burrow_remote_keyring_clear_async (const char          *url,
                                   GCancellable        *cancellable,
                                   GAsyncReadyCallback  callback,
                                   gpointer             user_data)
{
  secret_password_clear (key_schema (), cancellable, callback, user_data, "url", url, NULL);
}

gboolean
burrow_remote_keyring_clear_finish (GAsyncResult  *result,
                                    GError       **error)
{
  g_autoptr(GError) local = NULL;

  /* FALSE without an error: there was nothing to clear, which is what was asked. */
  if (!secret_password_clear_finish (result, &local) && local != NULL)
    {
      g_propagate_error (error, g_steal_pointer (&local));
      return FALSE;
    }
  return TRUE;
}

void
burrow_remote_keyring_free_key (char *key)
{
  secret_password_free (key);
}
