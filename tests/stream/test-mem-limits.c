/* The memory limits reader against fake /proc and /sys trees: MemAvailable, cgroup v1 and
 * v2 limits up the hierarchy, memory.high, reclaimable file pages, RLIMIT_AS. */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "tmp-dir.h"
#include "stream/mem-limits.h"

#define GIB (1ull << 30)
#define MIB (1ull << 20)

static void
put (const char *root, const char *path, const char *text)
{
  g_autofree char *full = g_strconcat (root, path, NULL);
  g_autofree char *dir = g_path_get_dirname (full);
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_true (g_file_set_contents (full, text, -1, &error));
}

static void
put_u64 (const char *root, const char *path, guint64 v)
{
  g_autofree char *text = g_strdup_printf ("%" G_GUINT64_FORMAT "\n", v);
  put (root, path, text);
}

static char *
fake_root (void)
{
  g_autoptr (GError) error = NULL;
  char *root = bw_test_tmp_dir ("bw-memlim-XXXXXX");
  g_assert_no_error (error);
  put (root, "/proc/meminfo",
       "MemTotal:       24000000 kB\nMemFree:         1000000 kB\n"
       "MemAvailable:   20971520 kB\nBuffers:            0 kB\n");   /* 20 GiB */
  put (root, "/proc/self/limits",
       "Limit                     Soft Limit           Hard Limit           Units     \n"
       "Max address space         unlimited            unlimited            bytes     \n");
  put (root, "/proc/self/status", "Name:\ttest\nVmPeak:\t 100 kB\nVmSize:\t 2097152 kB\n");
  return root;
}

static void
remove_tree (const char *path)
{
  g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
  const char *name;
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      if (g_file_test (child, G_FILE_TEST_IS_DIR))
        remove_tree (child);
      else
        g_remove (child);
    }
  g_rmdir (path);
}

static void
test_no_cgroup (void)
{
  g_autofree char *root = fake_root ();
  BwMemLimits m;
  bw_mem_limits_read (root, &m);
  g_assert_cmpuint (m.mem_available, ==, 20 * GIB);
  g_assert_cmpuint (m.cgroup_limit, ==, 0);
  g_assert_cmpuint (m.as_limit, ==, 0);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 20 * GIB);
  remove_tree (root);
}

/* v1 as on this project's machines: the memory hierarchy mounted at /sys/fs/cgroup/memory,
 * the process in a child whose parent holds the limit. */
static void
test_v1_parent_limit (void)
{
  g_autofree char *root = fake_root ();
  put (root, "/proc/self/cgroup", "9:name=systemd:/\n4:memory:/slice/job\n1:cpu:/\n0::/\n");
  put (root, "/proc/self/mountinfo",
       "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
       "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
       "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
  put (root, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put (root, "/sys/fs/cgroup/memory/slice/memory.limit_in_bytes", "9223372036854771712\n");
  put_u64 (root, "/sys/fs/cgroup/memory/slice/job/memory.limit_in_bytes", 8 * GIB);
  /* 5 GiB charged, of which 2 GiB page cache that reclaim gives back. */
  put_u64 (root, "/sys/fs/cgroup/memory/slice/job/memory.usage_in_bytes", 5 * GIB);
  put (root, "/sys/fs/cgroup/memory/slice/job/memory.stat",
       "cache 2147483648\nrss 3221225472\ninactive_file 1\nactive_file 1\n"
       "total_inactive_file 1073741824\ntotal_active_file 1073741824\n");
  BwMemLimits m;
  bw_mem_limits_read (root, &m);
  g_assert_cmpuint (m.cgroup_limit, ==, 8 * GIB);
  g_assert_cmpuint (m.cgroup_room, ==, 5 * GIB);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 5 * GIB);

  /* A tighter ancestor wins. */
  put_u64 (root, "/sys/fs/cgroup/memory/slice/memory.limit_in_bytes", 4 * GIB);
  put_u64 (root, "/sys/fs/cgroup/memory/slice/memory.usage_in_bytes", 3 * GIB);
  put (root, "/sys/fs/cgroup/memory/slice/memory.stat", "total_inactive_file 0\n");
  bw_mem_limits_read (root, &m);
  g_assert_cmpuint (m.cgroup_limit, ==, 4 * GIB);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 1 * GIB);
  remove_tree (root);
}

/* v2 inside a container: the mount's root is the container's cgroup, /proc/self/cgroup
 * names the full path; memory.high below memory.max counts. */
static void
test_v2_high_and_mount_root (void)
{
  g_autofree char *root = fake_root ();
  put (root, "/proc/self/cgroup", "0::/user.slice/app.scope\n");
  put (root, "/proc/self/mountinfo",
       "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
       "41 31 0:38 /user.slice /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw\n");
  put (root, "/sys/fs/cgroup/memory.max", "max\n");
  put (root, "/sys/fs/cgroup/app.scope/memory.max", "7785676800\n");   /* 7.25 GiB */
  put (root, "/sys/fs/cgroup/app.scope/memory.high", "max\n");
  put_u64 (root, "/sys/fs/cgroup/app.scope/memory.current", 2 * GIB);
  put (root, "/sys/fs/cgroup/app.scope/memory.stat",
       "anon 1073741824\nfile 1073741824\nfile_mapped 5\n");
  BwMemLimits m;
  bw_mem_limits_read (root, &m);
  g_assert_cmpuint (m.cgroup_limit, ==, 7785676800ull);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 7785676800ull - GIB);

  put_u64 (root, "/sys/fs/cgroup/app.scope/memory.high", 3 * GIB);
  bw_mem_limits_read (root, &m);
  g_assert_cmpuint (m.cgroup_limit, ==, 3 * GIB);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 2 * GIB);
  remove_tree (root);
}

static void
test_rlimit_as (void)
{
  g_autofree char *root = fake_root ();
  put (root, "/proc/self/limits",
       "Limit                     Soft Limit           Hard Limit           Units     \n"
       "Max address space         6442450944           unlimited            bytes     \n");
  BwMemLimits m;
  bw_mem_limits_read (root, &m);
  g_assert_cmpuint (m.as_limit, ==, 6 * GIB);
  g_assert_cmpuint (m.as_used, ==, 2 * GIB);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 4 * GIB);
  g_autofree char *text = bw_mem_limits_describe (&m);
  g_assert_nonnull (strstr (text, "room 4.0 GiB"));
  remove_tree (root);
}

/* Nothing readable: everything unknown, no room claimed. */
static void
test_missing_files (void)
{
  BwMemLimits m;
  bw_mem_limits_read ("/nonexistent-bw-root", &m);
  g_assert_cmpuint (bw_mem_limits_room (&m), ==, 0);
}

/* The real machine: some room, never more than MemAvailable. */
static void
test_real (void)
{
  BwMemLimits m;
  bw_mem_limits_read (NULL, &m);
  g_assert_cmpuint (m.mem_available, >, 0);
  g_assert_cmpuint (bw_mem_limits_room (&m), >, 0);
  g_assert_cmpuint (bw_mem_limits_room (&m), <=, m.mem_available);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/mem-limits/no-cgroup", test_no_cgroup);
  g_test_add_func ("/stream/mem-limits/v1-parent-limit", test_v1_parent_limit);
  g_test_add_func ("/stream/mem-limits/v2-high-mount-root", test_v2_high_and_mount_root);
  g_test_add_func ("/stream/mem-limits/rlimit-as", test_rlimit_as);
  g_test_add_func ("/stream/mem-limits/missing-files", test_missing_files);
  g_test_add_func ("/stream/mem-limits/real", test_real);
  return g_test_run ();
}
