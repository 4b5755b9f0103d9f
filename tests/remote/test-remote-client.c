/* The remote client against a real burrow-cli serve (the testing build, which can pace its
 * tokens) on loopback: models, a streamed reply with its usage, the sampling sent, and
 * every failure a person can meet, each keeping the reply so far. TLS is checked against
 * a real TLS server (libsoup's, with a self-signed certificate the client must refuse),
 * and 5xx against a real HTTP server answering 503, since a healthy Burrow has no way to
 * fail with one. */
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-remote-client.h"
#include "remote-server.h"

typedef struct {
  GMainLoop *loop;
  GString *answer;
  GString *reasoning;
  int n_deltas;
  BurrowTurnStats stats;
  GError *error;
  gboolean done;
  /* after this many deltas: send the signal to the server, or cancel */
  int act_after;
  RemoteServer *server;
  int signum;
  GCancellable *cancel;
} Reply;

static void
on_delta (const char                 *answer,
          const char                 *reasoning,
          const BurrowRemoteCounters *counters,
          gpointer                    data)
{
  Reply *r = data;

  g_string_append (r->answer, answer);
  g_string_append (r->reasoning, reasoning);
  if (++r->n_deltas == r->act_after)
    {
      if (r->cancel != NULL)
        g_cancellable_cancel (r->cancel);
      else
        remote_server_signal (r->server, r->signum);
    }
}

static void
on_done (const BurrowTurnStats *stats,
         const GError          *error,
         gpointer               data)
{
  Reply *r = data;

  g_assert_false (r->done);
  r->done = TRUE;
  r->stats = *stats;
  r->error = error ? g_error_copy (error) : NULL;
  g_main_loop_quit (r->loop);
}

static void
reply_clear (Reply *r)
{
  g_main_loop_unref (r->loop);
  g_string_free (r->answer, TRUE);
  g_string_free (r->reasoning, TRUE);
  g_clear_error (&r->error);
  g_clear_object (&r->cancel);
}

/* One reply to "Hello" (greedy, at most @max_tokens). */
static void
chat (BurrowRemoteClient *client,
      const char         *model,
      int                 max_tokens,
      Reply              *r)
{
  static const BurrowRemoteReplyFuncs funcs = { on_delta, on_done };
  BurrowRemoteChat *c = burrow_remote_chat_new (model);

  r->loop = g_main_loop_new (NULL, FALSE);
  r->answer = g_string_new (NULL);
  r->reasoning = g_string_new (NULL);
  burrow_remote_chat_add_message (c, BURROW_ROLE_USER, "Hello");
  burrow_remote_chat_get_options (c)->max_tokens = max_tokens;
  burrow_remote_client_chat (client, c, r->cancel, &funcs, r);
  g_assert_false (r->done);
  g_main_loop_run (r->loop);
  g_assert_true (r->done);
}

static BurrowRemoteClient *
client_new (const char *url,
            const char *key)
{
  g_autoptr(GError) error = NULL;
  BurrowRemoteClient *client = burrow_remote_client_new (url, key, &error);

  g_assert_no_error (error);
  return client;
}

static const char *const pace[] = { "BURROW_TEST_TOKEN_DELAY_MS=40", "BURROW_TEST_IGNORE_EOS=1",
                                    NULL };

/* ---- models ---- */

static void
on_models (GObject      *source,
           GAsyncResult *result,
           gpointer      data)
{
  Reply *r = data;

  g_strfreev (g_object_get_data (G_OBJECT (source), "ids"));
  g_object_set_data (source, "ids",
                     burrow_remote_client_list_models_finish (BURROW_REMOTE_CLIENT (source),
                                                              result, &r->error));
  g_main_loop_quit (r->loop);
}

