/* burrow-cli serve: an OpenAI-compatible HTTP server over one loaded model.
 *
 *   serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key KEY]
 *
 * POST /v1/chat/completions (streamed as SSE or whole), GET /v1/models, GET /v1/profile.
 * It listens on loopback unless told otherwise, and refuses any other address without an
 * API key. The first line on stdout names the URL it listens on (port 0 picks a free one). */
#include <glib-unix.h>
#include <stdio.h>
#include <string.h>

#include "burrow-config.h"
#include "chat-options.h"
#include "commands.h"
#include "serve.h"

typedef struct {
  BwCliEngineArgs engine;
  char *host;
  int port;
  char *api_key;
  char *max_body;
  int queue;
  int max_tokens;
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

static gboolean
listen_on (ServeServer *server, const ServeArgs *a, GInetAddress *addr, GError **error)
{
  if (addr == NULL)
    return soup_server_listen_local (server->soup, (guint) a->port, 0, error);
  g_autoptr (GSocketAddress) sa = g_inet_socket_address_new (addr, (guint16) a->port);
  return soup_server_listen (server->soup, sa, 0, error);
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

static int
serve_with_args (ServeArgs *a, GError **error)
{
  guint64 max_body = 4u << 20;
  if (a->port < 0 || a->port > 65535 || a->queue < 0 || a->max_tokens <= 0)
    {
      g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "--port must be 0-65535, --queue >= 0 and --max-tokens > 0");
      return 2;
    }
  g_autoptr (GInetAddress) addr = NULL;
  if (!check_host (a, &addr, error)
      || (a->max_body && !bw_cli_parse_size (a->max_body, &max_body, error)))
    return 2;
  g_autoptr (BurrowEngine) engine = bw_cli_load_engine (&a->engine, error);
  if (engine == NULL)
    return 1;

  ServeServer server = { .engine = engine, .max_body = max_body,
                         .max_queue = (guint) a->queue, .max_tokens = a->max_tokens,
                         .created = g_get_real_time () / G_USEC_PER_SEC,
                         .main_context = g_main_context_default () };
  server.api_key = a->api_key && *a->api_key ? a->api_key : NULL;
  g_mutex_init (&server.profile_lock);
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
  g_object_unref (server.soup);
  g_mutex_clear (&server.profile_lock);
  return rc;
}

int
bw_cli_serve_main (int argc, char **argv)
{
  ServeArgs a = { .port = 8000, .queue = 4, .max_tokens = 1024 };
  const GOptionEntry entries[] = {
    { "host", 0, 0, G_OPTION_ARG_STRING, &a.host,
      "Address to listen on (127.0.0.1; others need --api-key)", "ADDR" },
    { "port", 0, 0, G_OPTION_ARG_INT, &a.port, "Port (8000; 0 picks a free one)", "PORT" },
    { "api-key", 0, 0, G_OPTION_ARG_STRING, &a.api_key,
      "Require 'Authorization: Bearer KEY' on every request", "KEY" },
    { "max-body", 0, 0, G_OPTION_ARG_STRING, &a.max_body, "Largest request body (4M)",
      "SIZE" },
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
  g_free (a.max_body);
  return rc;
}
