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

/* The lane sums of v[0..3] (lanes 0..3) and, for two rows, of v[4..7] (lanes 4..7; else
 * 0), exact: integer adds. */
GGML_ROWS __m256i
hsum_rows_i32 (const __m256i *v, int rows)
{
  if (rows == 1)
    return _mm256_zextsi128_si256 (hsum4_i32 (v));
  const __m256i a = _mm256_hadd_epi32 (_mm256_hadd_epi32 (v[0], v[1]), _mm256_hadd_epi32 (v[2], v[3]));
  const __m256i b = _mm256_hadd_epi32 (_mm256_hadd_epi32 (v[4], v[5]), _mm256_hadd_epi32 (v[6], v[7]));
  return _mm256_add_epi32 (_mm256_permute2x128_si256 (a, b, 0x20), _mm256_permute2x128_si256 (a, b, 0x31));
}

/* Eight f16 values as f32, exactly as bw_ggml_f16 gives them (a NaN comes out quiet, which
 * the first product it meets makes it anyway). */
static inline __m256
f16x8 (uint16_t a0, uint16_t a1, uint16_t a2, uint16_t a3, uint16_t b0, uint16_t b1, uint16_t b2,
       uint16_t b3)
{
  return _mm256_cvtph_ps (_mm_set_epi16 ((short) b3, (short) b2, (short) b1, (short) b0, (short) a3,
                                         (short) a2, (short) a1, (short) a0));
}

/* bw_ggml_acc32 with m = 0 for four blocks in turn of `rows` rows (acc[r]; row r's sums
 * and scales in lanes 4 r .. 4 r + 3): the products in lanes (each lane rounding as the
 * scalar statement does), each row's sums added to its acc in block order. */
GGML_ROWS void
acc32_rows (float *acc, int rows, const BwGgmlAct32 *x, __m256 d, __m256i s)
{
  const __m256 p = _mm256_mul_ps (d, _mm256_cvtepi32_ps (s));
  const __m256 t = _mm256_add_ps (p, _mm256_setzero_ps ());
  const __m128 dx = _mm_set_ps (x[3].d, x[2].d, x[1].d, x[0].d);
  const __m256 u = _mm256_mul_ps (_mm256_set_m128 (dx, dx), t);
  float uf[8];
  _mm256_storeu_ps (uf, u);
#pragma GCC unroll 4
  for (int k = 0; k < 4; k++)
#pragma GCC unroll 2
    for (int r = 0; r < rows; r++)
      acc[r] = acc[r] + uf[4 * r + k];
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
