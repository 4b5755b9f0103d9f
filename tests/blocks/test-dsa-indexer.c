/* The DSA lightning indexer against a PyTorch rendering of transformers' GlmMoeDsaIndexer
 * (gen-glm-blocks-ref.py): index keys, and every row's full score ranking recovered by
 * selecting with each topk from 1 to the row length; prefill, decode and threads agree. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "blocks/dsa-indexer.h"

#include "dsa-indexer-ref.h"

#define S DSA_REF_S
#define D DSA_REF_HEAD_DIM
/* Cache rows wider than the key, as in the model state (latent + rope key + index key). */
#define STRIDE (D + 5)

static BwMatrix
f32_matrix (const float *data, int64_t rows, int64_t cols)
{
  BwMatrix m = { .fmt = BW_FMT_F32, .rows = rows, .cols = cols, .data = data };
  return m;
}

static BwDsaWeights
ref_weights (void)
{
  BwDsaWeights w = {
    .wq_b = f32_matrix (dsa_ref_wq_b, DSA_REF_HEADS * D, DSA_REF_Q_LORA),
    .wk = f32_matrix (dsa_ref_wk, D, DSA_REF_HIDDEN),
    .k_norm_weight = dsa_ref_knorm_w,
    .k_norm_bias = dsa_ref_knorm_b,
    .weights_proj = f32_matrix (dsa_ref_wp, DSA_REF_HEADS, DSA_REF_HIDDEN),
  };
  return w;
}

static BwDsaShape
ref_shape (int topk)
{
  BwDsaShape sh = { DSA_REF_HIDDEN, DSA_REF_Q_LORA, DSA_REF_HEADS, D, DSA_REF_ROPE_DIM, topk };
  return sh;
}

static int
cmp_int32 (gconstpointer a, gconstpointer b)
{
  int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
  return (x > y) - (x < y);
}

/* The reference selection of row s for topk k, ascending. */
static int
expected_row (int s, int k, int32_t *out)
{
  int n = MIN (k, s + 1);

  for (int i = 0; i < n; i++)
    out[i] = dsa_ref_ranking[s * S + i];
  qsort (out, n, sizeof *out, cmp_int32);
  return n;
}

static void
check_row (const BwDsaSelection *sel, int row, int s, int k)
{
  int32_t want[S];
  int n = expected_row (s, k, want);

  g_assert_cmpint (sel->pos0 + row, ==, s);
  g_assert_cmpint (sel->count[row], ==, n);
  if (s + 1 <= k)
    {
      g_assert_true (bw_dsa_row_keeps_all (sel, row));
      if (sel->dense)
        return;
      /* In a selection that drops keys elsewhere the list is spelled out. */
      for (int t = 0; t <= s; t++)
        g_assert_cmpint (sel->keys[(gsize) row * sel->topk + t], ==, t);
      return;
    }
  g_assert_false (sel->dense);
  /* Keys really drop. */
  g_assert_false (bw_dsa_row_keeps_all (sel, row));
  g_assert_cmpint (sel->count[row], <, s + 1);
  g_assert_cmpmem (sel->keys + (gsize) row * sel->topk, n * sizeof (int32_t), want,
                   n * sizeof (int32_t));
}

static void
check_keys (const float *cache)
{
  double worst = 0.0;

  for (int p = 0; p < S; p++)
    for (int i = 0; i < D; i++)
      worst = MAX (worst, fabs ((double) cache[p * STRIDE + i] - dsa_ref_keys[p * D + i]));
  g_assert_cmpfloat (worst, <, 1e-5);
}

/* Feeds the S reference rows in calls of the given sizes and checks every selection. */
static void
run_schedule (int topk, const int *chunks, int n_chunks, BwPool *pool)
{
  BwDsaShape sh = ref_shape (topk);
  BwDsaWeights w = ref_weights ();
  BwRopeConfig rc = { DSA_REF_ROPE_DIM, DSA_REF_THETA };
  g_autoptr (BwRopeTable) rope = bw_rope_new (&rc, 8);   /* later positions: direct path */
  g_autoptr (BwDsaIndexer) ix = bw_dsa_indexer_new (&sh, S, pool ? bw_pool_size (pool) : 1);
  g_autofree float *cache = g_new0 (float, S * STRIDE);
  int pos = 0;

  for (int c = 0; c < n_chunks; c++)
    {
      int n = chunks[c];
      const BwDsaSelection *sel;

      bw_dsa_indexer_reserve (ix, pos + n);
      sel = bw_dsa_indexer_run (ix, &w, rope, dsa_ref_h + pos * DSA_REF_HIDDEN,
                                dsa_ref_cq + pos * DSA_REF_Q_LORA, n, pos, cache, STRIDE, pool);
      g_assert_nonnull (sel);
      g_assert_true (sel == bw_dsa_indexer_last (ix));
      g_assert_cmpint (sel->n_rows, ==, n);
      g_assert_cmpint (sel->dense, ==, pos + n <= topk);
      for (int r = 0; r < n; r++)
        check_row (sel, r, pos + r, topk);
      pos += n;
    }
  g_assert_cmpint (pos, ==, S);
  check_keys (cache);
}

static const int prefill[] = { S };
static const int decode[] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
static const int mixed[] = { 5, 1, 4, 2 };

/* Every topk from 1 (only the best key) to beyond the sequence (everything kept). */
static void
test_indexer_reference (void)
{
  for (int k = 1; k <= S + 4; k++)
    {
      run_schedule (k, prefill, G_N_ELEMENTS (prefill), NULL);
      run_schedule (k, decode, G_N_ELEMENTS (decode), NULL);
      run_schedule (k, mixed, G_N_ELEMENTS (mixed), NULL);
    }
}