static void
test_models (void)
{
  const char *const args[] = { "--served-model-name", "alias", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, args, NULL);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { .loop = g_main_loop_new (NULL, FALSE), .answer = g_string_new (NULL),
              .reasoning = g_string_new (NULL) };
  GStrv ids;

  burrow_remote_client_list_models_async (client, NULL, on_models, &r);
  g_main_loop_run (r.loop);
  g_assert_no_error (r.error);
  ids = g_object_get_data (G_OBJECT (client), "ids");
  g_assert_cmpuint (g_strv_length (ids), ==, 2);
  g_assert_cmpstr (ids[0], ==, "demo-model");
  g_assert_cmpstr (ids[1], ==, "alias");
  g_strfreev (ids);
  g_object_set_data (G_OBJECT (client), "ids", NULL);
  reply_clear (&r);
  remote_server_stop (server);
}

/* ---- a reply ---- */

static void
test_stream (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, NULL);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { 0 }, again = { 0 };
  g_autofree char *url_v1 = g_strconcat (server->url, "v1/", NULL);
  g_autoptr(BurrowRemoteClient) client_v1 = client_new (url_v1, NULL);

  chat (client, "demo-model", 64, &r);
  g_assert_no_error (r.error);
  g_assert_cmpint (r.stats.finish, ==, BURROW_FINISH_STOP);
  g_assert_cmpuint (r.answer->len, >, 0);
  g_assert_cmpint (r.n_deltas, >, 1);
  /* The server's usage: the demo model's chat format around "Hello". */
  g_assert_cmpint (r.stats.prompt_tokens, >, 5);
  g_assert_cmpint (r.stats.generated_tokens, >=, r.n_deltas);
  g_assert_cmpfloat (r.stats.ttft_seconds, >, 0);

  /* Greedy is greedy: the same reply again, through the address given with /v1/. */
  chat (client_v1, "demo-model", 64, &again);
  g_assert_no_error (again.error);
  g_assert_cmpstr (again.answer->str, ==, r.answer->str);
  g_assert_cmpstr (burrow_remote_client_get_url (client_v1), ==,
                   burrow_remote_client_get_url (client));
  reply_clear (&r);
  reply_clear (&again);
  remote_server_stop (server);
}

static void
test_length (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL,
                                              (const char *const[]) { "BURROW_TEST_IGNORE_EOS=1", NULL });
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { 0 };

  /* max_tokens is sent: the reply stops at 5 with finish_reason length. */
  chat (client, "demo-model", 5, &r);
  g_assert_no_error (r.error);
  g_assert_cmpint (r.stats.finish, ==, BURROW_FINISH_LENGTH);
  g_assert_cmpint (r.stats.generated_tokens, ==, 5);
  reply_clear (&r);
  remote_server_stop (server);
}

