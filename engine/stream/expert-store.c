/* The expert store: resident expert buffers per layer under a RAM budget, filled from the
 * checkpoint's shards by asynchronous reads. All entry points but the stats queries run on
 * one thread (the decode thread); completions are reaped there too, inside wait. */
#include "stream/expert-store-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/huge-alloc.h"
#include "stream/buffer-pool.h"
#include "stream/cache-policy.h"
#include "stream/expert-plan.h"
#include "stream/expert-requant.h"
#include "stream/mem-limits.h"
#include "stream/store-io.h"
#include "stream/store-testing.h"
#include "stream/usage-history.h"

/* The budget when the memory room cannot be read. */
#define FALLBACK_BUDGET ((guint64) 1 << 30)
/* Share of the budget learned pins may hold. */
#define PIN_FRACTION 0.75
/* An expert needs this many recorded uses before it may be pinned. */
#define PIN_MIN_COUNT 2
/* Pins are dropped when, after this many expert picks, pinned experts got less than half
 * the share of picks the history promised (the workload moved on). */
#define PIN_CHECK_PICKS 2048
/* The usage history remembers about this many tokens (layer requests per MoE layer); older
 * sessions fade as newer ones fill it, so pins follow a workload that changed. */
#define HISTORY_WINDOW_TOKENS 2048
/* Reads are issued in pieces of at most this many bytes so that one expert's bytes stream
 * through several requests at once (a multiple of the O_DIRECT block). */
#define READ_PIECE ((guint64) 2 << 20)
/* Prefetched reads in flight may hold at most this share of the budget. */
#define PREFETCH_FRACTION 0.25
/* Automatic lookahead is judged over windows of this many prefetches issued: when fewer
 * than half of them were requested later, every other read it issues is wasted disk time
 * on a decode that waits on the disk, and it pauses for PREFETCH_PAUSE calls. */
#define PREFETCH_WINDOW 128
#define PREFETCH_PAUSE 256

G_DEFINE_QUARK (bw-store-error-quark, bw_store_error)

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
  s->bytes_evictable -= slot->cap;
}

static void
lru_push_front (BwExpertStore *s, Slot *slot)
{
  LayerCache *lc = &s->layers[slot->layer];
  if (slot->in_lru || slot->sticky)
    return;
  slot->prev = NULL;
  slot->next = lc->head;
  if (lc->head != NULL)
    lc->head->prev = slot;
  else
    lc->tail = slot;
  lc->head = slot;
  slot->in_lru = TRUE;
  s->bytes_evictable += slot->cap;
}

/* ---- slots ---- */

static void
account (BwExpertStore *s, const Slot *slot, int sign)
{
  LayerCache *lc = &s->layers[slot->layer];
  guint64 b = slot->cap;
  _Atomic guint64 *count = slot->sticky ? &s->n_pinned : &s->n_cached;
  _Atomic guint64 *bytes = slot->sticky ? &s->bytes_pinned : &s->bytes_cached;

  if (sign > 0)
    {
      s->bytes_used += b;
      lc->bytes += b;
      atomic_fetch_add (&lc->n_resident, 1);
      atomic_fetch_add (&lc->bytes_resident, b);
      atomic_fetch_add (count, 1);
      atomic_fetch_add (bytes, b);
    }
  else
    {
      s->bytes_used -= b;
      lc->bytes -= b;
      atomic_fetch_sub (&lc->n_resident, 1);
      atomic_fetch_sub (&lc->bytes_resident, b);
      atomic_fetch_sub (count, 1);
      atomic_fetch_sub (bytes, b);
    }
}

/* Drops a slot that no batch holds and no read targets. Returns its buffer when keep is
 * set (for reuse), else frees it. */
static guint8 *
slot_destroy (BwExpertStore *s, Slot *slot, gboolean keep)
{
  guint8 *buf = slot->buf;
  lru_remove (s, slot);
  account (s, slot, -1);
  if (slot->prefetched)
    atomic_fetch_add (&s->prefetch_wasted, 1);
  s->table[slot_index (s, slot->layer, slot->expert)] = NULL;
  g_clear_error (&slot->error);
  g_free (slot->ops);
  g_free (slot);
  if (keep)
    return buf;
  bw_huge_free (buf);
  return NULL;
}

static void op_finished (BwExpertStore *s, BwIoOp *op);

/* Folds in one finished read, blocking until there is one; FALSE when none is in flight. */
static gboolean
reap_one (BwExpertStore *s)
{
  BwIoOp *op = bw_io_reap (s->io, TRUE);
  if (op == NULL)
    return FALSE;
  op_finished (s, op);
  return TRUE;
}

/* Evicts unreferenced buffers until `need` more bytes fit in the budget. A victim whose
 * buffer has exactly the size needed is handed back in *reuse instead of being freed.
 * When `wait` is set (a request, not a prefetch) and prefetches still loading hold the
 * room, their reads are waited for: landed, nobody holds them, and they can be evicted. */
static gboolean
make_room (BwExpertStore *s, int layer, guint64 need, gboolean wait, guint8 **reuse)
{
  *reuse = NULL;
  while (s->bytes_used + need > s->budget)
    {
      int victim;
      Slot *slot;
      if (s->bytes_used - s->bytes_evictable + need > s->budget)
        {
          if (wait && s->prefetch_in_flight > 0 && reap_one (s))
            continue;
          return FALSE;   /* even evicting everything would not do */
        }
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
      slot = s->layers[victim].tail;
      if (*reuse == NULL && slot->cap == need)
        *reuse = slot_destroy (s, slot, TRUE);
      else
        slot_destroy (s, slot, FALSE);
      if (*reuse != NULL)
        return TRUE;   /* the reused buffer is already counted out of bytes_used */
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
      dst[m]->act_bits = s->opts.act_bits;
      dst[m]->isa = s->opts.isa;
      dst[m]->data = doff != BW_PLAN_ABSENT ? slot->buf + doff : NULL;
      dst[m]->scales = soff != BW_PLAN_ABSENT ? slot->buf + soff : NULL;
    }
}

