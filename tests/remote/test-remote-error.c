/* Remote error texts and the address rules: each status a server can answer becomes the
 * right code and a message that names the server, quotes its words, and never the key. */
#include <string.h>

#include "burrow-remote-client.h"

static GBytes *
bytes (const char *text)
{
  return g_bytes_new_static (text, strlen (text));
}

static void
expect (GError     *error,
        int         code,
        const char *words)
{
  g_assert_nonnull (error);
  g_assert_true (error->domain == BURROW_REMOTE_ERROR);
  if (error->code != code || strstr (error->message, words) == NULL)
    g_error ("expected %d with “%s”, got %d: %s", code, words, error->code, error->message);
  g_error_free (error);
}

static void
test_status (void)
{
  g_autoptr(GBytes) model = bytes ("{\"error\":{\"message\":\"The model 'x' does not exist\"}}");
  g_autoptr(GBytes) html = bytes ("<html><body>Bad Gateway</body></html>");
  g_autoptr(GBytes) plain = bytes ("upstream timed out\n");
  g_autoptr(GBytes) flat = bytes ("{\"error\":\"model is loading\"}");

  expect (burrow_remote_error_from_status (401, "h:1", NULL, NULL, FALSE, NULL),
          BURROW_REMOTE_ERROR_UNAUTHORIZED, "h:1 needs an API key (401)");
  expect (burrow_remote_error_from_status (401, "h:1", NULL, NULL, TRUE, NULL),
          BURROW_REMOTE_ERROR_UNAUTHORIZED, "did not accept the API key");
  expect (burrow_remote_error_from_status (403, "h:1", NULL, NULL, TRUE, NULL),
          BURROW_REMOTE_ERROR_FORBIDDEN, "refused access (403)");
  expect (burrow_remote_error_from_status (404, "h:1", model, NULL, FALSE, "x"),
          BURROW_REMOTE_ERROR_NOT_FOUND, "has no model named “x” (404)");
  expect (burrow_remote_error_from_status (404, "h:1", NULL, NULL, FALSE, "x"),
          BURROW_REMOTE_ERROR_NOT_FOUND, "no such model or endpoint");
  expect (burrow_remote_error_from_status (429, "h:1", NULL, "7", FALSE, NULL),
          BURROW_REMOTE_ERROR_RATE_LIMITED, "Try again in 7 s");
  expect (burrow_remote_error_from_status (429, "h:1", NULL, NULL, FALSE, NULL),
          BURROW_REMOTE_ERROR_RATE_LIMITED, "Try again later");
  expect (burrow_remote_error_from_status (502, "h:1", html, NULL, FALSE, NULL),
          BURROW_REMOTE_ERROR_SERVER, "(502 Bad Gateway).");
  expect (burrow_remote_error_from_status (504, "h:1", plain, NULL, FALSE, NULL),
          BURROW_REMOTE_ERROR_SERVER, "The server said: “upstream timed out”");
  expect (burrow_remote_error_from_status (503, "h:1", flat, NULL, FALSE, NULL),
          BURROW_REMOTE_ERROR_SERVER, "“model is loading”");
  expect (burrow_remote_error_from_status (400, "h:1", NULL, NULL, FALSE, NULL),
          BURROW_REMOTE_ERROR_REQUEST, "refused the request (400");
}

static void
test_retry_after (void)
{
  g_autoptr(GDateTime) now = g_date_time_new_utc (2026, 12, 1, 12, 0, 0);

  g_assert_cmpint (burrow_remote_retry_after_seconds ("120", now), ==, 120);
  g_assert_cmpint (burrow_remote_retry_after_seconds (" 3 ", now), ==, 3);
  g_assert_cmpint (burrow_remote_retry_after_seconds ("Tue, 01 Dec 2026 12:00:30 GMT", now), ==, 30);
  g_assert_cmpint (burrow_remote_retry_after_seconds ("Tue, 01 Dec 2026 11:00:00 GMT", now), ==, 0);
  g_assert_cmpint (burrow_remote_retry_after_seconds ("soon", now), ==, -1);
  g_assert_cmpint (burrow_remote_retry_after_seconds ("5x", now), ==, -1);
  g_assert_cmpint (burrow_remote_retry_after_seconds (NULL, now), ==, -1);
}

static void
test_long_words (void)
{
  g_autoptr(GString) body = g_string_new ("{\"error\":{\"message\":\"");
  g_autoptr(GBytes) b = NULL;
  GError *error;

  for (int i = 0; i < 1000; i++)
    g_string_append (body, "é");
  g_string_append (body, "\"}}");
  b = g_bytes_new (body->str, body->len);
  error = burrow_remote_error_from_status (500, "h", b, NULL, FALSE, NULL);
  g_assert_true (g_utf8_validate (error->message, -1, NULL));
  g_assert_cmpint (g_utf8_strlen (error->message, -1), <, 420);
  g_assert_nonnull (strstr (error->message, "é…"));
  g_error_free (error);
}

static void
test_addresses (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(BurrowRemoteClient) a = burrow_remote_client_new (" http://h:8000/v1/ ", "k", &error);
  g_autoptr(BurrowRemoteClient) b = burrow_remote_client_new ("https://h/api/v1", NULL, &error);
  const char *const bad[] = { "", "h:8000", "ftp://h/", "http://", "http://h/?a=1",
                              "http://user:pw@h/", "http://h/ x", NULL };

  g_assert_no_error (error);
  g_assert_cmpstr (burrow_remote_client_get_url (a), ==, "http://h:8000");
  g_assert_cmpstr (burrow_remote_client_get_host (a), ==, "h:8000");
  g_assert_true (burrow_remote_client_has_api_key (a));
  g_assert_cmpstr (burrow_remote_client_get_url (b), ==, "https://h/api");
  g_assert_false (burrow_remote_client_has_api_key (b));
  for (gsize i = 0; bad[i] != NULL; i++)
    {
      g_autoptr(BurrowRemoteClient) c = burrow_remote_client_new (bad[i], NULL, &error);

      g_assert_null (c);
      g_assert_error (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL);
      g_clear_error (&error);
    }
  g_assert_null (burrow_remote_client_new ("http://h", "k\r\nX-Evil: 1", &error));
  g_assert_error (error, BURROW_REMOTE_ERROR, BURROW_REMOTE_ERROR_URL);

  g_assert_true (burrow_remote_url_is_exposed ("http://192.168.1.5:8000"));
  g_assert_true (burrow_remote_url_is_exposed ("http://gpu-box.lan:8000/v1"));
  g_assert_false (burrow_remote_url_is_exposed ("https://gpu-box.lan/v1"));
  g_assert_false (burrow_remote_url_is_exposed ("http://127.0.0.1:8000"));
  g_assert_false (burrow_remote_url_is_exposed ("http://127.3.4.5:8000"));
  g_assert_false (burrow_remote_url_is_exposed ("http://localhost:8000"));
  g_assert_false (burrow_remote_url_is_exposed ("http://[::1]:8000"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/remote-error/status", test_status);
  g_test_add_func ("/remote-error/retry-after", test_retry_after);
  g_test_add_func ("/remote-error/long-words", test_long_words);
  g_test_add_func ("/remote-error/addresses", test_addresses);
  return g_test_run ();
}
