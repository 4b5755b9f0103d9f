/* Server keys in a real Secret Service (gnome-keyring, started by tests/with-keyring.sh):
 * stored, found by address only, replaced, and forgotten. */
#include "burrow-remote-keyring.h"

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
store (const char *url,
       const char *key)
{
  Wait w = { g_main_loop_new (NULL, FALSE) };
  g_autoptr(GError) error = NULL;

  burrow_remote_keyring_store_async (url, "Test server", key, NULL, on_done, &w);
  g_assert_true (burrow_remote_keyring_store_finish (wait_result (&w), &error));
  g_assert_no_error (error);
  g_object_unref (w.result);
  g_main_loop_unref (w.loop);
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
  g_object_unref (w.result);
  g_main_loop_unref (w.loop);
  return key;
}

static void
clear (const char *url)
{
  Wait w = { g_main_loop_new (NULL, FALSE) };
  g_autoptr(GError) error = NULL;

  burrow_remote_keyring_clear_async (url, NULL, on_done, &w);
  g_assert_true (burrow_remote_keyring_clear_finish (wait_result (&w), &error));
  g_assert_no_error (error);
  g_object_unref (w.result);
  g_main_loop_unref (w.loop);
}

static void
test_round_trip (void)
{
  char *key;

  g_assert_null (lookup ("http://a:8000"));
  store ("http://a:8000", "key-a");
  store ("https://b", "key-b");

  key = lookup ("http://a:8000");
  g_assert_cmpstr (key, ==, "key-a");
  burrow_remote_keyring_free_key (key);
  key = lookup ("https://b");
  g_assert_cmpstr (key, ==, "key-b");
  burrow_remote_keyring_free_key (key);
  /* The address is the whole attribute, not a prefix. */
  g_assert_null (lookup ("http://a:800"));

  store ("http://a:8000", "key-a2");
  key = lookup ("http://a:8000");
  g_assert_cmpstr (key, ==, "key-a2");
  burrow_remote_keyring_free_key (key);

  clear ("http://a:8000");
  g_assert_null (lookup ("http://a:8000"));
  clear ("http://a:8000");
  key = lookup ("https://b");
  g_assert_cmpstr (key, ==, "key-b");
  burrow_remote_keyring_free_key (key);
  clear ("https://b");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (g_getenv ("BURROW_KEYRING_BUS") == NULL)
    g_error ("run this test through tests/with-keyring.sh");
  g_test_add_func ("/remote-keyring/round-trip", test_round_trip);
  return g_test_run ();
}
