/* Sampler: exact candidate sets for top-k, top-p and min-p, the repetition penalty, greedy
 * ties, seeded determinism, and draw frequencies against the distribution. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/sampler.h"

/* p = {0.4, 0.25, 0.15, 0.1, 0.06, 0.04}, stored at shuffled ids so the heap must sort. */
static const int order[6] = { 3, 0, 5, 1, 4, 2 };   /* rank r lives at id order[r] */
static const double probs6[6] = { 0.4, 0.25, 0.15, 0.1, 0.06, 0.04 };

static void
fill_logits (float *logits)
{
  for (int r = 0; r < 6; r++)
    logits[order[r]] = (float) log (probs6[r]);
}

static BwSampler *
make (float temperature, int top_k, float top_p, float min_p, guint64 seed)
{
  BwSamplerOptions o;
  bw_sampler_options_init (&o);
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.min_p = min_p;
  o.seed = seed;
  return bw_sampler_new (6, &o);
}

/* The candidates are exactly ranks[0..n) (as ids, in this order), with these masses. */
static void
assert_candidates (BwSampler *s, int n, const int *ranks, gboolean sorted)
{
  float logits[6];
  const int32_t *ids;
  const float *p;
  fill_logits (logits);
  int got = bw_sampler_candidates (s, logits, &ids, &p);
  g_assert_cmpint (got, ==, n);
  double mass = 0;
  for (int i = 0; i < n; i++)
    mass += probs6[ranks[i]];
  for (int i = 0; i < n; i++)
    {
      if (sorted)
        g_assert_cmpint (ids[i], ==, order[ranks[i]]);
      int r = -1;
      for (int k = 0; k < 6; k++)
        if (order[k] == ids[i])
          r = k;
      g_assert_cmpint (r, >=, 0);
      g_assert_cmpfloat_with_epsilon (p[i], probs6[r] / mass, 1e-6);
    }
}

static void
test_masks (void)
{
  const int top3[] = { 0, 1, 2 }, top2[] = { 0, 1 }, all[] = { 0, 1, 2, 3, 4, 5 };
  g_autoptr (BwSampler) k3 = make (1, 3, 0, 0, 1);
  assert_candidates (k3, 3, top3, TRUE);
  g_autoptr (BwSampler) p07 = make (1, 0, 0.7f, 0, 1);   /* 0.4 + 0.25 < 0.7 <= + 0.15 */
  assert_candidates (p07, 3, top3, TRUE);
  g_autoptr (BwSampler) p05 = make (1, 0, 0.5f, 0, 1);
  assert_candidates (p05, 2, top2, TRUE);
  g_autoptr (BwSampler) k4p08 = make (1, 4, 0.8f, 0, 1);  /* goal 0.8 * 0.9 = 0.72 */
  assert_candidates (k4p08, 3, top3, TRUE);
  g_autoptr (BwSampler) k1 = make (1, 1, 0, 0, 1);
  assert_candidates (k1, 1, top3, TRUE);
  g_autoptr (BwSampler) off = make (1, 0, 1.0f, 0, 1);
  assert_candidates (off, 6, all, FALSE);
  g_autoptr (BwSampler) k_big = make (1, 100, 0, 0, 1);
  assert_candidates (k_big, 6, all, TRUE);

  /* min-p 0.3 keeps p >= 0.12: ranks 0..2, reported in id order. */
  g_autoptr (BwSampler) minp = make (1, 0, 0, 0.3f, 1);
  float logits[6];
  const int32_t *ids;
  const float *p;
  fill_logits (logits);
  int n = bw_sampler_candidates (minp, logits, &ids, &p);
  g_assert_cmpint (n, ==, 3);
  g_assert_cmpint (ids[0], ==, 0);   /* rank 1 */
  g_assert_cmpint (ids[1], ==, 3);   /* rank 0 */
  g_assert_cmpint (ids[2], ==, 5);   /* rank 2 */
  g_assert_cmpfloat_with_epsilon (p[1], 0.4 / 0.8, 1e-6);
  /* top-p then min-p: 0.5 keeps ranks 0 and 1, min-p 0.7 (>= 0.28) leaves rank 0. */
  g_autoptr (BwSampler) both = make (1, 0, 0.5f, 0.7f, 1);
  n = bw_sampler_candidates (both, logits, &ids, &p);
  g_assert_cmpint (n, ==, 1);
  g_assert_cmpint (ids[0], ==, 3);
  g_assert_cmpfloat (p[0], ==, 1.0f);
}

