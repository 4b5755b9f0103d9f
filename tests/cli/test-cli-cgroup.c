/* At its defaults burrow-cli runs a checkpoint larger than its memory cgroup's limit without
 * being OOM-killed: the expert cache's budget comes from the cgroup, not from the machine's
 * MemAvailable.
 *
 * /cli/cgroup/fake-*: burrow-cli-testing reads its limits from a fake /proc and /sys
 * (BURROW_TEST_MEM_ROOT) with a v1 and a v2 layout, so the budget's dependence on the
 * cgroup is checked everywhere. /cli/cgroup/defaults-under-limit: the real thing, in a real
 * v1 memory group; needs root and a v1 hierarchy, skips otherwise and says why. */
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
  g_autofree char *procs = in_group ? g_build_filename (group_dir, "cgroup.procs", NULL) : NULL;
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

/* ---- fake trees ---- */

#define MIB ((guint64) 1 << 20)

static char *small_model;   /* 2 MoE layers of 64 experts of 0.75 MiB: 96 MiB of experts */

static void
put (const char *root, const char *path, const char *text)
{
  g_autofree char *full = g_strconcat (root, path, NULL);
  g_autofree char *dir = g_path_get_dirname (full);
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_true (g_file_set_contents (full, text, -1, NULL));
}

static void
put_u64 (const char *root, const char *path, guint64 v)
{
  g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT "\n", v);
  put (root, path, text);
}

/* A /proc with 64 GiB available, no address-space limit and no cgroup yet. */
static char *
fake_root (void)
{
  char *root = g_dir_make_tmp ("bw-cgroup-root-XXXXXX", NULL);
  g_assert_nonnull (root);
  put (root, "/proc/meminfo", "MemTotal:       80000000 kB\nMemAvailable:   67108864 kB\n");
  put (root, "/proc/self/limits",
       "Limit                     Soft Limit           Hard Limit           Units     \n"
       "Max address space         unlimited            unlimited            bytes     \n");
  put (root, "/proc/self/status", "Name:\tburrow-cli\nVmSize:\t 1048576 kB\n");
  return root;
}

static void
remove_tree (const char *path)
{
  g_autofree char *rm = g_strdup_printf ("rm -rf '%s'", path);
  g_assert_true (g_spawn_command_line_sync (rm, NULL, NULL, NULL, NULL));
}

