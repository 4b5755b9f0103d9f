/* The expert store: resident expert buffers per layer under a RAM budget, filled from the
 * checkpoint's shards on demand. */
#include "stream/expert-store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/file-io.h"
#include "stream/cache-policy.h"
#include "stream/expert-plan.h"

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
  gboolean prefetched;      /* loaded by a prefetch and not requested yet */
  gboolean in_lru;
  Slot *prev, *next;        /* the layer's LRU list, most recent first */
  BwExpertWeights weights;
  GError *error;
};

typedef struct {
  Slot *head, *tail;
  guint64 bytes;
  guint64 last_use;
  guint64 max_buf;          /* largest expert buffer of the layer */
  _Atomic guint64 n_resident, bytes_resident;
  _Atomic guint64 hits, misses, prefetch_hits;
} LayerCache;

struct BwExpertStore {
  const BwCheckpoint *ckpt;
  int n_layers, n_experts, n_moe_layers;
  BwExpertLayout *layouts;
  BwStoreOptions opts;
  int *fds;                 /* per shard, buffered */
  Slot **table;             /* [n_layers * n_experts] */
  LayerCache *layers;
  BwLayerCacheState *policy_scratch;
  guint64 budget;
  guint64 bytes_used;
  guint64 tick;
  guint64 total_expert_bytes;
  guint64 n_total_experts;

  _Atomic guint64 hits, misses, prefetch_hits, prefetch_issued, prefetch_wasted;
  _Atomic guint64 bytes_read, io_wait_ns;
  _Atomic guint64 n_pinned, n_cached, bytes_pinned, bytes_cached;
  const char *backend;
};

G_DEFINE_QUARK (bw-store-error-quark, bw_store_error)

static guint64
now_ns (void)
{
  return (guint64) g_get_monotonic_time () * 1000u;
}

static const BwExpertLayout *
layout_of (const BwExpertStore *s, int layer, int expert)
{
  return &s->layouts[(gsize) layer * (gsize) s->n_experts + (gsize) expert];
}

/* ---- LRU lists ---- */

static void
lru_remove (BwExpertStore *s, Slot *slot)
{
  LayerCache *lc = &s->layers[slot->layer];
  if (!slot->in_lru)
    return;
  if (slot->prev != NULL)
    slot->prev->next = slot->next;
  else
    lc->head = slot->next;
  if (slot->next != NULL)
    slot->next->prev = slot->prev;
  else
    lc->tail = slot->prev;
  slot->prev = slot->next = NULL;
  slot->in_lru = FALSE;
}

static void
lru_push_front (BwExpertStore *s, Slot *slot)
{
  LayerCache *lc = &s->layers[slot->layer];
  slot->prev = NULL;
  slot->next = lc->head;
  if (lc->head != NULL)
    lc->head->prev = slot;
  else
    lc->tail = slot;
  lc->head = slot;
  slot->in_lru = TRUE;
}

/* ---- slots ---- */

static void
account (BwExpertStore *s, const Slot *slot, int sign)
{
  guint64 b = slot->cap;
  if (sign > 0)
    {
      s->bytes_used += b;
      s->layers[slot->layer].bytes += b;
      atomic_fetch_add (&s->layers[slot->layer].n_resident, 1);
      atomic_fetch_add (&s->layers[slot->layer].bytes_resident, b);
      atomic_fetch_add (slot->sticky ? &s->n_pinned : &s->n_cached, 1);
      atomic_fetch_add (slot->sticky ? &s->bytes_pinned : &s->bytes_cached, b);
    }
  else
    {
      s->bytes_used -= b;
      s->layers[slot->layer].bytes -= b;
      atomic_fetch_sub (&s->layers[slot->layer].n_resident, 1);
      atomic_fetch_sub (&s->layers[slot->layer].bytes_resident, b);
      atomic_fetch_sub (slot->sticky ? &s->n_pinned : &s->n_cached, 1);
      atomic_fetch_sub (slot->sticky ? &s->bytes_pinned : &s->bytes_cached, b);
    }
}

static void
slot_destroy (BwExpertStore *s, Slot *slot)
{
  lru_remove (s, slot);
  account (s, slot, -1);
  if (slot->prefetched)
    atomic_fetch_add (&s->prefetch_wasted, 1);
  s->table[(gsize) slot->layer * (gsize) s->n_experts + (gsize) slot->expert] = NULL;
  g_clear_error (&slot->error);
  free (slot->buf);
  g_free (slot);
}

