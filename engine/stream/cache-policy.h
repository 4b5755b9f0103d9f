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

/* The pinned experts (pin[i] non-zero, n entries) in the order the warm start reads them:
 * most used first, ties by index. Fills order[] and returns how many there are. */
gsize bw_policy_warm_order (const guint32 *counts, const guint8 *pin, gsize n, guint32 *order);

/* The default budget for cached experts out of room, the bytes the process can still take
 * (bw_mem_limits_room). With O_DIRECT reads the page cache holds no expert bytes, so the
 * cache takes all but an eighth (at least 1 GiB, at most half), which is left for the
 * decode state's growth and the rest of the system; with buffered reads every expert read passes
 * through the page cache, which gets the other half. Never more than all experts need
 * (all_experts; 0 = unknown). 0 when room is 0 (unknown). */
guint64 bw_policy_default_budget (guint64 room, gboolean direct, guint64 all_experts);

/* Whether expert reads should bypass the page cache: when the experts would not all fit
 * in the half of room a buffered budget leaves to the page cache, a buffered read mostly
 * evicts another expert's pages and costs a copy and the kernel's bookkeeping; when they
 * fit, buffered reads keep them warm for the next run. */
gboolean bw_policy_prefer_direct (guint64 room, guint64 all_experts);

/* How many buffers of `size` bytes to fill up front: as many as the budget holds, no more
 * than there are experts, and no more than `room` bytes (what the machine can spare; 0 =
 * unknown, no limit). With n_pins learned pins to read, only theirs and a tenth of the
 * budget's for the reply's other experts: every buffer touched is paid for before the
 * first token (1.5-3 s a GB on a VM whose host has taken the free memory back), and the
 * pins and that tenth held all of a reply's experts in the runs measured; the rest of the
 * budget is mapped by the reads that first fill it. */
guint64 bw_policy_prefault_count (guint64 budget, guint64 room, guint64 size, guint64 n_experts,
                                  guint64 n_pins);
