/* The server's HTTP side, on the main loop: routes, API key, body size limit, admission
 * to the bounded queue (429 beyond it), and the flow of each job's bytes from the worker
 * to its paused message. A client that goes away cancels its job. */
#include "serve.h"

#include <string.h>

#define BODY_KEY "burrow-body"

/* ---- Jobs ---- */

ServeJob *
serve_job_ref (ServeJob *job)
{
  g_atomic_ref_count_inc (&job->ref);
  return job;
}

void
serve_job_unref (ServeJob *job)
{
  if (!g_atomic_ref_count_dec (&job->ref))
    return;
  serve_request_free (job->req);
  if (job->logprobs)
    json_array_unref (job->logprobs);
  g_object_unref (job->cancel);
  g_string_free (job->pending, TRUE);
  g_free (job->body);
  g_free (job->id);
  g_mutex_clear (&job->lock);
  g_free (job);
}

/* libsoup names only the statuses it knows (429 reads "Unknown Error"). */
static const char *
reason_phrase (guint status)
{
  switch (status)
    {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 429: return "Too Many Requests";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return NULL;
    }
}

static void
send_json (SoupServerMessage *msg, guint status, char *body)
{
  soup_server_message_set_status (msg, status, reason_phrase (status));
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_TAKE, body,
                                    strlen (body));
}

void
serve_http_send_error (SoupServerMessage *msg, guint status, const char *type,
                       const char *code, const char *param, const char *message)
{
  ServeError err = { 0 };
  serve_error_set (&err, status, type, code, param, "%s", message);
  send_json (msg, status, serve_json_error (&err));
  serve_error_clear (&err);
}

/* soup is done with the message (answered, or the client is gone). */
static void
job_detach (ServeJob *job)
{
  if (job->msg == NULL)
    return;
  g_signal_handler_disconnect (job->msg, job->finished_handler);
  if (job->hup)
    {
      g_source_destroy (job->hup);
      g_clear_pointer (&job->hup, g_source_unref);
    }
  g_clear_object (&job->msg);
}

static void
on_finished (SoupServerMessage *msg, gpointer data)
{
  ServeJob *job = data;
  g_cancellable_cancel (job->cancel);
  job_detach (job);
}

/* Readable with nothing to read, or hung up: the client closed its end. */
static gboolean
on_socket_event (GSocket *socket, GIOCondition cond, gpointer data)
{
  ServeJob *job = data;
  if (serve_socket_hung_up (socket, cond))
    g_cancellable_cancel (job->cancel);
  g_clear_pointer (&job->hup, g_source_unref);
  return G_SOURCE_REMOVE;   /* pipelined data is soup's business */
}

