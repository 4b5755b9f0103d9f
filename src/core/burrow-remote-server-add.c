/* The add-server transaction: keyring, then settings, then the backend. */
#include "burrow-remote-server-add.h"

#include "burrow-remote-client.h"
#include "burrow-remote-error.h"
#include "burrow-remote-keyring.h"
#include "burrow-remote-servers.h"

typedef struct {
  BurrowRemoteBackend *remote;  /* nullable */
  GSettings *settings;
  char *url;
  char *name;
  char *key;                    /* NULL for none; wiped when freed */
  gboolean allow_plain_http;
} Adding;

static void
adding_free (Adding *a)
{
  g_clear_object (&a->remote);
  g_object_unref (a->settings);
  g_free (a->url);
  g_free (a->name);
  if (a->key != NULL)
    burrow_remote_keyring_free_key (g_steal_pointer (&a->key));
  g_free (a);
}

static void
keep_server (GTask *task)
{
  Adding *a = g_task_get_task_data (task);

  burrow_remote_servers_put (a->settings, a->url, a->name, a->allow_plain_http);
  if (a->remote != NULL)
    burrow_remote_backend_forget (a->remote, a->url);
  g_task_return_boolean (task, TRUE);
}

static void
on_key_kept (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  g_autoptr(GTask) task = data;
  GError *error = NULL;

  if (!burrow_remote_keyring_store_finish (result, &error))
    g_task_return_error (task, error);
  else
    keep_server (task);
}

static void
on_key_cleared (GObject      *source,
                GAsyncResult *result,
                gpointer      data)
{
  g_autoptr(GTask) task = data;

  /* No keyring holds no old key either: the server is still added. */
  burrow_remote_keyring_clear_finish (result, NULL);
  keep_server (task);
}

void
burrow_remote_server_add_async (BurrowRemoteBackend *remote,
                                GSettings           *settings,
                                const char          *url,
                                const char          *name,
                                const char          *key,
                                gboolean             allow_plain_http,
                                GCancellable        *cancellable,
                                GAsyncReadyCallback  callback,
                                gpointer             user_data)
{
  GTask *task;
  Adding *a;

  g_return_if_fail (remote == NULL || BURROW_IS_REMOTE_BACKEND (remote));
  g_return_if_fail (G_IS_SETTINGS (settings));
  g_return_if_fail (url != NULL);

  task = g_task_new (NULL, cancellable, callback, user_data);
  g_task_set_source_tag (task, burrow_remote_server_add_async);
  a = g_new0 (Adding, 1);
  a->remote = remote != NULL ? g_object_ref (remote) : NULL;
  a->settings = g_object_ref (settings);
  a->url = g_strdup (url);
  a->name = g_strdup (name != NULL ? name : "");
  a->key = key != NULL && key[0] != '\0' ? g_strdup (key) : NULL;
  a->allow_plain_http = allow_plain_http;
  g_task_set_task_data (task, a, (GDestroyNotify) adding_free);

  if (a->key != NULL)
    burrow_remote_keyring_store_async (a->url, a->name, a->key, cancellable, on_key_kept, task);
  else
    burrow_remote_keyring_clear_async (a->url, cancellable, on_key_cleared, task);
}

gboolean
burrow_remote_server_add_finish (GAsyncResult  *result,
                                 GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

/* ---- the key, checked before anything is kept ---- */

static void
on_checked (GObject      *source,
            GAsyncResult *result,
            gpointer      data)
{
  g_autoptr(GTask) task = data;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) ids = burrow_remote_client_list_models_finish (BURROW_REMOTE_CLIENT (source),
                                                               result, &error);

  /* Only the server's own refusal says the key is wrong; a server that cannot be reached
   * now is still added, its list saying why. */
  if (g_error_matches (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_UNAUTHORIZED) ||
      g_error_matches (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_FORBIDDEN) ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_boolean (task, TRUE);
}

void
burrow_remote_server_check_key_async (const char          *url,
                                      const char          *key,
                                      GCancellable        *cancellable,
                                      GAsyncReadyCallback  callback,
                                      gpointer             user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);
  g_autoptr(BurrowRemoteClient) client = NULL;
  GError *error = NULL;

  g_task_set_source_tag (task, burrow_remote_server_check_key_async);
  client = burrow_remote_client_new (url, key, &error);
  if (client == NULL)
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  burrow_remote_client_list_models_async (client, cancellable, on_checked, task);
}

gboolean
burrow_remote_server_check_key_finish (GAsyncResult  *result,
                                       GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}
