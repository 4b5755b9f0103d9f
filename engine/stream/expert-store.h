/* The expert store: where every family gets its routed experts' weights.
 *
 * Contract. A family asks for all experts one MoE layer needs for the current token (or
 * prefill batch) with bw_expert_store_request(); the store starts whatever reads are missing
 * and returns at once. bw_expert_batch_wait() blocks until expert i's bytes are in memory and
 * returns its matrices; they stay valid and unmoved until bw_expert_batch_release(), after
 * which the store may evict or reuse the buffer. One batch per layer is in flight at a time
 * from the decode thread; prefetch may run ahead for the next layer. */
#pragma once

#include <glib.h>

#include "core/checkpoint.h"
#include "kernels/matrix.h"

typedef struct BwExpertStore BwExpertStore;

typedef struct {
  BwMatrix gate;   /* w1 / gate_proj: [inter, in] */
  BwMatrix up;     /* w3 / up_proj:   [inter, in] */
  BwMatrix down;   /* w2 / down_proj: [in, inter] */
} BwExpertWeights;

#define BW_MAX_BATCH_EXPERTS 1024

typedef struct {
  BwExpertStore *store;
  int layer;
  int n;
  int experts[BW_MAX_BATCH_EXPERTS];
  void *slots[BW_MAX_BATCH_EXPERTS];   /* store-private */
} BwExpertBatch;

typedef enum {
  BW_IO_AUTO = 0,
  BW_IO_URING,
  BW_IO_PREAD,
} BwIoBackend;

/* A switch the store may set itself: BW_STORE_AUTO, or FALSE / TRUE. */
#define BW_STORE_AUTO (-1)

typedef struct {
  guint64 ram_budget;     /* bytes for cached experts; 0 = from the memory the process can
                           * take (bw_mem_limits_room) and direct_io */
  BwIoBackend io;
  int direct_io;          /* O_DIRECT, falling back to buffered where refused; AUTO: when
                           * the experts do not fit in the page cache (cache-policy.h) */
  gboolean pinning;       /* learned pins from the usage history */
  int prefetch;           /* router lookahead; AUTO: paused while it mostly wastes reads */
  gboolean no_prefault;   /* don't fill the budget with prefaulted buffers up front */
  int io_threads;         /* pread fallback pool size; 0 = default */
  const char *history_dir;/* usage history location; NULL = user cache dir */
  int expert_bits;        /* 0 = as stored; 8, 4 or 2 = re-encode each expert as it lands */
  int expert_group;       /* columns per scale when re-encoding; 0 = 32 */
  int act_bits;           /* BwMatrix.act_bits of the experts' matrices */
  BwIsa isa;              /* BwMatrix.isa of the experts' matrices */
  BwPool *pool;           /* threads for re-encoding and for prefaulting the budget at
                           * creation (the decode thread's); NULL = the caller */
  /* or NULL; FALSE stops prefaulting (a cancelled load) */
  gboolean (*prefault_progress) (double done, gpointer data);
  gpointer prefault_progress_data;
  int prefetch_top;       /* lookahead prefetches the next MoE layer's this many likeliest
                           * experts; 0 = a quarter of its top-k, at least one */
} BwStoreOptions;

typedef struct {
  guint64 hits, misses, prefetch_hits, prefetch_issued, prefetch_wasted;
  guint64 prefetch_cancelled;   /* withdrawn before their reads started */
  guint64 warm_issued;    /* learned pins read ahead when the store was created */
  guint64 warm_used;      /* of which requested since */
  guint64 bytes_read;
  guint64 io_wait_ns;     /* time the decode thread spent blocked in bw_expert_batch_wait */
  gint64 read_busy_us;    /* time with reads in flight (io_uring) */
  gint64 read_depth_us;   /* its integral of the reads in flight: / read_busy_us = depth */
  /* Expert buffers mapped while the store was created, and the time it took: on a VM whose
   * host has taken the free memory back, most of a cold load's time. */
  guint64 touched_bytes;
  gint64 touch_us;
  guint64 n_pinned, n_cached, n_on_disk;
  guint64 bytes_pinned, bytes_cached, bytes_on_disk;
  const char *backend;    /* "io_uring", "pread", "pread+O_DIRECT", ... (static string) */
  int pin_state;          /* BwPinState */
} BwStoreStats;

/* Describes where one expert's three matrices live in the checkpoint. Filled by the family
 * (it knows the tensor names and formats), handed to the store at creation. */
typedef struct {
  BwFormat fmt;
  int64_t rows, cols;
  int group;
  const BwTensorInfo *data;    /* element codes */
  const BwTensorInfo *scales;  /* NULL when the format has none */
  gboolean transposed;         /* BF16/F16/F32 stored [cols][rows] (gpt-oss's unquantised
                                * experts): turned to [rows][cols] when its bytes land */
} BwExpertTensor;

typedef struct {
  BwExpertTensor gate, up, down;
} BwExpertLayout;

/* layouts[layer * n_experts + e]; layers that have no routed experts have n_experts_of
 * zero there and are never requested. */
BwExpertStore *bw_expert_store_new (const BwCheckpoint *ckpt, int n_layers, int n_experts,
                                    const BwExpertLayout *layouts, const BwStoreOptions *opts,
                                    GError **error);
