/* burrow-cli chat driven through pipes: replies and stats footers per line of input, a
 * --session reopened by a new process continues exactly like the live one, a damaged
 * session is a warning, and SIGINT stops the reply (twice) without ending the chat, but
 * quits at the prompt. */
#include <gio/gio.h>
#include <signal.h>
#include <string.h>

#include "run-fixture.h"

static GSubprocess *
spawn (const char *dir, const char *session, const char *const *extra, GError **error)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *head[] = { BURROW_CLI, "chat", "--model", dir, "--threads", "2" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (argv, (char *) head[i]);
  if (session)
    {
      g_ptr_array_add (argv, (char *) "--session");
      g_ptr_array_add (argv, (char *) session);
    }
  for (gsize i = 0; extra && extra[i]; i++)
    g_ptr_array_add (argv, (char *) extra[i]);
  g_ptr_array_add (argv, NULL);
  return g_subprocess_newv ((const char *const *) argv->pdata,
                            G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE
                              | G_SUBPROCESS_FLAGS_STDERR_PIPE, error);
}

/* Runs chat over the input lines; returns the exit status. */
static int
chat (const char *dir, const char *session, const char *input, const char *const *extra,
      char **out, char **err)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = spawn (dir, session, extra, &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate_utf8 (p, input, NULL, out, err, &error));
  g_assert_no_error (error);
  g_test_message ("stderr: %s", *err);
  return g_subprocess_get_exit_status (p);
}

static int
count (const char *haystack, const char *needle)
{
  int n = 0;
  for (const char *at = haystack; (at = strstr (at, needle)) != NULL; at++)
    n++;
  return n;
}

static const char *const sampled[] = { "--temperature", "0.8", "--seed", "3", "-n", "24",
                                       "--ignore-eos", NULL };

static void
test_pipe_and_session (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autofree char *live = g_build_filename (dir, "live.session", NULL);
  g_autofree char *split = g_build_filename (dir, "split.session", NULL);
  g_autofree char *out1 = NULL, *err1 = NULL, *out2 = NULL, *err2 = NULL, *out3 = NULL,
                  *err3 = NULL;

  g_assert_cmpint (chat (dir, live, "hello there\nwhere is the ring?\n\ngo on\n", sampled,
                         &out1, &err1), ==, 0);
  g_assert_cmpint (count (err1, " tok/s, TTFT "), ==, 3);   /* the empty line is skipped */
  g_assert_cmpint (count (err1, "| length limit]"), ==, 3);
  g_assert_cmpint (count (err1, "(0 cached"), ==, 1);

  g_assert_cmpint (chat (dir, split, "hello there\nwhere is the ring?\n", sampled, &out2,
                         &err2), ==, 0);
  g_assert_cmpint (chat (dir, split, "go on\n", sampled, &out3, &err3), ==, 0);
  g_assert_nonnull (strstr (err3, "(resumed 4 messages"));
  g_assert_null (strstr (err3, "(0 cached"));
  g_assert_null (strstr (err3, "warning"));
  /* The live run's output is the first process's, then the second's. */
  g_autofree char *joined = g_strconcat (out2, out3, NULL);
  g_assert_cmpstr (out1, ==, joined);
  g_assert_cmpuint (strlen (out3), >, 1);
  run_fixture_remove (dir);
}

static void
test_damaged_session_warns (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autofree char *path = g_build_filename (dir, "bad.session", NULL);
  g_autofree char *out = NULL, *err = NULL;
  g_assert_true (g_file_set_contents (path, "BURROWSS but not really a session", -1, NULL));
  const char *extra[] = { "--temperature", "0", "-n", "4", "--system", "be brief", NULL };
  g_assert_cmpint (chat (dir, path, "hi\n", extra, &out, &err), ==, 0);
  g_assert_nonnull (strstr (err, "warning"));
  g_assert_nonnull (strstr (err, "damaged"));
  g_assert_cmpint (count (err, " tok/s, TTFT "), ==, 1);
  g_autofree char *out2 = NULL, *err2 = NULL;
  g_assert_cmpint (chat (dir, path, "and?\n", extra, &out2, &err2), ==, 0);
  g_assert_nonnull (strstr (err2, "(resumed 3 messages"));
  g_assert_nonnull (strstr (err2, "--system is ignored"));
  run_fixture_remove (dir);
}

