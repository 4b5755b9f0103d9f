/* Victim-layer choice, pin selection and the default RAM budget. */
#include "stream/cache-policy.h"

#include <stdlib.h>

/* With learned pins, the up-front buffers beyond theirs: this share of the budget's. */
#define PREFAULT_SPARE_SHARE 10

int
bw_policy_victim_layer (const BwLayerCacheState *layers, int n_layers, int current)
{
  int best = -1;
  gint64 best_excess = 0;

  for (int l = 0; l < n_layers; l++)
    {
      const BwLayerCacheState *s = &layers[l];
      gint64 excess = (gint64) s->bytes - (gint64) s->quota;
      gboolean better;

      if (!s->evictable)
        continue;
      if (best < 0 || excess > best_excess)
        better = TRUE;
      else if (excess < best_excess || best == current)
        better = FALSE;
      else
        better = l == current || s->last_use > layers[best].last_use;
      if (better)
        {
          best = l;
          best_excess = excess;
        }
    }
  return best;
}

typedef struct {
  guint32 count;
  int index;
} CountEntry;

static int
compare_count_desc (const void *a, const void *b)
{
  const CountEntry *x = a, *y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->index - y->index;
}

int
bw_policy_choose_pins (const guint32 *counts, const guint64 *bytes, int n, guint64 max_bytes,
                       guint32 min_count, gboolean *pin, guint64 *pinned_bytes)
{
  CountEntry *entries = g_new (CountEntry, MAX (n, 1));
  int m = 0, pinned = 0;
  guint64 sum = 0;

  for (int i = 0; i < n; i++)
    {
      pin[i] = FALSE;
      if (bytes[i] > 0 && counts[i] >= MAX (min_count, 1))
        entries[m++] = (CountEntry) { counts[i], i };
    }
  qsort (entries, (size_t) m, sizeof *entries, compare_count_desc);
  for (int j = 0; j < m; j++)
    {
      guint64 b = bytes[entries[j].index];
      if (sum + b > max_bytes)
        continue;   /* a smaller expert further down may still fit */
      sum += b;
      pin[entries[j].index] = TRUE;
      pinned++;
    }
  g_free (entries);
  if (pinned_bytes != NULL)
    *pinned_bytes = sum;
  return pinned;
}

guint64
bw_policy_prefault_count (guint64 budget, guint64 room, guint64 size, guint64 n_experts,
                          guint64 n_pins)
{
  guint64 bytes = room > 0 ? MIN (budget, room) : budget;
  guint64 count = size > 0 ? MIN (bytes / size, n_experts) : 0;
  if (n_pins == 0)
    return count;
  return MIN (count, n_pins + count / PREFAULT_SPARE_SHARE);
}

guint64
bw_policy_default_budget (guint64 room, gboolean direct, guint64 all_experts)
{
  guint64 budget;

  if (room == 0)
    return 0;
  if (direct)
    budget = room - MIN (MAX ((guint64) 1 << 30, room / 8), room / 2);
  else
    budget = room / 2;
  return all_experts > 0 ? MIN (budget, all_experts) : budget;
}

gboolean
bw_policy_prefer_direct (guint64 room, guint64 all_experts)
{
  return room > 0 && all_experts > room / 2;
}

static int
by_count (gconstpointer a, gconstpointer b, gpointer counts)
{
  const guint32 ia = *(const guint32 *) a, ib = *(const guint32 *) b;
  const guint32 ca = ((const guint32 *) counts)[ia], cb = ((const guint32 *) counts)[ib];
  return ca != cb ? (ca < cb ? 1 : -1) : (ia > ib) - (ia < ib);
}

gsize
bw_policy_warm_order (const guint32 *counts, const guint8 *pin, gsize n, guint32 *order)
{
  gsize k = 0;
  for (gsize i = 0; i < n; i++)
    if (pin[i])
      order[k++] = (guint32) i;
  g_qsort_with_data (order, (gint) k, sizeof *order, by_count, (gpointer) counts);
  return k;
}