static int
plan_ops (const BwExpertPlan *plan)
{
  int n = 0;
  for (int r = 0; r < plan->n_runs; r++)
    n += (int) ((plan->runs[r].need + READ_PIECE - 1) / READ_PIECE);
  return n;
}

/* One op per piece of each run; only the last piece of a run may stop short of its aligned
 * length (the file may end inside the O_DIRECT tail). */
static void
slot_set_ops (BwExpertStore *s, Slot *slot, const BwExpertPlan *plan)
{
  int k = 0;
  slot->n_ops = plan_ops (plan);
  slot->ops = g_new0 (BwIoOp, MAX (slot->n_ops, 1));
  slot->pending = slot->n_ops;
  for (int r = 0; r < plan->n_runs; r++)
    {
      const BwReadRun *run = &plan->runs[r];
      int direct_fd = s->fds_direct != NULL ? s->fds_direct[run->shard] : -1;
      guint64 full = direct_fd >= 0 ? run->len : run->need;
      for (guint64 at = 0; at < run->need; at += READ_PIECE)
        {
          BwIoOp *op = &slot->ops[k++];
          gboolean last = at + READ_PIECE >= run->need;
          op->fd_buffered = s->fds[run->shard];
          op->direct = direct_fd >= 0;
          op->fd = op->direct ? direct_fd : op->fd_buffered;
          op->off = run->file_off + at;
          op->len = last ? full - at : READ_PIECE;
          op->need = last ? run->need - at : READ_PIECE;
          op->dst = slot->buf + run->buf_off + at;
          op->owner = slot;
          op->tag = r;
        }
    }
}

Slot *
bw_store_slot_create (BwExpertStore *s, int layer, int expert, gboolean wait, GError **error)
{
  const BwExpertLayout *l = layout_of (s, layer, expert);
  BwExpertPlan plan;
  guint8 *buf = NULL;
  Slot *slot;

  if (!bw_expert_plan_build (l, s->align, &plan))
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "layer %d has no routed expert %d", layer, expert);
      return NULL;
    }
  gsize cap = plan.buf_bytes;
  if (s->spares != NULL && cap == bw_buffer_pool_size (s->spares))
    buf = bw_buffer_pool_take (s->spares);
  /* None ready: what the pool would still bring in makes way before cached experts do. */
  if (buf == NULL && s->spares != NULL)
    {
      guint64 total = s->bytes_used + bw_buffer_pool_reserved (s->spares) + cap;
      if (total > s->budget)
        bw_buffer_pool_shrink (s->spares, total - s->budget);
    }
  if (buf == NULL && !make_room (s, layer, cap, wait, &buf))
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_BUDGET,
                   "the expert cache budget (%" G_GUINT64_FORMAT " bytes) is too small for "
                   "the experts layer %d needs at once", s->budget, layer);
      return NULL;
    }
  if (buf == NULL)
    {
      void *p = bw_huge_alloc (plan.buf_bytes, BW_PLAN_BUF_ALIGN);
      if (p == NULL)
        {
          g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_NOMEM,
                       "out of memory for a %" G_GSIZE_FORMAT "-byte expert buffer (layer %d, "
                       "expert %d)", plan.buf_bytes, layer, expert);
          return NULL;
        }
      buf = p;
    }
  slot = g_new0 (Slot, 1);
  slot->layer = layer;
  slot->expert = expert;
  slot->buf = buf;
  slot->cap = cap;
  slot->state = SLOT_LOADING;
  slot->sticky = s->sticky != NULL && s->sticky[slot_index (s, layer, expert)];
  s->table[slot_index (s, layer, expert)] = slot;
  account (s, slot, +1);
  slot_set_weights (s, slot, &plan);
  slot_set_ops (s, slot, &plan);
  return slot;
}

/* Starts the reads of the given new slots with one submission, in the order the caller
 * will wait for them: each expert is one or a few large contiguous reads, so the order
 * between experts costs an SSD nothing, while issuing them in wait order lets the first
 * expert's matmul start as soon as its own bytes land instead of after the whole batch. */
void
bw_store_start_reads (BwExpertStore *s, Slot **slots, int n, BwIoClass klass)
{
  int n_ops = 0;
  for (int i = 0; i < n; i++)
    for (int r = 0; r < slots[i]->n_ops; r++)
      s->op_scratch[n_ops++] = &slots[i]->ops[r];
  bw_io_submit (s->io, s->op_scratch, n_ops, klass);
}

/* The slot's reads, listed in the store's op scratch. */
static BwIoOp **
slot_op_list (BwExpertStore *s, Slot *slot)
{
  for (int r = 0; r < slot->n_ops; r++)
    s->op_scratch[r] = &slot->ops[r];
  return s->op_scratch;
}

/* Withdraws a slot's reads if none has started; TRUE when they were. */
static gboolean
slot_withdraw (BwExpertStore *s, Slot *slot)
{
  return slot->n_ops > 0 && bw_io_cancel (s->io, slot_op_list (s, slot), slot->n_ops);
}

static gboolean
chosen (const Slot *slot, const int *experts, int n)
{
  for (int i = 0; i < n; i++)
    if (experts[i] == slot->expert)
      return TRUE;
  return FALSE;
}

/* The layer's actual choice is known: lookahead reads for experts it did not choose that
 * have not started yet are withdrawn, so they never delay the reads the layer waits on,
 * and their buffers go back to the spares. Started ones land in the cache. */
