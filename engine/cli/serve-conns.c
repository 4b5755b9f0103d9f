/* Every client connection of the server, from accept to close, on the main loop: the
 * deadlines for a request's headers, for its body (a minimum rate) and for an idle
 * keep-alive connection; the bound on open connections, which closes the oldest idle one
 * first; and answering a request at once, without reading the rest of it.
 *
 * libsoup 3 has no per-request timeouts, so this follows each connection through soup's
 * public signals ("request-started" on the server; "got-headers", "got-chunk", "got-body",
 * "finished" and "disconnected" on each message) and watches the socket itself between
 * requests. A connection past its deadline while soup reads a request is answered 408 and
 * closed; one with no request in hand (idle, or a next request whose first line never
 * completed) is closed. */
#include "serve.h"

#include <errno.h>
#include <sys/socket.h>

/* How long an answered connection keeps draining what the client still sends, so that the
 * close does not reset the connection before the client read the answer. */
#define LINGER_US (2 * G_USEC_PER_SEC)

typedef enum {
  PHASE_HEADERS,   /* waiting for a request's headers (a fresh connection starts here) */
  PHASE_BODY,      /* reading the request's body */
  PHASE_SERVING,   /* read: being answered or generated for; no deadline here */
  PHASE_IDLE,      /* kept alive between requests */
} Phase;

typedef struct {
  ServeConns *owner;
  GSocket *socket;
  SoupServerMessage *msg;   /* the request read or answered last (NULL before the first) */
  gboolean reading;         /* msg is the current request and soup still reads it */
  Phase phase;
  gint64 since;             /* monotonic, when the phase began */
  guint64 received;         /* body bytes of the current request */
  GSource *watch;           /* idle: the socket turns readable or hangs up */
} Conn;

/* An answered connection, stolen from soup: writes the answer, then drains and closes. */
typedef struct {
  ServeConns *owner;
  GIOStream *stream;
  GSocket *socket;
  GCancellable *cancel;
  GSource *timeout;
  GBytes *answer;
  guint8 sink[16384];
} Linger;

struct _ServeConns {
  ServeLimits limits;
  GMainContext *context;
  GHashTable *by_socket;    /* GSocket -> Conn (owned) */
  GSource *timer;           /* ready at the earliest deadline */
  GList *lingering;         /* Linger (owned) */
  gulong started_handler;
  SoupServer *soup;
};

static void conn_set_phase (Conn *c, Phase phase);

/* ---- The table ---- */

static void
conn_free (Conn *c)
{
  if (c->msg)
    {
      g_signal_handlers_disconnect_by_data (c->msg, c);
      g_object_unref (c->msg);
    }
  if (c->watch)
    {
      g_source_destroy (c->watch);
      g_source_unref (c->watch);
    }
  g_object_unref (c->socket);
  g_free (c);
}

static void
conn_drop (Conn *c)
{
  g_hash_table_remove (c->owner->by_socket, c->socket);   /* frees c */
}

static gint64
conn_deadline (const Conn *c)
{
  const ServeLimits *l = &c->owner->limits;
  switch (c->phase)
    {
    case PHASE_HEADERS:
      return c->since + l->header_timeout_us;
    case PHASE_BODY:
      /* Each byte received buys 1/rate s beyond the grace: a minimum average rate. */
      return c->since + l->body_timeout_us
             + (l->min_body_rate
                  ? (gint64) ((double) c->received / (double) l->min_body_rate * G_USEC_PER_SEC)
                  : 0);
    case PHASE_IDLE:
      return c->since + l->idle_timeout_us;
    case PHASE_SERVING:
    default:
      return G_MAXINT64;
    }
}

static void
schedule (ServeConns *cs)
{
  gint64 next = G_MAXINT64;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init (&it, cs->by_socket);
  while (g_hash_table_iter_next (&it, NULL, &value))
    next = MIN (next, conn_deadline (value));
  g_source_set_ready_time (cs->timer, next == G_MAXINT64 ? -1 : next);
}

/* Closes a connection that has no request soup is reading. Soup polls the socket only while
 * it waits for a request (and libsoup 3.2 never closes an idle connection whose client
 * went away), so the socket is closed here; soup's next read of it fails cleanly. */
static void
conn_close (Conn *c)
{
  g_socket_close (c->socket, NULL);
  conn_drop (c);
}

/* ---- Answering at once ---- */

