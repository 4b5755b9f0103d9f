/* kill -9 at random moments while `burrow-cli chat --session` answers and saves, in a loop
 * of KILLS processes: after every kill the session file opens without a warning, holds
 * every message whose save completed (each stats footer on stderr comes after its turn's
 * save) and at most the turn that was being saved, and is never half-written. */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "burrow-engine.h"
#include "run-fixture.h"

#define KILLS 200
#define LINES 6

static GSubprocess *
spawn (const char *dir, const char *session, GError **error)
{
  return g_subprocess_new (G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_SILENCE
                             | G_SUBPROCESS_FLAGS_STDERR_PIPE, error,
                           BURROW_CLI, "chat", "--model", dir, "--threads", "1", "--session",
                           session, "-n", "3", "--ignore-eos", NULL);
}

static int
count (const char *haystack, const char *needle)
{
  int n = 0;
  for (const char *at = haystack; (at = strstr (at, needle)) != NULL; at++)
    n++;
  return n;
}

/* Feeds LINES messages, kills the process after delay_us (or lets it finish when negative),
 * and returns how many turns it reported saved. */
static int
run_once (const char *dir, const char *session, gint64 delay_us)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = spawn (dir, session, &error);
  g_autoptr (GString) input = g_string_new (NULL);
  g_autoptr (GByteArray) err = g_byte_array_new ();
  guint8 buf[4096];
  gssize n;

  g_assert_no_error (error);
  for (int i = 0; i < LINES; i++)
    g_string_append_printf (input, "line %d of the chat.\n", i);
  g_assert_true (g_output_stream_write_all (g_subprocess_get_stdin_pipe (p), input->str,
                                            input->len, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_output_stream_close (g_subprocess_get_stdin_pipe (p), NULL, &error));
  if (delay_us >= 0)
    {
      g_usleep ((gulong) delay_us);
      g_subprocess_force_exit (p);
    }
  g_assert_true (g_subprocess_wait (p, NULL, &error));
  while ((n = g_input_stream_read (g_subprocess_get_stderr_pipe (p), buf, sizeof buf, NULL,
                                   &error)) > 0)
    g_byte_array_append (err, buf, (guint) n);
  g_byte_array_append (err, (const guint8 *) "", 1);
  g_assert_no_error (error);
  g_assert_null (strstr ((const char *) err->data, "warning"));
  if (delay_us < 0)
    g_assert_cmpint (g_subprocess_get_exit_status (p), ==, 0);
  return count ((const char *) err->data, " tok/s, TTFT ");
}

/* Messages in the file, opened by the engine; a missing file holds none. */
static guint
messages_in (BurrowEngine *engine, const char *session)
{
  g_autoptr (BurrowConversation) conv = burrow_conversation_new (engine);
  g_autoptr (GError) error = NULL;
  if (!burrow_conversation_open_session (conv, session, NULL, &error))
    g_error ("after a kill: %s", error->message);
  return burrow_conversation_get_n_messages (conv);
}

static void
test_kill_loop (void)
{
  g_autofree char *dir = run_fixture_make ("kimi_linear");
  g_autofree char *sdir = bw_test_tmp_dir ("burrow-kill-XXXXXX");
  g_autofree char *session = g_build_filename (sdir, "chat.session", NULL);
  BurrowEngineOptions o;
  g_autoptr (GError) error = NULL;
  gint64 t0, full;
  guint before = 0;
  int saved_total = 0, mid_save = 0;

  burrow_engine_options_init (&o);
  o.threads = 1;
  g_autoptr (BurrowEngine) engine = burrow_engine_load (dir, &o, NULL, NULL, NULL, &error);
  g_assert_no_error (error);

  /* One uninterrupted run sets the time scale (it differs a lot under sanitizers). */
  t0 = g_get_monotonic_time ();
  g_assert_cmpint (run_once (dir, session, -1), ==, LINES);
  full = g_get_monotonic_time () - t0;
  g_assert_cmpuint (messages_in (engine, session), ==, 2 * LINES);
  g_test_message ("an uninterrupted run of %d turns takes %.3f s", LINES, full / 1e6);

  for (int k = 0; k < KILLS; k++)
    {
      /* Start again now and then, so that the file stays small. */
      if (k % 50 == 0)
        {
          g_unlink (session);
          before = 0;
        }
      int saved = run_once (dir, session, g_test_rand_int_range (0, (gint32) full));
      guint after = messages_in (engine, session);
      /* Every reported save is there; beyond them at most the one that was being saved. */
      g_assert_cmpuint (after, >=, before + 2 * (guint) saved);
      g_assert_cmpuint (after, <=, before + 2 * (guint) saved + 2);
      g_assert_cmpuint (after % 2, ==, 0);
      mid_save += after == before + 2 * (guint) saved + 2;
      saved_total += saved;
      before = after;
    }
  g_test_message ("%d kills, %d saves reported before them, %d more completed unreported",
                  KILLS, saved_total, mid_save);
  g_assert_cmpint (saved_total, >, 0);

  g_autoptr (GDir) d = g_dir_open (sdir, 0, NULL);
  for (const char *name; (name = g_dir_read_name (d)) != NULL;)
    {
      g_autofree char *path = g_build_filename (sdir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (sdir);
  run_fixture_remove (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/kill-chat/kill-9-loop", test_kill_loop);
  return g_test_run ();
}