static void
watch_client (ServeJob *job)
{
  GSocket *socket = soup_server_message_get_socket (job->msg);
  if (socket == NULL)
    return;
  job->hup = g_socket_create_source (socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_callback (job->hup, (GSourceFunc) (void (*) (void)) on_socket_event, job, NULL);
  g_source_attach (job->hup, job->server->main_context);
}

/* Main thread: writes what the worker posted. */
static gboolean
job_flush (gpointer data)
{
  ServeJob *job = data;
  g_mutex_lock (&job->lock);
  g_autoptr (GString) bytes = job->pending;
  job->pending = g_string_new (NULL);
  gboolean done = job->done;
  char *body = g_steal_pointer (&job->body);
  job->flush_queued = FALSE;
  g_mutex_unlock (&job->lock);

  /* A stream refused before its first bytes answers like a whole reply. */
  gboolean refused = job->req->stream && !job->streaming && done && body != NULL;
  if (job->msg && job->req->stream && !refused)
    {
      if (!job->streaming)
        {
          SoupMessageHeaders *h = soup_server_message_get_response_headers (job->msg);
          soup_server_message_set_status (job->msg, 200, reason_phrase (200));
          soup_message_headers_set_content_type (h, "text/event-stream", NULL);
          soup_message_headers_replace (h, "Cache-Control", "no-cache");
          soup_message_headers_set_encoding (h, SOUP_ENCODING_CHUNKED);
          job->streaming = TRUE;
        }
      SoupMessageBody *out = soup_server_message_get_response_body (job->msg);
      if (bytes->len)
        soup_message_body_append (out, SOUP_MEMORY_COPY, bytes->str, bytes->len);
      if (done)
        soup_message_body_complete (out);
      soup_server_message_unpause (job->msg);
    }
  else if (job->msg && done)
    {
      if (body)
        send_json (job->msg, job->status, g_steal_pointer (&body));
      else
        serve_http_send_error (job->msg, 503, "server_error", NULL, NULL,
                               "The request was cancelled.");
      soup_server_message_unpause (job->msg);
    }
  g_free (body);
  if (done)
    {
      job_detach (job);
      job->server->active--;
      g_ptr_array_remove (job->server->jobs, job);
    }
  return G_SOURCE_REMOVE;
}

void
serve_job_post (ServeJob *job, const char *bytes, gboolean done, guint status, char *body)
{
  g_mutex_lock (&job->lock);
  if (bytes)
    g_string_append (job->pending, bytes);
  if (done)
    {
      job->done = TRUE;
      job->status = status;
      g_free (job->body);
      job->body = body;
    }
  gboolean schedule = !job->flush_queued;
  job->flush_queued = TRUE;
  g_mutex_unlock (&job->lock);
  if (schedule)
    g_main_context_invoke_full (job->server->main_context, G_PRIORITY_DEFAULT, job_flush,
                                serve_job_ref (job), (GDestroyNotify) serve_job_unref);
}

/* ---- Handlers ---- */

static gboolean
authorized (ServeServer *server, SoupServerMessage *msg)
{
  if (server->api_key == NULL)
    return TRUE;
  const char *auth = soup_message_headers_get_one (soup_server_message_get_request_headers (msg),
                                                   "Authorization");
  if (auth == NULL || g_ascii_strncasecmp (auth, "Bearer ", 7) != 0)
    return FALSE;
  const char *key = auth + 7;
  gsize n = strlen (key), m = strlen (server->api_key);
  guint diff = n != m;
  for (gsize i = 0; i < n && i < m; i++)
    diff |= (guint) (key[i] ^ server->api_key[i]);   /* no early exit on the first mismatch */
  return diff == 0;
}

static void
refuse_too_large (ServeServer *server, SoupServerMessage *msg)
{
  g_autofree char *text = g_strdup_printf ("The request body is larger than %" G_GSIZE_FORMAT
                                           " bytes.", server->max_body);
  serve_http_send_error (msg, 413, "invalid_request_error", "request_too_large", NULL, text);
  serve_conns_answer_now (server->conns, msg);
}

/* Collects the body ourselves, keeping at most max_body bytes; past that the request is
 * answered 413 at once. */
static void
on_got_chunk (SoupServerMessage *msg, GBytes *chunk, gpointer data)
{
  ServeServer *server = data;
  if (soup_server_message_get_status (msg) != 0)
    return;   /* answered already */
  GByteArray *body = g_object_get_data (G_OBJECT (msg), BODY_KEY);
  gsize n = g_bytes_get_size (chunk);
  if (body->len + n > server->max_body)
    refuse_too_large (server, msg);
  else
    g_byte_array_append (body, g_bytes_get_data (chunk, NULL), (guint) n);
}

/* The request's framing: one Content-Length of digits only, and not beside
 * Transfer-Encoding (soup itself refuses a length that is not a number at all, but takes
 * "-5" as 2^64-5 and the last of several). NULL when it is sound, else why not. */
static const char *
bad_length (SoupMessageHeaders *h)
{
  const char *length = soup_message_headers_get_list (h, "Content-Length");
  if (length == NULL)
    return NULL;
  if (soup_message_headers_get_one (h, "Transfer-Encoding"))
    return "The request has both Content-Length and Transfer-Encoding.";
  if (strchr (length, ','))
    return "The request has more than one Content-Length.";
  if (*length == '\0' || strspn (length, "0123456789") != strlen (length))
    return "Content-Length must be a non-negative decimal number of bytes.";
  return NULL;
}

/* After the headers, before any of the body: requests that are refused whatever their body
 * (bad framing, a declared body over the limit, no key) are answered at once and closed,
 * so that no body is read for them. Others have their body collected. */
static void
early_handler (SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
               gpointer data)
{
  ServeServer *server = data;
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  const char *why = bad_length (h);
  if (why)
    {
      serve_http_send_error (msg, 400, "invalid_request_error", "invalid_content_length", NULL,
                             why);
      serve_conns_answer_now (server->conns, msg);
      return;
    }
  /* Digits only by now; a length too large to parse is over any limit. */
  guint64 declared = 0;
  const char *length = soup_message_headers_get_one (h, "Content-Length");
  if (length && (!g_ascii_string_to_unsigned (length, 10, 0, G_MAXUINT64, &declared, NULL)
                 || declared > server->max_body))
    {
      refuse_too_large (server, msg);
      return;
    }
  if (!authorized (server, msg))
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "WWW-Authenticate", "Bearer realm=\"burrow\"");
      serve_http_send_error (msg, 401, "invalid_request_error", "invalid_api_key", NULL,
                             "Incorrect API key provided (send it as 'Authorization: Bearer "
                             "KEY').");
      serve_conns_answer_now (server->conns, msg);
      return;
    }
  soup_message_body_set_accumulate (soup_server_message_get_request_body (msg), FALSE);
  g_object_set_data_full (G_OBJECT (msg), BODY_KEY, g_byte_array_new (),
                          (GDestroyNotify) g_byte_array_unref);
  g_signal_connect (msg, "got-chunk", G_CALLBACK (on_got_chunk), server);
}