static void
cancel_unchosen (BwExpertStore *s, int layer, const int *experts, int n)
{
  if (s->prefetch_in_flight == 0)
    return;
  for (int e = 0; e < s->n_experts; e++)
    {
      Slot *slot = s->table[slot_index (s, layer, e)];
      if (slot == NULL || !slot->prefetched || slot->state != SLOT_LOADING || slot->refs > 0
          || chosen (slot, experts, n))
        continue;
      if (!slot_withdraw (s, slot))
        continue;
      s->prefetch_in_flight -= MIN (s->prefetch_in_flight, slot->prefetch_bytes);
      atomic_fetch_add (&s->prefetch_cancelled, 1);
      slot->prefetched = FALSE;
      gboolean spare = s->spares != NULL && slot->cap == bw_buffer_pool_size (s->spares);
      guint8 *buf = slot_destroy (s, slot, spare);
      if (buf != NULL)
        bw_buffer_pool_give (s->spares, buf);
    }
}

/* A request waits on a lookahead read that has not landed yet: it jumps the queue. */
static void
hurry_slot (BwExpertStore *s, Slot *slot)
{
  bw_io_hurry (s->io, slot_op_list (s, slot), slot->n_ops);
}

static const char *
backend_name (BwExpertStore *s)
{
  gboolean uring = strcmp (bw_io_backend_name (s->io), "io_uring") == 0;
  gboolean direct = FALSE;
  for (int i = 0; s->fds_direct != NULL && i < s->ckpt->n_shards; i++)
    direct |= s->fds_direct[i] >= 0;
  if (direct)
    return uring ? "io_uring+O_DIRECT" : "pread+O_DIRECT";
  if (s->opts.direct_io)
    return uring ? "io_uring (O_DIRECT refused)" : "pread (O_DIRECT refused)";
  return uring ? "io_uring" : "pread";
}

/* Bytes per element of the plain formats a stored-transposed matrix may have. */
static gsize
plain_elem_bytes (BwFormat fmt)
{
  return fmt == BW_FMT_F32 ? 4 : 2;
}

/* Turns a landed expert's stored-transposed matrices ([cols][rows]) into [rows][cols] in
 * place, through the store's transpose buffer (completions run on one thread at a time). */
static void
slot_untranspose (BwExpertStore *s, Slot *slot)
{
  const BwExpertLayout *l = layout_of (s, slot->layer, slot->expert);
  const BwExpertTensor *src[3] = { &l->gate, &l->up, &l->down };
  BwMatrix *dst[3] = { &slot->weights.gate, &slot->weights.up, &slot->weights.down };

  for (int m = 0; m < 3; m++)
    {
      if (!src[m]->transposed)
        continue;
      gsize es = plain_elem_bytes (src[m]->fmt), rows = src[m]->rows, cols = src[m]->cols;
      guint8 *data = (guint8 *) dst[m]->data, *tmp = s->transpose_buf;
      if (es == 2)
        for (gsize c = 0; c < cols; c++)
          for (gsize r = 0; r < rows; r++)
            ((guint16 *) tmp)[r * cols + c] = ((const guint16 *) data)[c * rows + r];
      else
        for (gsize c = 0; c < cols; c++)
          for (gsize r = 0; r < rows; r++)
            ((guint32 *) tmp)[r * cols + c] = ((const guint32 *) data)[c * rows + r];
      memcpy (data, tmp, rows * cols * es);
    }
}

/* The largest stored-transposed matrix of any layout, in bytes. */
static gsize
transpose_bytes (const BwExpertStore *s)
{
  gsize most = 0;
  for (gsize i = 0; i < (gsize) s->n_slots; i++)
    {
      const BwExpertTensor *t[3] = { &s->layouts[i].gate, &s->layouts[i].up,
                                     &s->layouts[i].down };
      for (int m = 0; m < 3; m++)
        if (t[m]->transposed)
          most = MAX (most, (gsize) (t[m]->rows * t[m]->cols) * plain_elem_bytes (t[m]->fmt));
    }
  return most;
}

/* Swaps a landed expert's buffer for its re-encoded copy, which is all the cache keeps. */
static void
slot_requantise (BwExpertStore *s, Slot *slot)
{
  gsize bytes = bw_expert_requant_bytes (s->requant, &slot->weights);
  if (bytes == 0)
    return;   /* as small as stored already */
  void *buf = bw_huge_alloc (bytes, BW_PLAN_BUF_ALIGN);
  if (buf == NULL)
    {
      g_set_error (&slot->error, BW_STORE_ERROR, BW_STORE_ERROR_NOMEM,
                   "out of memory re-encoding an expert (%" G_GSIZE_FORMAT " bytes)", bytes);
      slot->state = SLOT_FAILED;
      return;
    }
  bw_expert_requant_run (s->requant, &slot->weights, buf);
  account (s, slot, -1);
  bw_huge_free (slot->buf);
  slot->buf = buf;
  slot->cap = bytes;
  account (s, slot, +1);
}

