/* What memory this process can really take: the machine's MemAvailable, its memory cgroup's
 * limits (v1 and v2, the tightest level up the hierarchy) and RLIMIT_AS. Everything is read
 * from files under a root folder, so tests can hand it a fake /proc and /sys. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  guint64 mem_available;  /* /proc/meminfo MemAvailable; 0: unknown */
  guint64 cgroup_limit;   /* tightest memory.max, memory.high or memory.limit_in_bytes of
                           * the process's cgroups and their ancestors; 0: none */
  guint64 cgroup_room;    /* least (limit - usage + the cgroup's file pages) over those
                           * levels: what can be charged before reclaim runs out */
  guint64 as_limit;       /* RLIMIT_AS (soft); 0: unlimited */
  guint64 as_used;        /* VmSize */
} BwMemLimits;

/* Fills out from files under root ("" or NULL: the real /proc and /sys). Missing or
 * unreadable files leave their fields 0 (unknown / no limit). */
void bw_mem_limits_read (const char *root, BwMemLimits *out);

/* What a NULL root reads from (NULL: the real /proc and /sys). For testing builds: the
 * engine reads with a NULL root, and a test hands it a fake tree. Call before loading. */
void bw_mem_limits_set_default_root (const char *root);

/* Bytes the process can still allocate: the least of MemAvailable, the cgroup room and the
 * address-space headroom. 0 when nothing is known. */
guint64 bw_mem_limits_room (const BwMemLimits *m);

/* One line for logs and --stats: "room 7.1 GiB (cgroup limit 8.0 GiB, ...)". */
char *bw_mem_limits_describe (const BwMemLimits *m);

G_END_DECLS
