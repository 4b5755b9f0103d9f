#include "blocks/moe.h"

#include <stdatomic.h>
#include <string.h>

#include "blocks/scratch.h"
#include "core/threadpool.h"

static guint64
now_ns (void)
{
  return (guint64) g_get_monotonic_time () * 1000u;
}

/* How many of a layer's likeliest experts a lookahead reads: the likeliest few are right
 * far more often than the tail of the top-k, and a wrong prefetch costs a whole expert's
 * read (PERFORMANCE.md, router lookahead). */
static int
lookahead_breadth (const BwMoe *layer, int top)
{
  int k = layer->router.top_k;
  return CLAMP (top > 0 ? top : k / 4, 1, k);
}

void
bw_moe_set_lookahead (BwMoe *moe, const BwMoe *next, int top)
{
  moe->next = next;
  moe->next_top = lookahead_breadth (next, top);
}

void
bw_moe_set_start_lookahead (BwMoe *moe, int top)
{
  moe->start_top = lookahead_breadth (moe, top);
}

/* Floats of one token's gate product: the fused gate_up has two rows per unit. */
static gsize
gate_floats (const BwMoe *moe)
{
  return (gsize) moe->expert_inter * (moe->fused_gate_up ? 2 : 1);
}

/* The tokens (and their weights) that chose each expert, grouped by expert. */
typedef struct {
  int n_used;
  int *used;       /* expert ids in the order they are requested */
  int *start;      /* [n_experts]: first entry of expert e in tok/w */
  int *count;      /* [n_experts] */
  int *tok;        /* [n * k] */
  float *w;        /* [n * k] */
} ExpertTokens;

/* Everything bw_moe_route takes for n tokens: the router logits [n][E] and its work, the
 * choice [n][top_k]; with a lookahead, the same for one token of the next layer (also in a
 * prefill: one scratch, sized for the largest n, serves the decode steps too). */
typedef struct {
  float *logits, *rs, *weights;
  int *ids;
  float *next_logits, *next_rs, *next_w;
  int *next_ids;
} RouteScratch;

static void
carve_route (const BwMoe *moe, int n, BwScratch *cur, RouteScratch *s)
{
  gsize E = moe->router.n_experts, k = moe->router.top_k, f = sizeof (float);
  s->logits = bw_scratch_take (cur, n * E * f);
  s->rs = bw_scratch_take (cur, bw_router_scratch_floats (&moe->router) * f);
  s->ids = bw_scratch_take (cur, n * k * sizeof (int));
  s->weights = bw_scratch_take (cur, n * k * f);
  s->next_logits = s->next_rs = s->next_w = NULL;
  s->next_ids = NULL;
  if (moe->next)
    {
      const BwRouterConfig *r = &moe->next->router;
      s->next_logits = bw_scratch_take (cur, r->n_experts * f);
      s->next_rs = bw_scratch_take (cur, bw_router_scratch_floats (r) * f);
      s->next_ids = bw_scratch_take (cur, r->top_k * sizeof (int));
      s->next_w = bw_scratch_take (cur, r->top_k * f);
    }
}

/* Everything bw_moe_mix takes for n tokens: the grouping, and for several tokens the
 * gathered inputs of one expert, every (token, expert) pair's output row and one expert's
 * gate and up products; for one token each expert's own gate, up and output rows (taken
 * for any n, like the lookahead). */
typedef struct {
  ExpertTokens g;
  float *xg, *out, *gt, *up;
  float *gts, *ups, *outs;
} MixScratch;

static void
carve_mix (const BwMoe *moe, int n, BwScratch *cur, MixScratch *s)
{
  gsize E = moe->router.n_experts, k = moe->router.top_k, f = sizeof (float);
  gsize width = moe->expert_width, inter = moe->expert_inter;
  s->g.used = bw_scratch_take (cur, E * sizeof (int));
  s->g.start = bw_scratch_take (cur, E * sizeof (int));
  s->g.count = bw_scratch_take (cur, E * sizeof (int));
  s->g.tok = bw_scratch_take (cur, n * k * sizeof (int));
  s->g.w = bw_scratch_take (cur, n * k * f);
  s->xg = bw_scratch_take (cur, n * width * f);
  s->out = bw_scratch_take (cur, n * k * width * f);
  s->gt = bw_scratch_take (cur, n * gate_floats (moe) * f);
  s->up = bw_scratch_take (cur, n * inter * f);
  s->outs = bw_scratch_take (cur, k * width * f);
  s->gts = bw_scratch_take (cur, k * gate_floats (moe) * f);
  s->ups = bw_scratch_take (cur, k * inter * f);
}