static void
test_temperature (void)
{
  float logits[6];
  const int32_t *ids;
  const float *p;
  fill_logits (logits);
  g_autoptr (BwSampler) s = make (0.5f, 0, 0, 0, 1);   /* p^(1/0.5) renormalised */
  int n = bw_sampler_candidates (s, logits, &ids, &p);
  double z = 0;
  for (int r = 0; r < 6; r++)
    z += probs6[r] * probs6[r];
  g_assert_cmpint (n, ==, 6);
  for (int r = 0; r < 6; r++)
    g_assert_cmpfloat_with_epsilon (p[order[r]], probs6[r] * probs6[r] / z, 1e-6);
  g_autoptr (BwSampler) greedy = make (0, 5, 0.5f, 0, 1);
  n = bw_sampler_candidates (greedy, logits, &ids, &p);
  g_assert_cmpint (n, ==, 1);
  g_assert_cmpint (ids[0], ==, order[0]);
}

static int
cmp_rank (const void *a, const void *b, void *data)
{
  const float *l = data;
  int32_t x = *(const int32_t *) a, y = *(const int32_t *) b;
  if (l[x] != l[y])
    return l[x] > l[y] ? -1 : 1;
  return x - y;
}

/* Top-k over a large vocabulary with many ties equals a full sort (by logit, then id). */
static void
test_topk_large (void)
{
  enum { V = 50000, K = 64 };
  g_autofree float *logits = g_new (float, V);
  g_autofree int32_t *ref = g_new (int32_t, V);
  GRand *rng = g_rand_new_with_seed (7);
  for (int i = 0; i < V; i++)
    {
      logits[i] = (float) g_rand_int_range (rng, 0, 400) / 40.0f;   /* ties */
      ref[i] = i;
    }
  g_rand_free (rng);
  g_qsort_with_data (ref, V, sizeof (int32_t), cmp_rank, logits);
  BwSamplerOptions o;
  bw_sampler_options_init (&o);
  o.temperature = 1.0f;
  o.top_k = K;
  g_autoptr (BwSampler) s = bw_sampler_new (V, &o);
  const int32_t *ids;
  const float *p;
  g_assert_cmpint (bw_sampler_candidates (s, logits, &ids, &p), ==, K);
  for (int i = 0; i < K; i++)
    g_assert_cmpint (ids[i], ==, ref[i]);
}

static void
test_penalty (void)
{
  BwSamplerOptions o;
  bw_sampler_options_init (&o);
  o.repetition_penalty = 2.0f;
  g_autoptr (BwSampler) s = bw_sampler_new (5, &o);
  float logits[5] = { 2.0f, -2.0f, 1.0f, 0.5f, 3.0f };
  const int32_t recent[] = { 0, 1, 1, 3, 0, -1, 9 };
  bw_sampler_penalize (s, logits, recent, G_N_ELEMENTS (recent));
  g_assert_cmpfloat (logits[0], ==, 1.0f);    /* once, although twice in recent */
  g_assert_cmpfloat (logits[1], ==, -4.0f);
  g_assert_cmpfloat (logits[2], ==, 1.0f);
  g_assert_cmpfloat (logits[3], ==, 0.25f);
  g_assert_cmpfloat (logits[4], ==, 3.0f);
  /* Greedy after the penalty: 4 was top before and stays; penalise it and 2 wins. */
  float l2[5] = { 2.0f, -2.0f, 1.9f, 0.5f, 3.0f };
  const int32_t r2[] = { 4, 0 };
  g_assert_cmpint (bw_sampler_sample (s, l2, r2, 2), ==, 2);
  /* A penalty of 1 changes nothing. */
  bw_sampler_options_init (&o);
  g_autoptr (BwSampler) none = bw_sampler_new (5, &o);
  float l3[5] = { 2.0f, -2.0f, 1.0f, 0.5f, 3.0f };
  bw_sampler_penalize (none, l3, recent, G_N_ELEMENTS (recent));
  g_assert_cmpfloat (l3[0], ==, 2.0f);
  g_assert_cmpfloat (l3[1], ==, -2.0f);
}

/* OpenAI's rule: logit -= count * frequency + (count > 0) * presence, counts over the
 * accepted (generated) tokens only; the bias is added first. */