/* Folds a finished read into its slot. */
static void
op_finished (BwExpertStore *s, BwIoOp *op)
{
  Slot *slot = op->owner;
  int run = op->tag;

  atomic_fetch_add (&s->bytes_read, op->done);
  if (op->err != 0 && slot->speculative && !slot->retried)
    {
      /* Nobody asked for a speculative read when it was started: one failure is read again
       * before any request that took it over hears of it. */
      slot->retried = TRUE;
      bw_io_submit (s->io, &op, 1, BW_IO_URGENT);
      return;
    }
  if (op->direct_refused && s->fds_direct != NULL)
    {
      /* Later reads of this shard go buffered; the descriptor stays open until free
       * because reads in flight may still use it. */
      for (int i = 0; i < s->ckpt->n_shards; i++)
        if (s->fds[i] == op->fd_buffered)
          s->fds_direct[i] = -1;
      atomic_store (&s->backend, backend_name (s));
    }
  if (op->err != 0 && slot->error == NULL)
    {
      BwExpertPlan plan;
      const BwTensorInfo *t;
      bw_expert_plan_build (layout_of (s, slot->layer, slot->expert), s->align, &plan);
      t = bw_expert_layout_tensor (layout_of (s, slot->layer, slot->expert),
                                   plan.runs[run].first_tensor);
      g_set_error (&slot->error, BW_STORE_ERROR, BW_STORE_ERROR_IO,
                   "%s: reading tensor %s (%" G_GUINT64_FORMAT " bytes at offset %"
                   G_GUINT64_FORMAT "): %s", s->ckpt->shards[plan.runs[run].shard].path,
                   t->name, op->need, op->off,
                   op->err == BW_IO_SHORT ? "unexpected end of file (truncated?)"
                                          : g_strerror (op->err));
    }
  if (--slot->pending > 0)
    return;
  slot->state = slot->error != NULL ? SLOT_FAILED : SLOT_READY;
  if (slot->warming)
    s->warm_landed++;
  /* Also when a request took the prefetch over before its reads finished. */
  s->prefetch_in_flight -= MIN (s->prefetch_in_flight, slot->prefetch_bytes);
  slot->prefetch_bytes = 0;
  if (slot->state == SLOT_READY && s->transpose_buf != NULL)
    slot_untranspose (s, slot);
  if (slot->state == SLOT_READY && s->requant != NULL)
    slot_requantise (s, slot);
  if (slot->refs == 0)
    {
      /* A prefetch nobody holds yet. */
      if (slot->state == SLOT_FAILED)
        {
          slot->prefetched = FALSE;
          slot_destroy (s, slot, FALSE);
        }
      else
        lru_push_front (s, slot);
    }
}

/* ---- creation ---- */

/* The direct-I/O switch, from the memory the process can take now (the dense weights are
 * already loaded) and the experts' bytes as stored. */
static void
choose_direct (BwExpertStore *s)
{
  BwMemLimits lim;
  guint64 all = 0;

  bw_mem_limits_read (NULL, &lim);
  s->room = bw_mem_limits_room (&lim);
  for (gsize i = 0; i < s->n_slots; i++)
    if (s->layouts[i].gate.data != NULL)
      all += bw_expert_layout_bytes (&s->layouts[i]);
  if (s->opts.direct_io == BW_STORE_AUTO)
    s->opts.direct_io = bw_policy_prefer_direct (s->room, all);
  s->opts.direct_io = s->opts.direct_io != FALSE;
}

/* The budget: the option, or the default out of the room, no more than buffers for every
 * expert take. */
static void
choose_budget (BwExpertStore *s)
{
  guint64 all = 0;
  for (int l = 0; l < s->n_layers; l++)
    all += (guint64) s->layers[l].n_experts * s->layers[l].max_buf;
  s->budget = s->opts.ram_budget;
  if (s->budget == 0)
    s->budget = bw_policy_default_budget (s->room, s->opts.direct_io, all);
  if (s->budget == 0)
    s->budget = FALLBACK_BUDGET;
}

static gboolean
open_shards (BwExpertStore *s, GError **error)
{
  int n = s->ckpt->n_shards;
  s->fds = g_new (int, MAX (n, 1));
  for (int i = 0; i < n; i++)
    s->fds[i] = -1;
  if (s->opts.direct_io)
    {
      s->fds_direct = g_new (int, MAX (n, 1));
      for (int i = 0; i < n; i++)
        s->fds_direct[i] = -1;
    }
  for (int i = 0; i < n; i++)
    {
      const char *path = s->ckpt->shards[i].path;
      s->fds[i] = open (path, O_RDONLY | O_CLOEXEC);
      if (s->fds[i] < 0)
        {
          int saved = errno;
          g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO, "%s: %s", path,
                       g_strerror (saved));
          return FALSE;
        }
      /* Filesystems without O_DIRECT (tmpfs) refuse it here with EINVAL. */
      if (s->fds_direct != NULL)
        s->fds_direct[i] = open (path, O_RDONLY | O_CLOEXEC | O_DIRECT);
    }
  return TRUE;
}

static void
setup_pins (BwExpertStore *s)
{
  g_autofree guint64 *bytes = g_new0 (guint64, s->n_slots);
  g_autofree gboolean *pin = g_new0 (gboolean, s->n_slots);
  guint64 pinned_bytes = 0;

  s->history = bw_usage_history_new (s->n_layers, s->n_experts);
  s->history_path = bw_usage_history_path (s->opts.history_dir, s->ckpt, s->n_layers,
                                           s->n_experts);
  /* A missing or corrupt history just means no pins yet; it is rewritten at free. */
  s->past = bw_usage_history_load (s->history_path, s->n_layers, s->n_experts, NULL);
  atomic_store (&s->pin_state, BW_PINS_NO_HISTORY);
  if (s->past == NULL)
    return;
  guint64 largest = 0, allowance;
  for (int l = 0; l < s->n_layers; l++)
    {
      largest = MAX (largest, s->layers[l].max_buf);
      for (int e = 0; e < s->n_experts; e++)
        if (layout_of (s, l, e)->gate.data != NULL)
          bytes[slot_index (s, l, e)] = s->layers[l].max_buf;
    }
  /* Pins never take the room every layer needs for at least one expert of its own. */
  allowance = MIN ((guint64) ((double) s->budget * PIN_FRACTION),
                   s->budget - MIN (s->budget, largest));
  s->sticky = g_new0 (guint8, s->n_slots);
  bw_policy_choose_pins (s->past->counts, bytes, (int) s->n_slots, allowance, PIN_MIN_COUNT,
                         pin, &pinned_bytes);
  {
    guint64 all = 0, pinned = 0;
    for (gsize i = 0; i < s->n_slots; i++)
      {
        s->sticky[i] = pin[i] != FALSE;
        all += s->past->counts[i];
        pinned += pin[i] ? s->past->counts[i] : 0;
      }
    s->pin_share = all > 0 ? (double) pinned / (double) all : 0;
    if (pinned_bytes > 0)
      atomic_store (&s->pin_state, BW_PINS_ACTIVE);
  }
}