static void
test_indexer_threads (void)
{
  BwPool *pool = bw_pool_new (3);

  for (int k = 1; k <= S; k += 2)
    {
      run_schedule (k, prefill, G_N_ELEMENTS (prefill), pool);   /* a row per thread */
      run_schedule (k, decode, G_N_ELEMENTS (decode), pool);     /* one row, split keys */
      run_schedule (k, mixed, G_N_ELEMENTS (mixed), pool);
    }
  bw_pool_free (pool);
}

/* With topk >= the context nothing is scored: the queries are never read. */
static void
test_indexer_keeps_all (void)
{
  BwDsaShape sh = ref_shape (4096);
  BwDsaWeights w = ref_weights ();
  BwRopeConfig rc = { DSA_REF_ROPE_DIM, DSA_REF_THETA };
  g_autoptr (BwRopeTable) rope = bw_rope_new (&rc, 64);
  g_autoptr (BwDsaIndexer) ix = bw_dsa_indexer_new (&sh, S, 1);
  g_autofree float *cache = g_new0 (float, S * STRIDE);
  g_autofree float *nan_cq = g_new (float, S * DSA_REF_Q_LORA);
  const BwDsaSelection *sel;
  gsize before = bw_dsa_indexer_reserve (ix, S);

  for (int i = 0; i < S * DSA_REF_Q_LORA; i++)
    nan_cq[i] = NAN;
  /* No context scratch is needed while the context fits in topk. */
  g_assert_cmpuint (bw_dsa_indexer_reserve (ix, 4096), ==, before);
  sel = bw_dsa_indexer_run (ix, &w, rope, dsa_ref_h, nan_cq, S, 0, cache, STRIDE, NULL);
  g_assert_true (sel->dense);
  for (int r = 0; r < S; r++)
    {
      g_assert_true (bw_dsa_row_keeps_all (sel, r));
      g_assert_cmpint (sel->count[r], ==, r + 1);
    }
  check_keys (cache);
  g_assert_cmpuint (bw_dsa_indexer_reserve (ix, 5000), >, before);
}

static void
check_topk (const float *scores, int n, int k, const int32_t *want)
{
  g_autofree int32_t *perm = g_new (int32_t, n);
  g_autofree int32_t *out = g_new (int32_t, k);

  bw_dsa_select_topk (scores, n, k, perm, out);
  g_assert_cmpmem (out, k * sizeof (int32_t), want, k * sizeof (int32_t));
}

/* Equal scores go to the lower position, so a selection never depends on the schedule. */
static void
test_topk_ties (void)
{
  const float equal[6] = { 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f };
  const float some[7] = { 1, 3, 3, 2, 3, 0, 3 };
  const float zeros[5] = { 0, 0, 0.25f, 0, -0.0f };
  const float nans[4] = { NAN, 0, -1, -INFINITY };

  check_topk (equal, 6, 3, (const int32_t[]) { 0, 1, 2 });
  check_topk (equal, 6, 6, (const int32_t[]) { 0, 1, 2, 3, 4, 5 });
  check_topk (some, 7, 2, (const int32_t[]) { 1, 2 });
  check_topk (some, 7, 4, (const int32_t[]) { 1, 2, 4, 6 });
  check_topk (some, 7, 5, (const int32_t[]) { 1, 2, 3, 4, 6 });
  /* +0 and -0 compare equal. */
  check_topk (zeros, 5, 3, (const int32_t[]) { 0, 1, 2 });
  /* NaN ranks as -inf, below every number, and ties with -inf by position. */
  check_topk (nans, 4, 2, (const int32_t[]) { 1, 2 });
  check_topk (nans, 4, 3, (const int32_t[]) { 0, 1, 2 });
}

typedef struct {
  float score;
  int32_t index;
} Ranked;

static int
cmp_ranked (gconstpointer a, gconstpointer b)
{
  const Ranked *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Quickselect against a full sort on larger inputs with many ties. */
static void
test_topk_random (void)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (5);

  for (int iter = 0; iter < 200; iter++)
    {
      int n = g_rand_int_range (rand, 1, 3000);
      int k = g_rand_int_range (rand, 1, n + 1);
      int levels = g_rand_int_range (rand, 1, 40);   /* few distinct values: many ties */
      g_autofree float *scores = g_new (float, n);
      g_autofree Ranked *ranked = g_new (Ranked, n);
      g_autofree int32_t *want = g_new (int32_t, k);

      for (int i = 0; i < n; i++)
        {
          scores[i] = (float) g_rand_int_range (rand, 0, levels) * 0.125f;
          ranked[i] = (Ranked) { scores[i], i };
        }
      qsort (ranked, n, sizeof *ranked, cmp_ranked);
      for (int i = 0; i < k; i++)
        want[i] = ranked[i].index;
      qsort (want, k, sizeof *want, cmp_int32);
      check_topk (scores, n, k, want);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/dsa-indexer/reference", test_indexer_reference);
  g_test_add_func ("/dsa-indexer/threads", test_indexer_threads);
  g_test_add_func ("/dsa-indexer/keeps-all", test_indexer_keeps_all);
  g_test_add_func ("/dsa-indexer/topk-ties", test_topk_ties);
  g_test_add_func ("/dsa-indexer/topk-random", test_topk_random);
  return g_test_run ();
}
