/* Internal: what the SIMD levels' GGML products (kernels/ggml-dot-*.c) share, inlined
 * into each level's library (compiled for its CPU features). */
#pragma once

#include <immintrin.h>

#include "kernels/ggml-dot.h"

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

/* bw_ggml_acc32 with m = 0 for four blocks in turn: the products in four lanes (each lane
 * rounding as the scalar statement does), the sums added to acc in block order. */
static inline float
acc32_4 (float acc, const BwGgmlAct32 *x, __m128 d, __m128i s)
{
  const __m128 p = _mm_mul_ps (d, _mm_cvtepi32_ps (s));
  const __m128 t = _mm_add_ps (p, _mm_setzero_ps ());
  const __m128 u = _mm_mul_ps (_mm_set_ps (x[3].d, x[2].d, x[1].d, x[0].d), t);
  float uf[4];
  _mm_storeu_ps (uf, u);
  for (int k = 0; k < 4; k++)
    acc = acc + uf[k];
  return acc;
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
