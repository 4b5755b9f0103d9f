/* Learned pinning against plain LRU on skewed synthetic decode workloads: the workload the
 * history was learned on (repeated), a fresh one from the same popularity (held-out), and
 * one whose popularity moved (shifted). Pins must not lose to LRU where the history
 * predicts the future; the numbers are printed for PERFORMANCE.md. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "tmp-dir.h"
#include "fake-checkpoint.h"
#include "stream/expert-store.h"

#define LAYERS 5         /* layer 0 dense */
#define EXPERTS 64
#define TOPK 4
#define TOKENS 1500
#define ROWS 32
#define COLS 64

typedef struct {
  double cdf[EXPERTS];
  int perm[LAYERS][EXPERTS];   /* rank -> expert, per layer */
} Popularity;

static void
popularity_init (Popularity *p, double zipf_s, guint32 seed)
{
  GRand *rng = g_rand_new_with_seed (seed);
  double sum = 0;
  for (int r = 0; r < EXPERTS; r++)
    sum += 1.0 / pow (r + 1, zipf_s);
  for (int r = 0; r < EXPERTS; r++)
    p->cdf[r] = (r > 0 ? p->cdf[r - 1] : 0) + 1.0 / pow (r + 1, zipf_s) / sum;
  for (int l = 0; l < LAYERS; l++)
    {
      for (int e = 0; e < EXPERTS; e++)
        p->perm[l][e] = e;
      for (int e = EXPERTS - 1; e > 0; e--)
        {
          int j = g_rand_int_range (rng, 0, e + 1), t = p->perm[l][e];
          p->perm[l][e] = p->perm[l][j];
          p->perm[l][j] = t;
        }
    }
  g_rand_free (rng);
}

static int
sample (const Popularity *p, int layer, GRand *rng)
{
  double u = g_rand_double (rng);
  int r = 0;
  while (r < EXPERTS - 1 && p->cdf[r] < u)
    r++;
  return p->perm[layer][r];
}

/* Runs a decode-like workload; returns the hit rate. */
static double
run (FakeCheckpoint *f, const Popularity *pop, guint32 seed, gboolean pinning,
     const char *history_dir, guint64 budget)
{
  g_autoptr (GError) error = NULL;
  BwStoreOptions o = { .ram_budget = budget, .pinning = pinning, .history_dir = history_dir };
  BwExpertStore *s = bw_expert_store_new (&f->ckpt, LAYERS, EXPERTS, f->layouts, &o, &error);
  GRand *rng = g_rand_new_with_seed (seed);
  BwStoreStats st;

  g_assert_no_error (error);
  for (int t = 0; t < TOKENS; t++)
    for (int l = 1; l < LAYERS; l++)
      {
        int ids[TOPK], n = 0;
        BwExpertBatch batch;
        while (n < TOPK)
          {
            int e = sample (pop, l, rng), dup = 0;
            for (int j = 0; j < n; j++)
              dup |= ids[j] == e;
            if (!dup)
              ids[n++] = e;
          }
        g_assert_true (bw_expert_store_request (s, l, ids, n, &batch, &error));
        for (int i = 0; i < n; i++)
          g_assert_nonnull (bw_expert_batch_wait (&batch, i, &error));
        bw_expert_batch_release (&batch);
      }
  bw_expert_store_stats (s, &st);
  bw_expert_store_free (s);
  g_rand_free (rng);
  return (double) st.hits / (double) (st.hits + st.misses);
}

static void
clear_dir (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
}

static void
test_pinning_gain (void)
{
  g_autofree char *dir = bw_test_tmp_dir ("bw-pin-XXXXXX");
  g_autofree char *hdir = g_build_filename (dir, "history", NULL);
  FakeCheckpoint *f = fake_checkpoint_new (dir, LAYERS, EXPERTS, ROWS, COLS, TRUE, 3);
  guint64 expert = 3 * (ROWS * COLS / 2 + ROWS * COLS / 32);
  Popularity pop, moved;
  double fractions[3] = { 0.125, 0.25, 0.4 };

  popularity_init (&pop, 1.0, 1);
  popularity_init (&moved, 1.0, 2);
  for (int k = 0; k < 3; k++)
    {
      /* The budget holds this share of all routed experts. */
      guint64 budget = (guint64) (fractions[k] * (LAYERS - 1) * EXPERTS) * expert;
      double lru_rep, pin_rep, lru_held, pin_held, lru_shift, pin_shift;
      clear_dir (hdir);
      /* Learn the history on workload A (pins are empty on this first run). */
      run (f, &pop, 100, TRUE, hdir, budget);
      lru_rep = run (f, &pop, 100, FALSE, hdir, budget);
      pin_rep = run (f, &pop, 100, TRUE, hdir, budget);
      lru_held = run (f, &pop, 200, FALSE, hdir, budget);
      pin_held = run (f, &pop, 200, TRUE, hdir, budget);
      lru_shift = run (f, &moved, 300, FALSE, hdir, budget);
      pin_shift = run (f, &moved, 300, TRUE, hdir, budget);
      g_test_message ("budget %.1f%% of experts: hit rate LRU / pinned  repeated %.3f / %.3f"
                      "  held-out %.3f / %.3f  shifted %.3f / %.3f", 100 * fractions[k],
                      lru_rep, pin_rep, lru_held, pin_held, lru_shift, pin_shift);
      /* Where the history predicts the future, pins win. */
      g_assert_cmpfloat (pin_rep, >, lru_rep);
      g_assert_cmpfloat (pin_held, >, lru_held);
      /* Where it does not, the pins are dropped before they cost much. */
      g_assert_cmpfloat (pin_shift, >, lru_shift - 0.015);
    }
  clear_dir (hdir);
  g_rmdir (hdir);
  fake_checkpoint_free (f);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/stream/pinning/gain-over-lru", test_pinning_gain);
  return g_test_run ();
}