gsize
bw_moe_routed_scratch_bytes (const BwMoe *moe, int n)
{
  BwScratch m = bw_scratch_measure ();
  RouteScratch r;
  MixScratch x;
  carve_route (moe, n, &m, &r);
  carve_mix (moe, n, &m, &x);
  return bw_scratch_used (&m);
}

/* bw_moe_forward: the routed part's own scratch, then for a gated shared expert its output
 * and gate, then the shared experts' scratch. */
typedef struct {
  BwScratch routed;
  float *sh, *gate;
  void *shared;
} MoeScratch;

static void
carve_forward (const BwMoe *moe, int n, BwScratch *cur, MoeScratch *s)
{
  s->routed = bw_scratch_sub (cur, bw_moe_routed_scratch_bytes (moe, n));
  s->sh = s->gate = NULL;
  if (moe->has_shared && moe->has_shared_gate)
    {
      s->sh = bw_scratch_take (cur, (gsize) n * moe->expert_width * sizeof (float));
      s->gate = bw_scratch_take (cur, (gsize) n * sizeof (float));
    }
  s->shared = moe->has_shared ? bw_scratch_take (cur, bw_mlp_scratch_bytes (&moe->shared, n))
                              : NULL;
}

gsize
bw_moe_scratch_bytes (const BwMoe *moe, int n)
{
  BwScratch m = bw_scratch_measure ();
  MoeScratch s;
  carve_forward (moe, n, &m, &s);
  return bw_scratch_used (&m);
}

/* The next MoE layer's router applied to this layer's decode input: its choice is what that
 * layer will probably pick, since the residual stream changes little from layer to layer. */
static void
predict_next (const BwMoe *moe, const float *x, BwMoeRoute *route, const RouteScratch *s,
              BwPool *pool)
{
  const BwMoe *next = moe->next;
  route->next_ids = s->next_ids;
  bw_matvec (&next->gate, x, s->next_logits, pool);
  bw_router_select (&next->router, s->next_logits, next->bias, s->next_ids, s->next_w,
                    s->next_rs);
  route->next_layer = next->layer;
  route->n_next = moe->next_top;
}

void
bw_moe_route (const BwMoe *moe, const float *x, int n, BwMoeRoute *route, BwScratch *cursor,
              BwPool *pool, BwMoeTimes *times)
{
  guint64 t0 = now_ns ();
  int E = moe->router.n_experts, k = moe->router.top_k;
  RouteScratch s;
  carve_route (moe, n, cursor, &s);
  route->ids = s.ids;
  route->weights = s.weights;

  bw_matmul (&moe->gate, x, n, s.logits, pool);
  for (int t = 0; t < n; t++)
    bw_router_select (&moe->router, s.logits + (gsize) t * E, moe->bias, route->ids + t * k,
                      route->weights + t * k, s.rs);
  route->n_next = 0;
  if (n == 1 && moe->next)
    predict_next (moe, x, route, &s, pool);
  if (times)
    times->route_ns += now_ns () - t0;
}


void
bw_moe_prefetch_start (const BwMoe *moe, BwExpertStore *store, const float *x, void *scratch,
                       BwPool *pool)
{
  BwScratch cur = bw_scratch_init (scratch, bw_moe_routed_scratch_bytes (moe, 1));
  RouteScratch s;
  if (moe->start_top <= 0)
    return;
  carve_route (moe, 1, &cur, &s);
  bw_matvec (&moe->gate, x, s.logits, pool);
  bw_router_select (&moe->router, s.logits, moe->bias, s.ids, s.weights, s.rs);
  bw_expert_store_prefetch (store, moe->layer, s.ids, moe->start_top);
}

