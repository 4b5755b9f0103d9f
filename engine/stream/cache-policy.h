/* Cache policy as pure functions: which layer gives up a buffer, which experts to pin.
 * No I/O and no store state, so tests can drive them directly. */
#pragma once

#include <glib.h>

typedef struct {
  guint64 bytes;        /* resident expert bytes of the layer, in use or not */
  guint64 quota;        /* its fair share of the budget */
  guint64 last_use;     /* tick of the layer's last request */
  gboolean evictable;   /* has at least one unreferenced, unpinned, loaded buffer */
} BwLayerCacheState;

/* The layer that should give up its least recently used buffer when `current` needs room:
 * the one furthest over its quota; on a tie the current layer, then the layer used most
 * recently (in a decode loop over layers it is the one needed again last). -1 when no layer
 * has anything evictable. */
int bw_policy_victim_layer (const BwLayerCacheState *layers, int n_layers, int current);

/* Marks in pin[] (n entries) the experts with the highest counts, most used first, while
 * their bytes (bytes[i], 0 = not an expert) fit in max_bytes. Experts used fewer than
 * min_count times are never pinned. Returns the number pinned; *pinned_bytes gets their sum. */
int bw_policy_choose_pins (const guint32 *counts, const guint64 *bytes, int n, guint64 max_bytes,
                           guint32 min_count, gboolean *pin, guint64 *pinned_bytes);

/* Default budget for cached experts from /proc/meminfo's MemAvailable (kB text as read from
 * the file): a fraction of it, leaving the rest to the page cache and the app. 0 when the
 * text has no MemAvailable line. */
guint64 bw_policy_default_budget (const char *meminfo, double fraction);

/* How many buffers of `size` bytes to fill up front: as many as the budget holds, no more
 * than there are experts, and no more than `room` bytes (what the machine can spare; 0 =
 * unknown, no limit). */
guint64 bw_policy_prefault_count (guint64 budget, guint64 room, guint64 size, guint64 n_experts);
