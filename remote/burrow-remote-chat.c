/* A streamed chat reply from an OpenAI-compatible server: POST /v1/chat/completions with
 * "stream": true, read as server-sent events, each chunk's delta handed on as it comes.
 * The turn's numbers are the server's usage (and llama.cpp's timings) where it sends them,
 * and clocks read here for the rest. A reply that stops early for any reason keeps what
 * came: the deltas were already handed on. */
#include "burrow-remote-private.h"
#include "burrow-remote-sse.h"

#include <string.h>

#define ERROR_BODY_LIMIT (64 * 1024)
#define WHOLE_BODY_LIMIT (64 * 1024 * 1024)
#define READ_SIZE 8192

typedef struct {
  BurrowRole role;
  char *content;
} Message;

struct _BurrowRemoteChat {
  char *model;
  GArray *messages;
  BurrowGenerateOptions options;
};

static void
message_clear (gpointer data)
{
  g_free (((Message *) data)->content);
}

BurrowRemoteChat *
burrow_remote_chat_new (const char *model)
{
  BurrowRemoteChat *chat = g_new0 (BurrowRemoteChat, 1);

  chat->model = g_strdup (model ? model : "");
  chat->messages = g_array_new (FALSE, FALSE, sizeof (Message));
  g_array_set_clear_func (chat->messages, message_clear);
  burrow_generate_options_init (&chat->options);
  return chat;
}

void
burrow_remote_chat_free (BurrowRemoteChat *chat)
{
  if (chat == NULL)
    return;
  g_free (chat->model);
  g_array_unref (chat->messages);
  g_free (chat);
}

void
burrow_remote_chat_add_message (BurrowRemoteChat *chat,
                                BurrowRole        role,
                                const char       *content)
{
  Message m = { role, g_strdup (content ? content : "") };

  g_array_append_val (chat->messages, m);
}

BurrowGenerateOptions *
burrow_remote_chat_get_options (BurrowRemoteChat *chat)
{
  return &chat->options;
}

static const char *
role_name (BurrowRole role)
{
  switch (role)
    {
    case BURROW_ROLE_SYSTEM:
      return "system";
    case BURROW_ROLE_ASSISTANT:
      return "assistant";
    case BURROW_ROLE_USER:
    default:
      return "user";
    }
}

static void
add_double (JsonBuilder *b,
            const char  *name,
            double       value)
{
  json_builder_set_member_name (b, name);
  json_builder_add_double_value (b, value);
}

/* Only what the options set: a server that does not know a field it was not asked for
 * cannot refuse it. */
static void
add_sampling (JsonBuilder                 *b,
              const BurrowGenerateOptions *o)
{
  add_double (b, "temperature", o->temperature > 0 ? o->temperature : 0.0);
  if (o->top_p > 0 && o->top_p < 1)
    add_double (b, "top_p", o->top_p);
  if (o->top_k > 0)
    {
      json_builder_set_member_name (b, "top_k");
      json_builder_add_int_value (b, o->top_k);
    }
  if (o->min_p > 0)
    add_double (b, "min_p", o->min_p);
  if (o->repetition_penalty > 0 && o->repetition_penalty != 1.0f)
    add_double (b, "repetition_penalty", o->repetition_penalty);
  json_builder_set_member_name (b, "seed");
  json_builder_add_int_value (b, (gint64) (o->seed & G_MAXINT32));
  json_builder_set_member_name (b, "max_tokens");
  json_builder_add_int_value (b, o->max_tokens > 0 ? o->max_tokens : 1024);
  if (o->stop != NULL && o->stop[0] != NULL)
    {
      json_builder_set_member_name (b, "stop");
      json_builder_begin_array (b);
      for (gsize i = 0; o->stop[i] != NULL; i++)
        json_builder_add_string_value (b, o->stop[i]);
      json_builder_end_array (b);
    }
  if (o->thinking)
    {
      json_builder_set_member_name (b, "chat_template_kwargs");
      json_builder_begin_object (b);
      json_builder_set_member_name (b, "enable_thinking");
      json_builder_add_boolean_value (b, TRUE);
      json_builder_end_object (b);
      if (o->thinking_effort != NULL)
        {
          json_builder_set_member_name (b, "reasoning_effort");
          json_builder_add_string_value (b, o->thinking_effort);
        }
    }
}

