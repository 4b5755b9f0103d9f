/* The remote backend: "loading" a remote model connects to its server (the key from the
 * keyring, the model found in /v1/models, a first profile when the server is a Burrow);
 * replies go through burrow_remote_generate. One client per server address, kept while
 * the backend lives. */
#include "burrow-config.h"

#include <glib/gi18n.h>
#include <string.h>

#include "burrow-remote-backend.h"
#include "burrow-remote-client.h"
#include "burrow-remote-generate.h"
#include "burrow-remote-keyring.h"
#include "burrow-remote-profile.h"
#include "burrow-remote-servers.h"

struct _BurrowRemoteBackend {
  GObject parent_instance;
  GSettings *settings;
  GHashTable *clients;          /* url -> BurrowRemoteClient */
  BurrowRemoteClient *current;  /* the loaded model's server */
  char *model;                  /* its name there */
  double stall_timeout;
  guint64 next_id;
};

static void burrow_remote_backend_iface_init (BurrowBackendInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (BurrowRemoteBackend, burrow_remote_backend, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (BURROW_TYPE_BACKEND,
                                                      burrow_remote_backend_iface_init))

/* ---- model ids ---- */

char *
burrow_remote_model_id (const char *url,
                        const char *model)
{
  return g_strconcat (url, "#", model, NULL);
}

gboolean
burrow_remote_model_id_parse (const char  *id,
                              char       **url,
                              char       **model)
{
  const char *hash;

  if (id == NULL || (!g_str_has_prefix (id, "http://") && !g_str_has_prefix (id, "https://")))
    return FALSE;
  hash = strchr (id, '#');
  if (hash == NULL || hash[1] == '\0')
    return FALSE;
  if (url != NULL)
    *url = g_strndup (id, (gsize) (hash - id));
  if (model != NULL)
    *model = g_strdup (hash + 1);
  return TRUE;
}

char *
burrow_remote_model_host (const char *id)
{
  g_autofree char *url = NULL;
  g_autoptr(GUri) uri = NULL;

  if (!burrow_remote_model_id_parse (id, &url, NULL))
    return NULL;
  uri = g_uri_parse (url, G_URI_FLAGS_NONE, NULL);
  return g_strdup (uri != NULL && g_uri_get_host (uri) != NULL ? g_uri_get_host (uri) : url);
}

char *
burrow_model_display_name (const char *model_dir)
{
  g_autofree char *model = NULL;
  g_autofree char *host = NULL;

  if (model_dir == NULL || model_dir[0] == '\0')
    return g_strdup ("");
  if (!burrow_remote_model_id_parse (model_dir, NULL, &model))
    return burrow_model_name (model_dir);
  host = burrow_remote_model_host (model_dir);
  /* Translators: a model on a server: its name there, then the server's host name */
  return g_strdup_printf (_("%s (%s)"), model, host);
}

/* ---- the object ---- */

static void
burrow_remote_backend_finalize (GObject *object)
{
  BurrowRemoteBackend *self = BURROW_REMOTE_BACKEND (object);

  g_clear_object (&self->settings);
  g_hash_table_unref (self->clients);
  g_clear_object (&self->current);
  g_free (self->model);
  G_OBJECT_CLASS (burrow_remote_backend_parent_class)->finalize (object);
}

static void
burrow_remote_backend_class_init (BurrowRemoteBackendClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = burrow_remote_backend_finalize;
}

static void
burrow_remote_backend_init (BurrowRemoteBackend *self)
{
  self->clients = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_object_unref);
  /* Apart from the worker's ids and burrow_remote_generate's. */
  self->next_id = G_GUINT64_CONSTANT (1) << 47;
}

BurrowRemoteBackend *
burrow_remote_backend_new (GSettings *settings)
{
  BurrowRemoteBackend *self = g_object_new (BURROW_TYPE_REMOTE_BACKEND, NULL);

  self->settings = g_object_ref (settings);
  return self;
}

void
burrow_remote_backend_set_stall_timeout (BurrowRemoteBackend *self,
                                         double               seconds)
{
  self->stall_timeout = seconds;
}

void
burrow_remote_backend_forget (BurrowRemoteBackend *self,
                              const char          *url)
{
  g_hash_table_remove (self->clients, url);
}