static void
test_body (void)
{
  g_autoptr(BurrowRemoteChat) c = burrow_remote_chat_new ("m");
  BurrowGenerateOptions *o = burrow_remote_chat_get_options (c);
  const char *const stop[] = { "END", NULL };
  g_autofree char *json = NULL;

  burrow_remote_chat_add_message (c, BURROW_ROLE_SYSTEM, "Be brief.");
  burrow_remote_chat_add_message (c, BURROW_ROLE_USER, "Hi");
  o->temperature = 0.5f;
  o->top_p = 0.9f;
  o->top_k = 40;
  o->seed = 7;
  o->max_tokens = 99;
  o->stop = stop;
  o->thinking = TRUE;
  json = burrow_remote_chat_to_json (c);
  g_assert_cmpstr (json, ==,
                   "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                   "{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":true,"
                   "\"stream_options\":{\"include_usage\":true},\"temperature\":0.5,"
                   "\"top_p\":0.89999997615814209,\"top_k\":40,\"seed\":7,\"max_tokens\":99,"
                   "\"stop\":[\"END\"],\"chat_template_kwargs\":{\"enable_thinking\":true}}");
}

/* ---- failures ---- */

static void
expect_error (Reply      *r,
              int         code,
              const char *words)
{
  if (r->error == NULL)
    g_error ("no error; expected code %d; the reply was “%s” (%d pieces)", code,
             r->answer->str, r->n_deltas);
  if (r->error->domain != BURROW_REMOTE_ERROR || r->error->code != code ||
      strstr (r->error->message, words) == NULL)
    g_error ("expected code %d with “%s”, got %s %d: %s", code, words,
             g_quark_to_string (r->error->domain), r->error->code, r->error->message);
  g_assert_cmpint (r->stats.finish, ==, BURROW_FINISH_ERROR);
}

static void
test_keys (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-remote-XXXXXX");
  g_autofree char *key_file = g_build_filename (dir, "key", NULL);
  const char *const args[] = { "--api-key-file", key_file, NULL };
  RemoteServer *server;
  g_autoptr(BurrowRemoteClient) none = NULL, wrong = NULL, right = NULL;
  Reply r1 = { 0 }, r2 = { 0 }, r3 = { 0 };

  g_assert_true (g_file_set_contents (key_file, "sesame-123\n", -1, NULL));
  server = remote_server_start (BURROW_CLI_TESTING, args, NULL);
  none = client_new (server->url, NULL);
  wrong = client_new (server->url, "sesame-124");
  right = client_new (server->url, "sesame-123");

  chat (none, "demo-model", 8, &r1);
  expect_error (&r1, BURROW_REMOTE_ERROR_UNAUTHORIZED, "needs an API key (401)");
  chat (wrong, "demo-model", 8, &r2);
  expect_error (&r2, BURROW_REMOTE_ERROR_UNAUTHORIZED, "did not accept the API key (401)");
  g_assert_null (strstr (r2.error->message, "sesame"));
  chat (right, "demo-model", 8, &r3);
  g_assert_no_error (r3.error);
  g_assert_cmpuint (r3.answer->len, >, 0);

  reply_clear (&r1);
  reply_clear (&r2);
  reply_clear (&r3);
  remote_server_stop (server);
  g_unlink (key_file);
  g_rmdir (dir);
}

static void
test_model_not_found (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, NULL);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { 0 };

  chat (client, "no-such-model", 8, &r);
  expect_error (&r, BURROW_REMOTE_ERROR_NOT_FOUND, "has no model named “no-such-model” (404)");
  reply_clear (&r);
  remote_server_stop (server);
}

static void
test_refused (void)
{
  g_autofree char *url = g_strdup_printf ("http://127.0.0.1:%d", remote_free_port ());
  g_autoptr(BurrowRemoteClient) client = client_new (url, NULL);
  Reply r = { 0 };

  chat (client, "m", 8, &r);
  expect_error (&r, BURROW_REMOTE_ERROR_CONNECT, "refused the connection");
  reply_clear (&r);
}

/* A resolver that knows no names: the test sends no query off this machine (a real
 * lookup of an unknown name would go to the network's DNS server). */
typedef GResolver NoNames;
typedef GResolverClass NoNamesClass;
static GType no_names_get_type (void);
G_DEFINE_TYPE (NoNames, no_names, G_TYPE_RESOLVER)

static void
no_names_lookup_async (GResolver           *resolver,
                       const char          *hostname,
                       GCancellable        *cancellable,
                       GAsyncReadyCallback  callback,
                       gpointer             user_data)
{
  g_autoptr(GTask) task = g_task_new (resolver, cancellable, callback, user_data);

  g_task_return_new_error (task, G_RESOLVER_ERROR, G_RESOLVER_ERROR_NOT_FOUND,
                           "Error resolving “%s”: unknown to the test resolver", hostname);
}

static void
no_names_lookup_flags_async (GResolver                *resolver,
                             const char               *hostname,
                             GResolverNameLookupFlags  flags,
                             GCancellable             *cancellable,
                             GAsyncReadyCallback       callback,
                             gpointer                  user_data)
{
  no_names_lookup_async (resolver, hostname, cancellable, callback, user_data);
}

static GList *
no_names_lookup_finish (GResolver     *resolver,
                        GAsyncResult  *result,
                        GError       **error)
{
  return g_task_propagate_pointer (G_TASK (result), error);
}