char *
burrow_remote_chat_to_json (BurrowRemoteChat *chat)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "model");
  json_builder_add_string_value (b, chat->model);
  json_builder_set_member_name (b, "messages");
  json_builder_begin_array (b);
  for (guint i = 0; i < chat->messages->len; i++)
    {
      const Message *m = &g_array_index (chat->messages, Message, i);

      json_builder_begin_object (b);
      json_builder_set_member_name (b, "role");
      json_builder_add_string_value (b, role_name (m->role));
      json_builder_set_member_name (b, "content");
      json_builder_add_string_value (b, m->content);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "stream");
  json_builder_add_boolean_value (b, TRUE);
  json_builder_set_member_name (b, "stream_options");
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "include_usage");
  json_builder_add_boolean_value (b, TRUE);
  json_builder_end_object (b);
  add_sampling (b, &chat->options);
  json_builder_end_object (b);

  root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

/* ---- one reply ---- */

typedef struct {
  BurrowRemoteClient *client;
  SoupMessage *msg;
  GInputStream *stream;
  BurrowRemoteWatch watch;
  BurrowRemoteSse *sse;
  BurrowRemoteReplyFuncs funcs;
  gpointer user_data;
  char *model;
  BurrowTurnStats stats;
  gint64 start, first, last;    /* monotonic µs; first and last: 0 before any text */
  int n_deltas;
  gboolean usage_tokens;        /* stats.generated_tokens is the server's count */
  double server_tokens_per_second;  /* from llama.cpp's timings, else 0 */
  gboolean finished;            /* a finish_reason came */
  gboolean got_done;            /* "data: [DONE]" came */
  GError *stream_error;         /* an error the server sent inside the stream */
} Reply;

static void
reply_free (Reply *r)
{
  _burrow_remote_watch_clear (&r->watch);
  g_clear_object (&r->stream);
  g_clear_pointer (&r->sse, burrow_remote_sse_free);
  g_clear_error (&r->stream_error);
  g_object_unref (r->msg);
  g_object_unref (r->client);
  g_free (r->model);
  g_free (r);
}

/* Hands the turn to done and frees the reply. Takes @error. */
static void
reply_finish (Reply  *r,
              GError *error)
{
  BurrowTurnStats *st = &r->stats;

  st->running = FALSE;
  if (!r->usage_tokens)
    st->generated_tokens = r->n_deltas;
  if (r->first > 0)
    {
      st->ttft_seconds = (double) (r->first - r->start) / G_USEC_PER_SEC;
      st->decode_seconds = (double) (r->last - r->first) / G_USEC_PER_SEC;
    }
  if (r->server_tokens_per_second > 0)
    st->decode_tokens_per_second = r->server_tokens_per_second;
  else if (st->decode_seconds > 0 && st->generated_tokens > 1)
    st->decode_tokens_per_second = (st->generated_tokens - 1) / st->decode_seconds;
  if (error != NULL)
    st->finish = g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                   ? BURROW_FINISH_CANCELLED : BURROW_FINISH_ERROR;
  else if (st->finish == BURROW_FINISH_NONE)
    st->finish = BURROW_FINISH_STOP;

  r->funcs.done (st, error, r->user_data);
  g_clear_error (&error);
  reply_free (r);
}

static JsonNode *
member (JsonObject *o,
        const char *name)
{
  return o != NULL ? json_object_get_member (o, name) : NULL;
}

static const char *
string_member (JsonObject *o,
               const char *name)
{
  JsonNode *n = member (o, name);

  return n != NULL && JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
           ? json_node_get_string (n) : NULL;
}

static JsonObject *
object_member (JsonObject *o,
               const char *name)
{
  JsonNode *n = member (o, name);

  return n != NULL && JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
}

static gboolean
number_member (JsonObject *o,
               const char *name,
               double     *out)
{
  JsonNode *n = member (o, name);

  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n))
    return FALSE;
  if (json_node_get_value_type (n) == G_TYPE_INT64)
    *out = (double) json_node_get_int (n);
  else if (json_node_get_value_type (n) == G_TYPE_DOUBLE)
    *out = json_node_get_double (n);
  else
    return FALSE;
  return TRUE;
}

