/* Lowest-rank-first byte-pair merging with a heap of candidates (see bpe-merge.h). */
#include "text/bpe-merge.h"

typedef struct {
  gint32 rank;
  gint32 start;       /* left symbol's start: the tie-break, leftmost first */
  gint32 left;
  gint32 right;
  gint32 right_end;   /* right symbol's end when queued; a change means it merged since */
  gint32 merged;
} Candidate;

static inline gboolean
before (const Candidate *a, const Candidate *b)
{
  return a->rank < b->rank || (a->rank == b->rank && a->start < b->start);
}

static void
heap_push (GArray *heap, const Candidate *c)
{
  Candidate *h;
  guint i;

  g_array_append_val (heap, *c);
  h = (Candidate *) heap->data;
  i = heap->len - 1;
  while (i > 0)
    {
      guint parent = (i - 1) / 2;
      Candidate tmp;
      if (!before (&h[i], &h[parent]))
        break;
      tmp = h[i];
      h[i] = h[parent];
      h[parent] = tmp;
      i = parent;
    }
}

static Candidate
heap_pop (GArray *heap)
{
  Candidate *h = (Candidate *) heap->data;
  Candidate top = h[0];
  guint n = heap->len - 1, i = 0;

  h[0] = h[n];
  g_array_set_size (heap, n);
  for (;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;
      Candidate tmp;
      if (l < n && before (&h[l], &h[m]))
        m = l;
      if (r < n && before (&h[r], &h[m]))
        m = r;
      if (m == i)
        break;
      tmp = h[i];
      h[i] = h[m];
      h[m] = tmp;
      i = m;
    }
  return top;
}

static void
queue_pair (GArray *heap, const BwBpeSymbol *syms, gint32 left, BwBpeRankFunc rank,
            gconstpointer model, const guint8 *piece)
{
  Candidate c;
  gint32 right;

  if (left < 0 || (right = syms[left].next) < 0)
    return;
  if (syms[left].id < 0 || syms[right].id < 0)
    return;
  c.rank = rank (model, piece, &syms[left], &syms[right], &c.merged);
  if (c.rank < 0)
    return;
  c.start = syms[left].start;
  c.left = left;
  c.right = right;
  c.right_end = syms[right].end;
  heap_push (heap, &c);
}

void
bw_bpe_scratch_init (BwBpeScratch *scratch)
{
  scratch->symbols = g_array_new (FALSE, FALSE, sizeof (BwBpeSymbol));
  scratch->heap = g_array_new (FALSE, FALSE, sizeof (Candidate));
}

void
bw_bpe_scratch_clear (BwBpeScratch *scratch)
{
  g_clear_pointer (&scratch->symbols, g_array_unref);
  g_clear_pointer (&scratch->heap, g_array_unref);
}

gboolean
bw_bpe_merge (BwBpeScratch *scratch, const guint8 *piece, gsize len,
              const gint32 byte_ids[256], BwBpeRankFunc rank, gconstpointer model,
              GArray *out)
{
  BwBpeSymbol *syms;
  gint32 n = (gint32) len, i;

  g_return_val_if_fail (len <= G_MAXINT32 / 2, FALSE);
  g_array_set_size (scratch->symbols, (guint) n);
  g_array_set_size (scratch->heap, 0);
  syms = (BwBpeSymbol *) scratch->symbols->data;
  for (i = 0; i < n; i++)
    syms[i] = (BwBpeSymbol) { i, i + 1, byte_ids[piece[i]], i - 1, i + 1 < n ? i + 1 : -1 };
  for (i = 0; i + 1 < n; i++)
    queue_pair (scratch->heap, syms, i, rank, model, piece);

  while (scratch->heap->len > 0)
    {
      Candidate c = heap_pop (scratch->heap);
      BwBpeSymbol *l = &syms[c.left], *r = &syms[c.right];

      /* Stale: the left symbol was absorbed (its next no longer is `right`) or the right
       * one grew since this candidate was queued. */
      if (l->next != c.right || r->end != c.right_end || l->start != c.start)
        continue;
      l->end = r->end;
      l->id = c.merged;
      l->next = r->next;
      if (r->next >= 0)
        syms[r->next].prev = c.left;
      r->prev = r->next = -1;
      r->start = r->end = -1;
      queue_pair (scratch->heap, syms, l->prev, rank, model, piece);
      queue_pair (scratch->heap, syms, c.left, rank, model, piece);
    }

  gboolean complete = TRUE;
  for (i = 0; i >= 0 && n > 0; i = syms[i].next)
    {
      complete = complete && syms[i].id >= 0;
      g_array_append_val (out, syms[i].id);
    }
  return complete;
}
