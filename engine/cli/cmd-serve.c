/* burrow-cli serve: an OpenAI-compatible HTTP server over one loaded model.
 *
 *   serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key-file FILE]
 *         [--served-model-name NAME]... [--max-context N] [--template FILE]
 *
 * The API key comes from --api-key, else --api-key-file, else $BURROW_API_KEY (the last
 * two keep it out of the process list). Requests must name the model by its name (the
 * folder's, or a GGUF model's file name: burrow_model_name) or an alias.
 *
 * Prompts come from the checkpoint's own chat template when it has one (tools, tool calls
 * and reasoning then follow its syntax), else from the family's built-in format.
 * POST /v1/chat/completions (streamed as SSE or whole), GET /v1/models, GET /v1/profile.
 * It listens on loopback unless told otherwise, and refuses any other address without an
 * API key. The first line on stdout names the URL it listens on (port 0 picks a free one).
 * Slow or lying clients are bounded (serve-conns.c): headers and bodies have deadlines,
 * open connections a limit. */
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "burrow-config.h"
#include "chat-options.h"
#include "commands.h"
#include "serve.h"

typedef struct {
  BwCliEngineArgs engine;
  char *host;
  int port;
  char *api_key;
  char *api_key_file;
  char **names;
  char *max_body;
  char *min_body_rate;
  double header_timeout;
  double body_timeout;
  double idle_timeout;
  int max_connections;
  int queue;
  int max_tokens;
  int max_context;
} ServeArgs;

static gboolean
on_quit_signal (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_CONTINUE;
}

/* The address to bind, or NULL for "localhost" (loopback, both families). */
static gboolean
check_host (const ServeArgs *a, GInetAddress **addr, GError **error)
{
  *addr = NULL;
  if (g_ascii_strcasecmp (a->host, "localhost") == 0)
    return TRUE;
  *addr = g_inet_address_new_from_string (a->host);
  if (*addr == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--host must be an IP address or localhost, not '%s'", a->host);
      return FALSE;
    }
  if (!g_inet_address_get_is_loopback (*addr) && (a->api_key == NULL || !*a->api_key))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "refusing to listen on %s, which is not a loopback address, without "
                   "--api-key", a->host);
      g_clear_object (addr);
      return FALSE;
    }
  return TRUE;
}

/* libsoup 3.2 listens with GLib's backlog of 10. A burst of connections beyond it makes
 * Linux answer with SYN cookies, and a connection that a cookie completes late loses its
 * first bytes (a client's "POST" arrives as "OST": bench/listen-backlog/). */
static void
widen_backlog (SoupServer *soup)
{
  GSList *listeners = soup_server_get_listeners (soup);
  for (GSList *l = listeners; l; l = l->next)
    listen (g_socket_get_fd (l->data), SOMAXCONN);
  g_slist_free (listeners);
}

static gboolean
listen_on (ServeServer *server, const ServeArgs *a, GInetAddress *addr, GError **error)
{
  gboolean ok;
  if (addr == NULL)
    ok = soup_server_listen_local (server->soup, (guint) a->port, 0, error);
  else
    {
      g_autoptr (GSocketAddress) sa = g_inet_socket_address_new (addr, (guint16) a->port);
      ok = soup_server_listen (server->soup, sa, 0, error);
    }
  if (ok)
    widen_backlog (server->soup);
  return ok;
}

static void
announce (ServeServer *server)
{
  GSList *uris = soup_server_get_uris (server->soup);
  for (GSList *l = uris; l; l = l->next)
    {
      g_autofree char *text = g_uri_to_string (l->data);
      printf ("Listening on %s%s\n", text, server->api_key ? " (API key required)" : "");
    }
  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  fflush (stdout);
}

/* The checkpoint's own template (or --template FILE), in its plain and tool_use variants. */
static gboolean
load_templates (const ServeArgs *a, BwModelTemplate **tpl, BwModelTemplate **tpl_tools,
                GError **error)
{
  g_autofree char *dir = a->engine.model_dir ? g_strdup (a->engine.model_dir)
                                             : burrow_demo_model_dir ();
  if (a->engine.chat_template)
    {
      *tpl = bw_model_template_load_file (a->engine.chat_template, dir, error);
      if (*tpl)
        *tpl_tools = bw_model_template_load_file (a->engine.chat_template, dir, error);
      return *tpl_tools != NULL;
    }
  *tpl = bw_model_template_load (dir, FALSE, error);
  if (*tpl == NULL)
    return error == NULL || *error == NULL;
  *tpl_tools = bw_model_template_load (dir, TRUE, error);
  return *tpl_tools != NULL;
}