static void
take_usage (Reply      *r,
            JsonObject *usage)
{
  double v;

  if (number_member (usage, "prompt_tokens", &v))
    r->stats.prompt_tokens = (int) CLAMP (v, 0, G_MAXINT);
  if (number_member (usage, "completion_tokens", &v))
    {
      r->stats.generated_tokens = (int) CLAMP (v, 0, G_MAXINT);
      r->usage_tokens = TRUE;
    }
  if (number_member (object_member (usage, "prompt_tokens_details"), "cached_tokens", &v))
    r->stats.cached_tokens = (int) CLAMP (v, 0, G_MAXINT);
  r->stats.prefill_tokens = MAX (r->stats.prompt_tokens - r->stats.cached_tokens, 0);
}

/* llama.cpp's server adds its own clocks. */
static void
take_timings (Reply      *r,
              JsonObject *timings)
{
  double v;

  if (number_member (timings, "prompt_ms", &v))
    r->stats.prefill_seconds = v / 1000.0;
  if (number_member (timings, "prompt_per_second", &v))
    r->stats.prefill_tokens_per_second = v;
  if (number_member (timings, "predicted_per_second", &v))
    r->server_tokens_per_second = v;
}

/* Burrow's own member of a chunk: FALSE when there is none. */
static gboolean
take_counters (JsonObject           *o,
               BurrowRemoteCounters *out)
{
  JsonNode *phases;
  double v;

  if (o == NULL)
    return FALSE;
  memset (out, 0, sizeof *out);
  if (number_member (o, "hits", &v) && v >= 0)
    out->hits = (guint64) v;
  if (number_member (o, "misses", &v) && v >= 0)
    out->misses = (guint64) v;
  if (number_member (o, "bytes_read", &v) && v >= 0)
    out->bytes_read = (guint64) v;
  phases = member (o, "phase_seconds");
  if (phases != NULL && JSON_NODE_HOLDS_ARRAY (phases))
    {
      JsonArray *a = json_node_get_array (phases);

      for (guint p = 0; p < BURROW_N_PHASES && p < json_array_get_length (a); p++)
        {
          JsonNode *n = json_array_get_element (a, p);

          if (JSON_NODE_HOLDS_VALUE (n) && (json_node_get_value_type (n) == G_TYPE_DOUBLE ||
                                            json_node_get_value_type (n) == G_TYPE_INT64))
            out->phase_seconds[p] = json_node_get_double (n);
        }
    }
  return TRUE;
}

static void
deliver (Reply                      *r,
         const char                 *answer,
         const char                 *reasoning,
         const BurrowRemoteCounters *counters)
{
  gint64 now = g_get_monotonic_time ();

  if ((answer == NULL || answer[0] == '\0') && (reasoning == NULL || reasoning[0] == '\0'))
    return;
  if (r->first == 0)
    r->first = now;
  r->last = now;
  r->n_deltas++;
  r->stats.generated_tokens = r->n_deltas;
  r->funcs.delta (answer ? answer : "", reasoning ? reasoning : "", counters, r->user_data);
}

/* One chunk object, or a whole completion (@whole: "message" instead of "delta"). */
static void
take_object (Reply      *r,
             JsonObject *o,
             gboolean    whole)
{
  JsonNode *choices = member (o, "choices");
  JsonObject *choice = NULL, *delta;
  const char *finish, *reasoning;
  BurrowRemoteCounters counters;
  gboolean counted = take_counters (object_member (o, "burrow"), &counters);

  if (choices != NULL && JSON_NODE_HOLDS_ARRAY (choices) &&
      json_array_get_length (json_node_get_array (choices)) > 0 &&
      JSON_NODE_HOLDS_OBJECT (json_array_get_element (json_node_get_array (choices), 0)))
    choice = json_array_get_object_element (json_node_get_array (choices), 0);

  delta = object_member (choice, whole ? "message" : "delta");
  /* vLLM and SGLang say reasoning_content; newer vLLM and Ollama also say reasoning. */
  reasoning = string_member (delta, "reasoning_content");
  if (reasoning == NULL)
    reasoning = string_member (delta, "reasoning");
  deliver (r, string_member (delta, "content"), reasoning, counted ? &counters : NULL);

  finish = string_member (choice, "finish_reason");
  if (finish != NULL)
    {
      r->finished = TRUE;
      r->stats.finish = strcmp (finish, "length") == 0 ? BURROW_FINISH_LENGTH
                                                       : BURROW_FINISH_STOP;
    }
  if (object_member (o, "usage") != NULL)
    take_usage (r, object_member (o, "usage"));
  if (object_member (o, "timings") != NULL)
    take_timings (r, object_member (o, "timings"));
}

