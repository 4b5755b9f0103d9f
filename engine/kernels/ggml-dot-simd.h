/* Internal: what the SIMD levels' GGML products (kernels/ggml-dot-*.c) share, inlined
 * into each level's library (compiled for its CPU features). */
#pragma once

#include <immintrin.h>

#include "kernels/ggml-dot.h"

/* For the loops written once for one row or two: inlined, so that each instance is
 * compiled for its constant number of rows. */
#define GGML_ROWS static inline __attribute__((always_inline))

static inline int32_t
hsum_i32 (__m256i v)
{
  __m128i s = _mm_add_epi32 (_mm256_castsi256_si128 (v), _mm256_extracti128_si256 (v, 1));
  s = _mm_add_epi32 (s, _mm_shuffle_epi32 (s, 0x4E));
  s = _mm_add_epi32 (s, _mm_shuffle_epi32 (s, 0xB1));
  return _mm_cvtsi128_si32 (s);
}

static inline __m256i
loadu (const void *p)
{
  return _mm256_loadu_si256 ((const __m256i *) p);
}

/* The four blocks' lane sums of v[0..3], as one vector (exact: integer adds). */
static inline __m128i
hsum4_i32 (const __m256i v[4])
{
  const __m256i c = _mm256_hadd_epi32 (_mm256_hadd_epi32 (v[0], v[1]), _mm256_hadd_epi32 (v[2], v[3]));
  return _mm_add_epi32 (_mm256_castsi256_si128 (c), _mm256_extracti128_si256 (c, 1));
}

/* Q6_K block b's 6-bit codes of elements 128 h + 32 k + l (k = 0..3) in q[k]: the low
 * nibbles, and bits 2 k, 2 k + 1 of the high bytes moved to bits 4, 5 (16-bit shifts by at
 * most 4 keep them in their byte). */
static inline __attribute__((always_inline)) void
q6_k_codes (const uint8_t *b, int h, __m256i q[4])
{
  const __m256i m4 = _mm256_set1_epi8 (0xF), m30 = _mm256_set1_epi8 (0x30);
  const __m256i l0 = loadu (b + 64 * h), l1 = loadu (b + 64 * h + 32);
  const __m256i qh = loadu (b + 128 + 32 * h);
  const __m256i low[4] = { _mm256_and_si256 (l0, m4), _mm256_and_si256 (l1, m4),
                           _mm256_and_si256 (_mm256_srli_epi16 (l0, 4), m4),
                           _mm256_and_si256 (_mm256_srli_epi16 (l1, 4), m4) };
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
    {
      const __m256i at = k < 2 ? _mm256_slli_epi16 (qh, 4 - 2 * k) : k == 2 ? qh : _mm256_srli_epi16 (qh, 2);
      q[k] = _mm256_or_si256 (low[k], _mm256_and_si256 (at, m30));
    }
}

/* Bytes with bit `bit` set in v become `value`, the others 0. */
static inline __m256i
bit_to (__m256i v, int bit, int value)
{
  const __m256i m = _mm256_set1_epi8 ((char) (1 << bit));
  return _mm256_and_si256 (_mm256_cmpeq_epi8 (_mm256_and_si256 (v, m), m), _mm256_set1_epi8 ((char) value));
}

/* 16 signed byte scales, one per 16 elements, as 16-bit lanes: the even ones (elements
 * 0..15 of each 32) in the low half, the odd ones in the high half. */
static inline __m256i
evens_odds16 (__m128i sc8)
{
  const __m128i order = _mm_set_epi8 (15, 13, 11, 9, 7, 5, 3, 1, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm256_cvtepi8_epi16 (_mm_shuffle_epi8 (sc8, order));
}

/* 32 nibbles of 16 bytes: the low ones (elements 0..15), then the high ones (16..31). */
static inline __m256i
nibbles32 (const uint8_t *p)
{
  /* a broadcast load and a per-lane shift, no lane insert (which shares the shuffle port
   * with the table lookups and lane sums) */
  const __m256i b = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) p));
  const __m256i shift = _mm256_set_epi64x (4, 4, 0, 0);
  return _mm256_and_si256 (_mm256_srlv_epi64 (b, shift), _mm256_set1_epi8 (0xF));
}

static inline __m256i
table16 (const int8_t values[16])
{
  return _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) values));
}

/* 32 bytes: 0xFF where bit i (byte i / 8, bit i % 8) of `bits` is set, else 0. */
static inline __m256i
bit_mask32 (uint32_t bits)
{
  const __m256i spread = _mm256_shuffle_epi8 (_mm256_set1_epi32 ((int) bits),
                                              _mm256_set_epi64x (0x0303030303030303LL, 0x0202020202020202LL,
                                                                 0x0101010101010101LL, 0));
  const __m256i m = _mm256_set1_epi64x ((long long) 0x8040201008040201ULL);
  return _mm256_cmpeq_epi8 (_mm256_and_si256 (spread, m), m);
}