BwExpertStore *
bw_expert_store_new (const BwCheckpoint *ckpt, int n_layers, int n_experts,
                     const BwExpertLayout *layouts, const BwStoreOptions *opts,
                     GError **error)
{
  BwExpertStore *s;

  if (n_layers <= 0 || n_experts <= 0 || n_experts > 1 << 20 || n_layers > 1 << 16)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "expert store: %d layers of %d experts is out of range", n_layers, n_experts);
      return NULL;
    }
  s = g_new0 (BwExpertStore, 1);
  s->ckpt = ckpt;
  s->n_layers = n_layers;
  s->n_experts = n_experts;
  s->n_slots = (gsize) n_layers * (gsize) n_experts;
  s->layouts = g_memdup2 (layouts, s->n_slots * sizeof *layouts);
  if (opts != NULL)
    s->opts = *opts;
  s->opts.history_dir = NULL;   /* borrowed; only used below */
  choose_direct (s);
  s->align = s->opts.direct_io ? BW_PLAN_BUF_ALIGN : 1;
  s->table = g_new0 (Slot *, s->n_slots);
  s->layer_tokens = g_new0 (_Atomic guint32, MAX (s->n_layers, 1));
  s->last_token = g_new0 (_Atomic guint32, MAX (s->n_slots, 1));
  s->layers = g_new0 (LayerCache, n_layers);
  s->policy_scratch = g_new0 (BwLayerCacheState, n_layers);

  for (int l = 0; l < n_layers; l++)
    {
      gboolean has = FALSE;
      for (int e = 0; e < n_experts; e++)
        {
          const BwExpertLayout *lay = layout_of (s, l, e);
          BwExpertPlan plan;
          if (!bw_expert_plan_build (lay, s->align, &plan))
            continue;
          has = TRUE;
          s->layers[l].max_buf = MAX (s->layers[l].max_buf, plan.buf_bytes);
          s->layers[l].stored = MAX (s->layers[l].stored, bw_expert_layout_bytes (lay));
          s->layers[l].n_experts++;
          s->max_ops = MAX (s->max_ops, plan_ops (&plan));
          s->total_expert_bytes += bw_expert_layout_bytes (lay);
          s->n_total_experts++;
        }
      s->n_moe_layers += has;
    }
  choose_budget (s);

  s->op_scratch = g_new0 (BwIoOp *, (gsize) BW_MAX_BATCH_EXPERTS * (gsize) MAX (s->max_ops, 1));
  gsize tb = transpose_bytes (s);
  s->transpose_buf = tb > 0 ? g_malloc (tb) : NULL;
  if (!open_shards (s, error))
    {
      bw_expert_store_free (s);
      return NULL;
    }
  if (bw_expert_requant_new (&s->opts, s->layouts, s->n_slots, &s->requant, error))
    s->io = bw_io_new (s->opts.io, s->opts.io_threads, error);
  if (s->io == NULL)
    {
      bw_expert_store_free (s);
      return NULL;
    }
  atomic_store (&s->backend, backend_name (s));
  if (s->opts.pinning)
    {
      s->opts.history_dir = opts->history_dir;
      setup_pins (s);
      s->opts.history_dir = NULL;
    }
  bw_store_warm_start (s);
  /* Counted even without pins, for bw_expert_store_expert_map; saved only with them. */
  if (s->history == NULL)
    s->history = bw_usage_history_new (s->n_layers, s->n_experts);
  return s;
}

static void
save_history (BwExpertStore *s)
{
  if (s->history == NULL || s->history->requests == 0 || s->history_path == NULL)
    return;
  if (s->past != NULL)
    bw_usage_history_fold (s->history, s->past,
                           (guint64) HISTORY_WINDOW_TOKENS * (guint64) MAX (s->n_moe_layers, 1));
  /* Best effort: a read-only cache directory only costs the pins of the next run. */
  bw_usage_history_save (s->history, s->history_path, NULL);
}

void
bw_expert_store_free (BwExpertStore *s)
{
  if (s == NULL)
    return;
  bw_buffer_pool_free (s->spares);
  /* The warm start's reads that have not started are not needed any more. */
  for (gsize i = 0; s->table != NULL && s->io != NULL && i < s->n_slots; i++)
    if (s->table[i] != NULL && s->table[i]->warming && s->table[i]->state == SLOT_LOADING)
      slot_withdraw (s, s->table[i]);
  /* Reads in flight target slot buffers: let them land first. */
  bw_io_free (s->io);
  save_history (s);
  if (s->table != NULL)
    for (gsize i = 0; i < s->n_slots; i++)
      if (s->table[i] != NULL)
        {
          s->table[i]->prefetched = FALSE;
          slot_destroy (s, s->table[i], FALSE);
        }
  for (int i = 0; s->fds != NULL && i < s->ckpt->n_shards; i++)
    {
      if (s->fds[i] >= 0)
        close (s->fds[i]);
      if (s->fds_direct != NULL && s->fds_direct[i] >= 0)
        close (s->fds_direct[i]);
    }
  bw_usage_history_free (s->history);
  bw_usage_history_free (s->past);
  bw_expert_requant_free (s->requant);
  g_free (s->transpose_buf);
  g_free (s->history_path);
  g_free (s->sticky);
  g_free ((gpointer) s->layer_tokens);
  g_free ((gpointer) s->last_token);
  g_free (s->fds);
  g_free (s->fds_direct);
  g_free (s->table);
  g_free (s->layers);
  g_free (s->policy_scratch);
  g_free (s->op_scratch);
  g_free (s->layouts);
  g_free (s);
}

