/* Choosing the next token from logits: repetition penalty, logit bias, frequency and
 * presence penalties, temperature, top-k, top-p, min-p and a seeded generator. Every buffer
 * is sized for the vocabulary when the sampler is made; sampling a token allocates nothing.
 *
 * Order (the one Hugging Face's generate uses): penalties and bias on the logits, then
 * temperature, then top-k, top-p and min-p on the probabilities, then one draw. Ties in probability are
 * broken by the lower id, so a seed gives the same tokens on every machine. */
#pragma once

#include <glib.h>
#include <stdint.h>

#include "burrow-engine.h"

G_BEGIN_DECLS

typedef BurrowLogitBias BwLogitBias;

typedef struct {
  float temperature;         /* <= 0: greedy (the argmax after the penalty) */
  int top_k;                 /* <= 0: off */
  float top_p;               /* <= 0 or >= 1: off */
  float min_p;               /* <= 0: off; keeps p >= min_p * p_max */
  float repetition_penalty;  /* <= 0 or 1: off; > 1 makes recent tokens less likely */
  guint64 seed;
  /* OpenAI's: logit[t] -= count[t] * frequency + (count[t] > 0) * presence, count[t] being
   * how often bw_sampler_accept saw t (the reply's tokens). 0: off. */
  float frequency_penalty;
  float presence_penalty;
  const BwLogitBias *bias;   /* added to the logits (copied by bw_sampler_new) */
  int n_bias;
} BwSamplerOptions;

/* Greedy, no penalty, seed 0. */
void bw_sampler_options_init (BwSamplerOptions *opts);

/* The sampling fields of a turn's options. */
void bw_sampler_options_from (BwSamplerOptions *opts, const BurrowGenerateOptions *go);

typedef struct BwSampler BwSampler;

BwSampler *bw_sampler_new (int vocab, const BwSamplerOptions *opts);
void bw_sampler_free (BwSampler *sampler);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (BwSampler, bw_sampler_free)

/* Restarts the generator (same seed: same draws again). */
void bw_sampler_reseed (BwSampler *sampler, guint64 seed);

/* The penalty, in place: each distinct id of recent[0..n) once, logit / penalty when
 * positive, logit * penalty otherwise (the CTRL rule). Ids outside the vocabulary are
 * ignored. */
void bw_sampler_penalize (BwSampler *sampler, float *logits, const int32_t *recent, int n);

/* The tokens that can still be drawn after temperature, top-k, top-p and min-p, with their
 * probabilities renormalised over that set. Sorted by falling probability when top-k or
 * top-p is on, in id order otherwise. The arrays live in the sampler until the next call.
 * With temperature <= 0 the set is the argmax alone. */
int bw_sampler_candidates (BwSampler *sampler, const float *logits, const int32_t **ids,
                           const float **probs);

/* Counts a generated token for the frequency and presence penalties. */
void bw_sampler_accept (BwSampler *sampler, int32_t id);

/* Every change to the logits, in place: the repetition penalty over recent[0..n), the
 * logit bias, then the frequency and presence penalties over the accepted tokens. */
void bw_sampler_adjust (BwSampler *sampler, float *logits, const int32_t *recent, int n);

/* One draw from logits as they are (no penalty): the argmax when greedy. */
int32_t bw_sampler_draw (BwSampler *sampler, const float *logits);

/* bw_sampler_adjust, then bw_sampler_draw. */
int32_t bw_sampler_sample (BwSampler *sampler, float *logits, const int32_t *recent,
                           int n_recent);

/* Lowest id among the largest logits. */
int32_t bw_argmax (const float *logits, int n);

G_END_DECLS