/* ---- a client for an address: the one kept, else a new one with the keyring's key ---- */

typedef void (*ClientFunc) (BurrowRemoteClient *client, GError *error, gpointer data);

typedef struct {
  BurrowRemoteBackend *self;
  char *url;
  ClientFunc func;
  gpointer data;
} GetClient;

static BurrowRemoteClient *
client_with_key (BurrowRemoteBackend  *self,
                 const char           *url,
                 const char           *key,
                 GError              **error)
{
  g_autoptr(BurrowRemoteServer) server = burrow_remote_servers_find (self->settings, url);
  BurrowRemoteClient *client;

  if (key != NULL && burrow_remote_url_is_exposed (url) &&
      (server == NULL || !server->allow_plain_http))
    {
      g_set_error (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL,
                   /* Translators: %s is the server's address */
                   _("Burrow did not send the API key to %s: the address is plain http:// to "
                     "another computer, and sending it there was not allowed. Use https://, or "
                     "add the server again."), url);
      return NULL;
    }
  client = burrow_remote_client_new (url, key, error);
  if (client == NULL)
    return NULL;
  if (self->stall_timeout > 0)
    burrow_remote_client_set_stall_timeout (client, self->stall_timeout);
  g_hash_table_replace (self->clients, g_strdup (url), g_object_ref (client));
  return client;
}

static void
on_key (GObject      *source,
        GAsyncResult *res,
        gpointer      data)
{
  GetClient *g = data;
  g_autoptr(GError) error = NULL;
  char *key = burrow_remote_keyring_lookup_finish (res, &error);
  GError *made = NULL;
  g_autoptr(BurrowRemoteClient) client = NULL;

  /* A key in a locked keyring: say so, rather than ask without it and report a 401. */
  if (g_error_matches (error, BURROW_REMOTE_KEYRING_ERROR, BURROW_REMOTE_KEYRING_ERROR_LOCKED))
    {
      g->func (NULL, error, g->data);
      g_object_unref (g->self);
      g_free (g->url);
      g_free (g);
      return;
    }
  /* Without a keyring the server is asked without a key; one that needs it says so (401). */
  if (error != NULL)
    g_debug ("No key from the keyring for %s: %s", g->url, error->message);
  client = client_with_key (g->self, g->url, key, &made);
  burrow_remote_keyring_free_key (key);
  g->func (client, made, g->data);
  g_clear_error (&made);
  g_object_unref (g->self);
  g_free (g->url);
  g_free (g);
}

static void
get_client (BurrowRemoteBackend *self,
            const char          *url,
            GCancellable        *cancellable,
            ClientFunc           func,
            gpointer             data)
{
  BurrowRemoteClient *known = g_hash_table_lookup (self->clients, url);
  GetClient *g;

  if (known != NULL)
    {
      g_autoptr(BurrowRemoteClient) client = g_object_ref (known);

      func (client, NULL, data);
      return;
    }
  g = g_new0 (GetClient, 1);
  g->self = g_object_ref (self);
  g->url = g_strdup (url);
  g->func = func;
  g->data = data;
  burrow_remote_keyring_lookup_async (url, cancellable, on_key, g);
}

/* ---- listing a server's models ---- */

static void
on_listed (GObject      *source,
           GAsyncResult *res,
           gpointer      data)
{
  g_autoptr(GTask) task = data;
  GError *error = NULL;
  GStrv ids = burrow_remote_client_list_models_finish (BURROW_REMOTE_CLIENT (source), res, &error);

  if (ids == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, ids, (GDestroyNotify) g_strfreev);
}

static void
list_with_client (BurrowRemoteClient *client,
                  GError             *error,
                  gpointer            data)
{
  GTask *task = data;

  if (client == NULL)
    {
      g_task_return_error (task, g_error_copy (error));
      g_object_unref (task);
      return;
    }
  burrow_remote_client_list_models_async (client, g_task_get_cancellable (task), on_listed, task);
}

void
burrow_remote_backend_list_models_async (BurrowRemoteBackend *self,
                                         const char          *url,
                                         GCancellable        *cancellable,
                                         GAsyncReadyCallback  callback,
                                         gpointer             user_data)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);

  get_client (self, url, cancellable, list_with_client, task);
}