/* Turns every learned pin into an ordinary cached expert. */
static void
drop_pins (BwExpertStore *s)
{
  for (gsize i = 0; i < s->n_slots; i++)
    {
      Slot *slot = s->table[i];
      if (slot != NULL && slot->sticky)
        {
          account (s, slot, -1);
          slot->sticky = FALSE;
          account (s, slot, +1);
          if (slot->refs == 0 && slot->state == SLOT_READY)
            lru_push_front (s, slot);
        }
    }
  g_clear_pointer (&s->sticky, g_free);
  atomic_store (&s->pin_state, BW_PINS_DROPPED);
}

/* Keeps pins only while they earn their place. */
static void
check_pins (BwExpertStore *s)
{
  if (s->sticky == NULL || s->picks < PIN_CHECK_PICKS)
    return;
  if ((double) s->pinned_picks / (double) s->picks < 0.5 * s->pin_share)
    drop_pins (s);
  s->picks = s->pinned_picks = 0;
}

/* ---- batches ---- */

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
        slot_destroy (s, slot, FALSE);   /* a later request retries the read */
      else if (slot->state == SLOT_READY)
        lru_push_front (s, slot);
      /* LOADING slots join the LRU list when their reads finish. */
    }
}

static gboolean
request_fail (BwExpertBatch *batch, int n_acquired, Slot **fresh, int n_fresh)
{
  /* Fresh slots have no reads in flight yet: drop them outright. */
  for (int i = 0; i < n_acquired; i++)
    for (int j = 0; j < n_fresh; j++)
      if (batch->slots[i] == fresh[j])
        batch->slots[i] = NULL;
  /* Every reference to a fresh slot came from this batch (a repeated expert id included). */
  for (int j = 0; j < n_fresh; j++)
    slot_destroy (batch->store, fresh[j], FALSE);
  batch_unpin (batch, n_acquired);
  batch->n = 0;
  return FALSE;
}

/* The statistics of a request, kept apart from its logic: a slot found (resident or
 * loading) or made, and which experts the router picked (usage history, pinned share). */
static void
count_hit (BwExpertStore *s, LayerCache *lc, Slot *slot)
{
  atomic_fetch_add (&s->hits, 1);
  atomic_fetch_add (&lc->hits, 1);
  if (slot->prefetched)
    {
      slot->prefetched = FALSE;
      atomic_fetch_add (&s->prefetch_hits, 1);
      atomic_fetch_add (&lc->prefetch_hits, 1);
    }
  if (slot->warming)
    {
      slot->warming = FALSE;
      atomic_fetch_add (&s->warm_used, 1);
    }
}

static void
count_miss (BwExpertStore *s, LayerCache *lc)
{
  atomic_fetch_add (&s->misses, 1);
  atomic_fetch_add (&lc->misses, 1);
}

static void
count_pick (BwExpertStore *s, int layer, int e)
{
  if (s->history != NULL)
    {
      guint32 *c = &s->history->counts[slot_index (s, layer, e)];
      *c += *c < G_MAXUINT32;
    }
  s->picks++;
  s->pinned_picks += s->sticky != NULL && s->sticky[slot_index (s, layer, e)];
}

gboolean
bw_expert_store_request (BwExpertStore *s, int layer, const int *experts, int n,
                         BwExpertBatch *batch, GError **error)
{
  Slot *fresh[BW_MAX_BATCH_EXPERTS];
  int n_fresh = 0;
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
  cancel_unchosen (s, layer, experts, n);
  for (int i = 0; i < n; i++)
    {
      int e = experts[i];
      Slot *slot;
      if (e < 0 || e >= s->n_experts)
        {
          g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                       "expert request: expert %d of layer %d out of range", e, layer);
          return request_fail (batch, i, fresh, n_fresh);
        }
      slot = s->table[slot_index (s, layer, e)];
      if (slot != NULL && slot->state == SLOT_FAILED && slot->refs == 0)
        {
          slot_destroy (s, slot, FALSE);
          slot = NULL;
        }
      if (slot != NULL)
        {
          count_hit (s, lc, slot);
          if (slot->state == SLOT_LOADING)
            hurry_slot (s, slot);
          lru_remove (s, slot);
        }
      else
        {
          slot = bw_store_slot_create (s, layer, e, TRUE, error);
          if (slot == NULL)
            return request_fail (batch, i, fresh, n_fresh);
          fresh[n_fresh++] = slot;
          count_miss (s, lc);
        }
      count_pick (s, layer, e);
      slot->refs++;
      batch->experts[i] = e;
      batch->slots[i] = slot;
      batch->n = i + 1;
    }
  if (s->history != NULL)
    s->history->requests++;
  bw_store_start_reads (s, fresh, n_fresh, BW_IO_URGENT);
  check_pins (s);
  return TRUE;
}

const BwExpertWeights *
bw_expert_batch_wait (BwExpertBatch *batch, int i, GError **error)
{
  BwExpertStore *s = batch->store;
  Slot *slot;

  if (i < 0 || i >= batch->n)
    {
      g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                   "expert batch: index %d out of range", i);
      return NULL;
    }
  slot = batch->slots[i];
  if (slot->state == SLOT_LOADING)
    {
      guint64 t0 = now_ns ();
      while (slot->state == SLOT_LOADING)
        {
          BwIoOp *op = bw_io_reap (s->io, TRUE);
          if (op == NULL)
            break;   /* cannot happen: the slot's reads are in flight */
          op_finished (s, op);
        }
      atomic_fetch_add (&s->io_wait_ns, now_ns () - t0);
    }
  if (slot->state != SLOT_READY)
    {
      if (slot->error != NULL)
        g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO, "layer %d expert %d: %s",
                     slot->layer, slot->expert, slot->error->message);
      else
        g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_IO,
                     "layer %d expert %d: read lost", slot->layer, slot->expert);
      return NULL;
    }
  return &slot->weights;
}

