/* The remote client: the server's address, one libsoup session, the GET requests (models,
 * profile), and the watch every request runs under. The streamed chat reply is in
 * burrow-remote-chat.c. */
#include "burrow-config.h"

#include "burrow-remote-private.h"

#include <string.h>

#define DEFAULT_STALL_SECONDS 300.0
#define JSON_LIMIT (8 * 1024 * 1024)

struct _BurrowRemoteClient {
  GObject parent_instance;
  SoupSession *session;
  char *url;
  char *host;
  char *api_key;
  guint stall_ms;
  BurrowRemoteProfileState profile_state;
};

G_DEFINE_FINAL_TYPE (BurrowRemoteClient, burrow_remote_client, G_TYPE_OBJECT)

static void
burrow_remote_client_finalize (GObject *object)
{
  BurrowRemoteClient *self = BURROW_REMOTE_CLIENT (object);

  g_clear_object (&self->session);
  g_free (self->url);
  g_free (self->host);
  if (self->api_key != NULL)
    memset (self->api_key, 0, strlen (self->api_key));
  g_free (self->api_key);
  G_OBJECT_CLASS (burrow_remote_client_parent_class)->finalize (object);
}

static void
burrow_remote_client_class_init (BurrowRemoteClientClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = burrow_remote_client_finalize;
}

static void
burrow_remote_client_init (BurrowRemoteClient *self)
{
  self->stall_ms = (guint) (DEFAULT_STALL_SECONDS * 1000);
}

/* The address without trailing slashes or /v1, or NULL with @error. */
static char *
normalize_url (const char  *url,
               GUri       **parsed,
               GError     **error)
{
  g_autoptr(GUri) uri = NULL;
  g_autofree char *text = g_strstrip (g_strdup (url ? url : ""));
  const char *scheme;
  gsize len;

  uri = g_uri_parse (text, G_URI_FLAGS_NONE, NULL);
  scheme = uri ? g_uri_get_scheme (uri) : NULL;
  if (uri == NULL || scheme == NULL || strpbrk (text, " \t\r\n") != NULL ||
      (g_ascii_strcasecmp (scheme, "http") != 0 && g_ascii_strcasecmp (scheme, "https") != 0) ||
      g_uri_get_host (uri) == NULL || g_uri_get_host (uri)[0] == '\0' ||
      g_uri_get_query (uri) != NULL || g_uri_get_fragment (uri) != NULL ||
      g_uri_get_userinfo (uri) != NULL)
    {
      g_set_error (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL,
                   "“%s” is not a server address: give one like http://host:8000 or "
                   "https://host/ (without a query or a password)", text);
      return NULL;
    }

  len = strlen (text);
  for (;;)
    {
      while (len > 0 && text[len - 1] == '/')
        len--;
      if (len >= 3 && strncmp (text + len - 3, "/v1", 3) == 0)
        len -= 3;
      else
        break;
    }
  text[len] = '\0';
  *parsed = g_steal_pointer (&uri);
  return g_steal_pointer (&text);
}

BurrowRemoteClient *
burrow_remote_client_new (const char  *url,
                          const char  *api_key,
                          GError     **error)
{
  g_autoptr(GUri) uri = NULL;
  g_autofree char *base = normalize_url (url, &uri, error);
  BurrowRemoteClient *self;

  if (base == NULL)
    return NULL;
  if (api_key != NULL && strpbrk (api_key, "\r\n") != NULL)
    {
      g_set_error_literal (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL,
                           "The API key has a line break in it");
      return NULL;
    }

  self = g_object_new (BURROW_TYPE_REMOTE_CLIENT, NULL);
  self->url = g_steal_pointer (&base);
  self->host = g_uri_get_port (uri) > 0
                 ? g_strdup_printf ("%s:%d", g_uri_get_host (uri), g_uri_get_port (uri))
                 : g_strdup (g_uri_get_host (uri));
  self->api_key = api_key != NULL && api_key[0] != '\0' ? g_strdup (api_key) : NULL;
  self->session = soup_session_new_with_options ("user-agent", "Burrow/" BURROW_VERSION,
                                                 "max-conns-per-host", 4,
                                                 NULL);
  return self;
}

const char *
burrow_remote_client_get_url (BurrowRemoteClient *self)
{
  return self->url;
}

const char *
burrow_remote_client_get_host (BurrowRemoteClient *self)
{
  return self->host;
}