static void
test_bias_and_openai_penalties (void)
{
  BwSamplerOptions o;
  bw_sampler_options_init (&o);
  const BwLogitBias bias[] = { { 1, 5.0f }, { 4, -100.0f }, { 99, 1.0f }, { -1, 1.0f } };
  o.bias = bias;
  o.n_bias = G_N_ELEMENTS (bias);
  o.frequency_penalty = 0.5f;
  o.presence_penalty = 0.25f;
  g_autoptr (BwSampler) s = bw_sampler_new (5, &o);
  bw_sampler_accept (s, 2);
  bw_sampler_accept (s, 2);
  bw_sampler_accept (s, 3);
  bw_sampler_accept (s, 77);   /* outside the vocabulary: ignored */
  float logits[5] = { 2.0f, -2.0f, 1.0f, 0.5f, 3.0f };
  const int32_t recent[] = { 0, 1 };   /* the repetition penalty is off: no effect */
  bw_sampler_adjust (s, logits, recent, G_N_ELEMENTS (recent));
  g_assert_cmpfloat (logits[0], ==, 2.0f);
  g_assert_cmpfloat (logits[1], ==, 3.0f);
  g_assert_cmpfloat (logits[2], ==, 1.0f - 2 * 0.5f - 0.25f);
  g_assert_cmpfloat (logits[3], ==, 0.5f - 0.5f - 0.25f);
  g_assert_cmpfloat (logits[4], ==, -97.0f);
  /* Greedy: the bias moved the argmax from 4 to 1. */
  float l2[5] = { 2.0f, -2.0f, 1.0f, 0.5f, 3.0f };
  g_assert_cmpint (bw_sampler_sample (s, l2, NULL, 0), ==, 1);
  /* The caller's bias array may go away: the sampler keeps its own copy. */
  BwLogitBias *temp = g_new (BwLogitBias, 1);
  temp[0] = (BwLogitBias) { 0, 10.0f };
  o.bias = temp;
  o.n_bias = 1;
  o.frequency_penalty = o.presence_penalty = 0.0f;
  g_autoptr (BwSampler) own = bw_sampler_new (5, &o);
  g_free (temp);
  float l3[5] = { 2.0f, -2.0f, 1.0f, 0.5f, 3.0f };
  g_assert_cmpint (bw_sampler_sample (own, l3, NULL, 0), ==, 0);
}

static void
test_greedy_ties (void)
{
  float logits[5] = { 1.0f, 3.0f, 3.0f, NAN, 2.0f };
  g_assert_cmpint (bw_argmax (logits, 5), ==, 1);
  BwSamplerOptions o;
  bw_sampler_options_init (&o);
  g_autoptr (BwSampler) s = bw_sampler_new (5, &o);
  g_assert_cmpint (bw_sampler_sample (s, logits, NULL, 0), ==, 1);
}

static void
draw (BwSampler *s, int n, int32_t *out)
{
  float logits[6];
  for (int i = 0; i < n; i++)
    {
      fill_logits (logits);
      out[i] = bw_sampler_sample (s, logits, NULL, 0);
    }
}

static void
test_seeded (void)
{
  int32_t a[200], b[200], c[200];
  g_autoptr (BwSampler) s1 = make (1, 0, 0, 0, 42);
  g_autoptr (BwSampler) s2 = make (1, 0, 0, 0, 42);
  g_autoptr (BwSampler) s3 = make (1, 0, 0, 0, 43);
  draw (s1, 200, a);
  draw (s2, 200, b);
  draw (s3, 200, c);
  g_assert_cmpmem (a, sizeof a, b, sizeof b);
  g_assert_true (memcmp (a, c, sizeof a) != 0);
  bw_sampler_reseed (s1, 42);
  draw (s1, 200, b);
  g_assert_cmpmem (a, sizeof a, b, sizeof b);
}

/* Frequencies of 40000 draws lie within 0.01 (over 4 standard deviations) of p. */
static void
assert_frequencies (BwSampler *s, const double *expect_by_rank)
{
  enum { N = 40000 };
  g_autofree int32_t *out = g_new (int32_t, N);
  int count[6] = { 0 };
  draw (s, N, out);
  for (int i = 0; i < N; i++)
    count[out[i]]++;
  for (int r = 0; r < 6; r++)
    {
      if (expect_by_rank[r] == 0)
        g_assert_cmpint (count[order[r]], ==, 0);
      else
        g_assert_cmpfloat (fabs ((double) count[order[r]] / N - expect_by_rank[r]), <, 0.01);
    }
}

static void
test_distribution (void)
{
  g_autoptr (BwSampler) plain = make (1, 0, 0, 0, 1);
  assert_frequencies (plain, probs6);
  const double k2[6] = { 0.4 / 0.65, 0.25 / 0.65, 0, 0, 0, 0 };
  g_autoptr (BwSampler) topk = make (1, 2, 0, 0, 2);
  assert_frequencies (topk, k2);
  const double p3[6] = { 0.5, 0.3125, 0.1875, 0, 0, 0 };
  g_autoptr (BwSampler) topp = make (1, 0, 0.7f, 0, 3);
  assert_frequencies (topp, p3);
  g_autoptr (BwSampler) minp = make (1, 0, 0, 0.3f, 4);
  assert_frequencies (minp, p3);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/sampler/masks", test_masks);
  g_test_add_func ("/sampler/temperature", test_temperature);
  g_test_add_func ("/sampler/topk-large", test_topk_large);
  g_test_add_func ("/sampler/penalty", test_penalty);
  g_test_add_func ("/sampler/bias-and-openai-penalties", test_bias_and_openai_penalties);
  g_test_add_func ("/sampler/greedy-ties", test_greedy_ties);
  g_test_add_func ("/sampler/seeded", test_seeded);
  g_test_add_func ("/sampler/distribution", test_distribution);
  return g_test_run ();
}
