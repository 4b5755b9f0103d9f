#include "tmp-dir.h"

#include <glib/gstdio.h>
#include <signal.h>
#include <unistd.h>

static GPtrArray *dirs;     /* the folders to remove, made by this process */
static pid_t owner;         /* a fork()ed child exiting removes nothing of its parent's */

void
bw_test_remove_tree (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK))
        bw_test_remove_tree (path);
      else
        g_unlink (path);
    }
  g_clear_pointer (&d, g_dir_close);
  g_rmdir (dir);
}

static void
remove_all (void)
{
  if (dirs == NULL || getpid () != owner)
    return;
  for (guint i = 0; i < dirs->len; i++)
    bw_test_remove_tree (dirs->pdata[i]);
}

static void
at_exit (void)
{
  remove_all ();
  g_clear_pointer (&dirs, g_ptr_array_unref);
}

/* The process is dying: the removal may allocate, which a test that crashed inside the
 * allocator would deadlock on; an assertion or a timeout is not such a case. */
static void
on_fatal_signal (int sig)
{
  remove_all ();
  signal (sig, SIG_DFL);
  raise (sig);
}

char *
bw_test_tmp_dir (const char *tmpl)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp (tmpl, &error);

  g_assert_no_error (error);
  if (dirs == NULL)
    {
      static const int signals[] = { SIGABRT, SIGTRAP, SIGTERM };
      dirs = g_ptr_array_new_with_free_func (g_free);
      owner = getpid ();
      atexit (at_exit);
      /* not over a handler already there (libFuzzer's, in the fuzz targets) */
      for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
        {
          struct sigaction old;
          if (sigaction (signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
            signal (signals[i], on_fatal_signal);
        }
    }
  g_ptr_array_add (dirs, g_strdup (dir));
  return dir;
}