static void
linger_free (Linger *l)
{
  l->owner->lingering = g_list_remove (l->owner->lingering, l);
  if (l->timeout)
    {
      g_source_destroy (l->timeout);
      g_source_unref (l->timeout);
    }
  g_io_stream_close (l->stream, NULL, NULL);
  g_object_unref (l->stream);
  g_object_unref (l->socket);
  g_object_unref (l->cancel);
  g_bytes_unref (l->answer);
  g_free (l);
}

static void
on_drained (GObject *source, GAsyncResult *res, gpointer data)
{
  Linger *l = data;
  gssize n = g_input_stream_read_finish (G_INPUT_STREAM (source), res, NULL);
  if (n > 0)
    g_input_stream_read_async (G_INPUT_STREAM (source), l->sink, sizeof l->sink,
                               G_PRIORITY_DEFAULT, l->cancel, on_drained, l);
  else
    linger_free (l);   /* end of input, error, or cancelled by the linger timeout */
}

static void
on_answer_written (GObject *source, GAsyncResult *res, gpointer data)
{
  Linger *l = data;
  if (!g_output_stream_write_all_finish (G_OUTPUT_STREAM (source), res, NULL, NULL))
    {
      linger_free (l);
      return;
    }
  g_socket_shutdown (l->socket, FALSE, TRUE, NULL);
  g_input_stream_read_async (g_io_stream_get_input_stream (l->stream), l->sink, sizeof l->sink,
                             G_PRIORITY_DEFAULT, l->cancel, on_drained, l);
}

static gboolean
on_linger_timeout (gpointer data)
{
  Linger *l = data;
  g_clear_pointer (&l->timeout, g_source_unref);
  g_cancellable_cancel (l->cancel);
  return G_SOURCE_REMOVE;
}

/* The status line, headers and body soup would have written, closing the connection. */
static GBytes *
serialize_answer (SoupServerMessage *msg)
{
  guint status = soup_server_message_get_status (msg);
  const char *reason = soup_server_message_get_reason_phrase (msg);
  GString *out = g_string_new (NULL);
  g_string_append_printf (out, "HTTP/1.1 %u %s\r\n", status,
                          reason ? reason : soup_status_get_phrase (status));
  SoupMessageHeadersIter iter;
  const char *name, *value;
  soup_message_headers_iter_init (&iter, soup_server_message_get_response_headers (msg));
  while (soup_message_headers_iter_next (&iter, &name, &value))
    if (g_ascii_strcasecmp (name, "Content-Length") != 0
        && g_ascii_strcasecmp (name, "Transfer-Encoding") != 0
        && g_ascii_strcasecmp (name, "Connection") != 0)
      g_string_append_printf (out, "%s: %s\r\n", name, value);
  g_autoptr (GBytes) body = soup_message_body_flatten (soup_server_message_get_response_body (msg));
  g_string_append_printf (out, "Content-Length: %" G_GSIZE_FORMAT "\r\nConnection: close\r\n\r\n",
                          g_bytes_get_size (body));
  g_string_append_len (out, g_bytes_get_data (body, NULL), (gssize) g_bytes_get_size (body));
  return g_string_free_to_bytes (out);
}

void
serve_conns_answer_now (ServeConns *cs, SoupServerMessage *msg)
{
  GSocket *socket = soup_server_message_get_socket (msg);
  if (socket == NULL)
    return;   /* not a connection soup accepted: soup answers after the body */
  Conn *c = g_hash_table_lookup (cs->by_socket, socket);
  if (c)
    conn_drop (c);
  g_autoptr (GSocket) sock = g_object_ref (socket);
  g_autoptr (GBytes) answer = serialize_answer (msg);
  GIOStream *stream = soup_server_message_steal_connection (msg);
  if (stream == NULL)
    {
      g_socket_shutdown (sock, TRUE, TRUE, NULL);   /* soup reads the end and closes */
      return;
    }
  Linger *l = g_new0 (Linger, 1);
  l->owner = cs;
  l->stream = stream;
  l->socket = g_steal_pointer (&sock);
  l->cancel = g_cancellable_new ();
  l->answer = g_steal_pointer (&answer);
  l->timeout = g_timeout_source_new (LINGER_US / 1000);
  g_source_set_callback (l->timeout, on_linger_timeout, l, NULL);
  g_source_attach (l->timeout, cs->context);
  cs->lingering = g_list_prepend (cs->lingering, l);
  gsize n;
  const void *data = g_bytes_get_data (l->answer, &n);
  g_output_stream_write_all_async (g_io_stream_get_output_stream (stream), data, n,
                                   G_PRIORITY_DEFAULT, l->cancel, on_answer_written, l);
}

/* ---- Following a request through soup ---- */