static void
start_job (ServeServer *server, SoupServerMessage *msg, ServeRequest *req)
{
  ServeJob *job = g_new0 (ServeJob, 1);
  g_atomic_ref_count_init (&job->ref);
  g_mutex_init (&job->lock);
  job->server = server;
  job->req = req;
  job->cancel = g_cancellable_new ();
  job->pending = g_string_new (NULL);
  job->id = g_strdup_printf ("chatcmpl-%08x%08x%" G_GUINT64_FORMAT, g_random_int (),
                             g_random_int (), ++server->n_jobs);
  job->rid = (ServeReplyId) { job->id, g_get_real_time () / G_USEC_PER_SEC, req->model };
  job->msg = g_object_ref (msg);
  job->finished_handler = g_signal_connect (msg, "finished", G_CALLBACK (on_finished), job);
  soup_server_message_pause (msg);
  watch_client (job);
  server->active++;
  g_ptr_array_add (server->jobs, job);     /* takes the first reference */
  serve_worker_push (server, job);
}

/* The request's model is one of the served names. */
static gboolean
model_served (ServeServer *server, SoupServerMessage *msg, const char *model)
{
  if (g_strv_contains (server->names, model))
    return TRUE;
  g_autofree char *names = g_strjoinv ("', '", (char **) server->names);
  g_autofree char *text = g_strdup_printf ("The model '%s' does not exist. This server serves "
                                           "'%s'.", model, names);
  serve_http_send_error (msg, 404, "invalid_request_error", "model_not_found", "model", text);
  return FALSE;
}

static void
handle_completions (ServeServer *server, SoupServerMessage *msg)
{
  GByteArray *body = g_object_get_data (G_OBJECT (msg), BODY_KEY);
  if (server->active >= 1 + server->max_queue)
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "Retry-After", "1");
      serve_http_send_error (msg, 429, "rate_limit_error", "rate_limit_exceeded", NULL,
                  "The server is busy: one reply is being generated and the queue is full. "
                  "Try again later.");
      return;
    }
  ServeError err = { 0 };
  ServeRequest *req = serve_request_parse (body ? (const char *) body->data : "",
                                           body ? body->len : 0, server->max_tokens, &err);
  if (req == NULL)
    {
      send_json (msg, err.status, serve_json_error (&err));
      serve_error_clear (&err);
      return;
    }
  if (!model_served (server, msg, req->model))
    {
      serve_request_free (req);
      return;
    }
  if (!serve_request_check_model (req, server->engine,
                                  server->template_tools && server->tool_format != BW_TOOL_FORMAT_NONE,
                                  &err))
    {
      send_json (msg, err.status, serve_json_error (&err));
      serve_error_clear (&err);
      serve_request_free (req);
      return;
    }
  req->opts.max_context = server->max_context;
  start_job (server, msg, req);
}

