/* burrow-cli chat --remote against a real burrow-cli serve: the same greedy reply as the
 * local chat gives, a key from --api-key-file (and a wrong one refused), a server killed
 * mid-reply (the text so far kept, the error said, exit status 1) and Ctrl+C stopping a
 * reply while the chat goes on. */
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

#include "tmp-dir.h"
#include "remote-server.h"

typedef struct {
  char *out;
  char *err;
  int status;
} Run;

static void
run_clear (Run *r)
{
  g_free (r->out);
  g_free (r->err);
}

static void
run_chat (const char *const *argv,
          const char         *input,
          Run                *r)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                                G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                                G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);

  g_assert_no_error (error);
  g_subprocess_communicate_utf8 (p, input, NULL, &r->out, &r->err, &error);
  g_assert_no_error (error);
  r->status = g_subprocess_get_exit_status (p);
}

static void
test_same_as_local (void)
{
  RemoteServer *server = remote_server_start (BURROW_CLI, NULL, NULL);
  const char *local[] = { BURROW_CLI, "chat", "-q", "--temperature", "0", "-n", "40", NULL };
  const char *remote[] = { BURROW_CLI, "chat", "-q", "--temperature", "0", "-n", "40",
                           "--remote", server->url, NULL };
  Run l = { 0 }, r = { 0 };

  run_chat (local, "Hello\nTell me more.\n", &l);
  run_chat (remote, "Hello\nTell me more.\n", &r);
  g_assert_cmpint (l.status, ==, 0);
  g_assert_cmpint (r.status, ==, 0);
  g_assert_cmpuint (strlen (r.out), >, 4);
  g_assert_cmpstr (r.out, ==, l.out);
  run_clear (&l);
  run_clear (&r);
  remote_server_stop (server);
}

static void
test_key_file (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("burrow-remote-cli-XXXXXX");
  g_autofree char *key = g_build_filename (dir, "key", NULL);
  g_autofree char *wrong = g_build_filename (dir, "wrong", NULL);
  const char *const args[] = { "--api-key-file", key, NULL };
  RemoteServer *server;
  Run ok = { 0 }, bad = { 0 }, none = { 0 };

  g_assert_true (g_file_set_contents (key, "open-sesame\n", -1, NULL));
  g_assert_true (g_file_set_contents (wrong, "open-barley\n", -1, NULL));
  server = remote_server_start (BURROW_CLI, args, NULL);
  {
    const char *with_key[] = { BURROW_CLI, "chat", "--remote", server->url, "--model",
                               "demo-model", "--api-key-file", key, NULL };
    const char *with_wrong[] = { BURROW_CLI, "chat", "--remote", server->url,
                                 "--api-key-file", wrong, NULL };
    const char *without[] = { BURROW_CLI, "chat", "--remote", server->url, NULL };

    run_chat (with_key, "Hello\n", &ok);
    run_chat (with_wrong, "Hello\n", &bad);
    run_chat (without, "Hello\n", &none);
  }
  g_assert_cmpint (ok.status, ==, 0);
  g_assert_nonnull (strstr (ok.err, "tokens"));
  g_assert_cmpint (bad.status, ==, 1);
  g_assert_nonnull (strstr (bad.err, "did not accept the API key (401)"));
  g_assert_null (strstr (bad.err, "barley"));
  g_assert_cmpint (none.status, ==, 1);
  g_assert_nonnull (strstr (none.err, "needs an API key (401)"));
  run_clear (&ok);
  run_clear (&bad);
  run_clear (&none);
  remote_server_stop (server);
  g_unlink (key);
  g_unlink (wrong);
  g_rmdir (dir);
}

/* Starts a chat whose first message gets a long, paced reply; returns when its first
 * bytes are on stdout, with what came so far in @so_far. */
static GSubprocess *
start_long_chat (RemoteServer  *server,
                 GString       *so_far)
{
  const char *argv[] = { BURROW_CLI, "chat", "-n", "300", "--remote", server->url, NULL };
  g_autoptr(GError) error = NULL;
  GSubprocess *p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                      G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                      G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  GOutputStream *in = g_subprocess_get_stdin_pipe (p);
  char buf[256];
  gssize n;

  g_assert_no_error (error);
  g_assert_true (g_output_stream_write_all (in, "Hello\n", 6, NULL, NULL, &error));
  n = g_input_stream_read (g_subprocess_get_stdout_pipe (p), buf, sizeof buf, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpint (n, >, 0);
  g_string_append_len (so_far, buf, n);
  return p;
}

static void
test_server_killed (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=40", "BURROW_TEST_IGNORE_EOS=1", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autoptr(GString) so_far = g_string_new (NULL);
  g_autoptr(GSubprocess) p = start_long_chat (server, so_far);
  g_autoptr(GError) error = NULL;
  g_autofree char *out = NULL, *err = NULL;

  remote_server_signal (server, SIGKILL);
  g_subprocess_communicate_utf8 (p, NULL, NULL, &out, &err, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 1);
  g_assert_nonnull (strstr (err, "before the reply was complete"));
  g_assert_nonnull (strstr (err, "| error]"));
  /* The partial reply was printed (and more may have come before the kill landed). */
  g_assert_cmpuint (so_far->len, >, 0);
  remote_server_stop (server);
}

static void
test_interrupt (void)
{
  const char *const env[] = { "BURROW_TEST_TOKEN_DELAY_MS=40", "BURROW_TEST_IGNORE_EOS=1", NULL };
  RemoteServer *server = remote_server_start (BURROW_CLI_TESTING, NULL, env);
  g_autoptr(GString) so_far = g_string_new (NULL);
  g_autoptr(GSubprocess) p = start_long_chat (server, so_far);
  g_autoptr(GError) error = NULL;
  g_autofree char *out = NULL, *err = NULL;
  gint64 start = g_get_monotonic_time ();

  g_subprocess_send_signal (p, SIGINT);
  g_subprocess_communicate_utf8 (p, NULL, NULL, &out, &err, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
  g_assert_nonnull (strstr (err, "[stopped]"));
  /* 300 tokens of 40 ms would take 12 s. */
  g_assert_cmpint (g_get_monotonic_time () - start, <, 6 * G_USEC_PER_SEC);
  remote_server_stop (server);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/remote-cli/same-as-local", test_same_as_local);
  g_test_add_func ("/remote-cli/key-file", test_key_file);
  g_test_add_func ("/remote-cli/server-killed", test_server_killed);
  g_test_add_func ("/remote-cli/interrupt", test_interrupt);
  return g_test_run ();
}
