/* The synthetic writers' random numbers: xoshiro256** seeded through splitmix64, fast and
 * good enough for filler weights, and the same stream for the same seed everywhere. */
#pragma once

#include <glib.h>
#include <string.h>

typedef struct {
  guint64 s[4];
} BwSynthRng;

static inline guint64
bw_synth_rotl (guint64 x, int k)
{
  return (x << k) | (x >> (64 - k));
}

static inline guint64
bw_synth_rng_next (BwSynthRng *r)
{
  guint64 *s = r->s;
  guint64 result = bw_synth_rotl (s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = bw_synth_rotl (s[3], 45);
  return result;
}

static inline void
bw_synth_rng_seed (BwSynthRng *r, guint64 seed)
{
  for (int i = 0; i < 4; i++)
    {
      guint64 z = (seed += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      r->s[i] = z ^ (z >> 31);
    }
}

/* Uniform in [-1, 1). */
static inline float
bw_synth_rng_unit (BwSynthRng *r)
{
  return (float) ((double) (bw_synth_rng_next (r) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* len random bytes at dst. */
static inline void
bw_synth_rng_bytes (BwSynthRng *r, guint8 *dst, gsize len)
{
  gsize i = 0;
  for (; i + 8 <= len; i += 8)
    {
      guint64 x = bw_synth_rng_next (r);
      memcpy (dst + i, &x, 8);
    }
  for (; i < len; i++)
    dst[i] = (guint8) bw_synth_rng_next (r);
}