static const char *
model_for_fakes (void)
{
  if (small_model != NULL)
    return small_model;
  g_autofree char *tmp = g_dir_make_tmp ("bw-cgroup-model-XXXXXX", NULL);
  small_model = g_build_filename (tmp, "model", NULL);
  const char *synth[] = { "synth", "--family", "kimi_linear", "--out", small_model, "--layers",
                          "3", "--hidden", "512", "--moe-inter", "256", "--experts", "64",
                          "--vocab", "4096", "--heads", "4", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  int status = run_cli (synth, FALSE, &out, &err);
  g_test_message ("synth: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, &error));
  return small_model;
}

/* The expert cache's budget (MiB) burrow-cli-testing picks at its defaults with its limits
 * read under root. */
static double
budget_under (const char *root)
{
  const char *run[] = { "run", "--model", model_for_fakes (), "--ids", "1,2,3,4", "--max-tokens",
                        "2", "--threads", "1", "--stats", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  g_setenv ("BURROW_TEST_MEM_ROOT", root, TRUE);
  int status = run_cli (run, FALSE, &out, &err);
  g_unsetenv ("BURROW_TEST_MEM_ROOT");
  g_test_message ("run: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, &error));
  const char *line = strstr (err, "ram budget ");
  g_assert_nonnull (line);
  return g_ascii_strtod (line + strlen ("ram budget "), NULL);
}

/* Without a cgroup the budget is every expert (the machine has room for all of them). */
static double
budget_without_cgroup (void)
{
  static double budget;
  if (budget == 0)
    {
      g_autofree char *root = fake_root ();
      budget = budget_under (root);
      remove_tree (root);
    }
  return budget;
}

/* v1: the memory hierarchy at /sys/fs/cgroup/memory, the process in a child group whose
 * parent holds an 80 MiB limit with 16 MiB charged: 64 MiB of room. */
static void
test_fake_v1 (void)
{
  g_autofree char *root = fake_root ();
  put (root, "/proc/self/cgroup", "9:name=systemd:/\n4:memory:/jobs/burrow\n1:cpu:/\n");
  put (root, "/proc/self/mountinfo",
       "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
       "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
  put (root, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put_u64 (root, "/sys/fs/cgroup/memory/jobs/memory.limit_in_bytes", 80 * MIB);
  put_u64 (root, "/sys/fs/cgroup/memory/jobs/memory.usage_in_bytes", 16 * MIB);
  put (root, "/sys/fs/cgroup/memory/jobs/burrow/memory.limit_in_bytes", "9223372036854771712\n");
  double free_budget = budget_without_cgroup ();
  double budget = budget_under (root);
  g_test_message ("budget %.1f MiB under v1 (64 MiB of room), %.1f MiB without", budget,
                  free_budget);
  g_assert_cmpfloat (free_budget, >, 64.0);
  g_assert_cmpfloat (budget, >, 0.0);
  g_assert_cmpfloat (budget, <=, 64.0);
  remove_tree (root);
}

/* v2 in a container: memory.high (48 MiB) under memory.max, 16 MiB charged of which 8 MiB
 * page cache: 40 MiB of room. */
static void
test_fake_v2 (void)
{
  g_autofree char *root = fake_root ();
  put (root, "/proc/self/cgroup", "0::/user.slice/burrow.scope\n");
  put (root, "/proc/self/mountinfo",
       "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
       "41 31 0:38 /user.slice /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw\n");
  put (root, "/sys/fs/cgroup/memory.max", "max\n");
  put_u64 (root, "/sys/fs/cgroup/burrow.scope/memory.max", 256 * MIB);
  put_u64 (root, "/sys/fs/cgroup/burrow.scope/memory.high", 48 * MIB);
  put_u64 (root, "/sys/fs/cgroup/burrow.scope/memory.current", 16 * MIB);
  put (root, "/sys/fs/cgroup/burrow.scope/memory.stat", "anon 8388608\nfile 8388608\n");
  double free_budget = budget_without_cgroup ();
  double budget = budget_under (root);
  g_test_message ("budget %.1f MiB under v2 (40 MiB of room), %.1f MiB without", budget,
                  free_budget);
  g_assert_cmpfloat (budget, >, 0.0);
  g_assert_cmpfloat (budget, <=, 40.0);
  g_assert_cmpfloat (budget, <, free_budget);
  remove_tree (root);
}

/* A number from burrow-cli inspect --json's output. */
static guint64
json_number (const char *json, const char *key)
{
  g_autofree char *quoted = g_strdup_printf ("\"%s\" : ", key);
  const char *p = strstr (json, quoted);
  g_assert_nonnull (p);
  return g_ascii_strtoull (p + strlen (quoted), NULL, 10);
}

/* stderr of run --stats with the limits read under root. */
static char *
run_stats_under (const char *root)
{
  const char *run[] = { "run", "--model", model_for_fakes (), "--ids", "1,2,3,4", "--max-tokens",
                        "2", "--threads", "1", "--stats", NULL };
  char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  g_setenv ("BURROW_TEST_MEM_ROOT", root, TRUE);
  int status = run_cli (run, FALSE, &out, &err);
  g_unsetenv ("BURROW_TEST_MEM_ROOT");
  g_free (out);
  g_test_message ("run: %s", err);
  g_assert_true (g_spawn_check_wait_status (status, &error));
  return err;
}

static guint
count (const char *text, const char *what)
{
  guint n = 0;
  for (const char *p = text; (p = strstr (p, what)) != NULL; p++)
    n++;
  return n;
}

/* --dense-bits auto (the default): with memory for the int8 dense part and two tokens'
 * experts, not for the stored one and that cache, the dense part is held as int8 and the
 * command says so once; with plenty of memory it stays as stored and nothing is said. */
static void
test_fake_dense_auto (void)
{
  const char *inspect[] = { "inspect", model_for_fakes (), "--json", NULL };
  g_autofree char *json = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_spawn_check_wait_status (run_cli (inspect, FALSE, &json, &err), &error));
  guint64 stored = json_number (json, "resident_bytes");
  guint64 q8 = json_number (json, "resident_bytes_int8");
  guint64 useful = MIN (2 * json_number (json, "read_per_token"),
                        json_number (json, "expert_bytes"));
  /* the default budget out of a small room is about half of what the dense part leaves */
  guint64 room = q8 + 2 * useful + (stored - q8) / 2;

  g_autofree char *small = fake_root ();
  g_autofree char *meminfo = g_strdup_printf ("MemTotal: 80000000 kB\nMemAvailable: %"
                                              G_GUINT64_FORMAT " kB\n", room / 1024);
  put (small, "/proc/meminfo", meminfo);
  g_autofree char *err_small = run_stats_under (small);
  g_assert_cmpuint (count (err_small, "so it is held as int8"), ==, 1);
  g_assert_nonnull (strstr (err_small, "(int8, chosen for the expert cache)"));
  remove_tree (small);

  g_autofree char *big = fake_root ();
  g_autofree char *err_big = run_stats_under (big);
  g_assert_cmpuint (count (err_big, "held as int8"), ==, 0);
  g_assert_nonnull (strstr (err_big, "(as stored)"));
  remove_tree (big);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* the small rooms make --dense-bits auto requantise: its cache goes here, not to the
   * user's */
  g_autofree char *cache = g_dir_make_tmp ("bw-cgroup-cache-XXXXXX", NULL);
  g_assert_nonnull (cache);
  g_setenv ("XDG_CACHE_HOME", cache, TRUE);
  g_test_add_func ("/cli/cgroup/fake-v1", test_fake_v1);
  g_test_add_func ("/cli/cgroup/fake-v2", test_fake_v2);
  g_test_add_func ("/cli/cgroup/fake-dense-auto", test_fake_dense_auto);
  g_test_add_func ("/cli/cgroup/defaults-under-limit", test_defaults_under_limit);
  int rc = g_test_run ();
  remove_tree (cache);
  if (group_dir != NULL)
    g_rmdir (group_dir);
  if (small_model != NULL)
    {
      g_autofree char *tmp = g_path_get_dirname (small_model);
      remove_tree (tmp);
    }
  return rc;
}
