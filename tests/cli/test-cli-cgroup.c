/* At its defaults burrow-cli runs a checkpoint larger than its memory cgroup's limit without
 * being OOM-killed: the expert cache's budget comes from the cgroup, not from the machine's
 * MemAvailable. Needs a cgroup v1 memory hierarchy it may create a group in (root); skips
 * otherwise, and says why. */
#include <errno.h>
#include <gio/gio.h>
#include <stdio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define V1_MEMORY "/sys/fs/cgroup/memory"
#define LIMIT ((guint64) 320 << 20)

static char *group_dir;

static void
child_enter_group (gpointer data)
{
  const char *procs = data;
  char pid[32];
  int n = g_snprintf (pid, sizeof pid, "%d\n", (int) getpid ());
  FILE *f = fopen (procs, "w");
  if (f == NULL || fwrite (pid, 1, (size_t) n, f) != (size_t) n || fclose (f) != 0)
    _exit (99);
}

static gboolean
write_value (const char *dir, const char *name, const char *value)
{
  /* In place: cgroupfs takes no temporary file and rename. */
  g_autofree char *path = g_build_filename (dir, name, NULL);
  FILE *f = fopen (path, "w");
  if (f == NULL)
    return FALSE;
  gboolean ok = fputs (value, f) >= 0;
  return fclose (f) == 0 && ok;
}

static char *
read_value (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  char *text = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  return text;
}

/* Runs burrow-cli with args, in the group when in_group; returns its wait status. */
static int
run_cli (const char *const *args, gboolean in_group, char **out, char **err)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *procs = g_build_filename (group_dir, "cgroup.procs", NULL);
  int status = -1;
  g_ptr_array_add (argv, (char *) BURROW_CLI);
  for (int i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (char *) args[i]);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT,
                               in_group ? child_enter_group : NULL, procs, out, err, &status,
                               &error));
  g_assert_no_error (error);
  return status;
}

static void
test_defaults_under_limit (void)
{
  g_autofree char *tmp = g_dir_make_tmp ("bw-cgroup-XXXXXX", NULL);
  g_autofree char *model = g_build_filename (tmp, "model", NULL);
  g_autofree char *out = NULL, *err = NULL, *limit = NULL;
  g_autoptr (GError) error = NULL;
  int status;

  if (!g_file_test (V1_MEMORY "/memory.limit_in_bytes", G_FILE_TEST_EXISTS))
    {
      g_test_skip ("no cgroup v1 memory hierarchy at " V1_MEMORY);
      return;
    }
  group_dir = g_strdup_printf (V1_MEMORY "/burrow-test-%d", (int) getpid ());
  if (g_mkdir (group_dir, 0755) != 0)
    {
      g_autofree char *why = g_strdup_printf ("cannot create %s: %s", group_dir,
                                              g_strerror (errno));
      g_test_skip (why);
      return;
    }
  limit = g_strdup_printf ("%" G_GUINT64_FORMAT, LIMIT);
  g_assert_true (write_value (group_dir, "memory.limit_in_bytes", limit));

  /* Kimi Linear's format at small widths: 2 MoE layers of 96 experts of 3 MiB, 576 MiB of
   * experts beside 25 MiB of dense weights, 1.8x the limit. */
  const char *synth[] = { "synth", "--family", "kimi_linear", "--out", model, "--layers", "3",
                          "--hidden", "1024", "--moe-inter", "512", "--experts", "96",
                          "--vocab", "4096", "--heads", "4", NULL };
  status = run_cli (synth, FALSE, &out, &err);
  g_test_message ("synth: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, &error));
  g_clear_pointer (&out, g_free);
  g_clear_pointer (&err, g_free);

  const char *run[] = { "run", "--model", model, "--ids", "1,2,3,4,5,6,7,8", "--max-tokens",
                        "8", "--threads", "2", "--stats", NULL };
  status = run_cli (run, TRUE, &out, &err);
  g_test_message ("run: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, &error));
  g_assert_no_error (error);
  g_assert_nonnull (strstr (err, "ram budget"));

  g_autofree char *oom = read_value (group_dir, "memory.oom_control");
  g_test_message ("memory.oom_control: %s", oom);
  g_assert_null (strstr (oom, "oom_kill 1"));
  g_autofree char *peak = read_value (group_dir, "memory.max_usage_in_bytes");
  g_assert_cmpuint (g_ascii_strtoull (peak, NULL, 10), <=, LIMIT);

  g_assert_cmpint (g_rmdir (group_dir), ==, 0);
  g_clear_pointer (&group_dir, g_free);
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", tmp);
  g_assert_true (g_spawn_command_line_sync (rm, NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli/cgroup/defaults-under-limit", test_defaults_under_limit);
  int rc = g_test_run ();
  if (group_dir != NULL)
    g_rmdir (group_dir);
  return rc;
}