/* stdout drained on a thread so the child never blocks on a full pipe. */
typedef struct {
  GInputStream *in;
  GMutex lock;
  gsize bytes;
} Drain;

static gpointer
drain (gpointer data)
{
  Drain *d = data;
  char buf[4096];
  gssize n;
  while ((n = g_input_stream_read (d->in, buf, sizeof buf, NULL, NULL)) > 0)
    {
      g_mutex_lock (&d->lock);
      d->bytes += (gsize) n;
      g_mutex_unlock (&d->lock);
    }
  return NULL;
}

static void
wait_for_bytes (Drain *d, gsize at_least)
{
  for (int i = 0; i < 30000; i++)
    {
      g_mutex_lock (&d->lock);
      gsize now = d->bytes;
      g_mutex_unlock (&d->lock);
      if (now >= at_least)
        return;
      g_usleep (1000);
    }
  g_assert_not_reached ();
}

/* Reads stderr lines until one starts with prefix. */
static void
wait_for_line (GDataInputStream *err, const char *prefix)
{
  for (;;)
    {
      g_autofree char *line = g_data_input_stream_read_line_utf8 (err, NULL, NULL, NULL);
      g_assert_nonnull (line);
      if (g_str_has_prefix (line, prefix))
        return;
    }
}

static gsize
bytes_now (Drain *d)
{
  g_mutex_lock (&d->lock);
  gsize n = d->bytes;
  g_mutex_unlock (&d->lock);
  return n;
}

static void
test_sigint (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autofree char *path = g_build_filename (dir, "s.session", NULL);
  const char *extra[] = { "--temperature", "1", "--seed", "1", "-n", "100000000",
                          "--ignore-eos", NULL };
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = spawn (dir, path, extra, &error);
  g_assert_no_error (error);
  GOutputStream *in = g_subprocess_get_stdin_pipe (p);
  g_autoptr (GDataInputStream) err = g_data_input_stream_new (g_subprocess_get_stderr_pipe (p));
  Drain d = { g_subprocess_get_stdout_pipe (p) };
  g_mutex_init (&d.lock);
  GThread *thread = g_thread_new ("drain", drain, &d);

  g_assert_true (g_output_stream_write_all (in, "hello\n", 6, NULL, NULL, &error));
  wait_for_bytes (&d, 50);
  g_subprocess_send_signal (p, SIGINT);
  wait_for_line (err, "[stopped]");
  wait_for_line (err, "[");                       /* the footer */
  gsize before = bytes_now (&d);
  g_assert_true (g_output_stream_write_all (in, "go on\n", 6, NULL, NULL, &error));
  wait_for_bytes (&d, before + 50);
  g_subprocess_send_signal (p, SIGINT);
  wait_for_line (err, "[stopped]");
  wait_for_line (err, "[");
  g_subprocess_send_signal (p, SIGINT);          /* at the prompt: quit */
  g_assert_true (g_subprocess_wait (p, NULL, &error));
  g_thread_join (thread);
  g_mutex_clear (&d.lock);
  g_assert_true (g_subprocess_get_if_exited (p));
  g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 130);

  /* Both stopped turns were kept. */
  g_autofree char *out2 = NULL, *err2 = NULL;
  const char *short_run[] = { "-n", "2", NULL };
  g_assert_cmpint (chat (dir, path, "thanks\n", short_run, &out2, &err2), ==, 0);
  g_assert_nonnull (strstr (err2, "(resumed 4 messages"));
  run_fixture_remove (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli-chat/pipe-and-session", test_pipe_and_session);
  g_test_add_func ("/cli-chat/damaged-session-warns", test_damaged_session_warns);
  g_test_add_func ("/cli-chat/sigint", test_sigint);
  return g_test_run ();
}
