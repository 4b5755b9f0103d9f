/* Reading the process's memory limits (see mem-limits.h). */
#include "stream/mem-limits.h"

#include <string.h>

/* cgroup v1 writes "no limit" as a page-rounded LONG_MAX; anything this large is none. */
#define NO_LIMIT ((guint64) 1 << 60)

static char *
read_text (const char *root, const char *path)
{
  g_autofree char *full = g_strconcat (root, path, NULL);
  char *text = NULL;
  if (!g_file_get_contents (full, &text, NULL, NULL))
    return NULL;
  return text;
}

/* The number after "key" at the start of a line of text, times mul; 0 when absent. */
static guint64
keyed_value (const char *text, const char *key, guint64 mul)
{
  gsize klen = strlen (key);
  for (const char *p = text; p != NULL && *p != '\0';)
    {
      if (strncmp (p, key, klen) == 0 && (p[klen] == ' ' || p[klen] == '\t' || p[klen] == ':'))
        {
          const char *v = p + klen + 1;
          while (*v == ' ' || *v == '\t')
            v++;
          return g_ascii_strtoull (v, NULL, 10) * mul;
        }
      p = strchr (p, '\n');
      p = p != NULL ? p + 1 : NULL;
    }
  return 0;
}

/* A limit file's value: a byte count, or "max"/absent/huge for none (0). */
static guint64
limit_file (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL) || g_str_has_prefix (text, "max"))
    return 0;
  guint64 v = g_ascii_strtoull (text, NULL, 10);
  return v >= NO_LIMIT ? 0 : v;
}

static guint64
number_file (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *text = NULL;
  return g_file_get_contents (path, &text, NULL, NULL) ? g_ascii_strtoull (text, NULL, 10) : 0;
}

/* The cgroup's page cache, which reclaim gives back before it fails a charge. */
static guint64
file_pages (const char *dir, gboolean v2)
{
  g_autofree char *path = g_build_filename (dir, "memory.stat", NULL);
  g_autofree char *stat = NULL;
  if (!g_file_get_contents (path, &stat, NULL, NULL))
    return 0;
  if (v2)
    return keyed_value (stat, "file", 1);
  guint64 total = keyed_value (stat, "total_inactive_file", 1)
                  + keyed_value (stat, "total_active_file", 1);
  return total > 0 ? total : keyed_value (stat, "inactive_file", 1)
                             + keyed_value (stat, "active_file", 1);
}

/* Takes one cgroup folder's limit into out. */
static void
take_level (const char *dir, gboolean v2, BwMemLimits *out)
{
  guint64 limit = v2 ? limit_file (dir, "memory.max") : limit_file (dir, "memory.limit_in_bytes");
  if (v2)
    {
      /* Above memory.high the kernel throttles and reclaims hard: treat it as the limit. */
      guint64 high = limit_file (dir, "memory.high");
      if (high > 0 && (limit == 0 || high < limit))
        limit = high;
    }
  if (limit == 0)
    return;
  guint64 used = number_file (dir, v2 ? "memory.current" : "memory.usage_in_bytes");
  guint64 cache = file_pages (dir, v2);
  guint64 pinned = used > cache ? used - cache : 0;
  guint64 room = limit > pinned ? limit - pinned : 0;
  if (out->cgroup_limit == 0 || limit < out->cgroup_limit)
    out->cgroup_limit = limit;
  if (out->cgroup_room == 0 || room < out->cgroup_room)
    out->cgroup_room = MAX (room, 1);
}

/* The mount point and root of the hierarchy (v2: fstype cgroup2; v1: a cgroup mount whose
 * super options name the memory controller), from /proc/self/mountinfo. */
static gboolean
find_mount (const char *mountinfo, gboolean v2, char **mount_point, char **mount_root)
{
  g_auto (GStrv) lines = g_strsplit (mountinfo, "\n", -1);
  for (int i = 0; lines[i] != NULL; i++)
    {
      g_auto (GStrv) f = g_strsplit (lines[i], " ", -1);
      int n = (int) g_strv_length (f), dash = -1;
      for (int j = 0; j < n; j++)
        if (strcmp (f[j], "-") == 0)
          {
            dash = j;
            break;
          }
      if (dash < 5 || dash + 1 >= n)
        continue;
      const char *fstype = f[dash + 1];
      const char *super = dash + 3 < n ? f[dash + 3] : "";
      gboolean match = v2 ? strcmp (fstype, "cgroup2") == 0
                          : strcmp (fstype, "cgroup") == 0
                              && (strstr (super, ",memory") != NULL
                                  || g_str_has_prefix (super, "memory"));
      if (!match)
        continue;
      *mount_root = g_strdup (f[3]);
      *mount_point = g_strdup (f[4]);
      return TRUE;
    }
  return FALSE;
}