gboolean
burrow_remote_client_has_api_key (BurrowRemoteClient *self)
{
  return self->api_key != NULL;
}

gboolean
burrow_remote_url_is_exposed (const char *url)
{
  g_autoptr(GUri) uri = NULL;
  g_autofree char *base = normalize_url (url, &uri, NULL);
  g_autoptr(GInetAddress) address = NULL;
  const char *host;

  if (base == NULL || g_ascii_strcasecmp (g_uri_get_scheme (uri), "http") != 0)
    return FALSE;
  host = g_uri_get_host (uri);
  if (g_ascii_strcasecmp (host, "localhost") == 0 ||
      g_str_has_suffix (host, ".localhost"))
    return FALSE;
  address = g_inet_address_new_from_string (host);
  return address == NULL || !g_inet_address_get_is_loopback (address);
}

void
burrow_remote_client_set_stall_timeout (BurrowRemoteClient *self,
                                        double              seconds)
{
  self->stall_ms = (guint) CLAMP (seconds * 1000.0, 1.0, (double) G_MAXUINT);
}

SoupSession *
_burrow_remote_client_get_session (BurrowRemoteClient *self)
{
  return self->session;
}

guint
_burrow_remote_client_get_stall_ms (BurrowRemoteClient *self)
{
  return self->stall_ms;
}

SoupMessage *
_burrow_remote_client_message (BurrowRemoteClient *self,
                               const char         *method,
                               const char         *path,
                               const char         *accept)
{
  g_autofree char *uri = g_strconcat (self->url, path, NULL);
  SoupMessage *msg = soup_message_new (method, uri);
  SoupMessageHeaders *headers;

  /* The address was checked when the client was made. */
  g_assert (msg != NULL);
  headers = soup_message_get_request_headers (msg);
  soup_message_headers_replace (headers, "Accept", accept);
  if (self->api_key != NULL)
    {
      g_autofree char *bearer = g_strconcat ("Bearer ", self->api_key, NULL);

      soup_message_headers_replace (headers, "Authorization", bearer);
      memset (bearer, 0, strlen (bearer));
    }
  return msg;
}

/* ---- the watch ---- */

static void
on_user_cancelled (GCancellable *user,
                   gpointer      data)
{
  g_cancellable_cancel (data);
}

static gboolean
on_stalled (gpointer data)
{
  BurrowRemoteWatch *watch = data;

  watch->timed_out = TRUE;
  g_clear_pointer (&watch->timer, g_source_unref);
  g_cancellable_cancel (watch->cancellable);
  return G_SOURCE_REMOVE;
}

void
_burrow_remote_watch_touch (BurrowRemoteWatch *watch)
{
  if (watch->timed_out)
    return;
  if (watch->timer != NULL)
    {
      g_source_destroy (watch->timer);
      g_source_unref (watch->timer);
    }
  watch->timer = g_timeout_source_new (watch->stall_ms);
  g_source_set_callback (watch->timer, on_stalled, watch, NULL);
  g_source_set_static_name (watch->timer, "[burrow] remote stall");
  g_source_attach (watch->timer, g_main_context_get_thread_default ());
}

void
_burrow_remote_watch_start (BurrowRemoteWatch *watch,
                            GCancellable      *user,
                            guint              stall_ms)
{
  memset (watch, 0, sizeof *watch);
  watch->cancellable = g_cancellable_new ();
  watch->stall_ms = stall_ms;
  if (user != NULL)
    {
      watch->user = g_object_ref (user);
      watch->handler = g_cancellable_connect (user, G_CALLBACK (on_user_cancelled),
                                              g_object_ref (watch->cancellable), g_object_unref);
    }
  _burrow_remote_watch_touch (watch);
}

void
_burrow_remote_watch_clear (BurrowRemoteWatch *watch)
{
  if (watch->timer != NULL)
    {
      g_source_destroy (watch->timer);
      g_clear_pointer (&watch->timer, g_source_unref);
    }
  if (watch->user != NULL)
    g_cancellable_disconnect (watch->user, watch->handler);
  g_clear_object (&watch->user);
  g_clear_object (&watch->cancellable);
}

GError *
_burrow_remote_watch_error (BurrowRemoteWatch *watch,
                            const GError      *error,
                            const char        *host)
{
  if (watch->timed_out)
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_TIMEOUT,
                        "%s sent nothing for %u s, so Burrow stopped waiting. The server may "
                        "be overloaded or stuck.", host, (watch->stall_ms + 999) / 1000);
  if (watch->user != NULL && g_cancellable_is_cancelled (watch->user))
    return g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, "Stopped");
  return burrow_remote_error_from_transport (error, host);
}