/* --api-key, else the first line of --api-key-file, else $BURROW_API_KEY. */
static gboolean
resolve_api_key (ServeArgs *a, GError **error)
{
  if (a->api_key && a->api_key_file)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "give --api-key or --api-key-file, not both");
      return FALSE;
    }
  if (a->api_key_file)
    {
      g_autofree char *text = NULL;
      g_autoptr (GError) local = NULL;
      if (!g_file_get_contents (a->api_key_file, &text, NULL, &local))
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "cannot read the API key: %s", local->message);
          return FALSE;
        }
      char *nl = strpbrk (text, "\r\n");
      if (nl)
        *nl = '\0';
      g_strstrip (text);
      if (*text == '\0')
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "%s: the API key file is empty", a->api_key_file);
          return FALSE;
        }
      a->api_key = g_steal_pointer (&text);
    }
  else if (a->api_key == NULL && g_getenv ("BURROW_API_KEY") && *g_getenv ("BURROW_API_KEY"))
    a->api_key = g_strdup (g_getenv ("BURROW_API_KEY"));
  return TRUE;
}

/* The model's name (burrow_model_name), then the aliases. */
static char **
served_names (BurrowEngine *engine, char **aliases)
{
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  g_strv_builder_add (b, burrow_engine_get_name (engine));
  for (gsize i = 0; aliases && aliases[i]; i++)
    {
      g_auto (GStrv) parts = g_strsplit (aliases[i], ",", -1);
      for (gsize k = 0; parts[k]; k++)
        if (*g_strstrip (parts[k]))
          g_strv_builder_add (b, parts[k]);
    }
  return g_strv_builder_end (b);
}

/* Seconds as microseconds: finite, above 0 and at most a day. */
static gboolean
seconds (const char *flag, double value, gint64 *us, GError **error)
{
  if (!(value > 0 && value <= 86400))
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s must be more than 0 and at most 86400 seconds, not %g", flag, value);
      return FALSE;
    }
  *us = (gint64) (value * G_USEC_PER_SEC);
  return TRUE;
}

static gboolean
check_limits (const ServeArgs *a, ServeLimits *limits, GError **error)
{
  *limits = (ServeLimits) { .min_body_rate = 16 << 10 };
  if (a->max_connections < 1)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "--max-connections must be at least 1, not %d", a->max_connections);
      return FALSE;
    }
  limits->max_connections = (guint) a->max_connections;
  if (a->min_body_rate && !bw_cli_parse_size (a->min_body_rate, &limits->min_body_rate, error))
    {
      g_prefix_error (error, "--min-body-rate: ");
      return FALSE;
    }
  return seconds ("--header-timeout", a->header_timeout, &limits->header_timeout_us, error)
         && seconds ("--body-timeout", a->body_timeout, &limits->body_timeout_us, error)
         && seconds ("--idle-timeout", a->idle_timeout, &limits->idle_timeout_us, error);
}

static int
serve_with_args (ServeArgs *a, GError **error)
{
  guint64 max_body = 4u << 20;
  if (a->port < 0 || a->port > 65535 || a->queue < 0 || a->max_tokens <= 0
      || a->max_context < 0)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "--port must be 0-65535, --queue and --max-context >= 0 and "
                           "--max-tokens > 0");
      return 2;
    }
  if (!resolve_api_key (a, error))
    return 2;
  ServeLimits limits;
  if (!check_limits (a, &limits, error))
    return 2;
  g_autoptr (GInetAddress) addr = NULL;
  if (!check_host (a, &addr, error)
      || (a->max_body && !bw_cli_parse_size (a->max_body, &max_body, error)))
    return 2;
  g_autoptr (BurrowEngine) engine = bw_cli_load_engine (&a->engine, error);
  if (engine == NULL)
    return 1;

  g_autoptr (BwModelTemplate) tpl = NULL;
  g_autoptr (BwModelTemplate) tpl_tools = NULL;
  if (!load_templates (a, &tpl, &tpl_tools, error))
    return 1;

  g_auto (GStrv) names = served_names (engine, a->names);
  ServeServer server = { .engine = engine, .max_body = max_body, .limits = limits,
                         .template = tpl, .template_tools = tpl_tools,
                         .tool_format = tpl_tools ? bw_tool_format_detect (tpl_tools->source)
                                                  : BW_TOOL_FORMAT_NONE,
                         .max_queue = (guint) a->queue, .max_tokens = a->max_tokens,
                         .max_context = a->max_context > 0 ? a->max_context
                                                           : burrow_engine_get_max_context (engine),
                         .names = (const char *const *) names,
                         .created = g_get_real_time () / G_USEC_PER_SEC,
                         .main_context = g_main_context_default () };
  server.api_key = a->api_key && *a->api_key ? a->api_key : NULL;
  g_mutex_init (&server.profile_lock);
  serve_experts_init (&server);
  g_autofree char *header = g_strdup_printf ("burrow/%s", BURROW_VERSION);
  server.soup = soup_server_new ("server-header", header, NULL);
  serve_http_setup (&server);
  int rc = 0;
  if (listen_on (&server, a, addr, error))
    {
      g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
      guint sigint = g_unix_signal_add (SIGINT, on_quit_signal, loop);
      guint sigterm = g_unix_signal_add (SIGTERM, on_quit_signal, loop);
      serve_worker_start (&server);
      announce (&server);
      g_main_loop_run (loop);
      g_source_remove (sigint);
      g_source_remove (sigterm);
      serve_http_cancel_all (&server);
      serve_worker_stop (&server);
      /* Let the last flushes run so their jobs are answered and released. */
      while (g_main_context_iteration (NULL, FALSE))
        ;
    }
  else
    rc = 1;
  serve_http_release (&server);
  soup_server_disconnect (server.soup);
  serve_conns_free (server.conns);
  g_object_unref (server.soup);
  serve_experts_clear (&server);
  g_mutex_clear (&server.profile_lock);
  return rc;
}

