/* Per-group weight scales of MXFP4 and Q4 rows as f32 vectors, shared by the AVX-512
 * one-token kernels (f32 and int8 activations). Needs AVX-512 F/BW/VL. */
#pragma once

#include <glib.h>
#include <immintrin.h>
#include <stdint.h>

#include "kernels/matrix.h"
#include "quant/mxfp4.h"

/* How far ahead in each of the rows streamed side by side the one-token kernels prefetch.
 * Measured with two threads (PERFORMANCE.md): 2 KiB lifted the int8 MXFP4 kernel from
 * 0.70 to 0.81 of the memory bandwidth and FP8 from 0.70 to 0.79; 4 KiB and more did
 * worse than 2 KiB, and the f32 4-bit kernels, bound by arithmetic, gain nothing. */
#define GV_PREFETCH_BYTES 2048

/* The E8M0 scales of 16 groups from group g as f32 (2^(s-127); 0 is 2^-127). Scales of
 * 253 and up were ruled out by the caller. */
static inline __attribute__((always_inline)) __m512
gv_e8m0_16 (const uint8_t *s, int64_t g, int64_t ns)
{
  __mmask16 k = (__mmask16) ((1u << MIN (16, ns - g)) - 1);
  __m512i e = _mm512_cvtepu8_epi32 (_mm_maskz_loadu_epi8 (k, s + g));
  __m512i f = _mm512_slli_epi32 (e, 23);
  f = _mm512_mask_mov_epi32 (f, _mm512_cmpeq_epi32_mask (e, _mm512_setzero_si512 ()),
                             _mm512_set1_epi32 (1 << 22));
  return _mm512_castsi512_ps (f);
}

/* The scales of 16 groups of a Q4 row from group g (fewer at the row's end). */
static inline __attribute__((always_inline)) __m512
gv_q4_16 (const float *s, int64_t g, int64_t ns)
{
  return _mm512_maskz_loadu_ps ((__mmask16) ((1u << MIN (16, ns - g)) - 1), s + g);
}


/* Whether the MXFP4 scales of rows [r0, r1) are all below 253: from there a weight can
 * overflow to Inf or is NaN, which a per-group sum would not reproduce. */
static inline __attribute__((always_inline)) gboolean
gv_mxfp4_scales_ok (const BwMatrix *w, int64_t r0, int64_t r1)
{
  const uint8_t *s = (const uint8_t *) w->scales + r0 * bw_mxfp4_row_scales (w->cols);
  const int64_t n = (r1 - r0) * bw_mxfp4_row_scales (w->cols);
  __m512i m = _mm512_setzero_si512 ();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64)
    m = _mm512_max_epu8 (m, _mm512_loadu_si512 (s + i));
  if (i < n)
    m = _mm512_max_epu8 (m, _mm512_maskz_loadu_epi8 ((__mmask64) ((1ull << (n - i)) - 1), s + i));
  return !_mm512_cmpge_epu8_mask (m, _mm512_set1_epi8 ((char) 253));
}

/* Q4 groupings the kernels index: per row, 32, 64 or a multiple of 128 columns. */
static inline gboolean
gv_q4_group_ok (int group)
{
  return group == 0 || group == 32 || group == 64 || group % 128 == 0;
}