/* g's arrays are carved already (carve_mix). */
static void
group_by_expert (const BwMoe *moe, const BwMoeRoute *route, int n, ExpertTokens *g)
{
  int E = moe->router.n_experts, k = moe->router.top_k;
  memset (g->count, 0, E * sizeof (int));
  for (int i = 0; i < n * k; i++)
    g->count[route->ids[i]]++;
  g->n_used = 0;
  int at = 0;
  for (int e = 0; e < E; e++)
    {
      g->start[e] = at;
      at += g->count[e];
      if (g->count[e] > 0)
        g->used[g->n_used++] = e;
      g->count[e] = 0;
    }
  for (int t = 0; t < n; t++)
    for (int j = 0; j < k; j++)
      {
        int e = route->ids[t * k + j];
        int slot = g->start[e] + g->count[e]++;
        g->tok[slot] = t;
        g->w[slot] = route->weights[t * k + j];
      }
}

static void
add_bias (float *y, const float *b, int64_t n)
{
  for (int64_t i = 0; i < n; i++)
    y[i] += b[i];
}

/* One token's fused gate_up row gu [2 inter] (+ expert e's bias) to h [inter]; h may
 * start at gu (the rows are compacted in place). */
static void
fused_act (const BwMoe *moe, int e, float *gu, float *h)
{
  int64_t inter = moe->expert_inter;
  if (moe->gate_up_bias)
    add_bias (gu, moe->gate_up_bias + (gsize) e * 2 * inter, 2 * inter);
  bw_gated_act (&moe->act, h, gu, NULL, (int) inter);
}

/* m rows of expert e's separate gate and up products plus its gate and up biases. */
static void
split_bias (const BwMoe *moe, int e, float *gt, float *up, int m)
{
  int64_t inter = moe->expert_inter;
  for (int i = 0; i < m; i++)
    {
      add_bias (gt + i * inter, moe->gate_bias + (gsize) e * inter, inter);
      add_bias (up + i * inter, moe->up_bias + (gsize) e * inter, inter);
    }
}

/* Expert e's output for the tokens that chose it, into out ([count][width]). */
static void
run_expert (const BwMoe *moe, BwExpertStore *store, const BwExpertWeights *ew,
            const ExpertTokens *g, int e, const float *xe, float *xg, float *gt, float *up,
            float *out, BwPool *pool)
{
  int64_t width = moe->expert_width, inter = moe->expert_inter;
  int m = g->count[e];
  const int *tok = g->tok + g->start[e];

  for (int i = 0; i < m; i++)
    memcpy (xg + i * width, xe + (gsize) tok[i] * width, width * sizeof (float));
  bw_matmul (&ew->gate, xg, m, gt, pool);
  bw_expert_store_poll (store);
  if (moe->fused_gate_up)
    for (int i = 0; i < m; i++)
      fused_act (moe, e, gt + (gsize) i * 2 * inter, gt + (gsize) i * inter);
  else
    {
      bw_matmul (&ew->up, xg, m, up, pool);
      bw_expert_store_poll (store);
      if (moe->gate_bias)
        split_bias (moe, e, gt, up, m);
      bw_gated_act (&moe->act, gt, gt, up, (int) (m * inter));
    }
  bw_matmul (&ew->down, gt, m, out, pool);
  for (int i = 0; i < m && moe->down_bias; i++)
    add_bias (out + (gsize) i * width, moe->down_bias + (gsize) e * width, width);
}

/* y += the routing-weighted rows of expert e's output. */
static void
add_expert (const BwMoe *moe, const ExpertTokens *g, int e, const float *out, float *y)
{
  int64_t width = moe->expert_width;
  const int *tok = g->tok + g->start[e];
  const float *w = g->w + g->start[e];
  for (int i = 0; i < g->count[e]; i++)
    {
      float *yr = y + (gsize) tok[i] * width;
      const float *orow = out + i * width;
      for (int64_t c = 0; c < width; c++)
        yr[c] += w[i] * orow[c];
    }
}