GStrv
burrow_remote_backend_list_models_finish (BurrowRemoteBackend  *self,
                                          GAsyncResult         *result,
                                          GError              **error)
{
  return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---- load ---- */

typedef struct {
  BurrowRemoteBackend *self;
  guint64 id;
  char *model_id;
  char *url;
  char *model;
  BurrowRemoteClient *client;
  GCancellable *cancellable;
  GWeakRef owner;
  gboolean had_owner;
  BurrowBackendCallback callback;
  gpointer user_data;
} Load;

static void
load_free (Load *l)
{
  g_object_unref (l->self);
  g_free (l->model_id);
  g_free (l->url);
  g_free (l->model);
  g_clear_object (&l->client);
  g_clear_object (&l->cancellable);
  g_weak_ref_clear (&l->owner);
  g_free (l);
}

static void
load_deliver (Load               *l,
              gboolean            done,
              gpointer            data,
              GDestroyNotify      data_free,
              const GError       *error)
{
  g_autoptr(GObject) owner = g_weak_ref_get (&l->owner);
  BurrowBackendResult result = { l->id, done, data, error };

  if (owner != NULL || !l->had_owner)
    l->callback (owner, &result, l->user_data);
  if (result.data != NULL && data_free != NULL)
    data_free (result.data);
}

/* Ends the load with @error (taken), or with the loaded result. Frees @l. */
static void
load_finish (Load             *l,
             GError           *error,
             BurrowLoadResult *loaded)
{
  if (error == NULL && g_cancellable_is_cancelled (l->cancellable))
    error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, _("Cancelled"));
  if (error == NULL)
    {
      g_set_object (&l->self->current, l->client);
      g_free (l->self->model);
      l->self->model = g_strdup (l->model);
    }
  else
    burrow_load_result_free (g_steal_pointer (&loaded));
  load_deliver (l, TRUE, loaded, (GDestroyNotify) burrow_load_result_free, error);
  g_clear_error (&error);
  load_free (l);
}

static void
progress (Load       *l,
          double      fraction,
          const char *phase)
{
  BurrowLoadProgress *p = g_new0 (BurrowLoadProgress, 1);

  p->fraction = fraction;
  p->phase = g_strdup (phase);
  load_deliver (l, FALSE, p, (GDestroyNotify) burrow_load_progress_free, NULL);
}

static void
on_load_profile (GObject      *source,
                 GAsyncResult *res,
                 gpointer      data)
{
  Load *l = data;
  g_autoptr(JsonObject) profile =
    burrow_remote_client_get_profile_finish (BURROW_REMOTE_CLIENT (source), res, NULL);
  BurrowLoadResult *loaded = g_new0 (BurrowLoadResult, 1);

  loaded->dir = g_strdup (l->model_id);
  loaded->name = g_strdup (l->model);
  if (profile != NULL)
    {
      JsonNode *family = json_object_get_member (profile, "family");

      if (family != NULL && JSON_NODE_HOLDS_VALUE (family) &&
          json_node_get_value_type (family) == G_TYPE_STRING)
        loaded->family = g_strdup (json_node_get_string (family));
      loaded->snapshot = burrow_remote_profile_to_snapshot (profile);
    }
  load_finish (l, NULL, loaded);
}

static void
on_load_models (GObject      *source,
                GAsyncResult *res,
                gpointer      data)
{
  Load *l = data;
  GError *error = NULL;
  g_auto(GStrv) ids = burrow_remote_client_list_models_finish (l->client, res, &error);

  if (ids == NULL)
    {
      load_finish (l, error, NULL);
      return;
    }
  if (!g_strv_contains ((const char *const *) ids, l->model))
    {
      g_autofree char *listed = g_strjoinv (", ", ids);

      load_finish (l, g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_NOT_FOUND,
                                   /* Translators: the server's host, the model asked for,
                                    * then the models it serves (or "none") */
                                   _("%s has no model named “%s” (it serves: %s)."),
                                   burrow_remote_client_get_host (l->client), l->model,
                                   /* Translators: a server that serves no model */
                                   listed[0] ? listed : _("none")), NULL);
      return;
    }
  progress (l, 0.7, _("Reading the server’s profile"));
  burrow_remote_client_get_profile_async (l->client, l->cancellable, on_load_profile, l);
}