int
bw_cli_serve_main (int argc, char **argv)
{
  ServeArgs a = { .port = 8000, .queue = 4, .max_tokens = 1024, .header_timeout = 10,
                  .body_timeout = 10, .idle_timeout = 60, .max_connections = 256 };
  const GOptionEntry entries[] = {
    { "host", 0, 0, G_OPTION_ARG_STRING, &a.host,
      "Address to listen on (127.0.0.1; others need --api-key)", "ADDR" },
    { "port", 0, 0, G_OPTION_ARG_INT, &a.port, "Port (8000; 0 picks a free one)", "PORT" },
    { "api-key", 0, 0, G_OPTION_ARG_STRING, &a.api_key,
      "Require 'Authorization: Bearer KEY' on every request (visible in ps: prefer "
      "--api-key-file or $BURROW_API_KEY)", "KEY" },
    { "api-key-file", 0, 0, G_OPTION_ARG_FILENAME, &a.api_key_file,
      "Read the API key from the first line of FILE", "FILE" },
    { "served-model-name", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a.names,
      "Another name requests may give as 'model' (repeatable, or comma-separated)", "NAME" },
    { "max-context", 0, 0, G_OPTION_ARG_INT, &a.max_context,
      "Tokens of prompt plus reply a request may use; longer prompts get 400 "
      "context_length_exceeded (default: the model's max_position_embeddings, capped by "
      "memory)", "N" },
    { "max-body", 0, 0, G_OPTION_ARG_STRING, &a.max_body, "Largest request body (4M)",
      "SIZE" },
    { "header-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a.header_timeout,
      "Seconds a connection has to send a request's headers, from its accept or from the "
      "first byte of its next request (10); later it gets 408 and is closed", "S" },
    { "body-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a.body_timeout,
      "Seconds a request body may take beyond what --min-body-rate allows (10)", "S" },
    { "min-body-rate", 0, 0, G_OPTION_ARG_STRING, &a.min_body_rate,
      "Bytes per second a request body must average after its grace (16K; 0: the whole "
      "body within --body-timeout); slower gets 408 and is closed", "SIZE" },
    { "idle-timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a.idle_timeout,
      "Seconds a kept-alive connection may wait for its next request (60)", "S" },
    { "max-connections", 0, 0, G_OPTION_ARG_INT, &a.max_connections,
      "Open connections at once (256); a new one closes the oldest idle connection, else "
      "the one waiting longest for its headers, else it is refused", "N" },
    { "queue", 0, 0, G_OPTION_ARG_INT, &a.queue,
      "Requests that may wait behind the running one (4); more get 429", "N" },
    { "max-tokens", 'n', 0, G_OPTION_ARG_INT, &a.max_tokens,
      "Reply length limit when a request sets none (1024)", "N" },
    { NULL }
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- serve a model over HTTP");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (ctx, entries, NULL);
  bw_cli_add_engine_entries (ctx, &a.engine);
  int rc = 2;
  if (g_option_context_parse (ctx, &argc, &argv, &error))
    {
      if (a.host == NULL)
        a.host = g_strdup ("127.0.0.1");
      rc = serve_with_args (&a, &error);
    }
  if (rc != 0 && error)
    fprintf (stderr, "burrow-cli serve: %s\n", error->message);
  bw_cli_engine_args_clear (&a.engine);
  g_free (a.host);
  g_free (a.api_key);
  g_free (a.api_key_file);
  g_strfreev (a.names);
  g_free (a.max_body);
  g_free (a.min_body_rate);
  return rc;
}