/* One token: each thread of the pool takes whole experts, in the order their bytes land
 * (hits first, then each miss as its read completes), and computes all three products of
 * its expert, into that expert's own row; the rows are then summed in request order, so the
 * result depends on neither the disk nor the threads. A single-token product is too short
 * to split well across threads: per expert and matrix, splitting cost a dispatch and a
 * barrier, and each thread restarted its streams on a slice of the rows. Only a thread left
 * with no expert to take (the layer's last experts, or a miss that landed late) joins the
 * products still running, taking pieces of their rows: before, it sat idle for about one
 * expert's time per layer. */
#define HELP_SLOTS 64
/* Pieces per product: enough for a helper to take a fair share of the last one. */
#define PIECES 8
/* Index part of a claim word while its product is being set up. */
#define CLOSED 0xFFFFFFFFu

/* The product one thread is running, published for helpers. The fields are set while the
 * claim word is CLOSED; a helper reads them after the claim word and uses them only once a
 * CAS on that word proves the generation unchanged. */
typedef struct {
  _Atomic guint64 claim;   /* generation << 32 | next piece */
  _Atomic int done;        /* pieces finished in this generation */
  _Atomic int n_pieces;
  _Atomic int64_t piece;   /* rows per piece */
  const BwMatvecPlan *_Atomic plan;
} __attribute__((aligned (64))) SharedProduct;

typedef struct {
  const BwMoe *moe;
  BwExpertBatch *batch;
  const float *x;           /* the token's expert input [width] */
  const int *experts;       /* expert id of each batch entry */
  float *gts, *ups, *outs;  /* per expert: [inter], [inter], [width] */
  int count;
  GMutex lock;              /* the store and the four fields below */
  gboolean taken[BW_MAX_BATCH_EXPERTS];
  int n_taken;
  GError *error;
  guint64 wait_ns;
  _Atomic int owners;       /* threads computing an expert */
  int n_slots;
  SharedProduct slots[HELP_SLOTS];
} OneTokenMix;

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

/* Runs one piece of sp's product if one is left: TRUE when it ran one or lost a race for
 * one (worth looking again). */
static gboolean
take_piece (SharedProduct *sp)
{
  guint64 cur = atomic_load (&sp->claim);
  guint32 idx = (guint32) cur;
  int n = atomic_load (&sp->n_pieces);
  int64_t piece = atomic_load (&sp->piece);
  const BwMatvecPlan *plan = atomic_load (&sp->plan);

  if (idx == CLOSED || idx >= (guint32) n)
    return FALSE;
  if (!atomic_compare_exchange_strong (&sp->claim, &cur, cur + 1))
    return TRUE;
  bw_matvec_plan_rows (plan, (int64_t) idx * piece, (int64_t) (idx + 1) * piece);
  atomic_fetch_add (&sp->done, 1);
  return TRUE;
}

/* y = w x on this thread, with any helpers taking pieces of it (same_x: bw_matvec_plan). */
static void
shared_matvec (OneTokenMix *m, int tid, const BwMatrix *w, const float *x, float *y,
               gboolean same_x)
{
  if (tid >= m->n_slots)
    {
      bw_matvec (w, x, y, NULL);
      return;
    }
  SharedProduct *sp = &m->slots[tid];
  guint64 gen = (atomic_load (&sp->claim) >> 32) + 1;
  int n = (int) MIN (w->rows, PIECES);
  atomic_store (&sp->claim, gen << 32 | CLOSED);
  atomic_store (&sp->plan, bw_matvec_plan (w, x, y, same_x));
  atomic_store (&sp->piece, (w->rows + n - 1) / n);
  atomic_store (&sp->n_pieces, n);
  atomic_store (&sp->done, 0);
  atomic_store (&sp->claim, gen << 32);
  while (take_piece (sp))
    ;
  while (atomic_load (&sp->done) < n)
    cpu_relax ();
}

/* Takes a landed expert (blocking on a miss): its batch index, or -1 when none is left or
 * the batch failed. */
static int
take_expert (OneTokenMix *m, const BwExpertWeights **ew)
{
  int i = -1;
  g_mutex_lock (&m->lock);
  if (m->error == NULL && m->n_taken < m->count)
    {
      guint64 t0 = now_ns ();
      i = bw_expert_batch_wait_any (m->batch, m->taken, ew, &m->error);
      m->wait_ns += now_ns () - t0;
      if (i >= 0)
        {
          m->taken[i] = TRUE;
          m->n_taken++;
          atomic_fetch_add (&m->owners, 1);
        }
    }
  g_mutex_unlock (&m->lock);
  return i;
}

