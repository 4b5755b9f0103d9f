/* Token sampling (see sampler.h). Top-k and top-p pop a max-heap built over the whole
 * vocabulary, so only the kept head is ever ordered: O(vocab + kept * log vocab). */
#include "run/sampler.h"

#include <math.h>
#include <string.h>

struct BwSampler {
  int vocab;
  BwSamplerOptions opts;
  guint64 rng[4];
  float *p;          /* unnormalised probabilities, [vocab] */
  int32_t *heap;     /* [vocab] */
  int32_t *cand;     /* [vocab] */
  float *cand_p;     /* [vocab] */
  guint32 *mark;     /* penalty: ids already seen in this call */
  guint32 epoch;
  BwLogitBias *bias; /* the options' bias, owned */
  guint32 *count;    /* [vocab] accepted tokens per id */
  int32_t *counted;  /* [vocab] the ids with a count, in first-seen order */
  int n_counted;
};

void
bw_sampler_options_init (BwSamplerOptions *opts)
{
  memset (opts, 0, sizeof *opts);
  opts->repetition_penalty = 1.0f;
}

void
bw_sampler_options_from (BwSamplerOptions *o, const BurrowGenerateOptions *go)
{
  *o = (BwSamplerOptions) { go->temperature, go->top_k, go->top_p, go->min_p,
                            go->repetition_penalty, go->seed, go->frequency_penalty,
                            go->presence_penalty, go->logit_bias, go->n_logit_bias };
}