/* Walks from the process's cgroup folder up to the hierarchy's mount point. */
static void
walk_hierarchy (const char *root, const char *cg_path, const char *mountinfo, gboolean v2,
                BwMemLimits *out)
{
  g_autofree char *mount_point = NULL, *mount_root = NULL;
  if (!find_mount (mountinfo, v2, &mount_point, &mount_root))
    return;
  const char *rel = cg_path;
  gsize rlen = strlen (mount_root);
  if (strcmp (mount_root, "/") != 0 && strncmp (cg_path, mount_root, rlen) == 0
      && (cg_path[rlen] == '/' || cg_path[rlen] == '\0'))
    rel = cg_path + rlen;
  /* A path outside the mount (another cgroup namespace) still has the mount's own limit. */
  g_autofree char *top = g_strconcat (root, mount_point, NULL);
  g_autofree char *dir = g_build_filename (top, rel, NULL);
  if (!g_str_has_prefix (dir, top))
    return;
  while (TRUE)
    {
      take_level (dir, v2, out);
      if (strlen (dir) <= strlen (top))
        break;
      char *parent = g_path_get_dirname (dir);
      g_free (dir);
      dir = parent;
    }
}

static void
read_cgroups (const char *root, BwMemLimits *out)
{
  g_autofree char *cgroups = read_text (root, "/proc/self/cgroup");
  g_autofree char *mountinfo = read_text (root, "/proc/self/mountinfo");
  if (cgroups == NULL || mountinfo == NULL)
    return;
  g_auto (GStrv) lines = g_strsplit (cgroups, "\n", -1);
  for (int i = 0; lines[i] != NULL; i++)
    {
      /* "hierarchy-id:controllers:path"; v2 is "0::path". */
      g_auto (GStrv) f = g_strsplit (lines[i], ":", 3);
      if (g_strv_length (f) != 3)
        continue;
      g_auto (GStrv) controllers = g_strsplit (f[1], ",", -1);
      if (f[1][0] == '\0' && strcmp (f[0], "0") == 0)
        walk_hierarchy (root, f[2], mountinfo, TRUE, out);
      else if (g_strv_contains ((const char *const *) controllers, "memory"))
        walk_hierarchy (root, f[2], mountinfo, FALSE, out);
    }
}

static void
read_rlimit (const char *root, BwMemLimits *out)
{
  g_autofree char *limits = read_text (root, "/proc/self/limits");
  g_autofree char *status = read_text (root, "/proc/self/status");
  const char *p = limits != NULL ? strstr (limits, "Max address space") : NULL;
  if (p == NULL)
    return;
  p += strlen ("Max address space");
  while (*p == ' ')
    p++;
  if (!g_ascii_isdigit (*p))
    return;   /* "unlimited" */
  out->as_limit = g_ascii_strtoull (p, NULL, 10);
  out->as_used = status != NULL ? keyed_value (status, "VmSize", 1024) : 0;
}

static char *default_root;

void
bw_mem_limits_set_default_root (const char *root)
{
  g_free (default_root);
  default_root = g_strdup (root);
}

void
bw_mem_limits_read (const char *root, BwMemLimits *out)
{
  memset (out, 0, sizeof *out);
  if (root == NULL)
    root = default_root != NULL ? default_root : "";
  g_autofree char *meminfo = read_text (root, "/proc/meminfo");
  if (meminfo != NULL)
    out->mem_available = keyed_value (meminfo, "MemAvailable", 1024);
  read_cgroups (root, out);
  read_rlimit (root, out);
}

guint64
bw_mem_limits_room (const BwMemLimits *m)
{
  guint64 room = m->mem_available;
  if (m->cgroup_limit > 0 && (room == 0 || m->cgroup_room < room))
    room = m->cgroup_room;
  if (m->as_limit > 0)
    {
      guint64 as_room = m->as_limit > m->as_used ? m->as_limit - m->as_used : 1;
      if (room == 0 || as_room < room)
        room = as_room;
    }
  return room;
}

char *
bw_mem_limits_describe (const BwMemLimits *m)
{
  GString *s = g_string_new (NULL);
  g_string_append_printf (s, "room %.1f GiB (MemAvailable %.1f GiB",
                          (double) bw_mem_limits_room (m) / (1 << 30),
                          (double) m->mem_available / (1 << 30));
  if (m->cgroup_limit > 0)
    g_string_append_printf (s, ", cgroup limit %.1f GiB, room %.1f GiB",
                            (double) m->cgroup_limit / (1 << 30),
                            (double) m->cgroup_room / (1 << 30));
  if (m->as_limit > 0)
    g_string_append_printf (s, ", address space %.1f of %.1f GiB",
                            (double) m->as_used / (1 << 30), (double) m->as_limit / (1 << 30));
  g_string_append_c (s, ')');
  return g_string_free (s, FALSE);
}