static void
on_got_headers (SoupServerMessage *msg, gpointer data)
{
  Conn *c = data;
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  SoupEncoding enc = soup_message_headers_get_encoding (h);
  gboolean body = enc == SOUP_ENCODING_CHUNKED
                  || (enc == SOUP_ENCODING_CONTENT_LENGTH
                      && soup_message_headers_get_content_length (h) > 0);
  c->received = 0;
  conn_set_phase (c, body ? PHASE_BODY : PHASE_SERVING);
}

static void
on_got_chunk (SoupServerMessage *msg, GBytes *chunk, gpointer data)
{
  Conn *c = data;
  c->received += g_bytes_get_size (chunk);   /* the deadline only moves later: no reschedule */
}

static void
on_got_body (SoupServerMessage *msg, gpointer data)
{
  Conn *c = data;
  c->reading = FALSE;
  conn_set_phase (c, PHASE_SERVING);
}

gboolean
serve_socket_hung_up (GSocket *socket, GIOCondition cond)
{
  if (g_socket_is_closed (socket) || (cond & (G_IO_HUP | G_IO_ERR)))
    return TRUE;
  /* Not through GSocket: soup's sockets block, and this must not. */
  char probe;
  gssize n = recv (g_socket_get_fd (socket), &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Readable or hung up while idle: the client sent its next request, or left. */
static gboolean
on_idle_event (GSocket *socket, GIOCondition cond, gpointer data)
{
  Conn *c = data;
  g_clear_pointer (&c->watch, g_source_unref);
  if (g_socket_is_closed (socket))
    conn_drop (c);   /* soup closed it */
  else if (serve_socket_hung_up (socket, cond))
    conn_close (c);
  else
    conn_set_phase (c, PHASE_HEADERS);   /* soup reads it; request-started follows */
  return G_SOURCE_REMOVE;
}

static void
on_finished (SoupServerMessage *msg, gpointer data)
{
  Conn *c = data;
  c->reading = FALSE;
  conn_set_phase (c, PHASE_IDLE);
}

static void
on_disconnected (SoupServerMessage *msg, gpointer data)
{
  conn_drop (data);
}

static void
conn_set_phase (Conn *c, Phase phase)
{
  c->phase = phase;
  c->since = g_get_monotonic_time ();
  if (phase == PHASE_IDLE && c->watch == NULL)
    {
      c->watch = g_socket_create_source (c->socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
      g_source_set_callback (c->watch, (GSourceFunc) (void (*) (void)) on_idle_event, c, NULL);
      g_source_attach (c->watch, c->owner->context);
    }
  else if (phase != PHASE_IDLE && c->watch)
    {
      g_source_destroy (c->watch);
      g_clear_pointer (&c->watch, g_source_unref);
    }
  schedule (c->owner);
}

static void
conn_follow (Conn *c, SoupServerMessage *msg)
{
  /* The next request on a kept-alive connection: soup starts it once its first line is in,
   * its clock started at its first byte (on_idle_event). */
  gboolean begun = c->msg != NULL && !c->reading && c->phase == PHASE_HEADERS;
  gint64 since = c->since;
  if (c->msg)
    {
      g_signal_handlers_disconnect_by_data (c->msg, c);
      g_object_unref (c->msg);
    }
  c->msg = g_object_ref (msg);
  c->reading = TRUE;
  c->received = 0;
  g_signal_connect (msg, "got-headers", G_CALLBACK (on_got_headers), c);
  g_signal_connect (msg, "got-chunk", G_CALLBACK (on_got_chunk), c);
  g_signal_connect (msg, "got-body", G_CALLBACK (on_got_body), c);
  g_signal_connect (msg, "finished", G_CALLBACK (on_finished), c);
  g_signal_connect (msg, "disconnected", G_CALLBACK (on_disconnected), c);
  conn_set_phase (c, PHASE_HEADERS);
  if (begun)
    {
      c->since = since;
      schedule (c->owner);
    }
}

/* ---- The bound ---- */

/* The connection to close for a new one: the oldest idle, else the one that has waited
 * longest for its headers; NULL when every connection is being served or reads a body. */
static Conn *
pick_victim (ServeConns *cs)
{
  Conn *idle = NULL, *headers = NULL;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init (&it, cs->by_socket);
  while (g_hash_table_iter_next (&it, NULL, &value))
    {
      Conn *c = value;
      if (c->phase == PHASE_IDLE && (idle == NULL || c->since < idle->since))
        idle = c;
      else if (c->phase == PHASE_HEADERS && (headers == NULL || c->since < headers->since))
        headers = c;
    }
  return idle ? idle : headers;
}

/* Forgets connections soup has closed without telling a message still followed. */
static void
sweep_closed (ServeConns *cs)
{
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init (&it, cs->by_socket);
  while (g_hash_table_iter_next (&it, &key, NULL))
    if (g_socket_is_closed (key))
      g_hash_table_iter_remove (&it);
}

static void expire (Conn *c, gboolean evicted);

/* Makes room for one more connection; FALSE when there is none to make. */
static gboolean
make_room (ServeConns *cs)
{
  if (g_hash_table_size (cs->by_socket) < cs->limits.max_connections)
    return TRUE;
  sweep_closed (cs);
  while (g_hash_table_size (cs->by_socket) >= cs->limits.max_connections)
    {
      Conn *victim = pick_victim (cs);
      if (victim == NULL)
        return FALSE;
      expire (victim, TRUE);
    }
  return TRUE;
}

/* ---- Deadlines ---- */

/* Past its deadline, or chosen to make room (evicted): a request soup is reading gets 408. */
static void
expire (Conn *c, gboolean evicted)
{
  if (c->reading && c->msg && (c->phase == PHASE_HEADERS || c->phase == PHASE_BODY))
    {
      g_autoptr (SoupServerMessage) msg = g_object_ref (c->msg);
      serve_http_send_error (msg, 408, "invalid_request_error", "request_timeout", NULL,
                             evicted ? "The server needed this connection for another while "
                                       "it still waited for these request headers."
                             : c->phase == PHASE_HEADERS
                               ? "The request headers did not arrive in time."
                               : "The request body did not arrive at the minimum rate.");
      serve_conns_answer_now (c->owner, msg);   /* drops c */
    }
  else
    conn_close (c);
}

static gboolean
on_timer (gpointer data)
{
  ServeConns *cs = data;
  gint64 now = g_get_monotonic_time ();
  g_autoptr (GPtrArray) due = g_ptr_array_new ();
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init (&it, cs->by_socket);
  while (g_hash_table_iter_next (&it, NULL, &value))
    if (conn_deadline (value) <= now)
      g_ptr_array_add (due, value);
  /* Expiring one never drops another: the array stays valid. */
  for (guint i = 0; i < due->len; i++)
    expire (g_ptr_array_index (due, i), FALSE);
  schedule (cs);
  return G_SOURCE_CONTINUE;
}

static gboolean
timer_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  return callback (data);
}

static GSourceFuncs timer_funcs = { NULL, NULL, timer_dispatch, NULL, NULL, NULL };

/* ---- Entry ---- */

static void
on_request_started (SoupServer *soup, SoupServerMessage *msg, gpointer data)
{
  ServeConns *cs = data;
  GSocket *socket = soup_server_message_get_socket (msg);
  if (socket == NULL)
    return;
  Conn *c = g_hash_table_lookup (cs->by_socket, socket);
  if (c == NULL)
    {
      if (!make_room (cs))
        {
          /* Every connection is busy with a request: refuse this one. Soup reads the end
           * of input and closes it. */
          g_socket_shutdown (socket, TRUE, TRUE, NULL);
          return;
        }
      c = g_new0 (Conn, 1);
      c->owner = cs;
      c->socket = g_object_ref (socket);
      g_hash_table_insert (cs->by_socket, c->socket, c);
    }
  conn_follow (c, msg);
}

ServeConns *
serve_conns_new (SoupServer *soup, const ServeLimits *limits, GMainContext *context)
{
  ServeConns *cs = g_new0 (ServeConns, 1);
  cs->limits = *limits;
  cs->context = context;
  cs->soup = soup;
  cs->by_socket = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) conn_free);
  cs->timer = g_source_new (&timer_funcs, sizeof (GSource));
  g_source_set_callback (cs->timer, on_timer, cs, NULL);
  g_source_set_ready_time (cs->timer, -1);
  g_source_attach (cs->timer, context);
  cs->started_handler = g_signal_connect (soup, "request-started",
                                          G_CALLBACK (on_request_started), cs);
  return cs;
}

void
serve_conns_free (ServeConns *cs)
{
  if (cs == NULL)
    return;
  g_signal_handler_disconnect (cs->soup, cs->started_handler);
  g_hash_table_destroy (cs->by_socket);
  /* Cancelled, each pending write or read completes on the loop and frees its Linger. */
  for (GList *l = cs->lingering; l; l = l->next)
    g_cancellable_cancel (((Linger *) l->data)->cancel);
  while (cs->lingering)
    g_main_context_iteration (cs->context, TRUE);
  g_source_destroy (cs->timer);
  g_source_unref (cs->timer);
  g_free (cs);
}