/* Evicts unreferenced buffers until `need` more bytes fit in the budget. */
static gboolean
make_room (BwExpertStore *s, int layer, guint64 need)
{
  while (s->bytes_used + need > s->budget)
    {
      int victim;
      for (int l = 0; l < s->n_layers; l++)
        {
          BwLayerCacheState *st = &s->policy_scratch[l];
          st->bytes = s->layers[l].bytes;
          st->quota = s->budget / (guint64) MAX (s->n_moe_layers, 1);
          st->last_use = s->layers[l].last_use;
          st->evictable = s->layers[l].tail != NULL;
        }
      victim = bw_policy_victim_layer (s->policy_scratch, s->n_layers, layer);
      if (victim < 0)
        return FALSE;
      slot_destroy (s, s->layers[victim].tail);
    }
  return TRUE;
}

static void
slot_set_weights (BwExpertStore *s, Slot *slot, const BwExpertPlan *plan)
{
  const BwExpertLayout *l = layout_of (s, slot->layer, slot->expert);
  const BwExpertTensor *src[3] = { &l->gate, &l->up, &l->down };
  BwMatrix *dst[3] = { &slot->weights.gate, &slot->weights.up, &slot->weights.down };

  for (int m = 0; m < 3; m++)
    {
      gsize doff = plan->tensor_off[2 * m], soff = plan->tensor_off[2 * m + 1];
      dst[m]->fmt = src[m]->fmt;
      dst[m]->rows = src[m]->rows;
      dst[m]->cols = src[m]->cols;
      dst[m]->group = src[m]->group;
      dst[m]->data = slot->buf + doff;
      dst[m]->scales = soff != BW_PLAN_ABSENT ? slot->buf + soff : NULL;
    }
}

static const char *
tensor_name_of_run (BwExpertStore *s, const Slot *slot, const BwReadRun *run)
{
  const BwTensorInfo *t =
    bw_expert_layout_tensor (layout_of (s, slot->layer, slot->expert), run->first_tensor);
  return t != NULL ? t->name : "?";
}

static void
slot_load_sync (BwExpertStore *s, Slot *slot, const BwExpertPlan *plan)
{
  for (int r = 0; r < plan->n_runs; r++)
    {
      const BwReadRun *run = &plan->runs[r];
      g_autofree char *what = g_strdup_printf ("%s (tensor %s)",
                                               s->ckpt->shards[run->shard].path,
                                               tensor_name_of_run (s, slot, run));
      GError *local = NULL;
      if (!bw_pread_full (s->fds[run->shard], slot->buf + run->buf_off, (gsize) run->need,
                          run->file_off, what, &local))
        {
          g_set_error (&slot->error, BW_STORE_ERROR, BW_STORE_ERROR_IO, "%s", local->message);
          g_error_free (local);
          slot->state = SLOT_FAILED;
          return;
        }
      atomic_fetch_add (&s->bytes_read, run->need);
    }
  slot->state = SLOT_READY;
}

/* A new slot for (layer, expert) with a buffer, or NULL with error. */
static Slot *
slot_create (BwExpertStore *s, int layer, int expert, BwExpertPlan *plan, GError **error)
{
  const BwExpertLayout *l = layout_of (s, layer, expert);
  Slot *slot;
  void *buf = NULL;

  if (!bw_expert_plan_build (l, 1, plan))
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "layer %d has no routed expert %d", layer, expert);
      return NULL;
    }
  if (!make_room (s, layer, plan->buf_bytes))
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_BUDGET,
                   "expert cache budget of %" G_GUINT64_FORMAT " bytes is too small for the "
                   "experts layer %d needs at once", s->budget, layer);
      return NULL;
    }
  if (posix_memalign (&buf, BW_PLAN_BUF_ALIGN, MAX (plan->buf_bytes, 1)) != 0)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_NOMEM,
                   "out of memory for a %" G_GSIZE_FORMAT "-byte expert buffer (layer %d, "
                   "expert %d)", plan->buf_bytes, layer, expert);
      return NULL;
    }
  slot = g_new0 (Slot, 1);
  slot->layer = layer;
  slot->expert = expert;
  slot->buf = buf;
  slot->cap = plan->buf_bytes;
  slot->state = SLOT_LOADING;
  s->table[(gsize) layer * (gsize) s->n_experts + (gsize) expert] = slot;
  account (s, slot, +1);
  slot_set_weights (s, slot, plan);
  return slot;
}

/* ---- public API ---- */

static guint64
default_budget (void)
{
  g_autofree char *meminfo = NULL;
  guint64 b = 0;
  if (g_file_get_contents ("/proc/meminfo", &meminfo, NULL, NULL))
    b = bw_policy_default_budget (meminfo, 0.5);
  return b > 0 ? b : (guint64) 1 << 30;
}

