/* The server-sent-events parser: a stream with every feature the standard gives (CR, LF
 * and CR LF line ends, comments, multi-line data, named events, a BOM, fields without a
 * colon, an unfinished last event) yields the same events however it is cut into chunks:
 * every single cut, every pair of cuts, and one byte at a time. */
#include <string.h>

#include "burrow-remote-sse.h"

static const char stream[] =
  "\xEF\xBB\xBF: a comment\r\n"
  "data: {\"a\":1}\r\n"
  "\r\n"
  "event: ping\n"
  "data\n"
  "\n"
  "data:no space\r"
  "data:  two spaces\r"
  "\r"
  ": only a comment\n\n"
  "id: 7\nretry: 100\nevent: done\ndata: [DONE]\n\n"
  "data: cut\n";

/* event \x1f data, in order */
static const char *const expected[] = {
  "message\x1f{\"a\":1}",
  "ping\x1f",
  "message\x1fno space\n two spaces",
  "done\x1f[DONE]",
};

static gboolean
collect (const char *event,
         const char *data,
         gpointer    user_data)
{
  g_ptr_array_add (user_data, g_strdup_printf ("%s\x1f%s", event, data));
  return TRUE;
}

static void
check (GPtrArray *got,
       const char *how)
{
  if (got->len != G_N_ELEMENTS (expected))
    g_error ("%s: %u events, expected %u", how, got->len, (guint) G_N_ELEMENTS (expected));
  for (guint i = 0; i < got->len; i++)
    if (strcmp (g_ptr_array_index (got, i), expected[i]) != 0)
      g_error ("%s: event %u is '%s', expected '%s'", how, i,
               (char *) g_ptr_array_index (got, i), expected[i]);
}

/* Feeds the stream cut at @a and @b (a <= b). */
static void
feed_cut (gsize a,
          gsize b)
{
  gsize n = sizeof stream - 1;
  g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(BurrowRemoteSse) sse = burrow_remote_sse_new (0, collect, got);
  g_autofree char *how = g_strdup_printf ("cut at %" G_GSIZE_FORMAT " and %" G_GSIZE_FORMAT,
                                          a, b);

  g_assert_true (burrow_remote_sse_feed (sse, stream, a, NULL));
  g_assert_true (burrow_remote_sse_feed (sse, stream + a, b - a, NULL));
  g_assert_true (burrow_remote_sse_feed (sse, stream + b, n - b, NULL));
  check (got, how);
  /* "data: cut" never got its blank line. */
  g_assert_true (burrow_remote_sse_has_partial (sse));
}

static void
test_whole (void)
{
  feed_cut (0, 0);
}

static void
test_every_cut (void)
{
  gsize n = sizeof stream - 1;

  for (gsize a = 0; a <= n; a++)
    for (gsize b = a; b <= n; b++)
      feed_cut (a, b);
}

static void
test_bytewise (void)
{
  gsize n = sizeof stream - 1;
  g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(BurrowRemoteSse) sse = burrow_remote_sse_new (0, collect, got);

  for (gsize i = 0; i < n; i++)
    g_assert_true (burrow_remote_sse_feed (sse, stream + i, 1, NULL));
  check (got, "byte by byte");
}

static void
test_ends_clean (void)
{
  static const char clean[] = "data: x\n\n";
  g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(BurrowRemoteSse) sse = burrow_remote_sse_new (0, collect, got);

  g_assert_true (burrow_remote_sse_feed (sse, clean, sizeof clean - 1, NULL));
  g_assert_cmpuint (got->len, ==, 1);
  g_assert_false (burrow_remote_sse_has_partial (sse));
}

static gboolean
stop_after_first (const char *event,
                  const char *data,
                  gpointer    user_data)
{
  (*(int *) user_data)++;
  return FALSE;
}

static void
test_stop (void)
{
  static const char two[] = "data: 1\n\ndata: 2\n\n";
  int calls = 0;
  g_autoptr(BurrowRemoteSse) sse = burrow_remote_sse_new (0, stop_after_first, &calls);
  g_autoptr(GError) error = NULL;

  g_assert_false (burrow_remote_sse_feed (sse, two, sizeof two - 1, &error));
  g_assert_no_error (error);
  g_assert_false (burrow_remote_sse_feed (sse, two, sizeof two - 1, &error));
  g_assert_cmpint (calls, ==, 1);
}

static void
test_too_long (void)
{
  g_autoptr(GPtrArray) got = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(BurrowRemoteSse) sse = burrow_remote_sse_new (16, collect, got);
  g_autoptr(BurrowRemoteSse) lines = burrow_remote_sse_new (16, collect, got);
  g_autoptr(GError) error = NULL;
  static const char many[] = "data: 0123456789\ndata: 0123456789\n\n";
  static const char line[] = "data: 0123456789AB";

  g_assert_false (burrow_remote_sse_feed (sse, many, sizeof many - 1, &error));
  g_assert_error (error, BURROW_REMOTE_SSE_ERROR, BURROW_REMOTE_SSE_ERROR_TOO_LONG);
  g_clear_error (&error);
  /* A line without its end, fed in pieces, is bounded too. */
  g_assert_true (burrow_remote_sse_feed (lines, line, 10, NULL));
  g_assert_false (burrow_remote_sse_feed (lines, line + 10, sizeof line - 11, &error));
  g_assert_error (error, BURROW_REMOTE_SSE_ERROR, BURROW_REMOTE_SSE_ERROR_TOO_LONG);
  g_assert_cmpuint (got->len, ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/remote-sse/whole", test_whole);
  g_test_add_func ("/remote-sse/every-cut", test_every_cut);
  g_test_add_func ("/remote-sse/bytewise", test_bytewise);
  g_test_add_func ("/remote-sse/ends-clean", test_ends_clean);
  g_test_add_func ("/remote-sse/stop", test_stop);
  g_test_add_func ("/remote-sse/too-long", test_too_long);
  return g_test_run ();
}