static gboolean
on_event (const char *event,
          const char *data,
          gpointer    user_data)
{
  Reply *r = user_data;
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonNode *root;
  g_autofree char *said = NULL;

  if (strcmp (data, "[DONE]") == 0)
    {
      r->got_done = TRUE;
      return FALSE;
    }
  if (!json_parser_load_from_data (parser, data, -1, NULL) ||
      !JSON_NODE_HOLDS_OBJECT (root = json_parser_get_root (parser)))
    {
      r->stream_error = g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_PROTOCOL,
                                     "%s sent a piece of the reply that is not JSON",
                                     burrow_remote_client_get_host (r->client));
      return FALSE;
    }
  said = burrow_remote_error_message_from_json (data, strlen (data));
  if (said != NULL || strcmp (event, "error") == 0)
    {
      r->stream_error = g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_SERVER,
                                     "%s stopped the reply with an error: “%s”",
                                     burrow_remote_client_get_host (r->client),
                                     said ? said : "(no message)");
      return FALSE;
    }
  take_object (r, json_node_get_object (root), FALSE);
  return TRUE;
}

static void read_next (Reply *r);

static void
on_chunk (GObject      *source,
          GAsyncResult *result,
          gpointer      data)
{
  Reply *r = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) chunk = g_input_stream_read_bytes_finish (r->stream, result, &error);
  const char *host = burrow_remote_client_get_host (r->client);
  gsize len = 0;
  const char *bytes;

  if (chunk == NULL)
    {
      GError *e = _burrow_remote_watch_error (&r->watch, error, host);

      /* Anything but a stop or a stall, once the reply streams, is the stream breaking. */
      if (e->domain == BURROW_REMOTE_ERROR && e->code != BURROW_REMOTE_ERROR_TIMEOUT &&
          e->code != BURROW_REMOTE_ERROR_CUT)
        {
          g_clear_error (&e);
          e = g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CUT,
                           "The connection to %s broke before the reply was complete (%s).",
                           host, error->message);
        }
      reply_finish (r, e);
      return;
    }
  bytes = g_bytes_get_data (chunk, &len);
  if (len == 0)
    {
      /* A server that ends with a finish_reason but no [DONE] still ended the reply. */
      if (r->finished)
        reply_finish (r, NULL);
      else
        reply_finish (r, g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CUT,
                                      "%s closed the connection before the reply was "
                                      "complete.", host));
      return;
    }
  _burrow_remote_watch_touch (&r->watch);
  if (!burrow_remote_sse_feed (r->sse, bytes, len, &error))
    {
      if (error != NULL)
        reply_finish (r, g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_PROTOCOL,
                                      "%s: %s", host, error->message));
      else if (r->stream_error != NULL)
        reply_finish (r, g_steal_pointer (&r->stream_error));
      else
        reply_finish (r, NULL);
      return;
    }
  read_next (r);
}

static void
read_next (Reply *r)
{
  g_input_stream_read_bytes_async (r->stream, READ_SIZE, G_PRIORITY_DEFAULT,
                                   r->watch.cancellable, on_chunk, r);
}