BwExpertStore *
bw_expert_store_new (const BwCheckpoint *ckpt, int n_layers, int n_experts,
                     const BwExpertLayout *layouts, const BwStoreOptions *opts,
                     GError **error)
{
  BwExpertStore *s;
  gsize n_slots;

  if (n_layers <= 0 || n_experts <= 0 || n_experts > 1 << 20 || n_layers > 1 << 16)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "expert store: %d layers of %d experts is out of range", n_layers, n_experts);
      return NULL;
    }
  n_slots = (gsize) n_layers * (gsize) n_experts;
  s = g_new0 (BwExpertStore, 1);
  s->ckpt = ckpt;
  s->n_layers = n_layers;
  s->n_experts = n_experts;
  s->layouts = g_memdup2 (layouts, n_slots * sizeof *layouts);
  if (opts != NULL)
    s->opts = *opts;
  s->opts.history_dir = NULL;   /* borrowed string; not kept */
  s->table = g_new0 (Slot *, n_slots);
  s->layers = g_new0 (LayerCache, n_layers);
  s->policy_scratch = g_new0 (BwLayerCacheState, n_layers);
  s->budget = s->opts.ram_budget > 0 ? s->opts.ram_budget : default_budget ();
  s->backend = "pread";

  for (int l = 0; l < n_layers; l++)
    {
      gboolean has = FALSE;
      for (int e = 0; e < n_experts; e++)
        {
          const BwExpertLayout *lay = layout_of (s, l, e);
          BwExpertPlan plan;
          if (!bw_expert_plan_build (lay, 1, &plan))
            continue;
          has = TRUE;
          s->layers[l].max_buf = MAX (s->layers[l].max_buf, plan.buf_bytes);
          s->total_expert_bytes += bw_expert_layout_bytes (lay);
          s->n_total_experts++;
        }
      s->n_moe_layers += has;
    }

  s->fds = g_new (int, MAX (ckpt->n_shards, 1));
  for (int i = 0; i < ckpt->n_shards; i++)
    s->fds[i] = -1;
  for (int i = 0; i < ckpt->n_shards; i++)
    {
      s->fds[i] = open (ckpt->shards[i].path, O_RDONLY | O_CLOEXEC);
      if (s->fds[i] < 0)
        {
          int saved = errno;
          g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO, "%s: %s",
                       ckpt->shards[i].path, g_strerror (saved));
          bw_expert_store_free (s);
          return NULL;
        }
    }
  return s;
}

void
bw_expert_store_free (BwExpertStore *s)
{
  if (s == NULL)
    return;
  if (s->table != NULL)
    for (gsize i = 0; i < (gsize) s->n_layers * (gsize) s->n_experts; i++)
      if (s->table[i] != NULL)
        {
          s->table[i]->prefetched = FALSE;
          slot_destroy (s, s->table[i]);
        }
  if (s->fds != NULL)
    for (int i = 0; i < s->ckpt->n_shards; i++)
      if (s->fds[i] >= 0)
        close (s->fds[i]);
  g_free (s->fds);
  g_free (s->table);
  g_free (s->layers);
  g_free (s->policy_scratch);
  g_free (s->layouts);
  g_free (s);
}

static void
batch_unpin (BwExpertBatch *batch, int upto)
{
  BwExpertStore *s = batch->store;
  for (int i = 0; i < upto; i++)
    {
      Slot *slot = batch->slots[i];
      batch->slots[i] = NULL;
      if (slot == NULL || --slot->refs > 0)
        continue;
      if (slot->state == SLOT_FAILED)
        slot_destroy (s, slot);   /* a later request retries the read */
      else if (!slot->sticky)
        lru_push_front (s, slot);
    }
}

