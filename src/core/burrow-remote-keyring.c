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

G_DEFINE_QUARK (burrow-remote-keyring-error-quark, burrow_remote_keyring_error)

static void
on_search (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  g_autoptr(GTask) task = data;
  GError *error = NULL;
  GList *items = secret_service_search_finish (SECRET_SERVICE (source), result, &error);
  gboolean locked = FALSE;

  for (GList *l = items; l != NULL; l = l->next)
    locked |= secret_item_get_locked (l->data);
  g_list_free_full (items, g_object_unref);
  if (error != NULL)
    g_task_return_error (task, error);
  else if (locked)
    g_task_return_new_error (task, BURROW_REMOTE_KEYRING_ERROR, BURROW_REMOTE_KEYRING_ERROR_LOCKED,
                             /* Translators: %s is the server's name */
                             _("The keyring holding the API key for %s is locked"),
                             (const char *) g_task_get_task_data (task));
  else
    g_task_return_pointer (task, NULL, NULL);
}

static void
on_service (GObject      *source,
            GAsyncResult *result,
            gpointer      data)
{
  GTask *task = data;
  GError *error = NULL;
  g_autoptr(SecretService) service = secret_service_get_finish (result, &error);
  g_autoptr(GHashTable) attributes = NULL;

  if (service == NULL)
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  attributes = secret_attributes_build (key_schema (), "url", g_task_get_task_data (task), NULL);
  /* Locked items too, without unlocking: only to tell a locked key from none. */
  secret_service_search (service, key_schema (), attributes, SECRET_SEARCH_ALL,
                         g_task_get_cancellable (task), on_search, task);
}

static void
on_lookup (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  GTask *task = data;
  GError *error = NULL;
  char *key = secret_password_lookup_finish (result, &error);

  if (key != NULL || error != NULL)
    {
      if (error != NULL)
        g_task_return_error (task, error);
      else
        g_task_return_pointer (task, key, (GDestroyNotify) burrow_remote_keyring_free_key);
      g_object_unref (task);
      return;
    }
  /* No key: none stored, or one whose keyring stayed locked. */
  secret_service_get (SECRET_SERVICE_NONE, g_task_get_cancellable (task), on_service, task);
}

void
burrow_remote_keyring_lookup_async (const char          *url,
                                    GCancellable        *cancellable,
                                    GAsyncReadyCallback  callback,
                                    gpointer             user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);

  g_task_set_source_tag (task, burrow_remote_keyring_lookup_async);
  g_task_set_task_data (task, g_strdup (url), g_free);
  secret_password_lookup (key_schema (), cancellable, on_lookup, task, "url", url, NULL);
}

char *
burrow_remote_keyring_lookup_finish (GAsyncResult  *result,
                                     GError       **error)
{
  return g_task_propagate_pointer (G_TASK (result), error);
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