static void
handle_profile (ServeServer *server, SoupServerMessage *msg)
{
  BurrowTurnStats turns[SERVE_PROFILE_TURNS], current;
  BurrowCacheStats cache;
  g_mutex_lock (&server->profile_lock);
  guint n = server->n_turns;
  for (guint i = 0; i < n; i++)
    turns[i] = server->turns[(server->next_turn + SERVE_PROFILE_TURNS - n + i)
                             % SERVE_PROFILE_TURNS];
  g_mutex_unlock (&server->profile_lock);
  burrow_engine_get_turn_stats (server->engine, &current);
  burrow_engine_get_cache_stats (server->engine, &cache);
  /* An accepted job the engine is not generating for is waiting, starting or still being
   * recorded: counting it as queued keeps "nothing current, nothing queued" meaning that
   * every finished turn is in the list. */
  guint queued = server->active - (current.running && server->active > 0 ? 1 : 0);
  g_mutex_lock (&server->profile_lock);
  char *body = serve_json_profile (server->names[0], burrow_engine_get_family (server->engine),
                                   turns, n, &current, &cache, &server->experts, queued);
  g_mutex_unlock (&server->profile_lock);
  send_json (msg, 200, body);
}

/* The routes, each with the one method it answers. */
static const struct {
  const char *path;
  const char *method;
} routes[] = {
  { "/v1/chat/completions", "POST" },
  { "/v1/models", "GET" },
  { "/v1/profile", "GET" },
};

static void
handler (SoupServer *soup, SoupServerMessage *msg, const char *path, GHashTable *query,
         gpointer data)
{
  ServeServer *server = data;
  const char *method = soup_server_message_get_method (msg);
  gsize r = 0;
  while (r < G_N_ELEMENTS (routes) && strcmp (path, routes[r].path) != 0)
    r++;
  if (r == G_N_ELEMENTS (routes))
    {
      g_autofree char *text = g_strdup_printf ("Unknown request: %s %s", method, path);
      serve_http_send_error (msg, 404, "invalid_request_error", "unknown_url", NULL, text);
      return;
    }
  if (strcmp (method, routes[r].method) != 0)
    {
      g_autofree char *text = g_strdup_printf ("Use %s for %s.", routes[r].method, path);
      soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Allow",
                                    routes[r].method);
      serve_http_send_error (msg, 405, "invalid_request_error", "method_not_allowed", NULL, text);
      return;
    }
  if (r == 0)
    handle_completions (server, msg);
  else if (r == 1)
    send_json (msg, 200, serve_json_models (server->names,
                                            burrow_engine_get_family (server->engine),
                                            server->created));
#ifdef BURROW_TESTING
  else if (g_getenv ("BURROW_TEST_NO_PROFILE") != NULL)
    serve_http_send_error (msg, 404, "invalid_request_error", "unknown_url", NULL,
                           "Unknown request");
#endif
  else
    handle_profile (server, msg);
}

void
serve_http_setup (ServeServer *server)
{
  server->jobs = g_ptr_array_new_with_free_func ((GDestroyNotify) serve_job_unref);
  server->conns = serve_conns_new (server->soup, &server->limits, server->main_context);
  soup_server_add_early_handler (server->soup, NULL, early_handler, server, NULL);
  soup_server_add_handler (server->soup, NULL, handler, server, NULL);
}

void
serve_http_cancel_all (ServeServer *server)
{
  for (guint i = 0; i < server->jobs->len; i++)
    g_cancellable_cancel (((ServeJob *) g_ptr_array_index (server->jobs, i))->cancel);
}

void
serve_http_release (ServeServer *server)
{
  for (guint i = 0; i < server->jobs->len; i++)
    job_detach (g_ptr_array_index (server->jobs, i));
  g_clear_pointer (&server->jobs, g_ptr_array_unref);
}