void
bw_expert_store_poll (BwExpertStore *s)
{
  for (BwIoOp *op; (op = bw_io_reap (s->io, FALSE)) != NULL;)
    op_finished (s, op);
}

gboolean
bw_expert_store_idle (BwExpertStore *s, int timeout_ms)
{
  if (s->io == NULL)
    return FALSE;
  BwIoOp *op = bw_io_reap_within (s->io, timeout_ms);
  if (op != NULL)
    op_finished (s, op);
  bw_expert_store_poll (s);
  return bw_io_in_flight (s->io) > 0;
}

int
bw_expert_batch_wait_any (BwExpertBatch *batch, const gboolean *taken,
                          const BwExpertWeights **weights, GError **error)
{
  BwExpertStore *s = batch->store;
  guint64 t0 = 0;

  /* Fold in what has landed, so a finished read is taken before a blocking wait. */
  bw_expert_store_poll (s);
  for (;;)
    {
      int first = -1;
      for (int i = 0; i < batch->n; i++)
        {
          if (taken[i])
            continue;
          first = first < 0 ? i : first;
          if (((Slot *) batch->slots[i])->state != SLOT_LOADING)
            {
              if (t0 != 0)
                atomic_fetch_add (&s->io_wait_ns, now_ns () - t0);
              *weights = bw_expert_batch_wait (batch, i, error);
              return *weights != NULL ? i : -1;
            }
        }
      if (first < 0)
        {
          g_set_error (error, BW_STORE_ERROR, BW_STORE_ERROR_INVALID,
                       "expert batch: every expert is taken already");
          return -1;
        }
      if (t0 == 0)
        t0 = now_ns ();
      BwIoOp *op = bw_io_reap (s->io, TRUE);
      if (op == NULL)
        {
          /* Nothing in flight yet one is loading: let the plain wait report it. */
          atomic_fetch_add (&s->io_wait_ns, now_ns () - t0);
          *weights = bw_expert_batch_wait (batch, first, error);
          return *weights != NULL ? first : -1;
        }
      op_finished (s, op);
    }
}

void
bw_expert_batch_release (BwExpertBatch *batch)
{
  if (batch->store == NULL)
    return;
  batch_unpin (batch, batch->n);
  batch->n = 0;
}

/* Automatic lookahead: whether to prefetch now, by the last window's hit share. */
static gboolean
prefetch_paying (BwExpertStore *s)
{
  guint64 issued = atomic_load (&s->prefetch_issued), hits = atomic_load (&s->prefetch_hits);
  if (s->prefetch_pause > 0)
    {
      if (--s->prefetch_pause == 0)
        {
          s->prefetch_mark_issued = issued;
          s->prefetch_mark_hits = hits;
        }
      return FALSE;
    }
  if (issued - s->prefetch_mark_issued < PREFETCH_WINDOW)
    return TRUE;
  gboolean paying = 2 * (hits - s->prefetch_mark_hits) >= issued - s->prefetch_mark_issued;
  s->prefetch_mark_issued = issued;
  s->prefetch_mark_hits = hits;
  if (!paying)
    s->prefetch_pause = PREFETCH_PAUSE;
  return paying;
}

void
bw_expert_store_prefetch (BwExpertStore *s, int layer, const int *experts, int n)
{
  Slot *fresh[BW_MAX_BATCH_EXPERTS];
  int n_fresh = 0;
  guint64 limit = (guint64) ((double) s->budget * PREFETCH_FRACTION);

  if (!s->opts.prefetch || layer < 0 || layer >= s->n_layers)
    return;
  if (s->opts.prefetch == BW_STORE_AUTO && !prefetch_paying (s))
    return;
  /* Fold in finished reads so their buffers become evictable. */
  bw_expert_store_poll (s);
  for (int i = 0; i < MIN (n, BW_MAX_BATCH_EXPERTS); i++)
    {
      int e = experts[i];
      Slot *slot;
      if (e < 0 || e >= s->n_experts || s->table[slot_index (s, layer, e)] != NULL
          || layout_of (s, layer, e)->gate.data == NULL
          || s->prefetch_in_flight + s->layers[layer].max_buf > limit)
        continue;
      slot = bw_store_slot_create (s, layer, e, FALSE, NULL);
      if (slot == NULL)
        break;
      slot->prefetched = slot->speculative = TRUE;
      slot->prefetch_bytes = slot->cap;
      s->prefetch_in_flight += slot->cap;
      fresh[n_fresh++] = slot;
      atomic_fetch_add (&s->prefetch_issued, 1);
    }
  bw_store_start_reads (s, fresh, n_fresh, BW_IO_AHEAD);
}

/* ---- queries ---- */