/* splitmix64 seeds xoshiro256**. */
static guint64
splitmix64 (guint64 *x)
{
  guint64 z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline guint64
rotl (guint64 x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static guint64
next_u64 (guint64 s[4])
{
  guint64 result = rotl (s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl (s[3], 45);
  return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double
next_double (guint64 s[4])
{
  return (double) (next_u64 (s) >> 11) * 0x1.0p-53;
}

void
bw_sampler_reseed (BwSampler *sampler, guint64 seed)
{
  guint64 x = seed;
  for (int i = 0; i < 4; i++)
    sampler->rng[i] = splitmix64 (&x);
}

BwSampler *
bw_sampler_new (int vocab, const BwSamplerOptions *opts)
{
  g_return_val_if_fail (vocab > 0, NULL);
  BwSampler *s = g_new0 (BwSampler, 1);
  s->vocab = vocab;
  if (opts)
    s->opts = *opts;
  else
    bw_sampler_options_init (&s->opts);
  s->p = g_new (float, vocab);
  s->heap = g_new (int32_t, vocab);
  s->cand = g_new (int32_t, vocab);
  s->cand_p = g_new (float, vocab);
  s->mark = g_new0 (guint32, vocab);
  s->count = g_new0 (guint32, vocab);
  s->counted = g_new (int32_t, vocab);
  if (s->opts.n_bias > 0)
    s->bias = g_memdup2 (s->opts.bias, (gsize) s->opts.n_bias * sizeof (BwLogitBias));
  else
    s->opts.n_bias = 0;
  s->opts.bias = s->bias;
  bw_sampler_reseed (s, s->opts.seed);
  return s;
}

void
bw_sampler_free (BwSampler *sampler)
{
  if (sampler == NULL)
    return;
  g_free (sampler->p);
  g_free (sampler->heap);
  g_free (sampler->cand);
  g_free (sampler->cand_p);
  g_free (sampler->mark);
  g_free (sampler->bias);
  g_free (sampler->count);
  g_free (sampler->counted);
  g_free (sampler);
}

int32_t
bw_argmax (const float *logits, int n)
{
  int32_t best = 0;
  for (int i = 1; i < n; i++)
    if (logits[i] > logits[best] || isnan (logits[best]))
      best = i;
  return best;
}

void
bw_sampler_penalize (BwSampler *sampler, float *logits, const int32_t *recent, int n)
{
  float pen = sampler->opts.repetition_penalty;
  if (!(pen > 0.0f) || pen == 1.0f || n <= 0)
    return;
  if (++sampler->epoch == 0)
    {
      memset (sampler->mark, 0, (gsize) sampler->vocab * sizeof (guint32));
      sampler->epoch = 1;
    }
  for (int i = 0; i < n; i++)
    {
      int32_t id = recent[i];
      if (id < 0 || id >= sampler->vocab || sampler->mark[id] == sampler->epoch)
        continue;
      sampler->mark[id] = sampler->epoch;
      logits[id] = logits[id] > 0.0f ? logits[id] / pen : logits[id] * pen;
    }
}

void
bw_sampler_accept (BwSampler *sampler, int32_t id)
{
  if (id < 0 || id >= sampler->vocab)
    return;
  if (sampler->count[id]++ == 0)
    sampler->counted[sampler->n_counted++] = id;
}

void
bw_sampler_adjust (BwSampler *sampler, float *logits, const int32_t *recent, int n)
{
  const BwSamplerOptions *o = &sampler->opts;
  bw_sampler_penalize (sampler, logits, recent, n);
  for (int i = 0; i < o->n_bias; i++)
    if (o->bias[i].id >= 0 && o->bias[i].id < sampler->vocab)
      logits[o->bias[i].id] += o->bias[i].bias;
  if (o->frequency_penalty == 0.0f && o->presence_penalty == 0.0f)
    return;
  for (int i = 0; i < sampler->n_counted; i++)
    {
      int32_t id = sampler->counted[i];
      logits[id] -= (float) sampler->count[id] * o->frequency_penalty + o->presence_penalty;
    }
}

/* Heap order: higher probability first, then lower id. */
static inline gboolean
before (const float *p, int32_t a, int32_t b)
{
  return p[a] > p[b] || (p[a] == p[b] && a < b);
}

static void
sift_down (int32_t *heap, int n, int i, const float *p)
{
  for (;;)
    {
      int l = 2 * i + 1, r = l + 1, top = i;
      if (l < n && before (p, heap[l], heap[top]))
        top = l;
      if (r < n && before (p, heap[r], heap[top]))
        top = r;
      if (top == i)
        return;
      int32_t t = heap[i];
      heap[i] = heap[top];
      heap[top] = t;
      i = top;
    }
}

/* Pops the most probable ids into cand until `limit` are out or their mass reaches
 * `mass_goal`; returns how many, and their mass in *mass. */
static int
pop_head (BwSampler *s, int limit, double mass_goal, double *mass)
{
  int n = s->vocab, k = 0;
  for (int i = 0; i < n; i++)
    s->heap[i] = i;
  for (int i = n / 2 - 1; i >= 0; i--)
    sift_down (s->heap, n, i, s->p);
  *mass = 0.0;
  while (k < limit && n > 0 && (k == 0 || *mass < mass_goal))
    {
      int32_t id = s->heap[0];
      s->cand[k++] = id;
      *mass += s->p[id];
      s->heap[0] = s->heap[--n];
      sift_down (s->heap, n, 0, s->p);
    }
  return k;
}

/* Unnormalised probabilities exp((l - max) / T) into s->p; returns their sum. */
static double
soften (BwSampler *s, const float *logits)
{
  float max = -INFINITY;
  for (int i = 0; i < s->vocab; i++)
    if (logits[i] > max)
      max = logits[i];
  double total = 0.0;
  float inv_t = 1.0f / s->opts.temperature;
  for (int i = 0; i < s->vocab; i++)
    {
      float v = logits[i];
      s->p[i] = isnan (v) || !isfinite (max) ? 0.0f : expf ((v - max) * inv_t);
      total += s->p[i];
    }
  return total;
}

int
bw_sampler_candidates (BwSampler *s, const float *logits, const int32_t **ids,
                       const float **probs)
{
  const BwSamplerOptions *o = &s->opts;
  int n;
  double mass;
  double total = o->temperature > 0.0f ? soften (s, logits) : 0.0;

  if (!(total > 0.0))
    {
      s->cand[0] = bw_argmax (logits, s->vocab);
      s->cand_p[0] = 1.0f;
      *ids = s->cand;
      *probs = s->cand_p;
      return 1;
    }
  gboolean top_p = o->top_p > 0.0f && o->top_p < 1.0f;
  if (o->top_k > 0)
    {
      n = pop_head (s, MIN (o->top_k, s->vocab), G_MAXDOUBLE, &mass);
      if (top_p)
        {
          double goal = o->top_p * mass, cum = 0.0;
          int keep = 0;
          while (keep < n && (keep == 0 || cum < goal))
            cum += s->p[s->cand[keep++]];
          n = keep;
          mass = cum;
        }
    }
  else if (top_p)
    n = pop_head (s, s->vocab, o->top_p * total, &mass);
  else
    {
      n = s->vocab;
      for (int i = 0; i < n; i++)
        s->cand[i] = i;
      mass = total;
    }
  if (o->min_p > 0.0f)
    {
      /* The most probable token has p = exp(0) = 1 before normalisation. */
      int keep = 0;
      mass = 0.0;
      for (int i = 0; i < n; i++)
        if (s->p[s->cand[i]] >= o->min_p)
          {
            s->cand[keep++] = s->cand[i];
            mass += s->p[s->cand[i]];
          }
      n = keep;
    }
  for (int i = 0; i < n; i++)
    s->cand_p[i] = (float) (s->p[s->cand[i]] / mass);
  *ids = s->cand;
  *probs = s->cand_p;
  return n;
}

int32_t
bw_sampler_sample (BwSampler *sampler, float *logits, const int32_t *recent, int n_recent)
{
  bw_sampler_adjust (sampler, logits, recent, n_recent);
  return bw_sampler_draw (sampler, logits);
}

int32_t
bw_sampler_draw (BwSampler *sampler, const float *logits)
{
  const int32_t *ids;
  const float *probs;

  if (!(sampler->opts.temperature > 0.0f))
    return bw_argmax (logits, sampler->vocab);
  int n = bw_sampler_candidates (sampler, logits, &ids, &probs);
  double u = next_double (sampler->rng), cum = 0.0;
  for (int i = 0; i < n; i++)
    {
      cum += probs[i];
      if (u < cum)
        return ids[i];
    }
  return ids[n - 1];
}