/* ---- reading a whole body ---- */

typedef struct {
  GInputStream *stream;
  GByteArray *bytes;
  gsize limit;
  BurrowRemoteWatch *watch;
} ReadAll;

static void
read_all_free (gpointer data)
{
  ReadAll *r = data;

  g_object_unref (r->stream);
  g_byte_array_unref (r->bytes);
  g_free (r);
}

static void read_all_next (GTask *task);

static void
on_read_all (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  g_autoptr(GTask) task = data;
  ReadAll *r = g_task_get_task_data (task);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) chunk = g_input_stream_read_bytes_finish (r->stream, result, &error);

  if (chunk == NULL)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }
  if (g_bytes_get_size (chunk) == 0)
    {
      g_task_return_pointer (task, g_byte_array_free_to_bytes (g_byte_array_ref (r->bytes)),
                             (GDestroyNotify) g_bytes_unref);
      return;
    }
  if (r->bytes->len + g_bytes_get_size (chunk) > r->limit)
    {
      g_task_return_new_error (task, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_PROTOCOL,
                               "The answer is longer than %" G_GSIZE_FORMAT " bytes", r->limit);
      return;
    }
  g_byte_array_append (r->bytes, g_bytes_get_data (chunk, NULL), (guint) g_bytes_get_size (chunk));
  _burrow_remote_watch_touch (r->watch);
  read_all_next (g_steal_pointer (&task));
}

static void
read_all_next (GTask *task)
{
  ReadAll *r = g_task_get_task_data (task);

  g_input_stream_read_bytes_async (r->stream, 16384, G_PRIORITY_DEFAULT,
                                   r->watch->cancellable, on_read_all, task);
}

void
_burrow_remote_read_all_async (GInputStream        *stream,
                               gsize                limit,
                               BurrowRemoteWatch   *watch,
                               GAsyncReadyCallback  callback,
                               gpointer             user_data)
{
  GTask *task = g_task_new (NULL, NULL, callback, user_data);
  ReadAll *r = g_new0 (ReadAll, 1);

  r->stream = g_object_ref (stream);
  r->bytes = g_byte_array_new ();
  r->limit = limit;
  r->watch = watch;
  g_task_set_task_data (task, r, read_all_free);
  read_all_next (task);
}

GBytes *
_burrow_remote_read_all_finish (GAsyncResult  *result,
                                GError       **error)
{
  return g_task_propagate_pointer (G_TASK (result), error);
}

/* ---- GET requests answered with JSON ---- */

typedef struct {
  BurrowRemoteClient *client;
  SoupMessage *msg;
  BurrowRemoteWatch watch;
} Get;

static void
get_free (gpointer data)
{
  Get *g = data;

  _burrow_remote_watch_clear (&g->watch);
  g_object_unref (g->msg);
  g_object_unref (g->client);
  g_free (g);
}

static void
on_get_body (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  g_autoptr(GTask) task = data;
  Get *g = g_task_get_task_data (task);
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) body = _burrow_remote_read_all_finish (result, &error);
  g_autoptr(JsonParser) parser = NULL;
  guint status = soup_message_get_status (g->msg);
  const char *text;
  gsize len = 0;

  if (body == NULL)
    {
      if (error->domain == BURROW_REMOTE_ERROR)
        g_task_return_error (task, g_steal_pointer (&error));
      else
        g_task_return_error (task, _burrow_remote_watch_error (&g->watch, error, g->client->host));
      return;
    }
  if (status < 200 || status > 299)
    {
      SoupMessageHeaders *headers = soup_message_get_response_headers (g->msg);

      g_task_return_error (task, burrow_remote_error_from_status (
        status, g->client->host, body, soup_message_headers_get_one (headers, "Retry-After"),
        g->client->api_key != NULL, NULL));
      return;
    }
  text = g_bytes_get_data (body, &len);
  parser = json_parser_new ();
  if (len == 0 || !json_parser_load_from_data (parser, text, (gssize) len, NULL) ||
      !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    {
      g_task_return_new_error (task, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_PROTOCOL,
                               "%s answered %s with something that is not a JSON object: it "
                               "may not be an OpenAI-compatible server",
                               g->client->host, soup_message_get_uri (g->msg)
                                                  ? g_uri_get_path (soup_message_get_uri (g->msg))
                                                  : "");
      return;
    }
  g_task_return_pointer (task, json_object_ref (json_node_get_object (json_parser_get_root (parser))),
                         (GDestroyNotify) json_object_unref);
}