static void
no_names_class_init (NoNamesClass *klass)
{
  klass->lookup_by_name_async = no_names_lookup_async;
  klass->lookup_by_name_finish = no_names_lookup_finish;
  klass->lookup_by_name_with_flags_async = no_names_lookup_flags_async;
  klass->lookup_by_name_with_flags_finish = no_names_lookup_finish;
}

static void
no_names_init (NoNames *self)
{
}

static void
test_dns (void)
{
  g_autoptr(GResolver) real = g_resolver_get_default ();
  g_autoptr(GResolver) none = g_object_new (no_names_get_type (), NULL);
  g_autoptr(BurrowRemoteClient) client = NULL;
  Reply r = { 0 };

  g_resolver_set_default (none);
  client = client_new ("http://no-such-host.invalid:8000", NULL);
  chat (client, "m", 8, &r);
  g_resolver_set_default (real);
  expect_error (&r, BURROW_REMOTE_ERROR_RESOLVE, "could not be found");
  g_assert_nonnull (strstr (r.error->message, "unknown to the test resolver"));
  reply_clear (&r);
}

/* A second request while one runs and none may wait: 429 with Retry-After. */
static void
test_busy (void)
{
  const char *const args[] = { "--queue", "0", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, args, pace);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  g_autoptr(BurrowRemoteClient) second = client_new (server->url, NULL);
  Reply r = { 0 }, busy = { 0 };
  static const BurrowRemoteReplyFuncs funcs = { on_delta, on_done };
  BurrowRemoteChat *c = burrow_remote_chat_new ("demo-model");

  /* The first reply runs for 100 tokens of 40 ms; the second is sent when its first
   * token is in. */
  busy.cancel = g_cancellable_new ();
  r.loop = g_main_loop_new (NULL, FALSE);
  r.answer = g_string_new (NULL);
  r.reasoning = g_string_new (NULL);
  burrow_remote_chat_add_message (c, BURROW_ROLE_USER, "Hello");
  burrow_remote_chat_get_options (c)->max_tokens = 100;
  burrow_remote_client_chat (client, c, NULL, &funcs, &r);
  while (r.n_deltas == 0)
    g_main_context_iteration (NULL, TRUE);
  chat (second, "demo-model", 8, &busy);
  if (busy.error == NULL)
    {
      if (!r.done)
        g_main_loop_run (r.loop);
      g_printerr ("first: %s / %d pieces / finish %d / %s\n", r.answer->str, r.n_deltas,
                  r.stats.finish, r.error ? r.error->message : "ok");
    }
  expect_error (&busy, BURROW_REMOTE_ERROR_RATE_LIMITED, "is busy (429). Try again in 1 s");
  if (!r.done)
    g_main_loop_run (r.loop);
  g_assert_no_error (r.error);
  reply_clear (&r);
  reply_clear (&busy);
  remote_server_stop (server);
}

static void
test_cancel (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, pace);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { .act_after = 3 };
  gint64 start = g_get_monotonic_time ();

  r.cancel = g_cancellable_new ();
  chat (client, "demo-model", 200, &r);
  g_assert_error (r.error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_cmpint (r.stats.finish, ==, BURROW_FINISH_CANCELLED);
  g_assert_cmpint (r.n_deltas, ==, 3);
  g_assert_cmpuint (r.answer->len, >, 0);
  /* 200 tokens would take 8 s. */
  g_assert_cmpint (g_get_monotonic_time () - start, <, 4 * G_USEC_PER_SEC);
  reply_clear (&r);
  remote_server_stop (server);
}

static void
test_cut (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, pace);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { .act_after = 3, .server = server, .signum = SIGKILL };

  chat (client, "demo-model", 200, &r);
  expect_error (&r, BURROW_REMOTE_ERROR_CUT, "before the reply was complete");
  g_assert_cmpint (r.n_deltas, >=, 3);
  g_assert_cmpuint (r.answer->len, >, 0);
  reply_clear (&r);
  remote_server_stop (server);
}

