/* The backend interface's dispatch, and the requests and results every backend shares. */
#include "burrow-config.h"

#include "burrow-backend.h"

G_DEFINE_INTERFACE (BurrowBackend, burrow_backend, G_TYPE_OBJECT)

static void
burrow_backend_default_init (BurrowBackendInterface *iface)
{
}

BurrowBackendFlags
burrow_backend_get_flags (BurrowBackend *self)
{
  g_return_val_if_fail (BURROW_IS_BACKEND (self), 0);

  return BURROW_BACKEND_GET_IFACE (self)->get_flags (self);
}

guint64
burrow_backend_load (BurrowBackend             *self,
                     const char                *model,
                     const BurrowEngineOptions *options,
                     GCancellable              *cancellable,
                     GObject                   *owner,
                     BurrowBackendCallback      callback,
                     gpointer                   user_data)
{
  g_return_val_if_fail (BURROW_IS_BACKEND (self), 0);
  g_return_val_if_fail (model != NULL && options != NULL, 0);

  return BURROW_BACKEND_GET_IFACE (self)->load (self, model, options, cancellable, owner,
                                                callback, user_data);
}

guint64
burrow_backend_generate (BurrowBackend         *self,
                         BurrowGenerateRequest *request,
                         GCancellable          *cancellable,
                         GObject               *owner,
                         BurrowBackendCallback  callback,
                         gpointer               user_data)
{
  g_return_val_if_fail (BURROW_IS_BACKEND (self), 0);
  g_return_val_if_fail (request != NULL, 0);

  return BURROW_BACKEND_GET_IFACE (self)->generate (self, request, cancellable, owner,
                                                    callback, user_data);
}

/* ---- load ---- */

void
burrow_load_progress_free (BurrowLoadProgress *progress)
{
  if (progress == NULL)
    return;
  g_free (progress->phase);
  g_free (progress);
}

void
burrow_load_result_free (BurrowLoadResult *result)
{
  if (result == NULL)
    return;
  g_free (result->dir);
  g_free (result->name);
  g_free (result->family);
  burrow_perf_snapshot_free (result->snapshot);
  g_free (result);
}

/* ---- generate ---- */

struct _BurrowGenerateRequest {
  gint64 chat_id;
  char *session_path;
  GArray *messages;             /* BurrowGenerateMessage: the system prompt (if any) first */
  BurrowGenerateOptions options;
  double snapshot_interval;
};

static void
message_clear (gpointer data)
{
  BurrowGenerateMessage *m = data;

  g_free (m->content);
  g_free (m->reasoning);
}

BurrowGenerateRequest *
burrow_generate_request_new (gint64      chat_id,
                             const char *session_path,
                             const char *system_prompt)
{
  BurrowGenerateRequest *request = g_new0 (BurrowGenerateRequest, 1);

  request->chat_id = chat_id;
  request->session_path = session_path != NULL && session_path[0] != '\0'
                            ? g_strdup (session_path) : NULL;
  request->messages = g_array_new (FALSE, FALSE, sizeof (BurrowGenerateMessage));
  g_array_set_clear_func (request->messages, message_clear);
  burrow_generate_options_init (&request->options);
  request->snapshot_interval = 0.2;

  if (system_prompt != NULL && system_prompt[0] != '\0')
    burrow_generate_request_add_message (request, BURROW_ROLE_SYSTEM, system_prompt, NULL);

  return request;
}

void
burrow_generate_request_add_message (BurrowGenerateRequest *request,
                                     BurrowRole             role,
                                     const char            *content,
                                     const char            *reasoning)
{
  BurrowGenerateMessage m = { role, g_strdup (content ? content : ""),
                              g_strdup (reasoning ? reasoning : "") };

  g_array_append_val (request->messages, m);
}

gint64
burrow_generate_request_get_chat_id (const BurrowGenerateRequest *request)
{
  return request->chat_id;
}

const char *
burrow_generate_request_get_session_path (const BurrowGenerateRequest *request)
{
  return request->session_path;
}

const BurrowGenerateMessage *
burrow_generate_request_get_messages (const BurrowGenerateRequest *request,
                                      guint                       *n_messages)
{
  *n_messages = request->messages->len;
  return (const BurrowGenerateMessage *) (gpointer) request->messages->data;
}

BurrowGenerateOptions *
burrow_generate_request_get_options (BurrowGenerateRequest *request)
{
  return &request->options;
}

void
burrow_generate_request_set_snapshot_interval (BurrowGenerateRequest *request,
                                               double                 seconds)
{
  request->snapshot_interval = seconds;
}

double
burrow_generate_request_get_snapshot_interval (const BurrowGenerateRequest *request)
{
  return request->snapshot_interval;
}

void
burrow_generate_request_free (BurrowGenerateRequest *request)
{
  if (request == NULL)
    return;
  g_free (request->session_path);
  g_array_unref (request->messages);
  g_free (request);
}

void
burrow_generate_update_free (BurrowGenerateUpdate *update)
{
  if (update == NULL)
    return;
  g_free (update->answer);
  g_free (update->reasoning);
  burrow_perf_snapshot_free (update->snapshot);
  g_free (update);
}

void
burrow_generate_result_free (BurrowGenerateResult *result)
{
  if (result == NULL)
    return;
  burrow_perf_snapshot_free (result->snapshot);
  g_free (result);
}