void bw_expert_store_free (BwExpertStore *store);

gboolean bw_expert_store_request (BwExpertStore *store, int layer, const int *experts, int n,
                                  BwExpertBatch *batch, GError **error);
const BwExpertWeights *bw_expert_batch_wait (BwExpertBatch *batch, int i, GError **error);
void bw_expert_batch_release (BwExpertBatch *batch);
/* Out of order: the index of an expert not yet taken (taken[i] FALSE) whose bytes are in
 * memory, blocking until the first of them lands; its matrices go to *weights. -1 with
 * error when that expert's read failed or every expert is taken. */
int bw_expert_batch_wait_any (BwExpertBatch *batch, const gboolean *taken,
                              const BwExpertWeights **weights, GError **error);

/* Folds in finished reads and tops the ring up with queued ones; never blocks. io_uring
 * keeps only a few reads in the kernel, so the decode thread calls this between matrix
 * products to keep the disk busy while it computes. */
void bw_expert_store_poll (BwExpertStore *store);
/* For the decode thread between turns (waiting for input): folds in finished reads and
 * lets the warm start's go out more at a time, waiting at most timeout_ms for one to land.
 * TRUE while reads remain in flight, so that the caller comes back. */
gboolean bw_expert_store_idle (BwExpertStore *store, int timeout_ms);

/* Hint: these experts of this layer will probably be requested soon. Never blocks. */
void bw_expert_store_prefetch (BwExpertStore *store, int layer, const int *experts, int n);

/* Cheap; safe to call from another thread while decoding. */
void bw_expert_store_stats (BwExpertStore *store, BwStoreStats *out);

/* ---- Errors, per-layer counters, the budget, residency and routing history ---- */

#define BW_STORE_ERROR (bw_store_error_quark ())
GQuark bw_store_error_quark (void);

typedef enum {
  BW_STORE_ERROR_IO,        /* a read failed or came back short; names file and tensor */
  BW_STORE_ERROR_BUDGET,    /* the batch does not fit in the RAM budget */
  BW_STORE_ERROR_NOMEM,
  BW_STORE_ERROR_INVALID,   /* bad layer / expert / count */
} BwStoreError;

typedef struct {
  guint64 hits, misses, prefetch_hits;
  guint64 n_resident, bytes_resident;
} BwStoreLayerStats;

/* One layer's counters; cheap, any thread. */
void bw_expert_store_layer_stats (BwExpertStore *store, int layer, BwStoreLayerStats *out);

/* How many experts of this layer one batch can hold under the budget (pins and buffers of
 * unreleased batches excluded). A prefill union larger than this is requested in chunks. */
int bw_expert_store_batch_limit (BwExpertStore *store, int layer);

/* How many of experts[0, n) of this layer, taken in order, one request can hold at once
 * under the budget: what each would add (a new buffer, pinned experts not loaded yet
 * included; a cached one that stops being evictable) against what evicting every
 * unreferenced buffer would free. */
int bw_expert_store_batch_fit (BwExpertStore *store, int layer, const int *experts, int n);

/* The RAM budget in effect (the option, or the default from the memory room). */
guint64 bw_expert_store_budget (BwExpertStore *store);

/* Layers the store was created with; routed experts of a layer (0 for a layer without
 * them) and bytes of one as stored. */
int bw_expert_store_n_layers (BwExpertStore *store);
int bw_expert_store_layer_experts (BwExpertStore *store, int layer);
guint64 bw_expert_store_expert_bytes (BwExpertStore *store, int layer);
/* Whether the expert's buffer is in memory (or being read). Decode thread only. */
gboolean bw_expert_store_is_resident (BwExpertStore *store, int layer, int expert);

typedef enum {
  BW_EXPERT_ON_DISK,
  BW_EXPERT_CACHED,   /* in memory or being read */
  BW_EXPERT_PINNED,
} BwExpertTier;

/* Why learned pins are, or are not, in effect. */
typedef enum {
  BW_PINS_OFF,          /* pinning not asked for */
  BW_PINS_NO_HISTORY,   /* no earlier session's usage recorded yet, or none used enough */
  BW_PINS_ACTIVE,       /* chosen at creation from the history */
  BW_PINS_DROPPED,      /* dropped: the workload moved away from them */
} BwPinState;

/* Every expert at once, for a dashboard's heat map: tiers[layer * n_experts + e] gets its
 * BwExpertTier, uses (may be NULL) how often it was requested since the store was made.
 * Decode thread only, between forward passes. */
void bw_expert_store_expert_map (BwExpertStore *store, guint8 *tiers, guint32 *uses);

/* Records which experts each of n_tokens tokens chose in this layer (ids [n_tokens][top_k],
 * as routed, whether or not they are requested yet). Decode thread. */
void bw_expert_store_note_routes (BwExpertStore *store, int layer, const int *ids,
                                  int n_tokens, int top_k);
/* Tokens since each expert was last chosen: ages[layer * n_experts + e] is 0 for the experts
 * of the latest token through that layer, 1 for the token before's (if not chosen again),
 * and so on; G_MAXUINT32 if never. Any thread. */
void bw_expert_store_expert_ages (BwExpertStore *store, guint32 *ages);