gboolean
bw_expert_store_request (BwExpertStore *s, int layer, const int *experts, int n,
                         BwExpertBatch *batch, GError **error)
{
  LayerCache *lc;

  batch->store = s;
  batch->layer = layer;
  batch->n = 0;
  if (layer < 0 || layer >= s->n_layers || n < 0 || n > BW_MAX_BATCH_EXPERTS)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "expert request: layer %d or count %d out of range", layer, n);
      return FALSE;
    }
  lc = &s->layers[layer];
  lc->last_use = ++s->tick;
  for (int i = 0; i < n; i++)
    {
      int e = experts[i];
      Slot *slot;
      if (e < 0 || e >= s->n_experts)
        {
          g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                       "expert request: expert %d of layer %d out of range", e, layer);
          batch_unpin (batch, i);
          return FALSE;
        }
      slot = s->table[(gsize) layer * (gsize) s->n_experts + (gsize) e];
      if (slot != NULL && slot->state != SLOT_FAILED)
        {
          atomic_fetch_add (&s->hits, 1);
          atomic_fetch_add (&lc->hits, 1);
          if (slot->prefetched)
            {
              slot->prefetched = FALSE;
              atomic_fetch_add (&s->prefetch_hits, 1);
              atomic_fetch_add (&lc->prefetch_hits, 1);
            }
          lru_remove (s, slot);
        }
      else
        {
          BwExpertPlan plan;
          if (slot != NULL && slot->refs == 0)
            slot_destroy (s, slot);
          slot = slot_create (s, layer, e, &plan, error);
          if (slot == NULL)
            {
              batch_unpin (batch, i);
              return FALSE;
            }
          atomic_fetch_add (&s->misses, 1);
          atomic_fetch_add (&lc->misses, 1);
          {
            guint64 t0 = now_ns ();
            slot_load_sync (s, slot, &plan);
            atomic_fetch_add (&s->io_wait_ns, now_ns () - t0);
          }
        }
      slot->refs++;
      batch->experts[i] = e;
      batch->slots[i] = slot;
      batch->n = i + 1;
    }
  return TRUE;
}

const BwExpertWeights *
bw_expert_batch_wait (BwExpertBatch *batch, int i, GError **error)
{
  Slot *slot;
  if (i < 0 || i >= batch->n)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "expert batch: index %d out of range", i);
      return NULL;
    }
  slot = batch->slots[i];
  if (slot->state == SLOT_FAILED)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO, "layer %d expert %d: %s",
                   slot->layer, slot->expert, slot->error->message);
      return NULL;
    }
  return &slot->weights;
}

void
bw_expert_batch_release (BwExpertBatch *batch)
{
  if (batch->store == NULL)
    return;
  batch_unpin (batch, batch->n);
  batch->n = 0;
}

void
bw_expert_store_prefetch (BwExpertStore *s, int layer, const int *experts, int n)
{
}

void
bw_expert_store_stats (BwExpertStore *s, BwStoreStats *out)
{
  memset (out, 0, sizeof *out);
  out->hits = atomic_load (&s->hits);
  out->misses = atomic_load (&s->misses);
  out->prefetch_hits = atomic_load (&s->prefetch_hits);
  out->prefetch_issued = atomic_load (&s->prefetch_issued);
  out->prefetch_wasted = atomic_load (&s->prefetch_wasted);
  out->bytes_read = atomic_load (&s->bytes_read);
  out->io_wait_ns = atomic_load (&s->io_wait_ns);
  out->n_pinned = atomic_load (&s->n_pinned);
  out->n_cached = atomic_load (&s->n_cached);
  out->bytes_pinned = atomic_load (&s->bytes_pinned);
  out->bytes_cached = atomic_load (&s->bytes_cached);
  out->n_on_disk = s->n_total_experts - MIN (s->n_total_experts, out->n_pinned + out->n_cached);
  out->bytes_on_disk = s->total_expert_bytes
                       - MIN (s->total_expert_bytes, out->bytes_pinned + out->bytes_cached);
  out->backend = s->backend;
}

void
bw_expert_store_layer_stats (BwExpertStore *s, int layer, BwStoreLayerStats *out)
{
  memset (out, 0, sizeof *out);
  if (layer < 0 || layer >= s->n_layers)
    return;
  out->hits = atomic_load (&s->layers[layer].hits);
  out->misses = atomic_load (&s->layers[layer].misses);
  out->prefetch_hits = atomic_load (&s->layers[layer].prefetch_hits);
  out->n_resident = atomic_load (&s->layers[layer].n_resident);
  out->bytes_resident = atomic_load (&s->layers[layer].bytes_resident);
}

int
bw_expert_store_batch_limit (BwExpertStore *s, int layer)
{
  guint64 held = 0, per;

  if (layer < 0 || layer >= s->n_layers || s->layers[layer].max_buf == 0)
    return 0;
  per = s->layers[layer].max_buf;
  for (int l = 0; l < s->n_layers; l++)
    {
      /* Everything resident that is not in an LRU list is held (in use or pinned). */
      guint64 evictable = 0;
      for (Slot *x = s->layers[l].head; x != NULL; x = x->next)
        evictable += x->cap;
      held += s->layers[l].bytes - evictable;
    }
  if (held >= s->budget)
    return 0;
  return (int) MIN ((s->budget - held) / per, (guint64) MIN (s->n_experts, BW_MAX_BATCH_EXPERTS));
}

guint64
bw_expert_store_budget (BwExpertStore *s)
{
  return s->budget;
}