static void
test_stall (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, pace);
  g_autoptr(BurrowRemoteClient) client = client_new (server->url, NULL);
  Reply r = { .act_after = 3, .server = server, .signum = SIGSTOP };
  gint64 start;

  burrow_remote_client_set_stall_timeout (client, 1.0);
  start = g_get_monotonic_time ();
  chat (client, "demo-model", 200, &r);
  expect_error (&r, BURROW_REMOTE_ERROR_TIMEOUT, "sent nothing for 1 s");
  g_assert_cmpint (r.n_deltas, ==, 3);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);
  reply_clear (&r);
  remote_server_stop (server);
}

/* ---- real servers that fail in ways Burrow does not ---- */

static void
on_request (SoupServer        *soup,
            SoupServerMessage *msg,
            const char        *path,
            GHashTable        *query,
            gpointer           data)
{
  static const char body[] = "{\"error\":{\"message\":\"CUDA out of memory\"}}";

  soup_server_message_set_status (msg, GPOINTER_TO_UINT (data), NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_STATIC, body,
                                    sizeof body - 1);
}

static SoupServer *
soup_server_on_loopback (guint            status,
                         GTlsCertificate *certificate,
                         char           **url)
{
  g_autoptr(GError) error = NULL;
  SoupServer *soup = soup_server_new ("tls-certificate", certificate, NULL);
  GSList *uris;

  soup_server_add_handler (soup, NULL, on_request, GUINT_TO_POINTER (status), NULL);
  g_assert_true (soup_server_listen_local (soup, 0, SOUP_SERVER_LISTEN_IPV4_ONLY |
                                           (certificate ? SOUP_SERVER_LISTEN_HTTPS : 0), &error));
  g_assert_no_error (error);
  uris = soup_server_get_uris (soup);
  *url = g_uri_to_string (uris->data);
  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  return soup;
}

static void
test_server_error (void)
{
  g_autofree char *url = NULL;
  g_autoptr(SoupServer) soup = soup_server_on_loopback (503, NULL, &url);
  g_autoptr(BurrowRemoteClient) client = client_new (url, NULL);
  Reply r = { 0 };

  g_assert_nonnull (soup);

  chat (client, "m", 8, &r);
  expect_error (&r, BURROW_REMOTE_ERROR_SERVER,
                "internal error (503 Service Unavailable). The server said: “CUDA out of memory”");
  reply_clear (&r);
}

static void
test_tls (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GTlsCertificate) cert =
    g_tls_certificate_new_from_files (SOURCE_DIR "/tls-cert.pem", SOURCE_DIR "/tls-key.pem",
                                      &error);
  g_autofree char *url = NULL;
  g_autoptr(SoupServer) soup = NULL;
  g_autoptr(BurrowRemoteClient) client = NULL;
  Reply r = { 0 };

  g_assert_no_error (error);
  soup = soup_server_on_loopback (200, cert, &url);
  g_assert_true (g_str_has_prefix (url, "https://"));
  client = client_new (url, "a-key");
  chat (client, "m", 8, &r);
  expect_error (&r, BURROW_REMOTE_ERROR_TLS, "secure (TLS) connection");
  reply_clear (&r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/remote-client/body", test_body);
  g_test_add_func ("/remote-client/models", test_models);
  g_test_add_func ("/remote-client/stream", test_stream);
  g_test_add_func ("/remote-client/length", test_length);
  g_test_add_func ("/remote-client/keys", test_keys);
  g_test_add_func ("/remote-client/model-not-found", test_model_not_found);
  g_test_add_func ("/remote-client/refused", test_refused);
  g_test_add_func ("/remote-client/dns", test_dns);
  g_test_add_func ("/remote-client/busy", test_busy);
  g_test_add_func ("/remote-client/cancel", test_cancel);
  g_test_add_func ("/remote-client/cut", test_cut);
  g_test_add_func ("/remote-client/stall", test_stall);
  g_test_add_func ("/remote-client/server-error", test_server_error);
  g_test_add_func ("/remote-client/tls", test_tls);
  return g_test_run ();
}
