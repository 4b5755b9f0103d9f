/* The add-server transaction (src/core/burrow-remote-server-add.c): with a real keyring
 * (tests/with-keyring.sh) the key is kept and the server listed, and adding it again without
 * a key clears the old one; with no keyring reachable a key is refused and nothing is
 * listed, while a server without a key is still added. */
#include "burrow-config.h"

#include "burrow-remote-backend.h"
#include "burrow-remote-keyring.h"
#include "burrow-remote-server-add.h"
#include "burrow-remote-servers.h"

typedef struct {
  GMainLoop *loop;
  GAsyncResult *result;
} Wait;

static void
on_done (GObject      *source,
         GAsyncResult *result,
         gpointer      data)
{
  Wait *w = data;

  w->result = g_object_ref (result);
  g_main_loop_quit (w->loop);
}

static GAsyncResult *
wait_result (Wait *w)
{
  g_main_loop_run (w->loop);
  return w->result;
}

static void
wait_clear (Wait *w)
{
  g_clear_object (&w->result);
  g_main_loop_unref (w->loop);
}

static gboolean
add (BurrowRemoteBackend *remote,
     GSettings           *settings,
     const char          *url,
     const char          *name,
     const char          *key,
     gboolean             allow_plain_http,
     GError             **error)
{
  Wait w = { g_main_loop_new (NULL, FALSE) };
  gboolean ok;

  burrow_remote_server_add_async (remote, settings, url, name, key, allow_plain_http, NULL,
                                  on_done, &w);
  ok = burrow_remote_server_add_finish (wait_result (&w), error);
  wait_clear (&w);
  return ok;
}

static char *
lookup (const char *url)
{
  Wait w = { g_main_loop_new (NULL, FALSE) };
  g_autoptr(GError) error = NULL;
  char *key;

  burrow_remote_keyring_lookup_async (url, NULL, on_done, &w);
  key = burrow_remote_keyring_lookup_finish (wait_result (&w), &error);
  g_assert_no_error (error);
  wait_clear (&w);
  return key;
}

static void
test_key_kept (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BURROW_APP_ID);
  g_autoptr(BurrowRemoteBackend) remote = burrow_remote_backend_new (settings);
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowRemoteServer) first = NULL;
  g_autoptr(BurrowRemoteServer) again = NULL;
  char *key;

  g_assert_true (add (remote, settings, "http://gpu-box:8000", "GPU box", "sk-one", TRUE,
                      &error));
  g_assert_no_error (error);
  key = lookup ("http://gpu-box:8000");
  g_assert_cmpstr (key, ==, "sk-one");
  burrow_remote_keyring_free_key (key);
  first = burrow_remote_servers_find (settings, "http://gpu-box:8000");
  g_assert_nonnull (first);
  g_assert_cmpstr (first->name, ==, "GPU box");
  g_assert_true (first->allow_plain_http);

  /* The same address again without a key: the old key goes, the new name stays. */
  g_assert_true (add (remote, settings, "http://gpu-box:8000", "Big box", "", FALSE, &error));
  g_assert_no_error (error);
  g_assert_null (lookup ("http://gpu-box:8000"));
  again = burrow_remote_servers_find (settings, "http://gpu-box:8000");
  g_assert_cmpstr (again->name, ==, "Big box");
  g_assert_false (again->allow_plain_http);
}

static void
test_key_refused (void)
{
  g_autoptr(GSettings) settings = g_settings_new (BURROW_APP_ID);
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowRemoteServer) kept = NULL;

  g_assert_false (add (NULL, settings, "https://cluster.example", "Cluster", "sk-two", FALSE,
                       &error));
  g_assert_nonnull (error);
  g_assert_null (burrow_remote_servers_find (settings, "https://cluster.example"));

  /* Without a key there is nothing to keep: the server is added all the same. */
  g_assert_true (add (NULL, settings, "https://cluster.example", "Cluster", NULL, FALSE, NULL));
  kept = burrow_remote_servers_find (settings, "https://cluster.example");
  g_assert_nonnull (kept);
  g_assert_cmpstr (kept->name, ==, "Cluster");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (g_getenv ("BURROW_KEYRING_BUS") != NULL)
    g_test_add_func ("/remote-server-add/key-kept", test_key_kept);
  else if (g_getenv ("BURROW_NO_KEYRING") != NULL)
    g_test_add_func ("/remote-server-add/key-refused", test_key_refused);
  else
    g_error ("run this test through tests/with-keyring.sh, or with BURROW_NO_KEYRING=1 and "
             "no session bus");
  return g_test_run ();
}