static void
load_with_client (BurrowRemoteClient *client,
                  GError             *error,
                  gpointer            data)
{
  Load *l = data;

  if (client == NULL)
    {
      load_finish (l, g_error_copy (error), NULL);
      return;
    }
  l->client = g_object_ref (client);
  progress (l, 0.3, _("Asking the server for its models"));
  burrow_remote_client_list_models_async (l->client, l->cancellable, on_load_models, l);
}

static guint64
remote_load (BurrowBackend             *backend,
             const char                *model,
             const BurrowEngineOptions *options,
             GCancellable              *cancellable,
             GObject                   *owner,
             BurrowBackendCallback      callback,
             gpointer                   user_data)
{
  BurrowRemoteBackend *self = BURROW_REMOTE_BACKEND (backend);
  Load *l = g_new0 (Load, 1);

  l->self = g_object_ref (self);
  l->id = self->next_id++;
  l->model_id = g_strdup (model);
  l->cancellable = cancellable ? g_object_ref (cancellable) : g_cancellable_new ();
  g_weak_ref_init (&l->owner, owner);
  l->had_owner = owner != NULL;
  l->callback = callback;
  l->user_data = user_data;
  g_clear_object (&self->current);

  if (!burrow_remote_model_id_parse (model, &l->url, &l->model))
    {
      guint64 id = l->id;

      load_finish (l, g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL,
                                   /* Translators: %s is what was given as a model's name */
                                   _("“%s” does not name a model on a server"), model), NULL);
      return id;
    }
  get_client (self, l->url, l->cancellable, load_with_client, l);
  return l->id;
}

/* ---- generate ---- */

static void
fail_unconnected (gpointer data)
{
  Load *l = data;
  g_autoptr(GError) error = g_error_new_literal (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL,
                                                 _("No remote model is connected"));

  load_deliver (l, TRUE, NULL, NULL, error);
  load_free (l);
}

static guint64
remote_generate (BurrowBackend         *backend,
                 BurrowGenerateRequest *request,
                 GCancellable          *cancellable,
                 GObject               *owner,
                 BurrowBackendCallback  callback,
                 gpointer               user_data)
{
  BurrowRemoteBackend *self = BURROW_REMOTE_BACKEND (backend);
  g_autoptr(BurrowRemoteClient) client = self->current ? g_object_ref (self->current) : NULL;
  BurrowRemoteChat *chat;
  const BurrowGenerateMessage *messages;
  guint n = 0;
  guint64 id;

  if (client == NULL)
    {
      /* The session only generates with a loaded model; a load that failed ends here. */
      Load *l = g_new0 (Load, 1);

      l->self = g_object_ref (self);
      l->id = id = self->next_id++;
      l->cancellable = g_cancellable_new ();
      g_weak_ref_init (&l->owner, owner);
      l->had_owner = owner != NULL;
      l->callback = callback;
      l->user_data = user_data;
      burrow_generate_request_free (request);
      g_idle_add_once (fail_unconnected, l);
      return id;
    }
  chat = burrow_remote_chat_new (self->model);
  messages = burrow_generate_request_get_messages (request, &n);
  for (guint i = 0; i < n; i++)
    burrow_remote_chat_add_message (chat, messages[i].role, messages[i].content);
  *burrow_remote_chat_get_options (chat) = *burrow_generate_request_get_options (request);
  id = burrow_remote_generate (client, chat, cancellable, owner, callback, user_data);
  /* The options' strings were read into the request body already. */
  burrow_generate_request_free (request);
  return id;
}

static BurrowBackendFlags
remote_get_flags (BurrowBackend *backend)
{
  BurrowRemoteBackend *self = BURROW_REMOTE_BACKEND (backend);

  return self->current != NULL &&
         burrow_remote_client_get_profile_state (self->current) == BURROW_REMOTE_PROFILE_YES
           ? BURROW_BACKEND_PERF_NUMBERS : 0;
}

static void
burrow_remote_backend_iface_init (BurrowBackendInterface *iface)
{
  iface->get_flags = remote_get_flags;
  iface->load = remote_load;
  iface->generate = remote_generate;
}
