/* The expert store's state, shared by the files that implement it (expert-store.c, and
 * store-warm.c for the slow part of creation); not for families or the rest of the engine. */
#pragma once

#include <stdatomic.h>

#include "stream/buffer-pool.h"
#include "stream/cache-policy.h"
#include "stream/expert-requant.h"
#include "stream/expert-store.h"
#include "stream/store-io.h"
#include "stream/usage-history.h"

typedef enum {
  SLOT_LOADING,
  SLOT_READY,
  SLOT_FAILED,
} SlotState;

typedef struct Slot Slot;
struct Slot {
  int layer, expert;
  guint8 *buf;
  gsize cap;
  SlotState state;
  int refs;                 /* batches holding it */
  gboolean sticky;          /* learned pin: never evicted */
  gboolean prefetched;      /* started by a prefetch and not requested yet */
  gboolean warming;         /* started by the warm start and not requested yet */
  gboolean speculative;     /* started by the lookahead or the warm start */
  gboolean retried;         /* a failed speculative read was started again */
  guint64 prefetch_bytes;   /* counted in prefetch_in_flight until its reads finish */
  gboolean in_lru;
  Slot *prev, *next;        /* the layer's LRU list, most recent first */
  BwExpertWeights weights;
  GError *error;
  int n_ops, pending;       /* reads of this expert, and those not finished */
  BwIoOp *ops;              /* [n_ops], tag = index of the plan's run */
};

typedef struct {
  Slot *head, *tail;
  guint64 bytes;            /* resident, in use or not */
  guint64 last_use;
  guint64 max_buf;          /* largest expert buffer of the layer */
  guint64 stored;           /* bytes of its largest expert as stored */
  int n_experts;            /* routed experts it has */
  _Atomic guint64 n_resident, bytes_resident;
  _Atomic guint64 hits, misses, prefetch_hits;
} LayerCache;

struct BwExpertStore {
  const BwCheckpoint *ckpt;
  int n_layers, n_experts, n_moe_layers;
  gsize n_slots;
  BwExpertLayout *layouts;
  BwStoreOptions opts;
  int *fds;                 /* per shard, buffered */
  int *fds_direct;          /* per shard, O_DIRECT, or -1 where refused */
  guint64 align;            /* read alignment: 1, or the O_DIRECT block */
  BwIo *io;
  BwIoOp **op_scratch;      /* [BW_MAX_BATCH_EXPERTS * max_ops] */
  int max_ops;              /* most reads one expert needs */
  Slot **table;             /* [n_slots] */
  LayerCache *layers;
  BwLayerCacheState *policy_scratch;
  guint64 budget;
  guint64 room;             /* memory the process could take at creation; 0: unknown */
  guint64 bytes_used;       /* all resident buffers */
  guint64 bytes_evictable;  /* of which in LRU lists */
  guint64 prefetch_in_flight;
  guint64 prefetch_mark_issued, prefetch_mark_hits;   /* at the start of the window */
  int prefetch_pause;       /* calls left to skip; automatic lookahead only */
  guint64 tick;
  guint64 total_expert_bytes;
  guint64 n_total_experts;

  guint8 *sticky;           /* [n_slots] learned pins */
  double pin_share;         /* share of past picks that went to pinned experts */
  guint64 picks, pinned_picks;   /* this session, since the last check */
  BwUsageHistory *history;  /* this session's counts */
  BwUsageHistory *past;     /* loaded from disk, or NULL */
  char *history_path;

  _Atomic guint64 hits, misses, prefetch_hits, prefetch_issued, prefetch_wasted;
  _Atomic guint64 prefetch_cancelled, warm_issued, warm_used;
  guint64 warm_landed;      /* pins of the warm start whose reads finished unrequested */
  _Atomic guint64 bytes_read, io_wait_ns;
  _Atomic guint64 n_pinned, n_cached, bytes_pinned, bytes_cached;
  _Atomic (const char *) backend;
  _Atomic int pin_state;    /* BwPinState */
  /* Recency for the dashboard: tokens routed through each layer since creation, and the
   * count at which each expert was last chosen (0: never). */
  _Atomic guint32 *layer_tokens;   /* [n_layers] */
  _Atomic guint32 *last_token;     /* [n_slots] */
  BwExpertRequant *requant; /* --expert-bits, or NULL */
  guint8 *transpose_buf;    /* room for the largest transposed matrix, or NULL */
  BwBufferPool *spares;     /* prefaulted buffers, counted against the budget, or NULL */
  guint64 touched_bytes;    /* of them, mapped while the store was created */
  gint64 touch_us;          /* and the time that took */
};

static inline guint64
now_ns (void)
{
  return (guint64) g_get_monotonic_time () * 1000u;
}

static inline gsize
slot_index (const BwExpertStore *s, int layer, int expert)
{
  return (gsize) layer * (gsize) s->n_experts + (gsize) expert;
}

static inline const BwExpertLayout *
layout_of (const BwExpertStore *s, int layer, int expert)
{
  return &s->layouts[slot_index (s, layer, expert)];
}

/* A slot for (layer, expert) with a buffer and its reads prepared, not started; NULL with
 * error when the budget has no room for it (waiting for reads in flight to make room when
 * `wait`). */
Slot *bw_store_slot_create (BwExpertStore *s, int layer, int expert, gboolean wait,
                            GError **error);
/* Starts the reads of n slots with one submission. */
void bw_store_start_reads (BwExpertStore *s, Slot **slots, int n, BwIoClass klass);

/* The slow part of creation (store-warm.c): the cache's buffers prefaulted and the learned
 * pins read into them as they become ready; returns when both are done, the load is
 * cancelled, or the pins' reads have had their time. */
void bw_store_warm_start (BwExpertStore *s);