static void
one_token_poll (OneTokenMix *m)
{
  /* whoever holds the lock is in the store already */
  if (g_mutex_trylock (&m->lock))
    {
      bw_expert_store_poll (m->batch->store);
      g_mutex_unlock (&m->lock);
    }
}

static void
one_token_expert (OneTokenMix *m, int i, const BwExpertWeights *ew, int tid)
{
  const BwMoe *moe = m->moe;
  int64_t width = moe->expert_width, inter = moe->expert_inter;
  int e = m->experts[i];
  float *gt = m->gts + i * gate_floats (moe), *up = m->ups + i * inter;
  shared_matvec (m, tid, &ew->gate, m->x, gt, FALSE);
  one_token_poll (m);
  if (moe->fused_gate_up)
    fused_act (moe, e, gt, gt);
  else
    {
      shared_matvec (m, tid, &ew->up, m->x, up, TRUE);
      one_token_poll (m);
      if (moe->gate_bias)
        split_bias (moe, e, gt, up, 1);
      bw_gated_act (&moe->act, gt, gt, up, (int) inter);
    }
  shared_matvec (m, tid, &ew->down, gt, m->outs + i * width, FALSE);
  if (moe->down_bias)
    add_bias (m->outs + i * width, moe->down_bias + (gsize) e * width, width);
}

/* One item per thread: experts while any is left, then pieces of the others' products. */
static void
one_token_job (void *ctx, int index, int tid)
{
  OneTokenMix *m = ctx;
  const BwExpertWeights *ew = NULL;
  int i;

  while ((i = take_expert (m, &ew)) >= 0)
    {
      one_token_expert (m, i, ew, tid);
      atomic_fetch_sub (&m->owners, 1);
    }
  while (atomic_load (&m->owners) > 0)
    {
      gboolean ran = FALSE;
      for (int t = 0; t < m->n_slots; t++)
        ran |= take_piece (&m->slots[t]);
      if (!ran)
        cpu_relax ();
    }
}

static gboolean
mix_one_token (const BwMoe *moe, BwExpertBatch *batch, const ExpertTokens *g, int first,
               int count, const float *xe, float *y, float *gts, float *ups, float *outs,
               BwPool *pool, BwMoeTimes *times, GError **error)
{
  int64_t width = moe->expert_width;
  int threads = bw_pool_size (pool);
  OneTokenMix m = { .moe = moe, .batch = batch, .x = xe, .experts = g->used + first,
                    .gts = gts, .ups = ups, .outs = outs, .count = count,
                    .n_slots = MIN (threads, HELP_SLOTS) };
  g_mutex_init (&m.lock);
  guint64 t0 = now_ns ();
  bw_pool_run (pool, one_token_job, &m, threads);
  guint64 wall = now_ns () - t0;
  g_mutex_clear (&m.lock);
  if (times)
    {
      /* the decode loop's view: the threads' blocked time, shared out among them */
      guint64 wait = MIN (wall, m.wait_ns / (guint64) MAX (1, MIN (count, threads)));
      times->wait_ns += wait;
      times->matmul_ns += wall - wait;
    }
  if (m.error != NULL)
    {
      g_propagate_error (error, m.error);
      return FALSE;
    }
  for (int i = 0; i < count; i++)
    add_expert (moe, g, g->used[first + i], outs + i * width, y);
  return TRUE;
}

/* Several tokens: experts computed in the order their bytes land (cached ones first, each
 * miss as its read completes), each into its own rows of out, then summed into y in request
 * order, so the result does not depend on the disk. */
