/* Remote errors in words: each message says what happened at which server and, where it
 * can, what to do. The server's own words, when it gave any, follow in quotes, cut short
 * and made valid UTF-8, since they come from the network. */
#include "burrow-remote-error.h"

#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK (burrow-remote-error-quark, burrow_remote_error)

#define QUOTE_MAX 300

GError *
burrow_remote_error_from_transport (const GError *error,
                                    const char   *host)
{
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return g_error_copy (error);
  if (error->domain == G_RESOLVER_ERROR)
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_RESOLVE,
                        "The server name %s could not be found (%s). Check the address and "
                        "the network.", host, error->message);
  if (error->domain == G_TLS_ERROR)
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_TLS,
                        "A secure (TLS) connection to %s failed: %s. Check that the server "
                        "speaks https:// at this port and that its certificate is valid.",
                        host, error->message);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_TIMEOUT,
                        "%s stopped answering (%s).", host, error->message);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_REFUSED))
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CONNECT,
                        "%s refused the connection. Is the server running, on this port?",
                        host);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_HOST_UNREACHABLE) ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NETWORK_UNREACHABLE))
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CONNECT,
                        "%s cannot be reached from this computer (%s).", host, error->message);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CONNECTION_CLOSED) ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_BROKEN_PIPE) ||
      g_error_matches (error, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT))
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CUT,
                        "%s closed the connection before the reply was complete (%s).", host,
                        error->message);
  return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_CONNECT,
                      "Talking to %s failed: %s.", host, error->message);
}

static char *
quote (const char *text,
       gsize       len)
{
  g_autofree char *valid = g_utf8_make_valid (text, (gssize) MIN (len, (gsize) QUOTE_MAX * 4));
  glong n = g_utf8_strlen (valid, -1);

  if (n <= QUOTE_MAX)
    return g_steal_pointer (&valid);
  *g_utf8_offset_to_pointer (valid, QUOTE_MAX) = '\0';
  return g_strconcat (valid, "…", NULL);
}

char *
burrow_remote_error_message_from_json (const char *text,
                                       gsize       len)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonNode *root, *err;

  if (text == NULL || len == 0 || !json_parser_load_from_data (parser, text, (gssize) len, NULL))
    return NULL;
  root = json_parser_get_root (parser);
  if (!JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  err = json_object_get_member (json_node_get_object (root), "error");
  if (err != NULL && JSON_NODE_HOLDS_VALUE (err) &&
      json_node_get_value_type (err) == G_TYPE_STRING)
    return quote (json_node_get_string (err), strlen (json_node_get_string (err)));
  if (err != NULL && JSON_NODE_HOLDS_OBJECT (err))
    {
      JsonNode *m = json_object_get_member (json_node_get_object (err), "message");

      if (m != NULL && JSON_NODE_HOLDS_VALUE (m) && json_node_get_value_type (m) == G_TYPE_STRING)
        return quote (json_node_get_string (m), strlen (json_node_get_string (m)));
    }
  return NULL;
}

/* The server's words: its JSON error message, else the start of a text body. */
static char *
server_words (GBytes *body)
{
  gsize len = 0;
  const char *text = body ? g_bytes_get_data (body, &len) : NULL;
  char *message = burrow_remote_error_message_from_json (text, len);
  g_autofree char *plain = NULL;

  if (message != NULL || len == 0)
    return message;
  plain = quote (text, len);
  g_strstrip (plain);
  /* An HTML error page says nothing useful in one line. */
  if (plain[0] == '\0' || plain[0] == '<')
    return NULL;
  return g_steal_pointer (&plain);
}

gint64
burrow_remote_retry_after_seconds (const char *value,
                                   GDateTime  *now)
{
  char *end = NULL;
  gint64 seconds;

  if (value == NULL)
    return -1;
  while (g_ascii_isspace (*value))
    value++;
  if (g_ascii_isdigit (*value))
    {
      seconds = g_ascii_strtoll (value, &end, 10);
      while (end != NULL && g_ascii_isspace (*end))
        end++;
      return end != NULL && *end == '\0' ? seconds : -1;
    }
  {
    g_autoptr(GDateTime) when = soup_date_time_new_from_http_string (value);

    if (when == NULL)
      return -1;
    return MAX (g_date_time_difference (when, now) / G_USEC_PER_SEC, 0);
  }
}

GError *
burrow_remote_error_from_status (guint        status,
                                 const char  *host,
                                 GBytes      *body,
                                 const char  *retry_after,
                                 gboolean     had_key,
                                 const char  *model)
{
  g_autofree char *words = server_words (body);
  g_autofree char *said = words ? g_strdup_printf (" The server said: “%s”", words)
                                : g_strdup ("");
  g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
  gint64 wait;

  switch (status)
    {
    case 401:
      return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_UNAUTHORIZED,
                          had_key ? "%s did not accept the API key (401). Check the key.%s"
                                  : "%s needs an API key (401).%s", host, said);
    case 403:
      return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_FORBIDDEN,
                          "%s refused access (403): the key is not allowed to do this.%s",
                          host, said);
    case 404:
      if (model != NULL && words != NULL && strstr (words, model) != NULL)
        return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_NOT_FOUND,
                            "%s has no model named “%s” (404).%s", host, model, said);
      return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_NOT_FOUND,
                          "%s has no such model or endpoint (404). Check the address (it "
                          "should be the one before /v1) and the model name.%s", host, said);
    case 429:
      wait = burrow_remote_retry_after_seconds (retry_after, now);
      if (wait >= 0)
        return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_RATE_LIMITED,
                            "%s is busy (429). Try again in %" G_GINT64_FORMAT " s.%s", host,
                            wait, said);
      return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_RATE_LIMITED,
                          "%s is busy (429). Try again later.%s", host, said);
    default:
      break;
    }
  if (status >= 500)
    return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_SERVER,
                        "%s failed with an internal error (%u %s).%s", host, status,
                        soup_status_get_phrase (status) ? soup_status_get_phrase (status) : "",
                        said);
  return g_error_new (BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_REQUEST,
                      "%s refused the request (%u %s).%s", host, status,
                      soup_status_get_phrase (status) ? soup_status_get_phrase (status) : "",
                      said);
}