static void
on_error_body (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  Reply *r = data;
  g_autoptr(GBytes) body = _burrow_remote_read_all_finish (result, NULL);
  SoupMessageHeaders *headers = soup_message_get_response_headers (r->msg);

  if (r->watch.timed_out || g_cancellable_is_cancelled (r->watch.cancellable))
    {
      reply_finish (r, _burrow_remote_watch_error (&r->watch, NULL,
                                                   burrow_remote_client_get_host (r->client)));
      return;
    }
  reply_finish (r, burrow_remote_error_from_status (
    soup_message_get_status (r->msg), burrow_remote_client_get_host (r->client), body,
    soup_message_headers_get_one (headers, "Retry-After"),
    burrow_remote_client_has_api_key (r->client), r->model));
}

/* A server that answered the whole reply at once although a stream was asked for. */
static void
on_whole_body (GObject      *source,
               GAsyncResult *result,
               gpointer      data)
{
  Reply *r = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) body = _burrow_remote_read_all_finish (result, &error);
  g_autoptr(JsonParser) parser = json_parser_new ();
  const char *host = burrow_remote_client_get_host (r->client);
  gsize len = 0;
  const char *text;

  if (body == NULL)
    {
      reply_finish (r, error->domain == BURROW_REMOTE_ERROR
                         ? g_steal_pointer (&error)
                         : _burrow_remote_watch_error (&r->watch, error, host));
      return;
    }
  text = g_bytes_get_data (body, &len);
  if (len == 0 || !json_parser_load_from_data (parser, text, (gssize) len, NULL) ||
      !JSON_NODE_HOLDS_OBJECT (json_parser_get_root (parser)))
    {
      reply_finish (r, g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_PROTOCOL,
                                    "%s answered with something that is not a chat reply",
                                    host));
      return;
    }
  take_object (r, json_node_get_object (json_parser_get_root (parser)), TRUE);
  reply_finish (r, NULL);
}

static void
on_sent (GObject      *source,
         GAsyncResult *result,
         gpointer      data)
{
  Reply *r = data;
  g_autoptr(GError) error = NULL;
  const char *type;
  guint status;

  r->stream = soup_session_send_finish (SOUP_SESSION (source), result, &error);
  if (r->stream == NULL)
    {
      reply_finish (r, _burrow_remote_watch_error (&r->watch, error,
                                                   burrow_remote_client_get_host (r->client)));
      return;
    }
  _burrow_remote_watch_touch (&r->watch);
  status = soup_message_get_status (r->msg);
  if (status < 200 || status > 299)
    {
      _burrow_remote_read_all_async (r->stream, ERROR_BODY_LIMIT, &r->watch, on_error_body, r);
      return;
    }
  type = soup_message_headers_get_content_type (soup_message_get_response_headers (r->msg),
                                                NULL);
  if (type != NULL && g_ascii_strcasecmp (type, "application/json") == 0)
    {
      _burrow_remote_read_all_async (r->stream, WHOLE_BODY_LIMIT, &r->watch, on_whole_body, r);
      return;
    }
  r->sse = burrow_remote_sse_new (0, on_event, r);
  read_next (r);
}

void
burrow_remote_client_chat (BurrowRemoteClient           *self,
                           BurrowRemoteChat             *chat,
                           GCancellable                 *cancellable,
                           const BurrowRemoteReplyFuncs *funcs,
                           gpointer                      user_data)
{
  Reply *r = g_new0 (Reply, 1);
  char *body = burrow_remote_chat_to_json (chat);
  gsize len = strlen (body);
  g_autoptr(GBytes) bytes = NULL;

  r->client = g_object_ref (self);
  r->funcs = *funcs;
  r->user_data = user_data;
  r->model = g_strdup (chat->model);
  r->stats.running = TRUE;
  r->stats.stop_token = -1;
  r->msg = _burrow_remote_client_message (self, "POST", "/v1/chat/completions",
                                          "text/event-stream");
  bytes = g_bytes_new_take (body, len);
  soup_message_set_request_body_from_bytes (r->msg, "application/json", bytes);
  burrow_remote_chat_free (chat);

  _burrow_remote_watch_start (&r->watch, cancellable, _burrow_remote_client_get_stall_ms (self));
  r->start = g_get_monotonic_time ();
  soup_session_send_async (_burrow_remote_client_get_session (self), r->msg,
                           G_PRIORITY_DEFAULT, r->watch.cancellable, on_sent, r);
}
