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

/* Q4_K's and Q5_K's 12 packed bytes of 6-bit scales and mins (bytes 4..15 of a block),
 * as bw_ggml_k_scale_min unpacks them, from v holding a block's first 16 bytes in each
 * 128-bit half (the same block's, or two rows' blocks): per half, scale j in byte j and
 * min j in byte 8 + j. */
GGML_ROWS __m256i
k_scales_mins (__m256i v)
{
  /* the low bits of scales 0..7 and mins 0..7 (mins 4..7: the high nibbles of bytes
   * 8..11), and the bytes whose top two bits complete scales 4..7 and mins 4..7 */
  const __m256i lo = _mm256_shuffle_epi8 (v, _mm256_setr_epi8 (4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15,
                                                               4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m256i hi = _mm256_shuffle_epi8 (v, _mm256_setr_epi8 (-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11,
                                                               -1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
  const __m256i low = _mm256_and_si256 (lo, _mm256_setr_epi8 (63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0,
                                                              63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0));
  const __m256i high_nibbles = _mm256_and_si256 (_mm256_srli_epi16 (lo, 4),
                                                 _mm256_setr_epi8 (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15,
                                                                   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15));
  /* 16-bit shifts by at most 4 keep each byte's bits within it under the masks */
  const __m256i top = _mm256_and_si256 (_mm256_srli_epi16 (hi, 2), _mm256_set1_epi8 (0x30));
  return _mm256_or_si256 (_mm256_or_si256 (low, high_nibbles), top);
}

/* Q3_K's 16 scales (6 bits less 32) as bytes, from the 12 bytes at b + 96: the low four
 * bits of scale j in byte j % 8 (j < 8 low nibble, else high), the top two in byte
 * 8 + j % 4 at bit 2 (j / 4). */
static inline __m128i
q3_k_scales (const uint8_t *b)
{
  /* 16 bytes from b + 94 stay inside the 110-byte block; scale byte k is byte k + 2 */
  const __m128i v = _mm_loadu_si128 ((const __m128i *) (b + 94));
  const __m128i m4 = _mm_set1_epi8 (0xF);
  const __m128i low8 = _mm_srli_si128 (v, 2);
  const __m128i lo = _mm_and_si128 (_mm_unpacklo_epi64 (low8, _mm_srli_epi16 (low8, 4)), m4);
  const __m128i top4 = _mm_shuffle_epi8 (v, _mm_set_epi8 (13, 12, 11, 10, 13, 12, 11, 10, 13, 12, 11, 10, 13, 12, 11, 10));
  const __m128i hi = _mm_and_si128 (_mm_srlv_epi32 (top4, _mm_set_epi32 (6, 4, 2, 0)), _mm_set1_epi8 (3));
  return _mm_sub_epi8 (_mm_or_si128 (lo, _mm_slli_epi16 (hi, 4)), _mm_set1_epi8 (32));
}