static gboolean
mix_tokens (const BwMoe *moe, BwExpertStore *store, BwExpertBatch *batch, const ExpertTokens *g,
            int first, int count, const float *xe, float *xg, float *gt, float *up, float *out,
            float *y, BwPool *pool, BwMoeTimes *times, GError **error)
{
  int64_t width = moe->expert_width;
  gboolean taken[BW_MAX_BATCH_EXPERTS] = { FALSE };

  for (int done = 0; done < count; done++)
    {
      const BwExpertWeights *ew = NULL;
      guint64 t0 = now_ns ();
      int i = bw_expert_batch_wait_any (batch, taken, &ew, error);
      guint64 t1 = now_ns ();
      if (i < 0)
        return FALSE;
      taken[i] = TRUE;
      int e = g->used[first + i];
      run_expert (moe, store, ew, g, e, xe, xg, gt, up, out + (gsize) g->start[e] * width, pool);
      if (times)
        {
          times->wait_ns += t1 - t0;
          times->matmul_ns += now_ns () - t1;
        }
    }
  for (int i = 0; i < count; i++)
    {
      int e = g->used[first + i];
      add_expert (moe, g, e, out + (gsize) g->start[e] * width, y);
    }
  return TRUE;
}

gboolean
bw_moe_mix (const BwMoe *moe, BwExpertStore *store, const BwMoeRoute *route, const float *xe,
            int n, float *y, BwScratch *cursor, BwPool *pool, BwMoeTimes *times, GError **error)
{
  int64_t width = moe->expert_width;
  MixScratch s;
  carve_mix (moe, n, cursor, &s);
  ExpertTokens g = s.g;
  group_by_expert (moe, route, n, &g);

  memset (y, 0, (gsize) n * width * sizeof (float));
  bw_expert_store_note_routes (store, moe->layer, route->ids, n, moe->router.top_k);
  /* A prefill's union (or, under a small budget, even one token's experts) may exceed
   * what the store's budget holds at once: request it in slices, releasing each before
   * the next. */
  for (int first = 0, count; first < g.n_used; first += count)
    {
      count = MAX (bw_expert_store_batch_fit (store, moe->layer, g.used + first,
                                              g.n_used - first), 1);
      BwExpertBatch batch;
      if (!bw_expert_store_request (store, moe->layer, g.used + first, count, &batch, error))
        return FALSE;
      /* Queued behind this layer's own reads, they overlap its expert products. */
      if (first == 0 && route->n_next > 0)
        bw_expert_store_prefetch (store, route->next_layer, route->next_ids, route->n_next);
      gboolean ok = TRUE, one_token = n == 1 && count <= moe->router.top_k;
      if (one_token)
        ok = mix_one_token (moe, &batch, &g, first, count, xe, y, s.gts, s.ups, s.outs, pool,
                            times, error);
      if (!one_token)
        ok = mix_tokens (moe, store, &batch, &g, first, count, xe, s.xg, s.gt, s.up, s.out, y,
                         pool, times, error);
      bw_expert_batch_release (&batch);
      if (!ok)
        return FALSE;
    }
  return TRUE;
}

gboolean
bw_moe_forward (const BwMoe *moe, BwExpertStore *store, const float *x, int n, float *out,
                void *scratch, BwPool *pool, BwMoeTimes *times, GError **error)
{
  BwScratch cur = bw_scratch_init (scratch, bw_moe_scratch_bytes (moe, n));
  MoeScratch s;
  carve_forward (moe, n, &cur, &s);
  BwMoeRoute route;
  bw_moe_route (moe, x, n, &route, &s.routed, pool, times);
  if (!bw_moe_mix (moe, store, &route, x, n, out, &s.routed, pool, times, error))
    return FALSE;
  if (moe->has_shared && moe->has_shared_gate)
    {
      guint64 t0 = now_ns ();
      gsize width = moe->expert_width;
      float *sh = s.sh, *gate = s.gate;
      bw_mlp_forward (&moe->shared, x, n, sh, FALSE, s.shared, pool);
      bw_matmul (&moe->shared_gate, x, n, gate, pool);
      for (int t = 0; t < n; t++)
        {
          float sg = bw_sigmoid (gate[t]);
          for (gsize c = 0; c < width; c++)
            out[t * width + c] += sg * sh[t * width + c];
        }
      if (times)
        times->matmul_ns += now_ns () - t0;
    }
  else if (moe->has_shared)
    {
      guint64 t0 = now_ns ();
      bw_mlp_forward (&moe->shared, x, n, out, TRUE, s.shared, pool);
      if (times)
        times->matmul_ns += now_ns () - t0;
    }
  return TRUE;
}