void
bw_expert_store_stats (BwExpertStore *s, BwStoreStats *out)
{
  memset (out, 0, sizeof *out);
  out->hits = atomic_load (&s->hits);
  out->misses = atomic_load (&s->misses);
  out->prefetch_hits = atomic_load (&s->prefetch_hits);
  out->prefetch_issued = atomic_load (&s->prefetch_issued);
  out->prefetch_wasted = atomic_load (&s->prefetch_wasted);
  out->prefetch_cancelled = atomic_load (&s->prefetch_cancelled);
  out->warm_issued = atomic_load (&s->warm_issued);
  out->warm_used = atomic_load (&s->warm_used);
  out->bytes_read = atomic_load (&s->bytes_read);
  out->io_wait_ns = atomic_load (&s->io_wait_ns);
  if (s->io != NULL)
    bw_io_depth (s->io, &out->read_busy_us, &out->read_depth_us);
  out->touched_bytes = s->touched_bytes;
  out->touch_us = s->touch_us;
  out->n_pinned = atomic_load (&s->n_pinned);
  out->n_cached = atomic_load (&s->n_cached);
  out->bytes_pinned = atomic_load (&s->bytes_pinned);
  out->bytes_cached = atomic_load (&s->bytes_cached);
  out->n_on_disk = s->n_total_experts - MIN (s->n_total_experts, out->n_pinned + out->n_cached);
  out->bytes_on_disk = s->total_expert_bytes
                       - MIN (s->total_expert_bytes, out->bytes_pinned + out->bytes_cached);
  out->backend = atomic_load (&s->backend);
  out->pin_state = (BwPinState) atomic_load (&s->pin_state);
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

/* The layer's largest expert buffer and the budget left beside what is held (not
 * evictable); FALSE where the layer has no experts or nothing is left. */
static gboolean
layer_room (BwExpertStore *s, int layer, guint64 *per, guint64 *room)
{
  guint64 held;

  if (layer < 0 || layer >= s->n_layers || s->layers[layer].max_buf == 0)
    return FALSE;
  *per = s->layers[layer].max_buf;
  held = s->bytes_used - s->bytes_evictable;
  if (held >= s->budget)
    return FALSE;
  *room = s->budget - held;
  return TRUE;
}

int
bw_expert_store_batch_limit (BwExpertStore *s, int layer)
{
  guint64 per, room;

  if (!layer_room (s, layer, &per, &room))
    return 0;
  return (int) MIN (room / per, (guint64) MIN (s->n_experts, BW_MAX_BATCH_EXPERTS));
}

int
bw_expert_store_batch_fit (BwExpertStore *s, int layer, const int *experts, int n)
{
  guint64 room, per;
  int i;

  if (!layer_room (s, layer, &per, &room))
    return 0;
  for (i = 0; i < MIN (n, BW_MAX_BATCH_EXPERTS); i++)
    {
      int e = experts[i];
      const Slot *slot = e >= 0 && e < s->n_experts ? s->table[slot_index (s, layer, e)] : NULL;
      /* A new buffer (pinned or not); a cached one stops being evictable; one held or
       * loading already is counted. A failed read is dropped and read again. */
      guint64 cost = slot == NULL || (slot->state == SLOT_FAILED && slot->refs == 0) ? per
                     : slot->in_lru ? slot->cap : 0;
      if (cost > room)
        break;
      room -= cost;
    }
  return i;
}

guint64
bw_expert_store_budget (BwExpertStore *s)
{
  return s->budget;
}

void
bw_expert_store_inject_fault (BwExpertStore *s, int nth, int err)
{
  bw_io_inject_fault (s->io, nth, err);
}

gboolean
bw_expert_store_is_pinned (BwExpertStore *s, int layer, int expert)
{
  if (s->sticky == NULL || layer < 0 || layer >= s->n_layers || expert < 0
      || expert >= s->n_experts)
    return FALSE;
  return s->sticky[slot_index (s, layer, expert)] != 0;
}

const char *
bw_expert_store_history_path (BwExpertStore *s)
{
  return s->history_path;
}

int
bw_expert_store_layer_experts (BwExpertStore *s, int layer)
{
  return layer >= 0 && layer < s->n_layers ? s->layers[layer].n_experts : 0;
}

guint64
bw_expert_store_expert_bytes (BwExpertStore *s, int layer)
{
  return layer >= 0 && layer < s->n_layers ? s->layers[layer].stored : 0;
}

gboolean
bw_expert_store_is_resident (BwExpertStore *s, int layer, int expert)
{
  if (layer < 0 || layer >= s->n_layers || expert < 0 || expert >= s->n_experts)
    return FALSE;
  return s->table[slot_index (s, layer, expert)] != NULL;
}

int
bw_expert_store_n_layers (BwExpertStore *s)
{
  return s->n_layers;
}

void
bw_expert_store_expert_map (BwExpertStore *s, guint8 *tiers, guint32 *uses)
{
  for (gsize i = 0; i < s->n_slots; i++)
    {
      const Slot *slot = s->table[i];
      tiers[i] = slot == NULL ? BW_EXPERT_ON_DISK
                 : slot->sticky ? BW_EXPERT_PINNED : BW_EXPERT_CACHED;
    }
  if (uses != NULL)
    memcpy (uses, s->history->counts, s->n_slots * sizeof *uses);
}

void
bw_expert_store_note_routes (BwExpertStore *s, int layer, const int *ids, int n_tokens,
                             int top_k)
{
  if (layer < 0 || layer >= s->n_layers || n_tokens <= 0)
    return;
  guint32 base = atomic_load_explicit (&s->layer_tokens[layer], memory_order_relaxed);
  for (int t = 0; t < n_tokens; t++)
    for (int j = 0; j < top_k; j++)
      {
        int e = ids[t * top_k + j];
        if (e >= 0 && e < s->n_experts)
          atomic_store_explicit (&s->last_token[slot_index (s, layer, e)], base + (guint32) t + 1,
                                 memory_order_relaxed);
      }
  atomic_store_explicit (&s->layer_tokens[layer], base + (guint32) n_tokens,
                         memory_order_release);
}

void
bw_expert_store_expert_ages (BwExpertStore *s, guint32 *ages)
{
  for (int l = 0; l < s->n_layers; l++)
    {
      guint32 now = atomic_load_explicit (&s->layer_tokens[l], memory_order_acquire);
      for (int e = 0; e < s->n_experts; e++)
        {
          gsize i = slot_index (s, l, e);
          guint32 at = atomic_load_explicit (&s->last_token[i], memory_order_relaxed);
          /* Read while a token is being noted, an expert may already carry its count. */
          ages[i] = at == 0 ? G_MAXUINT32 : at >= now ? 0 : now - at;
        }
    }
}