static void
on_get_sent (GObject      *source,
             GAsyncResult *result,
             gpointer      data)
{
  GTask *task = data;
  Get *g = g_task_get_task_data (task);
  g_autoptr(GError) error = NULL;
  g_autoptr(GInputStream) stream = soup_session_send_finish (SOUP_SESSION (source), result, &error);

  if (stream == NULL)
    {
      g_task_return_error (task, _burrow_remote_watch_error (&g->watch, error, g->client->host));
      g_object_unref (task);
      return;
    }
  _burrow_remote_watch_touch (&g->watch);
  _burrow_remote_read_all_async (stream, JSON_LIMIT, &g->watch, on_get_body, task);
}

static void
get_json_async (BurrowRemoteClient  *self,
                const char          *path,
                gpointer             source_tag,
                GCancellable        *cancellable,
                GAsyncReadyCallback  callback,
                gpointer             user_data)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  Get *g = g_new0 (Get, 1);

  g_task_set_source_tag (task, source_tag);
  g->client = g_object_ref (self);
  g->msg = _burrow_remote_client_message (self, "GET", path, "application/json");
  _burrow_remote_watch_start (&g->watch, cancellable, self->stall_ms);
  g_task_set_task_data (task, g, get_free);
  soup_session_send_async (self->session, g->msg, G_PRIORITY_DEFAULT, g->watch.cancellable,
                           on_get_sent, task);
}

void
burrow_remote_client_list_models_async (BurrowRemoteClient  *self,
                                        GCancellable        *cancellable,
                                        GAsyncReadyCallback  callback,
                                        gpointer             user_data)
{
  get_json_async (self, "/v1/models", burrow_remote_client_list_models_async, cancellable,
                  callback, user_data);
}

GStrv
burrow_remote_client_list_models_finish (BurrowRemoteClient  *self,
                                         GAsyncResult        *result,
                                         GError             **error)
{
  g_autoptr(JsonObject) root = g_task_propagate_pointer (G_TASK (result), error);
  g_autoptr(GStrvBuilder) ids = NULL;
  JsonNode *data;
  JsonArray *array;

  if (root == NULL)
    return NULL;
  data = json_object_get_member (root, "data");
  if (data == NULL || !JSON_NODE_HOLDS_ARRAY (data))
    {
      g_set_error (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_PROTOCOL,
                   "%s listed no models (its /v1/models answer has no “data” list)", self->host);
      return NULL;
    }
  array = json_node_get_array (data);
  ids = g_strv_builder_new ();
  for (guint i = 0; i < json_array_get_length (array); i++)
    {
      JsonNode *item = json_array_get_element (array, i);
      JsonNode *id = JSON_NODE_HOLDS_OBJECT (item)
                       ? json_object_get_member (json_node_get_object (item), "id") : NULL;

      if (id != NULL && JSON_NODE_HOLDS_VALUE (id) &&
          json_node_get_value_type (id) == G_TYPE_STRING && json_node_get_string (id)[0] != '\0')
        g_strv_builder_add (ids, json_node_get_string (id));
    }
  return g_strv_builder_end (ids);
}

void
burrow_remote_client_get_profile_async (BurrowRemoteClient  *self,
                                        GCancellable        *cancellable,
                                        GAsyncReadyCallback  callback,
                                        gpointer             user_data)
{
  get_json_async (self, "/v1/profile", burrow_remote_client_get_profile_async, cancellable,
                  callback, user_data);
}

JsonObject *
burrow_remote_client_get_profile_finish (BurrowRemoteClient  *self,
                                         GAsyncResult        *result,
                                         GError             **error)
{
  g_autoptr(GError) local = NULL;
  JsonObject *profile = g_task_propagate_pointer (G_TASK (result), &local);

  if (profile != NULL)
    self->profile_state = BURROW_REMOTE_PROFILE_YES;
  else if (g_error_matches (local, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_NOT_FOUND))
    self->profile_state = BURROW_REMOTE_PROFILE_NO;
  if (local != NULL)
    g_propagate_error (error, g_steal_pointer (&local));
  return profile;
}

BurrowRemoteProfileState
burrow_remote_client_get_profile_state (BurrowRemoteClient *self)
{
  return self->profile_state;
}
